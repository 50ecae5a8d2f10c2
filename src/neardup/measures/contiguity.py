"""contiguity: the documents' refinement of mcc that rewards long runs over scattered matches.

At each offset (as in mcc), sum the squared lengths of the runs of agreeing characters; take
the best offset and divide by the squared length of the shorter text, so identical texts
score 1 and one run of length k scores (k / shorter)².

>>> normalized_similarity("abcdef", "abxdey", processor=None)  # runs ab, de: (4 + 4) / 36
0.2222222222222222
"""

from __future__ import annotations

import numpy as np

from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare, ratio
from ._diagonals import runs, skewed

__all__ = ["distance", "normalized_similarity", "similarity"]


def _best(a: str, b: str) -> int:
    if not a or not b:
        return 0
    rows = skewed(a, b, "contiguity")
    row, length = runs(rows)
    if len(row) == 0:
        return 0
    return int(np.bincount(row, weights=length * length, minlength=rows.shape[0]).max())


def similarity(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """The best offset's sum of squared run lengths."""
    a, b = prepare(a, b, processor)
    return _best(a, b)


def distance(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """Squared length of the shorter text minus :func:`similarity`."""
    a, b = prepare(a, b, processor)
    return min(len(a), len(b)) ** 2 - _best(a, b)


def normalized_similarity(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, score_cutoff: float | None = None
) -> float:
    """:func:`similarity` / (length of the shorter text)²."""
    a, b = prepare(a, b, processor)
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0  # an empty text shares nothing with a non-empty one
    return cutoff(ratio(_best(a, b), min(len(a), len(b)) ** 2), score_cutoff)
