"""Write a run's outputs: lines (:class:`LineWriter`) and the kept records the way they came
in (:class:`UniqueWriter`)."""

from __future__ import annotations

import csv
import gzip
import io
import sys
from collections.abc import Callable
from types import TracebackType
from typing import IO, Self, TextIO, cast

from ..errors import ConfigError, OutputError
from .document import DEFAULT_FIELDS, Document, Fields, json_line
from .readers import FORMATS

__all__ = ["LineWriter", "UniqueWriter", "csv_line"]


def csv_line(row: list[str]) -> str:
    """One CSV record without its line end."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(row)
    return buf.getvalue()


class LineWriter:
    """A UTF-8 output of lines: a file (``.gz`` compressed), ``-`` standard output, or a stream.

    Write failures become :class:`OutputError` naming the output (a broken pipe stays a
    BrokenPipeError, for the command line to end quietly).
    """

    def __init__(self, path: str | None, *, stream: TextIO | None = None, name: str = "") -> None:
        self.name = name or (path or "")
        self._detach = False
        self._close = True
        self._closed = False
        self.before_write: Callable[[], None] | None = None
        out: IO[str]
        if stream is not None:
            out, self._close = stream, False
        elif path == "-":
            sys.stdout.flush()
            buffer = getattr(sys.stdout, "buffer", None)
            if buffer is None:
                out, self._close = sys.stdout, False
            else:
                out = io.TextIOWrapper(buffer, encoding="utf-8", newline="")
                self._detach = True
        else:
            assert path is not None
            try:
                if path.endswith(".gz"):
                    out = gzip.open(path, "wt", encoding="utf-8", newline="")  # noqa: SIM115
                else:
                    out = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115
            except OSError as e:
                raise OutputError(f"cannot write {path}: {e.strerror or e}") from None
        self._out = out

    def write(self, line: str) -> None:
        """Write one line (its newline added)."""
        if self.before_write is not None:
            self.before_write()
        try:
            self._out.write(line)
            self._out.write("\n")
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputError(f"cannot write {self.name}: {e.strerror or e}") from None

    def close(self) -> None:
        """Flush, and close the file (standard output and error stay open); again: nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._detach:
                self._out.flush()
                cast(io.TextIOWrapper, self._out).detach()
            elif self._close:
                self._out.close()
            else:
                self._out.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputError(f"cannot write {self.name}: {e.strerror or e}") from None


class UniqueWriter:
    """Write the kept documents the way they came in: the output half of ``neardup dedup``.

    JSONL lines and CSV rows are written exactly as read (``Document.raw``), one a line,
    CSV under the input's header (``csv_header``, written at once). A folder's files, and
    documents without ``raw``, become one JSON line each: ``{"id", "text"}`` (with ``title``
    and ``timestamp`` when set), or a CSV row with ``fields`` naming the columns. ``path``
    ``-`` is standard output; a path ending ``.gz`` is gzip-compressed. Output is UTF-8 with
    ``\\n`` line ends.

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "unique.jsonl")
    ...     with UniqueWriter(path, "dir") as out:
    ...         out.write(Document("news/1.html", "<p>北京</p>"))
    ...     with open(path, encoding="utf-8") as f:
    ...         written = f.read()
    >>> out.written, written
    (1, '{"id": "news/1.html", "text": "<p>北京</p>"}\\n')
    """

    def __init__(
        self,
        path: str,
        fmt: str,
        csv_header: list[str] | None = None,
        *,
        fields: Fields = DEFAULT_FIELDS,
    ) -> None:
        if fmt not in FORMATS:
            raise ConfigError(f"unknown output format {fmt!r}; use one of {', '.join(FORMATS)}")
        if fmt == "csv" and csv_header is None:
            raise ConfigError("writing CSV needs the input's header row (csv_header)")
        self.path = path
        self.format = fmt
        self.fields = fields
        self.written = 0
        self._out = LineWriter(path)
        if csv_header is not None and self.format == "csv":
            self.csv_header: list[str] | None = list(csv_header)
            self._out.write(csv_line(self.csv_header))
        else:
            self.csv_header = None

    def write(self, doc: Document) -> None:
        """Write one kept document."""
        if doc.raw is not None:
            self._out.write(doc.raw)
        elif self.csv_header is not None:
            self._out.write(csv_line(self._row(doc)))
        else:
            obj: dict[str, object] = {"id": doc.id, "text": doc.text}
            if doc.title is not None:
                obj["title"] = doc.title
            if doc.timestamp is not None:
                obj["timestamp"] = doc.timestamp
            self._out.write(json_line(obj))
        self.written += 1

    def _row(self, doc: Document) -> list[str]:
        assert self.csv_header is not None
        f = self.fields
        values = {
            f.id: doc.id,
            f.text: doc.text,
            f.title: doc.title or "",
            f.timestamp: "" if doc.timestamp is None else repr(doc.timestamp),
        }
        return [values.get(name, "") for name in self.csv_header]

    def close(self) -> None:
        """Flush, and close the file (standard output stays open); a second call does nothing."""
        self._out.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
