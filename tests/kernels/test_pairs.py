"""The compiled pair kernels give the numpy reference's placements, spans and verdicts,
with every kind of template guard."""

from __future__ import annotations

import dataclasses
import importlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from unittest import mock

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from neardup.engine import templates
from neardup.engine.config import DedupConfig
from neardup.engine.sketches import Sketch, _numpy_sketches, prepare
from neardup.engine.templates import CommonShingles, TemplateTable, slot_buckets, slots
from neardup.shingling import astral_words, unit_classes

from .strategies import PIECES, TEXTS

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
    if draw(st.booleans()):  # as a batch run keeps them: the vocabulary index, no codes
        sketches = [_index_only(sk) for sk in sketches]
    return sketches[0], sketches[1], sketches


def _index_only(sk: Sketch) -> Sketch:
    """The same sketch holding its vocabulary index instead of its shingle codes."""
    index = np.searchsorted(sk.vocab, sk.shingles)
    index = index.astype(np.uint16 if len(index) <= 1 << 16 else np.int32)  # as sketches do
    kept = Sketch(sk.text, None, sk.n_units, sk.signature, sk.bands, sk.vocab, sk.numbers, index)
    assert not kept.keeps_shingles and np.array_equal(kept.shingles, sk.shingles)
    return kept


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
        # with or without the bucket index the kernels search slots in
        buckets = slot_buckets(slot_ids) if data.draw(st.booleans()) else None
        return TemplateTable(
            slot_ids, firsts, at=at, limit=2, seconds=seconds, passage=passage, buckets=buckets
        )
    return EveryThird()


@settings(max_examples=200)
@given(pairs(), st.integers(0, 3), st.data())
def test_an_unscored_verdict_decides_as_the_scored_one(
    pair: tuple[Sketch, Sketch, list[Sketch]], kind: int, data: st.DataObject
) -> None:
    """verify(scored=False) (a document's candidates) gives the same verdict on the same
    story, score included, and the same copy share to a copy; a score it does not decide
    by (the coverage of a pair that is not the same story, the copy share of one that is
    not a copy) may come back before the figure rule's cap, never below the scored one."""
    a, b, docs = pair
    guard = guard_of(kind, docs, data)
    for later, earlier in ((a, b), (b, a)):
        full = v.verify(later, earlier, CFG, guard)
        quick = v.verify(later, earlier, CFG, guard, scored=False)
        event(f"same story: {full.is_duplicate}, copy: {full.is_copy}")
        assert quick.is_duplicate == full.is_duplicate and quick.is_copy == full.is_copy
        assert quick.score >= full.score and quick.copy_score >= full.copy_score
        if full.is_duplicate:
            assert dataclasses.replace(quick, copy_score=0.0) == dataclasses.replace(
                full, copy_score=0.0
            )
        if full.is_copy:
            assert quick == full


@settings(max_examples=200)
@given(pairs(), st.integers(0, 3), st.data())
def test_placement_and_span_match_numpy(
    pair: tuple[Sketch, Sketch, list[Sketch]], kind: int, data: st.DataObject
) -> None:
    """Placement both ways, the shared span and whether units lie outside the shared
    shingles between units inside them (chrome or not) are the reference's."""
    a, b, docs = pair
    guard = guard_of(kind, docs, data)
    for doc, other in ((a, b), (b, a)):
        place, span, holes = v._placed(doc, other, CFG, guard, True)
        assert place == v._numpy_placement(doc, other, CFG, guard)
        assert span is not None
        shared = v._shared(doc, other) if len(other.vocab) else np.zeros(0, bool)
        inside = np.flatnonzero(v.units_in(doc.shingles, shared, doc.n_units, CFG))
        event(f"holes: {holes}")
        assert holes == (len(inside) > 0 and len(inside) != inside[-1] - inside[0] + 1)
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


NUMBERED = st.lists(
    st.sampled_from(
        [p for p in PIECES if p.strip()] + list("天气晴朗的早晨三十二〇5") + ["𝟙", "𠀋"]
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300)
@given(
    NUMBERED,
    st.lists(st.tuples(st.integers(0, 200), st.sampled_from(list("三二〇59的a -"))), max_size=4),
    st.booleans(),
)
def test_the_changed_number_kernel_finds_what_numpy_finds(
    words: list[str], edits: list[tuple[int, str]], index_only: bool
) -> None:
    """The numbers a copy kept, read from the shingles, of a text whose copy has characters
    replaced (numerals or not) are the same with the one-pass kernel as with numpy."""
    text = "".join(words)
    copy = list(text)
    for at, c in edits:
        if copy:
            copy[at % len(copy)] = c
    sketches = _numpy_sketches([prepare(t, CFG) for t in (text, "".join(copy))], CFG)
    if index_only:
        sketches = [_index_only(sk) for sk in sketches]
    a, b = sketches
    for later, earlier in ((b, a), (a, b)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("NEARDUP_KERNELS", "on")
            fast = v._numbers_by_shingles(later, earlier, CFG)
            holes = v._placed(later, earlier, CFG, None, True)[2]
            mp.setenv("NEARDUP_KERNELS", "off")
            ref = v._numbers_by_shingles(later, earlier, CFG)
        event(f"a number changed: {ref < 1}")
        assert fast == ref
        assert ref == 1.0 or holes  # numbers_kept's shortcut: no holes, no number changed


LINE = st.tuples(
    st.sampled_from(["", "> ", ">", "  > ", "\t>>", " x> ", ">\u3000"]),
    st.lists(
        st.sampled_from([p for p in PIECES if p != "\n"] + list("天气晴朗的早晨")), max_size=12
    ),
).map(lambda t: t[0] + "".join(t[1]))


@st.composite
def quoting(draw: st.DrawFn) -> tuple[Sketch, Sketch, list[Sketch]]:
    """A reply quoting lines of an earlier post between lines of its own, the post, and a
    few more texts for the template counts."""
    post = draw(st.lists(LINE, min_size=1, max_size=12))
    reply = [
        draw(st.sampled_from(["> ", ">", " > "])) + line if draw(st.booleans()) else line
        for line in post
    ]
    reply = draw(st.permutations(reply + draw(st.lists(LINE, max_size=6))))
    texts = ["\n".join(post), "\n".join(reply)]
    texts += ["\n".join(draw(st.lists(LINE, max_size=6))) + "\n".join(post[:2]) for _ in range(2)]
    sketches = _numpy_sketches([prepare(t, CFG) for t in texts], CFG)
    if draw(st.booleans()):
        sketches = [_index_only(sk) for sk in sketches]
    return sketches[0], sketches[1], sketches


@settings(max_examples=200)
@given(st.one_of(quoting(), pairs()), st.integers(0, 3), st.sampled_from([0, 4, 24]), st.data())
def test_unquoted_placement_matches_numpy(
    pair: tuple[Sketch, Sketch, list[Sketch]], kind: int, short: int, data: st.DataObject
) -> None:
    """The placement of a text's own unquoted units is the reference's, both ways, with
    every kind of guard; so is the mask of its quoted units."""
    a, b, docs = pair
    guard = guard_of(kind, docs, data)
    cfg = DedupConfig(short_units=short)
    pairs_kernels = importlib.import_module("neardup.kernels._pairs")
    for doc, other in ((b, a), (a, b)):
        fast = v._unquoted(doc, other, cfg, guard, True)
        assert fast == v._unquoted(doc, other, cfg, guard, False)
        event(f"placed: {fast is not None}")
        for n in (doc.n_units, doc.n_units + 3, max(0, doc.n_units - 2)):
            cp = np.frombuffer(doc.text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
            mask = pairs_kernels.quoted_units(cp, unit_classes(), astral_words(cp), n)
            assert mask.tolist() == v._numpy_quoted_units(doc.text, n).tolist()


@settings(max_examples=300)
@given(
    st.lists(st.integers(0, 40), min_size=0, max_size=60),
    st.lists(st.integers(0, 40), min_size=0, max_size=20),
    st.lists(st.integers(0, 4), min_size=41, max_size=41),
    st.integers(0, 60),
    st.integers(1, 4),
    st.sampled_from([0, 1, 2, 3, 5, 8]),
    st.booleans(),
)
def test_any_shared_looks_up_chrome_lazily_as_the_reference(
    text: list[int],
    other: list[int],
    per_code: list[int],
    upto: int,
    limit: int,
    passage: int,
    by_index: bool,
) -> None:
    """any_shared looks a shingle's chrome up only when it is shared, and the whole text's
    passages only when it lies in a run of seen shingles: the answer of working out every
    shingle's chrome first, given the codes or their vocabulary and index."""
    from neardup.engine.templates import passages

    pairs_kernels = importlib.import_module("neardup.kernels._pairs")
    codes = (np.asarray(text, dtype=np.uint32) << np.uint32(6)) | np.uint32(1)
    vocab = np.unique((np.asarray(other, dtype=np.uint32) << np.uint32(6)) | np.uint32(1))
    counts = np.asarray(per_code, dtype=np.uint8)
    seen = counts[codes >> np.uint32(6)]
    chrome = (seen >= limit) | passages(seen >= 2, passage)
    hit = np.isin(codes[:upto], vocab) & ~chrome[:upto]
    own = np.unique(codes)
    index = np.searchsorted(own, codes).astype(np.uint16)
    given = v._NO_CODES if by_index and len(codes) else codes
    found = pairs_kernels.any_shared(
        given,
        index if by_index else v._NO_INDEX,
        own,
        upto,
        vocab,
        1,
        counts,
        limit,
        v._NO_SLOTS,
        v._NO_SLOTS,
        v._NO_SLOTS,
        0,
        passage,
        v._NO_MASK,
    )
    assert found == bool(hit.any())


@settings(max_examples=100)
@given(st.integers(1, 30), st.integers(0, 50), st.sampled_from([1, 8, 128]), st.integers(0, 9))
def test_alike_rows_is_alike_of_the_rows(docs: int, pairs: int, width: int, seed: int) -> None:
    """The compiled likeness of pairs of rows equals numpy's on the gathered rows, bit for
    bit."""
    from neardup.engine.decide import alike, alike_rows

    rng = np.random.default_rng(seed)
    light = rng.integers(0, 4, size=(docs, width), dtype=np.uint16)  # many equal values
    a = rng.integers(0, docs, size=pairs, dtype=np.int64)
    b = rng.integers(0, docs, size=pairs, dtype=np.int64)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", "on")
        fast = alike_rows(light, a, b)
        mp.setenv("NEARDUP_KERNELS", "off")
        ref = alike_rows(light, a, b)
    assert np.array_equal(ref, alike(light[a], light[b]) if pairs else np.zeros(0))
    assert fast.dtype == ref.dtype and np.array_equal(fast, ref)


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 40), st.sampled_from([0.0, 0.25, 0.5, 1.0])),
        max_size=60,
    ),
    st.integers(0, 5),
    st.booleans(),
)
def test_top_per_later_is_to_verify(
    pairs: list[tuple[int, int, float]], max_verify: int, as_joined: bool
) -> None:
    """The one-pass ranking of pairs sorted as the LSH join gives them chooses what the
    sorting reference chooses (ties among the likeness values: the earliest); pairs in
    another order, or a NaN likeness, go to the reference."""
    from neardup.engine.decide import to_verify

    if as_joined:
        pairs = sorted(set(pairs), key=lambda p: (p[0], p[1]))
        pairs = [p for k, p in enumerate(pairs) if k == 0 or p[:2] != pairs[k - 1][:2]]
    later = np.array([p[0] for p in pairs], dtype=np.int64)
    earlier = np.array([p[1] for p in pairs], dtype=np.int64)
    likeness = np.array([p[2] for p in pairs], dtype=np.float64)
    cfg = DedupConfig(max_verify=max_verify) if max_verify else CFG
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", "off")
        ref = to_verify(later, earlier, likeness, cfg)
        mp.setenv("NEARDUP_KERNELS", "on")
        fast = to_verify(later, earlier, likeness, cfg)
        if len(pairs):
            likeness[0] = np.nan
            mp.setenv("NEARDUP_KERNELS", "off")
            ref_nan = to_verify(later, earlier, likeness, cfg)
            mp.setenv("NEARDUP_KERNELS", "on")
            assert np.array_equal(to_verify(later, earlier, likeness, cfg), ref_nan)
    assert np.array_equal(fast, ref)


def test_the_kernels_cut_slots_as_the_engine_does() -> None:
    """The compiled kernels' copies of the engine's constants are the engine's."""
    compiled = importlib.import_module("neardup.kernels._pairs")
    assert int(compiled._SHIFT) == 32 - templates.SLOT_BITS
    assert int(compiled._BUCKET_SHIFT) == templates.BUCKET_SHIFT
    assert compiled._PASSAGE_STORIES == templates.PASSAGE_STORIES


def test_a_slot_is_found_in_its_bucket() -> None:
    """Every slot, present or not, is placed where a binary search places it."""
    compiled = importlib.import_module("neardup.kernels._pairs")
    rng = np.random.default_rng(7)
    slot_ids = np.unique(rng.integers(0, 1 << templates.SLOT_BITS, 5000)).astype(np.int64)
    slot_ids = np.union1d(slot_ids, np.arange(640, 700, dtype=np.int64))  # full buckets
    buckets = slot_buckets(slot_ids)
    probes = np.concatenate([slot_ids, rng.integers(0, 1 << templates.SLOT_BITS, 5000)])
    for s in [*probes.tolist(), 0, (1 << templates.SLOT_BITS) - 1]:
        want = int(np.searchsorted(slot_ids, s))
        assert compiled._slot_at(np.int64(s), buckets, slot_ids) == want
        assert compiled._slot_at(np.int64(s), np.zeros(1, np.uint8), slot_ids) == want


@settings(max_examples=300)
@given(TEXTS, st.integers(0, 50), st.integers(0, 50))
def test_unit_chars_are_where_the_reference_puts_the_units(
    text: str, first: int, last: int
) -> None:
    """The characters of two units of a text, found in one compiled pass, are those of
    the reference's unit offsets (a unit past the last taken as the last); so is the mask
    of the quoted units, whichever way it is worked out."""
    from neardup import kernels
    from neardup.shingling import unit_offsets

    where = unit_offsets(text)
    want = (
        None
        if len(where) == 0
        else (int(where[min(first, len(where) - 1)]), int(where[min(last, len(where) - 1)]))
    )
    with mock.patch.object(kernels, "wanted", return_value=True):
        assert v.unit_chars(text, first, last) == want
        n = len(where) + first % 3
        assert v.quoted_units(text, n).tolist() == v._numpy_quoted_units(text, n).tolist()
    with mock.patch.object(kernels, "wanted", return_value=False):
        assert v.unit_chars(text, first, last) == want


@settings(max_examples=200)
@given(st.one_of(quoting(), pairs()), st.integers(0, 3), st.sampled_from([0, 4, 24]), st.data())
def test_a_text_all_shared_is_all_shared_off_its_quotes(
    pair: tuple[Sketch, Sketch, list[Sketch]], kind: int, short: int, data: st.DataObject
) -> None:
    """What ``verify`` skips the unquoted placement on: when every unit of a text's own
    (not chrome) lies in a shingle the other has, the placement of its units off quoted
    lines is none (fewer than ``short_units``, if that is 1 or more) or has them all
    shared, a copy share of 1 — with every kind of guard, compiled or not. (With
    ``short_units`` 0, a text all quoted has a placement of no units: a share of 0.)"""
    a, b, docs = pair
    guard = guard_of(kind, docs, data)
    cfg = DedupConfig(short_units=short)
    for doc, other in ((b, a), (a, b)):
        for fast in (True, False):
            whole = v._placed(doc, other, cfg, guard, fast)[0]
            if whole.shared < whole.total or not v.has_quotes(doc.text):
                continue
            unquoted = v._unquoted(doc, other, cfg, guard, fast)
            event(f"all shared, with quotes: {'none' if unquoted is None else 'placed'}")
            if short == 0 and unquoted is not None and unquoted.total == 0:
                assert v.copy_share(unquoted, cfg) == 0.0  # why the skip needs short_units
                continue
            assert unquoted is None or v.copy_share(unquoted, cfg) == 1.0


@settings(max_examples=150)
@given(quoting())
def test_a_storys_codes_read_through_its_vocabulary_are_its_unquoted_codes(
    pair: tuple[Sketch, Sketch, list[Sketch]],
) -> None:
    """What a quoting reply counts for the template guard is the same whether its sketch
    holds its shingle codes or only the index into its vocabulary."""
    from neardup import kernels
    from neardup.engine.decide import story_codes
    from neardup.shingling import distinct

    for sk in pair[2]:
        indexed = _index_only(sk) if sk.keeps_shingles else sk
        quoted = v._numpy_quoted_units(sk.text, sk.n_units)[: len(sk.shingles)]
        want = distinct(sk.shingles[~quoted]) if v.has_quotes(sk.text) else sk.vocab
        for fast in (True, False):  # one compiled pass, or the mask and numpy
            with mock.patch.object(kernels, "wanted", return_value=fast):
                assert story_codes(indexed).tolist() == want.tolist()


@settings(max_examples=200)
@given(
    st.lists(st.integers(0, 2**32 - 1), max_size=40),
    st.lists(st.integers(0, 63), max_size=10),
    st.integers(0, 3),
    st.sampled_from([0.0, 40 / (1 << templates.SLOT_BITS)]),
)
def test_counting_a_story_compiled_gives_numpys_counts(
    codes: list[int], near: list[int], rounds: int, window: float
) -> None:
    """A story's codes counted by the kernel leave the table numpy's fancy-index
    assignment leaves: a slot several codes share counts once, and counts stop at 255 —
    in a guard that never forgets, and in one that turns every 40 counts or so (its two
    tables, each counted by the kernel). More than ``_AHEAD`` codes a story: the kernels
    ask for the slots ahead of the one they count."""
    from neardup import kernels

    # codes that share a slot with the first one (the low bits are not the slot's)
    vocab = np.array(codes + [(codes[0] & ~63) | k for k in near] if codes else [], dtype=np.uint32)
    start = np.zeros(1 << templates.SLOT_BITS, dtype=np.uint8)
    start[slots(vocab)] = 253  # near saturation
    fast, slow = CommonShingles(limit=5, window=window), CommonShingles(limit=5, window=window)
    fast.counts, slow.counts = start.copy(), start.copy()
    for _ in range(rounds + 1):
        with mock.patch.object(kernels, "wanted", return_value=True):
            fast.add(vocab)
        with mock.patch.object(kernels, "wanted", return_value=False):
            slow.add(vocab)
        assert np.array_equal(fast.counts, slow.counts)
        assert (fast.filled, fast.turns) == (slow.filled, slow.turns)
        assert np.array_equal(fast.this_turn(), slow.this_turn())


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["a", " ", "\t", "\n", ">", " >", "\n>", "中", "\r"]), max_size=20))
def test_has_quotes_is_the_quoted_lines_expression(pieces: list[str]) -> None:
    """The substring shortcuts of has_quotes say what the expression of quoted lines says."""
    text = "".join(pieces)
    assert v.has_quotes(text) == (v._QUOTED.search(text) is not None)


@settings(max_examples=100)
@given(st.lists(st.integers(0, 255), max_size=300), st.integers(0, 3))
def test_nonzero_slots_is_flatnonzero(values: list[int], zeros: int) -> None:
    """The compiled scan of a count table finds numpy's non-zero slots, in order."""
    from neardup.kernels import _pairs

    counts = np.array(values + [0] * zeros, dtype=np.uint8)
    n = int(np.count_nonzero(counts))
    found = _pairs.nonzero_slots(counts, n)
    assert found.dtype == np.int64 and np.array_equal(found, np.flatnonzero(counts))
    fewer = max(0, n - 2)  # told of fewer: the first of them, and nothing written past
    assert np.array_equal(_pairs.nonzero_slots(counts, fewer), np.flatnonzero(counts)[:fewer])


# -- the stand-in of a compact sketch ----------------------------------------------------------

_POSITIONS = st.lists(st.integers(0, 120), max_size=40).map(lambda p: sorted(set(p)))


@settings(max_examples=400)
@given(_POSITIONS, st.data(), st.integers(0, 130))
def test_the_sampled_statuses_and_nearest_positions_are_the_references(
    positions: list[int], data: st.DataObject, n: int
) -> None:
    """For each position of a stored text, the nearest sampled position (the earlier on
    ties) and whether it is taken to be shared — a lone miss between two hits standing
    for one changed unit, its shingles cut out at either end of the text — as numpy says."""
    from neardup.engine import compact as C
    from neardup.kernels import _pairs as k

    known = np.array(positions, dtype=np.int64)
    found = np.array(data.draw(st.lists(st.booleans(), min_size=len(known), max_size=len(known))))
    found = found.astype(np.bool_).reshape(len(known))
    widths = np.array(
        data.draw(
            st.lists(st.sampled_from([1, 2, 5, 9]), min_size=len(known), max_size=len(known))
        ),
        dtype=np.int64,
    )
    with mock.patch("neardup.kernels.wanted", return_value=False):
        want = C.statuses(known, found, n, widths)
        near = C._nearest(known, n) if len(known) else None
    assert k.sampled_statuses(known, found, n, widths).tolist() == want.tolist()
    if near is not None:
        assert k.nearest_known(known, n).tolist() == near.tolist()


@given(st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=30))
def test_the_median_offset_is_numpys(values: list[int]) -> None:
    from neardup.engine import compact as C

    a = np.array(values, dtype=np.int64)
    assert C._median(a) == int(np.median(a))


def test_the_stand_in_is_the_same_with_the_kernels() -> None:
    """A stored document's stand-in (its codes in text order as the later one sees them, its
    vocabulary), built with the kernels and with numpy, on reprints, excerpts and unrelated
    stories, Chinese and English."""
    from neardup.engine import compact as C
    from neardup.engine import make_sketch

    from ..engine.test_compact import _pairs

    for seed in (1, 2):
        for earlier, later in _pairs(seed):
            a, b = make_sketch(later, CFG), make_sketch(earlier, CFG)
            stored = C.decode(C.encode(C.compact(b)))
            built = {}
            for fast in (True, False):
                with mock.patch("neardup.kernels.wanted", return_value=fast):
                    built[fast] = C.stand_in(stored, a, CFG)
            assert built[True].shingles.tolist() == built[False].shingles.tolist()
            assert built[True].vocab.tolist() == built[False].vocab.tolist()


@settings(max_examples=300)
@given(st.data())
def test_the_later_texts_codes_are_put_where_the_references_puts_them(data: st.DataObject) -> None:
    """The stand-in's shared stretches read from the later text at the offset of the nearest
    sampled code found there (codes found once, repeated, not at all; offsets that fall off
    either end), as numpy reads them."""
    from neardup.engine import compact as C
    from neardup.kernels import _pairs as k

    alphabet = st.sampled_from([2, 3, 64, 66, 129, 130, 200, 5000])  # some equal when masked
    a = np.array(data.draw(st.lists(alphabet, max_size=60)), dtype=np.uint32)
    n = data.draw(st.integers(0, 70))
    positions = np.array(
        sorted(set(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=12)))), dtype=np.int64
    )
    codes = (
        np.array(
            data.draw(st.lists(alphabet, min_size=len(positions), max_size=len(positions))),
            dtype=np.uint32,
        ).reshape(len(positions))
        & C.MASK
    )
    status = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    status = status.reshape(n)
    start = np.arange(n, dtype=np.uint32) + np.uint32(1 << 20)
    want, got = start.copy(), start.copy()
    with mock.patch("neardup.kernels.wanted", return_value=False):
        C._align(want, status, positions, codes, a)
    k.align_shared(got, status, positions, codes, a, C.MASK)
    assert got.tolist() == want.tolist()


def test_a_repeated_code_equally_near_two_places_takes_the_first() -> None:
    """A sampled code found twice, as far from its guessed place either way: the earlier
    place in the later text, as numpy's argmin takes it."""
    from neardup.engine import compact as C
    from neardup.kernels import _pairs as k

    a = np.array([64, 128, 192, 128, 256], dtype=np.uint32)  # none changed by the mask
    positions = np.array([0, 2], dtype=np.int64)
    codes = np.array([64, 128], dtype=np.uint32)
    status = np.ones(5, dtype=np.bool_)
    want, got = np.zeros(5, dtype=np.uint32), np.zeros(5, dtype=np.uint32)
    with mock.patch("neardup.kernels.wanted", return_value=False):
        C._align(want, status, positions, codes, a)
    k.align_shared(got, status, positions, codes, a, C.MASK)
    assert got.tolist() == want.tolist() == [64, 128, 128, 192, 128]


@given(
    st.lists(st.integers(0, 300), max_size=80).map(lambda v: sorted(set(v))),
    st.lists(st.integers(0, 300), max_size=80).map(lambda v: sorted(set(v))),
)
def test_the_overlap_of_two_samples_is_the_references(a: list[int], b: list[int]) -> None:
    """How many sampled codes a later document and a stored one share (the ranking's
    Jaccard similarity), by the merge walk and by numpy's search."""
    from neardup.engine import compact as C
    from neardup.kernels import _pairs as k

    x, y = np.array(a, dtype=np.uint32), np.array(b, dtype=np.uint32)
    assert k.sorted_overlap(x, y) == int((C._lookup(y, x) >= 0).sum()) == len(set(a) & set(b))


@st.composite
def seen_runs(draw: st.DrawFn) -> tuple[list[bool], int]:
    """Which shingles of a text were seen in two stories, in runs as long as the passage,
    one shorter or one longer (each boundary of the passage rule), and the passage."""
    passage = draw(st.integers(1, 6))
    seen: list[bool] = []
    for _ in range(draw(st.integers(1, 6))):
        seen += [True] * draw(st.sampled_from([passage - 1, passage, passage + 1]))
        seen += [False] * draw(st.integers(0, 3 * passage))
    return seen, passage


@settings(max_examples=300)
@given(seen_runs(), st.integers(0, 2))
def test_passages_match_numpy(runs: tuple[list[bool], int], other: int) -> None:
    """The kernels' passages of seen shingles are the reference's at every boundary: runs as
    long as the passage or one shorter, and passages holding just over or under the share
    of the text that leaves them chrome."""
    seen, passage = runs
    if not seen:
        return
    codes = np.arange(1, len(seen) + 1, dtype=np.uint32) << np.uint32(32 - templates.SLOT_BITS)
    guard = CommonShingles(limit=3, passage=passage)
    guard.counts[slots(codes)] = np.where(seen, 2, other % 2).astype(np.uint8)
    guard.counts[slots(codes[other::3])] = 3  # some are common by their counts alone
    expected = guard.is_common(codes)
    event(f"passages marked: {bool((expected & ~(guard.counts[slots(codes)] >= 3)).any())}")
    no_slots, no_mask = v._NO_SLOTS, v._NO_MASK
    got = importlib.import_module("neardup.kernels._pairs")._chrome(
        codes, 1, guard.counts, guard.limit, no_slots, no_slots, no_slots, 0, passage, no_mask
    )
    assert np.array_equal(got, expected)


def test_placements_in_a_threads_spare_arrays_are_the_references() -> None:
    """The pair kernels work in arrays each thread keeps from one call to the next: a
    shorter text after a longer one whose flags were left set, a text too long for them,
    and threads placing texts at once, get the reference's placements."""
    sentences = [
        "河边新修的步道今天向市民开放，全长四公里。",
        "沿途种了两百棵樱花树，春天会很热闹。",
        "The ferry to the island now runs every hour in summer.",
        "管理处说，晚上十点以后步道的路灯会调暗。",
        "Tickets cost less for children and for riders over sixty.",
    ]
    long_text = "".join(sentences * 6)
    numbered = "".join(f"第{i}段。" for i in range(12_000))  # more shingles than they hold
    texts = [long_text, sentences[1] + sentences[3], "".join(sentences[1:4]), long_text[:90]]
    texts += [numbered + sentences[0], sentences[0] + numbered[:5_000]]
    sketches = _numpy_sketches([prepare(t, CFG) for t in texts], CFG)
    sketches += [_index_only(sk) for sk in sketches]
    guard = CommonShingles(limit=1, passage=1)  # every shingle seen is chrome: flags set
    for sk in sketches[:2]:
        guard.add(sk.vocab)
    # each pair with that guard, then without one (whose chrome, none, is left unwritten)
    asked = [(a, b, g) for a in sketches for b in sketches if a is not b for g in (guard, None)]
    expected = [v._numpy_placement(a, b, CFG, g) for a, b, g in asked]
    assert [v._placed(a, b, CFG, g, True)[0] for a, b, g in asked] == expected
    with ThreadPoolExecutor(4) as pool:
        results = list(
            pool.map(lambda abg: v._placed(abg[0], abg[1], CFG, abg[2], True)[0], asked * 4)
        )
    assert results == expected * 4
