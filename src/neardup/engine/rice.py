"""Rice codes for what compact stores keep of sorted slots: the gaps between them.

The gaps between ``n`` slots spread at random over a range of ``m`` are close to
geometric, with a mean of ``m / n``; a Rice code of parameter ``k`` writes each gap ``g``
as its low ``k`` bits and ``g >> k`` in unary, about ``k + 1 + mean / 2^k`` bits a gap,
within a few per cent of their entropy when ``2^k`` is near the mean (a story's 1,300
template-guard slots in ``2^26``: 17 bits a slot where the bytes of each gap took 24; the
count table's gaps 5 bits where zlib made 6 of their bytes).

The low bits go as ``k`` bit planes (bit ``j`` of every gap, packed), the unary parts as
one run of bits (``q`` zeros and a one a gap), so both are written and read by whole-array
numpy operations, in a few milliseconds for millions of gaps. The unary run of gaps that
add up to at most ``m`` is at most ``n + m / 2^k`` bits long, whatever the gaps.

>>> import numpy as np
>>> gaps = np.array([0, 5, 300, 17, 2], dtype=np.uint64)
>>> blob = encode(gaps)
>>> back, end = decode(blob)
>>> back.tolist(), end == len(blob)
([0, 5, 300, 17, 2], True)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import kernels

__all__ = ["best_k", "decode", "encode"]

U64 = npt.NDArray[np.uint64]

#: gaps this many bits wide at most (slots of 32-bit codes, positions in a table)
_MOST_K = 40
#: codes of this many gaps or fewer have their low bits packed and read all at once
_AT_ONCE = 1 << 14


def best_k(gaps: U64) -> int:
    """The parameter for ``gaps`` from their mean alone (Kiely's rule for geometric gaps,
    the best or within a bit of it: on hkcnews stories' slots the same as the best found by
    trying each), so a table of millions takes one pass."""
    n = len(gaps)
    mean = float(gaps.sum(dtype=np.float64)) / n if n else 0.0
    if mean <= 0:
        return 0
    golden = (1 + 5**0.5) / 2
    k = 1 + math.floor(math.log2(math.log(golden - 1) / math.log(mean / (mean + 1))))
    return min(max(k, 0), _MOST_K)


def encode(gaps: U64, k: int | None = None) -> bytes:
    """``gaps`` (unsigned) as a Rice code of parameter ``k`` (:func:`best_k` if None),
    after a head saying how many there are, ``k`` and the unary run's bytes."""
    gaps = np.asarray(gaps, dtype=np.uint64)
    if k is None:
        k = best_k(gaps)
    if not 0 <= k <= _MOST_K:
        raise ValueError(f"a Rice parameter of {k}")
    n = len(gaps)
    if n and kernels.wanted(0):  # when loaded (or on): every story a compact store logs
        body, size = kernels.load("_codes").rice_body(gaps, k)
        return varints([n, k, int(size)]) + bytes(body)
    planes = _planes(gaps & np.uint64((1 << k) - 1), k)
    ends = gaps >> np.uint64(k)
    ends += np.uint64(1)
    np.cumsum(ends, out=ends)
    ends -= np.uint64(1)  # each gap's one, after its zeros
    run = np.zeros(int(ends[-1]) + 1 if n else 0, dtype=np.uint8)
    run[ends] = 1
    del ends
    unary = np.packbits(run, bitorder="little")
    head = varints([n, k, len(unary)])
    return b"".join((head, planes, unary.tobytes()))


def decode(blob: bytes, at: int = 0) -> tuple[U64, int]:
    """The gaps :func:`encode` wrote at ``at`` of ``blob``, and where their code ends;
    ValueError if they do not read as such a code."""
    try:
        (n, k, size), at = read_varints(blob, at, 3)
    except IndexError:
        raise ValueError("a Rice code's head cut short") from None
    if k > _MOST_K:
        raise ValueError(f"a Rice parameter of {k}")
    plane = (n + 7) // 8
    end = at + k * plane + size
    if end > len(blob) or size * 8 < n:
        raise ValueError(f"{n:,} gaps do not fit in {len(blob) - at:,} bytes")
    low = _low_bits(np.frombuffer(blob, dtype=np.uint8, count=k * plane, offset=at), n, k)
    run = np.frombuffer(blob, dtype=np.uint8, count=size, offset=at + k * plane)
    ones = np.flatnonzero(np.unpackbits(run, bitorder="little"))
    if len(ones) < n:
        raise ValueError(f"{len(ones):,} of {n:,} gaps in the unary run")
    out = np.diff(ones[:n], prepend=-1).view(np.uint64)  # each gap's zeros, plus one
    out -= np.uint64(1)
    out <<= np.uint64(k)
    out |= low
    return out, end


def _planes(low: U64, k: int) -> bytes:
    """Bit ``j`` of every value of ``low``, packed, for ``j`` from 0 to ``k - 1``: all at
    once for a few values of up to 32 bits (a story's slots: a call a plane took most of
    the time), a plane at a time for many (a count table's millions: the temporaries of all
    at once would be tens of MB of fresh memory, slow to fault in)."""
    if len(low) <= _AT_ONCE and k <= 32:
        shifts = np.arange(k, dtype=np.uint32)[:, None]
        bits = (low.astype(np.uint32)[None, :] >> shifts) & np.uint32(1)
        return np.packbits(bits.astype(np.uint8), axis=1, bitorder="little").tobytes()
    narrow: npt.NDArray[np.unsignedinteger[Any]] = low.astype(np.uint8 if k <= 8 else np.uint64)
    out = []
    for j in range(k):
        plane = narrow >> j
        plane &= 1
        out.append(np.packbits(plane, bitorder="little").tobytes())
    return b"".join(out)


def _low_bits(planes: npt.NDArray[np.uint8], n: int, k: int) -> U64:
    """The ``n`` values whose ``k`` low bits :func:`_planes` packed in ``planes``."""
    if k == 0:
        return np.zeros(n, dtype=np.uint64)
    if n <= _AT_ONCE and k <= 32:
        bits = np.unpackbits(planes.reshape(k, -1), axis=1, count=n, bitorder="little")
        shifts = np.arange(k, dtype=np.uint32)[:, None]
        low32 = np.bitwise_or.reduce(bits.astype(np.uint32) << shifts, axis=0)
        out: U64 = low32.astype(np.uint64)
        return out
    plane = (n + 7) // 8
    low: npt.NDArray[np.unsignedinteger[Any]] = np.zeros(n, np.uint8 if k <= 8 else np.uint64)
    for j in range(k):
        bits = np.unpackbits(planes[j * plane : (j + 1) * plane], count=n, bitorder="little")
        wider = bits.astype(low.dtype)
        wider <<= j
        low |= wider
    return low.astype(np.uint64)


def varints(values: list[int]) -> bytes:
    """Unsigned LEB128 of each value."""
    out = bytearray()
    for v in values:
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


def read_varints(blob: bytes, at: int, n: int) -> tuple[list[int], int]:
    """``n`` values :func:`varints` wrote at ``at``, and where they end; IndexError when
    ``blob`` ends first."""
    out: list[int] = []
    for _ in range(n):
        v = shift = 0
        while True:
            b = blob[at]
            at += 1
            v |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
        out.append(v)
    return out, at
