"""Hashed shingles: which characters are units, how wide each shingle is, and that every hash
equals a naive pure-Python computation and is the same in every process."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError
from neardup.shingling import shingle_hashes, unit_codes
from neardup.sketch.minhash import minhash

FAST = settings(max_examples=80, deadline=None)

MASK = (1 << 64) - 1
B2 = 0x9E3779B97F4A7C15
CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
ASTRAL_CJK = (0x20000, 0x3134F)

# Letters, CJK, digits, astral ideographs, spaces and punctuation of both scripts.
MIXED = st.text(alphabet="ab c1.,-'中文天气，。！ 𠀀Ωé", max_size=60)
LONG_MIXED = st.text(alphabet="abcdxyz中文天气晴朗12", min_size=9, max_size=40)


def splitmix(z: int) -> int:
    """The SplitMix64 finalizer on Python ints."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def is_cjk(ch: str) -> bool:
    """Whether a character is in one of the CJK blocks shingling treats as CJK."""
    o = ord(ch)
    lo, hi = ASTRAL_CJK
    return any(a <= o <= b for a, b in CJK_RANGES) or lo <= o <= hi


def naive_units(text: str) -> list[tuple[int, bool]]:
    """(code point, is CJK) of every letter, digit or CJK character, in order."""
    return [(ord(c), is_cjk(c)) for c in text if is_cjk(c) or c.isalnum()]


def poly(codes: list[int]) -> int:
    """The polynomial hash of a run of code points, modulo 2^64."""
    h = 0
    for c in codes:
        h = (h * B2 + c) & MASK
    return h


def naive_shingles(text: str, cjk_width: int, word_width: int) -> list[tuple[int, int, int]]:
    """(start, width, hash) of every shingle, by the definition, one window at a time."""
    units = naive_units(text)
    codes = [c for c, _ in units]
    m = len(codes)
    out = []
    for i, (_, cjk) in enumerate(units):
        w = cjk_width if cjk else word_width
        if i + w <= m:
            out.append((i, w, splitmix((poly(codes[i : i + w]) + w) & MASK)))
    if not out and m:
        out.append((0, m, splitmix((poly(codes) + m) & MASK)))
    return out


@pytest.mark.parametrize(
    ("text", "units", "cjk"),
    [
        ("Hello, world!", "Helloworld", "FFFFFFFFFF"),
        ("北京，天气。", "北京天气", "TTTT"),
        ("GDP增长5.2%", "GDP增长52", "FFFTTFF"),
        ("and chairman", "andchairman", "F" * 11),
        ("  \n\t", "", ""),
        ("「東京」と大阪", "東京と大阪", "TTTTT"),
        ("𠀀好 ok", "𠀀好ok", "TTFF"),
        ("Ωmega – 20 €", "Ωmega20", "FFFFFFF"),
    ],
)
def test_unit_codes_keeps_letters_digits_cjk(text: str, units: str, cjk: str) -> None:
    """unit_codes keeps letters, digits and CJK characters and drops spaces and punctuation."""
    codes, flags = unit_codes(text)
    assert "".join(map(chr, codes.tolist())) == units
    assert "".join("T" if f else "F" for f in flags.tolist()) == cjk
    assert codes.dtype == np.uint64


@given(MIXED)
@FAST
def test_unit_codes_match_naive(text: str) -> None:
    """unit_codes equals a per-character classification of the text."""
    codes, flags = unit_codes(text)
    assert list(zip(codes.tolist(), flags.tolist(), strict=True)) == naive_units(text)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("and chairman", "andchairman"),
        ("the cat sat on the mat", "the-cat, sat on... the mat!"),
        ("北京，天气 晴朗。", "北京天气晴朗"),
        ("GDP增长 5.2%，超过预期", "GDP增长52超过预期"),
        ("Apple 公司 发布 新品", "Apple公司发布新品"),
    ],
)
def test_spaces_and_punctuation_do_not_change_shingles(a: str, b: str) -> None:
    """Texts with the same units in the same order have the same shingles."""
    fa, fb = shingle_hashes(a), shingle_hashes(b)
    assert fa.hashes.tolist() == fb.hashes.tolist()
    assert fa.widths.tolist() == fb.widths.tolist()
    assert fa.n_units == fb.n_units


@pytest.mark.parametrize(
    ("text", "widths"),
    [
        ("北京abc天气", [2, 2, 3, 3, 3, 2]),
        ("abcdef", [3, 3, 3, 3]),
        ("一二三四", [2, 2, 2]),
        ("ab北京", [3, 3, 2]),
    ],
)
def test_widths_follow_the_starting_unit(text: str, widths: list[int]) -> None:
    """A shingle starting at a CJK character is cjk_width units wide, any other word_width."""
    f = shingle_hashes(text, cjk_width=2, word_width=3)
    assert f.widths.tolist() == widths


@pytest.mark.parametrize(
    ("text", "n_units"),
    [("北京", 2), ("hello", 5), ("ab北", 3), ("x", 1), ("天气 ok!", 4)],
)
def test_text_shorter_than_a_shingle_gives_one_shingle(text: str, n_units: int) -> None:
    """A text with fewer units than one shingle needs gives one shingle of all its units."""
    f = shingle_hashes(text)
    assert len(f.hashes) == 1
    assert f.widths.tolist() == [n_units]
    assert f.n_units == n_units


@pytest.mark.parametrize("text", ["", " ", "，。！？", "... --- !!!", "\n\n"])
def test_text_without_units_has_no_shingles(text: str) -> None:
    """Whitespace and punctuation alone give no units and no shingles."""
    f = shingle_hashes(text)
    assert f.n_units == 0
    assert len(f.hashes) == 0 and len(f.widths) == 0


@given(MIXED, st.integers(1, 6), st.integers(1, 10))
@FAST
def test_shingle_hashes_match_naive(text: str, cjk_width: int, word_width: int) -> None:
    """Every shingle's hash and width equal the window-by-window definition."""
    f = shingle_hashes(text, cjk_width=cjk_width, word_width=word_width)
    expected = naive_shingles(text, cjk_width, word_width)
    assert f.hashes.tolist() == [h for _, _, h in expected]
    assert f.widths.tolist() == [w for _, w, _ in expected]
    assert f.n_units == len(naive_units(text))


@given(LONG_MIXED, MIXED, MIXED)
@FAST
def test_equal_windows_hash_equal_anywhere(core: str, before: str, after: str) -> None:
    """The shingles of a passage reappear unchanged wherever the passage is quoted."""
    inner = set(shingle_hashes(core).hashes.tolist())
    outer = set(shingle_hashes(before + " " + core + " " + after).hashes.tolist())
    assert inner <= outer


@given(MIXED, st.data())
@FAST
def test_covered_counts_units_inside_marked_shingles(text: str, data: st.DataObject) -> None:
    """Shingles.covered counts the units inside the marked shingles, as a set union would."""
    f = shingle_hashes(text, cjk_width=3, word_width=4)
    spans = naive_shingles(text, 3, 4)
    marks = data.draw(st.lists(st.booleans(), min_size=len(spans), max_size=len(spans)))
    covered = {u for (i, w, _), m in zip(spans, marks, strict=True) if m for u in range(i, i + w)}
    assert f.covered(np.array(marks, dtype=np.bool_)) == len(covered)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("北京天气晴朗", [12963883169524662762, 3315643842024470016]),
        ("the cat sat on", [4727436868631103811, 11473336498576162677, 8718916359787273448]),
        ("北京", [73614323498515539]),
    ],
)
def test_shingle_hashes_are_pinned(text: str, expected: list[int]) -> None:
    """Shingle hashes keep their values, so stored fingerprints stay valid."""
    assert shingle_hashes(text).hashes.tolist() == expected


def test_minhash_of_shingles_is_pinned() -> None:
    """A MinHash signature of known shingles keeps its values."""
    sig = minhash(shingle_hashes("北京天气晴朗").hashes, num_perm=4)
    assert sig.tolist() == [
        3315643842024470016,
        9066451997701374016,
        12963883169524662762,
        3099345899450516491,
    ]


STABLE_TEXTS = [
    "临江市轨道交通5号线一期工程正式开通初期运营。",
    "The city's first light rail line opened on Saturday.",
    "GDP增长5.2%，Apple公司发布新品 iPhone。",
    "短",
]


def _fingerprints() -> dict[str, list[list[int]]]:
    """Shingle hashes and MinHash signatures of STABLE_TEXTS in this process."""
    return {
        "shingles": [shingle_hashes(t).hashes.tolist() for t in STABLE_TEXTS],
        "minhash": [minhash(shingle_hashes(t).hashes, num_perm=32).tolist() for t in STABLE_TEXTS],
    }


def test_hashes_are_stable_across_processes() -> None:
    """Another Python process, with another hash seed, computes the same shingles and MinHash."""
    code = (
        "import json, sys\n"
        "from neardup.shingling import shingle_hashes\n"
        "from neardup.sketch.minhash import minhash\n"
        "texts = json.loads(sys.argv[1])\n"
        "print(json.dumps({\n"
        "    'shingles': [shingle_hashes(t).hashes.tolist() for t in texts],\n"
        "    'minhash': [minhash(shingle_hashes(t).hashes, num_perm=32).tolist() for t in texts],\n"
        "}))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(STABLE_TEXTS)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=120,
    )
    assert json.loads(out.stdout) == _fingerprints()


def test_wide_shingles_on_long_text() -> None:
    """A shingle width above 255 is either refused or honoured, never a crash or a wrap."""
    with contextlib.suppress(ConfigError):
        f = shingle_hashes("a" * 300, word_width=256)
        assert len(f.hashes) == 300 - 256 + 1
        assert set(f.widths.tolist()) == {256}


def test_power_tables_serve_every_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts long and short in any order hash as the definition says, whether the power tables
    are kept between calls or (past the kept size) made for one call."""
    from neardup import shingling

    texts = ["北京天气晴朗" * 40, "ab", "the cat sat on the mat " * 30, "中文天气", "x" * 9]
    expected = [naive_shingles(t, 5, 9) for t in texts]
    for kept in (1 << 20, 4):
        monkeypatch.setattr(shingling, "_POWERS_KEPT", kept)
        monkeypatch.setattr(shingling, "_power_tables", {})
        for text, want in zip(texts + texts[::-1], expected + expected[::-1], strict=True):
            f = shingle_hashes(text)
            assert f.hashes.tolist() == [h for _, _, h in want]
            assert f.widths.tolist() == [w for _, w, _ in want]


@given(
    st.lists(st.integers(0, 2**32 - 1), max_size=300),
    st.sampled_from([np.uint32, np.int64, np.uint64]),
)
def test_distinct_is_np_unique(values: list[int], dtype: type) -> None:
    from neardup.shingling import distinct

    a = np.array(values, dtype=dtype)
    for kind in ("quicksort", "stable"):
        got = distinct(a, kind=kind)  # type: ignore[arg-type]
        assert got.dtype == a.dtype and np.array_equal(got, np.unique(a))


@given(
    st.lists(st.integers(0, 40), max_size=60),
    st.lists(st.integers(0, 40), max_size=60),
    st.sampled_from([np.uint32, np.int64, np.uint64]),
)
def test_set_operations_are_numpys(left: list[int], right: list[int], dtype: type) -> None:
    from neardup.shingling import difference, symmetric_difference, union

    a, b = np.array(left, dtype=dtype), np.array(right, dtype=dtype)
    for ours, theirs in (
        (union, np.union1d),
        (difference, np.setdiff1d),
        (symmetric_difference, np.setxor1d),
    ):
        got, want = ours(a, b), theirs(a, b)
        assert got.dtype == want.dtype and np.array_equal(got, want), ours.__name__
