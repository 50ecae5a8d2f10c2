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
