"""Loading the kernels does not import SciPy for numba's BLAS probe (0.3 s of a batch run's
start where SciPy is installed), and leaves numba's own functions as they were."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")


def _run(code: str) -> str:
    env = {**os.environ, "NEARDUP_KERNELS": "on"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_loading_the_kernels_skips_numbas_blas_probe() -> None:
    code = (
        "import sys\n"
        "from neardup.engine import DedupConfig\n"
        "from neardup.engine.warm import load_kernels\n"
        "loaded = load_kernels(DedupConfig())\n"
        "from numba.np import arraymath, linalg\n"
        "real = linalg.ensure_blas.__module__ == 'numba.np.linalg'\n"
        "print(loaded, arraymath._HAVE_BLAS, 'scipy.linalg' in sys.modules, real,\n"
        "      arraymath.ensure_blas is linalg.ensure_blas)\n"
    )
    assert _run(code) == "True False False True True"


def test_numpy_support_loaded_before_is_left_alone() -> None:
    code = (
        "from numba.np import arraymath\n"
        "have = arraymath._HAVE_BLAS\n"
        "import neardup.kernels._jit as jit\n"
        "print(jit._numpy_support(), arraymath._HAVE_BLAS == have)\n"
    )
    assert _run(code) == "False True"


def test_prefetch_compiles_for_every_table_and_index_and_changes_nothing() -> None:
    """``prefetch`` (LLVM's ``llvm.prefetch``, which this numba and LLVM must accept) of
    every element of tables of the kernels' types, by indexes of their types — the first,
    the last, and a table of one element — leaves the values read as they are."""
    import numba
    import numpy as np

    from neardup.kernels._jit import prefetch

    @numba.njit
    def asked_and_summed(table, at):  # type: ignore[no-untyped-def]
        total = 0
        for i in range(len(at)):
            prefetch(table, at[i])
            if i + 1 < len(at):
                prefetch(table, at[i + 1])
            total += table[at[i]]
        return total

    for dtype in (np.uint8, np.uint32, np.int64, np.uint64):
        for size in (1, 7, 1 << 20):
            table = (np.arange(size) % 251).astype(dtype)
            for index in (np.int64, np.uint32, np.uint64, np.intp):
                at = np.array([0, size - 1, size // 2, 0], dtype=index)
                assert asked_and_summed(table, at) == int(table[at.astype(np.int64)].sum())
