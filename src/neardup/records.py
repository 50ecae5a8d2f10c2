"""Read the records of a dedup run, and write the kept ones back the way they came in.

Input is JSONL (``-`` for standard input; ``.gz`` input is un-gzipped), CSV with a header row,
or a folder of ``.txt`` / ``.html`` files. Every non-blank line (CSV: row; folder: file) gives
exactly one :class:`Document` or one :class:`BadRecord`, so bad input loses nothing: it is
reported with its line and the reason, and the run goes on.

>>> import os, tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     path = os.path.join(folder, "pages.jsonl")
...     with open(path, "w", encoding="utf-8") as f:
...         _ = f.write('{"id": 1, "text": "北京今天晴"}\\n\\n{"id": 1, "text": "again"}\\n[]\\n')
...     records = list(read_records(path))
>>> records[0].id, records[0].text, records[0].line
('1', '北京今天晴', 1)
>>> for bad in records[1:]:
...     print(bad.to_json())
{"line": 3, "id": "1", "reason": "repeated id '1', first on line 1"}
{"line": 4, "id": null, "reason": "not a JSON object but an array"}
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import IO, Literal, Self, TextIO, TypeAlias, cast

from .errors import ConfigError, InputError, OutputError

__all__ = [
    "FORMATS",
    "BadRecord",
    "Document",
    "Fields",
    "Format",
    "RecordReader",
    "UniqueWriter",
    "detect_format",
    "parse_timestamp",
    "read_records",
]

Format: TypeAlias = Literal["jsonl", "csv", "dir"]
FORMATS: tuple[Format, ...] = ("jsonl", "csv", "dir")

# Files a folder input reads; every other file in the folder is left alone.
FOLDER_SUFFIXES = (".txt", ".html", ".htm")
# Numbers above this are taken as milliseconds: 1e11 seconds is the year 5138.
_MILLISECONDS_ABOVE = 1e11
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_COMPACT_DATE = re.compile(r"\d{8}")
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
# WHATWG decodes these labels as GBK; GB 18030 is its superset and decodes all of them.
_CHARSET_ALIASES = {"gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030"}


@dataclass(frozen=True, slots=True)
class Document:
    """One usable record: its id and text, what else it carries, and how it came in.

    ``line`` is the 1-based line it starts on (JSONL, CSV counting the header row) or None
    (folder). ``raw`` is the line or CSV row exactly as read, without its line ending, for
    :class:`UniqueWriter` to write; it is None for a folder's files.

    >>> Document("a1", "北京今天晴").title is None
    True
    """

    id: str
    text: str
    title: str | None = None
    timestamp: float | None = None  # seconds since the epoch, UTC
    line: int | None = None
    raw: str | None = None


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record that cannot be used: where it is, its id if that could be read, and why.

    For a folder's files ``line`` is None and ``id`` is the file's path within the folder.

    >>> BadRecord(7, "x9", "'text' is empty").to_json()
    '{"line": 7, "id": "x9", "reason": "\\'text\\' is empty"}'
    """

    line: int | None
    id: str | None
    reason: str

    def to_json(self) -> str:
        """This record as one line of JSON (no newline), non-ASCII text kept as is."""
        return json_line({"line": self.line, "id": self.id, "reason": self.reason})


@dataclass(frozen=True)
class Fields:
    """The names of the fields (JSONL) or columns (CSV) that hold each part of a record.

    >>> Fields(text="body").text, Fields().id
    ('body', 'id')
    """

    id: str = "id"
    text: str = "text"
    title: str = "title"
    timestamp: str = "timestamp"


def _csv_line(row: list[str]) -> str:
    """One CSV record without its line end."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(row)
    return buf.getvalue()


def json_line(obj: object) -> str:
    """``obj`` as one line of JSON; escaped if it holds lone surrogates UTF-8 cannot carry."""
    line = json.dumps(obj, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(obj)
    return line


def _show(value: str, limit: int = 60) -> str:
    """``value`` quoted for a message, cut short so one huge value cannot flood the report."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


def _json_type(value: object) -> str:
    """The JSON name of ``value``'s type, with its article ("an array")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


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


def parse_timestamp(value: object) -> float:
    """Seconds since the epoch (UTC) of a record's timestamp, or InputError saying why not.

    Numbers are epoch seconds, or milliseconds when above 1e11. Strings are ISO 8601 dates or
    date-times (``Z`` and offsets understood; no offset means UTC), numeric strings as for
    numbers, but eight digits as a compact date (``20240105``), or HTTP dates
    (``Fri, 05 Jan 2024 00:00:00 GMT``).

    >>> parse_timestamp("2024-01-05T08:00:00+08:00"), parse_timestamp(1704412800000)
    (1704412800.0, 1704412800.0)
    >>> parse_timestamp("yesterday")
    Traceback (most recent call last):
    ...
    neardup.errors.InputError: cannot read 'yesterday' as a time: use ISO 8601 (2024-01-05 or 2024-01-05T10:30:00Z), epoch seconds or milliseconds, or an HTTP date
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InputError(f"a timestamp must be a number or a string, not {_json_type(value)}")
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise InputError("the timestamp is an empty string")
        if _COMPACT_DATE.fullmatch(text):  # eight digits of epoch seconds would be 1970-73
            try:
                return _seconds(datetime.fromisoformat(text))
            except ValueError:
                raise InputError(
                    f"{_show(value)} is not a valid compact date (eight digits: YYYYMMDD)"
                ) from None
        if _NUMBER.fullmatch(text):
            return _epoch(text, value)
        try:
            return _seconds(datetime.fromisoformat(text))
        except ValueError:
            pass
        try:
            return _seconds(parsedate_to_datetime(text))
        except (TypeError, ValueError, IndexError):
            pass
        raise InputError(
            f"cannot read {_show(value)} as a time: use ISO 8601 (2024-01-05 or "
            "2024-01-05T10:30:00Z), epoch seconds or milliseconds, or an HTTP date"
        )
    return _epoch(value, value)


def _seconds(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _epoch(number: float | str, shown: object) -> float:
    """``number`` as epoch seconds, checked to be a time a calendar can show."""
    try:
        seconds = float(number)
        if abs(seconds) > _MILLISECONDS_ABOVE:
            seconds /= 1000
        datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise InputError(
            f"the timestamp {_show(str(shown))} is not a time between the years 1 and 9999"
        ) from None
    return seconds


def read_records(source: str, *, fields: Fields = Fields(), fmt: str | None = None) -> RecordReader:
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

    def __init__(self, source: str, *, fields: Fields = Fields(), fmt: str | None = None) -> None:
        if fmt is None:
            fmt = detect_format(source)
        if fmt not in FORMATS:
            raise ConfigError(f"unknown input format {fmt!r}; use one of {', '.join(FORMATS)}")
        self.source = source
        self.format = fmt
        self.fields = fields
        self.csv_header = None
        self._first_line: dict[str, int] = {}
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
                yield self._from_json(_without_line_end(line), n)
            yield from self._stop_record()
        finally:
            self._stack.close()

    def _from_json(self, line: str, n: int) -> Document | BadRecord:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            return BadRecord(n, None, f"malformed JSON: {e.msg} at column {e.colno}")
        except RecursionError:
            return BadRecord(n, None, "malformed JSON: nested too deeply to read")
        except ValueError as e:  # e.g. an integer of more digits than Python will convert
            return BadRecord(n, None, f"malformed JSON: {e}")
        if not isinstance(obj, dict):
            return BadRecord(n, None, f"not a JSON object but {_json_type(obj)}")
        return self._check(obj, n, line)

    def _id_of(self, data: bytes) -> str | None:
        """The id of a line that is not valid UTF-8, if the id itself is."""
        try:
            obj = json.loads(data.decode("utf-8", "surrogateescape"))
            doc_id = _read_id(obj[self.fields.id], self.fields.id)
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
                    yield self._check(record, rows.start, _without_line_end(raw))
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

    # -- checks common to JSONL and CSV --------------------------------------------------

    def _check(self, record: Mapping[str, object], n: int, raw: str) -> Document | BadRecord:
        """The record as a Document, or a BadRecord naming every problem found in it."""
        f = self.fields
        problems: list[str] = []

        doc_id: str | None = None
        if f.id not in record:
            problems.append(f"missing {f.id!r}")
        else:
            try:
                doc_id = _read_id(record[f.id], f.id)
            except InputError as e:
                problems.append(str(e))

        text = record.get(f.text)
        if f.text not in record:
            problems.append(f"missing {f.text!r}")
        elif text is None:
            problems.append(f"{f.text!r} is null")
        elif not isinstance(text, str):
            problems.append(f"{f.text!r} must be a string, not {_json_type(text)}")
        elif not text.strip():
            problems.append(f"{f.text!r} is {'empty' if not text else 'only whitespace'}")

        title: str | None = None
        value = record.get(f.title)
        if isinstance(value, str):
            title = value or None
        elif isinstance(value, int | float) and not isinstance(value, bool):
            title = str(value)
        elif value is not None:
            problems.append(f"{f.title!r} must be a string, not {_json_type(value)}")

        timestamp: float | None = None
        value = record.get(f.timestamp)
        if value is not None and not (isinstance(value, str) and not value.strip()):
            try:
                timestamp = parse_timestamp(value)
            except InputError as e:
                problems.append(f"bad {f.timestamp!r}: {e}")

        if doc_id is not None and doc_id in self._first_line:
            problems.append(
                f"repeated id {_show(doc_id)}, first on line {self._first_line[doc_id]}"
            )
        if problems:
            return BadRecord(n, doc_id, "; ".join(problems))
        assert doc_id is not None and isinstance(text, str)
        self._first_line[doc_id] = n
        return Document(doc_id, text, title, timestamp=timestamp, line=n, raw=raw)


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


def _read_id(value: object, name: str) -> str:
    """A record's id as a string (numbers become their string); InputError if unusable."""
    if value is None:
        raise InputError(f"{name!r} is null")
    if isinstance(value, str):
        if not value:
            raise InputError(f"{name!r} is empty")
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"{name!r} must be a finite number, not {value}")
        return str(value)
    raise InputError(f"{name!r} must be a string or a number, not {_json_type(value)}")


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
        fields: Fields = Fields(),
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
            self._out.write(_csv_line(self.csv_header))
        else:
            self.csv_header = None

    def write(self, doc: Document) -> None:
        """Write one kept document."""
        if doc.raw is not None:
            self._out.write(doc.raw)
        elif self.csv_header is not None:
            self._out.write(_csv_line(self._row(doc)))
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
