"""Loading the compiled kernels ahead of the work: a process about to fork its sketch workers
(the batch run) or about to serve for a long time (``neardup serve``) loads them once, so no
worker loads them again and no request waits while they load (tested in
``tests/kernels/test_service_start.py`` and ``tests/kernels/test_batch.py``).
"""

from __future__ import annotations

from .. import kernels
from .config import DedupConfig
from .sketches import make_sketches
from .templates import CommonShingles
from .verify import verify

__all__ = ["load_kernels"]

#: Two short related texts (Chinese and English, figures, a boilerplate line) that take every
#: kernel a run uses through its code, with the argument types of a real run.
_WARM_UP = (
    "来源：示例网\n临江地铁5号线一期今日开通运营，全长25.6公里。 The line opens today.",
    "临江地铁5号线一期今日开通运营，全长25.6公里，设站18座。 The line opens today.",
)


def load_kernels(cfg: DedupConfig) -> bool:
    """Load the compiled kernels in this process, if ``NEARDUP_KERNELS`` and numba allow
    them for a long run (:func:`neardup.kernels.wanted` of a run's worth of work), by
    sketching and verifying a small pair: importing numba and the machine code it cached,
    about 0.5–1 s of CPU. Whether they are loaded now."""
    if not kernels.wanted(kernels.AUTO_AT):
        return False
    for name in ("_sketch", "_pairs", "_text"):
        kernels.load(name)
    a, b = make_sketches(list(_WARM_UP), cfg)
    guard = CommonShingles.of(cfg)
    guard.add(a.vocab)
    verify(b, a, cfg, guard)
    verify(a, b, cfg, guard)
    return True
