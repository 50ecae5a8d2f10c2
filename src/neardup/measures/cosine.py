"""cosine: the cosine of the two texts' TF-IDF keyword-weight vectors.

Keywords as jieba's ``extract_tags`` takes them (words of two characters or more, no stop
words), weighted TF × IDF with jieba's IDF table unless ``idf=`` gives another.
Two texts without any keyword score 1.0 if they are equal after processing, else 0.0.

>>> normalized_similarity("北京今天天气晴朗", "今天北京天气晴朗")
1.0
"""

from __future__ import annotations

import numpy as np

from ..tfidf import IDFTable
from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare
from ._vectors import pair

__all__ = ["distance", "normalized_similarity", "similarity"]


def _cos(a: str, b: str, idf: IDFTable | None) -> float:
    va, vb = pair(a, b, idf)
    if not va.any() or not vb.any():
        return 1.0 if a == b else 0.0
    if np.array_equal(va, vb):
        return 1.0  # exactly, not 1 - 2**-52 from rounding (score_cutoff=1.0 must keep it)
    return min(1.0, max(0.0, float(va @ vb)))


def similarity(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, idf: IDFTable | None = None
) -> float:
    """The cosine (the same as :func:`normalized_similarity`)."""
    a, b = prepare(a, b, processor)
    return _cos(a, b, idf)


def distance(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, idf: IDFTable | None = None
) -> float:
    """1 - cosine."""
    a, b = prepare(a, b, processor)
    return 1.0 - _cos(a, b, idf)


def normalized_similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    score_cutoff: float | None = None,
    idf: IDFTable | None = None,
) -> float:
    """The cosine of the keyword vectors, in [0, 1]."""
    a, b = prepare(a, b, processor)
    return cutoff(_cos(a, b, idf), score_cutoff)
