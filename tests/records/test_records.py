"""Tests of neardup.records: reading dedup input, reporting bad records, writing the kept ones."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError, InputError, NeardupError, OutputError
from neardup.records import (
    BadRecord,
    Document,
    Fields,
    UniqueWriter,
    detect_format,
    json_line,
    json_object_line,
    no_text,
    parse_timestamp,
    read_records,
)

JAN5 = 1704412800.0  # 2024-01-05T00:00:00Z

TEXTS = [
    "北京今天天气晴朗，适合出游。",
    "The quick brown fox jumps over the lazy dog.",
    "iPhone 15 发布会于 2024 年 9 月举行，Apple 宣布了新功能。",
]


def write(path: Path, data: bytes | str) -> str:
    """Write ``data`` (str as UTF-8) to ``path`` and give the path as a string."""
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return str(path)


def jsonl(*records: object) -> str:
    """JSONL text of ``records``, one a line."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def read(source: str, **kwargs: object) -> list[Document | BadRecord]:
    """Every record of ``source``."""
    with read_records(source, **kwargs) as records:  # type: ignore[arg-type]
        return list(records)


def read_jsonl_bytes(tmp_path: Path, data: bytes) -> list[Document | BadRecord]:
    """Every record of JSONL ``data``, read from a file."""
    return read(write(tmp_path / "in.jsonl", data))


def fake_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """Make standard input give ``data``, byte for byte."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def fake_stdout(monkeypatch: pytest.MonkeyPatch, encoding: str = "utf-8") -> io.BytesIO:
    """Make standard output collect bytes, and give the collecting buffer."""
    buffer = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(buffer, encoding=encoding))
    return buffer


def only_bad(records: list[Document | BadRecord]) -> list[BadRecord]:
    return [r for r in records if isinstance(r, BadRecord)]


def only_docs(records: list[Document | BadRecord]) -> list[Document]:
    return [r for r in records if isinstance(r, Document)]


# -- detect_format -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("-", "jsonl"),
        ("crawl.jsonl", "jsonl"),
        ("crawl.jsonl.gz", "jsonl"),
        ("crawl.json.gz", "jsonl"),
        ("crawl.txt", "jsonl"),
        ("crawl.csv", "csv"),
        ("CRAWL.CSV", "csv"),
        ("crawl.csv.gz", "csv"),
        ("新闻.csv", "csv"),
    ],
)
def test_detect_format_by_name(source: str, expected: str) -> None:
    """The format follows the name: '-' and unknown suffixes are JSONL, .csv(.gz) is CSV."""
    assert detect_format(source) == expected


def test_detect_format_folder(tmp_path: Path) -> None:
    """A folder is 'dir', even one whose name ends in .csv."""
    (tmp_path / "pages.csv").mkdir()
    assert detect_format(str(tmp_path)) == "dir"
    assert detect_format(str(tmp_path / "pages.csv")) == "dir"


# -- parse_timestamp -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1704412800, JAN5),
        (1704412800.5, JAN5 + 0.5),
        (1704412800000, JAN5),
        (1704412800500, JAN5 + 0.5),
        (0, 0.0),
        (-86400, -86400.0),
        ("1704412800", JAN5),
        ("1704412800000", JAN5),
        (" 1704412800.25 ", JAN5 + 0.25),
        ("2024-01-05", JAN5),
        ("20240105", JAN5),
        ("2024-01-05T00:00:00Z", JAN5),
        ("2024-01-05T00:00:00", JAN5),
        ("2024-01-05 08:00:00+08:00", JAN5),
        ("2024-01-04T19:00:00-05:00", JAN5),
        ("2024-01-05T00:00:00.250Z", JAN5 + 0.25),
        ("Fri, 05 Jan 2024 00:00:00 GMT", JAN5),
        ("Fri, 05 Jan 2024 08:00:00 +0800", JAN5),
        (Decimal("1704412800"), JAN5),  # a Parquet decimal column
        (np.int64(1704412800), JAN5),  # numpy scalars: an array's, a DataFrame's values
        (np.float32(1704412800), JAN5),
        (np.datetime64("2024-01-05T00:00:00.250"), JAN5 + 0.25),
        (np.datetime64("2024-01-05", "ns"), JAN5),
    ],
)
def test_parse_timestamp_reads(value: object, expected: float) -> None:
    """Epoch seconds and milliseconds, ISO 8601, compact and HTTP dates all read as UTC
    seconds; so do decimals and numpy's numbers and datetime64 (refused before)."""
    assert parse_timestamp(value) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("yesterday", "cannot read 'yesterday' as a time"),
        ("昨天下午", "cannot read '昨天下午' as a time"),
        ("2024-13-01", "cannot read '2024-13-01'"),
        ("2024-02-30T10:00:00Z", "cannot read"),
        ("20241301", "not a valid compact date"),
        ("1_000", "cannot read"),
        ("x" * 500, "…"),
        ("1e400", "between the years 1 and 9999"),
        (float("nan"), "between the years 1 and 9999"),
        (float("inf"), "between the years 1 and 9999"),
        (10**400, "between the years 1 and 9999"),
        (True, "not a boolean"),
        (None, "not null"),
        ([2024], "not an array"),
        ({"year": 2024}, "not an object"),
    ],
)
def test_parse_timestamp_refuses(value: object, message: str) -> None:
    """What is not a time raises InputError saying what was given and what would do."""
    with pytest.raises(InputError, match=message.replace("(", r"\(")) as info:
        parse_timestamp(value)
    assert len(str(info.value)) < 300


# -- JSONL: good records -------------------------------------------------------------------


@pytest.mark.parametrize("text", TEXTS)
def test_jsonl_document_fields(tmp_path: Path, text: str) -> None:
    """A JSONL object gives a Document with its id, text, title, timestamp, line and raw line."""
    line = json.dumps(
        {"id": "u1", "text": text, "title": "标题 Title", "timestamp": "2024-01-05", "x": 1},
        ensure_ascii=False,
    )
    (doc,) = read_jsonl_bytes(tmp_path, (line + "\n").encode())
    assert doc == Document("u1", text, "标题 Title", JAN5, line=1, raw=line)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (42, "42"),
        (-3, "-3"),
        (1.5, "1.5"),
        (10**30, str(10**30)),
        ("42", "42"),
        ("新闻-7", "新闻-7"),
    ],
)
def test_jsonl_number_id_becomes_string(tmp_path: Path, value: object, expected: str) -> None:
    """A number id becomes its string; a string id is kept as is."""
    (doc,) = read_jsonl_bytes(tmp_path, jsonl({"id": value, "text": "正文"}).encode())
    assert isinstance(doc, Document)
    assert doc.id == expected


@pytest.mark.parametrize(
    ("extra", "title", "timestamp"),
    [
        ({}, None, None),
        ({"title": None, "timestamp": None}, None, None),
        ({"title": "", "timestamp": ""}, None, None),
        ({"title": 2024, "timestamp": 1704412800}, "2024", JAN5),
        ({"title": "新闻", "timestamp": "2024-01-05T00:00:00Z"}, "新闻", JAN5),
    ],
)
def test_jsonl_optional_fields(
    tmp_path: Path, extra: dict[str, object], title: str | None, timestamp: float | None
) -> None:
    """Title and timestamp may be absent, null or empty; a number title becomes its string."""
    (doc,) = read_jsonl_bytes(tmp_path, jsonl({"id": "a", "text": "t", **extra}).encode())
    assert isinstance(doc, Document)
    assert (doc.title, doc.timestamp) == (title, timestamp)


def test_jsonl_custom_field_names(tmp_path: Path) -> None:
    """Fields names the fields that hold the id, text, title and timestamp."""
    fields = Fields(id="url", text="body", title="headline", timestamp="fetched")
    data = jsonl({"url": "https://a.cn/1", "body": "正文", "headline": "H", "fetched": 1704412800})
    (doc,) = read(write(tmp_path / "in.jsonl", data), fields=fields)
    assert isinstance(doc, Document)
    assert (doc.id, doc.text, doc.title, doc.timestamp) == ("https://a.cn/1", "正文", "H", JAN5)


def test_jsonl_dotted_field_names_read_nested_objects(tmp_path: Path) -> None:
    """A dotted name reads a nested object's field (an Elasticsearch dump's _source.body),
    as jq and Spark name it; a key that holds the dots itself wins; a path that leads nowhere
    is missing, named as given."""
    fields = Fields(id="_source.url", text="_source.body", title="meta.t", timestamp="a.b.c")
    lines = [
        {
            "_source": {"url": "u1", "body": "正文"},
            "meta": {"t": "H"},
            "a": {"b": {"c": 1704412800}},
        },
        {"_source": {"url": "u2", "body": "外层不读"}, "_source.body": "键本身", "meta": "平的"},
        {"_source": {"url": "u3", "text": "没有 body"}},
    ]
    data = "".join(jsonl(line) for line in lines)
    one, two, three = read(write(tmp_path / "in.jsonl", data), fields=fields)
    assert isinstance(one, Document) and isinstance(two, Document)
    assert (one.id, one.text, one.title, one.timestamp) == ("u1", "正文", "H", JAN5)
    assert (two.id, two.text, two.title, two.timestamp) == ("u2", "键本身", None, None)
    assert isinstance(three, BadRecord) and three.reason == "missing '_source.body'"
    assert three.id == "u3"


def test_jsonl_blank_lines_are_skipped_but_counted(tmp_path: Path) -> None:
    """Blank and whitespace-only lines are not records, but line numbers still count them."""
    data = b'\n  \n{"id": 1, "text": "a"}\r\n\t\r\n\n{"id": 2, "text": "b"}\n\n'
    records = read_jsonl_bytes(tmp_path, data)
    assert [(r.id, r.line) for r in records] == [("1", 3), ("2", 6)]


def test_jsonl_raw_is_the_line_exactly(tmp_path: Path) -> None:
    """raw keeps spacing, key order and escapes of the line, without its line ending."""
    lines = [
        '{ "text" : "\\u5317\\u4eac",   "id":"z" }',
        '{"id": "y", "text": "北京\\n上海", "extra": [1, 2.50, null]}',
    ]
    data = (lines[0] + "\r\n" + lines[1]).encode()  # CRLF, and no newline at the end
    records = read_jsonl_bytes(tmp_path, data)
    assert [r.raw for r in only_docs(records)] == lines
    assert records[0].text == "北京"  # type: ignore[union-attr]


def test_jsonl_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    """A UTF-8 byte order mark before the first line does not spoil it."""
    records = read_jsonl_bytes(tmp_path, b"\xef\xbb\xbf" + jsonl({"id": 1, "text": "中"}).encode())
    assert isinstance(records[0], Document)
    assert records[0].raw == '{"id": 1, "text": "中"}'


def test_jsonl_lone_surrogate_is_kept(tmp_path: Path) -> None:
    """A lone surrogate escape is not an error: the text keeps it for normalization to replace."""
    line = '{"id": "s1", "text": "前\\ud800后 A\\udfffB"}'
    (doc,) = read_jsonl_bytes(tmp_path, (line + "\n").encode())
    assert isinstance(doc, Document)
    assert doc.text == "前\ud800后 A\udfffB"
    assert doc.raw == line


def test_jsonl_ten_megabyte_text(tmp_path: Path) -> None:
    """A 10 MB text is read whole."""
    text = "北京abc " * (10_000_000 // 7)
    (doc,) = read_jsonl_bytes(tmp_path, jsonl({"id": "big", "text": text}).encode())
    assert isinstance(doc, Document)
    assert doc.text == text


def test_jsonl_line_separators_inside_text_are_not_line_breaks(tmp_path: Path) -> None:
    """U+2028, U+2029, U+0085 and a lone CR inside a line do not split it."""
    text = "一\u2028二\u2029三\x85四\r五"
    line = json.dumps({"id": "u", "text": text}, ensure_ascii=False)
    (doc,) = read_jsonl_bytes(tmp_path, (line + "\n").encode())
    assert isinstance(doc, Document)
    assert doc.text == text


# -- JSONL: bad records --------------------------------------------------------------------

BAD_JSONL = [
    # (line, reason contains, id)
    ('{"id": 1, "text": ', "malformed JSON: Expecting value at column 19", None),
    ('{"id": 1 "text": "北京"}', "malformed JSON: Expecting ',' delimiter", None),
    ("{'id': 1, 'text': 'x'}", "malformed JSON", None),
    ("not json at all 不是", "malformed JSON", None),
    ("[" * 100_000 + "]" * 100_000, "malformed JSON: nested too deeply", None),
    ('{"id": ' + "1" * 5000 + ', "text": "x"}', "malformed JSON", None),
    ('["id", "text"]', "not a JSON object but an array", None),
    ('"北京今天晴"', "not a JSON object but a string", None),
    ("42", "not a JSON object but a number", None),
    ("null", "not a JSON object but null", None),
    ("true", "not a JSON object but a boolean", None),
    ('{"id": "a"}', "missing 'text'", "a"),
    ('{"id": "a", "text": null}', "'text' is null", "a"),
    ('{"id": "a", "text": 5}', "'text' must be a string, not a number", "a"),
    ('{"id": "a", "text": [["北京"]]}', "'text' must be a string or an array of strings", "a"),
    ('{"id": "a", "text": {"body": "北京"}}', "'text' must be a string, not an object", "a"),
    ('{"id": "a", "text": {"zh": "北京"}}', "'text' must be a string, not an object", "a"),
    ('{"id": "a", "text": false}', "'text' must be a string, not a boolean", "a"),
    ('{"id": "a", "text": ""}', "'text' is empty", "a"),
    ('{"id": "a", "text": " \\t\\n\\r\\u3000 "}', "'text' is only whitespace", "a"),
    ('{"id": true, "text": "北京"}', "'id' must be a string or a number, not a boolean", None),
    ('{"id": [1], "text": "北京"}', "'id' must be a string or a number, not an array", None),
    ('{"id": {"k": 1}, "text": "x"}', "'id' must be a string or a number, not an object", None),
    ('{"id": 1e400, "text": "x"}', "'id' must be a finite number", None),
    ('{"id": "a", "text": "x", "title": ["t"]}', "'title' must be a string, not an array", "a"),
    ('{"id": "a", "text": "x", "timestamp": "昨天"}', "bad 'timestamp': cannot read '昨天'", "a"),
    ('{"id": "a", "text": "x", "timestamp": "2024-13-01"}', "bad 'timestamp'", "a"),
    ('{"id": "a", "text": "x", "timestamp": [1]}', "bad 'timestamp': a timestamp must be", "a"),
    ('{"id": "a", "text": "x", "timestamp": true}', "not a boolean", "a"),
    ('{"id": "a", "text": "x", "timestamp": 1e300}', "between the years 1 and 9999", "a"),
    ('{"text": ""}', "'text' is empty", "{path}:2"),
]


@pytest.mark.parametrize(("line", "reason", "doc_id"), BAD_JSONL)
def test_jsonl_bad_record_and_the_run_goes_on(
    tmp_path: Path, line: str, reason: str, doc_id: str | None
) -> None:
    """Each kind of bad line is one BadRecord naming its line, id and problem; the rest is read."""
    data = (
        jsonl({"id": "before", "text": "前"}) + line + "\n" + jsonl({"id": "after", "text": "后"})
    )
    records = read_jsonl_bytes(tmp_path, data.encode())
    assert [r.id for r in only_docs(records)] == ["before", "after"]
    (bad,) = only_bad(records)
    assert bad.line == 2
    assert bad.id == (doc_id and doc_id.format(path=tmp_path / "in.jsonl"))
    assert reason in bad.reason
    assert len(bad.reason) < 400


@pytest.mark.parametrize(
    "line", ['{"text": "北京"}', '{"id": null, "text": "北京"}', '{"id": "", "text": "北京"}']
)
def test_jsonl_record_without_an_id_is_named_file_and_line(tmp_path: Path, line: str) -> None:
    """A record whose id is missing, null or empty is named FILE:LINE, and counted."""
    path = write(tmp_path / "in.jsonl", jsonl({"id": "a", "text": "前"}) + "\n" + line + "\n")
    with read_records(path) as records:
        found = list(records)
        assert records.unnamed == 1
    assert [r.id for r in found] == ["a", f"{path}:3"]
    assert isinstance(found[1], Document) and found[1].line == 3
    assert records.notes == ["1 record had no 'id'; it is named FILE:LINE"]


def test_jsonl_named_id_can_repeat_a_real_one(tmp_path: Path) -> None:
    """A record named FILE:LINE whose name another record already has is a repeated id."""
    path = str(tmp_path / "in.jsonl")
    write(tmp_path / "in.jsonl", jsonl({"id": f"{path}:2", "text": "a"}, {"text": "b"}))
    found = read(path)
    assert isinstance(found[1], BadRecord) and "repeated id" in found[1].reason


@pytest.mark.parametrize(
    ("data", "doc_id", "where"),
    [
        (b'{"id": "x1", "text": "\xff\xfe bad"}', "x1", "byte 0xFF at byte 23"),
        (b'{"id": 7, "text": "' + "北京".encode()[:-1] + b'"}', "7", "byte 0xE4 at byte 23"),
        (b'{"id": "\xc3", "text": "t"}', None, "byte 0xC3 at byte 9"),
        (b"\xc0\xaf garbage", None, "byte 0xC0 at byte 1"),
        (b'{"text": "abc\xed\xa0\x80"}', None, "byte 0xED"),  # an encoded surrogate
    ],
)
def test_jsonl_invalid_utf8(tmp_path: Path, data: bytes, doc_id: str | None, where: str) -> None:
    """A line that is not valid UTF-8 is a BadRecord with the offending byte, its id if readable."""
    good = jsonl({"id": "ok", "text": "好"}).encode()
    records = read_jsonl_bytes(tmp_path, good + data + b"\n" + good.replace(b"ok", b"ok2"))
    assert [r.id for r in only_docs(records)] == ["ok", "ok2"]
    (bad,) = only_bad(records)
    assert (bad.line, bad.id) == (2, doc_id)
    assert bad.reason.startswith("not valid UTF-8")
    assert where in bad.reason


def test_jsonl_repeated_id(tmp_path: Path) -> None:
    """The second and later uses of an id are errors naming the line of the first."""
    data = jsonl(
        {"id": "n1", "text": "第一"},
        {"id": "n2", "text": "second"},
        {"id": "n1", "text": "第一 again"},
        {"id": "n1", "text": "and again"},
    )
    records = read_jsonl_bytes(tmp_path, data.encode())
    assert [r.id for r in only_docs(records)] == ["n1", "n2"]
    bad = only_bad(records)
    assert [(b.line, b.id) for b in bad] == [(3, "n1"), (4, "n1")]
    assert all(b.reason == "repeated id 'n1', first on line 1" for b in bad)


def test_jsonl_number_and_string_id_are_the_same_id(tmp_path: Path) -> None:
    """Id 7 and id "7" are one id, so the second is a repeat."""
    records = read_jsonl_bytes(
        tmp_path, jsonl({"id": 7, "text": "a"}, {"id": "7", "text": "b"}).encode()
    )
    assert isinstance(records[1], BadRecord)
    assert "repeated id '7'" in records[1].reason


def test_jsonl_id_of_a_bad_record_can_be_used_later(tmp_path: Path) -> None:
    """An id first seen on a bad record is not taken: a later good record with it is kept."""
    records = read_jsonl_bytes(
        tmp_path, jsonl({"id": "r", "text": ""}, {"id": "r", "text": "fixed 修正"}).encode()
    )
    assert isinstance(records[0], BadRecord)
    assert isinstance(records[1], Document)


def test_jsonl_repeated_id_and_another_problem(tmp_path: Path) -> None:
    """A repeat that is also bad otherwise names both problems."""
    records = read_jsonl_bytes(
        tmp_path, jsonl({"id": "r", "text": "ok"}, {"id": "r", "text": None}).encode()
    )
    assert isinstance(records[1], BadRecord)
    assert records[1].reason == "'text' is null; repeated id 'r', first on line 1"


def test_jsonl_messages_use_custom_field_names(tmp_path: Path) -> None:
    """Reasons name the fields as the input calls them."""
    data = jsonl({"url": "u", "body": ""}, {"url": "v"})
    records = read(write(tmp_path / "in.jsonl", data), fields=Fields(id="url", text="body"))
    assert [r.reason for r in only_bad(records)] == ["'body' is empty", "missing 'body'"]


def test_jsonl_long_id_is_cut_short_in_messages(tmp_path: Path) -> None:
    """A huge id does not flood the reason."""
    big = "长" * 10_000
    records = read_jsonl_bytes(
        tmp_path, jsonl({"id": big, "text": "a"}, {"id": big, "text": "b"}).encode()
    )
    assert isinstance(records[1], BadRecord)
    assert records[1].id == big
    assert len(records[1].reason) < 200


# -- the invariant: one record per non-blank line ------------------------------------------

_good_line = st.builds(
    lambda i, t: json.dumps({"id": i, "text": t}, ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    ),
    st.integers(0, 20),
    st.sampled_from([*TEXTS, "", " ", "a\ud800"]),
)
_any_json_line = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["id", "text", "timestamp", "title"]), inner, max_size=4)
    ),
    max_leaves=8,
).map(lambda v: json.dumps(v).encode())
_garbage_line = st.binary(max_size=40).filter(lambda b: b"\n" not in b)
_blank_line = st.sampled_from([b"", b" ", b"\t", b"\r", b" \r", b"\x0b\x0c"])


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_good_line | _any_json_line | _garbage_line | _blank_line, max_size=30))
def test_every_non_blank_line_gives_one_record(tmp_path: Path, lines: list[bytes]) -> None:
    """Whatever the lines, each non-blank one gives exactly one Document or BadRecord, in order."""
    lines = [b'{"id": "first", "text": "start"}', *lines]
    data = b"\n".join(lines) + b"\n"
    records = read_jsonl_bytes(tmp_path, data)
    expected = [n for n, line in enumerate(lines, 1) if line.strip(b" \t\r\n\x0b\x0c")]
    assert [r.line for r in records] == expected
    ids = [r.id for r in only_docs(records)]
    assert len(ids) == len(set(ids))
    for r in only_docs(records):
        assert r.text.strip() and r.raw is not None
        assert r.raw.encode("utf-8", "surrogatepass") == lines[r.line - 1].rstrip(b"\r")  # type: ignore[operator]


# -- standard input and gzip ---------------------------------------------------------------


def test_stdin_jsonl_with_invalid_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """'-' reads standard input as bytes, so an invalid line is one BadRecord, not a crash."""
    data = (
        jsonl({"id": 1, "text": "北京"}).encode()
        + b'{"id": 2, "text": "\x80"}\n\n'
        + jsonl({"id": 3, "text": "end"}).encode()
    )
    fake_stdin(monkeypatch, data)
    records = read("-")
    assert [(type(r).__name__, r.id, r.line) for r in records] == [
        ("Document", "1", 1),
        ("BadRecord", "2", 2),
        ("Document", "3", 4),
    ]


def test_stdin_is_not_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading standard input to the end leaves it open."""
    fake_stdin(monkeypatch, jsonl({"id": 1, "text": "x"}).encode())
    read("-")
    assert not sys.stdin.closed


def test_stdin_text_only_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """A standard input without a byte buffer (StringIO) is still read."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(jsonl({"id": 1, "text": "北京"})))
    (doc,) = read("-")
    assert isinstance(doc, Document)
    assert doc.text == "北京"


def test_stdin_csv(monkeypatch: pytest.MonkeyPatch) -> None:
    """'-' with fmt='csv' reads CSV from standard input."""
    fake_stdin(monkeypatch, "id,text\n1,北京\n2,\xff\n".encode().replace(b"\xc3\xbf", b"\xff"))
    records = read("-", fmt="csv")
    assert [type(r).__name__ for r in records] == ["Document", "BadRecord"]


def test_stdin_gzip(monkeypatch: pytest.MonkeyPatch) -> None:
    """gzip on standard input is found by its magic bytes and un-gzipped."""
    fake_stdin(monkeypatch, gzip.compress(jsonl({"id": 1, "text": "北京"}).encode()))
    (doc,) = read("-")
    assert isinstance(doc, Document)
    assert doc.text == "北京"


@pytest.mark.parametrize("name", ["in.jsonl.gz", "in.json.gz", "in.jsonl"])
def test_gzip_jsonl_file(tmp_path: Path, name: str) -> None:
    """Gzip input is un-gzipped, found by content whatever the name; errors are still per line."""
    data = (
        jsonl({"id": 1, "text": "北京"}).encode()
        + b"[]\n\n"
        + jsonl({"id": 2, "text": "b"}).encode()
    )
    records = read(write(tmp_path / name, gzip.compress(data)))
    assert [(type(r).__name__, r.line) for r in records] == [
        ("Document", 1),
        ("BadRecord", 2),
        ("Document", 4),
    ]


def test_gzip_csv_file(tmp_path: Path) -> None:
    """A .csv.gz file is gzip-compressed CSV."""
    path = write(tmp_path / "in.csv.gz", gzip.compress("id,text\n1,上海\n".encode()))
    with read_records(path) as records:
        assert records.format == "csv"
        assert records.csv_header == ["id", "text"]
        assert [r.text for r in only_docs(list(records))] == ["上海"]


def test_truncated_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    """A gzip file cut short gives what it held, then one BadRecord saying where it broke off."""
    data = "".join(jsonl({"id": i, "text": f"第{i}条 record {i}"}) for i in range(2000)).encode()
    packed = gzip.compress(data)
    records = read(write(tmp_path / "in.jsonl.gz", packed[: len(packed) // 2]))
    *docs, last = records
    assert docs and all(isinstance(d, Document) for d in docs[:-1])
    assert isinstance(last, BadRecord)
    assert "breaks off after line" in last.reason
    assert last.line is not None and last.line >= len(docs)


def test_truncated_gzip_loses_no_line_it_could_read(tmp_path: Path) -> None:
    """Read through a buffer of many pieces (several MB, random text that compresses
    little), a gzip file cut short gives every line ``gzip`` itself reads before the break,
    however far into a piece it breaks."""
    import random

    rng = random.Random(5)
    rows = [
        jsonl({"id": i, "text": "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(300))})
        for i in range(8000)
    ]
    packed = gzip.compress("".join(rows).encode())
    for cut in (len(packed) // 3, len(packed) - 5000, len(packed) - 9):
        whole: list[bytes] = []
        with gzip.GzipFile(fileobj=io.BytesIO(packed[:cut])) as f, pytest.raises(EOFError):
            for line in f:
                whole.append(line)
        complete = sum(1 for line in whole if line.endswith(b"\n"))
        *docs, last = read(write(tmp_path / f"in{cut}.jsonl.gz", packed[:cut]))
        assert isinstance(last, BadRecord) and "breaks off after line" in last.reason
        good = [d for d in docs if isinstance(d, Document)]
        assert len(good) >= complete
        assert [d.id for d in good[:complete]] == [str(i) for i in range(complete)]


# -- CSV -----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", TEXTS)
def test_csv_document_and_header(tmp_path: Path, text: str) -> None:
    """A CSV row gives a Document; the header is on .csv_header before the first record."""
    data = f'id,title,text,timestamp,lang\nr1,标题,"{text}",2024-01-05,zh\n'
    with read_records(write(tmp_path / "in.csv", data)) as records:
        assert records.csv_header == ["id", "title", "text", "timestamp", "lang"]
        (doc,) = list(records)
    assert doc == Document("r1", text, "标题", JAN5, line=2, raw=f'r1,标题,"{text}",2024-01-05,zh')


def test_csv_multiline_field_raw_and_lines(tmp_path: Path) -> None:
    """A quoted field may span lines: raw is the row as written, and line is where it starts."""
    row = 'a1,"第一行\r\n""second"" line, with comma\r\n"'
    data = "id,text\r\n" + row + "\r\n\r\nb2,plain\r\n"
    records = read(write(tmp_path / "in.csv", data))
    assert [(r.id, r.line) for r in records] == [("a1", 2), ("b2", 6)]
    assert records[0].raw == row  # type: ignore[union-attr]
    assert records[0].text == '第一行\r\n"second" line, with comma\r\n'  # type: ignore[union-attr]


def test_csv_field_names_and_empty_optional_columns(tmp_path: Path) -> None:
    """Fields names the columns; empty title and timestamp cells are absent values."""
    data = "url,body,headline,fetched\nhttps://a.cn/1,正文,,\nhttps://a.cn/2,text,H,1704412800\n"
    fields = Fields(id="url", text="body", title="headline", timestamp="fetched")
    records = read(write(tmp_path / "in.csv", data), fields=fields)
    assert [(r.id, r.title, r.timestamp) for r in only_docs(records)] == [
        ("https://a.cn/1", None, None),
        ("https://a.cn/2", "H", JAN5),
    ]


def test_csv_large_field(tmp_path: Path) -> None:
    """A 10 MB field is read (the csv module's default limit is 128 KiB)."""
    text = "北京abc " * (10_000_000 // 7)
    records = read(write(tmp_path / "in.csv", f"id,text\nbig,{text}\n"))
    assert [r.text for r in only_docs(records)] == [text]


BAD_CSV = [
    # (row, reason contains, id)
    ("r1,", "'text' is empty", "r1"),
    ("r1,   ", "'text' is only whitespace", "r1"),
    ("r1", "missing 'text'", "r1"),
    (",", "'text' is empty", "{path}:3"),
    ("r1,北京,2024-13-01", "bad 'timestamp'", "r1"),
    ("r1,北京,,extra", "the row has 4 fields but the header has 3", "r1"),
    ("r1,a\rb", "malformed CSV", None),
]


@pytest.mark.parametrize(("row", "reason", "doc_id"), BAD_CSV)
def test_csv_bad_row_and_the_run_goes_on(
    tmp_path: Path, row: str, reason: str, doc_id: str | None
) -> None:
    """Each kind of bad row is one BadRecord with its line, id and problem; the rest is read."""
    data = f"id,text,timestamp\nfirst,前\n{row}\nlast,后\n"
    records = read(write(tmp_path / "in.csv", data))
    assert [r.id for r in only_docs(records)] == ["first", "last"]
    (bad,) = only_bad(records)
    assert (bad.line, bad.id) == (3, doc_id and doc_id.format(path=tmp_path / "in.csv"))
    assert reason in bad.reason


def test_csv_invalid_utf8(tmp_path: Path) -> None:
    """A row that is not valid UTF-8 is a BadRecord naming the line and byte, with its id."""
    data = (
        "id,text\nok,好\n".encode() + b'r2,"caf\xe9\nsecond line"\nr3,\xff\n' + "end,完\n".encode()
    )
    records = read(write(tmp_path / "in.csv", data))
    assert [r.id for r in only_docs(records)] == ["ok", "end"]
    first, second = only_bad(records)
    assert (first.line, first.id) == (3, "r2")
    assert first.reason == "not valid UTF-8: line 3, byte 0xE9 at byte 8 of the line"
    assert (second.line, second.id) == (5, "r3")


def test_csv_repeated_id(tmp_path: Path) -> None:
    """A repeated id in CSV names the line of the first, counting the header as line 1."""
    records = read(write(tmp_path / "in.csv", "id,text\n\nx,一\nx,二\n"))
    bad = only_bad(records)
    assert [(b.line, b.reason) for b in bad] == [(4, "repeated id 'x', first on line 3")]


def test_csv_byte_order_mark_and_blank_lines_before_header(tmp_path: Path) -> None:
    """A BOM and blank lines before the header do not spoil it."""
    data = b"\xef\xbb\xbf\n  \n" + "id,text\n1,北京\n".encode()
    with read_records(write(tmp_path / "in.csv", data)) as records:
        assert records.csv_header == ["id", "text"]
        assert [(r.id, r.line) for r in records] == [("1", 4)]


@pytest.mark.parametrize("data", ["", "\n\n", "id,text\n", "id,text\n\n \n"])
def test_csv_without_rows(tmp_path: Path, data: str) -> None:
    """An empty CSV, or one with only a header, has no records."""
    assert read(write(tmp_path / "in.csv", data)) == []


@pytest.mark.parametrize(
    ("header", "fields", "missing"),
    [
        ("url,body", Fields(), "'text'"),
        ("id,body", Fields(), "'text'"),
        ("id,text", Fields(text="正文"), "'正文'"),
    ],
)
def test_csv_header_without_needed_column(
    tmp_path: Path, header: str, fields: Fields, missing: str
) -> None:
    """A header lacking the text column raises InputError at once, naming the columns."""
    path = write(tmp_path / "in.csv", header + "\n1,x\n")
    with pytest.raises(InputError, match=f"no {missing} column") as info:
        read_records(path, fields=fields)
    assert header.split(",")[0] in str(info.value)


def test_csv_without_an_id_column_names_rows_file_and_line(tmp_path: Path) -> None:
    """A CSV without the id column is read: each row is named FILE:LINE."""
    path = write(tmp_path / "in.csv", "text\n北京\n上海\n")
    assert [r.id for r in read(path)] == [f"{path}:2", f"{path}:3"]


def test_csv_header_not_utf8(tmp_path: Path) -> None:
    """A header that is not valid UTF-8 raises InputError."""
    path = write(tmp_path / "in.csv", b"id,t\xffext\n1,x\n")
    with pytest.raises(InputError, match="header is not valid UTF-8"):
        read_records(path)


# -- folders -------------------------------------------------------------------------------


def make_folder(root: Path, files: dict[str, bytes | str]) -> str:
    """A folder holding ``files`` (relative path: contents)."""
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path, data)
    return str(root)


def test_folder_reads_text_and_html_recursively(tmp_path: Path) -> None:
    """.txt and .html files anywhere under the folder are records, ids their '/' paths, in order."""
    root = make_folder(
        tmp_path / "crawl",
        {
            "b.txt": "English text",
            "a/新闻.html": "<html><body><p>北京今天晴</p></body></html>",
            "a/z/deep.TXT": "深层",
            "a/page.htm": "<p>htm</p>",
            "notes.md": "not read",
            "data.json": '{"id": 1}',
            ".hidden.txt": "hidden",
            ".git/x.txt": "hidden folder",
        },
    )
    records = read(root)
    assert [(r.id, r.text) for r in only_docs(records)] == [
        ("a/page.htm", "<p>htm</p>"),
        ("a/z/deep.TXT", "深层"),
        ("a/新闻.html", "<html><body><p>北京今天晴</p></body></html>"),
        ("b.txt", "English text"),
    ]
    assert all(r.line is None and r.raw is None for r in only_docs(records))


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("empty.txt", b"", "the file is empty"),
        ("blank.txt", " \n\t\u3000\n".encode(), "the file holds only whitespace"),
        ("markup.html", b"<html><body><p></p><br></body></html>", "no text once normalized"),
        ("nbsp.txt", b"&nbsp; &#160;\n", "no text once normalized"),
        ("zwsp.txt", "\u200b\ufeff\u2060".encode(), "no text once normalized"),
        ("nul.txt", b"\x00" * 64, "no text once normalized"),  # binary, read as text
        ("latin.txt", b"caf\xe9", "not valid UTF-8: byte 0xE9 at byte 4"),
        ("gbk.txt", "北京".encode("gbk"), "not valid UTF-8"),
        ("gbk.html", "<p>北京</p>".encode("gbk"), "not valid UTF-8"),
        ("wrong.html", b'<meta charset="euc-jp"><p>\xff</p>', "nor valid euc-jp as declared"),
        ("odd.html", b'<meta charset="klingon"><p>\xff</p>', "charset 'klingon' is unknown"),
    ],
)
def test_folder_bad_file(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    """An unusable file is a BadRecord with no line, its path as id, and the reason."""
    root = make_folder(tmp_path / "crawl", {"sub/" + name: data, "ok.txt": "好"})
    records = read(root)
    assert [r.id for r in only_docs(records)] == ["ok.txt"]
    (bad,) = only_bad(records)
    assert (bad.line, bad.id) == (None, "sub/" + name)
    assert reason in bad.reason


@pytest.mark.parametrize(
    ("declaration", "encoding", "text"),
    [
        ('<meta charset="gbk">', "gbk", "北京新闻 news"),
        (
            "<META HTTP-EQUIV='Content-Type' CONTENT='text/html; charset=gb2312'>",
            "gb2312",
            "北京新闻",
        ),
        ('<meta charset="GB18030">', "gb18030", "北京新闻 𠀀"),
        ('<meta charset="big5">', "big5", "臺北新聞 news"),
        ('<meta charset="Shift_JIS">', "shift_jis", "東京の天気"),
        # labels read as the WHATWG standard (and a browser) reads them: a larger codec
        ('<meta charset="iso-8859-1">', "cp1252", "“Café” — 5 €"),
        ('<meta charset="us-ascii">', "cp1252", "naïve ‘quotes’"),
        ('<meta charset="big5">', "big5hkscs", "香港特區 啓德 𠝹"),
        ('<meta charset="gb2312">', "gb18030", "镕基 䶮"),
    ],
)
def test_folder_html_in_declared_charset(
    tmp_path: Path, declaration: str, encoding: str, text: str
) -> None:
    """An HTML file that is not UTF-8 is decoded in the charset its <meta> declares."""
    html = f"<html><head>{declaration}</head><body>{text}</body></html>"
    root = make_folder(tmp_path / "crawl", {"p.html": html.encode(encoding)})
    (doc,) = read(root)
    assert isinstance(doc, Document)
    assert doc.text == html


def test_folder_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    """A UTF-8 BOM at the start of a file is not part of its text."""
    root = make_folder(tmp_path / "crawl", {"a.txt": b"\xef\xbb\xbf" + "北京".encode()})
    assert [r.text for r in only_docs(read(root))] == ["北京"]


def test_folder_links_to_folders_are_not_followed(tmp_path: Path) -> None:
    """A link to a folder (which could loop) is skipped; a link to a file is read."""
    root = tmp_path / "crawl"
    make_folder(root, {"a/x.txt": "x"})
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "y.txt").symlink_to(root / "a" / "x.txt")
    assert [r.id for r in read(str(root))] == ["a/x.txt", "y.txt"]


def test_folder_broken_link(tmp_path: Path) -> None:
    """A link to a file that is gone is a BadRecord, not silently skipped."""
    root = make_folder(tmp_path / "crawl", {"a.txt": "a"})
    (tmp_path / "crawl" / "b.txt").symlink_to(tmp_path / "gone.txt")
    records = read(root)
    assert [type(r).__name__ for r in records] == ["Document", "BadRecord"]
    assert records[1] == BadRecord(None, "b.txt", "cannot read the file: No such file or directory")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_folder_unreadable_file(tmp_path: Path) -> None:
    """A file that cannot be opened is a BadRecord."""
    root = make_folder(tmp_path / "crawl", {"a.txt": "a", "b.txt": "b"})
    (tmp_path / "crawl" / "a.txt").chmod(0)
    records = read(root)
    assert [type(r).__name__ for r in records] == ["BadRecord", "Document"]
    assert "cannot read the file" in records[0].reason  # type: ignore[union-attr]


# -- opening errors ------------------------------------------------------------------------


def test_missing_file_raises_at_once(tmp_path: Path) -> None:
    """A missing input raises InputError (a NeardupError and a ValueError) when opened."""
    with pytest.raises(InputError, match=r"cannot read .*nope\.jsonl") as info:
        read_records(str(tmp_path / "nope.jsonl"))
    assert isinstance(info.value, NeardupError) and isinstance(info.value, ValueError)


def test_unknown_format() -> None:
    """An unknown fmt is a ConfigError listing the formats."""
    with pytest.raises(ConfigError, match="jsonl, csv, dir"):
        read_records("-", fmt="xml")


@pytest.mark.parametrize("source", ["-", "file"])
def test_dir_format_needs_a_folder(tmp_path: Path, source: str) -> None:
    """fmt='dir' on something that is not a folder raises InputError."""
    path = source if source == "-" else write(tmp_path / "f.txt", "x")
    with pytest.raises(InputError, match="not a folder"):
        read_records(path, fmt="dir")


def test_close_stops_reading(tmp_path: Path) -> None:
    """After close() the reader gives no more records."""
    records = read_records(
        write(tmp_path / "in.jsonl", jsonl(*({"id": i, "text": "t"} for i in range(5))))
    )
    assert next(records).id == "0"
    records.close()
    assert list(records) == []


# -- results -------------------------------------------------------------------------------


def test_results_are_frozen() -> None:
    """Document and BadRecord cannot be changed."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        Document("a", "b").text = "c"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        BadRecord(1, None, "x").reason = "y"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        (
            BadRecord(3, "新闻-1", "'text' is empty"),
            '{"line": 3, "id": "新闻-1", "reason": "\'text\' is empty"}',
        ),
        (
            BadRecord(None, "a/b.txt", "the file is empty"),
            '{"line": null, "id": "a/b.txt", "reason": "the file is empty"}',
        ),
        (
            BadRecord(9, None, "malformed JSON"),
            '{"line": 9, "id": null, "reason": "malformed JSON"}',
        ),
        (BadRecord(1, "x\ud800", "r"), '{"line": 1, "id": "x\\ud800", "reason": "r"}'),
    ],
)
def test_bad_record_to_json(bad: BadRecord, expected: str) -> None:
    """to_json is one line of JSON keeping Chinese as is, escaping only what UTF-8 cannot hold."""
    assert bad.to_json() == expected
    assert json.loads(bad.to_json()) == {"line": bad.line, "id": bad.id, "reason": bad.reason}


# -- UniqueWriter --------------------------------------------------------------------------


def test_writer_jsonl_writes_kept_lines_exactly(tmp_path: Path) -> None:
    """Kept JSONL records are written as their original lines, byte for byte."""
    lines = [
        '{"id":1,"text":"北京","extra":{"a":[1,2]}}',
        '{ "id" : "2", "text" : "\\u4e0a\\u6d77 \\ud800" }',
        '{"id": 3, "text": "English", "timestamp": "2024-01-05"}',
    ]
    data = lines[0] + "\n[]\n\n" + lines[1] + "\r\n" + lines[2]
    records = read(write(tmp_path / "in.jsonl", data))
    out = str(tmp_path / "unique.jsonl")
    with UniqueWriter(out, "jsonl") as writer:
        for doc in only_docs(records):
            writer.write(doc)
    assert writer.written == 3
    assert Path(out).read_bytes() == ("\n".join(lines) + "\n").encode()


_JSONL = '{"id": 1, "text": "北京"}\n{"id": 2, "text": "上海", "x": [1]}\n'
_CSV = "id,text,src\r\na,北京,x\r\nb,上海,y\r\n"
_PAGES = {"a.html": "<p>北京</p>", "b.txt": "上海"}


@pytest.mark.parametrize(
    ("name", "data", "output"),
    [
        *(("in.jsonl", _JSONL, out) for out in ("jsonl", "csv", "parquet")),
        *(("in.csv", _CSV, out) for out in ("jsonl", "csv")),
        ("crawl", _PAGES, "jsonl"),
    ],
)
def test_writer_says_when_it_needs_the_text(
    tmp_path: Path, name: str, data: str | dict[str, str], output: str
) -> None:
    """A document the writer says needs no text (written from its raw line or row) is
    written the same without it: a batch run lets the text go once it is sketched."""
    src = (
        make_folder(tmp_path / name, data)
        if isinstance(data, dict)
        else write(tmp_path / name, data)
    )
    with read_records(src) as records:
        header = records.csv_header
        docs = only_docs(list(records))
    fmt = "dir" if isinstance(data, dict) else name.split(".")[1]
    written = []
    for blank in (False, True):
        out = str(tmp_path / f"unique-{blank}.{output}")
        with UniqueWriter(out, fmt, header) as writer:
            for doc in docs:
                if blank and not writer.needs_text(doc):
                    doc = dataclasses.replace(doc, text="")
                writer.write(doc)
        written.append(Path(out).read_bytes())
    assert written[0] == written[1]
    with UniqueWriter(str(tmp_path / f"probe.{output}"), fmt, header) as writer:
        assert [writer.needs_text(d) for d in docs] == [isinstance(data, dict)] * len(docs)


def test_writer_csv_round_trip(tmp_path: Path) -> None:
    """Kept CSV rows are written as they came in, under the input's header."""
    data = 'id,text,src\r\na,"多行\r\n文本",x\r\nb,,y\r\nc,"say ""hi""",z\r\n'
    with read_records(write(tmp_path / "in.csv", data)) as records:
        header = records.csv_header
        docs = only_docs(list(records))
    out = str(tmp_path / "unique.csv")
    with UniqueWriter(out, "csv", header) as writer:
        for doc in docs:
            writer.write(doc)
    written = Path(out).read_bytes().decode("utf-8")
    assert written == 'id,text,src\na,"多行\r\n文本",x\nc,"say ""hi""",z\n'
    again = only_docs(read(out))
    assert [(r.id, r.text) for r in again] == [(d.id, d.text) for d in docs]


def test_writer_folder_documents_as_json_lines(tmp_path: Path) -> None:
    """A folder's kept files are written as one {"id", "text"} JSON line each."""
    root = make_folder(tmp_path / "crawl", {"a/一.html": "<p>北京</p>", "b.txt": "line 1\nline 2"})
    out = str(tmp_path / "unique.jsonl")
    with UniqueWriter(out, "dir") as writer:
        for doc in only_docs(read(root)):
            writer.write(doc)
    lines = Path(out).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [
        {"id": "a/一.html", "text": "<p>北京</p>"},
        {"id": "b.txt", "text": "line 1\nline 2"},
    ]
    assert "北京" in lines[0]


def test_writer_documents_without_raw(tmp_path: Path) -> None:
    """A Document made in code becomes a JSON line, or a CSV row under the header by Fields."""
    doc = Document("d1", "正文 \ud800", "标题", JAN5)
    out = str(tmp_path / "unique.jsonl")
    with UniqueWriter(out, "jsonl") as writer:
        writer.write(doc)
    assert json.loads(Path(out).read_text(encoding="utf-8")) == {
        "id": "d1",
        "text": "正文 \ud800",
        "title": "标题",
        "timestamp": JAN5,
    }
    out_csv = str(tmp_path / "unique.csv")
    fields = Fields(id="url", text="body")
    with UniqueWriter(out_csv, "csv", ["url", "other", "body", "title"], fields=fields) as writer:
        writer.write(Document("d1", "正文", "标题"))
    assert Path(out_csv).read_text(encoding="utf-8") == "url,other,body,title\nd1,,正文,标题\n"


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1", "ascii"])
def test_writer_stdout_is_utf8(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, encoding: str
) -> None:
    """'-' writes UTF-8 to standard output whatever its encoding, and leaves it open."""
    buffer = fake_stdout(monkeypatch, encoding)
    (doc,) = only_docs(read(write(tmp_path / "in.jsonl", jsonl({"id": 1, "text": "北京"}))))
    with UniqueWriter("-", "jsonl") as writer:
        writer.write(doc)
    assert buffer.getvalue().decode("utf-8") == '{"id": 1, "text": "北京"}\n'
    assert not sys.stdout.closed


def test_writer_gzip_output(tmp_path: Path) -> None:
    """A path ending .gz is written gzip-compressed, and reads back the same."""
    (doc,) = only_docs(read(write(tmp_path / "in.jsonl", jsonl({"id": 1, "text": "北京"}))))
    out = str(tmp_path / "unique.jsonl.gz")
    with UniqueWriter(out, "jsonl") as writer:
        writer.write(doc)
    assert (
        gzip.decompress(Path(out).read_bytes())
        == b'{"id": 1, "text": "\xe5\x8c\x97\xe4\xba\xac"}\n'
    )
    assert [r.id for r in read(out)] == ["1"]


def test_writer_csv_header_without_rows(tmp_path: Path) -> None:
    """A CSV output with nothing kept still has its header."""
    out = str(tmp_path / "unique.csv")
    with UniqueWriter(out, "csv", ["id", "text"]):
        pass
    assert Path(out).read_text(encoding="utf-8") == "id,text\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("csv", None), "needs the input's header"),
        (("xml", None), "unknown output format 'xml'"),
    ],
)
def test_writer_config_errors(tmp_path: Path, args: tuple[str, None], message: str) -> None:
    """A CSV writer without a header, or an unknown format, is a ConfigError."""
    with pytest.raises(ConfigError, match=message):
        UniqueWriter(str(tmp_path / "out"), *args)


def test_writer_unwritable_path(tmp_path: Path) -> None:
    """A path that cannot be written is an OutputError (an OSError) naming it."""
    with pytest.raises(OutputError, match="cannot write"):
        UniqueWriter(str(tmp_path / "no" / "such" / "dir.jsonl"), "jsonl")


def test_without_text_keeps_every_other_field() -> None:
    doc = Document("a", "text", "title", 1.5, 7, '{"id": "a"}', 17, "f.jsonl", origin=("o", 1))
    assert doc.without_text() == dataclasses.replace(doc, text="")
    assert doc.without_text().origin == doc.origin
    assert doc.without_text(raw=True) == dataclasses.replace(doc, text="", raw=None)
    # a field added to Document must be carried by without_text too
    assert [f.name for f in dataclasses.fields(Document)] == [
        "id",
        "text",
        "title",
        "timestamp",
        "line",
        "raw",
        "id_value",
        "source",
        "origin",
    ]


_json_value = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()  # lone surrogates among them: the line is then escaped to ASCII
    | st.lists(st.integers() | st.text(), max_size=3)
)


@given(
    st.lists(st.tuples(st.text(min_size=1), _json_value), max_size=6, unique_by=lambda kv: kv[0])
)
def test_json_object_line_writes_what_json_line_writes(members: list[tuple[str, object]]) -> None:
    """The quick line of a flat object (CLUSTERS writes one per record): the same
    characters as the encoder's, surrogates, numbers and nested values included."""
    keys = tuple(k for k, _ in members)
    values = [v for _, v in members]
    assert json_object_line(keys, values) == json_line(dict(members))
    assert json_object_line(keys, values) == json_object_line(keys, values)  # heads cached


def _loaded(line: str) -> tuple[str, object]:
    try:
        return "value", json.loads(line)
    except (ValueError, RecursionError) as e:
        return type(e).__name__, str(e)


_object_text = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
).map(lambda v: json.dumps({"id": "a", "v": v}, ensure_ascii=False))


@given(
    _object_text
    | st.tuples(_object_text, st.text(" \t\r\n}x,{", max_size=3), st.integers(0, 60)).map(
        lambda t: (t[0][: t[2]] if t[2] < len(t[0]) else t[0]) + t[1]  # cut, trailing text
    )
    | st.text(max_size=30).map(lambda t: "{" + t)
    | st.sampled_from(['{"a": NaN}', '{"a": 1e999}', '{"a": 1}\ufeff', "\ufeff{}", "{" * 5000])
)
def test_json_loads_reads_what_json_loads_reads(line: str) -> None:
    """The scanner's shortcut gives json.loads's value, or its error and message."""
    from neardup.records.document import json_loads

    try:
        got: tuple[str, object] = ("value", json_loads(line))
    except (ValueError, RecursionError) as e:
        got = (type(e).__name__, str(e))
    assert repr(got) == repr(_loaded(line))  # repr: NaN inside is equal to itself


@given(
    st.text(
        alphabet=st.sampled_from(
            list("aZ7北٣ <>&#;p/nbsp\u200b\u00ad\ufeff\xa0\n\t\x00\x07\x7f\x9f")
        )
        | st.characters(),
        max_size=14,
    )
)
def test_no_text_is_its_pattern_then_normalized(text: str) -> None:
    """no_text's quick answers (a first letter or digit, then the pattern of what may be
    nothing) are those of the reference: the pattern, then the normalized text holding only
    whitespace, invisible format characters and control characters."""
    import unicodedata

    from neardup.normalize import normalize
    from neardup.records.document import _MAYBE_NOTHING

    nothing = _MAYBE_NOTHING.fullmatch(text) is not None and all(
        c.isspace() or unicodedata.category(c) in ("Cf", "Cc") for c in normalize(text)
    )
    assert no_text(text) == nothing


def test_a_text_that_is_an_array_of_strings_is_one_text(tmp_path: Path) -> None:
    """A JSON array of paragraphs (a Scrapy feed export of ``getall()``), a Parquet
    ``list<string>`` column and a pandas column of such arrays are one text, the items joined
    by lines — as the Scrapy add-on and the Spark engine read them (every such record was
    an error: "'text' must be a string, not an array"); an array holding anything else names
    it."""
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    rows = [
        {"id": "a", "text": ["第一段。", "Second paragraph."]},
        {"id": "b", "text": []},
        {"id": "c", "text": ["x", 7]},
        {"id": "d", "text": [None]},
    ]
    jsonl = tmp_path / "items.jsonl"
    jsonl.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    parquet = tmp_path / "items.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "text": [rows[0]["text"], []]}), parquet)
    reasons = {
        "b": "'text' is empty",
        "c": "'text' must be a string or an array of strings, not an array holding a number",
        "d": "'text' must be a string or an array of strings, not an array holding null",
    }
    for source, ids in ((jsonl, "abcd"), (parquet, "ab")):
        got = read(str(source))
        assert [r.text for r in got if isinstance(r, Document)] == ["第一段。\nSecond paragraph."]
        assert {r.id: r.reason for r in got if isinstance(r, BadRecord)} == {
            k: v for k, v in reasons.items() if k in ids
        }
    pd = pytest.importorskip("pandas")
    from neardup import dedup_frame

    frame = pd.read_parquet(parquet)  # list<string> cells are numpy arrays in pandas
    out = dedup_frame(frame)
    assert out["cluster"].tolist()[0] == "a" and out["cluster"].isna().tolist() == [False, True]
