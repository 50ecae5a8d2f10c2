"""``neardup dedup``: the sample data, every input format, bad input, batch and stream, summary."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import pytest

from neardup.cli import main
from neardup.engine.templates import CommonShingles

# -- fixtures --------------------------------------------------------------------------------

ZH_STORY = (
    "本报讯（记者 李明）3月12日，南湖区图书馆新馆正式向市民开放。新馆位于南湖公园东侧，"
    "建筑面积约2.8万平方米，设有少儿阅览区、古籍修复室和24小时自助借还区，可容纳读者1500人同时阅读。"
    "馆方介绍，新馆首批上架图书46万册，并将逐步引入电子阅读设备。开馆首日，不少家长带着孩子前来办理借书证，"
    "服务台前排起了长队。区文化局负责人表示，今后还将在各街道建设分馆，让居民在家门口就能借到书。"
)
ZH_REPRINT = (
    "转自：南湖日报\n"
    "3月12日，南湖区图书馆新馆正式向市民开放。新馆位于南湖公园东侧，"
    "建筑面积约2.8万平方米，设有少儿阅览区、古籍修复室和24小时自助借还区，可容纳读者1500人同时阅读。"
    "馆方介绍，新馆首批上架图书46万册，并将逐步引入电子阅读设备。开馆首日，许多家长带着孩子前来办理借书证，"
    "服务台前排起了长队。\n（责任编辑：王芳）"
)
ZH_OTHER = (
    "本报讯（记者 张华）9月3日，北山区体育中心游泳馆完成改造后重新开放。游泳馆新建了恒温泳池和儿童戏水区，"
    "更衣室全部更换了储物柜，并增加了无障碍通道。场馆负责人说，工作日早晚时段向市民免费开放两小时，"
    "周末则需提前在网上预约。附近居民表示，改造后的泳池水质明显变好，希望能延长夜间开放时间。"
)
EN_STORY = (
    "The city council voted 7-2 on Tuesday to turn the old Fairmont rail yard into a riverside park, "
    "ending a decade of debate over the 40-acre site. The plan includes a playground, community gardens, "
    "a dog run and a paved trail that will link the park to the downtown bike network. Construction is "
    "expected to begin next spring and cost about 18 million dollars, most of it from a state grant. "
    "Residents who spoke at the meeting mostly supported the project, though some asked for more parking."
)
EN_REPRINT = (
    "By Staff Reporter. The city council voted 7-2 on Tuesday to turn the old Fairmont rail yard into a "
    "riverside park, ending a decade of debate over the 40-acre site. The plan includes a playground, "
    "community gardens, a dog run and a paved trail that will connect the park to the downtown bike "
    "network. Construction is expected to begin next spring and cost about 18 million dollars, most of "
    "it from a state grant. Share this article."
)
EN_OTHER = (
    "A new ferry route between Port Ellis and Gull Island will start service in June, the transit "
    "authority said on Friday. The boats will run every forty minutes during the summer season and "
    "carry up to 150 passengers and 20 bicycles each. Officials expect the route to cut travel time "
    "to the island by half and to ease traffic on the coastal highway during festival weekends."
)

CORPUS: list[dict[str, object]] = [
    {
        "id": "zh1",
        "title": "南湖区图书馆新馆开放",
        "text": ZH_STORY,
        "timestamp": "2026-03-12T09:00:00+08:00",
    },
    {
        "id": "en1",
        "title": "Council turns rail yard into park",
        "text": EN_STORY,
        "timestamp": 1770000000,
    },
    {
        "id": "zh1r",
        "title": "转载：南湖区图书馆新馆开放",
        "text": ZH_REPRINT,
        "timestamp": "2026-03-11",
    },
    {"id": "zh2", "title": "北山区游泳馆重新开放", "text": ZH_OTHER},
    {"id": "en1r", "title": "Rail yard to become a park", "text": EN_REPRINT},
    {"id": "en2", "title": "Ferry to Gull Island", "text": EN_OTHER, "timestamp": "2026-05-01"},
]
#: The story of each corpus id: the id of its first copy.
STORY = {"zh1": "zh1", "en1": "en1", "zh1r": "zh1", "zh2": "zh2", "en1r": "en1", "en2": "en2"}

TITLES = [
    ("t1", "南湖区图书馆新馆正式开放"),
    ("t2", "Council votes to turn Fairmont rail yard into park"),
    ("t3", "转载：南湖区图书馆新馆正式开放"),
    ("t4", "City council votes to turn Fairmont rail yard into a park"),
    ("t5", "北山区体育中心游泳馆重新开放"),
    ("t6", "Ferry service to Gull Island starts in June"),
]
TITLE_STORY = {"t1": "t1", "t2": "t2", "t3": "t1", "t4": "t2", "t5": "t5", "t6": "t6"}


def json_line(record: dict[str, object]) -> str:
    """One JSONL line, non-ASCII kept."""
    return json.dumps(record, ensure_ascii=False)


def write_lines(path: Path, lines: list[str] | list[bytes]) -> Path:
    """Write ``lines`` (text or bytes), one a line."""
    data = b"".join((x if isinstance(x, bytes) else x.encode("utf-8")) + b"\n" for x in lines)
    path.write_bytes(data)
    return path


def read_jsonl(path: Path) -> list[dict[str, object]]:
    """The JSON objects of a JSONL file."""
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def records_in(path: Path) -> int:
    """The number of non-blank lines of an input file."""
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``neardup`` in-process: (exit status, stdout, stderr)."""
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], *more: str) -> str:
    """``neardup dedup`` of a one-record input with the options ``more``, which it must refuse
    (status 2, argparse's errors included, no traceback): what it said on stderr."""
    src = write_lines(tmp_path / "in.jsonl", [json.dumps({"id": "a", "text": "hello"})])
    argv = ["dedup", str(src), "-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c")]
    try:
        status, _, err = run([*argv, *more], capsys)
    except SystemExit as e:  # argparse's own errors
        status, err = int(e.code or 0), capsys.readouterr().err
    assert status == 2 and "Traceback" not in err, err
    return err


def dedup(
    tmp_path: Path, source: Path | str, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[list[dict[str, object]], list[dict[str, object]], str]:
    """Run ``neardup dedup`` on ``source``: (CLUSTERS, ERRORS, stderr); UNIQUE is unique.out."""
    argv = ["dedup", str(source), "-o", str(tmp_path / "unique.out")]
    argv += [
        "--clusters",
        str(tmp_path / "clusters.jsonl"),
        "--errors",
        str(tmp_path / "errors.jsonl"),
    ]
    status, _, err = run([*argv, *extra], capsys)
    assert status == 0, err
    return read_jsonl(tmp_path / "clusters.jsonl"), read_jsonl(tmp_path / "errors.jsonl"), err


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """The Chinese and English corpus as JSONL."""
    return write_lines(tmp_path / "corpus.jsonl", [json_line(r) for r in CORPUS])


@pytest.fixture(scope="module")
def sample() -> Iterator[Path]:
    """The built-in sample data as a file."""
    with as_file(files("neardup").joinpath("data", "sample.jsonl")) as path:
        yield Path(path)


def sample_rows() -> list[dict[str, str]]:
    """The records of the built-in sample, with their labels."""
    text = files("neardup").joinpath("data", "sample.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def label_mismatches(clusters: list[dict[str, object]]) -> dict[str, list[str]]:
    """Ids where CLUSTERS disagrees with the sample's own ``cluster`` labels, by kind of error."""
    rows = sample_rows()
    truth = {r["id"]: r["cluster"] for r in rows}
    got = {str(c["id"]): str(c["cluster"]) for c in clusters}
    first: dict[str, str] = {}
    for r in rows:
        first.setdefault(r["cluster"], r["id"])
    return {
        "not in its story's cluster": [i for i in truth if got[i] != got[first[truth[i]]]],
        "in another story's cluster": [i for i in truth if truth[got[i]] != truth[i]],
        "distinct item not alone": [
            r["id"] for r in rows if r["kind"] == "distinct" and got[r["id"]] != r["id"]
        ],
    }


# -- the sample data -------------------------------------------------------------------------


def test_sample_flag_matches_the_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--sample`` keeps each story once and merges each reprint into its story's cluster."""
    clusters = tmp_path / "clusters.jsonl"
    status, _, _ = run(["dedup", "--sample", "--clusters", str(clusters)], capsys)
    assert status == 0
    found = read_jsonl(clusters)
    assert [c["id"] for c in found] == [r["id"] for r in sample_rows()]
    assert label_mismatches(found) == {
        "not in its story's cluster": [],
        "in another story's cluster": [],
        "distinct item not alone": [],
    }
    assert sum(c["duplicate_of"] is None for c in found) == len(
        {r["cluster"] for r in sample_rows()}
    )


def test_sample_report_shows_every_item_and_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """The ``--sample`` report names every item, its stories, the label check and the summary."""
    status, out, err = run(["dedup", "--sample"], capsys)
    assert status == 0 and err == ""
    rows = sample_rows()
    for r in rows:
        assert r["id"] in out
    assert "story 1:" in out
    assert "Against the sample's own labels:" in out
    assert f"{len(rows)} in → " in out
    assert "neardup dedup crawl.jsonl -o unique.jsonl --clusters clusters.jsonl" in out


@pytest.mark.parametrize("mode", [[], ["--stream"]], ids=["batch", "stream"])
def test_sample_as_a_file_matches_the_labels(
    tmp_path: Path, sample: Path, capsys: pytest.CaptureFixture[str], mode: list[str]
) -> None:
    """The sample as an input file: one kept record per story, exactly its original line."""
    clusters, errors, _ = dedup(tmp_path, sample, capsys, *mode)
    assert errors == []
    assert label_mismatches(clusters) == {
        "not in its story's cluster": [],
        "in another story's cluster": [],
        "distinct item not alone": [],
    }
    lines = sample.read_text("utf-8").splitlines()
    originals = [
        line
        for line, r in zip(lines, sample_rows(), strict=True)
        if r["kind"] in ("orig", "distinct")
    ]
    assert (tmp_path / "unique.out").read_text("utf-8").splitlines() == originals


# -- input formats ---------------------------------------------------------------------------


def test_jsonl_outputs(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """UNIQUE holds the kept lines exactly as read; CLUSTERS one line per record, in order."""
    clusters, errors, _ = dedup(tmp_path, corpus, capsys)
    assert errors == []
    assert [c["id"] for c in clusters] == [r["id"] for r in CORPUS]
    assert {c["id"]: c["cluster"] for c in clusters} == STORY
    for c in clusters:
        assert set(c) == {"id", "cluster", "duplicate_of", "extends", "score"}
        if c["id"] == c["cluster"]:
            assert c["duplicate_of"] is None and c["score"] == 0.0
        else:
            assert c["duplicate_of"] == STORY[str(c["id"])]
            assert isinstance(c["score"], float) and 0.6 <= c["score"] <= 1.0
            assert round(c["score"], 4) == c["score"]
    kept = [
        line
        for line, r in zip(corpus.read_text("utf-8").splitlines(), CORPUS, strict=True)
        if STORY[str(r["id"])] == r["id"]
    ]
    assert (tmp_path / "unique.out").read_text("utf-8").splitlines() == kept


def test_csv_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CSV in, CSV out: the header, then the kept rows as read (a quoted newline kept)."""
    rows = ["url,body,title"]
    rows += [
        f'https://a.example/{r["id"]},"{str(r["text"]).replace(chr(34), "")}",{r["id"]}'
        for r in CORPUS
    ]
    source = write_lines(tmp_path / "pages.csv", rows)
    clusters, errors, _ = dedup(
        tmp_path, source, capsys, "--id-field", "url", "--text-field", "body"
    )
    assert errors == []
    assert {
        str(c["id"]).rsplit("/", 1)[1]: str(c["cluster"]).rsplit("/", 1)[1] for c in clusters
    } == STORY
    unique = (tmp_path / "unique.out").read_text("utf-8")
    assert unique.startswith("url,body,title\n")
    assert "转自：南湖日报" not in unique and "\n3月12日" not in unique
    kept_rows = [
        row for row, r in zip(rows[1:], CORPUS, strict=True) if STORY[str(r["id"])] == r["id"]
    ]
    assert unique == "\n".join([rows[0], *kept_rows]) + "\n"


def test_folder_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder of .txt and .html files: ids are paths, an empty file is an error record."""
    pages = tmp_path / "pages"
    (pages / "mirror").mkdir(parents=True)
    (pages / "a.txt").write_text(ZH_STORY, encoding="utf-8")
    (pages / "mirror" / "b.html").write_text(
        f"<html><body><p>{ZH_REPRINT}</p></body></html>", encoding="utf-8"
    )
    (pages / "c.txt").write_text(EN_STORY, encoding="utf-8")
    (pages / "d.htm").write_text(f"<div>{EN_REPRINT}</div>", encoding="utf-8")
    (pages / "empty.txt").write_text("", encoding="utf-8")
    (pages / "notes.md").write_text("not read", encoding="utf-8")
    clusters, errors, _ = dedup(tmp_path, pages, capsys)
    assert {c["id"]: c["cluster"] for c in clusters} == {
        "a.txt": "a.txt",
        "c.txt": "c.txt",
        "d.htm": "c.txt",
        "mirror/b.html": "a.txt",
    }
    assert [(e["id"], e["reason"]) for e in errors] == [("empty.txt", "the file is empty")]
    kept = read_jsonl(tmp_path / "unique.out")
    assert [k["id"] for k in kept] == ["a.txt", "c.txt"] and kept[0]["text"] == ZH_STORY


def test_stdin_input(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    corpus: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``-`` reads standard input; ``-o -`` writes the kept lines to standard output."""
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(corpus.read_bytes()), encoding="utf-8")
    )
    clusters = tmp_path / "clusters.jsonl"
    status, out, err = run(["dedup", "-", "-o", "-", "--clusters", str(clusters), "-q"], capsys)
    assert status == 0 and err == ""
    assert {c["id"]: c["cluster"] for c in read_jsonl(clusters)} == STORY
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["zh1", "en1", "zh2", "en2"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_text_field_title(tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``--text-field title`` deduplicates a corpus of titles, in Chinese and English."""
    if fmt == "jsonl":
        source = write_lines(
            tmp_path / "titles.jsonl", [json_line({"id": i, "title": t}) for i, t in TITLES]
        )
    else:
        source = write_lines(
            tmp_path / "titles.csv", ["id,title", *(f"{i},{t}" for i, t in TITLES)]
        )
    clusters, errors, _ = dedup(tmp_path, source, capsys, "--text-field", "title")
    assert errors == []
    assert {c["id"]: c["cluster"] for c in clusters} == TITLE_STORY


# -- bad input loses nothing -----------------------------------------------------------------

BAD_LINES = [
    pytest.param(b'{"id": "x1", "text": "unterminated', "error", id="malformed-json"),
    pytest.param(b'["x2", "an array"]', "error", id="array"),
    pytest.param(b'"just a string"', "error", id="string"),
    pytest.param(b"42", "error", id="number"),
    pytest.param(b"null", "error", id="null"),
    pytest.param(b'{"id": "x3"}', "error", id="missing-text"),
    pytest.param(b'{"id": "x4", "text": null}', "error", id="null-text"),
    pytest.param(b'{"id": "x5", "text": 17}', "error", id="number-text"),
    pytest.param('{"id": "x6", "text": ["北京", 1]}'.encode(), "error", id="array-text"),
    pytest.param(
        '{"id": "x6s", "text": ["天津港", "今日通航"]}'.encode(), "document", id="strings-text"
    ),
    pytest.param(b'{"id": "x7", "text": ""}', "error", id="empty-text"),
    pytest.param(b'{"id": "x8", "text": " \\u3000\\n\\t"}', "error", id="whitespace-text"),
    pytest.param(b'{"text": "an orphan line"}', "document", id="missing-id"),
    pytest.param(b'{"id": null, "text": "null id"}', "document", id="null-id"),
    pytest.param('{"id": "x9", "text": "北京'.encode() + b'\xff\xfe"}', "error", id="invalid-utf8"),
    pytest.param(
        b'{"id": "x10", "text": "\xed\xa0\x80 surrogate bytes"}', "error", id="surrogate-bytes"
    ),
    pytest.param(
        b'{"id": "x11", "text": "lone \\ud800 surrogate, escaped"}', "document", id="lone-surrogate"
    ),
    pytest.param(
        b'{"id": "\\udc00", "text": "an id that is a lone surrogate"}',
        "document",
        id="surrogate-id",
    ),
    pytest.param(
        b'{"id": "zh1", "text": "the id of an earlier record"}', "error", id="repeated-id"
    ),
    pytest.param(
        '{"id": "x12", "text": "！！！……"}'.encode(), "document", id="normalizes-to-nothing"
    ),
    pytest.param(b'{"id": "x13", "text": "<p></p>"}', "error", id="markup-only"),
    pytest.param(b'{"id": "x18", "text": "&nbsp;"}', "error", id="entity-only"),
    pytest.param(b'{"id": "x19", "text": "\\u200b\\u200b"}', "error", id="zero-width-only"),
    pytest.param(b'{"id": "x21", "text": "\\u0000\\u0000\\u0007"}', "error", id="control-only"),
    pytest.param(b'{"id": "x20", "text": "&lt;p&gt;"}', "document", id="escaped-markup"),
    pytest.param(
        b'{"id": "x14", "text": "a text", "timestamp": "yesterday"}', "error", id="bad-timestamp"
    ),
    pytest.param(
        b'{"id": "x15", "text": "a text", "title": {"zh": 1}}', "error", id="object-title"
    ),
    pytest.param(b"[" * 100_000, "error", id="deep-nesting"),
    pytest.param(
        b'{"id": "x16", "text": "\\u0000 \\u0007 control"}', "document", id="control-chars"
    ),
    pytest.param(
        b'\xef\xbb\xbf{"id": "x17", "text": "a BOM mid-file"}', "error", id="bom-mid-file"
    ),
]


def corpus_with(tmp_path: Path, bad: bytes, *, at: int = 3) -> Path:
    """The corpus with ``bad`` as line ``at + 1``, and a blank line, which is no record."""
    lines: list[bytes] = [json_line(r).encode("utf-8") for r in CORPUS]
    lines.insert(at, bad)
    lines.insert(1, b"   ")
    return write_lines(tmp_path / "crawl.jsonl", lines)


@pytest.mark.parametrize("mode", [[], ["--stream"]], ids=["batch", "stream"])
@pytest.mark.parametrize(("bad", "becomes"), BAD_LINES)
def test_bad_line(
    tmp_path: Path, bad: bytes, becomes: str, mode: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bad line is an error record or a document of its own; the rest is deduplicated."""
    source = corpus_with(tmp_path, bad)
    clusters, errors, _ = dedup(tmp_path, source, capsys, *mode)
    assert len(clusters) + len(errors) == records_in(source)
    good = {c["id"]: c["cluster"] for c in clusters if c["id"] in STORY}
    assert good == STORY
    if becomes == "error":
        assert [e["line"] for e in errors] == [5]
        assert isinstance(errors[0]["reason"], str) and errors[0]["reason"]
    else:
        assert errors == []
        (extra,) = [c for c in clusters if c["id"] not in STORY]
        assert extra["cluster"] == extra["id"] and extra["duplicate_of"] is None


@pytest.mark.parametrize("mode", [[], ["--stream"]], ids=["batch", "stream"])
def test_every_bad_line_at_once(
    tmp_path: Path, mode: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """All the bad lines in one input: every record ends in CLUSTERS or ERRORS, exit 0."""
    lines: list[bytes] = [json_line(r).encode("utf-8") for r in CORPUS]
    for k, p in enumerate(BAD_LINES):
        lines.insert(1 + 2 * k, p.values[0])  # type: ignore[arg-type]
    source = write_lines(tmp_path / "crawl.jsonl", lines)
    clusters, errors, err = dedup(tmp_path, source, capsys, *mode)
    n_errors = sum(p.values[1] == "error" for p in BAD_LINES)
    assert len(errors) == n_errors
    assert len(clusters) == len(CORPUS) + len(BAD_LINES) - n_errors
    assert len(clusters) + len(errors) == records_in(source)
    assert f"{n_errors} records could not be used" in err


@pytest.mark.parametrize("name", ["empty.jsonl", "empty.csv"])
def test_empty_input(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty input is a run of nothing: empty outputs, exit 0."""
    source = tmp_path / name
    source.write_bytes(b"")
    clusters, errors, err = dedup(tmp_path, source, capsys)
    assert clusters == errors == [] and (tmp_path / "unique.out").read_bytes() == b""
    assert "0 in → 0 kept, 0 duplicates" in err


def test_errors_go_to_stderr_without_errors_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``--errors`` the error records are JSON lines on stderr, even with ``--quiet``."""
    source = corpus_with(tmp_path, b'{"id": "x4", "text": null}')
    argv = [
        "dedup",
        str(source),
        "-o",
        str(tmp_path / "u.jsonl"),
        "--clusters",
        str(tmp_path / "c.jsonl"),
    ]
    status, out, err = run([*argv, "--quiet"], capsys)
    assert status == 0 and out == ""
    assert [json.loads(line) for line in err.splitlines()] == [
        {"line": 5, "id": "x4", "reason": "'text' is null"}
    ]


def test_ten_megabyte_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 10 MB document is read, deduplicated and written back whole."""
    paragraph = ZH_STORY + EN_OTHER
    big = paragraph * (10_000_000 // len(paragraph.encode("utf-8")) + 1)
    huge = json_line({"id": "huge", "text": big})
    assert len(huge.encode("utf-8")) > 10_000_000
    source = write_lines(tmp_path / "crawl.jsonl", [huge, *(json_line(r) for r in CORPUS)])
    clusters, errors, _ = dedup(tmp_path, source, capsys)
    assert errors == [] and len(clusters) == len(CORPUS) + 1
    assert clusters[0] == {
        "id": "huge",
        "cluster": "huge",
        "duplicate_of": None,
        "extends": None,
        "score": 0.0,
    }
    assert (tmp_path / "unique.out").read_text("utf-8").splitlines()[0] == huge


# -- batch and stream, keep policies, options ------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--raw"], ["--keep-boilerplate"], ["--num-perm", "64"]])
def test_stream_gives_the_same_clusters(
    tmp_path: Path, sample: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--stream`` writes the same CLUSTERS and UNIQUE as the batch run."""
    lines = sample.read_bytes().splitlines() + [json_line(r).encode("utf-8") for r in CORPUS]
    lines.insert(5, b"[not json")
    source = write_lines(tmp_path / "crawl.jsonl", lines)
    batch, batch_errors, _ = dedup(tmp_path, source, capsys, *extra)
    batch_unique = (tmp_path / "unique.out").read_bytes()
    stream, stream_errors, _ = dedup(tmp_path, source, capsys, "--stream", *extra)
    assert stream == batch and stream_errors == batch_errors
    assert (tmp_path / "unique.out").read_bytes() == batch_unique


def test_keep_longest(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--keep longest`` keeps and names each cluster after its longest text."""
    clusters, _, _ = dedup(tmp_path, corpus, capsys, "--keep", "longest")
    text = {r["id"]: str(r["text"]) for r in CORPUS}
    by_story: dict[str, list[str]] = {}
    for r in CORPUS:
        by_story.setdefault(STORY[str(r["id"])], []).append(str(r["id"]))
    longest = {story: max(ids, key=lambda i: len(text[i])) for story, ids in by_story.items()}
    assert {c["id"]: c["cluster"] for c in clusters} == {i: longest[s] for i, s in STORY.items()}
    kept = [c["id"] for c in clusters if c["duplicate_of"] is None]
    assert kept == [c["cluster"] for c in clusters if c["id"] == c["cluster"]]
    assert [
        json.loads(line)["id"] for line in (tmp_path / "unique.out").read_text("utf-8").splitlines()
    ] == kept


def test_keep_earliest(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--keep earliest`` keeps the copy with the earliest timestamp (zh1r is dated earlier)."""
    clusters, _, _ = dedup(tmp_path, corpus, capsys, "--keep", "earliest")
    assert {c["id"]: c["cluster"] for c in clusters}["zh1"] == "zh1r"
    # the reprint, a copy of zh1 dated earlier, is kept (in UNIQUE: it was dropped as zh1's
    # copy), and zh1, with a line the reprint lacks, kept extending it
    decided = {c["id"]: (c["duplicate_of"], c["extends"]) for c in clusters}
    assert decided["zh1r"] == (None, None) and decided["zh1"] == (None, "zh1r")
    unique = (tmp_path / "unique.out").read_text("utf-8").splitlines()
    assert "zh1r" in [json.loads(line)["id"] for line in unique]


def test_threshold_changes_the_decisions(
    tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--threshold 1`` accepts only complete coverage, so the edited reprints stay apart."""
    clusters, _, _ = dedup(tmp_path, corpus, capsys, "--threshold", "1")
    assert all(c["cluster"] == c["id"] for c in clusters)


# -- the summary -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "stages"),
    [
        ([], ["read", "sketch", "candidates", "verify", "clusters", "write"]),
        (["--stream"], ["read", "dedup", "write"]),
    ],
    ids=["batch", "stream"],
)
def test_summary_numbers(
    tmp_path: Path, mode: list[str], stages: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary counts what the outputs hold, and times every stage."""
    source = corpus_with(tmp_path, b"{oops")
    summary = tmp_path / "summary.json"
    clusters, errors, err = dedup(tmp_path, source, capsys, "--json-summary", str(summary), *mode)
    (numbers,) = read_jsonl(summary)
    kept = sum(c["duplicate_of"] is None for c in clusters)
    assert (numbers["in"], numbers["kept"], numbers["duplicates"], numbers["errors"]) == (
        7,
        4,
        2,
        1,
    )
    assert numbers["kept"] == kept == len((tmp_path / "unique.out").read_text("utf-8").splitlines())
    assert numbers["documents"] == len(clusters) and numbers["errors"] == len(errors)
    assert list(numbers["stages"]) == stages  # type: ignore[call-overload]
    # a batch run this small sketches in its own process, and says so; a stream has no workers
    assert numbers["sketch_workers"] == (None if mode else 0)
    assert ("sketch" not in stages) or "in the run's own process" in err
    assert numbers["seconds"] >= 0 and numbers["docs_per_second"] >= 0  # type: ignore[operator]
    for stage in stages:
        assert f"\n  {stage} " in err
    assert "7 in → 4 kept, 2 duplicates (33.3% of documents), 1 error" in err
    assert "1 record could not be used; it is listed in" in err


CROWDED = "the chrome table is crowded"


@pytest.mark.parametrize("mode", [[], ["--stream"]], ids=["batch", "stream"])
def test_a_crowded_chrome_table_is_noted(
    tmp_path: Path,
    corpus: Path,
    mode: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run whose chrome table holds two stories a slot on average (as if some 100,000
    long stories had been counted) says so in its summary: with a guard that never forgets,
    the window and the ``common_after`` that load calls for; with the default window, that
    it is forgotten as the guard turns; a run of a few stories says nothing of it."""
    summary = tmp_path / "summary.json"
    before, _, err = dedup(tmp_path, corpus, capsys, "--json-summary", str(summary), *mode)
    (numbers,) = read_jsonl(summary)
    assert CROWDED not in err and not any(CROWDED in n for n in numbers["notes"])  # type: ignore[attr-defined]

    made = CommonShingles.__init__

    def crowded(self: CommonShingles, **kw: Any) -> None:
        made(self, **kw)
        self.counts[:] = 2

    monkeypatch.setattr(CommonShingles, "__init__", crowded)
    forever = ["--set", "chrome_window=0"]  # a guard that never forgets
    after, _, err = dedup(tmp_path, corpus, capsys, "--json-summary", str(summary), *forever, *mode)
    (numbers,) = read_jsonl(summary)
    (note,) = [n for n in numbers["notes"] if CROWDED in n]  # type: ignore[attr-defined]
    assert "2.00 stories a slot" in note and "--set common_after=9" in note
    assert "--set chrome_window=0.36" in note and f"note: {note}" in err
    assert after == before  # every slot at two: no shingle common, every one in a passage

    # with the default window, the crowded start is said to be forgotten as the guard turns
    dedup(tmp_path, corpus, capsys, "--json-summary", str(summary), *mode)
    (numbers,) = read_jsonl(summary)
    (note,) = [n for n in numbers["notes"] if CROWDED in n]  # type: ignore[attr-defined]
    assert "counted before its guard turned" in note and "--set" not in note
    monkeypatch.undo()

    # told to count common shingles from 9 stories, the run says nothing more to raise
    monkeypatch.setattr(CommonShingles, "__init__", crowded)
    dedup(
        tmp_path, corpus, capsys, "--json-summary", str(summary), "--set", "common_after=9",
        *forever, *mode,
    )  # fmt: skip
    (numbers,) = read_jsonl(summary)
    assert not any(CROWDED in n for n in numbers["notes"])  # type: ignore[attr-defined]

    # a guard that turns every 100 counts (a story or so) forgets the crowded start within two
    dedup(
        tmp_path, corpus, capsys, "--json-summary", str(summary),
        "--set", f"chrome_window={100 / (1 << 26)!r}", *mode,
    )  # fmt: skip
    (numbers,) = read_jsonl(summary)
    assert not any(CROWDED in n for n in numbers["notes"])  # type: ignore[attr-defined]


def test_quiet_prints_nothing(
    tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--quiet`` leaves stderr empty when there is nothing to report."""
    _, _, err = dedup(tmp_path, corpus, capsys, "--quiet")
    assert err == ""


def test_progress_only_when_asked_or_on_a_terminal(
    tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No progress line on a non-terminal stderr; ``--progress`` draws one anyway."""
    _, _, err = dedup(tmp_path, corpus, capsys)
    assert "\r" not in err
    _, _, err = dedup(tmp_path, corpus, capsys, "--progress")
    assert "\r\x1b[Kdedup" in err and "deduplicating 6 documents" in err


# -- failures: exit 2, one line --------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["{missing}", "-o", "{u}", "--clusters", "{c}"],
            "cannot read {missing}: No such file or directory",
        ),
        (
            ["{corpus}", "-o", "{tmp}/no/such/folder/u.jsonl", "--clusters", "{c}"],
            "cannot write {tmp}/no/such/folder/u.jsonl",
        ),
        (["{corpus}", "-o", "{u}", "--clusters", "{tmp}"], "cannot write {tmp}"),
        (["{corpus}", "-o", "{corpus}", "--clusters", "{c}"], "-o {corpus} is the input"),
        (["{corpus}", "-o", "{u}", "--clusters", "{u}"], "-o and --clusters are the same file"),
        (["{corpus}", "-o", "-", "--clusters", "-"], "only one output can be standard output"),
        (["{corpus}", "--clusters", "{c}"], "needs -o UNIQUE"),
        (["{corpus}", "-o", "{u}"], "needs --clusters CLUSTERS"),
        ([], "dedup needs an INPUT"),
        (["{corpus}", "--sample"], "give INPUT or --sample, not both"),
        (
            ["{corpus}", "-o", "{u}", "--clusters", "{c}", "--stream", "--keep", "longest"],
            "--stream keeps the first copy",
        ),
        (
            ["{corpus}", "-o", "{u}", "--clusters", "{c}", "--threshold", "1.5"],
            "threshold must be in (0, 1], got 1.5",
        ),
        (["{tmp}/x.csv", "-o", "{u}", "--clusters", "{c}"], "the CSV header has no 'text' column"),
    ],
)
def test_failures_exit_2_with_one_line(
    tmp_path: Path, corpus: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing input, an unwritable output or a wrong option: exit 2, one line, input intact."""
    before = corpus.read_bytes()
    (tmp_path / "x.csv").write_text("id,body\n1,a\n", encoding="utf-8")
    names = {
        "missing": str(tmp_path / "missing.jsonl"),
        "u": str(tmp_path / "u.jsonl"),
        "c": str(tmp_path / "c.jsonl"),
        "corpus": str(corpus),
        "tmp": str(tmp_path),
    }
    status, out, err = run(["dedup", *(a.format(**names) for a in argv)], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("neardup: error: ")
    assert message.format(**names) in err
    assert corpus.read_bytes() == before
    if argv and "missing" in argv[0]:
        assert not (tmp_path / "u.jsonl").exists()


def test_outputs_may_all_go_to_dev_null(
    tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """/dev/null is no file outputs write over each other in: any of them may go there."""
    clusters = tmp_path / "c.jsonl"
    status, _, err = run(
        ["dedup", str(corpus), "-o", os.devnull, "--clusters", str(clusters), "-q",
         "--duplicates-only", os.devnull, "--errors", os.devnull],
        capsys,
    )  # fmt: skip
    assert status == 0, err
    assert len(clusters.read_text(encoding="utf-8").splitlines()) == 6


def test_bad_option_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """``--num-perm 0`` is refused with exit status 2 and one line naming the setting;
    ``--num-perm many`` by the argument parser."""
    status, out, err = run(["dedup", "--sample", "--num-perm", "0"], capsys)
    assert status == 2 and out == ""
    assert err == "neardup: error: num_perm must be a power of two between 1 and 4096, got 0\n"
    with pytest.raises(SystemExit) as stop:
        main(["dedup", "--sample", "--num-perm", "many"])
    assert stop.value.code == 2
    assert "num_perm takes a whole number (int), not 'many'" in capsys.readouterr().err


# -- a real process --------------------------------------------------------------------------


def neardup(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``python3 -m neardup`` in a child process."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "neardup", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_subprocess_pipe(tmp_path: Path, corpus: Path) -> None:
    """``python3 -m neardup dedup - -o -``: a pipe in, the kept lines out, errors on stderr."""
    data = corpus.read_bytes() + b"[1, 2]\n"
    done = neardup("dedup", "-", "-o", "-", "--clusters", str(tmp_path / "c.jsonl"), stdin=data)
    assert done.returncode == 0, done.stderr
    lines = data.splitlines()
    assert done.stdout.splitlines() == [lines[0], lines[1], lines[3], lines[5]]
    assert len(read_jsonl(tmp_path / "c.jsonl")) == 6
    err = done.stderr.decode("utf-8")
    assert '{"line": 7, "id": null, "reason": "not a JSON object but an array"}' in err
    assert "7 in → 4 kept, 2 duplicates" in err


def test_subprocess_sample_and_missing_input(tmp_path: Path) -> None:
    """``python3 -m neardup dedup --sample`` works in a fresh process; a missing input exits 2."""
    done = neardup("dedup", "--sample")
    assert done.returncode == 0, done.stderr
    assert "story 1:" in done.stdout.decode("utf-8")
    done = neardup(
        "dedup",
        str(tmp_path / "nope.jsonl"),
        "-o",
        str(tmp_path / "u"),
        "--clusters",
        str(tmp_path / "c"),
    )
    assert done.returncode == 2
    assert (
        done.stderr.decode().strip()
        == f"neardup: error: cannot read {tmp_path / 'nope.jsonl'}: No such file or directory"
    )


def test_the_sample_report_marks_documents_kept_with_text_of_their_own() -> None:
    """A later document of a story that brings text of its own is listed as kept."""
    from neardup import Decision
    from neardup.records import Document
    from neardup.run import format_sample_report

    decided = [
        (Document("a", "excerpt", "A story"), Decision("a", False, None, "a", 0.0, None)),
        (
            Document("b", "full", "A story, in full"),
            Decision("b", False, None, "a", 1.0, "coverage", extends="a"),
        ),
        (Document("c", "copy", "A story"), Decision("c", True, "a", "a", 0.98, "coverage")),
    ]
    report = format_sample_report(decided)
    assert "1 document of a story seen before kept with text of its own" in report
    assert "+ kept  A story, in full" in report and "0.9800  A story" in report


def _six_records(folder: Path) -> Path:
    """A JSONL input of six records: a story, its reprint, another story, the first again,
    and two short replies."""
    source = folder / "in.jsonl"
    texts = [ZH_STORY, ZH_REPRINT, ZH_OTHER, ZH_STORY, "第 3 楼", "第 3 楼！"]
    source.write_text(
        "".join(
            json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(texts)
        ),
        encoding="utf-8",
    )
    return source


def test_the_batch_run_spares_the_garbage_collector_and_gives_it_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every FREEZE_EVERY + 1 documents the batch run takes what is alive out of the
    cyclic collector's sight (gc.freeze), and runs the collector less often; it gives both
    back when the run ends: a process that runs it (a test, a notebook) is left as it was;
    the outputs are the same."""
    import gc

    from neardup.run import local

    source = _six_records(tmp_path)
    plain, _, _ = dedup(tmp_path, source, capsys)
    frozen: list[int] = []
    monkeypatch.setattr(local, "FREEZE_EVERY", 1)  # every second document
    freeze = gc.freeze

    during: list[tuple[int, ...]] = []

    def counted() -> None:
        freeze()
        frozen.append(gc.get_freeze_count())
        during.append(gc.get_threshold())

    monkeypatch.setattr(gc, "freeze", counted)
    gc.unfreeze()  # nothing frozen before the run (Python 3.12 starts with a few hundred)
    thresholds = gc.get_threshold()
    spared, _, _ = dedup(tmp_path, source, capsys)
    assert len(frozen) == 3 and min(frozen) > 0  # objects were hidden during the run
    assert gc.get_freeze_count() == 0  # and given back at its end
    assert set(during) == {local.BATCH_THRESHOLDS}  # run less often during the run
    assert gc.get_threshold() == thresholds  # and as it was after
    assert spared == plain


def test_the_batch_run_leaves_objects_frozen_before_it_frozen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that froze objects itself (``gc.freeze``, as a server does before it forks;
    Python 3.12 starts with a few hundred of its own frozen) finds them frozen after a batch
    run: the run, which could only give back everything frozen, freezes nothing then, and
    still runs the collector less often; the outputs are the same."""
    import gc

    from neardup.run import local

    source = _six_records(tmp_path)
    plain, _, _ = dedup(tmp_path, source, capsys)
    monkeypatch.setattr(local, "FREEZE_EVERY", 1)
    during: list[tuple[int, ...]] = []
    spare = local._collector_spared

    @contextmanager
    def watched() -> Iterator[Callable[[], None]]:
        with spare() as inner:

            def spared() -> None:
                inner()
                during.append(gc.get_threshold())

            yield spared

    monkeypatch.setattr(local, "_collector_spared", watched)
    keep = [[i] for i in range(10)]  # objects of the program's own (lists: tracked), frozen
    assert all(gc.is_tracked(o) for o in keep)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen >= len(keep)
        assert not {id(o) for o in gc.get_objects()} & {id(o) for o in keep}
        spared, _, _ = dedup(tmp_path, source, capsys)
        assert gc.get_freeze_count() <= frozen  # none more (a few died and left)
        seen = {id(o) for o in gc.get_objects()}  # what the collector sees: not frozen
        assert not seen & {id(o) for o in keep}  # the program's objects are still frozen
        assert len(during) == 3 and set(during) == {local.BATCH_THRESHOLDS}
        assert spared == plain
    finally:
        gc.unfreeze()


def test_batch_run_lets_copies_go_and_writes_the_same() -> None:
    """Once a document is decided a copy, the batch run lets its text and raw line go (a
    copy is never written to UNIQUE); the kept ones keep their raw line."""
    from neardup.batch import BatchRun
    from neardup.engine import DedupConfig
    from neardup.records import Document
    from neardup.run.local import _release_copies

    texts = [ZH_STORY, ZH_REPRINT, ZH_OTHER, ZH_STORY]
    docs = [
        Document(str(i), t, raw=json.dumps({"id": i, "text": t}, ensure_ascii=False))
        for i, t in enumerate(texts)
    ]
    with BatchRun(DedupConfig(), workers=1, chars=None) as run:
        for d in docs:
            run.add(d.id, d.text)
        result = run.finish()
        released = _release_copies(docs, run, 0)
    assert released == len(docs)
    dropped = [d.is_duplicate for d in result.decisions]
    assert dropped == [False, True, False, True]
    assert [(d.raw is None, d.text == "") for d in docs] == [(x, x) for x in dropped]


def test_the_batch_run_is_told_the_size_of_the_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command tells the batch run how many bytes its inputs hold on disk, so that the
    sketch workers of a large input start with its first chunk (BatchRun.POOL_BYTES)."""
    from neardup.batch import BatchRun
    from neardup.run import local

    told: list[int | None] = []

    class Told(BatchRun):
        def __init__(self, *args: Any, **kw: Any) -> None:
            told.append(kw.get("input_bytes"))
            super().__init__(*args, **kw)

    monkeypatch.setattr(local, "BatchRun", Told)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps({"id": "1", "text": ZH_STORY}, ensure_ascii=False) + "\n", "utf-8")
    b.write_text(json.dumps({"id": "2", "text": ZH_OTHER}, ensure_ascii=False) + "\n", "utf-8")
    out = ["-o", str(tmp_path / "u.jsonl"), "--clusters", str(tmp_path / "c.jsonl"), "-q"]
    assert main(["dedup", str(a), str(b), *out]) == 0
    assert told == [a.stat().st_size + b.stat().st_size]


# -- the exit --------------------------------------------------------------------------------

#: ``neardup ARGS`` through the command's own entry point, saying whether the interpreter's
#: usual exit ran (its atexit hooks); ``traced`` first: under a tracer, as coverage runs it
_WATCHED_EXIT = """
import atexit, sys
atexit.register(lambda: print("the interpreter's exit ran", file=sys.stderr))
args = sys.argv[1:]
if args[:1] == ["traced"]:
    sys.settrace(lambda *a: None)
    args = args[1:]
from neardup.cli import run
sys.argv = ["neardup", *args]
run()
"""


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WATCHED_EXIT, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("traced", [False, True])
def test_a_finished_run_ends_at_once_with_every_output_written(
    tmp_path: Path, traced: bool
) -> None:
    """A local run that finished ends the process without the interpreter's teardown (its
    atexit hooks do not run) — every output written, its exit status kept (4 here: more
    bad records than --max-errors), UNIQUE on standard output included; under a tracer
    (coverage) the exit is the usual one, with the same outputs."""
    src = write_lines(
        tmp_path / "in.jsonl", [*(json_line(r) for r in CORPUS), b"{not json", b"[1, 2]"]
    )
    out = [str(tmp_path / name) for name in ("clusters.jsonl", "errors.jsonl", "summary.json")]
    done = _command(
        *(["traced"] if traced else []),
        "dedup", str(src), "-o", "-", "--clusters", out[0], "--errors", out[1],
        "--json-summary", out[2], "--max-errors", "1", "-q",
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert ("the interpreter's exit ran" in done.stderr) is traced
    kept = [json.loads(line) for line in done.stdout.splitlines()]
    clusters = read_jsonl(Path(out[0]))
    assert len(clusters) == len(CORPUS)
    assert len(kept) == sum(1 for c in clusters if c["duplicate_of"] is None) < len(CORPUS)
    assert len(read_jsonl(Path(out[1]))) == 2
    assert json.loads(Path(out[2]).read_text("utf-8"))["status"] == 4


def test_a_run_on_a_store_and_a_failed_run_exit_as_usual(tmp_path: Path, corpus: Path) -> None:
    """A store closes as it always does, through the interpreter's exit; so does a run that
    failed (exit status 2), and a comparison that read a store's chrome."""
    db = str(tmp_path / "crawl.db")
    clusters = str(tmp_path / "clusters.jsonl")
    stored = _command("dedup", str(corpus), "--db", db, "-o", "-", "--clusters", clusters, "-q")
    assert stored.returncode == 0, stored.stderr
    assert "the interpreter's exit ran" in stored.stderr
    assert len(read_jsonl(Path(clusters))) == len(CORPUS)
    failed = _command("dedup", str(tmp_path / "missing.jsonl"), "-o", "-", "--clusters", clusters)
    assert failed.returncode == 2
    assert "the interpreter's exit ran" in failed.stderr
    compared = _command("compare", "--db", db, ZH_STORY, ZH_REPRINT)
    assert compared.returncode == 0, compared.stderr
    assert "the interpreter's exit ran" in compared.stderr
    alone = _command("compare", "--json", ZH_STORY, ZH_REPRINT)
    assert alone.returncode == 0 and json.loads(alone.stdout)
    assert "the interpreter's exit ran" not in alone.stderr
