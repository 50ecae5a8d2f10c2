"""A batch run whose sketch workers fork after the kernels are loaded decides as numpy does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys
sys.path.insert(0, {tests!r})
from synth import corpus
from neardup import dedup_batch, kernels
rows = corpus(7, 30, 3)
result = dedup_batch([r[0] for r in rows], [r[1] for r in rows], workers=2, chunk=16)
print(json.dumps([kernels.loaded(), [(d.id, d.duplicate_of, d.cluster, d.extends, round(d.score, 6)) for d in result.decisions]]))
"""


def run(mode: str) -> tuple[bool, list[list[object]]]:
    """Whether the process loaded the kernels, and its decisions."""
    env = {**os.environ, "NEARDUP_KERNELS": mode, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(tests=str(ROOT / "tests"))],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    loaded, decisions = json.loads(out)
    return loaded, decisions


def test_forked_workers_decide_as_numpy() -> None:
    """auto loads the kernels before the workers fork; the decisions are numpy's."""
    loaded, fast = run("auto")
    assert loaded
    assert run("off") == (False, fast)
