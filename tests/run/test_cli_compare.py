"""``neardup compare``: JSON and table output, texts from arguments, files and stdin, errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import neardup
from neardup.cli import main
from neardup.measures import METHODS

PAIRS = [
    pytest.param(
        "据报道，北京今天天气晴朗，适合出游。", "北京今天天气晴朗，适合出游！", id="chinese"
    ),
    pytest.param(
        "Reuters: the central bank raised rates on Tuesday.",
        "The central bank raised rates on Tuesday, officials said.",
        id="english",
    ),
    pytest.param("新闻：neardup 2.0版本发布了", "neardup 2.0版本发布了，速度很快", id="mixed"),
]


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    """Run ``neardup compare --json`` in-process and parse its one line of output."""
    assert main(["compare", "--json", *argv]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    result = json.loads(out)
    assert isinstance(result, dict)
    return result


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_json_has_the_ten_measures(a: str, b: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints one object whose keys are exactly the measure names and values floats."""
    result = run_json([a, b], capsys)
    assert list(result) == list(METHODS)
    for name, score in result.items():
        assert isinstance(score, float)
        assert 0.0 <= score <= 1.0
        assert score == pytest.approx(neardup.similarity(a, b, method=name))


def test_at_path_reads_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """@path compares the file's contents, the same as giving the text itself."""
    a, b = "北京今天天气晴朗 The weather is fine", "北京今天天气晴朗 the weather is fine!"
    path = tmp_path / "a.txt"
    path.write_text(a, encoding="utf-8")
    assert run_json([f"@{path}", b], capsys) == run_json([a, b], capsys)


def test_at_path_with_invalid_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that is not valid UTF-8 is read with replacement characters, not a crash, and
    a warning line says where it is not (a GBK file compared as garbage said nothing)."""
    path = tmp_path / "bad.txt"
    path.write_bytes("北京天气".encode() + b"\xff\xfe" + b"news")
    assert main(["compare", "--json", f"@{path}", "北京天气news"]) == 0
    out, err = capsys.readouterr()
    assert 0.0 < json.loads(out)["levenshtein"] < 1.0
    assert err == (
        f"neardup: warning: {path}: not valid UTF-8: byte 0xFF at byte 13; each byte that is "
        "not UTF-8 is compared as U+FFFD\n"
    )


def test_at_path_reads_html_in_its_declared_charset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An HTML file is read in the charset its <meta> declares, as dedup reads a folder's."""
    text = "北京地铁十九号线今天开通运营"
    path = tmp_path / "page.html"
    path.write_bytes(b'<html><head><meta charset="gbk"></head><body>' + text.encode("gbk"))
    assert run_json([f"@{path}", text], capsys)["levenshtein"] == 1.0
    assert capsys.readouterr().err == ""


def test_a_text_that_names_a_file_is_compared_as_a_text_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``neardup compare a.txt b.txt`` compares the two names: a note says @a.txt reads it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("北京地铁十九号线今天开通运营", encoding="utf-8")
    assert main(["compare", "--json", "a.txt", "b.txt"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["levenshtein"] == pytest.approx(0.8)  # "a.txt" against "b.txt"
    assert err == (
        "neardup: note: 'a.txt' is compared as a text; a file of that name is here: @a.txt "
        "compares what it holds\n"
    )


def test_dash_reads_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """- reads one of the texts from standard input."""
    text = "新闻：neardup 2.0版本发布了"
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    from_stdin = run_json(["-", "neardup 2.0版本发布了"], capsys)
    assert from_stdin == run_json([text, "neardup 2.0版本发布了"], capsys)


def test_two_dashes_is_an_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only one text can come from standard input."""
    monkeypatch.setattr(sys, "stdin", io.StringIO("北京"))
    assert main(["compare", "-", "-"]) != 0
    err = capsys.readouterr().err
    assert "standard input" in err


def test_raw_skips_normalization(capsys: pytest.CaptureFixture[str]) -> None:
    """--raw compares the texts as given; without it width, case and script are folded."""
    a, b = "ＮＥＷＳ 漢語", "news 汉语"
    normalized = run_json([a, b], capsys)
    raw = run_json(["--raw", a, b], capsys)
    assert normalized["levenshtein"] == 1.0
    assert raw["levenshtein"] < 1.0
    assert raw == pytest.approx(
        {name: neardup.similarity(a, b, method=name, processor=None) for name in METHODS}
    )


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_file(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unreadable @path exits non-zero with one line on standard error naming the file."""
    path = tmp_path / "nope.txt" if kind == "missing" else tmp_path
    status = main(["compare", "--json", f"@{path}", "北京"])
    captured = capsys.readouterr()
    assert status != 0
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("neardup: error:")
    assert str(path) in lines[0]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_table_output(a: str, b: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The table names every measure and marks the shared passage in both texts."""
    assert main(["compare", a, b]) == 0
    out = capsys.readouterr().out
    for name in METHODS:
        assert name in out
    assert "shared passages:" in out
    passage = neardup.compare(a, b).passages[0].text
    assert f"[1>{passage}<1]" in out
    assert out.count("[1>") == 2  # once in A, once in B
    assert "\x1b[" not in out  # no colour when not on a terminal


def test_table_output_without_shared_passage(capsys: pytest.CaptureFixture[str]) -> None:
    """Texts with nothing in common still print the table, with no marks."""
    assert main(["compare", "北京天气", "the news"]) == 0
    out = capsys.readouterr().out
    assert "shared passages: 0" in out
    assert "[1>" not in out


def test_subprocess_json() -> None:
    """``python -m neardup compare --json`` works as a real command."""
    a, b = "北京今天天气晴朗，适合出游。", "北京今天天气晴朗，适合出游！"
    env = {**os.environ, "PYTHONUTF8": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "neardup", "compare", "--json", a, b],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert list(result) == list(METHODS)
    assert all(isinstance(v, float) for v in result.values())
    assert result["levenshtein"] > 0.9


def test_a_reply_over_a_quote_is_shown_as_extending(capsys: pytest.CaptureFixture[str]) -> None:
    """A short answer over the whole of A quoted: the table says the quoted lines are not
    B's own text, and that dedup keeps B."""
    import random

    from ..engine.test_real_crawls import short_answer

    _, (parent, reply, _) = short_answer(random.Random(14))
    assert main(["compare", parent, reply]) == 0
    out = capsys.readouterr().out
    assert "b extends a with text of its own (dedup keeps it)" in out
    assert "B's quoted lines (starting with >," in out


def test_two_long_texts_are_compared_by_every_measure_that_can(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two articles of some 7,500 characters each (one in a hundred of a real crawl's are
    longer) are past mcc's and contiguity's limit of cells: the other measures, the passages
    and the verdict are shown, those two named as not computed (the command failed with
    mcc's error before)."""
    import random

    from tests.synth import story

    rng = random.Random(5)
    a = story(rng, 260)
    b = "转载：" + a[: len(a) // 2] + story(rng, 1) + a[len(a) // 2 :]
    assert len(a) * len(b) > 50_000_000
    (tmp_path / "a.txt").write_text(a, encoding="utf-8")
    (tmp_path / "b.txt").write_text(b, encoding="utf-8")
    result = run_json([f"@{tmp_path / 'a.txt'}", f"@{tmp_path / 'b.txt'}"], capsys)
    assert set(METHODS) - set(result) == {"mcc", "contiguity"}
    assert result["coverage"] > 0.9
    assert main(["compare", f"@{tmp_path / 'a.txt'}", f"@{tmp_path / 'b.txt'}"]) == 0
    out, err = capsys.readouterr()
    assert "mcc                   —  not computed: the texts are too long for it" in out
    assert "dedup (B after A): the same story" in out
    assert "neardup: note: contiguity not computed: contiguity compares every offset" in err
    assert neardup.compare(a, b).skipped.keys() == {"mcc", "contiguity"}
