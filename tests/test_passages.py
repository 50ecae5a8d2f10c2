"""Shared passages (the evidence beside a score) equal the brute-force greedy tiling of
tests/naive.py, on both of the fast path's ways of finding seeds and for exact copies."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup import passages
from neardup.passages import shared_passages
from tests import naive

# few letters, so that seeds repeat, runs cross each other and some seed is too common
_ALPHABETS = ["ab", "abc ", "北京天气晴", "北京 news 晴朗，", "中文English混合 12"]


def _as_tuples(found: list[passages.Passage]) -> list[tuple[int, int, int, str]]:
    return [(p.a_start, p.b_start, p.length, p.text) for p in found]


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[str, str]:
    letters = draw(st.sampled_from(_ALPHABETS))
    # up to 300 characters: across the length (160 together) where numpy finds the seeds
    a = draw(st.text(alphabet=letters, max_size=300))
    kind = draw(st.sampled_from(["other", "edited", "same"]))
    if kind == "same":
        return a, a
    if kind == "other":
        return a, draw(st.text(alphabet=letters, max_size=300))
    cut = draw(st.integers(0, len(a)))
    insert = draw(st.text(alphabet=letters, max_size=20))
    return a, a[:cut] + insert + a[cut + draw(st.integers(0, 10)) :]


@given(_pairs(), st.integers(1, 8), st.sampled_from([None, 1, 3, 20]))
def test_shared_passages_equal_the_brute_force_tiling(
    pair: tuple[str, str], min_len: int, limit: int | None
) -> None:
    """The same passages, in the same order, as the naive greedy string tiling."""
    a, b = pair
    got = _as_tuples(shared_passages(a, b, min_len=min_len, limit=limit))
    assert got == naive.shared_passages(a, b, min_len=min_len, limit=limit)


@given(_pairs(), st.integers(1, 8))
def test_both_ways_of_finding_seeds_agree(pair: tuple[str, str], min_len: int) -> None:
    """numpy and pure Python find the same starts of maximal matches."""
    a, b = pair
    if len(a) < min_len or len(b) < min_len:
        return
    vector = sorted((i, j) for i, j, _ in passages._starts(a, b, min_len))
    assert vector == sorted(passages._starts_py(a, b, min_len))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("哈" * 200, "哈" * 200),  # an exact copy whose every seed is too common
        ("哈" * 200 + "北京天气晴朗", "哈" * 200 + "北京天气晴朗"),
        ("x" * 70 + "今天北京天气晴朗，适合出游。", "今天北京天气晴朗，适合出游。" + "x" * 70),
        ("The quick brown fox jumps over the lazy dog. " * 3, "the quick brown fox. " * 4),
    ],
)
def test_seeds_repeated_too_often_are_not_followed(a: str, b: str) -> None:
    """A seed found more than 64 times in b starts no passage, in a copy too."""
    assert _as_tuples(shared_passages(a, b)) == naive.shared_passages(a, b)


def test_many_kinds_of_characters_take_the_slower_exact_keys() -> None:
    """A text of thousands of distinct characters (too many to pack six in one integer)
    finds the same passages."""
    a = "".join(chr(0x4E00 + i) for i in range(1500))
    assert (len(a) + 1) ** 6 >= 2**62
    b = a[500:900] + "插入的一段文字" + a[:200] + a[1300:]
    got = _as_tuples(shared_passages(a, b, limit=None))
    assert got == naive.shared_passages(a, b, limit=None) and len(got) == 3
