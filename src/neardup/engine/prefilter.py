"""The MinHash prefilter: candidates that could not reach the threshold skip verification.

The share ``j`` of equal signature values estimates the Jaccard of two shingle sets; with the
sets' sizes ``a`` (the shorter text's) and ``b`` it estimates the share of the shorter set
found in the other, ``j (a + b) / ((1 + j) min(a, b))``. A pair estimated below
``DedupConfig.prefilter`` is not verified. One formula, in two forms that give the same
floating-point answers: :func:`estimated_containment` for one pair, :func:`may_verify` for
many pairs at once (and :func:`may_verify_counts` for callers that counted the equal values
themselves, such as the Spark engine).

>>> from neardup.engine import DedupConfig, make_sketch
>>> cfg = DedupConfig()
>>> a = make_sketch("北京地铁十九号线今天开通运营，全长二十二公里，设车站十座，日均客流预计超过十万人次。", cfg)
>>> estimated_containment(a, a)
1.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .config import DedupConfig

if TYPE_CHECKING:
    from .sketches import Sketch

__all__ = ["estimated_containment", "may_verify", "may_verify_counts"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


def estimated_containment(short: Sketch, other: Sketch) -> float:
    """The share of the shorter text's shingles in the other, as MinHash estimates it."""
    j = float(np.count_nonzero(short.signature == other.signature)) / len(short.signature)
    a, b = len(short.vocab), len(other.vocab)
    if a == 0:
        return 0.0
    return min(1.0, j * (a + b) / ((1.0 + j) * min(a, b)))


def may_verify_counts(
    agree: F64,
    vocab_a: I64,
    units_a: I64,
    vocab_b: I64,
    units_b: I64,
    cfg: DedupConfig,
) -> npt.NDArray[np.bool_]:
    """For many pairs (a, b): False where the prefilter rejects the pair, given the share of
    equal signature values ``agree`` (equal counts / signature length) and each side's
    vocabulary size and units. Pairs compared as titles, and pairs with an empty side,
    always pass (verification decides them otherwise). A larger ``agree`` never turns a
    pass into a rejection, so counts taken on a prefix of each value (which can only agree
    more often) give a superset of the passes."""
    title = np.minimum(units_a, units_b) < cfg.short_units
    empty = (units_a == 0) | (units_b == 0)
    a = np.where(units_a <= units_b, vocab_a, vocab_b)  # the shorter text's
    b = np.where(units_a <= units_b, vocab_b, vocab_a)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.minimum(1.0, agree * (a + b) / ((1.0 + agree) * np.minimum(a, b)))
    est = np.where(a == 0, 0.0, est)
    out: npt.NDArray[np.bool_] = title | empty | ~(est < cfg.prefilter)
    return out


def may_verify(
    later: tuple[U64, I64, I64],
    earlier: tuple[U64, I64, I64],
    cfg: DedupConfig,
) -> npt.NDArray[np.bool_]:
    """For many candidate pairs at once, given each side's (signatures, vocabulary sizes,
    units): False where :func:`~neardup.engine.verify` (later, earlier) rejects the pair on
    the MinHash estimate alone, True otherwise (the same floating-point steps as
    :func:`estimated_containment`, so the same answers)."""
    sig_a, vocab_a, units_a = later
    sig_b, vocab_b, units_b = earlier
    agree = np.count_nonzero(sig_a == sig_b, axis=1) / sig_a.shape[1]
    return may_verify_counts(agree, vocab_a, units_a, vocab_b, units_b, cfg)
