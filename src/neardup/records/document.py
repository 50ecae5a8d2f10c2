"""The records a run reads: usable :class:`Document` s and unusable :class:`BadRecord` s, the
:class:`Fields` that name their parts, and the checks every record passes
(:class:`RecordChecker`), whatever it was read from."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import InputError
from ..messages import json_type, shown
from ..times import parse_timestamp

__all__ = [
    "DEFAULT_FIELDS",
    "BadRecord",
    "Document",
    "Fields",
    "RecordChecker",
    "json_line",
    "read_id",
]


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


#: The field names records have unless told otherwise.
DEFAULT_FIELDS = Fields()


def json_line(obj: object) -> str:
    """``obj`` as one line of JSON; escaped if it holds lone surrogates UTF-8 cannot carry."""
    line = json.dumps(obj, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(obj)
    return line


def read_id(value: object, name: str) -> str:
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
    raise InputError(f"{name!r} must be a string or a number, not {json_type(value)}")


class RecordChecker:
    """The checks every record passes, whatever it was read from: the id, the text, the title
    and the timestamp, and (with ``repeated_ids``) that no earlier usable record had its id.

    >>> checker = RecordChecker(Fields())
    >>> checker.from_json('{"id": 7, "text": "北京"}', 1).id
    '7'
    >>> checker.from_json('{"id": 7, "text": "again"}', 2).reason
    "repeated id '7', first on line 1"
    """

    def __init__(self, fields: Fields, *, repeated_ids: bool = True) -> None:
        self.fields = fields
        self.repeated_ids = repeated_ids
        #: the line each id given out so far was first seen on
        self.first_line: dict[str, int] = {}

    def from_json(self, line: str, n: int) -> Document | BadRecord:
        """One JSON line (without its line end) as a Document or a BadRecord."""
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            return BadRecord(n, None, f"malformed JSON: {e.msg} at column {e.colno}")
        except RecursionError:
            return BadRecord(n, None, "malformed JSON: nested too deeply to read")
        except ValueError as e:  # e.g. an integer of more digits than Python will convert
            return BadRecord(n, None, f"malformed JSON: {e}")
        if not isinstance(obj, dict):
            return BadRecord(n, None, f"not a JSON object but {json_type(obj)}")
        return self.check(obj, n, line)

    def check(self, record: Mapping[str, object], n: int, raw: str) -> Document | BadRecord:
        """The record as a Document, or a BadRecord naming every problem found in it."""
        f = self.fields
        problems: list[str] = []

        doc_id: str | None = None
        if f.id not in record:
            problems.append(f"missing {f.id!r}")
        else:
            try:
                doc_id = read_id(record[f.id], f.id)
            except InputError as e:
                problems.append(str(e))

        text = record.get(f.text)
        if f.text not in record:
            problems.append(f"missing {f.text!r}")
        elif text is None:
            problems.append(f"{f.text!r} is null")
        elif not isinstance(text, str):
            problems.append(f"{f.text!r} must be a string, not {json_type(text)}")
        elif not text.strip():
            problems.append(f"{f.text!r} is {'empty' if not text else 'only whitespace'}")

        title: str | None = None
        value = record.get(f.title)
        if isinstance(value, str):
            title = value or None
        elif isinstance(value, int | float) and not isinstance(value, bool):
            title = str(value)
        elif value is not None:
            problems.append(f"{f.title!r} must be a string, not {json_type(value)}")

        timestamp: float | None = None
        value = record.get(f.timestamp)
        if value is not None and not (isinstance(value, str) and not value.strip()):
            try:
                timestamp = parse_timestamp(value)
            except InputError as e:
                problems.append(f"bad {f.timestamp!r}: {e}")

        if self.repeated_ids and doc_id is not None and doc_id in self.first_line:
            problems.append(f"repeated id {shown(doc_id)}, first on line {self.first_line[doc_id]}")
        if problems:
            return BadRecord(n, doc_id, "; ".join(problems))
        assert doc_id is not None and isinstance(text, str)
        if self.repeated_ids:
            self.first_line[doc_id] = n
        return Document(doc_id, text, title, timestamp=timestamp, line=n, raw=raw)
