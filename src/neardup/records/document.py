"""The records a run reads: usable :class:`Document` s and unusable :class:`BadRecord` s, the
:class:`Fields` that name their parts, and the checks every record passes
(:class:`RecordChecker`), whatever it was read from."""

from __future__ import annotations

import json
import json.scanner
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass, field
from decimal import Decimal
from typing import Any, cast

from ..errors import InputError
from ..frozen import quick_init
from ..messages import json_type, shown
from ..normalize import normalize
from ..times import parse_timestamp

__all__ = [
    "DEFAULT_FIELDS",
    "BadRecord",
    "Document",
    "Fields",
    "RecordChecker",
    "field_value",
    "joined_text",
    "json_line",
    "no_text",
    "read_id",
]

#: What a text may hold and still be nothing once normalized: tags, character references,
#: whitespace, invisible format characters and control characters (NUL ...). A cheap test
#: that spares normalizing (twice) every text that has anything else; the choices of first
#: characters do not overlap.
_MAYBE_NOTHING = re.compile(
    r"(?:<[^<>]*>|&#?\w{1,32};|[\s\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f"
    r"\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff])*"
)

#: Why a text that :func:`no_text` finds empty is no document.
NO_TEXT = "holds no text once normalized (only markup, character references like &nbsp; or "
NO_TEXT += "invisible or control characters like U+200B or NUL)"


def joined_text(value: object) -> object:
    r"""A text field's value as the engine reads it: a list of strings (a Scrapy item's
    ``getall()``, a JSON array or a Parquet ``list<string>`` of paragraphs) is one text, its
    items joined by lines; anything else is given back as it is.

    >>> joined_text(["第一段", "second"]), joined_text("x"), joined_text(["a", 1])
    ('第一段\nsecond', 'x', ['a', 1])
    """
    if type(value).__module__ == "numpy" and getattr(value, "ndim", 0) == 1:
        value = cast(Any, value).tolist()  # pandas reads a list<string> column as arrays
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return value


def text_problem(name: str, value: object) -> str:
    """Why a text field's value that is not a string (nor a list of strings) is no text."""
    if isinstance(value, list | tuple):
        odd = next(v for v in value if not isinstance(v, str))
        return f"{name!r} must be a string or an array of strings, not an array holding {json_type(odd)}"
    return f"{name!r} must be a string, not {json_type(value)}"


def no_text(text: str) -> bool:
    """Whether ``text`` is nothing once normalized (HTML to text, then whitespace, invisible
    format characters and control characters): ``<p></p>``, ``&nbsp;``, ``\\u200b``,
    ``\\x00``. Such a text is an error record, as an empty one is: no sketch, no decision, it
    would match nothing (or, all NULs, every other such text).

    >>> no_text("<p></p>&nbsp;\u200b"), no_text("\\x00" * 9), no_text("&lt;p&gt;"), no_text("！")
    (True, True, False, False)
    """
    if text[:1].isalnum() or not _MAYBE_NOTHING.fullmatch(text):
        return False  # (what the pattern may hold starts with no letter or digit)
    return all(c.isspace() or unicodedata.category(c) in ("Cf", "Cc") for c in normalize(text))


@quick_init
@dataclass(frozen=True, slots=True)
class Document:
    """One usable record: its id and text, what else it carries, and how it came in.

    ``line`` is the 1-based line it starts on (JSONL, CSV counting the header row), its
    1-based row (Parquet, Arrow) or None (a folder's file, a WARC record). ``raw`` is the line
    or CSV row exactly as read, without its line ending, for :class:`UniqueWriter` to write;
    it is None for a folder's files, table rows and WARC records.

    ``id`` is always a string (the engine compares strings); ``id_value`` is the id as the
    input holds it when that is not this string — an integer id stays an integer in the
    outputs. ``source`` names the file the record came from when a run reads several;
    ``origin`` tells the writer where to find the record again (not compared).

    >>> Document("a1", "北京今天晴").title is None
    True
    >>> Document("7", "北京", id_value=7).shown_id
    7
    """

    id: str
    text: str
    title: str | None = None
    timestamp: float | None = None  # seconds since the epoch, UTC
    line: int | None = None
    raw: str | None = None
    id_value: object = None
    source: str | None = None
    origin: object = field(default=None, compare=False, repr=False)

    @property
    def shown_id(self) -> object:
        """The id as the outputs write it: ``id_value`` when set, else ``id``."""
        return self.id if self.id_value is None else self.id_value

    def without_text(self, *, raw: bool = False) -> Document:
        """The same record with its text let go (and its raw line, when ``raw``): what a run
        keeps of a record it need not write again. ``dataclasses.replace`` without its cost
        (a run of millions of records calls it once each)."""
        return Document(
            self.id,
            "",
            self.title,
            self.timestamp,
            self.line,
            None if raw else self.raw,
            self.id_value,
            self.source,
            self.origin,
        )


@quick_init
@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record that cannot be used: where it is, its id if that could be read, and why.

    For a folder's files ``line`` is None and ``id`` is the file's path within the folder.
    ``file`` names the input file when a run reads several; ``id_value`` is the id as the
    input holds it when that is not the string ``id`` (an integer id stays an integer).

    >>> BadRecord(7, "x9", "'text' is empty").to_json()
    '{"line": 7, "id": "x9", "reason": "\\'text\\' is empty"}'
    >>> BadRecord(2, "5", "'text' is null", file="b.jsonl", id_value=5).to_json()
    '{"file": "b.jsonl", "line": 2, "id": 5, "reason": "\\'text\\' is null"}'
    """

    line: int | None
    id: str | None
    reason: str
    file: str | None = None
    id_value: object = None

    def to_json(self) -> str:
        """This record as one line of JSON (no newline), non-ASCII text kept as is."""
        shown = self.id if self.id_value is None else self.id_value
        obj: dict[str, object] = {} if self.file is None else {"file": self.file}
        obj.update(line=self.line, id=shown, reason=self.reason)
        return json_line(obj)


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


#: The field names records have unless told otherwise.
DEFAULT_FIELDS = Fields()


#: ``json.dumps(obj, ensure_ascii=False)``, without making an encoder for every line
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


def json_line(obj: object) -> str:
    """``obj`` as one line of JSON; escaped if it holds lone surrogates UTF-8 cannot carry."""
    return _utf8_or_escaped(_ENCODE(obj), obj)


def _utf8_or_escaped(line: str, obj: object) -> str:
    """``line`` (``obj`` encoded) when UTF-8 can carry it, else ``obj`` escaped to ASCII."""
    if line.isascii():
        return line
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(obj)
    return line


#: a string as JSON (C, non-ASCII kept): what the encoder writes for one
_STRING = json.encoder.encode_basestring
#: the start of each member ('"key": '), by the keys of json_object_line
_HEADS: dict[tuple[str, ...], list[str]] = {}


def json_object_line(keys: tuple[str, ...], values: Sequence[object]) -> str:
    """``json_line(dict(zip(keys, values)))``, the same characters, without the encoder's
    machinery for every line (a CLUSTERS line 5.8 -> 4.1 µs here): strings, None, integers
    and finite numbers are written here, anything else (booleans among them) by the
    encoder. For the many small lines of a run (one per record), with few tuples of ``keys``
    (each one's member heads are kept)."""
    heads = _HEADS.get(keys)
    if heads is None:
        heads = _HEADS[keys] = [f"{_STRING(k)}: " for k in keys]
    parts = []
    for head, value in zip(heads, values, strict=True):
        kind = type(value)
        if kind is str:
            parts.append(head + _STRING(value))  # type: ignore[arg-type]
        elif value is None:
            parts.append(head + "null")
        elif kind is int or (kind is float and math.isfinite(value)):  # type: ignore[arg-type]
            parts.append(head + repr(value))
        else:  # booleans, the rest
            parts.append(head + _ENCODE(value))
    line = "{" + ", ".join(parts) + "}"
    return line if line.isascii() else _utf8_or_escaped(line, dict(zip(keys, values, strict=True)))


#: the json module's own scanner (C), as ``json.loads`` sets it up
#: The scanner ``json.loads`` calls in the end: (the value at an index, where it ends).
SCAN_JSON = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def json_loads(line: str) -> object:
    """``json.loads(line)``: the same value, or the same error. A line that is one object
    from its first character to its last is read by the scanner ``json.loads`` calls in
    the end, without the checks and whitespace searches around it (2.6 -> 0.9 µs for a
    line of 50 characters); any other line, and any line the scanner fails on, by
    ``json.loads`` itself, for its answer and its error."""
    if line[:1] == "{":
        try:
            obj, end = SCAN_JSON(line, 0)
        except (ValueError, StopIteration, RecursionError):
            pass  # json.loads says why, below
        else:
            if end == len(line):
                return obj
    return json.loads(line)


def read_id(value: object, name: str) -> str:
    """A record's id as a string (numbers become their string); InputError if unusable."""
    if value is None:
        raise InputError(f"{name!r} is null")
    if isinstance(value, str):
        if not value:
            raise InputError(f"{name!r} is empty")
        return value
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        if (isinstance(value, Decimal) and not value.is_finite()) or (
            isinstance(value, float) and not math.isfinite(value)
        ):
            raise InputError(f"{name!r} must be a finite number, not {value}")
        return str(value)  # a decimal column's as Spark casts it: '7', '7.50'
    raise InputError(f"{name!r} must be a string or a number, not {json_type(value)}")


_SURROGATE = re.compile("[\ud800-\udfff]")
#: what a title may be besides a string (written as a string)
_NUMBERS = (int, float, Decimal)
_PART = 1 << 40  # first_line packs (input file, line) into one int: file * _PART + line


def field_value(record: Mapping[str, object], name: str) -> tuple[bool, object]:
    """Whether ``record`` has the field ``name`` and its value: a key of that name, or else a
    dotted path into nested objects (``content.text``: the ``text`` of the object
    ``content``), as jq, Spark and DuckDB name a nested field. A key that holds the dots
    itself wins."""
    if name in record:
        return True, record[name]
    if "." not in name:
        return False, None
    value: object = record
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


class RecordChecker:
    """The checks every record passes, whatever it was read from: the id, the text, the title
    and the timestamp, and (with ``repeated_ids``) that no earlier usable record had its id.

    A record without an id (the field missing, null or empty) is an error, unless the reader
    said how to name such records (:meth:`begin`): then it is named ``FILE:LINE`` (or
    ``FILE:ROW``) and counted in ``unnamed``.

    >>> checker = RecordChecker(Fields())
    >>> checker.from_json('{"id": 7, "text": "北京"}', 1).id
    '7'
    >>> checker.from_json('{"id": 7, "text": "again"}', 2).reason
    "repeated id '7', first on line 1"
    >>> checker.begin("crawl.jsonl", name_missing=True)
    >>> checker.from_json('{"text": "无名"}', 3).id
    'crawl.jsonl:3'
    """

    def __init__(self, fields: Fields, *, repeated_ids: bool = True) -> None:
        self.fields = fields
        self.repeated_ids = repeated_ids
        #: where each id given out so far was first seen: file * 2**40 + line
        self.first_line: dict[str, int] = {}
        #: records named FILE:LINE because they had no id
        self.unnamed = 0
        self._files: list[tuple[str, str]] = []  # (name, "line" or "row") of each file begun
        self._file = 0
        self._prefix: str | None = None  # FILE, when records without an id are named FILE:LINE
        self._source: str | None = None  # the file named on records, when the run reads several
        #: the fields named by a dotted path, read from nested objects where no key has the name
        self._dotted = [n for n in dict.fromkeys(astuple(fields)) if "." in n]

    def begin(
        self, name: str, *, unit: str = "line", name_missing: bool = False, tag: bool = False
    ) -> None:
        """Start checking the records of the file ``name`` (lines or rows, by ``unit``).

        ``name_missing`` names records without an id ``name:N``; ``tag`` puts ``name`` on
        every record (``Document.source``, ``BadRecord.file``), for runs of several files.
        """
        self._files.append((name, unit))
        self._file = len(self._files) - 1
        self._prefix = name if name_missing else None
        self._source = name if tag else None

    def from_json(self, line: str, n: int) -> Document | BadRecord:
        """One JSON line (without its line end) as a Document or a BadRecord."""
        try:
            obj = json_loads(line)
        except json.JSONDecodeError as e:
            return self.bad(n, None, f"malformed JSON: {e.msg} at column {e.colno}")
        except RecursionError:
            return self.bad(n, None, "malformed JSON: nested too deeply to read")
        except ValueError as e:  # e.g. an integer of more digits than Python will convert
            return self.bad(n, None, f"malformed JSON: {e}")
        if not isinstance(obj, dict):
            return self.bad(n, None, f"not a JSON object but {json_type(obj)}")
        return self.check(obj, n, line)

    def bad(
        self, n: int | None, doc_id: str | None, reason: str, id_value: object = None
    ) -> BadRecord:
        """A BadRecord of the current file (named on it when the run reads several)."""
        return BadRecord(n, doc_id, reason, file=self._source, id_value=id_value)

    def check(
        self,
        record: Mapping[str, object],
        n: int,
        raw: str | None,
        *,
        origin: object = None,
    ) -> Document | BadRecord:
        """The record as a Document, or a BadRecord naming every problem found in it."""
        f = self.fields
        problems: list[str] = []
        if self._dotted:
            record = self._resolved(record)

        doc_id: str | None = None
        id_value: object = None
        value = record.get(f.id)
        if value is None or value == "":
            if self._prefix is not None:
                doc_id = f"{self._prefix}:{n}"
                self.unnamed += 1
            elif f.id not in record:
                problems.append(f"missing {f.id!r}")
            else:
                problems.append(f"{f.id!r} is {'null' if value is None else 'empty'}")
        else:
            try:
                doc_id = read_id(value, f.id)
            except InputError as e:
                problems.append(str(e))
            else:
                if not isinstance(value, str | Decimal):  # (a decimal's id is its string)
                    id_value = value
                elif not doc_id.isascii() and _SURROGATE.search(doc_id):
                    # a lone surrogate (JSON can escape one): the engine and the stores get
                    # the id with U+FFFD for it; the outputs write the id as it came in
                    id_value, doc_id = doc_id, _SURROGATE.sub("\ufffd", doc_id)

        text = record.get(f.text)
        if not isinstance(text, str):
            text = joined_text(text)
        if f.text not in record:
            problems.append(f"missing {f.text!r}")
        elif text is None:
            problems.append(f"{f.text!r} is null")
        elif not isinstance(text, str):
            problems.append(text_problem(f.text, text))
        elif not text.strip():
            problems.append(f"{f.text!r} is {'empty' if not text else 'only whitespace'}")
        elif no_text(text):
            problems.append(f"{f.text!r} {NO_TEXT}")

        title: str | None = None
        value = record.get(f.title)
        if value is None:
            pass
        elif isinstance(value, str):
            title = value or None
        elif isinstance(value, _NUMBERS) and not isinstance(value, bool):
            title = str(value)
        else:
            problems.append(f"{f.title!r} must be a string, not {json_type(value)}")

        timestamp: float | None = None
        value = record.get(f.timestamp)
        if value is not None and not (isinstance(value, str) and not value.strip()):
            try:
                timestamp = parse_timestamp(value)
            except InputError as e:
                problems.append(f"bad {f.timestamp!r}: {e}")

        if self.repeated_ids and doc_id is not None:
            # one look in the table: the id is taken here, and given back if the record is bad
            at = self._file * _PART + n
            if self.first_line.setdefault(doc_id, at) != at:
                problems.append(f"repeated id {shown(doc_id)}, first {self._where(doc_id)}")
            elif problems:
                del self.first_line[doc_id]
        if problems:
            return self.bad(n, doc_id, "; ".join(problems), id_value)
        assert doc_id is not None and isinstance(text, str)
        return Document(doc_id, text, title, timestamp, n, raw, id_value, self._source, origin)

    def _resolved(self, record: Mapping[str, object]) -> Mapping[str, object]:
        """``record`` with each field a dotted path names (:func:`field_value`) as a key."""
        found = {}
        for name in self._dotted:
            if name not in record:
                present, value = field_value(record, name)
                if present:
                    found[name] = value
        return {**record, **found} if found else record

    def _where(self, doc_id: str) -> str:
        """Where ``doc_id`` was first seen: 'on line 3', or 'on row 3 of a.parquet'."""
        file, n = divmod(self.first_line[doc_id], _PART)
        if not self._files:
            return f"on line {n}"
        name, unit = self._files[file]
        if n == 0:
            return f"as the file {name}"
        return f"on {unit} {n}" + ("" if file == self._file else f" of {name}")

    def claim(self, doc_id: str) -> str | None:
        """Take ``doc_id`` for a record that has no line (a folder's file): None, or the reason
        it cannot have it (an earlier record has it)."""
        if not self.repeated_ids:
            return None
        if doc_id in self.first_line:
            return f"repeated id {shown(doc_id)}, first {self._where(doc_id)}"
        self.first_line[doc_id] = self._file * _PART
        return None
