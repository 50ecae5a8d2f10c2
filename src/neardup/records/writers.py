"""Write a run's outputs: lines (:class:`LineWriter`), tables of lines as Parquet
(:class:`ParquetLines`), and the kept records the way they came in (:class:`UniqueWriter`)."""

from __future__ import annotations

import base64
import csv
import datetime
import decimal
import gzip
import io
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import IO, Any, Literal, Self, TextIO, TypeAlias, cast

from ..errors import ConfigError, OutputError
from .document import DEFAULT_FIELDS, Document, Fields, field_value
from .sources import FORMATS, Part

__all__ = [
    "OUTPUT_FORMATS",
    "LineWriter",
    "OutputFormat",
    "ParquetLines",
    "UniqueWriter",
    "csv_line",
    "open_lines",
    "output_format_of",
    "shown_id_line",
]

OutputFormat: TypeAlias = Literal["jsonl", "csv", "parquet", "warc"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("jsonl", "csv", "parquet", "warc")
_BY_SUFFIX: tuple[tuple[tuple[str, ...], OutputFormat], ...] = (
    ((".parquet",), "parquet"),
    ((".warc", ".warc.gz", ".warc.zst", ".wet", ".wet.gz", ".wet.zst"), "warc"),
    ((".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".json", ".json.gz"), "jsonl"),
    ((".csv", ".csv.gz"), "csv"),
)


def output_format_of(path: str | None) -> OutputFormat | None:
    """The output format a path's name says (``.parquet``, ``.warc.gz``, ``.jsonl``, ``.csv``),
    or None (``-``, other names: the input's own format).

    >>> output_format_of("kept.parquet"), output_format_of("kept.warc.gz"), output_format_of("-")
    ('parquet', 'warc', None)
    """
    if path is None or path == "-":
        return None
    low = path.lower()
    for suffixes, fmt in _BY_SUFFIX:
        if low.endswith(suffixes):
            return fmt
    return None


def shown_id_line(value: object) -> str:
    """An id as one line of a list of ids: as it is, or as JSON if it holds a line break.

    >>> shown_id_line(17), shown_id_line("https://a.cn/1"), shown_id_line("a\\nb")
    ('17', 'https://a.cn/1', '"a\\\\nb"')
    """
    text = value if isinstance(value, str) else json.dumps(value)
    if "\n" in text or "\r" in text:
        return json.dumps(text, ensure_ascii=False)
    return text


def json_default(value: object) -> object:
    """JSON for what a Parquet or Arrow row may hold beside JSON's types."""
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(value).decode("ascii")
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def record_json(obj: object) -> str:
    """A record as one line of JSON, values JSON has no type for written as text."""
    line = json.dumps(obj, ensure_ascii=False, default=json_default)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(obj, default=json_default)
    return line


def csv_line(row: list[str]) -> str:
    r"""One CSV record without its line end; a field that holds a line break is quoted (the
    writer quotes the characters of its line end: with none, a text of paragraphs was
    written unquoted, and every reader split its row).

    >>> csv_line(["a", "line one\nline two", "x,y"])
    'a,"line one\nline two","x,y"'
    """
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow(row)
    return buf.getvalue()[:-2]


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


class ParquetLines:
    """A table written as Parquet: rows given as JSON lines (what the JSONL output would
    hold) or dicts, written when closed. A column whose values JSON-typed do not agree (an
    id that is a number here and a string there) is written as strings.

    The rows are held in memory until then: the run already holds the texts.
    """

    def __init__(self, path: str, *, columns: Sequence[str] = ()) -> None:
        if path == "-":
            raise ConfigError("Parquet cannot be written to standard output; give a file")
        from .tables import require_pyarrow

        require_pyarrow()
        self.path = path
        self.columns = list(columns)
        self.rows: list[dict[str, object]] = []
        self._closed = False
        try:
            open(path, "wb").close()  # fail now, not after the run
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror or e}") from None

    def write(self, line: str) -> None:
        """Add one row, given as a JSON object."""
        self.rows.append(json.loads(line))

    def add(self, row: dict[str, object]) -> None:
        self.rows.append(row)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        import pyarrow.parquet as pq

        table = table_of(self.rows, self.columns)
        self.rows = []
        try:
            pq.write_table(table, self.path)
        except OSError as e:
            raise OutputError(f"cannot write {self.path}: {e.strerror or e}") from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _fit(value: object) -> object:
    """A value Parquet can hold: strings without lone surrogates (U+FFFD instead)."""
    if isinstance(value, str) and not value.isascii():
        return _SURROGATE.sub("\ufffd", value)
    return value


def table_of(rows: list[dict[str, object]], columns: Sequence[str] = ()) -> Any:
    """An Arrow table of ``rows`` (column order: first seen; ``columns`` when empty)."""
    import pyarrow as pa

    names = list(dict.fromkeys(k for r in rows for k in r)) or list(columns)
    arrays = []
    for name in names:
        values = [_fit(r.get(name)) for r in rows]
        try:
            arrays.append(pa.array(values))
            continue
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass
        arrays.append(
            pa.array(
                [
                    None if v is None else _fit(v if isinstance(v, str) else record_json(v))
                    for v in values
                ],
                pa.string(),
            )
        )
    if not names:
        return pa.table({})
    return pa.Table.from_arrays(arrays, names=names)


def open_lines(
    path: str, output: str | None = None, *, columns: Sequence[str] = ()
) -> LineWriter | ParquetLines:
    """An output of JSON lines: JSONL, or Parquet (``output`` ``parquet``, or a path ending
    ``.parquet``)."""
    fmt = output if output in ("jsonl", "parquet") else output_format_of(path)
    if fmt == "parquet":
        return ParquetLines(path, columns=columns)
    return LineWriter(path)


class UniqueWriter:
    """Write the kept documents the way they came in: the output half of ``neardup dedup``.

    ``fmt`` is the input's format; ``output`` (one of :data:`OUTPUT_FORMATS`) what to write,
    by default what the path's name says (``.parquet``, ``.warc.gz``, ``.jsonl``, ``.csv``)
    or else the input's own: JSONL lines and CSV rows written exactly as read
    (``Document.raw``), one a line, CSV under the input's header (``csv_header``, written at
    once); Parquet and Arrow rows as JSON lines (or, to Parquet, the rows themselves); WARC
    records as a WARC of the kept captures, byte for byte (:mod:`neardup.records.warc`). A
    folder's files, and documents without ``raw``, become one JSON line each:
    ``{"id", "text"}`` (with ``title`` and ``timestamp`` when set), or a CSV row with
    ``fields`` naming the columns. ``path`` ``-`` is standard output; a path ending ``.gz``
    is gzip-compressed. Output is UTF-8 with ``\\n`` line ends.

    Call :meth:`drop` with the documents found to be duplicates (a WARC output leaves their
    captures out; the other outputs need not be told).

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
        output: str | None = None,
        parts: Sequence[Part] = (),
    ) -> None:
        if fmt not in (*FORMATS, "mixed"):
            raise ConfigError(f"unknown output format {fmt!r}; use one of {', '.join(FORMATS)}")
        if output is not None and output not in OUTPUT_FORMATS:
            raise ConfigError(
                f"unknown output format {output!r}; use one of {', '.join(OUTPUT_FORMATS)}"
            )
        chosen = output or output_format_of(path)
        if chosen is None:
            if fmt == "csv":
                if csv_header is None:
                    raise ConfigError("writing CSV needs the input's header row (csv_header)")
                chosen = "csv"
            elif fmt == "warc":
                chosen = "warc"
            else:
                chosen = "jsonl"
        if chosen == "warc" and (fmt != "warc" or not parts):
            raise ConfigError("a WARC output needs WARC input; write UNIQUE as .jsonl or .parquet")
        self.path = path
        self.format = fmt
        self.output: OutputFormat = chosen
        self.fields = fields
        self.parts = list(parts)
        self.written = 0
        self._rows: dict[int, Any] = {}  # part id -> TableRows, to read kept rows again
        self._out: LineWriter | ParquetLines | None = None
        self._taken: list[tuple[Part, int]] = []  # table rows kept, for a Parquet of rows
        self._dropped: set[tuple[int, int]] = set()  # WARC captures left out
        self._closed = False
        self.csv_header: list[str] | None = None
        if chosen == "csv":
            f = fields
            self.csv_header = (
                list(csv_header) if csv_header is not None else [f.id, f.text, f.title, f.timestamp]
            )
            self._out = LineWriter(path)
            self._out.write(csv_line(self.csv_header))
        elif chosen == "jsonl":
            self._out = LineWriter(path)
        elif chosen == "parquet":
            tables = bool(self.parts) and all(p.fmt in ("parquet", "arrow") for p in self.parts)
            self._as_rows = tables
            self._out = ParquetLines(path)
        else:
            from .warc import check_warc_output

            check_warc_output(path, self.parts)

    # -- what a record holds ----------------------------------------------------------------

    def _kind(self, doc: Document) -> str:
        origin = doc.origin
        if isinstance(origin, Part):
            return origin.fmt
        if isinstance(origin, tuple):
            return cast(Part, origin[0]).fmt
        if doc.raw is not None and self.format in ("jsonl", "csv"):
            return self.format
        return "page"

    def needs_text(self, doc: Document) -> bool:
        """Whether writing ``doc`` reads its ``text``: not when it is written from its raw
        line or row, its table row or its WARC capture (a run may then let the text go)."""
        if self.output == "warc":
            return False
        kind = self._kind(doc)
        if kind in ("jsonl", "csv") and doc.raw is not None:
            return False
        return not (kind in ("parquet", "arrow") and isinstance(doc.origin, tuple))

    def record(self, doc: Document) -> dict[str, object]:
        """The kept record as a dict: the JSON object, the CSV row by its header, the table
        row, or ``{"id", "text"}`` (with ``title`` and ``timestamp`` when set)."""
        kind = self._kind(doc)
        if kind == "jsonl" and doc.raw is not None:
            return cast(dict[str, object], json.loads(doc.raw))
        if kind == "csv" and doc.raw is not None:
            header = None
            if isinstance(doc.origin, Part):
                header = doc.origin.info.get("header")
            header = header if isinstance(header, list) else self.csv_header
            (row,) = csv.reader(io.StringIO(doc.raw), delimiter=self._delimiter(doc))
            return dict(zip(header or [], row, strict=False))
        if kind in ("parquet", "arrow") and isinstance(doc.origin, tuple):
            part, position = doc.origin
            return cast(dict[str, object], self._table_rows(part).row(position))
        obj: dict[str, object] = {"id": doc.shown_id, "text": doc.text}
        if doc.title is not None:
            obj["title"] = doc.title
        if doc.timestamp is not None:
            obj["timestamp"] = doc.timestamp
        return obj

    def _table_rows(self, part: Part) -> Any:
        rows = self._rows.get(id(part))
        if rows is None:
            from .tables import TableRows

            rows = self._rows[id(part)] = TableRows(part)
        return rows

    # -- writing -----------------------------------------------------------------------------

    def write(self, doc: Document) -> None:
        """Write one kept document."""
        out = self._out
        if self.output == "jsonl":
            assert isinstance(out, LineWriter)
            if doc.raw is not None and self._kind(doc) == "jsonl":
                out.write(doc.raw)
            else:
                out.write(record_json(self.record(doc)))
        elif self.output == "csv":
            assert isinstance(out, LineWriter)
            if (
                doc.raw is not None
                and self._kind(doc) == "csv"
                and self._same_header(doc)
                and self._delimiter(doc) == ","
            ):
                out.write(doc.raw)
            else:
                out.write(csv_line(self._row(doc)))
        elif self.output == "parquet":
            assert isinstance(out, ParquetLines)
            if self._as_rows and isinstance(doc.origin, tuple):
                self._taken.append(doc.origin)
            else:
                out.add(self.record(doc))
        self.written += 1

    def drop(self, doc: Document) -> None:
        """A document found to be a duplicate: a WARC output leaves its capture out."""
        if self.output == "warc" and isinstance(doc.origin, tuple):
            part, ordinal = doc.origin
            self._dropped.add((id(part), ordinal))

    def _delimiter(self, doc: Document) -> str:
        """What separates the fields of a CSV record's raw row (its header said)."""
        part = doc.origin if isinstance(doc.origin, Part) else None
        if part is None and len(self.parts) == 1:
            part = self.parts[0]
        found = part.info.get("delimiter", ",") if part is not None else ","
        return found if isinstance(found, str) else ","

    def _same_header(self, doc: Document) -> bool:
        if not isinstance(doc.origin, Part):
            return True  # a single CSV input: its header is the output's
        return doc.origin.info.get("header") == self.csv_header

    def _row(self, doc: Document) -> list[str]:
        assert self.csv_header is not None
        f = self.fields
        if doc.raw is None and not isinstance(doc.origin, tuple):
            values: dict[str, object] = {
                f.id: doc.id,
                f.text: doc.text,
                f.title: doc.title or "",
                f.timestamp: "" if doc.timestamp is None else repr(doc.timestamp),
            }
        else:
            values = self.record(doc)
        return [_cell(field_value(values, name)[1]) for name in self.csv_header]

    def close(self) -> None:
        """Flush, and close the file (standard output stays open); a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        if self.output == "warc":
            from .warc import write_kept

            write_kept(self.path, [p for p in self.parts if p.fmt == "warc"], self._dropped)
            return
        if self.output == "parquet" and self._as_rows:
            self._write_rows()
            return
        assert self._out is not None
        self._out.close()

    def _write_rows(self) -> None:
        """Parquet of table input: the kept rows themselves, under the inputs' schema."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        schemas = []
        for part in self.parts:
            schemas.append(self._table_rows(part).schema)
        try:
            schema = pa.unify_schemas(schemas) if len(schemas) > 1 else schemas[0]
        except pa.ArrowException as e:
            raise OutputError(
                f"the Parquet inputs have schemas that do not agree ({e}); write UNIQUE as .jsonl"
            ) from None
        try:
            with pq.ParquetWriter(self.path, schema) as writer:
                i = 0
                taken = self._taken
                while i < len(taken):
                    part = taken[i][0]
                    j = i
                    while j < len(taken) and taken[j][0] is part:
                        j += 1
                    for batch in self._table_rows(part).take([pos for _, pos in taken[i:j]]):
                        table = pa.Table.from_batches([batch])
                        if table.schema != schema:
                            table = _conform(table, schema)
                        writer.write_table(table)
                    i = j
        except OSError as e:
            raise OutputError(f"cannot write {self.path}: {e.strerror or e}") from None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _conform(table: Any, schema: Any) -> Any:
    """``table`` with ``schema``'s columns, in its order (missing ones null)."""
    import pyarrow as pa

    columns = []
    for f in schema:
        if f.name in table.column_names:
            columns.append(table.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return record_json(value)
