"""Chained hash tables for the kernels that look up many keys of one array: the heads of a
power-of-two table of slots and each item's next, in the array's order."""

from __future__ import annotations

import numpy as np

from ._jit import jit

__all__ = ["chained", "table_size"]


@jit
def table_size(n):
    """The power of two at least twice ``n`` (at least 1): the heads of a table of ``n``."""
    size = 1
    while size < 2 * n:
        size *= 2
    return size


@jit
def chained(slots, size):
    """The table of items whose slots (``slots[q]``, below ``size``) are given: the first
    item of each slot (-1: none) and each item's next of the same slot (-1: the last),
    each chain in the items' order."""
    head = np.full(size, -1, dtype=np.int64)
    chain = np.empty(len(slots), dtype=np.int64)
    for q in range(len(slots) - 1, -1, -1):  # from the end, so that each chain is in order
        chain[q] = head[slots[q]]
        head[slots[q]] = q
    return head, chain
