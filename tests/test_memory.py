"""Giving freed memory back to the system, and huge pages only where they pay."""

from __future__ import annotations

import os
import platform

import numpy as np
import pytest

from neardup.memory import huge_pages, set_huge_pages, table_copy, table_zeros, trim


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
