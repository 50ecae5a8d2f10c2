"""jaccard: |A ∩ B| / |A ∪ B| over the texts' shingle sets.

Shingles are 5 consecutive CJK characters or 3 consecutive words (see
:func:`neardup.tokenize.shingles`). Two texts with no shingles score 1.0 if equal, else 0.0.

>>> normalized_similarity("the cat sat on the mat", "the cat sat on a mat")
0.3333333333333333
"""

from __future__ import annotations

from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare
from ._sets import pair

__all__ = ["distance", "normalized_similarity", "similarity"]


def _jaccard(a: str, b: str, cjk_width: int, word_width: int) -> float:
    sa, sb = pair(a, b, cjk_width, word_width)
    if not sa or not sb:
        return 1.0 if a == b else 0.0
    return len(sa & sb) / len(sa | sb)


def similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    cjk_width: int = 5,
    word_width: int = 3,
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
    word_width: int = 3,
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
    word_width: int = 3,
) -> float:
    """|A ∩ B| / |A ∪ B|."""
    a, b = prepare(a, b, processor)
    return cutoff(_jaccard(a, b, cjk_width, word_width), score_cutoff)
