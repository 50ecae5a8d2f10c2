"""Levenshtein: 1 - edit distance / length of the longer text (rapidfuzz, bit-parallel).

The work is about n * m / 64 word operations on what remains once the common prefix and
suffix are set aside, so a lightly edited copy of a 1 MB text is fast; two unrelated texts
whose differing parts multiply to more than ``MAX_CELLS`` raise :class:`TextTooLongError`
instead of running for minutes.

>>> round(normalized_similarity("kitten", "sitting", processor=None), 4)
0.5714
"""

from __future__ import annotations

import numpy as np
from rapidfuzz.distance import Levenshtein as _lev

from ..errors import TextTooLongError
from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare, ratio
from ._diagonals import codes

__all__ = ["MAX_CELLS", "distance", "normalized", "normalized_similarity", "similarity"]

#: Largest product of the lengths of the differing middles (about 2 s of rapidfuzz here).
MAX_CELLS = 100_000_000_000


def _check_size(a: str, b: str) -> None:
    """Refuse pairs whose differing parts are too long for an edit distance."""
    if len(a) * len(b) <= MAX_CELLS:
        return
    ca, cb = codes(a), codes(b)
    n = min(len(ca), len(cb))
    diff = np.flatnonzero(ca[:n] != cb[:n])
    prefix = int(diff[0]) if len(diff) else n
    diff = np.flatnonzero(ca[::-1][: n - prefix] != cb[::-1][: n - prefix])
    suffix = int(diff[0]) if len(diff) else n - prefix
    core_a, core_b = len(a) - prefix - suffix, len(b) - prefix - suffix
    if core_a * core_b > MAX_CELLS:
        raise TextTooLongError(
            f"levenshtein on {len(a):,} x {len(b):,} characters that differ over "
            f"{core_a:,} x {core_b:,} is over the limit of {MAX_CELLS:,} cells; compare long "
            "texts with containment, jaccard or simhash"
        )


def distance(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """The number of insertions, deletions and substitutions turning a into b."""
    a, b = prepare(a, b, processor)
    _check_size(a, b)
    return int(_lev.distance(a, b))


def similarity(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """Length of the longer text minus the edit distance."""
    a, b = prepare(a, b, processor)
    _check_size(a, b)
    return max(len(a), len(b)) - int(_lev.distance(a, b))


def normalized_similarity(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, score_cutoff: float | None = None
) -> float:
    """1 - distance / max(len(a), len(b)); ``score_cutoff`` lets rapidfuzz stop early."""
    a, b = prepare(a, b, processor)
    if score_cutoff is None:
        return normalized(a, b)
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    _check_size(a, b)
    # distance above this cannot reach the cutoff: rapidfuzz then stops and returns max+1.
    # One more than the float bound, so rounding never drops a pair exactly at the cutoff;
    # cutoff() below then decides on the same ratio the path without a cutoff returns.
    limit = max(0, int((1.0 - score_cutoff) * longest) + 1)
    d = _lev.distance(a, b, score_cutoff=limit)
    return 0.0 if d > limit else cutoff(ratio(longest - d, longest), score_cutoff)


def normalized(a: str, b: str) -> float:
    """:func:`normalized_similarity` of two strings as they are: no processor, no cutoff,
    no type checks (the engine's entry, once per pair of short texts it verifies)."""
    n, m = len(a), len(b)
    longest = n if n > m else m
    if longest == 0:
        return 1.0
    _check_size(a, b)
    # the distance is at most the longer length: the share is in [0, 1] as it stands
    return (longest - _lev.distance(a, b)) / longest
