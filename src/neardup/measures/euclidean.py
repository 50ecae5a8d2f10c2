"""euclidean: 1 / (1 + d), d the Euclidean distance of the two unit-length keyword vectors.

The vectors are cosine's (see :mod:`neardup.measures.cosine`); as they are non-negative and
of length 1, d lies in [0, √2] and the similarity in [0.414, 1].

>>> normalized_similarity("北京今天天气晴朗", "今天北京天气晴朗")
1.0
"""

from __future__ import annotations

import math

import numpy as np

from ..tfidf import IDFTable
from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare
from ._vectors import pair

__all__ = ["distance", "normalized_similarity", "similarity"]


def _dist(a: str, b: str, idf: IDFTable | None) -> float:
    va, vb = pair(a, b, idf)
    if not va.any() or not vb.any():
        return 0.0 if a == b else math.sqrt(2.0)
    return float(np.linalg.norm(va - vb))


def distance(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, idf: IDFTable | None = None
) -> float:
    """The Euclidean distance of the normalized keyword vectors."""
    a, b = prepare(a, b, processor)
    return _dist(a, b, idf)


def similarity(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, idf: IDFTable | None = None
) -> float:
    """1 / (1 + distance) (the same as :func:`normalized_similarity`)."""
    a, b = prepare(a, b, processor)
    return 1.0 / (1.0 + _dist(a, b, idf))


def normalized_similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    score_cutoff: float | None = None,
    idf: IDFTable | None = None,
) -> float:
    """1 / (1 + distance)."""
    a, b = prepare(a, b, processor)
    return cutoff(1.0 / (1.0 + _dist(a, b, idf)), score_cutoff)
