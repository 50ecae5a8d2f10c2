"""Progress that tells where the run is: bytes read of the total, records (of the total when
Parquet's metadata has it), percentage, rate, ETA and the stage running, on a terminal or as
JSON lines (``--progress json``); quiet otherwise."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from neardup.run import Progress

from .test_cli_dedup import CORPUS, json_line, run, write_lines

pa = pytest.importorskip(
    "pyarrow", reason="the progress of Parquet inputs needs pyarrow: pip install 'neardup[parquet]'"
)
pq = pytest.importorskip("pyarrow.parquet")


def progress_lines(err: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in err.splitlines() if line.startswith('{"stage"')]


def test_progress_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--progress json: a JSON line at each stage and as it goes; bytes of the total size."""
    source = write_lines(tmp_path / "in.jsonl", [json_line(r) for r in CORPUS] * 1)
    argv = ["dedup", str(source), "-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c")]
    status, _, err = run([*argv, "--progress", "json"], capsys)
    assert status == 0
    lines = progress_lines(err)
    assert [line["stage"] for line in lines] == ["read", "dedup", "write", "done"]
    read = lines[0]
    assert read["total_bytes"] == source.stat().st_size and read["bytes"] == 0
    assert "deduplicating 6 documents" in str(lines[1]["note"])
    assert lines[2]["total_records"] == 6
    assert "\r" not in err  # no terminal drawing in JSON mode


def test_progress_line_on_a_terminal() -> None:
    """The drawn line: bytes of the total, percentage, records, rate, ETA, decided."""
    out = io.StringIO()
    p = Progress(out, enabled=True, interval=0.0)
    p.watch(lambda: {"bytes": 41_200_000, "total_bytes": 96_300_000, "decided": 16_000})
    p.start("read")
    p.advance(18_204)
    line = out.getvalue().rsplit("\r\x1b[K", 1)[-1]
    assert line.startswith("read     41.2 MB of 96.3 MB  42.8%  18,204 records  ")
    assert "/s  ETA " in line and line.endswith("decided 16,000")


def test_parquet_progress_counts_rows_of_the_total(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Parquet's metadata gives the rows to read: the percentage is of records."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": r["id"], "text": r["text"]} for r in CORPUS]), path)
    argv = ["dedup", str(path), "-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c")]
    status, _, err = run([*argv, "--progress", "json"], capsys)
    assert status == 0
    assert progress_lines(err)[0]["total_records"] == 6


def test_no_progress_by_default_off_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_lines(tmp_path / "in.jsonl", [json_line(r) for r in CORPUS])
    argv = ["dedup", str(source), "-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c")]
    for extra in ([], ["--no-progress"], ["--progress", "off"]):
        _, _, err = run([*argv, *extra], capsys)
        assert "\r" not in err and not progress_lines(err)
    _, _, err = run(["dedup", "--progress", str(source), *argv[2:]], capsys)  # --progress INPUT
    assert "\r\x1b[Kdedup" in err
