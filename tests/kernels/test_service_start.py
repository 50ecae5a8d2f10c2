"""A service loads the compiled kernels as it starts (it runs long), not in the middle of
the request that would cross their threshold; a short command never loads them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")
pytest.importorskip("fastapi")

_SERVE = """
from fastapi.testclient import TestClient
from neardup import kernels
from neardup.service import create_app
app = create_app(allowed_hosts=["testserver"])
before = kernels.loaded()
with TestClient(app) as client:  # runs the lifespan: the service starts
    during = kernels.loaded()
    client.post("/v1/documents", json={"id": "a", "text": "北京地铁十九号线今天开通运营"})
print(before, during)
"""


def _run(code: str, mode: str) -> str:
    env = {**os.environ, "NEARDUP_KERNELS": mode}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_service_loads_the_kernels_as_it_starts_under_auto() -> None:
    assert _run(_SERVE, "auto") == "False True"


def test_off_means_never() -> None:
    assert _run(_SERVE, "off") == "False False"


def test_a_short_library_run_does_not_load_them() -> None:
    code = (
        "from neardup import Deduper, kernels\n"
        "with Deduper() as dd:\n"
        "    dd.check_and_add('a', '北京地铁十九号线今天开通运营，全长二十二公里')\n"
        "print(kernels.loaded())\n"
    )
    assert _run(code, "auto") == "False"


def test_the_warm_up_compiles_what_a_store_save_calls() -> None:
    """Loading the kernels for a long run also readies the coding of a saved chrome table
    (its non-zero slots, the Rice body), which a store's first save calls in its atomic
    section, where every other process waits."""
    code = (
        "from neardup.engine import DedupConfig\n"
        "from neardup.engine.warm import load_kernels\n"
        "from neardup.kernels import _codes, _pairs\n"
        "print(load_kernels(DedupConfig()), bool(_pairs.nonzero_slots.signatures),"
        " bool(_codes.rice_body.signatures))\n"
    )
    assert _run(code, "on") == "True True True"


def test_the_warm_up_readies_the_fold_of_both_kinds_of_text() -> None:
    """A forked sketch worker folds ASCII texts as bytes and others as code points — those
    the compiled NFKC made (an array it writes to) or, for a text its table does not hold,
    the text's own (read-only): the warm-up loads the three versions of the fold, so no
    worker loads one again."""
    code = (
        "from neardup.engine import DedupConfig\n"
        "from neardup.engine.warm import load_kernels\n"
        "from neardup.kernels import _text\n"
        "load_kernels(DedupConfig(), store=False)\n"
        "print(sorted(str(s[0].dtype) for s in _text.fold_whitespace.signatures))\n"
    )
    assert _run(code, "on") == "['uint32', 'uint32', 'uint8']"
