"""Giving freed memory back to the system."""

from __future__ import annotations

import os
import platform

import numpy as np
import pytest

from neardup.memory import trim


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
