"""Shared passages: the longest stretches of text two documents have in common.

They are the evidence shown beside a score: greedy string tiling (longest first, never
overlapping in either text), seeded by exact matches of ``min_len`` characters and extended
to maximal length, so it runs in about linear time on long documents.

>>> [p.text for p in shared_passages("今天北京天气晴朗，适合出游。", "据报道：北京天气晴朗，适合出游")]
['北京天气晴朗，适合出游']
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Passage", "shared_passages"]

_MAX_POSITIONS = 64  # a seed repeated more often than this (boilerplate) is not followed


@dataclass(frozen=True, slots=True)
class Passage:
    """A stretch of text found at ``a_start`` in one text and ``b_start`` in the other."""

    a_start: int
    b_start: int
    length: int
    text: str

    @property
    def a_end(self) -> int:
        """End (exclusive) in the first text."""
        return self.a_start + self.length

    @property
    def b_end(self) -> int:
        """End (exclusive) in the second text."""
        return self.b_start + self.length


def shared_passages(a: str, b: str, *, min_len: int = 6, limit: int | None = 20) -> list[Passage]:
    """Non-overlapping common passages of at least ``min_len`` characters, longest first."""
    if min_len < 1:
        raise ValueError(f"min_len must be at least 1, got {min_len}")
    if len(a) < min_len or len(b) < min_len:
        return []
    seeds: dict[str, list[int]] = {}
    for j in range(len(b) - min_len + 1):
        positions = seeds.setdefault(b[j : j + min_len], [])
        if len(positions) <= _MAX_POSITIONS:
            positions.append(j)
    found: list[tuple[int, int, int]] = []
    for i in range(len(a) - min_len + 1):
        hits = seeds.get(a[i : i + min_len])
        if not hits or len(hits) > _MAX_POSITIONS:
            continue
        for j in hits:
            if i > 0 and j > 0 and a[i - 1] == b[j - 1]:
                continue  # not the start of a maximal match
            k = min_len
            while i + k < len(a) and j + k < len(b) and a[i + k] == b[j + k]:
                k += 1
            found.append((k, i, j))
    found.sort(key=lambda t: (-t[0], t[1], t[2]))
    used_a = bytearray(len(a))
    used_b = bytearray(len(b))
    out: list[Passage] = []
    for k, i, j in found:
        if any(used_a[i : i + k]) or any(used_b[j : j + k]):
            continue
        used_a[i : i + k] = b"\x01" * k
        used_b[j : j + k] = b"\x01" * k
        out.append(Passage(i, j, k, a[i : i + k]))
        if limit is not None and len(out) >= limit:
            break
    return out
