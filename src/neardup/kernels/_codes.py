"""Compiled codings: the body of a Rice code (:mod:`neardup.engine.rice`, the reference the
tests compare with), its bit planes and unary run written in one pass over the gaps instead
of by whole-array operations (a story's slots: a dozen numpy calls of a few microseconds
each)."""

from __future__ import annotations

import numpy as np

from ._jit import jit

__all__ = ["rice_body"]


@jit
def rice_body(gaps, k):
    """The ``k`` bit planes (bit ``j`` of every gap, packed little-endian, a plane after
    the other) and the unary run (each gap's ``gap >> k`` zeros and a one, packed the same
    way) of ``gaps`` (uint64), in one array of bytes; and the run's length in bytes."""
    n = len(gaps)
    shift = np.uint64(k)
    plane = (n + 7) // 8
    bits = 0
    for i in range(n):
        bits += np.int64(gaps[i] >> shift) + 1
    run = (bits + 7) // 8
    out = np.zeros(k * plane + run, dtype=np.uint8)
    low = gaps & ((np.uint64(1) << shift) - np.uint64(1))
    for j in range(k):  # a plane at a time: no branch in the loop
        base, uj = j * plane, np.uint64(j)
        for i in range(n):
            out[base + (i >> 3)] |= np.uint8(((low[i] >> uj) & np.uint64(1)) << np.uint64(i & 7))
    at = -1
    start = k * plane
    for i in range(n):
        at += np.int64(gaps[i] >> shift) + 1
        out[start + (at >> 3)] |= np.uint8(1 << (at & 7))
    return out, run
