"""mcc, "max common characters": the best offset's count of agreeing characters / shorter length.

Lay one string over the other at every offset (each diagonal of the match matrix), count the
positions where the characters agree, contiguous or not, and take the best offset.
Vectorized over all offsets at once (numpy), bounded by ``MAX_CELLS``.

>>> round(normalized_similarity("abcdef", "abxdey", processor=None), 4)
0.6667
"""

from __future__ import annotations

from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare, ratio
from ._diagonals import skewed

__all__ = ["distance", "normalized_similarity", "similarity"]


def _best(a: str, b: str) -> int:
    if not a or not b:
        return 0
    return int(skewed(a, b, "mcc").sum(axis=1).max())


def similarity(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """The most positions that agree at any one offset."""
    a, b = prepare(a, b, processor)
    return _best(a, b)


def distance(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """Length of the shorter text minus :func:`similarity`."""
    a, b = prepare(a, b, processor)
    return min(len(a), len(b)) - _best(a, b)


def normalized_similarity(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, score_cutoff: float | None = None
) -> float:
    """:func:`similarity` / length of the shorter text."""
    a, b = prepare(a, b, processor)
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0  # an empty text shares nothing with a non-empty one
    return cutoff(ratio(_best(a, b), min(len(a), len(b))), score_cutoff)
