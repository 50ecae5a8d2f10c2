"""The compiled sketching kernel gives the numpy reference's sketches, field for field."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.engine.config import DedupConfig
from neardup.engine.sketches import _compiled_sketches, _numpy_sketches, prepare_all

from .strategies import TEXTS

pytest.importorskip("numba")


def assert_same(texts: list[str], cfg: DedupConfig) -> None:
    """Both paths sketch ``texts`` (prepared as the engine does) identically."""
    prepared = prepare_all(texts, cfg)
    for mine, ref in zip(
        _compiled_sketches(prepared, cfg), _numpy_sketches(prepared, cfg), strict=True
    ):
        assert mine.text == ref.text
        assert mine.n_units == ref.n_units
        assert mine.numbers == ref.numbers
        for field in ("shingles", "vocab", "signature", "bands"):
            a, b = getattr(mine, field), getattr(ref, field)
            assert a.dtype == b.dtype, field
            assert np.array_equal(a, b), field
        assert np.array_equal(np.asarray(mine.vocab_index), np.asarray(ref.vocab_index))


@settings(max_examples=150)
@given(st.lists(TEXTS, min_size=1, max_size=6))
def test_sketches_match_numpy(texts: list[str]) -> None:
    """Shingle codes, vocabularies, signatures, band keys and figures are the reference's."""
    assert_same(texts, DedupConfig())


@settings(max_examples=40)
@given(
    st.lists(TEXTS, min_size=1, max_size=4),
    st.integers(1, 6),
    st.integers(1, 12),
    st.sampled_from([16, 64, 128, 256]),
)
def test_sketches_match_numpy_for_any_widths(
    texts: list[str], cjk_width: int, word_width: int, num_perm: int
) -> None:
    """Other shingle widths and signature sizes give the reference's sketches too."""
    assert_same(texts, DedupConfig(cjk_width=cjk_width, word_width=word_width, num_perm=num_perm))


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "，。！",
        "中",
        "a",
        "天气晴朗",
        "the quick brown fox",
        "𠀀𠀁𠀂𠀃𠀄𠀅",
        "𝐀𝐁 𝐂𝐃 𝐄𝐅 𝐆𝐇",
        "x" * 70_000,
    ],
)
def test_edge_texts_match_numpy(text: str) -> None:
    """Empty, one-unit, astral-only and very long texts (a 32-bit vocabulary index)."""
    assert_same([text, "临江地铁5号线一期今日开通运营", text], DedupConfig())


def _words(seed: int, n: int, alphabet: str, length: int) -> str:
    rng = np.random.default_rng(seed)
    letters = np.array(list(alphabet))
    return " ".join("".join(rng.choice(letters, length)) for _ in range(n))


@pytest.mark.parametrize(
    "texts",
    [
        [_words(1, 3000, "abcdefghijklmnopqrstuvwxyz", 5)],  # thousands of distinct shingles
        ["".join(_words(2, 2000, "天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往", 1).split())],
        [_words(3, 400, "ab", 3) * 5, _words(4, 2000, "abcdefghij", 4)],  # repeats: crowded
        ["临江地铁 " * 900 + _words(5, 900, "abcdefghijklmnopqrstuvwxyz", 6)],
        ["ax " * 200],  # two codes sharing one byte: the radix sort makes an odd number of passes
    ],
)
def test_long_texts_match_numpy(texts: list[str]) -> None:
    """Texts of thousands of shingles, distinct or repeated, whose vocabularies the kernel
    sorts by buckets or, where they crowd, by radix, give the reference's sketches."""
    assert_same(texts, DedupConfig())


def test_bucket_sort_sorts_or_declines() -> None:
    """The vocabulary's bucket sort orders random keys (ties included) and declines keys that
    crowd its buckets, leaving them to the radix sort."""
    from neardup import kernels

    k = kernels.load("_sketch")
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 17, 1000, 4096):
        keys = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        keys[: n // 50 + 1] = keys[n // 2]  # some ties
        order = np.empty(n, dtype=np.int64)
        ordered = np.empty(n, dtype=np.uint32)
        assert k._bucket_argsort(keys, order, ordered, np.empty(2 * n + 3, dtype=np.int64))
        assert np.array_equal(ordered, np.sort(keys))
        assert np.array_equal(keys[order], ordered)
        assert sorted(order.tolist()) == list(range(n))
    crowded = rng.integers(0, 1 << 20, 1000, dtype=np.uint64).astype(np.uint32)  # top bits 0
    order, ordered = np.empty(1000, dtype=np.int64), np.empty(1000, dtype=np.uint32)
    assert not k._bucket_argsort(crowded, order, ordered, np.empty(2003, dtype=np.int64))
