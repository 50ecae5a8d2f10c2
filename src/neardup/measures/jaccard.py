"""jaccard: |A ∩ B| / |A ∪ B| over the texts' shingle sets.

Shingles are 5 consecutive CJK characters or 9 consecutive letters and digits (see
:mod:`neardup.shingling`), the same shingles the Deduper uses. Two texts with no shingles score 1.0 if equal, else 0.0.

>>> normalized_similarity("the cat sat on the mat", "the cat sat on a mat")
0.23076923076923078
"""

from __future__ import annotations

from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare
from ._sets import overlap, pair

__all__ = ["distance", "normalized_similarity", "similarity"]


def _jaccard(a: str, b: str, cjk_width: int, word_width: int) -> float:
    sa, sb = pair(a, b, cjk_width, word_width)
    if len(sa) == 0 or len(sb) == 0:
        return 1.0 if a == b else 0.0
    shared = overlap(sa, sb)
    return shared / (len(sa) + len(sb) - shared)


def similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    cjk_width: int = 5,
    word_width: int = 9,
) -> float:
    """The Jaccard index (the same as :func:`normalized_similarity`)."""
    a, b = prepare(a, b, processor)
    return _jaccard(a, b, cjk_width, word_width)


def distance(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    cjk_width: int = 5,
    word_width: int = 9,
) -> float:
    """1 - the Jaccard index."""
    a, b = prepare(a, b, processor)
    return 1.0 - _jaccard(a, b, cjk_width, word_width)


def normalized_similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    score_cutoff: float | None = None,
    cjk_width: int = 5,
    word_width: int = 9,
) -> float:
    """|A ∩ B| / |A ∪ B|."""
    a, b = prepare(a, b, processor)
    return cutoff(_jaccard(a, b, cjk_width, word_width), score_cutoff)
