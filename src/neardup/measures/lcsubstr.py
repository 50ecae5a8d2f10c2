"""lcsubstr: the longest common contiguous substring, divided by the shorter length.

The source documents' measure for titles. Found by binary search on the length with
rolling hashes of every substring of that length (numpy, O((n + m) log n)), each hit
verified by comparing the strings themselves, so the answer is exact and long texts are fine.
Short pairs (titles) skip numpy: the same binary search with ``str.find``.

>>> normalized_similarity("abcdefgh", "xxcdefyy", processor=None)
0.5
>>> longest_common_substring("北京时间上午十点", "今天上午十点整", processor=None)
'上午十点'
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare, ratio
from ._diagonals import codes

__all__ = [
    "distance",
    "longest_common_substring",
    "normalized",
    "normalized_similarity",
    "similarity",
]

_BASE = np.uint64(0x9E3779B97F4A7C15)
U64 = npt.NDArray[np.uint64]


def _powers(base: np.uint64, size: int) -> U64:
    """base^0 .. base^(size-1) mod 2^64."""
    p = np.full(size, base, dtype=np.uint64)
    p[0] = 1
    with np.errstate(over="ignore"):
        return np.cumprod(p, dtype=np.uint64)


#: Pairs with at most this many character pairs (n * m) take the plain-string path.
_SHORT_CELLS = 10_000


def _grow_short(a: str, b: str) -> tuple[int, int]:
    """(length, start in a) of a longest common substring of short strings, with ``in`` on
    the strings: from each start in ``a``, the longest substring found so far is grown by
    one character while ``b`` holds it, so at most ``len(a)`` + the answer tests in all (a
    binary search on the length tests every start at each length it tries). The first
    start in ``a`` that reaches the final length is the first on ties."""
    n = len(a)
    length = start = 0
    for i in range(n):
        if i + length >= n:
            break  # no later start leaves room for a longer substring
        while i + length < n and a[i : i + length + 1] in b:
            length, start = length + 1, i
    return length, start


def _find_short(a: str, b: str) -> tuple[int, int, int]:
    """:func:`_find` for short strings (:func:`_grow_short`, then the first occurrence in
    ``b``)."""
    length, start = _grow_short(a, b)
    if length == 0:
        return 0, 0, 0
    return length, start, b.find(a[start : start + length])


def _find(a: str, b: str) -> tuple[int, int, int]:
    """(length, start in a, start in b) of a longest common substring: the first in a on
    ties, and its first occurrence in b."""
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return 0, 0, 0
    if n * m <= _SHORT_CELLS:
        return _find_short(a, b)
    size = max(n, m)
    powers = _powers(_BASE, size)
    # _BASE is odd, so invertible mod 2^64: B^-i moves a window's hash to position 0.
    inv_powers = _powers(np.uint64(pow(int(_BASE), -1, 1 << 64)), size)
    with np.errstate(over="ignore"):
        prefix = []
        for s, length in ((a, n), (b, m)):
            h = np.zeros(length + 1, dtype=np.uint64)
            np.cumsum((codes(s).astype(np.uint64) + np.uint64(1)) * powers[:length], out=h[1:])
            prefix.append(h)
    ha, hb = prefix

    def hit(length: int) -> tuple[int, int] | None:
        with np.errstate(over="ignore"):
            wa = (ha[length:] - ha[: n - length + 1]) * inv_powers[: n - length + 1]
            wb = (hb[length:] - hb[: m - length + 1]) * inv_powers[: m - length + 1]
        _, ia, ib = np.intersect1d(wa, wb, return_indices=True)
        pairs = sorted(zip(ia.tolist(), ib.tolist(), strict=True))
        for i, j in pairs:
            if a[i : i + length] == b[j : j + length]:
                return i, j
        # Only the first window of each shared hash was compared, and every one was a collision
        # (Thue–Morse strings collide for any base mod 2^64): compare every window before "no".
        for i, _ in pairs:
            h = wa[i]
            in_b = {b[k : k + length]: k for k in reversed(np.flatnonzero(wb == h).tolist())}
            for k in np.flatnonzero(wa == h).tolist():
                found = in_b.get(a[k : k + length])
                if found is not None:
                    return k, found
        return None

    fast = _seeded(a, b, ha, hb, inv_powers)
    if fast is not None:
        return fast
    lo, hi, best = 0, min(n, m), (0, 0, 0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        found = hit(mid)
        if found is None:
            hi = mid - 1
        else:
            lo, best = mid, (mid, found[0], found[1])
    return best


_SEED = 8  # seed length of the fast path


def _windows(h: U64, inv_powers: U64, n: int, length: int) -> U64:
    with np.errstate(over="ignore"):
        return (h[length:] - h[: n - length + 1]) * inv_powers[: n - length + 1]


def _seeded(a: str, b: str, ha: U64, hb: U64, inv_powers: U64) -> tuple[int, int, int] | None:
    """The answer in one pass when it can be had cheaply, else None (use the binary search).

    Every common substring of ``_SEED`` or more characters is a run of consecutive seed
    matches (equal windows of ``_SEED`` characters) on one diagonal, so its length is the run
    length + ``_SEED`` - 1. Works when no seed repeats in ``b``; the result is checked.
    """
    n, m = len(a), len(b)
    if min(n, m) < 2 * _SEED:
        return None
    wa, wb = _windows(ha, inv_powers, n, _SEED), _windows(hb, inv_powers, m, _SEED)
    ub, first_b, count_b = np.unique(wb, return_index=True, return_counts=True)
    pos = np.minimum(np.searchsorted(ub, wa), len(ub) - 1)
    hit = ub[pos] == wa
    if not hit.any() or (count_b[pos[hit]] > 1).any():
        return None  # shorter than a seed, or repeated seeds: the binary search handles it
    i = np.flatnonzero(hit)
    d = first_b[pos[i]] - i
    order = np.lexsort((i, d))
    i, d = i[order], d[order]
    brk = np.concatenate(([True], (np.diff(d) != 0) | (np.diff(i) != 1)))
    starts = np.flatnonzero(brk)
    lengths = np.diff(np.concatenate((starts, [len(i)]))) + _SEED - 1
    top = np.flatnonzero(lengths == lengths.max())
    i0s, j0s = i[starts[top]], i[starts[top]] + d[starts[top]]
    k = np.lexsort((j0s, i0s))[0]
    length, i0, j0 = int(lengths[top[k]]), int(i0s[k]), int(j0s[k])
    if a[i0 : i0 + length] != b[j0 : j0 + length]:
        return None  # a hash collision made a false seed
    return length, i0, j0


def longest_common_substring(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> str:
    """One longest common substring of a and b (after processing)."""
    a, b = prepare(a, b, processor)
    length, i, _ = _find(a, b)
    return a[i : i + length]


def similarity(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """Length of the longest common substring."""
    a, b = prepare(a, b, processor)
    return _find(a, b)[0]


def distance(a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR) -> int:
    """Length of the shorter text minus the longest common substring."""
    a, b = prepare(a, b, processor)
    return min(len(a), len(b)) - _find(a, b)[0]


def normalized_similarity(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, score_cutoff: float | None = None
) -> float:
    """Longest common substring / length of the shorter text."""
    a, b = prepare(a, b, processor)
    score = normalized(a, b)
    return score if not a or not b else cutoff(score, score_cutoff)  # empty: no cutoff


def normalized(a: str, b: str) -> float:
    """:func:`normalized_similarity` of two strings as they are: no processor, no checks
    (the engine's entry, once per pair of short texts it verifies)."""
    n, m = len(a), len(b)
    if not n or not m:
        return 1.0 if not n and not m else 0.0  # empty shares nothing with non-empty
    if n * m <= _SHORT_CELLS:  # the length alone (a common substring fits in both: <= 1)
        return _grow_short(a, b)[0] / (n if n < m else m)
    return ratio(_find(a, b)[0], min(n, m))
