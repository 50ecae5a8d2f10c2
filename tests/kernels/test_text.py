"""The compiled boilerplate scan (the lines holding a hint or a dateline prefix, folded
texts, datelines) strips what the regular expressions strip; the figures kernel is compared
in test_sketch.py, through the sketches' numbers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import normalize
from neardup.boilerplate import strip_boilerplate_all

from .strategies import TEXTS

pytest.importorskip("numba")


def stripped(texts: list[str], mode: str) -> list[str]:
    """strip_boilerplate_all of ``texts`` with the kernels ``on`` or ``off``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", mode)
        return strip_boilerplate_all(texts)


@settings(max_examples=300)
@given(st.lists(TEXTS, min_size=1, max_size=5))
def test_boilerplate_scan_matches_reference(texts: list[str]) -> None:
    """Raw texts: the compiled scan strips what the regular expressions strip."""
    assert stripped(texts, "on") == stripped(texts, "off")


@settings(max_examples=300)
@given(st.lists(TEXTS, min_size=1, max_size=5))
def test_boilerplate_scan_matches_reference_on_normalized_text(texts: list[str]) -> None:
    """Normalized texts (as the engine strips them): the same."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", "off")
        normalized = [normalize(t) for t in texts]
    assert stripped(normalized, "on") == stripped(normalized, "off")
