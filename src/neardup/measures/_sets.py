"""Shingle sets of two texts, for jaccard and containment."""

from __future__ import annotations

from ..features import shingle_set


def pair(a: str, b: str, cjk_width: int, word_width: int) -> tuple[set[str], set[str]]:
    """The shingle sets of both texts."""
    return (
        shingle_set(a, cjk_width=cjk_width, word_width=word_width),
        shingle_set(b, cjk_width=cjk_width, word_width=word_width),
    )
