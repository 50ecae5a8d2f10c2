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
{"line": 3, "id": 1, "reason": "repeated id '1', first on line 1"}
{"line": 4, "id": null, "reason": "not a JSON object but an array"}
"""

from __future__ import annotations

from ..times import parse_timestamp
from .document import (
    NO_TEXT,
    BadRecord,
    Document,
    Fields,
    RecordChecker,
    field_value,
    joined_text,
    json_line,
    json_object_line,
    no_text,
    read_id,
    text_problem,
)
from .readers import (
    FOLDER_SUFFIXES,
    FORMATS,
    Format,
    RecordReader,
    decode_file,
    detect_format,
    read_records,
)
from .sources import Part, resolve
from .streams import DEFAULT_MAX_RECORD, format_size, parse_size
from .writers import LineWriter, UniqueWriter, csv_line

__all__ = [
    "DEFAULT_MAX_RECORD",
    "FOLDER_SUFFIXES",
    "FORMATS",
    "NO_TEXT",
    "BadRecord",
    "Document",
    "Fields",
    "Format",
    "LineWriter",
    "Part",
    "RecordChecker",
    "RecordReader",
    "UniqueWriter",
    "csv_line",
    "decode_file",
    "detect_format",
    "field_value",
    "format_size",
    "joined_text",
    "json_line",
    "json_object_line",
    "no_text",
    "parse_size",
    "parse_timestamp",
    "read_id",
    "read_records",
    "resolve",
    "text_problem",
]
