"""Read the records of a dedup run: JSON Lines (``-`` for standard input; gzip input is
un-gzipped), CSV with a header row, or a folder of ``.txt`` / ``.html`` files. Every non-blank
line (CSV: row; folder: file) gives exactly one Document or one BadRecord, so bad input
loses nothing: it is reported with its line and the reason, and the run goes on."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from types import TracebackType
from typing import IO, Literal, Self, TypeAlias, cast

from ..errors import ConfigError, InputError
from .document import DEFAULT_FIELDS, BadRecord, Document, Fields, RecordChecker, read_id

__all__ = ["FOLDER_SUFFIXES", "FORMATS", "Format", "RecordReader", "detect_format", "read_records"]

Format: TypeAlias = Literal["jsonl", "csv", "dir"]
FORMATS: tuple[Format, ...] = ("jsonl", "csv", "dir")

# Files a folder input reads; every other file in the folder is left alone.
FOLDER_SUFFIXES = (".txt", ".html", ".htm")
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
# WHATWG decodes these labels as GBK; GB 18030 is its superset and decodes all of them.
_CHARSET_ALIASES = {"gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030"}


def detect_format(source: str) -> Format:
    """The format of ``source`` as its name shows it: ``csv``, ``dir`` or (else) ``jsonl``.

    ``-`` (standard input) is JSONL; ``.csv`` and ``.csv.gz`` are CSV; a folder is ``dir``.
    Compression is found by content, not name, when reading.

    >>> detect_format("-"), detect_format("crawl.CSV.gz"), detect_format("crawl.jsonl.gz")
    ('jsonl', 'csv', 'jsonl')
    """
    if source == "-":
        return "jsonl"
    if os.path.isdir(source):
        return "dir"
    if source.lower().endswith((".csv", ".csv.gz")):
        return "csv"
    return "jsonl"


def read_records(
    source: str, *, fields: Fields = DEFAULT_FIELDS, fmt: str | None = None
) -> RecordReader:
    """Stream the records of ``source`` as :class:`Document` or :class:`BadRecord`, in order.

    ``source`` is a path, or ``-`` for standard input; ``fmt`` (``jsonl``, ``csv``, ``dir``)
    overrides :func:`detect_format`. The file is opened, and a CSV header read and checked,
    before this returns, so a missing file or a header without the id or text column raises
    :class:`InputError` at once; the CSV header is then ``.csv_header`` on the result.
    Everything wrong with a single record is a :class:`BadRecord` instead.

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "pages.csv")
    ...     with open(path, "w", encoding="utf-8") as f:
    ...         _ = f.write('url,body\\nhttps://a.cn/1,"第一行\\nsecond line"\\nhttps://a.cn/2,  \\n')
    ...     with read_records(path, fields=Fields(id="url", text="body")) as records:
    ...         header, found = records.csv_header, list(records)
    >>> header, found[0].text, found[1]
    (['url', 'body'], '第一行\\nsecond line', BadRecord(line=4, id='https://a.cn/2', reason="'body' is only whitespace"))
    """
    return RecordReader(source, fields=fields, fmt=fmt)


class RecordReader(Iterator[Document | BadRecord]):
    """The records of one input, read as they are asked for (what :func:`read_records` returns).

    ``format`` is the input's format and ``csv_header`` its CSV header row (None for other
    formats, and for an empty CSV input). Ids of the documents given out so far are kept,
    to report a repeated id with the line it was first seen on; an id first seen on a bad
    record can still be used by a later good one. Use it as a context manager, or call
    :meth:`close`, to close the input before it is read to the end.

    >>> with read_records(".", fmt="dir") as records:
    ...     records.format, records.csv_header
    ('dir', None)
    """

    format: Format
    csv_header: list[str] | None

    def __init__(
        self, source: str, *, fields: Fields = DEFAULT_FIELDS, fmt: str | None = None
    ) -> None:
        if fmt is None:
            fmt = detect_format(source)
        if fmt not in FORMATS:
            raise ConfigError(f"unknown input format {fmt!r}; use one of {', '.join(FORMATS)}")
        self.source = source
        self.format = fmt
        self.fields = fields
        self.csv_header = None
        self.checker = RecordChecker(fields)
        self._stack = ExitStack()
        self._stopped: list[str] = []  # why reading stopped early, if it did
        self._lines_read = 0
        self._gen: Iterator[Document | BadRecord]
        if self.format == "dir":
            if source == "-" or not os.path.isdir(source):
                raise InputError(f"{source} is not a folder, so it cannot be read as one")
            self._gen = self._folder(source)
            return
        try:
            stream = self._open(source)
            self._gen = self._jsonl(stream) if self.format == "jsonl" else self._csv(stream)
        except BaseException:
            self._stack.close()
            raise

    def __next__(self) -> Document | BadRecord:
        return next(self._gen)

    def close(self) -> None:
        """Stop reading and close the input (standard input is left open)."""
        close = getattr(self._gen, "close", None)
        if close is not None:
            close()
        self._stack.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- bytes in ------------------------------------------------------------------------

    def _open(self, source: str) -> IO[bytes]:
        """The bytes of ``source``, un-gzipped when they are gzip."""
        stream: IO[bytes]
        if source == "-":
            buffer = getattr(sys.stdin, "buffer", None)
            if buffer is None:  # a text-only stand-in for stdin
                buffer = io.BytesIO(sys.stdin.read().encode("utf-8", "surrogatepass"))
            stream = cast(IO[bytes], buffer)
        else:
            try:
                stream = self._stack.enter_context(open(source, "rb"))  # noqa: SIM115
            except OSError as e:
                raise InputError(f"cannot read {source}: {e.strerror or e}") from None
        if _head(stream) == _GZIP_MAGIC:
            return cast(IO[bytes], self._stack.enter_context(gzip.GzipFile(fileobj=stream)))
        return stream

    def _lines(self, stream: IO[bytes]) -> Iterator[bytes]:
        """The lines of ``stream``, ending quietly (noted in ``_stopped``) if it breaks off."""
        try:
            for line in stream:
                self._lines_read += 1
                yield line[3:] if self._lines_read == 1 and line.startswith(_BOM) else line
        except (OSError, EOFError, zlib.error) as e:
            self._stopped.append(str(e) or type(e).__name__)

    def _stop_record(self) -> Iterator[BadRecord]:
        """One BadRecord if the input broke off before its end, so the loss is on record."""
        if self._stopped:
            n = self._lines_read
            yield BadRecord(
                n + 1,
                None,
                f"the input breaks off after line {n} ({self._stopped[0]}); nothing after it could be read",
            )

    # -- JSONL ---------------------------------------------------------------------------

    def _jsonl(self, stream: IO[bytes]) -> Iterator[Document | BadRecord]:
        try:
            for data in self._lines(stream):
                if not data.strip():
                    continue
                n = self._lines_read
                try:
                    line = data.decode("utf-8")
                except UnicodeDecodeError as e:
                    yield BadRecord(n, self._id_of(data), f"not valid UTF-8: {_byte_at(e)}")
                    continue
                yield self.checker.from_json(_without_line_end(line), n)
            yield from self._stop_record()
        finally:
            self._stack.close()

    def _id_of(self, data: bytes) -> str | None:
        """The id of a line that is not valid UTF-8, if the id itself is."""
        try:
            obj = json.loads(data.decode("utf-8", "surrogateescape"))
            doc_id = read_id(obj[self.fields.id], self.fields.id)
            doc_id.encode("utf-8")  # an undecodable byte in the id itself: not known
        except (ValueError, RecursionError, TypeError, KeyError, InputError):
            return None
        return doc_id

    # -- CSV -----------------------------------------------------------------------------

    def _csv(self, stream: IO[bytes]) -> Iterator[Document | BadRecord]:
        rows = _CsvRows(self._lines(stream), lambda: self._lines_read)
        while (row := rows.next()) is not None:
            if isinstance(row, csv.Error):
                raise InputError(
                    f"{self.source}: the CSV header on line {rows.start} is malformed: {row}"
                )
            if rows.raw().strip():
                break
        if row is None:  # an empty input: no header, no records
            return _no_records(self._stack)
        if rows.bad_bytes:
            raise InputError(
                f"{self.source}: the CSV header is not valid UTF-8 ({rows.bad_bytes[0]})"
            )
        header = self.csv_header = row
        for name in (self.fields.id, self.fields.text):
            if name not in header:
                raise InputError(
                    f"{self.source}: the CSV header has no {name!r} column "
                    f"(it has {', '.join(map(repr, header))}); say which column to use"
                )
        return self._csv_records(rows, header)

    def _csv_records(self, rows: _CsvRows, header: list[str]) -> Iterator[Document | BadRecord]:
        columns: dict[str, int] = {}
        for i, name in enumerate(header):
            columns.setdefault(name, i)  # a repeated column name means its first column
        try:
            while (row := rows.next()) is not None:
                if isinstance(row, csv.Error):
                    yield BadRecord(rows.start, None, f"malformed CSV: {row}")
                    continue
                raw = rows.raw()
                if not raw.strip():
                    continue
                record = {name: row[i] for name, i in columns.items() if i < len(row)}
                guess = record.get(self.fields.id) or None
                if rows.bad_bytes:
                    shown = None if guess is None else _replace_surrogates(guess)
                    reason = f"not valid UTF-8: {'; '.join(rows.bad_bytes)}"
                    yield BadRecord(rows.start, shown, reason)
                elif len(row) > len(header):
                    reason = f"the row has {len(row)} fields but the header has {len(header)}"
                    yield BadRecord(rows.start, guess, reason)
                else:
                    yield self.checker.check(record, rows.start, _without_line_end(raw))
            yield from self._stop_record()
        finally:
            self._stack.close()

    # -- folders -------------------------------------------------------------------------

    def _folder(self, root: str) -> Iterator[Document | BadRecord]:
        for item in _walk(root, ""):
            if isinstance(item, BadRecord):
                yield item
                continue
            rel, path = item
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                yield BadRecord(None, rel, f"cannot read the file: {e.strerror or e}")
                continue
            try:
                text = _decode_file(data, html=path.lower().endswith((".html", ".htm")))
            except InputError as e:
                yield BadRecord(None, rel, str(e))
                continue
            if not text.strip():
                reason = "the file is empty" if not text else "the file holds only whitespace"
                yield BadRecord(None, rel, reason)
            else:
                yield Document(rel, text)


# -- helpers ---------------------------------------------------------------------------------


def _head(stream: IO[bytes]) -> bytes:
    """The first two bytes of ``stream``, left unread."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        return cast(bytes, peek(2))[:2]
    if stream.seekable():
        at = stream.tell()
        head = stream.read(2)
        stream.seek(at)
        return head
    return b""  # cannot look ahead: take it as uncompressed


def _byte_at(e: UnicodeDecodeError) -> str:
    return f"byte 0x{e.object[e.start]:02X} at byte {e.start + 1} of the line"


def _without_line_end(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith(("\n", "\r")):
        return line[:-1]
    return line


def _replace_surrogates(text: str) -> str:
    """``text`` decoded with surrogateescape, its undecodable bytes shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _raise_csv_field_limit() -> None:
    """Let the csv module read fields of any size (its default stops at 128 KiB)."""
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:  # a C long is 32 bits on some platforms
            limit //= 2


class _CsvRows:
    """The rows of a CSV input, each with the text it was read from and where it starts.

    csv.reader asks for one line at a time and never reads ahead, so the lines it took
    since the last row are exactly that row as it came in.
    """

    def __init__(self, lines: Iterator[bytes], line_number: Callable[[], int]) -> None:
        _raise_csv_field_limit()
        self._lines = lines
        self._line_number = line_number
        self._fed: list[str] = []
        self.bad_bytes: list[str] = []  # where the current row is not valid UTF-8
        self.start = 0  # the line the current row starts on
        self._reader = csv.reader(self._feed())

    def _feed(self) -> Iterator[str]:
        for data in self._lines:
            n = self._line_number()
            if not self._fed:
                self.start = n
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as e:
                # Read it anyway, to find where the row ends, but report it.
                line = data.decode("utf-8", "surrogateescape")
                self.bad_bytes.append(f"line {n}, {_byte_at(e)}")
            self._fed.append(line)
            yield line

    def next(self) -> list[str] | csv.Error | None:
        """The next row, the error that stopped it, or None at the end."""
        self._fed.clear()
        self.bad_bytes.clear()
        try:
            return next(self._reader)
        except StopIteration:
            return None
        except csv.Error as e:
            return e

    def raw(self) -> str:
        """The current row exactly as it came in."""
        return "".join(self._fed)


def _no_records(stack: ExitStack) -> Iterator[Document | BadRecord]:
    stack.close()
    yield from ()


def _walk(folder: str, prefix: str) -> Iterator[tuple[str, str] | BadRecord]:
    """(id, path) of each text or HTML file under ``folder``, in name order, depth first.

    Names starting with a dot are skipped, and so are links to folders (they can loop).
    A folder that cannot be listed is a BadRecord.
    """
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda entry: entry.name)
    except OSError as e:
        yield BadRecord(
            None, prefix.rstrip("/") or ".", f"cannot list the folder: {e.strerror or e}"
        )
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(entry.path, f"{prefix}{entry.name}/")
            elif entry.name.lower().endswith(FOLDER_SUFFIXES) and (
                entry.is_file() or entry.is_symlink()  # a broken link is reported, not lost
            ):
                yield f"{prefix}{entry.name}", entry.path
        except OSError as e:
            yield BadRecord(None, prefix + entry.name, f"cannot read: {e.strerror or e}")


def _decode_file(data: bytes, *, html: bool) -> str:
    """A file's text: UTF-8, or for HTML the charset its <meta> declares; InputError if neither."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        problem = f"not valid UTF-8: byte 0x{e.object[e.start]:02X} at byte {e.start + 1}"
    declared = _META_CHARSET.search(data[:4096]) if html else None
    if declared is None:
        raise InputError(problem)
    label = declared.group(1).decode("ascii").lower()
    charset = _CHARSET_ALIASES.get(label, label)
    try:
        return data.decode(charset)
    except LookupError:
        raise InputError(f"{problem}, and its declared charset {label!r} is unknown") from None
    except UnicodeDecodeError as e:
        raise InputError(
            f"{problem}, nor valid {label} as declared (byte 0x{e.object[e.start]:02X} at byte {e.start + 1})"
        ) from None
