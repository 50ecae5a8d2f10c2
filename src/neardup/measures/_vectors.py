"""TF-IDF keyword vectors of two texts, aligned and L2-normalized, for cosine and euclidean."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..features import keywords
from ..tfidf import IDFTable

Vec = npt.NDArray[np.float64]


def pair(a: str, b: str, idf: IDFTable | None) -> tuple[Vec, Vec]:
    """The two texts' keyword weights over their shared vocabulary, each of unit length."""
    wa, wb = keywords(a, idf=idf), keywords(b, idf=idf)
    vocab = sorted(wa.keys() | wb.keys())
    va = np.array([wa.get(t, 0.0) for t in vocab], dtype=np.float64)
    vb = np.array([wb.get(t, 0.0) for t in vocab], dtype=np.float64)
    for v in (va, vb):
        norm = float(np.linalg.norm(v))
        if norm > 0:
            v /= norm
    return va, vb
