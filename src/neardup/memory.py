"""Giving freed memory back to the operating system, growing arrays without touching what
they do not hold yet, and huge pages only where they pay.

glibc's malloc keeps the blocks a process frees for its later allocations: those under its
mmap threshold (which grows up to 32 MiB as larger blocks are freed), in one arena per
thread. A batch run's chunks allocate and free many arrays of a few MiB (band keys, their
order, pairs, likenesses), and what is freed stays counted in the process's resident
memory: some hundreds of MB by the end of a million tiny records. :func:`trim` asks malloc to give
its free pages back (``malloc_trim``) where the C library has it (glibc); elsewhere it does
nothing.

A sketch worker is the other way round: it makes and frees the same few arrays for each
chunk, of sizes that change from chunk to chunk (code points, shingles, vocabularies: a few
MiB each). glibc gives a block above its mmap threshold pages of its own, fresh each time
(each page faulted in: a 4 MiB block is a thousand faults), and it raises the threshold
only to the size of a block freed. :func:`keep_freed` (the workers call it as they start)
has malloc serve every block of up to 32 MiB from its heap and keep up to 64 MiB of it free
for the next chunk: on 20 Newsgroups the run's page faults go from some 297,000 to 194,000
and its system time down by about a fifth (``mallopt``; glibc only).

:func:`grown` makes room in an array that grows by doubling: ``np.resize`` fills the new
rows with copies of the old ones, so every page of the doubled array is written and
resident at once; the rows :func:`grown` adds are left unwritten, and the system gives them
pages only when they are filled.

numpy asks Linux for huge pages (2 MiB, ``madvise``) for every array of 4 MiB or more it
allocates. For an array read at random all through a run — the template guard's count
table, 64 MiB — they spare most lookups a TLB miss; for the many arrays of a few MiB a batch
run makes and frees each chunk they cost: each fault clears 2 MiB, and where the kernel is
told to find huge pages for ``madvise`` regions (``defrag`` ``madvise``, the default) it
compacts memory first. On a virtual machine that gives freed memory back to its host that
was half the system time of a batch run (20 Newsgroups with one process: 1.3 s of system
time, 0.3 without). :func:`set_huge_pages` turns numpy's request on or off (a batch run and
its sketch workers turn it off; :func:`huge_pages` for a block of code); :func:`table_zeros`
and :func:`table_copy` ask huge pages for the arrays that want them, whatever the setting.

>>> trim() in (True, False)
True
>>> with huge_pages(False):
...     t = table_zeros(8)
>>> t.tolist(), table_copy(t).dtype.name
([0, 0, 0, 0, 0, 0, 0, 0], 'uint8')
>>> grown(np.arange(3), 6)[:3].tolist(), grown(np.ones((2, 4)), 5).shape
([0, 1, 2], (5, 4))
"""

from __future__ import annotations

import ctypes
import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = [
    "grown",
    "huge_pages",
    "keep_freed",
    "set_huge_pages",
    "table_copy",
    "table_zeros",
    "touch",
    "trim",
]

_A = TypeVar("_A", bound=np.ndarray[Any, Any])


def _libc(name: str, *argtypes: Any) -> Any:
    """The Linux C library's function ``name`` (returning an int, taking ``argtypes``), or
    None elsewhere or where that library has none (glibc's ``malloc_trim`` and ``mallopt``
    are not musl's)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        found = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):  # pragma: no cover - another C library (musl)
        return None
    found.argtypes = list(argtypes)
    found.restype = ctypes.c_int
    return found


_MALLOC_TRIM: Callable[[int], int] | None = _libc("malloc_trim", ctypes.c_size_t)


def trim() -> bool:
    """Give the free pages of every malloc arena back to the system (a few milliseconds
    with a heap of some GB); whether any were given back."""
    if _MALLOC_TRIM is None:
        return False
    return bool(_MALLOC_TRIM(0))


#: mallopt's parameters (glibc's malloc.h), and what :func:`keep_freed` sets them to
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_FROM_HEAP = 32 << 20  # the most glibc allows (half its arenas' heap size)
_KEEP_FREE = 64 << 20
_MALLOPT: Callable[[int, int], int] | None = _libc("mallopt", ctypes.c_int, ctypes.c_int)


def keep_freed() -> bool:
    """Have malloc serve every block of up to 32 MiB from its heap, and keep up to 64 MiB of
    the heap free rather than give it back, for good in this process (for a process that
    makes and frees arrays of a few MiB over and over: see the module's docstring); whether
    the C library took both settings."""
    if _MALLOPT is None:
        return False
    return bool(_MALLOPT(_M_MMAP_THRESHOLD, _FROM_HEAP)) & bool(
        _MALLOPT(_M_TRIM_THRESHOLD, _KEEP_FREE)
    )


def grown(a: _A, rows: int) -> _A:
    """``a`` with room for ``rows`` rows (at least its own): a new array whose first rows are
    ``a``'s and whose others are not written (their values are undefined until set)."""
    out = np.empty((max(rows, len(a)), *a.shape[1:]), dtype=a.dtype)
    out[: len(a)] = a
    return out  # type: ignore[return-value]


def _hugepage_switch() -> Callable[[bool], bool] | None:
    """numpy's switch for asking huge pages of its large arrays (it returns the setting it
    replaces), or None where this numpy has none."""
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):  # numpy 2, then 1.26
        try:
            module = importlib.import_module(name)
        except ImportError:  # pragma: no cover - the other numpy
            continue
        found = getattr(module, "_set_madvise_hugepage", None)
        if callable(found):
            return found  # type: ignore[no-any-return]
    return None  # pragma: no cover - a numpy without it


_HUGEPAGE_SWITCH = _hugepage_switch()


def set_huge_pages(on: bool) -> bool:
    """Whether numpy asks huge pages of the large arrays it allocates from now on; what it
    did before (False where numpy cannot say)."""
    if _HUGEPAGE_SWITCH is None:  # pragma: no cover - a numpy without the switch
        return False
    return bool(_HUGEPAGE_SWITCH(on))


@contextmanager
def huge_pages(on: bool = True) -> Iterator[None]:
    """numpy asks huge pages of the large arrays allocated inside (``on``) or not; the
    setting before is put back after."""
    before = set_huge_pages(on)
    try:
        yield
    finally:
        set_huge_pages(before)


#: the C library's ``madvise``, where Linux has huge pages to ask for; else None
_MADVISE: Callable[[int, int, int], int] | None = _libc(
    "madvise", ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
)
_MADV_HUGEPAGE = 14  # Linux's value (asm-generic/mman-common.h)
_MADV_POPULATE_WRITE = 23  # Linux 5.14 and later: back the pages as a write would
_PAGE = 4096


def _ask_huge_pages(a: npt.NDArray[np.uint8]) -> None:
    """Ask Linux for huge pages for the whole pages of ``a``'s memory (as numpy asks for its
    arrays of 4 MiB or more), before they are first touched; nothing where it cannot."""
    if _MADVISE is None or a.nbytes < 4 << 20:
        return
    at = a.ctypes.data
    start = -(-at // _PAGE) * _PAGE
    end = (at + a.nbytes) // _PAGE * _PAGE
    if end > start:
        _MADVISE(start, end - start, _MADV_HUGEPAGE)  # refused (no huge pages): as asked


def table_zeros(size: int) -> npt.NDArray[np.uint8]:
    """A table of ``size`` one-byte zeros, in huge pages where the system has them: an
    array read at random through a whole run. (Asked for the table itself, not by turning
    numpy's setting on: another thread may be allocating meanwhile.)"""
    out = np.zeros(size, dtype=np.uint8)  # not touched yet: calloc maps fresh memory
    _ask_huge_pages(out)
    return out


def table_copy(a: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """A copy of ``a`` of this process's own, in huge pages as :func:`table_zeros`."""
    out = np.empty_like(a)
    _ask_huge_pages(out)
    out[...] = a
    return out


def touch(a: npt.NDArray[np.uint8]) -> None:
    """Give every page of ``a`` its memory now: one byte of each page written back as it
    is (the values unchanged). A table from :func:`table_zeros` is mapped but not backed,
    and whatever first writes to a page waits while the system clears it (a huge page: 2
    MiB); reading it would not do, a page only read stays the shared page of zeros. Where
    Linux can (5.14 and later), the system backs them in one ``madvise``, during which the
    process's other threads run. A read-only (or not contiguous) array is left as it is."""
    if a.size == 0 or not a.flags.writeable or not a.flags.c_contiguous:
        return
    if _MADVISE is not None:  # one call, in which other threads run on (ctypes lets go of the GIL)
        at = a.ctypes.data
        start = at // _PAGE * _PAGE
        if _MADVISE(start, at + a.nbytes - start, _MADV_POPULATE_WRITE) == 0:
            return
    flat = a.reshape(-1)  # a view: the array is contiguous (no madvise, or a kernel before 5.14)
    every = flat[:: max(1, _PAGE // a.itemsize)]
    every[...] = every.copy()
    flat[-1:] = flat[-1:].copy()  # the last page, when the array ends a little past a stride
