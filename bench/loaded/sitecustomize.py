"""A chrome table loaded at random, for any command: ``NEARDUP_BENCH_LOAD=4
PYTHONPATH=bench/loaded python -m neardup dedup …`` starts every
:class:`~neardup.engine.templates.CommonShingles` of the process with a Poisson number of
stories of mean 4 in each slot (seeded), as that many unrelated stories leave there.
``bench/guard_load.py`` uses :func:`loading` for its runs; measurement only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def loading(load: float, seed: int = 1) -> Callable[[], None]:
    """Make every CommonShingles made from now on start at ``load``; the undo."""
    import numpy as np

    from neardup.engine.templates import SLOT_BITS, CommonShingles

    background = np.minimum(np.random.default_rng(seed).poisson(load, 1 << SLOT_BITS), 255)
    background = background.astype(np.uint8)
    made = CommonShingles.__init__

    def start_loaded(self: CommonShingles, **kw: Any) -> None:
        made(self, **kw)
        self.counts[:] = background

    CommonShingles.__init__ = start_loaded  # type: ignore[method-assign]

    def undo() -> None:
        CommonShingles.__init__ = made  # type: ignore[method-assign]

    return undo


if float(os.environ.get("NEARDUP_BENCH_LOAD") or 0) > 0:
    loading(float(os.environ["NEARDUP_BENCH_LOAD"]))
