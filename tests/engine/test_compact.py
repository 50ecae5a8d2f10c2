"""The compact sketch: its bytes, and verification through its stand-in against the whole
sketch's (the same verdicts where the pair is clear, scores close; short texts exact)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.engine import CommonShingles, DedupConfig, make_sketch, verify
from neardup.engine import compact as C
from neardup.errors import NeardupError

from ..synth import reprint, story

CFG = DedupConfig()


def _words(rng: random.Random, n: int) -> str:
    """An invented English text of ``n`` words."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(n)]
    return " ".join(words) + "."


def _pairs(seed: int) -> list[tuple[str, str]]:
    """(earlier, later) texts: reprints, excerpts, unrelated stories, mixed text."""
    rng = random.Random(seed)
    out = []
    for _ in range(6):
        base = story(rng, 30)
        out.append((base, reprint(rng, base)))  # a cut reprint with a header and typos
        out.append((reprint(rng, base, cut=False), base))
        out.append((base, story(rng, 30)))  # another story
        half = base[: len(base) // 2]
        out.append((base, half + story(rng, 25)))  # half of it, then as much of its own
    for _ in range(3):
        text = _words(rng, 300)
        out.append((text, "Reuters - " + text.replace("e", "E", 3)))
        out.append((text, _words(rng, 300)))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_stand_in_verifies_as_the_whole_sketch_does(seed: int) -> None:
    """Through the stand-in, the same stories and copies as with the whole sketch, scores
    within 0.06, on reprints, excerpts and unrelated texts, Chinese and English."""
    for earlier, later in _pairs(seed):
        a, b = make_sketch(later, CFG), make_sketch(earlier, CFG)
        exact = verify(a, b, CFG)
        est = verify(a, C.stand_in(C.decode(C.encode(C.compact(b))), a, CFG), CFG)
        assert est.is_duplicate == exact.is_duplicate
        assert est.is_copy == exact.is_copy
        assert abs(est.score - exact.score) < 0.06


def test_a_short_text_keeps_every_code_and_its_text() -> None:
    """Under MIN_SAMPLES shingles a text keeps every code (its verdicts are exact), and
    under WHOLE_UNITS units its text (the title measures read it)."""
    rng = random.Random(5)
    text = story(rng, 2)[:60]
    b = make_sketch(text, CFG)
    c = C.compact(b)
    assert c.level == 32 and len(c.codes) == len(b.shingles) and c.short_text == b.text
    a = make_sketch("转载：" + text[:50], CFG)
    exact, est = verify(a, b, CFG), verify(a, C.stand_in(c, a, CFG), CFG)
    assert (est.score, est.measure, est.is_copy) == (exact.score, exact.measure, exact.is_copy)


def test_a_long_text_samples_about_one_code_in_eleven() -> None:
    b = make_sketch(story(random.Random(6), 120), CFG)
    c = C.compact(b)
    assert c.short_text is None and c.level == C.RATE
    assert len(c.codes) >= C.MIN_SAMPLES
    assert 0.08 < len(c.codes) / len(b.shingles) < 0.18
    assert np.all(C.eligible(c.codes, c.level))
    assert len(C.encode(c)) < len(b.shingles) * 0.7  # against 4 bytes a shingle


def test_figures_keep_their_units() -> None:
    """The figure rule reads a stored text's figures and where they are."""
    text = "今年一季度本市的收入为1,234.5万元，同比增长12.5%，其中第二产业" + story(
        random.Random(7), 8
    )
    b = make_sketch(text, CFG)
    c = C.decode(C.encode(C.compact(b)))
    assert c.numbers == b.numbers
    assert [f for f, _ in c.figures] == ["1,234.5", "12.5"]
    stand = C.stand_in(c, b, CFG)
    assert stand.numbers == b.numbers and "1,234.5" in stand.text


def test_alike_reads_the_samples() -> None:
    rng = random.Random(8)
    text = story(rng, 40)
    a = make_sketch(text, CFG)
    c = C.compact(a)
    assert C.alike(a, c) == 1.0
    assert C.alike(make_sketch(story(rng, 40), CFG), c) < 0.05
    assert 0.3 < C.alike(make_sketch(text[: len(text) // 2], CFG), c) < 0.7


@given(st.text(alphabet="北京地铁十九号线今天开通运营全长公里abc defg123.,", max_size=400))
def test_bytes_round_trip(text: str) -> None:
    c = C.compact(make_sketch(text, CFG))
    assert C.decode(C.encode(c)) == c


def test_a_damaged_blob_is_an_error() -> None:
    blob = C.encode(C.compact(make_sketch(story(random.Random(9), 30), CFG)))
    with pytest.raises(NeardupError, match=r"damaged|unknown"):
        C.decode(blob[:30])
    with pytest.raises(NeardupError, match="unknown format"):
        C.decode(b"XX" + blob[2:])


def test_statuses_read_a_lone_loss_as_one_changed_unit() -> None:
    """Known positions 0, 8, 16, 24: a loss between two found ones stands for a typo (the w
    shingles over one unit); two losses in a row for text of its own, to halfway."""
    known = np.array([0, 8, 16, 24], dtype=np.int64)
    widths = np.full(4, 5, dtype=np.int64)
    lone = C.statuses(known, np.array([True, False, True, True]), 30, widths)
    assert np.flatnonzero(~lone).tolist() == [6, 7, 8, 9, 10]
    run = C.statuses(known, np.array([True, False, False, True]), 30, widths)
    assert np.flatnonzero(~run).tolist() == list(range(5, 21))


def test_story_slots_and_the_count_table_round_trip() -> None:
    sk = make_sketch(story(random.Random(10), 30), CFG)
    back = C.decode_slots(C.encode_slots(sk.vocab))
    assert np.array_equal(np.unique(sk.vocab >> 6), np.unique(back >> 6))
    common = CommonShingles(limit=2)
    common.add(sk.vocab)
    common.add(back)
    assert common.is_common(sk.vocab).all()
    table = C.encode_counts(common.counts)
    counts = C.decode_counts(table)
    assert counts is not None and np.array_equal(counts, common.counts)
    assert C.decode_counts(common.to_bytes()) is None  # the whole table's form is not this one
    empty = C.decode_counts(C.encode_counts(np.zeros(16, dtype=np.uint8)))
    assert empty is not None and not empty.any()


# -- what stores wrote before 2026-12-04: their bytes still read, as the same values ------------


def _old_sketch(c: C.Compact) -> bytes:
    """A compact sketch as :func:`~neardup.engine.compact.encode` wrote it (version 1: its
    numbers 4 bytes each)."""
    new = C.encode(c)
    _, _, flags = C._HEAD.unpack_from(new)
    _, at = C.rice.read_varints(new, C._HEAD.size, 4)
    numbers = (c.n_units, c.n_shingles, c.n_vocab, len(c.codes))
    return C._HEAD_1.pack(b"NC", 1, flags, *numbers) + new[at:]


def _old_slots(vocab: np.ndarray, width: int) -> bytes:
    """A story's slots as stores logged them: ``width`` bytes of each gap."""
    slots = np.unique(vocab >> np.uint32(6)).astype(np.uint32)
    gaps = np.diff(slots, prepend=np.uint32(0)).astype("<u4")
    return bytes((width,)) + gaps.view(np.uint8).reshape(-1, 4)[:, :width].tobytes()


def _old_table(counts: np.ndarray) -> bytes:
    """A count table as stores saved it: the bytes of each gap, each byte as one run, and
    the counts, compressed together."""
    import struct
    import zlib

    nz = np.flatnonzero(counts)
    gaps = (np.diff(nz, prepend=-1) - 1).astype("<u4")
    width = 3 if len(gaps) == 0 or int(gaps.max()) < 1 << 24 else 4
    planes = gaps.view(np.uint8).reshape(-1, 4)[:, :width].T.tobytes()
    head = struct.pack("<QQB", len(counts), len(nz), width)
    return b"NDT2" + zlib.compress(head + planes + counts[nz].tobytes(), 1)


@pytest.mark.parametrize("seed", [1, 2])
def test_what_stores_wrote_before_reads_as_it_did(seed: int) -> None:
    rng = random.Random(seed)
    long, short = make_sketch(story(rng, 30), CFG), make_sketch("北京地铁今天开通。", CFG)
    for sk in (long, short):
        c = C.compact(sk)
        assert C.decode(_old_sketch(c)) == c == C.decode(C.encode(c))
        assert len(C.encode(c)) < len(_old_sketch(c))
    for width in (3, 4):
        old = C.decode_slots(_old_slots(long.vocab, width))
        assert np.array_equal(old, C.decode_slots(C.encode_slots(long.vocab)))
    counts = np.zeros(1 << 16, dtype=np.uint8)
    nrng = np.random.default_rng(seed)
    counts[nrng.integers(0, len(counts), 9000)] = nrng.integers(1, 4, 9000, dtype=np.uint8)
    counts[nrng.integers(0, len(counts), 50)] = 255
    old_table = C.decode_counts(_old_table(counts), size=len(counts))
    assert old_table is not None and np.array_equal(old_table, counts)
    assert len(C.encode_counts(counts)) < len(_old_table(counts))


def test_story_slots_cost_about_17_bits_each() -> None:
    """1,300 random slots in 2^26 (a story of hkcnews' length): logged in about 17 bits a
    slot (they took 24), and a blob of another kind is refused."""
    rng = np.random.default_rng(5)
    vocab = (rng.integers(0, 1 << 26, 1300, dtype=np.uint64) << np.uint64(6)).astype(np.uint32)
    blob = C.encode_slots(vocab)
    back = C.decode_slots(blob)
    assert np.array_equal(back, np.unique(vocab))
    assert len(blob) * 8 / len(back) < 17.5
    with pytest.raises(ValueError):
        C.decode_slots(b"\x07" + bytes(21))
    with pytest.raises(ValueError):
        C.decode_slots(blob + b"\x00")


@pytest.mark.parametrize("kernels", ["on", "off"])
def test_a_saved_guard_is_the_same_bytes_with_kernels_or_without(
    kernels: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count tables a store saves are the same bytes whether the compiled kernel or
    numpy finds their non-zero slots, and a guard in its first turn saves the empty last
    turn it has not scanned as the encoding of a table of zeros."""
    if kernels == "on":
        pytest.importorskip("numba")
    monkeypatch.setenv("NEARDUP_KERNELS", kernels)
    rng = np.random.default_rng(3)
    counts = np.zeros(1 << 16, dtype=np.uint8)
    counts[rng.integers(0, len(counts), 5000)] = rng.integers(1, 256, 5000, dtype=np.uint8)
    counts[-1] = 7
    blob = C.encode_counts(counts)
    back = C.decode_counts(blob)
    assert back is not None and np.array_equal(back, counts)
    monkeypatch.setenv("NEARDUP_KERNELS", "off")
    assert C.encode_counts(counts) == blob
    monkeypatch.setenv("NEARDUP_KERNELS", kernels)
    guard = CommonShingles(limit=2, window=0.5)
    guard.add(make_sketch(story(random.Random(2), 30), CFG).vocab)
    assert guard.fresh is None  # the first turn: no last one to scan
    saved = C.encode_guard(guard)
    first = C.encode_counts(np.zeros_like(guard.counts))
    size = int.from_bytes(saved[C._GUARD.size - 8 : C._GUARD.size], "little")
    assert saved[C._GUARD.size : C._GUARD.size + size] == first
    again = CommonShingles(limit=2, window=0.5)
    C.load_guard(again, saved)
    assert np.array_equal(again.counts, guard.counts) and again.fresh is None


@pytest.mark.parametrize("seed", [4, 5])
def test_a_shared_stretch_reads_chrome_from_the_later_text(seed: int) -> None:
    """Where the later document shares the stored one's text, the stand-in holds the later
    document's codes at the same offsets, so the chrome there (common shingles, and a
    passage seen in two stories, counted shingle by shingle) is what the whole sketch says."""
    rng = random.Random(seed)
    bio = story(rng, 6)  # about 170 units: a passage once two stories carry it
    guard = CommonShingles(limit=5, passage=96)
    for _ in range(2):
        guard.add(make_sketch(story(rng, 12) + bio, CFG).vocab)
    for _ in range(6):
        guard.add(make_sketch(story(rng, 12) + "本报记者综合报道。", CFG).vocab)
    earlier = story(rng, 15) + "本报记者综合报道。" + bio + story(rng, 6)
    later = "【环球网】" + earlier.replace("。", "！", 3)
    b, a = make_sketch(earlier, CFG), make_sketch(later, CFG)
    whole = guard.is_common(b.shingles)
    assert whole.sum() > 96  # the bio is a passage of chrome
    stand = C.stand_in(C.compact(b), a, CFG)
    assert np.array_equal(guard.is_common(stand.shingles), whole)
    exact, est = verify(a, b, CFG, guard), verify(a, stand, CFG, guard)
    assert (est.is_duplicate, est.is_copy) == (exact.is_duplicate, exact.is_copy)
    assert abs(est.score - exact.score) < 0.02
