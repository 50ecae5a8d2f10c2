"""Reliability faults of reading input, each found by a test that failed before its fix: a CSV
quote that never closes, a folder holding a link to a device, records larger than the cap,
UTF-16 files, and file names that are not UTF-8."""

from __future__ import annotations

import codecs
import json
import os
import sqlite3
from pathlib import Path

import pytest

from neardup.records import BadRecord, Document, read_records

from ..run.test_cli_dedup import CORPUS, EN_STORY, ZH_STORY, json_line, read_jsonl, run, write_lines


def read(source: str, **kwargs: object) -> list[Document | BadRecord]:
    with read_records(source, **kwargs) as records:  # type: ignore[arg-type]
        return list(records)


def outputs(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "-o",
        str(tmp_path / "unique.jsonl"),
        "--clusters",
        str(tmp_path / "clusters.jsonl"),
        "--errors",
        str(tmp_path / "errors.jsonl"),
        *extra,
    ]


# -- (a) a CSV quote that never closes -----------------------------------------------------------


def test_unterminated_csv_quote_is_reported_and_the_rows_after_it_are_read(tmp_path: Path) -> None:
    """``1,"open quote`` used to swallow every later row into one field (1 record, 0
    errors); now that row is an error naming the line where the quote opened and what it
    took, and the rows after it are read as rows."""
    path = tmp_path / "in.csv"
    path.write_text('id,text\n1,"open quote\n2,second row\n3,third row\n', encoding="utf-8")
    records = read(str(path))
    assert [(type(r).__name__, r.id, r.line) for r in records] == [
        ("BadRecord", "1", 2),
        ("Document", "2", 3),
        ("Document", "3", 4),
    ]
    reason = records[0].reason  # type: ignore[union-attr]
    assert "unterminated quote: a quoted field opens on line 2 and never closes" in reason
    assert "(lines 3–4, 2 non-blank lines)" in reason
    assert [r.text for r in records[1:]] == ["second row", "third row"]  # type: ignore[union-attr]


def test_unterminated_quote_after_a_good_multiline_field(tmp_path: Path) -> None:
    """A row whose first quoted field spans lines and closes, then opens one that never
    does: the error names both lines; a proper multi-line field elsewhere stays whole."""
    data = 'id,text,note\na,"one\ntwo",ok\nb,fine,"x\ny"\nc,"c1\nc2","open ""quote\nd,dee,\n'
    records = read(str(write_lines(tmp_path / "in.csv", [data.rstrip("\n")])))
    assert [(type(r).__name__, r.id) for r in records] == [
        ("Document", "a"),
        ("Document", "b"),
        ("BadRecord", "c"),
        ("Document", "d"),
    ]
    assert records[0].text == "one\ntwo"  # type: ignore[union-attr]
    reason = records[2].reason  # type: ignore[union-attr]
    assert reason.startswith("the row on lines 6–7 has an unterminated quote")
    assert "a quoted field opens on line 7 and never closes" in reason


def test_unterminated_quote_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The printf of the issue: 2 documents and 1 error, nothing lost, exit 0."""
    path = tmp_path / "in.csv"
    path.write_bytes(b'id,text\n1,"open quote\n2,second row\n3,third row\n')
    status, _, err = run(["dedup", str(path), *outputs(tmp_path)], capsys)
    assert status == 0, err
    assert [c["id"] for c in read_jsonl(tmp_path / "clusters.jsonl")] == ["2", "3"]
    (bad,) = read_jsonl(tmp_path / "errors.jsonl")
    assert bad["line"] == 2 and bad["id"] == "1"
    assert "3 in → 2 kept" in err


def test_a_csv_row_over_the_cap_is_skipped_to_where_its_quotes_close(tmp_path: Path) -> None:
    """A quoted field larger than --max-record-size is an error; the row after it is read."""
    big = "x" * 3000
    data = f'id,text\na,"{big}\n{big}\n{big}"\nb,after\n'
    records = read(str(write_lines(tmp_path / "in.csv", [data.rstrip()])), max_record_size=4000)
    assert [(type(r).__name__, r.line) for r in records] == [("BadRecord", 2), ("Document", 5)]
    assert "the row (lines 2–4) holds 9,007 bytes, more than the 4.0 KB" in records[0].reason  # type: ignore[union-attr]


# -- (b) special files in folders, and the size of one record ---------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_folder_link_to_dev_zero_is_skipped_with_an_error(tmp_path: Path) -> None:
    """A link to /dev/zero used to be read without end (MemoryError); a device, a FIFO or a
    socket in a folder is now an error record, never opened."""
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a.txt").write_text(ZH_STORY, encoding="utf-8")
    (folder / "zero.txt").symlink_to("/dev/zero")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe.txt")
    records = read(str(folder))
    assert [(type(r).__name__, r.id) for r in records] == [
        ("Document", "a.txt"),
        ("BadRecord", "pipe.txt"),
        ("BadRecord", None),
        ("BadRecord", "zero.txt"),
    ]
    reasons = [r.reason for r in records[1:]]  # type: ignore[union-attr]
    assert reasons[0] == "a FIFO (named pipe), not a file: skipped"
    assert reasons[1] == reasons[2] == "a character device, not a file: skipped"
    assert records[2].file == str(folder / "zero.jsonl")  # type: ignore[union-attr]


def test_jsonl_line_over_the_cap_is_an_error_and_not_kept(tmp_path: Path) -> None:
    """A line longer than max_record_size is an error record, read past in pieces."""
    huge = json_line({"id": "big", "text": "长" * 5_000_000})
    path = write_lines(tmp_path / "in.jsonl", [json_line(CORPUS[0]), huge, json_line(CORPUS[1])])
    records = read(str(path), max_record_size=1 << 20)
    assert [(type(r).__name__, r.line) for r in records] == [
        ("Document", 1),
        ("BadRecord", 2),
        ("Document", 3),
    ]
    assert "more than the 1.0 MB a record may hold (--max-record-size)" in records[1].reason  # type: ignore[union-attr]


def test_page_over_the_cap(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "big.txt").write_text("字" * 100_000, encoding="utf-8")
    (bad,) = read(str(folder), max_record_size=64_000)
    assert isinstance(bad, BadRecord) and bad.id == "big.txt"
    assert "the file holds 300,000 bytes, more than the 64.0 KB" in bad.reason


def test_max_record_size_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--max-record-size sets the cap; records over it are errors (here all: exit 3)."""
    source = write_lines(tmp_path / "in.jsonl", [json_line(r) for r in CORPUS])
    argv = ["dedup", str(source), *outputs(tmp_path, "--max-record-size", "300")]
    status, _, _ = run(argv, capsys)
    assert status == 3  # no record fits: nothing was usable
    errors = read_jsonl(tmp_path / "errors.jsonl")
    assert len(errors) == len(CORPUS) and "300 B a record may hold" in str(errors[0]["reason"])
    with pytest.raises(SystemExit) as stop:  # argparse: a usage error
        run(["dedup", str(source), *outputs(tmp_path, "--max-record-size", "lots")], capsys)
    assert stop.value.code == 2
    assert "'lots' is not a size" in capsys.readouterr().err


# -- (c) UTF-16 and UTF-32 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "bom", "what"),
    [
        ("utf-16-le", codecs.BOM_UTF16_LE, "UTF-16 (little-endian, with a byte order mark)"),
        ("utf-16-be", codecs.BOM_UTF16_BE, "UTF-16 (big-endian, with a byte order mark)"),
        ("utf-16-le", b"", "UTF-16 (little-endian, without a byte order mark)"),
        ("utf-32-le", codecs.BOM_UTF32_LE, "UTF-32 (little-endian, with a byte order mark)"),
    ],
)
def test_utf16_jsonl_is_read_and_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], encoding: str, bom: bytes, what: str
) -> None:
    """A UTF-16 file used to give one cryptic 'not valid UTF-8' line per record; it is read,
    and the summary says once what it was."""
    text = "".join(json_line(r) + "\r\n" for r in CORPUS)
    source = tmp_path / "in.jsonl"
    source.write_bytes(bom + text.encode(encoding))
    status, _, err = run(["dedup", str(source), *outputs(tmp_path)], capsys)
    assert status == 0, err
    assert read_jsonl(tmp_path / "errors.jsonl") == []
    assert [c["id"] for c in read_jsonl(tmp_path / "clusters.jsonl")] == [r["id"] for r in CORPUS]
    assert err.count(f"{source} is {what}; it was read as such") == 1
    kept = (tmp_path / "unique.jsonl").read_text("utf-8").splitlines()  # UNIQUE is UTF-8
    assert json.loads(kept[0])["text"] == CORPUS[0]["text"]


@pytest.mark.parametrize("gz", [False, True])
def test_lines_ended_by_cr_alone_are_read_and_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gz: bool
) -> None:
    """Excel for Mac's "CSV (Macintosh)" and classic Mac OS end lines with CR alone: a CSV
    of them failed at its header with Python's 'new-line character seen in unquoted field -
    do you need to open the file in universal-newline mode?', and JSONL was one line (one
    error record, or the whole file too long to hold). Both are read, said once; a CSV
    cell's own line break comes through as a line break."""
    import csv
    import gzip
    import io

    rows = [{"id": r["id"], "text": r["text"]} for r in CORPUS]
    rows[0]["text"] += "\rA second paragraph."
    out = io.StringIO()
    writer = csv.DictWriter(out, ["id", "text"], lineterminator="\r", quoting=csv.QUOTE_ALL)
    writer.writeheader()
    writer.writerows(rows)
    jsonl = "".join(json_line(r) + "\r" for r in CORPUS)
    for name, text in (("in.csv", out.getvalue()), ("in.jsonl", jsonl)):
        data = text.encode()
        source = tmp_path / (name + (".gz" if gz else ""))
        source.write_bytes(gzip.compress(data) if gz else data)
        status, _, err = run(["dedup", str(source), *outputs(tmp_path)], capsys)
        assert status == 0, err
        assert read_jsonl(tmp_path / "errors.jsonl") == []
        clusters = read_jsonl(tmp_path / "clusters.jsonl")
        assert [c["id"] for c in clusters] == [r["id"] for r in CORPUS]
        assert err.count(f"{source} is text whose lines end in CR alone") == 1
    with read_records(str(tmp_path / ("in.csv" + (".gz" if gz else "")))) as records:
        first = next(records)
    assert isinstance(first, Document) and first.text.endswith("\nA second paragraph.")


def test_utf16_csv_and_page(tmp_path: Path) -> None:
    csv_path = tmp_path / "in.csv"
    csv_path.write_bytes(codecs.BOM_UTF16_LE + "id,text\n1,北京\n".encode("utf-16-le"))
    with read_records(str(csv_path)) as records:
        assert records.csv_header == ["id", "text"]
        assert [r.text for r in records] == ["北京"]  # type: ignore[union-attr]
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a.txt").write_bytes(codecs.BOM_UTF16_LE + EN_STORY.encode("utf-16-le"))
    assert [r.text for r in read(str(folder))] == [EN_STORY]  # type: ignore[union-attr]


# -- (c) a file name that is not UTF-8 ------------------------------------------------------------


@pytest.mark.skipif(os.name != "posix", reason="POSIX file names are bytes")
def test_file_name_that_is_not_utf8_is_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A page whose name is not UTF-8 used to crash the store (a lone surrogate in its id);
    its id shows the bytes as U+FFFD, and it is stored."""
    folder = tmp_path / "pages"
    folder.mkdir()
    name = os.fsdecode(b"caf\xe9.txt")
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "w", encoding="utf-8") as f:
        f.write(ZH_STORY)
    (folder / "b.txt").write_text(EN_STORY, encoding="utf-8")
    db = tmp_path / "x.db"
    status, _, err = run(["dedup", str(folder), "--db", str(db), *outputs(tmp_path)], capsys)
    assert status == 0, err
    ids = [c["id"] for c in read_jsonl(tmp_path / "clusters.jsonl")]
    assert ids == ["b.txt", "caf\ufffd.txt"]
    assert name != ids[1]
    with sqlite3.connect(db) as con:
        stored = {row[0] for row in con.execute("SELECT id FROM docs")}
    assert stored == {"b.txt", "caf\ufffd.txt"}
    (tmp_path / "unique.jsonl").read_text("utf-8")  # the output is valid UTF-8


def test_id_with_a_lone_surrogate_is_stored_and_written_as_it_came(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A JSON id escaping a lone surrogate used to crash a SQLite store (a traceback); the
    store gets it with U+FFFD, CLUSTERS writes it as it came in."""
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"id": "\\udc00x", "text": "北京地铁十九号线今天开通运营"}\n', encoding="utf-8"
    )
    db = tmp_path / "x.db"
    status, _, err = run(["dedup", str(source), "--db", str(db), *outputs(tmp_path)], capsys)
    assert status == 0, err
    assert (tmp_path / "clusters.jsonl").read_text("utf-8").startswith('{"id": "\\udc00x", ')
    with sqlite3.connect(db) as con:
        assert [row[0] for row in con.execute("SELECT id FROM docs")] == ["\ufffdx"]


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("export.tab", "id\ttext\n1\t北京\n", "its name says tab-separated values"),
        ("notes.txt", "第一行\n第二行\n", "a page is read as one document from a folder"),
        ("crawl.dat", "a,b\n1,2\n", "if it is CSV, Parquet, Arrow or WARC, say so with --format"),
    ],
)
def test_a_file_of_no_json_line_says_what_it_was_read_as(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str, said: str
) -> None:
    """A file whose name says no format is read as JSONL; when none of its lines is a JSON
    object (a .tab export, a text file) the summary says so and what it may be, beside the
    error records (only 'malformed JSON' on every line before); a JSONL file with some bad
    lines gets no such note."""
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    status, _, err = run(["dedup", str(path), *outputs(tmp_path)], capsys)
    assert status == 3
    lines = len(content.splitlines())
    assert f"note: {path}: none of its {lines} lines is a JSON object; it was read as JSONL" in err
    assert said in err
    mixed = tmp_path / "mixed.jsonl"
    write_lines(mixed, ["not json", json_line(CORPUS[0])])
    status, _, err = run(["dedup", str(mixed), *outputs(tmp_path)], capsys)
    assert status == 0 and "is a JSON object" not in err


@pytest.mark.parametrize("style", ["scrapy", "one-line", "indented", "gzip"])
def test_a_file_that_is_one_json_array_is_read_element_by_element(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], style: str
) -> None:
    """Scrapy's ``-o items.json`` (and ``json.dump`` of a list) is one JSON array, not JSON
    Lines: every line of it was an error ('Expecting value', 'Extra data') but the last.
    Each element is a record, named by the line it starts on; UNIQUE holds them as JSON
    lines; the summary says so once."""
    import gzip

    records = [{"id": r["id"], "text": r["text"]} for r in CORPUS]
    if style == "scrapy":
        text = "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n]"
    elif style == "one-line":
        text = json.dumps(records, ensure_ascii=False)
    else:
        text = json.dumps(records, ensure_ascii=False, indent=2)
    data = text.encode()
    source = tmp_path / ("items.json.gz" if style == "gzip" else "items.json")
    source.write_bytes(gzip.compress(data) if style == "gzip" else data)
    status, _, err = run(["dedup", str(source), *outputs(tmp_path)], capsys)
    assert status == 0, err
    assert read_jsonl(tmp_path / "errors.jsonl") == []
    clusters = read_jsonl(tmp_path / "clusters.jsonl")
    assert [c["id"] for c in clusters] == [r["id"] for r in CORPUS]
    kept = read_jsonl(tmp_path / "unique.jsonl")
    assert kept == [r for r in records if r["id"] in {c["cluster"] for c in clusters}]
    assert err.count(f"{source} is one JSON array; each of its elements was read") == 1


def test_a_broken_json_array_keeps_what_came_before_and_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An element that is no object is an error record naming its line; an array that is
    malformed or cut short keeps the records before the break, and the run ends with exit
    status 3 (not read to its end) and an error record naming the line."""
    first, second = ({"id": r["id"], "text": r["text"]} for r in CORPUS[:2])
    text = "[\n" + json.dumps(first) + ",\n  7,\n" + json.dumps(second) + ',\n {"id": "x", '
    source = tmp_path / "items.json"
    source.write_text(text, "utf-8")
    status, _, err = run(["dedup", str(source), *outputs(tmp_path)], capsys)
    assert status == 3, err
    errors = read_jsonl(tmp_path / "errors.jsonl")
    assert [(e["line"], e["reason"]) for e in errors] == [
        (3, "not a JSON object but a number"),
        (
            5,
            "the JSON array breaks off at line 5 (the array ends before its element is whole); "
            "nothing after it could be read",
        ),
    ]
    assert [c["id"] for c in read_jsonl(tmp_path / "clusters.jsonl")] == [
        first["id"],
        second["id"],
    ]


@pytest.mark.parametrize(
    ("encoding", "codec"), [("gbk", "gbk"), ("big5", "big5hkscs"), ("cp1252", "cp1252")]
)
def test_encoding_reads_jsonl_and_csv_that_are_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], encoding: str, codec: str
) -> None:
    """A CSV saved by Excel on a Chinese Windows is GBK or Big5: its header stopped the run
    ('not valid UTF-8') and JSONL's every line was an error, with no word of what to do.
    ``--encoding`` reads them (outputs UTF-8), said once; without it, the error and a note
    name the option."""
    import csv as csv_module
    import io as io_module

    texts = {
        "gbk": [
            "维港今晨大雾，多条渡轮航线暂停服务。",
            "区议会通过议案，今年秋季沿河种植一千棵树。",
        ],
        "big5": [
            "維港今晨大霧，多條渡輪航線暫停服務。",
            "區議會通過議案，今年秋季沿河種植一千棵樹。",
        ],
        "cp1252": [
            "The café’s “naïve” menu costs €5 more.",
            "Zürich’s council voted to plant trees.",
        ],
    }[encoding]
    head = {"gbk": "标题", "big5": "標題", "cp1252": "títle"}[encoding]
    rows = [{"id": f"r{k}", head: t[:4], "text": t} for k, t in enumerate(texts)]
    buf = io_module.StringIO()
    writer = csv_module.DictWriter(buf, list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    sources = {
        "in.csv": buf.getvalue().encode(codec),
        "in.jsonl": "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode(codec),
    }
    for name, data in sources.items():
        source = tmp_path / name
        source.write_bytes(data)
        status, _, err = run(["dedup", str(source), *outputs(tmp_path)], capsys)
        assert status in (2, 3) and "give it with --encoding" in err
        argv = ["dedup", str(source), *outputs(tmp_path), "--encoding", encoding]
        status, _, err = run(argv, capsys)
        assert status == 0, err
        assert [k["text"] for k in read_jsonl(tmp_path / "unique.jsonl")] == texts
        assert err.count("as --encoding says; it was read as such") == 1
    argv = ["dedup", str(tmp_path / "in.csv"), *outputs(tmp_path), "--encoding", "nope"]
    status, _, err = run(argv, capsys)
    assert status == 2 and "--encoding 'nope' names no text encoding" in err


def test_a_json_array_element_over_lines_with_a_lone_surrogate_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An element spread over lines is written to UNIQUE on one line: one holding an escaped
    lone surrogate, which UTF-8 cannot carry, comes out escaped (it ended the run with a
    UnicodeEncodeError)."""
    source = tmp_path / "items.json"
    source.write_text('[\n  {"id": "a",\n   "text": "lone \\ud800 surrogate"}\n]\n', "utf-8")
    status, _, err = run(["dedup", str(source), *outputs(tmp_path)], capsys)
    assert status == 0, err
    line = (tmp_path / "unique.jsonl").read_text("utf-8").strip()
    assert line == '{"id": "a", "text": "lone \\ud800 surrogate"}'
