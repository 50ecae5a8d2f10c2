"""Giving freed memory back to the system, and huge pages only where they pay."""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from neardup import memory
from neardup.memory import huge_pages, set_huge_pages, table_copy, table_zeros, touch, trim


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_trim_gives_the_free_pages_inside_the_heap_back() -> None:
    """Blocks freed under one still in use stay in the process (glibc gives back only the
    top of its heap by itself) until ``trim`` gives their pages back."""
    blocks = [np.ones(100_000, dtype=np.uint8) for _ in range(1_000)]  # under mmap's threshold
    kept = blocks[-1]
    del blocks
    before = _rss()
    assert trim()
    assert before - _rss() >= 50 * 2**20
    assert kept.sum() == 100_000


_FAULTS = """
import os, resource, sys
import numpy as np
from neardup.memory import set_huge_pages
set_huge_pages(False)
if sys.argv[1] == "keep_freed":
    from neardup.memory import keep_freed
    assert keep_freed()
elif sys.argv[1] == "worker":
    from neardup.batch import _worker_start
    _worker_start(os.getppid())
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(40):  # a chunk's arrays: a few MiB, a little larger each time
    a = np.ones((1 << 20) + i * 4096, dtype=np.uint32)
    b = np.ones(1 << 19, dtype=np.uint64)
    del a, b
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(how: str) -> int:
    """The page faults of a fresh process making and freeing a chunk's arrays 40 times."""
    done = subprocess.run(
        [sys.executable, "-c", _FAULTS, how], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
@pytest.mark.parametrize("how", ["keep_freed", "worker"])
def test_keep_freed_serves_a_chunks_arrays_from_pages_already_faulted_in(how: str) -> None:
    """Arrays of a few MiB, freed and made again a little larger, come from the heap that
    the ones before them left (not from fresh pages, a thousand faults for each 4 MiB),
    once ``keep_freed`` is called; a sketch worker calls it as it starts."""
    plain, kept = _faults("plain"), _faults(how)
    assert plain > 40 * 1024  # each array of 4 MiB faulted in afresh
    assert kept < plain // 4


def test_keep_freed_answers_everywhere() -> None:
    """Where the C library has no ``mallopt``, nothing is set and nothing fails (run in a
    process of its own: the setting is for good)."""
    done = subprocess.run(
        [sys.executable, "-c", "from neardup.memory import keep_freed; print(keep_freed())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() in ("True", "False")


def test_trim_answers_everywhere() -> None:
    """Where the C library has no ``malloc_trim``, nothing is given back and nothing fails."""
    assert trim() in (True, False)


def _asks_huge_pages(a: np.ndarray) -> bool:
    """Whether the mapping that holds ``a``'s middle byte was advised to use huge pages
    (``hg`` among its VmFlags in /proc/self/smaps; numpy advises from the first whole page
    of an array on)."""
    at = a.__array_interface__["data"][0] + a.nbytes // 2
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(maxsplit=1)[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= at < hi
            elif inside and head == "VmFlags:":
                return "hg" in line.split()
    raise AssertionError("no mapping holds the array")


def _numpy_asks() -> bool:
    """numpy's setting (read by setting it and putting it back)."""
    now = set_huge_pages(True)
    set_huge_pages(now)
    return now


def test_huge_pages_puts_numpys_setting_back() -> None:
    before = _numpy_asks()
    with huge_pages(False):
        assert not _numpy_asks()
        with huge_pages(True):
            assert _numpy_asks()
        assert not _numpy_asks()
    assert _numpy_asks() == before


@pytest.mark.skipif(
    not os.path.exists("/proc/self/smaps")
    or not os.path.exists("/sys/kernel/mm/transparent_hugepage"),
    reason="huge pages as Linux advises them",
)
def test_a_table_asks_huge_pages_where_other_arrays_do_not() -> None:
    """With numpy told not to ask huge pages (as a batch run tells it), a large array is
    made without them, and a count table (:func:`table_zeros`, :func:`table_copy`) with
    them; the setting is left as it was."""
    if not _numpy_asks():
        pytest.skip("this numpy does not ask huge pages")
    size = 64 * 2**20
    with huge_pages(False):
        plain = np.zeros(size, dtype=np.uint8)
        table = table_zeros(size)
        table[::4096] = 1
        copied = table_copy(table)
        assert not _numpy_asks()
    assert not _asks_huge_pages(plain)
    assert _asks_huge_pages(table) and _asks_huge_pages(copied)
    assert table.dtype == copied.dtype == np.uint8 and len(table) == size
    assert int(copied.sum()) == size // 4096 and not np.shares_memory(table, copied)


def _resident(a: np.ndarray) -> float:
    """The share of the pages of ``a`` that have memory (``mincore``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    page = os.sysconf("SC_PAGE_SIZE")
    start = a.ctypes.data // page * page
    length = a.ctypes.data + a.nbytes - start
    pages = -(-length // page)
    vec = (ctypes.c_ubyte * pages)()
    assert libc.mincore(start, length, vec) == 0, os.strerror(ctypes.get_errno())
    return float((np.frombuffer(vec, dtype=np.uint8) & 1).mean())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mincore as Linux answers it")
@pytest.mark.parametrize("how", ["madvise", "writes"])
def test_touch_gives_a_table_its_memory_and_keeps_its_counts(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A count table is mapped but not backed until written; ``touch`` backs every page of
    it now (what ``Deduper.warm`` does as a service starts, so that its first story does
    not wait for it), its values unchanged — by ``madvise`` where Linux has
    MADV_POPULATE_WRITE, else by writing a byte of each page back; a read-only array is
    left as it is."""
    if how == "writes":
        monkeypatch.setattr(memory, "_MADVISE", None)
    table = table_zeros(64 * 2**20 + 100)  # not a whole number of pages
    assert _resident(table) < 0.5
    table[[5, 12_345_678, len(table) - 1]] = (3, 7, 9)
    touch(table)
    assert _resident(table) == 1.0
    assert int(table.sum()) == 19 and table[12_345_678] == 7 and table[-1] == 9
    frozen = np.frombuffer(bytes(3 * 4096), dtype=np.uint8)
    touch(frozen)
    assert not frozen.any()
