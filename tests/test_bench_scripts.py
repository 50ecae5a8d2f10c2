"""The benchmarks on a machine without the shared corpora (``../shared``, which a user's
clone does not have): each says what is missing in one line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
#: The benchmarks that read the shared corpora (the others time neardup alone, or peers)
READS_SHARED = [
    "decisions", "dedup_speed", "figures", "guard_load", "guard_moves", "heldout", "measures",
    "profile_split", "quality", "real", "scale", "segmenters", "service_speed", "spark_speed",
    "store_quality", "store_speed", "t2s_lines", "titles",
]  # fmt: skip


def test_every_benchmark_that_reads_the_corpora_is_listed() -> None:
    """A new benchmark that reads ../shared joins the test below."""
    readers = {
        p.stem
        for p in BENCH.glob("*.py")
        if not p.stem.startswith("_")
        and any(w in p.read_text(encoding="utf-8") for w in ("shared_path", "read_jsonl"))
    }
    assert readers <= set(READS_SHARED), readers - set(READS_SHARED)


@pytest.mark.parametrize("name", READS_SHARED)
def test_a_benchmark_without_the_corpora_says_so_in_one_line(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "NEARDUP_BENCH_SHARED": str(tmp_path)}  # an empty folder
    env["PYTHONPATH"] = os.pathsep.join(
        [str(BENCH.parent / "src"), *filter(None, [env.get("PYTHONPATH")])]
    )
    r = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py")],
        capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode != 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    if "is not installed" in last:  # a package of the bench extra, said before the data
        assert last.startswith("error: ") and "pip install -e '.[bench]'" in last, r.stderr
    else:
        assert last.startswith("error: bench data not found: ../shared/"), r.stderr
        assert str(tmp_path) in last
