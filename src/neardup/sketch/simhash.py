"""Weighted Simhash (Charikar 2002), 64 or 128 bits, vectorized with numpy.

Each feature is hashed (XXH3, fixed seed); every bit of the fingerprint is the sign of the
weighted vote of the features whose hash has that bit set (+w) or clear (-w). Bit i of the
fingerprint is bit i of the integer (little-endian), so fingerprints are plain unsigned ints.

>>> a = simhash({"北京": 2.0, "天气": 1.0, "晴朗": 1.0})
>>> b = simhash({"北京": 2.0, "天气": 1.0, "多云": 1.0})
>>> hamming(a, a), 0 < hamming(a, b) < 32
(0, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError
from ..hashing import hash64, hash128

__all__ = ["hamming", "simhash", "simhash_batch"]

Features = Mapping[str, float] | Sequence[str]


def _split(features: Features) -> tuple[list[str], npt.NDArray[np.float64]]:
    if isinstance(features, Mapping):
        return list(features.keys()), np.fromiter(
            features.values(), dtype=np.float64, count=len(features)
        )
    return list(features), np.ones(len(features), dtype=np.float64)


def _sign_matrix(terms: Sequence[str], bits: int) -> npt.NDArray[np.float64]:
    """(F, bits) matrix of +1 / -1: bit i of each feature's hash."""
    if bits == 64:
        raw = hash64(terms).astype("<u8").view(np.uint8).reshape(len(terms), 8)
    else:
        h = hash128(terms)  # (F, 2) high, low
        raw = np.ascontiguousarray(h[:, ::-1]).astype("<u8").view(np.uint8).reshape(len(terms), 16)
    b = np.unpackbits(raw, axis=1, bitorder="little").astype(np.float64)
    return b * 2.0 - 1.0


def _pack(votes: npt.NDArray[np.float64], scale: npt.NDArray[np.float64]) -> list[int]:
    """Turn an (n, bits) vote matrix into n fingerprint ints: a bit is set where its vote is
    positive beyond rounding (votes that cancel exactly give 0 whatever the summation order)."""
    packed = np.packbits(votes > scale[:, None] * 1e-9, axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def _check_bits(bits: int) -> None:
    if bits not in (64, 128):
        raise ConfigError(f"simhash bits must be 64 or 128, got {bits}")


def simhash(features: Features, *, bits: int = 64) -> int:
    """The Simhash fingerprint of weighted features (a mapping) or of a sequence (weight 1 each)."""
    _check_bits(bits)
    terms, weights = _split(features)
    if not terms:
        return 0
    # the same float64 summation as simhash_batch, so ties fall the same way in both
    votes = np.add.reduceat(_sign_matrix(terms, bits) * weights[:, None], [0], axis=0)
    return _pack(votes, np.array([np.abs(weights).sum()]))[0]


def simhash_batch(documents: Sequence[Features], *, bits: int = 64) -> list[int]:
    """Fingerprints of many documents at once: one hash pass and one weighted sum for all."""
    _check_bits(bits)
    all_terms: list[str] = []
    all_weights: list[npt.NDArray[np.float64]] = []
    lengths = np.empty(len(documents), dtype=np.int64)
    for i, doc in enumerate(documents):
        terms, weights = _split(doc)
        all_terms.extend(terms)
        all_weights.append(weights)
        lengths[i] = len(terms)
    if not all_terms:
        return [0] * len(documents)
    signs = _sign_matrix(all_terms, bits)
    weighted = signs * np.concatenate(all_weights)[:, None]
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    nonempty = lengths > 0
    votes = np.zeros((len(documents), bits), dtype=np.float64)
    votes[nonempty] = np.add.reduceat(weighted, offsets[nonempty], axis=0)
    weights = np.concatenate(all_weights)
    scale = np.zeros(len(documents))
    scale[nonempty] = np.add.reduceat(np.abs(weights), offsets[nonempty])
    return _pack(votes, scale)


def hamming(a: int, b: int) -> int:
    """Number of bits in which two fingerprints differ."""
    return (a ^ b).bit_count()
