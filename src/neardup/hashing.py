"""Stable hashes: the same value for the same string in every process and on every machine.

xxHash (XXH3) with a fixed seed, never Python's randomized ``hash()``.

>>> int(hash64(["neardup"])[0]) == int(hash64(["neardup"])[0])
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import xxhash

__all__ = ["SEED", "hash64", "hash128", "mix", "signed64"]

SEED = 0x6E64  # "nd"; changing it changes every stored fingerprint

_h64 = xxhash.xxh3_64_intdigest
_h128 = xxhash.xxh3_128_intdigest


def hash64(strings: Sequence[str], seed: int = SEED) -> npt.NDArray[np.uint64]:
    """64-bit XXH3 of each string's UTF-8 bytes, as an unsigned array."""
    return np.fromiter(
        (_h64(s.encode("utf-8", "surrogatepass"), seed) for s in strings),
        dtype=np.uint64,
        count=len(strings),
    )


def hash128(strings: Sequence[str], seed: int = SEED) -> npt.NDArray[np.uint64]:
    """128-bit XXH3 of each string, as an (n, 2) array of unsigned 64-bit halves (high, low)."""
    out = np.empty((len(strings), 2), dtype=np.uint64)
    mask = (1 << 64) - 1
    for i, s in enumerate(strings):
        h = _h128(s.encode("utf-8", "surrogatepass"), seed)
        out[i, 0] = h >> 64
        out[i, 1] = h & mask
    return out


_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix(z: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The SplitMix64 finalizer, elementwise: a stable, well-spread 64-bit hash of each value.

    >>> int(mix(np.array([1], dtype=np.uint64))[0])
    6238072747940578789
    """
    with np.errstate(over="ignore"):
        z = z ^ (z >> np.uint64(30))  # a new array, updated in place from here on
        z *= _M1
        z ^= z >> np.uint64(27)
        z *= _M2
        z ^= z >> np.uint64(31)
    return z


def signed64(value: int) -> int:
    """An unsigned 64-bit value as the signed 64-bit integer with the same bits (what SQLite
    and Spark store).

    >>> signed64(2**64 - 1), signed64(5)
    (-1, 5)
    """
    return value - (1 << 64) if value >= 1 << 63 else value
