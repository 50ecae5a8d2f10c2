"""containment: the share of the shorter text's shingles found in the longer one.

|A ∩ B| / min(|A|, |B|): symmetric, and 1.0 when one text is an excerpt of the other, which
is what catches truncated and excerpted reprints.

>>> normalized_similarity("the cat sat on the mat", "the cat sat on the mat and then slept")
1.0
"""

from __future__ import annotations

from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare
from ._sets import overlap, pair

__all__ = ["distance", "normalized_similarity", "similarity"]


def _containment(a: str, b: str, cjk_width: int, word_width: int) -> float:
    sa, sb = pair(a, b, cjk_width, word_width)
    if len(sa) == 0 or len(sb) == 0:
        return 1.0 if a == b else 0.0
    return overlap(sa, sb) / min(len(sa), len(sb))


def similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    cjk_width: int = 5,
    word_width: int = 9,
) -> float:
    """The containment (the same as :func:`normalized_similarity`)."""
    a, b = prepare(a, b, processor)
    return _containment(a, b, cjk_width, word_width)


def distance(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    cjk_width: int = 5,
    word_width: int = 9,
) -> float:
    """1 - the containment."""
    a, b = prepare(a, b, processor)
    return 1.0 - _containment(a, b, cjk_width, word_width)


def normalized_similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    score_cutoff: float | None = None,
    cjk_width: int = 5,
    word_width: int = 9,
) -> float:
    """|A ∩ B| / min(|A|, |B|)."""
    a, b = prepare(a, b, processor)
    return cutoff(_containment(a, b, cjk_width, word_width), score_cutoff)
