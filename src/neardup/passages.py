"""Shared passages: the longest stretches of text two documents have in common.

They are the evidence shown beside a score: greedy string tiling (longest first, never
overlapping in either text), seeded by exact matches of ``min_len`` characters and extended
to maximal length, so it runs in about linear time on long documents.

>>> [p.text for p in shared_passages("今天北京天气晴朗，适合出游。", "据报道：北京天气晴朗，适合出游")]
['北京天气晴朗，适合出游']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import kernels

__all__ = ["Passage", "shared_passages"]

_MAX_POSITIONS = 64  # a seed repeated more often than this (boilerplate) is not followed
_VECTOR_FROM = 160  # texts at least this long together find their seeds with numpy


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


def _match_length(a: str, b: str, i: int, j: int, known: int, most: int) -> int:
    """How far ``a[i:]`` and ``b[j:]`` agree, at most ``most``, given that their first
    ``known`` characters do: galloping over slices, so a long passage costs a few
    comparisons done in C rather than one step of Python per character."""
    step = 16
    while (
        known + step <= most and a[i + known : i + known + step] == b[j + known : j + known + step]
    ):
        known += step
        step <<= 1
    lo, hi = known, min(known + step, most)  # the length is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i + lo : i + mid] == b[j + lo : j + mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _seed_count(text: str, seed: str, cap: int) -> int:
    """How often ``seed`` occurs in ``text`` (overlaps counted), counting up to ``cap``."""
    n, at = 0, text.find(seed)
    while at >= 0 and n < cap:
        n += 1
        at = text.find(seed, at + 1)
    return n


def _starts_py(a: str, b: str, m: int) -> list[tuple[int, int]]:
    """Where maximal matches of at least ``m`` characters start, (i in a, j in b), seeded by
    the ``m``-grams of b that occur at most :data:`_MAX_POSITIONS` times in it."""
    seeds: dict[str, list[int]] = {}
    for j in range(len(b) - m + 1):
        positions = seeds.setdefault(b[j : j + m], [])
        if len(positions) <= _MAX_POSITIONS:
            positions.append(j)
    out: list[tuple[int, int]] = []
    for i in range(len(a) - m + 1):
        hits = seeds.get(a[i : i + m])
        if not hits or len(hits) > _MAX_POSITIONS:
            continue
        for j in hits:
            if i > 0 and j > 0 and a[i - 1] == b[j - 1]:
                continue  # not the start of a maximal match
            out.append((i, j))
    return out


def _codes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _gram_keys(codes: np.ndarray, m: int) -> np.ndarray:
    """For each position, a number that is equal exactly where the ``m`` characters from
    there are (the last ``m - 1`` positions get numbers too, to be ignored)."""
    n = len(codes)
    chars, rank = np.unique(codes, return_inverse=True)
    rank = rank.astype(np.int64)
    base = len(chars) + 1
    if base**m < 2**62:  # the m ranks side by side in one int64: exact
        key = np.zeros(n, dtype=np.int64)
        for d in range(m):
            key[: n - d] = key[: n - d] * base + rank[d:] + 1
            key[n - d :] *= base
        return key
    # too many kinds of characters for that: ranks of doubling lengths, as in suffix sorting
    have = 1
    powers = {1: rank}

    def combine(first: np.ndarray, second: np.ndarray, shift: int) -> np.ndarray:
        later = np.full(n, -1, dtype=np.int64)
        later[: n - shift] = second[shift:]
        inverse = np.unique(first * (n + 1) + (later + 1), return_inverse=True)[1]
        return inverse.astype(np.int64)

    while have * 2 <= m:
        rank = combine(rank, rank, have)
        have *= 2
        powers[have] = rank
    while have < m:  # the rest from the largest power that fits
        part = max(p for p in powers if p <= m - have)
        rank = combine(rank, powers[part], have)
        have += part
    return rank


def _starts(a: str, b: str, m: int) -> list[tuple[int, int, int]]:
    """:func:`_starts_py` with numpy: the same pairs (in another order), each with what is
    known of its length: ``m``, or ``m + 1`` when the match goes on past its seed."""
    la, lb = len(a), len(b)
    ca, cb = _codes(a), _codes(b)
    key = _gram_keys(np.concatenate((ca, cb)), m)
    ka, kb = key[: la - m + 1], key[la : la + lb - m + 1]
    by_key = np.argsort(kb, kind="stable")  # positions of b, seed by seed
    sorted_b = kb[by_key]
    lo = np.searchsorted(sorted_b, ka, side="left")
    reps = np.searchsorted(sorted_b, ka, side="right") - lo
    reps[reps > _MAX_POSITIONS] = 0
    total = int(reps.sum())
    if total == 0:
        return []
    i = np.repeat(np.arange(len(ka)), reps)
    within = np.arange(total) - np.repeat(np.cumsum(reps) - reps, reps)
    j = by_key[np.repeat(lo, reps) + within]
    left = (i > 0) & (j > 0)
    keep = ~left
    keep[left] = ca[i[left] - 1] != cb[j[left] - 1]  # the start of a maximal match
    i, j = i[keep], j[keep]
    more = (i + m < la) & (j + m < lb)
    more[more] = ca[i[more] + m] == cb[j[more] + m]
    known = np.where(more, m + 1, m)
    return list(zip(i.tolist(), j.tolist(), known.tolist(), strict=True))


def _matches(a: str, b: str, m: int) -> list[tuple[int, int, int]]:
    """The maximal matches of at least ``m`` characters of ``a`` and ``b`` (each at least
    ``m`` long), seeded by the ``m``-grams of b that occur at most :data:`_MAX_POSITIONS`
    times in it: (length, start in a, start in b), in no order. Short texts by Python,
    longer ones by numpy, or by the compiled kernel when the kernels are loaded (or on)."""
    la, lb = len(a), len(b)
    if la + lb < _VECTOR_FROM:
        return [
            (_match_length(a, b, i, j, m, min(la - i, lb - j)), i, j)
            for i, j in _starts_py(a, b, m)
        ]
    if kernels.wanted(la + lb):
        i, j, n = kernels.load("_text").maximal_matches(_codes(a), _codes(b), m, _MAX_POSITIONS)
        return list(zip(n.tolist(), i.tolist(), j.tolist(), strict=True))
    return [
        (k if k == m else _match_length(a, b, i, j, k, min(la - i, lb - j)), i, j)
        for i, j, k in _starts(a, b, m)
    ]


def shared_passages(a: str, b: str, *, min_len: int = 6, limit: int | None = 20) -> list[Passage]:
    """Non-overlapping common passages of at least ``min_len`` characters, longest first."""
    if min_len < 1:
        raise ValueError(f"min_len must be at least 1, got {min_len}")
    la, lb = len(a), len(b)
    if la < min_len or lb < min_len:
        return []
    if a == b and _seed_count(a, a[:min_len], _MAX_POSITIONS + 1) <= _MAX_POSITIONS:
        # the whole text is the longest passage, and every other one lies inside it (an
        # exact copy's evidence); unless its first seed is too common to be followed
        return [Passage(0, 0, la, a)]
    found = _matches(a, b, min_len)
    found.sort(key=lambda t: (-t[0], t[1], t[2]))
    used_a = bytearray(la)
    used_b = bytearray(lb)
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
