"""MinHash signatures by one-permutation hashing (Li, Owen and Zhang, NIPS 2012).

Each shingle hash (already a well-mixed 64-bit value, see :mod:`neardup.shingling`) falls in
one of ``num_perm`` bins by its low bits; a bin keeps its smallest value. Empty bins borrow
from the next non-empty bin, rotating (Shrivastava and Li, ICML 2014), with the distance
mixed in so that borrowed values differ from the bin they came from. The fraction of equal
positions of two signatures estimates the Jaccard similarity of the shingle sets, as with
``num_perm`` independent permutations, but the cost is one pass over the shingles instead of
``num_perm``. Vectorized over a document's shingles and over batches of documents.

>>> import numpy as np
>>> from neardup.hashing import mix
>>> a = minhash(mix(np.arange(2000, dtype=np.uint64)))
>>> b = minhash(mix(np.arange(1000, dtype=np.uint64)))
>>> 0.35 < jaccard(a, b) < 0.65, a.dtype.name, len(a)
(True, 'uint64', 128)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError
from ..hashing import mix

__all__ = ["EMPTY", "check_num_perm", "jaccard", "minhash", "minhash_batch"]

U64 = npt.NDArray[np.uint64]
EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)  # every position of an empty document's signature
_STEP = np.uint64(0x9E3779B97F4A7C15)


def check_num_perm(num_perm: int) -> None:
    """ConfigError unless ``num_perm`` is a power of two between 1 and 4096."""
    if num_perm < 1 or num_perm & (num_perm - 1) or num_perm > 4096:
        raise ConfigError(f"num_perm must be a power of two between 1 and 4096, got {num_perm}")


def _densify(sig: U64) -> U64:
    """Fill empty bins (rows of a 2-D array) from the next non-empty bin to the right."""
    k = sig.shape[1]
    empty = sig == EMPTY
    if not empty.any():
        return sig
    full = ~empty
    idx = np.where(full, np.arange(k), k * 2)
    # next non-empty position, cyclically: suffix minimum over the row laid out twice
    twice = np.where(
        np.concatenate((full, full), axis=1), np.concatenate((idx, idx + k), axis=1), 4 * k
    )
    nxt = np.minimum.accumulate(twice[:, ::-1], axis=1)[:, ::-1][:, :k]
    rows = np.flatnonzero(full.any(axis=1))
    out = sig.copy()
    if len(rows) == 0:
        return out
    r = rows[:, None]
    src = nxt[rows]
    dist = (src - np.arange(k)).astype(np.uint64)
    borrowed = sig[r, src % k]
    with np.errstate(over="ignore"):
        filled = mix(borrowed + dist * _STEP)
    out[rows] = np.where(empty[rows], filled, sig[rows])
    return out


def minhash_batch(documents: Sequence[U64], *, num_perm: int = 128) -> U64:
    """Signatures of many documents' shingle hashes at once: an (n, num_perm) array."""
    check_num_perm(num_perm)
    n = len(documents)
    sig = np.full((n, num_perm), EMPTY, dtype=np.uint64)
    lengths = np.fromiter((len(d) for d in documents), dtype=np.int64, count=n)
    if lengths.sum() == 0:
        return sig
    values = np.concatenate([np.asarray(d, dtype=np.uint64) for d in documents])
    cell = (values & np.uint64(num_perm - 1)).astype(np.intp)
    cell += np.repeat(np.arange(0, n * num_perm, num_perm, dtype=np.intp), lengths)
    np.minimum.at(sig.ravel(), cell, values)  # smallest value per (document, bin)
    return _densify(sig)


def minhash(shingles: U64, *, num_perm: int = 128) -> U64:
    """The signature of one document's shingle hashes: ``num_perm`` unsigned 64-bit values."""
    signature: U64 = minhash_batch([shingles], num_perm=num_perm)[0]
    return signature


def jaccard(a: U64, b: U64) -> float:
    """The Jaccard similarity two signatures estimate (share of equal positions)."""
    if a.shape != b.shape:
        raise ConfigError(
            f"signatures of {a.shape[0]} and {b.shape[0]} positions cannot be compared"
        )
    return float(np.count_nonzero(a == b)) / len(a)
