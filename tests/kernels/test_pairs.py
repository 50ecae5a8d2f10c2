"""The compiled pair kernels give the numpy reference's placements, spans and verdicts,
with every kind of template guard."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from neardup.engine.config import DedupConfig
from neardup.engine.sketches import Sketch, _numpy_sketches, prepare
from neardup.engine.templates import CommonShingles, TemplateTable, slots

from .strategies import PIECES

v = importlib.import_module("neardup.engine.verify")  # the package exports a function of that name

pytest.importorskip("numba")

CFG = DedupConfig()
STORY = st.lists(
    st.sampled_from([p for p in PIECES if p.strip()] + list("天气晴朗的早晨")),
    min_size=1,
    max_size=80,
)


class EveryThird:
    """A guard of no type the kernels know: asked beforehand, shingle by shingle."""

    passage = 0

    def is_common(self, codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
        return np.asarray(codes % 3 == 0)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[Sketch, Sketch, list[Sketch]]:
    """Two related documents (the second copies a stretch of the first, edited, between
    text of its own) and a few more that feed the template counts."""
    words = draw(STORY)
    lo = draw(st.integers(0, len(words)))
    hi = draw(st.integers(lo, len(words)))
    copied = list(words[lo:hi])
    for _ in range(draw(st.integers(0, 3))):
        if copied:
            copied[draw(st.integers(0, len(copied) - 1))] = draw(st.sampled_from(PIECES))
    other = draw(STORY) if draw(st.booleans()) else []
    after = draw(STORY) if draw(st.booleans()) else []
    texts = ["".join(words), "".join(other + copied + after)]
    texts += ["".join(draw(STORY)) + "".join(words[: len(words) // 2]) for _ in range(2)]
    sketches = _numpy_sketches([prepare(t, CFG) for t in texts], CFG)
    return sketches[0], sketches[1], sketches


def guard_of(kind: int, docs: list[Sketch], data: st.DataObject) -> Any:
    """A guard of each kind the kernels take: none, counts, a template table, other."""
    if kind == 0:
        return None
    passage = data.draw(st.sampled_from([0, 1, 3, 8]))
    if kind == 1:
        guard = CommonShingles(limit=data.draw(st.integers(0, 3)), passage=passage)
        for d in docs:
            guard.add(d.vocab)
        return guard
    if kind == 2:
        slot_ids = np.unique(np.concatenate([slots(d.vocab) for d in docs]).astype(np.int64))
        n = len(slot_ids)
        seconds = np.asarray(
            data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=np.int64
        )
        later = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        firsts = seconds + np.asarray(later, dtype=np.int64)  # common no sooner than seen
        at = data.draw(st.integers(0, 5))
        return TemplateTable(slot_ids, firsts, at=at, limit=2, seconds=seconds, passage=passage)
    return EveryThird()


@settings(max_examples=200)
@given(pairs(), st.integers(0, 3), st.data())
def test_placement_and_span_match_numpy(
    pair: tuple[Sketch, Sketch, list[Sketch]], kind: int, data: st.DataObject
) -> None:
    """Placement both ways and the shared span are the reference's."""
    a, b, docs = pair
    guard = guard_of(kind, docs, data)
    for doc, other in ((a, b), (b, a)):
        place, span = v._placed(doc, other, CFG, guard, True)
        assert place == v._numpy_placement(doc, other, CFG, guard)
        assert span is not None
        first, last = v._shared_span(doc, other, CFG, guard)
        if first > last:
            assert span[0] > span[1]
        else:
            assert span == (first, last)
        if len(doc.vocab) == 0 or len(other.vocab) == 0:
            continue  # verify() never asks about the edges of an empty text
        assert v._may_be_edges(place, other, doc, CFG, guard, True) == v._may_be_edges(
            place, other, doc, CFG, guard, False
        )


@settings(max_examples=200)
@given(pairs(), st.integers(0, 3), st.data())
def test_verdicts_match_numpy(
    pair: tuple[Sketch, Sketch, list[Sketch]],
    kind: int,
    data: st.DataObject,
) -> None:
    """verify() decides every pair as the reference does, score for score."""
    a, b, docs = pair
    guard = guard_of(kind, docs, data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", "on")
        fast = [v.verify(a, b, CFG, guard), v.verify(b, a, CFG, guard)]
        mp.setenv("NEARDUP_KERNELS", "off")
        ref = [v.verify(a, b, CFG, guard), v.verify(b, a, CFG, guard)]
    event(f"duplicate: {ref[0].is_duplicate}, coverage: {ref[0].score > 0}")
    assert fast == ref
