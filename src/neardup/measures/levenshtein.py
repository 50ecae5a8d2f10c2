"""Levenshtein: 1 - edit distance / length of the longer text (rapidfuzz, bit-parallel).

>>> round(normalized_similarity("kitten", "sitting", processor=None), 4)
0.5714
"""

from __future__ import annotations

from rapidfuzz.distance import Levenshtein as _lev

from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare, ratio

__all__ = ["distance", "normalized_similarity", "similarity"]


def distance(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """The number of insertions, deletions and substitutions turning a into b."""
    a, b = prepare(a, b, processor)
    return int(_lev.distance(a, b))


def similarity(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """Length of the longer text minus the edit distance."""
    a, b = prepare(a, b, processor)
    return max(len(a), len(b)) - int(_lev.distance(a, b))


def normalized_similarity(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, score_cutoff: float | None = None
) -> float:
    """1 - distance / max(len(a), len(b)); ``score_cutoff`` lets rapidfuzz stop early."""
    a, b = prepare(a, b, processor)
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    if score_cutoff is not None:
        # distance above this cannot reach the cutoff: rapidfuzz then stops and returns max+1.
        # One more than the float bound, so rounding never drops a pair exactly at the cutoff;
        # cutoff() below then decides on the same ratio the path without a cutoff returns.
        limit = max(0, int((1.0 - score_cutoff) * longest) + 1)
        d = _lev.distance(a, b, score_cutoff=limit)
        return 0.0 if d > limit else cutoff(ratio(longest - d, longest), score_cutoff)
    return ratio(longest - _lev.distance(a, b), longest)
