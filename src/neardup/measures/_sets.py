"""Shingle sets of two texts, for jaccard and containment: the engine's own hashed shingles."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..shingling import distinct, shingle_hashes


def pair(
    a: str, b: str, cjk_width: int, word_width: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """The distinct shingle hashes of both texts, sorted."""
    return (
        distinct(shingle_hashes(a, cjk_width=cjk_width, word_width=word_width).hashes),
        distinct(shingle_hashes(b, cjk_width=cjk_width, word_width=word_width).hashes),
    )


def overlap(sa: npt.NDArray[np.uint64], sb: npt.NDArray[np.uint64]) -> int:
    """How many shingles the two sorted sets share."""
    return len(np.intersect1d(sa, sb, assume_unique=True))
