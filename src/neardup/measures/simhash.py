"""simhash: 1 - Hamming distance / bits of the texts' weighted Simhash fingerprints.

The features are the TF-IDF keywords (as cosine's). The source documents call a pair a
near-duplicate when the distance of 64-bit fingerprints is at most 3, and warn that the
shorter the text, the less Simhash can be trusted.

>>> normalized_similarity("北京今天天气晴朗", "今天北京天气晴朗")
1.0
"""

from __future__ import annotations

from ..features import keywords
from ..sketch.simhash import hamming
from ..sketch.simhash import simhash as fingerprint
from ..tfidf import IDFTable
from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare

__all__ = ["distance", "fingerprint", "normalized_similarity", "similarity"]


def _distance(a: str, b: str, bits: int, idf: IDFTable | None) -> int:
    fa = fingerprint(keywords(a, idf=idf), bits=bits)
    fb = fingerprint(keywords(b, idf=idf), bits=bits)
    return hamming(fa, fb)


def distance(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    bits: int = 64,
    idf: IDFTable | None = None,
) -> int:
    """Hamming distance of the two fingerprints."""
    a, b = prepare(a, b, processor)
    return _distance(a, b, bits, idf)


def similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    bits: int = 64,
    idf: IDFTable | None = None,
) -> int:
    """Number of bits in which the fingerprints agree."""
    a, b = prepare(a, b, processor)
    return bits - _distance(a, b, bits, idf)


def normalized_similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    score_cutoff: float | None = None,
    bits: int = 64,
    idf: IDFTable | None = None,
) -> float:
    """1 - Hamming distance / bits."""
    a, b = prepare(a, b, processor)
    return cutoff(1.0 - _distance(a, b, bits, idf) / bits, score_cutoff)
