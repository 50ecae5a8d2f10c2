"""Read the records of a dedup run from one input or many: JSON Lines (``-`` for standard
input; gzip and zstd input is un-compressed, UTF-16 read as such), CSV with a header row,
Parquet and Arrow IPC files (in record batches), WARC and WET files, and folders and globs of
any of them or of ``.txt`` / ``.html`` pages. Every non-blank line (CSV: row; table: row;
page: file; WARC: HTML response or conversion record) gives exactly one Document or one
BadRecord, so bad input loses nothing: it is reported with its line and the reason, and the
run goes on."""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import ExitStack
from types import TracebackType
from typing import IO, Self, cast

from ..errors import InputError
from ..messages import json_type
from .charsets import META_CHARSET, decode_declared, text_codec
from .document import (
    DEFAULT_FIELDS,
    NO_TEXT,
    BadRecord,
    Document,
    Fields,
    RecordChecker,
    field_value,
    no_text,
    read_id,
)
from .jsonarray import starts_an_array
from .sources import (
    FORMATS,
    PAGE_SUFFIXES,
    Format,
    Part,
    detect_format,
    resolve,
)
from .streams import (
    DEFAULT_MAX_RECORD,
    BrokenOff,
    Opened,
    TooLong,
    capped_lines,
    format_size,
    open_bytes,
    peek,
    text_encoding,
)

__all__ = ["FOLDER_SUFFIXES", "FORMATS", "Format", "RecordReader", "detect_format", "read_records"]

# Files a folder of pages reads as one record each.
FOLDER_SUFFIXES = PAGE_SUFFIXES
_BOM = b"\xef\xbb\xbf"


def read_records(
    source: str | Sequence[str],
    *,
    fields: Fields = DEFAULT_FIELDS,
    fmt: str | None = None,
    max_record_size: int = DEFAULT_MAX_RECORD,
    encoding: str | None = None,
) -> RecordReader:
    """Stream the records of ``source`` as :class:`Document` or :class:`BadRecord`, in order.

    ``source`` is a path, ``-`` for standard input, a folder, a glob, or a list of them, read
    in that order (see :mod:`neardup.records.sources`); ``fmt`` (one of :data:`FORMATS`)
    overrides :func:`detect_format`. The inputs are found, the first one opened, and every
    CSV header and table schema read and checked, before this returns, so a missing file, a
    folder with nothing to read or a header without the text column raises
    :class:`InputError` at once; a common CSV header is then ``.csv_header`` on the result.
    Everything wrong with a single record is a :class:`BadRecord` instead. A record may hold
    at most ``max_record_size`` bytes (more is a BadRecord, and is not read into memory).
    ``encoding`` names the codec of JSONL and CSV inputs that are not UTF-8 (``gbk``,
    ``big5``, ``cp1252``; a charset label as :func:`~neardup.records.charsets.codec_of`
    reads it).

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "pages.csv")
    ...     with open(path, "w", encoding="utf-8") as f:
    ...         _ = f.write('url,body\\nhttps://a.cn/1,"第一行\\nsecond line"\\nhttps://a.cn/2,  \\n')
    ...     with read_records(path, fields=Fields(id="url", text="body")) as records:
    ...         header, found = records.csv_header, list(records)
    >>> header, found[0].text, found[1]
    (['url', 'body'], '第一行\\nsecond line', BadRecord(line=4, id='https://a.cn/2', reason="'body' is only whitespace", file=None, id_value=None))
    """
    return RecordReader(
        source, fields=fields, fmt=fmt, max_record_size=max_record_size, encoding=encoding
    )


class RecordReader(Iterator[Document | BadRecord]):
    """The records of a run's inputs, read as they are asked for (what :func:`read_records`
    returns).

    ``format`` is the inputs' format (``mixed`` when they differ; ``dir`` for a folder of
    pages) and ``csv_header`` the CSV header row the CSV inputs share (None otherwise, and
    for an empty CSV input). ``parts`` are the files read. Ids of the documents given out so
    far are kept, to report a repeated id with where it was first seen; an id first seen on
    a bad record can still be used by a later good one. ``unread`` says why some input could
    not be read to its end (a truncated gzip file, a folder that cannot be listed), ``notes``
    what else the run should say (a UTF-16 file, records named FILE:LINE). Use it as a
    context manager, or call :meth:`close`, to close the input before it is read to the end.

    >>> with read_records(".", fmt="dir") as records:
    ...     records.format, records.csv_header
    ('dir', None)
    """

    format: str
    csv_header: list[str] | None

    def __init__(
        self,
        source: str | Sequence[str],
        *,
        fields: Fields = DEFAULT_FIELDS,
        fmt: str | None = None,
        max_record_size: int = DEFAULT_MAX_RECORD,
        encoding: str | None = None,
    ) -> None:
        sources = [source] if isinstance(source, str) else list(source)
        if max_record_size < 1:
            raise InputError(f"max_record_size must be at least 1 byte, got {max_record_size}")
        self.encoding = text_codec(encoding)
        resolved = resolve(sources, fmt=fmt)
        self.sources = sources
        self.source = sources[0] if len(sources) == 1 else ", ".join(sources)
        self.parts = resolved.parts
        self.skipped_files = resolved.skipped
        self.fields = fields
        self.max_record_size = max_record_size
        self.checker = RecordChecker(fields)
        self.many = len(self.parts) > 1
        self.unread: list[str] = []
        self.notes: list[str] = []
        #: WARC records that are no documents, by kind (requests, revisits, …)
        self.not_documents: Counter[str] = Counter()
        #: the WARC-Target-URIs seen so far (a URI seen again gets its record id appended)
        self.warc_uris: set[str] = set()
        self.records_read = 0
        self._stack = ExitStack()
        self._opened: Opened | None = None
        self._done_bytes = 0
        self._table_progress: tuple[int, int] | None = None  # rows read, rows in the file
        formats = {p.fmt for p in self.parts if p.problem is None} or {p.fmt for p in self.parts}
        if formats == {"page"}:
            self.format = "dir"
        elif len(formats) == 1:
            self.format = formats.pop()
        else:
            self.format = "mixed"
        self.csv_header = None
        self.total_bytes: int | None = (
            None
            if any(p.size is None and p.problem is None for p in self.parts)
            else sum(p.size or 0 for p in self.parts)
        )
        self.total_records: int | None = None
        self._current: Part | None = None
        self._first: tuple[Opened, _CsvRows | None, list[str] | None] | None = None
        try:
            first = next((p for p in self.parts if p.problem is None), None)
            if first is not None and first.fmt in ("jsonl", "csv", "warc"):
                # open the first input now: a missing file or a bad CSV header fails at once
                opened = self._open(first, text=first.fmt != "warc")
                rows = header = None
                if first.fmt == "csv":
                    rows = _CsvRows(self._numbered(opened.stream, first), self.max_record_size)
                    header = self._csv_header(rows, first)
                    first.info["header"] = header
                self._first = (opened, rows, header)
            self._check_parts(first)
            self._gen: Generator[Document | BadRecord, None, None] = self._read()
        except BaseException:
            self._stack.close()
            raise

    def __next__(self) -> Document | BadRecord:
        record = next(self._gen)
        self.records_read += 1
        return record

    def on_close(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` when the reader is closed (a temporary file of the input)."""
        self._stack.callback(callback)

    def close(self) -> None:
        """Stop reading and close the input (standard input is left open)."""
        self._gen.close()  # a generator: closing it runs its finally
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

    # -- how far reading has got ------------------------------------------------------------

    @property
    def bytes_read(self) -> int | None:
        """Bytes of the inputs read so far (compressed bytes of compressed files), or None
        when that cannot be known (standard input)."""
        if self.total_bytes is None:
            return None
        now = 0
        if self._table_progress is not None:
            rows, total = self._table_progress
            size = self._current.size or 0 if self._current is not None else 0
            now = size * rows // total if total else 0
        elif self._opened is not None:
            now = self._opened.position() or 0
        return min(self._done_bytes + now, self.total_bytes)

    @property
    def unnamed(self) -> int:
        """Records that had no id and were named FILE:LINE (FILE:ROW for tables)."""
        return self.checker.unnamed

    # -- before reading: every header and schema ----------------------------------------------

    def _check_parts(self, first: Part | None) -> None:
        headers: list[list[str]] = []
        rows: list[int] = []
        for part in self.parts:
            if part.problem is not None:
                continue
            if part.fmt == "csv":
                header = self._peek_header(part) if part is not first else part.info["header"]
                if isinstance(header, list):
                    headers.append(header)
            elif part.fmt in ("parquet", "arrow"):
                from .tables import UnreadableTable, inspect_table

                try:
                    n = inspect_table(part, self.fields)
                except UnreadableTable as e:
                    if not self.many:
                        raise
                    # one shard of many: reported, and the run says it could not read it all
                    part.problem, part.unread = str(e), True
                    continue
                if n is not None:
                    rows.append(n)
        if headers and all(h == headers[0] for h in headers):
            self.csv_header = headers[0]
        if (
            self.parts
            and all(p.fmt in ("parquet", "arrow") for p in self.parts)
            and len(rows) == len(self.parts)
        ):
            self.total_records = sum(rows)

    def _peek_header(self, part: Part) -> list[str] | None:
        with ExitStack() as stack:
            opened = open_bytes(part.path, stack)
            rows = _CsvRows(self._numbered(opened.stream, part), self.max_record_size)
            header = self._csv_header(rows, part)
        part.info["header"] = header
        return header

    # -- reading ---------------------------------------------------------------------------

    def _read(self) -> Generator[Document | BadRecord, None, None]:
        try:
            for index, part in enumerate(self.parts):
                self._current = part
                if part.problem is not None:
                    if part.unread:
                        self.unread.append(f"{part.name}: {part.problem}")
                    if part.fmt == "page":
                        yield BadRecord(None, part.page_id or part.name, part.problem)
                    else:
                        yield BadRecord(None, None, part.problem, file=part.name)
                    continue
                if part.fmt == "page":
                    yield self._page(part)
                    continue
                unit = "row" if part.fmt in ("parquet", "arrow") else "line"
                self.checker.begin(part.name, unit=unit, name_missing=True, tag=self.many)
                first, self._first = (
                    (self._first, None) if index == self._first_index() else (None, None)
                )
                if part.fmt in ("jsonl", "csv"):
                    if first is not None:
                        opened, rows, header = first
                    else:
                        try:
                            opened = self._open(part)
                        except InputError as e:
                            self.unread.append(str(e))
                            yield self.checker.bad(None, None, str(e))
                            continue
                        rows = header = None
                    if part.fmt == "jsonl":
                        yield from self._jsonl(opened, part)
                    else:
                        yield from self._csv(opened, part, rows, header)
                elif part.fmt in ("parquet", "arrow"):
                    from .tables import table_records

                    self._table_progress = (0, 1)
                    for record in table_records(part, self.checker, self.max_record_size):
                        if isinstance(record, tuple):  # (rows read, rows in all)
                            self._table_progress = record
                            continue
                        yield record
                    self._table_progress = None
                    if part.info.get("unread"):
                        self.unread.append(f"{part.name}: {part.info['unread']}")
                else:
                    from .warc import warc_records

                    if first is not None:
                        opened = first[0]
                    else:
                        try:
                            opened = self._open(part, text=False)
                        except InputError as e:
                            self.unread.append(str(e))
                            yield self.checker.bad(None, None, str(e))
                            continue
                    yield from warc_records(self, part, opened)
                self._finish_part(part)
            if self.unnamed:
                unit = (
                    "FILE:ROW"
                    if all(p.fmt in ("parquet", "arrow") for p in self.parts)
                    else "FILE:LINE"
                )
                were = "record had" if self.unnamed == 1 else "records had"
                self.notes.append(
                    f"{self.unnamed:,} {were} no {self.fields.id!r}; "
                    f"{'it is' if self.unnamed == 1 else 'they are'} named {unit}"
                )
        finally:
            self._stack.close()

    def _first_index(self) -> int:
        return next((i for i, p in enumerate(self.parts) if p.problem is None), -1)

    def _open(self, part: Part, *, text: bool = True) -> Opened:
        opened = open_bytes(part.path, self._stack, text=text, encoding=self.encoding)
        self._opened = opened
        if opened.encoding is not None:
            self.notes.append(f"{part.name} is {opened.encoding}; it was read as such")
        return opened

    def _finish_part(self, part: Part) -> None:
        self._done_bytes += part.size or 0
        self._opened = None
        self._stack.close()
        self._stack = ExitStack()

    def _numbered(self, stream: IO[bytes], part: Part) -> Iterator[tuple[int, bytes | TooLong]]:
        """(line number, line) of ``stream``, ending quietly (noted in ``part.info``) if it
        breaks off."""
        n = 0
        try:
            for line in capped_lines(stream, self.max_record_size):
                n += 1
                if n == 1 and isinstance(line, bytes) and line.startswith(_BOM):
                    line = line[3:]
                yield n, line
        except BrokenOff as e:
            part.info["stopped"] = (n, str(e) or type(e).__name__)

    def _stop_record(self, part: Part) -> Iterator[BadRecord]:
        """One BadRecord if the input broke off before its end, so the loss is on record."""
        stopped = part.info.pop("stopped", None)
        if isinstance(stopped, tuple):
            n, why = cast(tuple[int, str], stopped)
            reason = f"the input breaks off after line {n} ({why}); nothing after it could be read"
            self.unread.append(f"{part.name}: {reason}")
            yield self.checker.bad(n + 1, None, reason)

    def _too_long(self, n: int, size: int) -> str:
        cap = self.max_record_size
        return (
            f"the line holds {size:,} bytes, more than the {format_size(cap)} a record may "
            "hold (--max-record-size); it was skipped unread"
        )

    # -- JSONL -------------------------------------------------------------------------------

    def _jsonl(self, opened: Opened, part: Part) -> Iterator[Document | BadRecord]:
        try:
            head = peek(opened.stream, 4096)
        except BrokenOff:  # broken from the start: reading says so, line by line
            head = b""
        if starts_an_array(head):
            yield from self._json_array(opened, part)
            return
        checker = self.checker
        json_seen, lines, not_utf8_lines = False, 0, 0
        for n, data in self._numbered(opened.stream, part):
            if isinstance(data, TooLong):
                yield checker.bad(n, None, self._too_long(n, data.size))
                continue
            if not data.strip():
                continue
            lines += 1
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as e:
                not_utf8_lines += 1
                yield checker.bad(n, id_of_line(data, self.fields.id), not_utf8(e))
                continue
            record = checker.from_json(_without_line_end(line), n)
            if not json_seen:
                json_seen = not (
                    isinstance(record, BadRecord) and record.reason.startswith(_NOT_JSON)
                )
            yield record
        archive = _archive(head)
        if lines and not json_seen and (lines > not_utf8_lines or archive is not None):
            self.notes.append(f"{part.name}: {_not_jsonl(part.name, lines, head)}")
        if archive is None:
            self._note_encoding(part, not_utf8_lines, lines)
        yield from self._stop_record(part)

    def _note_encoding(self, part: Part, bad: int, lines: int) -> None:
        """Say how to read a file most of whose lines are not UTF-8."""
        if bad and bad * 2 >= lines:
            self.notes.append(
                f"{part.name}: {bad:,} of its {lines:,} records are not valid UTF-8: "
                f"{_ENCODING_HINT}"
            )

    def _json_array(self, opened: Opened, part: Part) -> Iterator[Document | BadRecord]:
        """A file that is one JSON array (Scrapy's ``-o items.json``): each element a record,
        named by the line it starts on."""
        from .jsonarray import Element, array_elements

        self.notes.append(
            f"{part.name} is one JSON array; each of its elements was read as a record "
            "(and is written to UNIQUE as a JSON line)"
        )
        checker = self.checker
        for e in array_elements(opened.stream, self.max_record_size):
            if isinstance(e, Element):
                if isinstance(e.value, dict):
                    yield checker.check(e.value, e.line, e.raw)
                else:
                    yield checker.bad(e.line, None, f"not a JSON object but {json_type(e.value)}")
                continue
            reason = (
                f"the JSON array breaks off at line {e.line} ({e.reason}); nothing after it "
                "could be read"
            )
            self.unread.append(f"{part.name}: {reason}")
            yield checker.bad(e.line, None, reason)

    # -- CSV ---------------------------------------------------------------------------------

    def _csv_header(self, rows: _CsvRows, part: Part) -> list[str] | None:
        """The header row, checked; None for an input without one (empty)."""
        while (row := rows.next()) is not None:
            if isinstance(row, _Problem):
                raise InputError(
                    f"{part.name}: the CSV header on line {rows.start} is malformed: {row.reason}"
                )
            if rows.raw().strip():
                break
        if row is None:
            return None
        if rows.bad_bytes:
            raise InputError(
                f"{part.name}: the CSV header is not valid UTF-8 ({rows.bad_bytes[0]}): "
                f"{_ENCODING_HINT}"
            )
        if self.fields.text not in row:
            # separated by semicolons (Excel where the decimal mark is a comma), tabs (TSV,
            # quoted as pandas and spreadsheets write it) or bars: the header names the
            # text column
            line = _without_line_end(rows.raw())
            for delimiter in _DELIMITERS:
                cells = next(csv.reader([line], delimiter=delimiter), [])
                if len(cells) > 1 and self.fields.text in cells:
                    rows.separate_by(delimiter)
                    part.info["delimiter"] = delimiter
                    row = cells
                    break
        if self.fields.text not in row:
            raise InputError(
                f"{part.name}: the CSV header has no {self.fields.text!r} column "
                f"(it has {', '.join(map(repr, row))}); say which column to use"
            )
        return row

    def _csv(
        self, opened: Opened, part: Part, rows: _CsvRows | None, header: list[str] | None
    ) -> Iterator[Document | BadRecord]:
        if rows is None:
            rows = _CsvRows(self._numbered(opened.stream, part), self.max_record_size)
            try:
                header = self._csv_header(rows, part)
            except InputError as e:  # it was fine when the run began
                self.unread.append(str(e))
                yield self.checker.bad(None, None, str(e))
                return
        if header is None:  # an empty input: no header, no records
            return
        part.info["header"] = header
        columns: dict[str, int] = {}
        for i, name in enumerate(header):
            columns.setdefault(name, i)  # a repeated column name means its first column
        checker, id_field = self.checker, self.fields.id
        read = not_utf8_rows = 0
        while (row := rows.next()) is not None:
            if isinstance(row, _Problem):
                yield checker.bad(rows.start, row.id_of(columns.get(id_field)), row.reason)
                continue
            raw = rows.raw()
            if not raw.strip():
                continue
            read += 1
            record = {name: row[i] for name, i in columns.items() if i < len(row)}
            guess = record.get(id_field) or None
            if rows.bad_bytes:
                not_utf8_rows += 1
                shown = None if guess is None else _replace_surrogates(guess)
                reason = f"not valid UTF-8: {'; '.join(rows.bad_bytes)}"
                yield checker.bad(rows.start, shown, reason)
            elif len(row) > len(header):
                reason = f"the row has {len(row)} fields but the header has {len(header)}"
                yield checker.bad(rows.start, guess, reason)
            else:
                yield checker.check(record, rows.start, _without_line_end(raw), origin=part)
        self._note_encoding(part, not_utf8_rows, read)
        yield from self._stop_record(part)

    # -- pages -------------------------------------------------------------------------------

    def _page(self, part: Part) -> Document | BadRecord:
        page_id = part.page_id or part.name
        cap = self.max_record_size
        if part.size is not None and part.size > cap:
            return BadRecord(
                None,
                page_id,
                f"the file holds {part.size:,} bytes, more than the {format_size(cap)} a record "
                "may hold (--max-record-size); it was skipped unread",
            )
        try:
            with open(part.path, "rb") as f:
                data = f.read(cap + 1)
        except OSError as e:
            reason = f"cannot read the file: {e.strerror or e}"
            self.unread.append(f"{part.name}: {reason}")
            return BadRecord(None, page_id, reason)
        finally:
            self._done_bytes += part.size or 0
        if len(data) > cap:
            return BadRecord(
                None, page_id, f"the file holds more than the {format_size(cap)} a record may hold"
            )
        try:
            text = decode_file(data, html=part.path.lower().endswith((".html", ".htm")))
        except InputError as e:
            return BadRecord(None, page_id, str(e))
        if not text.strip():
            reason = "the file is empty" if not text else "the file holds only whitespace"
            return BadRecord(None, page_id, reason)
        if no_text(text):
            return BadRecord(None, page_id, f"the file {NO_TEXT}")
        self.checker.begin(page_id)
        problem = self.checker.claim(page_id)
        if problem is not None:
            return BadRecord(
                None,
                page_id,
                problem
                + " (file names that differ only in bytes that are not UTF-8 read the same)",
            )
        return Document(page_id, text, origin=part)


# -- helpers ---------------------------------------------------------------------------------


def _byte_at(e: UnicodeDecodeError) -> str:
    return f"byte 0x{e.object[e.start]:02X} at byte {e.start + 1} of the line"


def not_utf8(e: UnicodeDecodeError) -> str:
    """Why a JSON line that is not valid UTF-8 is an error record (the Spark engine's too)."""
    return f"not valid UTF-8: {_byte_at(e)}"


def id_of_line(data: bytes, id_field: str) -> str | None:
    """The id of a JSON line that is not valid UTF-8, if the id itself is."""
    try:
        obj = json.loads(data.decode("utf-8", "surrogateescape"))
        present, value = field_value(obj, id_field)
        if not present:
            return None
        doc_id = read_id(value, id_field)
        doc_id.encode("utf-8")  # an undecodable byte in the id itself: not known
    except (ValueError, RecursionError, TypeError, KeyError, InputError):
        return None
    return doc_id


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
    """Let the csv module read fields of any size (its default stops at 128 KiB); the rows
    are held to ``max_record_size`` by :class:`_CsvRows` itself."""
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:  # a C long is 32 bits on some platforms
            limit //= 2


class _Problem:
    """A CSV row that cannot be read as one: why, and the fields read, if any."""

    def __init__(self, reason: str, row: list[str] | None = None) -> None:
        self.reason = reason
        self.row = row

    def id_of(self, column: int | None) -> str | None:
        if self.row is None or column is None or column >= len(self.row):
            return None
        value = self.row[column]
        return value if value and "\n" not in value and len(value) <= 1000 else None


class _RowTooLarge(Exception):
    def __init__(self, line: int, size: int, quotes: int) -> None:
        self.line, self.size, self.quotes = line, size, quotes


def _lines_span(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}–{last}"


#: What to do with a text file that is not UTF-8.
_ENCODING_HINT = (
    "if the file is in another encoding (gbk or big5, as Excel saves CSV on a Chinese "
    "Windows; cp1252), give it with --encoding"
)

#: What else separates the fields of a "CSV" file, tried in turn when the header read as
#: comma-separated has no text column.
_DELIMITERS = (";", "\t", "|")


class _CsvRows:
    """The rows of a CSV input, each with the text it was read from and where it starts.

    csv.reader asks for one line at a time and never reads ahead, so the lines it took
    since the last row are exactly that row as it came in. A quoted field that is never
    closed would swallow the rest of the input into one field: when the input ends inside
    one, the row is reported (naming the line where the quote opened and what it took) and
    the lines after that line are read again as rows. A row larger than ``cap`` is reported
    and skipped to its end (where its quotes balance) without keeping it.
    """

    def __init__(self, lines: Iterator[tuple[int, bytes | TooLong]], cap: int) -> None:
        _raise_csv_field_limit()
        self._source = lines
        self._cap = cap
        self._back: deque[tuple[int, bytes | TooLong]] = deque()
        self._fed: list[tuple[int, bytes, str]] = []
        self._fed_bytes = 0
        self._eof_in_row = False
        self.bad_bytes: list[str] = []  # where the current row is not valid UTF-8
        self.start = 0  # the line the current row starts on
        self.delimiter = ","
        self._reader = csv.reader(self._feed())

    def _pull(self) -> tuple[int, bytes | TooLong] | None:
        if self._back:
            return self._back.popleft()
        return next(self._source, None)

    def _feed(self) -> Iterator[str]:
        while True:
            item = self._pull()
            if item is None:
                self._eof_in_row = bool(self._fed)
                return
            n, data = item
            if not self._fed:
                self.start = n
            if isinstance(data, TooLong):
                raise _RowTooLarge(n, self._fed_bytes + data.size, data.quotes)
            self._fed_bytes += len(data)
            if self._fed_bytes > self._cap:
                raise _RowTooLarge(n, self._fed_bytes, data.count(b'"'))
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as e:
                # Read it anyway, to find where the row ends, but report it.
                line = data.decode("utf-8", "surrogateescape")
                self.bad_bytes.append(f"line {n}, {_byte_at(e)}")
            self._fed.append((n, data, line))
            yield line

    def next(self) -> list[str] | _Problem | None:
        """The next row, the problem that spoiled it, or None at the end."""
        self._fed.clear()
        self._fed_bytes = 0
        self._eof_in_row = False
        self.bad_bytes.clear()
        try:
            row = next(self._reader)
        except StopIteration:
            return None
        except csv.Error as e:
            return _Problem(f"malformed CSV: {e}")
        except _RowTooLarge as e:
            return self._skip_large(e)
        if self._eof_in_row and len(self._fed) > 1:
            return self._unterminated(row)
        return row

    def _skip_large(self, e: _RowTooLarge) -> _Problem:
        """Skip the rest of a row too large to keep: to the line where its quotes balance."""
        parity = (sum(line.count('"') for _, _, line in self._fed) + e.quotes) % 2
        first, last, size = self.start, e.line, e.size
        while parity:
            item = self._pull()
            if item is None:
                break
            last, data = item
            size += data.size if isinstance(data, TooLong) else len(data)
            quotes = data.quotes if isinstance(data, TooLong) else data.count(b'"')
            parity ^= quotes % 2
        self._fed.clear()
        self._reader = csv.reader(self._feed(), delimiter=self.delimiter)
        reason = (
            f"the row ({_lines_span(first, last)}) holds {size:,} bytes, more than the "
            f"{format_size(self._cap)} a record may hold (--max-record-size); it was skipped"
        )
        if parity:
            reason += (
                f"; a quoted field opened in it never closes, so it ran to the end of the "
                f"input: an unterminated quote on line {first}?"
            )
        return _Problem(reason)

    def _unterminated(self, row: list[str]) -> _Problem:
        """The input ended inside a quoted field: report the row up to the line where that
        quote opened, and read the lines after it again."""
        opened_at = _quote_opened_at([line for _, _, line in self._fed])
        first = self._fed[0][0]
        opened_line = self._fed[opened_at][0]
        again = self._fed[opened_at + 1 :]
        last = self._fed[-1][0]
        self._back.extendleft(reversed([(n, data) for n, data, _ in again]))
        swallowed = sum(1 for _, _, line in again if line.strip())
        self._fed = self._fed[: opened_at + 1]
        self._reader = csv.reader(self._feed(), delimiter=self.delimiter)
        reason = (
            f"unterminated quote: a quoted field opens on line {opened_line} and never closes, "
            f"so it took in the rest of the input ({_lines_span(opened_line + 1, last)}, "
            f"{swallowed:,} non-blank line{'s' if swallowed != 1 else ''}); those lines are "
            f"read again as rows of their own"
        )
        if first != opened_line:
            reason = f"the row on {_lines_span(first, opened_line)} has an " + reason
        return _Problem(reason, row)

    def separate_by(self, delimiter: str) -> None:
        """Read the rows after the current one as separated by ``delimiter``."""
        self.delimiter = delimiter
        self._reader = csv.reader(self._feed(), delimiter=delimiter)

    def raw(self) -> str:
        """The current row exactly as it came in."""
        return "".join(line for _, _, line in self._fed)


def _quote_opened_at(lines: list[str]) -> int:
    """Which of a row's ``lines`` opens the quoted field that is still open at their end."""
    inside, opened, field_start = False, 0, True
    for k, line in enumerate(lines):
        i = 0
        while i < len(line):
            c = line[i]
            if inside:
                if c == '"':
                    if line.startswith('"', i + 1):  # "" is a quote inside the field
                        i += 2
                        continue
                    inside = False
            elif c == '"' and field_start:
                inside, opened, field_start = True, k, False
            else:
                field_start = c in ",\r\n"
            i += 1
    return opened


#: How the reasons of lines that are not JSON objects begin.
_NOT_JSON = ("malformed JSON", "not a JSON object")


#: Archives and compressions neardup does not open, by their first bytes.
_ARCHIVES = {
    b"PK\x03\x04": "a zip archive",
    b"7z\xbc\xaf\x27\x1c": "a 7-Zip archive",
    b"Rar!\x1a\x07": "a RAR archive",
    b"\x04\x22\x4d\x18": "LZ4-compressed",
}


def _archive(head: bytes) -> str | None:
    """What archive a file that starts with ``head`` is, if it is one neardup does not open."""
    archive = next((k for magic, k in _ARCHIVES.items() if head.startswith(magic)), None)
    if archive is None and head[257:262] == b"ustar":
        archive = "a tar archive"
    return archive


def _not_jsonl(name: str, lines: int, head: bytes = b"") -> str:
    """What to say of a file read as JSONL none of whose lines is a JSON object: that, and
    what it may be instead, by its first bytes or its name."""
    said = f"none of its {lines:,} lines is a JSON object; it was read as JSONL"
    archive = _archive(head)
    if archive is not None:
        return (
            f"{said}, but it is {archive}: unpack it and give the files or their folder "
            "(gzip, zstd, bzip2 and xz files are read as they are)"
        )
    low = name.lower()
    for end in (".gz", ".zst", ".bz2", ".xz"):
        low = low.removesuffix(end)
    if low.endswith(".tab"):
        return f"{said}, but its name says tab-separated values: give --format csv"
    if low.endswith((".txt", ".html", ".htm", ".md")):
        return (
            f"{said}: a page is read as one document from a folder of pages "
            "(neardup dedup pages/), not as a file of records"
        )
    return f"{said}: if it is CSV, Parquet, Arrow or WARC, say so with --format"


def decode_file(data: bytes, *, html: bool) -> str:
    """A file's text: UTF-8, or for HTML the charset its <meta> declares; InputError if neither
    (a folder's files, and ``neardup compare @path``)."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        problem = f"not valid UTF-8: byte 0x{e.object[e.start]:02X} at byte {e.start + 1}"
    declared = META_CHARSET.search(data[:4096]) if html else None
    if declared is None:
        found = text_encoding(data[:4])
        if found is not None:
            codec, what = found
            try:
                return data.decode(codec)
            except UnicodeDecodeError:
                raise InputError(
                    f"{problem}; it looks like {what} but is not valid as such"
                ) from None
        raise InputError(problem)
    label = declared.group(1).decode("ascii").lower()
    try:
        return decode_declared(data, label)
    except LookupError:
        raise InputError(f"{problem}, and its declared charset {label!r} is unknown") from None
    except UnicodeDecodeError as e:
        raise InputError(
            f"{problem}, nor valid {label} as declared (byte 0x{e.object[e.start]:02X} at byte {e.start + 1})"
        ) from None
