"""Loading the compiled kernels ahead of the work: a process about to fork its sketch workers
(the batch run) or about to serve for a long time (``neardup serve``) loads them once, so no
worker loads them again and no request waits while they load (tested in
``tests/kernels/test_service_start.py`` and ``tests/kernels/test_batch.py``).
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from .compact import alike, compact, encode_counts, encode_slots, stand_in
from .config import DedupConfig
from .decide import evidence
from .sketches import make_sketches
from .verify import verify

__all__ = ["load_kernels"]

#: Two short related texts (Chinese and English, figures, a boilerplate line, and in the first
#: a double space for the whitespace fold) that take every kernel a run uses through its
#: code, with the argument types of a real run; and an ASCII text to fold (its bytes, not
#: its code points: ``normalize.fold_whitespace``).
_WARM_UP = (
    "来源：示例网\n临江地铁5号线一期今日开通运营，全长25.6公里。 The line  opens today.",
    "临江地铁5号线一期今日开通运营，全长25.6公里，设站18座。 The line opens today.",
)
_WARM_UP_ASCII = "The line  opens today."
#: And a text that NFKC's compiled table does not hold (a combining mark): normalized by
#: the reference steps, its fold the compiled fold of its own code points
_WARM_UP_MARKED = "临江地铁e\u0301  今日开通。"


def load_kernels(cfg: DedupConfig, *, store: bool = True) -> bool:
    """Load the compiled kernels in this process, if ``NEARDUP_KERNELS`` and numba allow
    them for a long run (:func:`neardup.kernels.wanted` of a run's worth of work), by
    sketching and verifying a small pair: importing numba and the machine code it cached,
    about 0.5–1 s of CPU. Whether they are loaded now. ``store=False``: not the kernels
    only a store and the evidence call (a batch run's workers never call them, and its
    main process loads the evidence's at its first call, if it makes one: 0.03 s less
    before the workers start).

    The pair is verified without a template guard: the kernels take a guard's table as an
    argument of the same type either way, and a guard of its own would be a table of 64
    MiB touched in some thirty huge pages, each zeroed at its first touch (0.25 s on a
    virtual machine that backs its memory only then), for nothing: the story-counting
    kernels load at a run's first story instead."""
    if not kernels.wanted(kernels.AUTO_AT):
        return False
    for name in ("_sketch", "_pairs", "_text", "_codes"):
        kernels.load(name)
    a, b, _, _ = make_sketches([*_WARM_UP, _WARM_UP_ASCII, _WARM_UP_MARKED], cfg)
    verify(b, a, cfg, None)
    verify(a, b, cfg, None)
    if not store:
        return True
    # what only a compact store and the evidence call: the ranking and the stand-in of a
    # longer text (one of a short text keeps every code), the passages two texts share and
    # a story's slots as a compact store logs them
    long_a, long_b = make_sketches([" ".join([t] * 4) for t in _WARM_UP], cfg)
    stored = compact(long_b)
    alike(long_a, stored)
    verify(long_a, stand_in(stored, long_a, cfg), cfg, None)
    evidence(long_a, long_b)
    encode_slots(long_a.vocab)
    # and a saved chrome table's coding (its non-zero slots), which a store's first save
    # would otherwise load in its atomic section
    table = np.zeros(64, dtype=np.uint8)
    table[[3, 9]] = (1, 2)
    encode_counts(table)
    return True
