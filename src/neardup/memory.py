"""Giving freed memory back to the operating system.

glibc's malloc keeps the blocks a process frees for its later allocations: those under its
mmap threshold (which grows up to 32 MiB as larger blocks are freed), in one arena per
thread. A batch run's chunks allocate and free many arrays of a few MiB (band keys, their
order, pairs, likenesses), and what is freed stays counted in the process's resident
memory: some hundreds of MB by the end of a million tiny records. :func:`trim` asks malloc to give
its free pages back (``malloc_trim``) where the C library has it (glibc); elsewhere it does
nothing.

>>> trim() in (True, False)
True
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

__all__ = ["trim"]


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
