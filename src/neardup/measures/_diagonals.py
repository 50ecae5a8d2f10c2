"""The diagonals of the match matrix of two strings, vectorized.

Diagonal d holds the positions where a[i] == b[i + d]: laying one string over the other at
offset d. mcc counts matches per diagonal, contiguity sums squared run lengths per diagonal.
The work is O(len(a) * len(b)) in numpy, so it is bounded by ``MAX_CELLS``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import as_strided

from ..errors import TextTooLongError

#: Largest len(a) * len(b) a diagonal measure accepts (about 7,000 x 7,000 characters).
MAX_CELLS = 50_000_000

IntArray = npt.NDArray[np.int64]


def codes(s: str) -> npt.NDArray[np.uint32]:
    """Code points of ``s`` as an array (lone surrogates included)."""
    return np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def skewed(a: str, b: str, measure: str) -> npt.NDArray[np.bool_]:
    """The match matrix with diagonals as rows: shape (len(a) + len(b) - 1, min length).

    Row k is the diagonal laying the shorter string at offset k - (len(short) - 1) of the longer.
    """
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    n, m = len(short), len(long_)
    if n * m > MAX_CELLS:
        raise TextTooLongError(
            f"{measure} compares every offset, O(n*m): {n:,} x {m:,} characters is over the "
            f"limit of {MAX_CELLS:,} cells; compare long texts with containment, jaccard or simhash"
        )
    match = codes(short)[:, None] == codes(long_)[None, :]
    pad = np.zeros((n, m + 2 * (n - 1)), dtype=np.bool_)
    pad[:, n - 1 : n - 1 + m] = match
    s = pad.strides
    diag = as_strided(pad, shape=(n, m + n - 1), strides=(s[0] + s[1], s[1]), writeable=False)
    return np.ascontiguousarray(diag.T)


def runs(rows: npt.NDArray[np.bool_]) -> tuple[IntArray, IntArray]:
    """Every maximal run of True in each row: (row index, run length) arrays."""
    d, n = rows.shape
    framed = np.zeros((d, n + 2), dtype=np.int8)
    framed[:, 1:-1] = rows
    step = np.diff(framed.ravel())
    starts = np.flatnonzero(step == 1)
    ends = np.flatnonzero(step == -1)
    return starts // (n + 2), (ends - starts).astype(np.int64)
