"""The kernels' machine code loads from numba's cache without numba's registries (only its
runtime), computes what numpy computes, and a kernel called with new argument types still
compiles (numba's compiler loads the registries itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

_SKETCH_AND_VERIFY = (
    "from neardup.engine import DedupConfig\n"
    "from neardup.engine.sketches import make_sketches\n"
    "from neardup.engine.verify import verify\n"
    "cfg = DedupConfig()\n"
    "a, b = make_sketches(['临江地铁5号线一期今日开通运营，全长25.6公里，设站18座。' * 3,\n"
    "                      '临江地铁5号线一期今日开通运营，全长25.6公里。 The line opens.' * 3], cfg)\n"
    "v = verify(a, b, cfg)\n"
    "print(a.signature.tolist() == b.signature.tolist(), round(v.score, 6), v.is_duplicate,\n"
    "      a.vocab.tolist()[:5])\n"
)


def _run(code: str, cache: Path, kernels: str = "on") -> str:
    env = {**os.environ, "NEARDUP_KERNELS": kernels, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@pytest.mark.slow
def test_cached_kernels_load_without_numbas_registries(tmp_path: Path) -> None:
    cache = tmp_path / "numba-cache"
    load = (
        "import sys\n"
        "from neardup.engine import DedupConfig\n"
        "from neardup.engine.warm import load_kernels\n"
        "print(load_kernels(DedupConfig()),\n"
        "      'numba.np.polynomial.polynomial_core' in sys.modules)\n"
    )
    reference = _run(_SKETCH_AND_VERIFY, cache, kernels="off")
    # an empty cache: every kernel the warm-up and the pair call compiles, and numba's
    # compiler loads its registries (which import its polynomial support)
    assert _run(load + _SKETCH_AND_VERIFY, cache) == "True True\n" + reference
    assert any(cache.rglob("*.nbi"))
    # the same from the cache, the registries never loaded
    assert _run(load + _SKETCH_AND_VERIFY, cache) == "True False\n" + reference
    # a kernel called with argument types not in the cache compiles, after quick loads
    grown = _run(
        "import numpy as np\n"
        "from neardup.engine import DedupConfig\n"
        "from neardup.engine.warm import load_kernels\n"
        "from neardup.kernels import _pairs\n"
        "load_kernels(DedupConfig())\n"
        "counts = np.zeros(1 << 12, dtype=np.uint8)\n"
        "_pairs.count_story(counts, np.array([64, 64, 128, 70000], dtype=np.uint64))\n"
        "print(np.flatnonzero(counts).tolist(), counts[counts > 0].tolist())\n",
        cache,
    )
    assert grown == "[1, 2, 1093] [1, 1, 1]"
