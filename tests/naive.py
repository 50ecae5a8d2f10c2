"""Textbook pure-Python versions of the measures: the references the fast code must equal,
and the source documents' own way of computing them (timed beside ours in bench/)."""

from __future__ import annotations

from collections import Counter


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance by the full dynamic programme."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        prev = cur
    return prev[-1]


def levenshtein(a: str, b: str) -> float:
    """1 - edit distance / longer length."""
    longest = max(len(a), len(b))
    return 1.0 if longest == 0 else 1.0 - edit_distance(a, b) / longest


def lcsubstr_length(a: str, b: str) -> int:
    """Longest common substring by the dynamic programme over all (i, j)."""
    best = 0
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0] * (len(b) + 1)
        for j, cb in enumerate(b, 1):
            if ca == cb:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def lcsubstr(a: str, b: str) -> float:
    """Longest common substring / shorter length."""
    if not a and not b:
        return 1.0
    shorter = min(len(a), len(b))
    return 0.0 if shorter == 0 else lcsubstr_length(a, b) / shorter


def _offsets(a: str, b: str) -> list[list[bool]]:
    """For every offset of b against a, the agreement at each overlapping position."""
    out = []
    for d in range(-(len(a) - 1), len(b)):
        out.append([a[i] == b[i + d] for i in range(len(a)) if 0 <= i + d < len(b)])
    return out


def mcc(a: str, b: str) -> float:
    """Best offset's count of agreeing characters / shorter length, trying every offset."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    return max(sum(diag) for diag in _offsets(a, b)) / min(len(a), len(b))


def contiguity(a: str, b: str) -> float:
    """Best offset's sum of squared run lengths / shorter length squared."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    best = 0
    for diag in _offsets(a, b):
        total, run = 0, 0
        for agree in [*diag, False]:
            if agree:
                run += 1
            else:
                total += run * run
                run = 0
        best = max(best, total)
    return best / min(len(a), len(b)) ** 2


def common(a: str, b: str) -> float:
    """Shared characters with multiplicity / longer length."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    ca, cb = Counter(a), Counter(b)
    return sum(min(n, cb[ch]) for ch, n in ca.items()) / longest


def shared_passages(
    a: str, b: str, *, min_len: int = 6, limit: int | None = 20, max_positions: int = 64
) -> list[tuple[int, int, int, str]]:
    """Greedy string tiling by brute force: every maximal match of at least ``min_len``
    characters that starts on a seed (an ``min_len``-gram found at most ``max_positions``
    times in b), longest first, kept when it overlaps no kept one in either text."""
    m = min_len
    if len(a) < m or len(b) < m:
        return []
    count = Counter(b[j : j + m] for j in range(len(b) - m + 1))
    found = []
    for i in range(len(a) - m + 1):
        for j in range(len(b) - m + 1):
            if a[i : i + m] != b[j : j + m] or count[b[j : j + m]] > max_positions:
                continue
            if i > 0 and j > 0 and a[i - 1] == b[j - 1]:
                continue
            k = m
            while i + k < len(a) and j + k < len(b) and a[i + k] == b[j + k]:
                k += 1
            found.append((k, i, j))
    found.sort(key=lambda t: (-t[0], t[1], t[2]))
    used_a, used_b = set(), set()
    out = []
    for k, i, j in found:
        if used_a & set(range(i, i + k)) or used_b & set(range(j, j + k)):
            continue
        used_a |= set(range(i, i + k))
        used_b |= set(range(j, j + k))
        out.append((i, j, k, a[i : i + k]))
        if limit is not None and len(out) >= limit:
            break
    return out
