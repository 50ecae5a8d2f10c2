"""common: characters the two texts share, counted with multiplicity, / length of the longer.

>>> normalized_similarity("aabbc", "abbd", processor=None)
0.6
"""

from __future__ import annotations

from collections import Counter

from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare, ratio

__all__ = ["distance", "normalized_similarity", "similarity"]


def _shared(a: str, b: str) -> int:
    return sum((Counter(a) & Counter(b)).values())


def similarity(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """Number of characters in common, with multiplicity."""
    a, b = prepare(a, b, processor)
    return _shared(a, b)


def distance(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """Length of the longer text minus :func:`similarity`."""
    a, b = prepare(a, b, processor)
    return max(len(a), len(b)) - _shared(a, b)


def normalized_similarity(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, score_cutoff: float | None = None
) -> float:
    """:func:`similarity` / length of the longer text."""
    a, b = prepare(a, b, processor)
    return cutoff(ratio(_shared(a, b), max(len(a), len(b))), score_cutoff)
