"""Hashed shingles of a text, vectorized: the features behind MinHash, jaccard and containment.

A text is cut into units — its letters, digits and CJK characters, whitespace and
punctuation dropped — and every run of ``cjk_width`` units starting at a CJK character, or
``word_width`` units starting at any other letter or digit, becomes one shingle. Everything
is computed on the array of code points with numpy: units are classified by a lookup table,
shingles are hashed with a polynomial rolling hash, and each value is finished with the
SplitMix64 mixer. All arithmetic is modulo 2^64 on unsigned integers, so
the hashes are the same in every process and on every machine.

>>> f = shingle_hashes("the cat sat on the mat")
>>> f.n_units, len(f.hashes), sorted(set(f.widths.tolist()))
(17, 9, [9])
>>> g = shingle_hashes("the cat sat on a mat")
>>> len(set(f.hashes.tolist()) & set(g.hashes.tolist()))
3
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from .errors import ConfigError
from .hashing import mix

__all__ = [
    "Shingles",
    "astral_words",
    "covered_units",
    "difference",
    "distinct",
    "pack_codes",
    "shingle_hashes",
    "symmetric_difference",
    "union",
    "unit_classes",
    "unit_codes",
    "unit_offsets",
]

U64 = npt.NDArray[np.uint64]
A = TypeVar("A", bound=npt.NDArray[Any])


def distinct(values: A, kind: Literal["quicksort", "stable"] = "quicksort") -> A:
    """The distinct values of a 1-d array, sorted: ``np.unique(values)``, by a sort (of
    ``kind``: "stable" is faster on values already sorted in blocks) and a comparison of
    neighbours (numpy 2.3 and later hash the values first, which makes ``np.unique`` 20-40
    times slower on the few thousand codes of one text).

    >>> distinct(np.array([3, 1, 3, 2], dtype=np.uint32)).tolist()
    [1, 2, 3]
    """
    out = np.sort(values, kind=kind)
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out  # type: ignore[return-value]


def union(a: A, b: npt.NDArray[Any]) -> A:
    """``np.union1d(a, b)`` without its ``np.unique`` (see :func:`distinct`).

    >>> union(np.array([3, 1]), np.array([2, 3])).tolist()
    [1, 2, 3]
    """
    both: A = np.concatenate((a, b))  # type: ignore[assignment]
    return distinct(both)


def difference(a: A, b: npt.NDArray[Any]) -> A:
    """``np.setdiff1d(a, b)``: the distinct values of ``a`` not in ``b``, sorted.

    >>> difference(np.array([3, 1, 3, 2]), np.array([2])).tolist()
    [1, 3]
    """
    mine = distinct(a)
    return mine[~np.isin(mine, b)]  # type: ignore[return-value]


def symmetric_difference(a: A, b: npt.NDArray[Any]) -> A:
    """``np.setxor1d(a, b)``: the distinct values in one of ``a`` and ``b`` only, sorted.

    >>> symmetric_difference(np.array([1, 2, 2]), np.array([2, 3])).tolist()
    [1, 3]
    """
    both = np.sort(np.concatenate((distinct(a), distinct(b))))
    if len(both) < 2:
        return both  # type: ignore[return-value]
    alone = np.ones(len(both), dtype=np.bool_)
    same = both[1:] == both[:-1]
    alone[1:] &= ~same
    alone[:-1] &= ~same
    return both[alone]  # type: ignore[return-value]


_SEP, _WORD, _CJK, _JOIN = 0, 1, 2, 3
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
_ASTRAL_CJK = (0x20000, 0x3134F)
_B1 = np.uint64(0x100000001B3)  # word hash base (FNV prime, odd)
_B2 = np.uint64(0x9E3779B97F4A7C15)  # shingle hash base (odd)
_WORD_TAG = np.uint64(1 << 63)


@functools.cache
def _classes() -> npt.NDArray[np.uint8]:
    """Class of every BMP code point: separator, word character, CJK, or word joiner."""
    table = np.zeros(0x10000, dtype=np.uint8)
    chars = "".join(map(chr, range(0x10000)))
    table[[i for i, ch in enumerate(chars) if ch.isalnum()]] = _WORD
    for lo, hi in _CJK_RANGES:
        table[lo : hi + 1] = _CJK
    for ch in ".'-":
        table[ord(ch)] = _JOIN
    return table


def unit_classes() -> npt.NDArray[np.uint8]:
    """The class of every BMP code point (0 separator, 1 letter or digit, 2 CJK, 3 a word
    joiner), as the shingles see them (the compiled kernels take this table)."""
    return _classes()


def astral_words(cp: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """The distinct code points of ``cp`` beyond the BMP that are letters or digits and not
    CJK (sorted): what the class table cannot say of them."""
    if len(cp) == 0 or int(cp.max()) < 0x10000:
        return np.zeros(0, dtype=np.uint32)
    astral = distinct(cp[cp >= 0x10000])
    cjk = (astral >= _ASTRAL_CJK[0]) & (astral <= _ASTRAL_CJK[1])
    words = [c for c in astral[~cjk].tolist() if chr(c).isalnum()]
    return np.array(words, dtype=np.uint32)


def _powers(base: np.uint64, n: int) -> U64:
    p = np.full(max(n, 1), base, dtype=np.uint64)
    p[0] = 1
    return np.cumprod(p, dtype=np.uint64)[:n]


_B2_INV = np.uint64(pow(int(_B2), -1, 1 << 64))  # _B2 is odd, so invertible modulo 2^64
_POWERS_KEPT = 1 << 20  # longest power tables kept between calls (8 MB each)
_power_tables: dict[int, tuple[U64, U64]] = {}


def _power_tables_for(n: int) -> tuple[U64, U64]:
    """_B2^k and _B2^-k modulo 2^64 for k < n (or more)."""
    size = 1 << max(n - 1, 1).bit_length()  # a power of two, so few distinct tables
    if size > _POWERS_KEPT:  # a very long text: tables of its own length, not kept
        return _powers(_B2, n), _powers(_B2_INV, n)
    cached = _power_tables.get(size)
    if cached is not None:
        return cached
    tables = (_powers(_B2, size), _powers(_B2_INV, size))
    # keep the largest so far; the smaller sizes are its prefixes
    _power_tables.clear()
    for bits in range(size.bit_length()):
        _power_tables[1 << bits] = (tables[0][: 1 << bits], tables[1][: 1 << bits])
    return tables


def _window_hashes(w: int, powers: U64, prefix: U64) -> U64:
    """The polynomial hash sum(codes[i + t] * _B2^(w - 1 - t) for t < w) of every window of
    ``w`` codes, from prefix[k] = sum(codes[j] * _B2^-j for j < k).

    A window is the difference of two prefix sums times a power: the same value, modulo 2^64,
    as the Horner loop over the window, in two array operations whatever ``w`` is.
    """
    m = len(prefix) - 1
    diff: U64 = prefix[w:] - prefix[: m - w + 1]
    diff *= powers[w - 1 : m]
    return diff


def _units(text: str) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.bool_]]:
    """unit_codes, the code points as they come (32-bit)."""
    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    if cp.size == 0:
        return np.zeros(0, np.uint32), np.zeros(0, np.bool_)
    if cp.max() < 0x10000:
        cls = _classes()[cp]
    else:
        cls = np.zeros(cp.size, dtype=np.uint8)
        bmp = cp < 0x10000
        cls[bmp] = _classes()[cp[bmp]]
        astral = ~bmp
        cjk = (cp >= _ASTRAL_CJK[0]) & (cp <= _ASTRAL_CJK[1])
        cls[astral & cjk] = _CJK
        rest = np.flatnonzero(astral & ~cjk)
        cls[rest] = [_WORD if chr(c).isalnum() else _SEP for c in cp[rest].tolist()]
    keep = (cls == _WORD) | (cls == _CJK)
    return cp[keep], cls[keep] == _CJK


def unit_codes(text: str) -> tuple[U64, npt.NDArray[np.bool_]]:
    """The units of ``text`` (its letters, digits and CJK characters, in order; whitespace and
    punctuation dropped) as code points, and whether each is a CJK character."""
    codes, cjk = _units(text)
    return codes.astype(np.uint64), cjk


def unit_offsets(text: str) -> npt.NDArray[np.intp]:
    """Where each unit of ``text`` is: the index of its character (what a unit position of
    a shingle means in the text).

    >>> unit_offsets("ab, 中").tolist()
    [0, 1, 4]
    """
    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    if cp.size == 0:
        return np.zeros(0, dtype=np.intp)
    cls = np.zeros(cp.size, dtype=np.uint8)
    bmp = cp < 0x10000
    cls[bmp] = _classes()[cp[bmp]]
    astral = np.flatnonzero(~bmp)
    for i in astral.tolist():
        c = int(cp[i])
        cjk = _ASTRAL_CJK[0] <= c <= _ASTRAL_CJK[1]
        cls[i] = _CJK if cjk else (_WORD if chr(c).isalnum() else _SEP)
    return np.flatnonzero((cls == _WORD) | (cls == _CJK))


@dataclass(frozen=True, slots=True)
class Shingles:
    """The hashed shingles of one text, in text order, and how many units it has."""

    hashes: U64
    widths: npt.NDArray[np.uint8]
    n_units: int

    def covered(self, shared: npt.NDArray[np.bool_]) -> int:
        """How many units are covered by the shingles marked in ``shared``."""
        idx = np.flatnonzero(shared)
        return covered_units(self.n_units, idx, self.widths[idx])


def pack_codes(
    hashes: U64, cjk_width: int, widths: npt.NDArray[np.uint8]
) -> npt.NDArray[np.uint32]:
    """32-bit shingle codes: the high half of the hash, lowest bit set for CJK-width shingles."""
    top = (hashes >> np.uint64(32)).astype(np.uint32)
    packed: npt.NDArray[np.uint32] = (top & np.uint32(0xFFFFFFFE)) | (widths == cjk_width).astype(
        np.uint32
    )
    return packed


def covered_units(
    n_units: int, starts: npt.NDArray[np.intp], widths: npt.NDArray[np.integer]
) -> int:
    """How many of a text's ``n_units`` units lie inside the shingles starting at ``starts``
    (ascending) with these ``widths``: the length of the union of the intervals
    [start, start + width), cut at the end of the text.

    >>> covered_units(10, np.array([0, 2, 7]), np.array([3, 3, 5]))
    8
    """
    if len(starts) == 0:
        return 0
    ends = np.minimum(starts + widths.astype(np.int64), n_units)
    reach = np.maximum.accumulate(ends)  # the furthest any earlier interval reaches
    begins = np.maximum(starts[1:], reach[:-1])
    return int(ends[0] - starts[0]) + int(np.maximum(ends[1:] - begins, 0).sum())


def shingle_hashes(text: str, *, cjk_width: int = 5, word_width: int = 9) -> Shingles:
    """The hashed shingles of an already normalized text (see the module's docstring).

    A text with fewer units than one shingle needs gives one shingle of all its units.
    """
    if not (1 <= cjk_width <= 255 and 1 <= word_width <= 255):
        raise ConfigError(
            f"shingle widths must be between 1 and 255, got cjk_width={cjk_width}, word_width={word_width}"
        )
    codes, cjk = _units(text)
    m = len(codes)
    if m == 0:
        return Shingles(np.zeros(0, np.uint64), np.zeros(0, np.uint8), 0)
    powers, inv_powers = _power_tables_for(m + 1)
    prefix = np.zeros(m + 1, dtype=np.uint64)
    np.cumsum(codes * inv_powers[:m], out=prefix[1:])
    # a unit starts a shingle of its width when that many units are left
    widths = np.where(cjk, np.uint8(cjk_width), np.uint8(word_width))
    ends = np.arange(m) + widths
    starts = np.flatnonzero(ends <= m)
    k = len(starts)
    if k == 0:
        # too few units for any shingle: one shingle of all of them
        whole = _window_hashes(m, powers, prefix) + np.uint64(m)
        return Shingles(mix(whole), np.array([m], np.uint8), m)
    if starts[-1] == k - 1:  # the usual case: every unit but a few at the end starts one
        ends, widths, first = ends[:k], widths[:k], prefix[:k]
    else:
        ends, widths, first = ends[starts], widths[starts], prefix[starts]
    # the polynomial hash of units [i, end): see _window_hashes
    hashes = prefix[ends] - first
    hashes *= powers[ends - 1]
    hashes += widths
    return Shingles(mix(hashes), widths, m)
