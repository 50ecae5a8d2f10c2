"""Giving freed memory back to the operating system, and growing arrays without touching
what they do not hold yet.

glibc's malloc keeps the blocks a process frees for its later allocations: those under its
mmap threshold (which grows up to 32 MiB as larger blocks are freed), in one arena per
thread. A batch run's chunks allocate and free many arrays of a few MiB (band keys, their
order, pairs, likenesses), and what is freed stays counted in the process's resident
memory: some hundreds of MB by the end of a million tiny records. :func:`trim` asks malloc to give
its free pages back (``malloc_trim``) where the C library has it (glibc); elsewhere it does
nothing.

:func:`grown` makes room in an array that grows by doubling: ``np.resize`` fills the new
rows with copies of the old ones, so every page of the doubled array is written and
resident at once; the rows :func:`grown` adds are left unwritten, and the system gives them
pages only when they are filled.

>>> trim() in (True, False)
True
>>> grown(np.arange(3), 6)[:3].tolist(), grown(np.ones((2, 4)), 5).shape
([0, 1, 2], (5, 4))
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

__all__ = ["grown", "trim"]

_A = TypeVar("_A", bound=np.ndarray[Any, Any])


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        found = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # pragma: no cover - another C library (musl)
        return None
    found.argtypes = [ctypes.c_size_t]
    found.restype = ctypes.c_int
    return found


_MALLOC_TRIM = _malloc_trim()


def trim() -> bool:
    """Give the free pages of every malloc arena back to the system (a few milliseconds
    with a heap of some GB); whether any were given back."""
    if _MALLOC_TRIM is None:
        return False
    return bool(_MALLOC_TRIM(0))


def grown(a: _A, rows: int) -> _A:
    """``a`` with room for ``rows`` rows (at least its own): a new array whose first rows are
    ``a``'s and whose others are not written (their values are undefined until set)."""
    out = np.empty((max(rows, len(a)), *a.shape[1:]), dtype=a.dtype)
    out[: len(a)] = a
    return out  # type: ignore[return-value]
