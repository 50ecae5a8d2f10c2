"""The Hamming index and join against brute force: exactly the same neighbours and pairs."""

from __future__ import annotations

import itertools
import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from neardup.errors import ConfigError, InputError
from neardup.index import BruteForceHammingIndex, HammingIndex, hamming_join
from neardup.index import hamming as hamming_module
from neardup.index.hamming import MAX_TABLES, Neighbor, default_blocks, join_blocks

# ---------------------------------------------------------------------------------------------
# References and strategies


def naive_pairs(fingerprints: list[int], k: int) -> list[list[int]]:
    """Every pair i < j within k bits, by comparing all pairs."""
    return [
        [i, j]
        for i, j in itertools.combinations(range(len(fingerprints)), 2)
        if (fingerprints[i] ^ fingerprints[j]).bit_count() <= k
    ]


def as_array(fingerprints: list[int], bits: int) -> np.ndarray:
    """uint64 array (n,) for 64 bits, (n, 2) of (high, low) words for 128."""
    if bits == 64:
        return np.array(fingerprints, dtype=np.uint64).reshape(-1)
    words = [[fp >> 64, fp & ((1 << 64) - 1)] for fp in fingerprints]
    return np.array(words, dtype=np.uint64).reshape(-1, 2)


@st.composite
def options(draw: st.DrawFn) -> tuple[int, int, int | None]:
    """(bits, k, blocks): from k + 1 blocks (one 64-bit key at k = 0, hashed) to k + 4."""
    bits = draw(st.sampled_from([64, 128]))
    k = draw(st.integers(0, 7))
    blocks = draw(st.none() | st.integers(k + 1, k + 4))
    return bits, k, blocks


@st.composite
def clustered(draw: st.DrawFn, bits: int, k: int, max_size: int = 90) -> list[int]:
    """Fingerprints with many near neighbours: copies of a few bases with 0..k+1 bits flipped
    (so some pairs are just within k and some just beyond), and a few random ones."""
    bases = draw(st.lists(st.integers(0, (1 << bits) - 1), min_size=1, max_size=4))
    size = draw(st.integers(0, max_size))
    out = []
    for _ in range(size):
        if draw(st.integers(0, 9)) == 0:
            out.append(draw(st.integers(0, (1 << bits) - 1)))
            continue
        fp = draw(st.sampled_from(bases))
        for bit in draw(st.lists(st.integers(0, bits - 1), max_size=k + 1)):
            fp ^= 1 << bit
        out.append(fp)
    return out


@st.composite
def join_cases(draw: st.DrawFn) -> tuple[int, int, int | None, list[int]]:
    """Options and clustered fingerprints for them."""
    bits, k, blocks = draw(options())
    return bits, k, blocks, draw(clustered(bits, k))


def near(fp: int, bits: int, flips: list[int]) -> int:
    """fp with the given bits flipped."""
    for bit in flips:
        fp ^= 1 << (bit % bits)
    return fp


# ---------------------------------------------------------------------------------------------
# The index


@settings(max_examples=200, deadline=None)
@given(join_cases(), st.lists(st.lists(st.integers(0, 127), max_size=5), max_size=10))
def test_query_equals_brute_force(
    case: tuple[int, int, int | None, list[int]], flips: list[list[int]]
) -> None:
    """Every query returns exactly brute force's neighbours, distances and order."""
    bits, k, blocks, fingerprints = case
    index = HammingIndex(bits=bits, k=k, blocks=blocks)
    brute = BruteForceHammingIndex(bits=bits, k=k)
    for n, fp in enumerate(fingerprints):
        index.add(f"doc-{n}", fp)
        brute.add(f"doc-{n}", fp)
    queries = fingerprints[:20] + [near(fingerprints[0], bits, f) for f in flips if fingerprints]
    for query in queries:
        assert index.query(query) == brute.query(query)
    assert len(index) == len(brute) == len(fingerprints)


class IndexMachine(RuleBasedStateMachine):
    """Adds, removes, re-adds and queries on both indexes agree at every step."""

    def __init__(self) -> None:
        super().__init__()
        self.index = HammingIndex()
        self.brute = BruteForceHammingIndex()
        self.bases: list[int] = [0]
        self.bits = 64

    @initialize(
        opts=options(), seed=st.lists(st.integers(0, (1 << 128) - 1), min_size=1, max_size=3)
    )
    def setup(self, opts: tuple[int, int, int | None], seed: list[int]) -> None:
        self.bits, k, blocks = opts
        self.index = HammingIndex(bits=self.bits, k=k, blocks=blocks)
        self.brute = BruteForceHammingIndex(bits=self.bits, k=k)
        self.bases = [s % (1 << self.bits) for s in seed]

    def fingerprint(self, base: int, flips: list[int]) -> int:
        return near(self.bases[base % len(self.bases)], self.bits, flips)

    @rule(
        key=st.sampled_from("abcdefgh"),
        base=st.integers(0, 2),
        flips=st.lists(st.integers(0, 127), max_size=6),
    )
    def add(self, key: str, base: int, flips: list[int]) -> None:
        fp = self.fingerprint(base, flips)
        self.index.add(key, fp)
        self.brute.add(key, fp)

    @rule(key=st.sampled_from("abcdefgh"))
    def remove(self, key: str) -> None:
        if key in self.brute:
            self.index.remove(key)
            self.brute.remove(key)
        else:
            with pytest.raises(KeyError, match="not in the index"):
                self.index.remove(key)

    @rule(base=st.integers(0, 2), flips=st.lists(st.integers(0, 127), max_size=6))
    def query(self, base: int, flips: list[int]) -> None:
        fp = self.fingerprint(base, flips)
        assert self.index.query(fp) == self.brute.query(fp)

    @invariant()
    def same_keys(self) -> None:
        assert len(self.index) == len(self.brute)
        assert all((key in self.index) == (key in self.brute) for key in "abcdefgh")


IndexMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
TestIndexMachine = IndexMachine.TestCase


def test_readd_replaces_and_becomes_newest() -> None:
    """Adding a key again replaces its fingerprint and moves it after older keys of equal distance."""
    index = HammingIndex(k=2)
    index.add("a", 0b00)
    index.add("b", 0b00)
    index.add("a", 0b00)
    assert index.query(0) == [Neighbor("b", 0), Neighbor("a", 0)]
    index.add("b", 0b11)
    assert index.query(0) == [("a", 0), ("b", 2)]
    assert len(index) == 2


def test_remove_then_query_and_remove_again() -> None:
    """A removed key is gone from every table; removing it again raises KeyError."""
    index = HammingIndex(k=3, blocks=6)
    for n in range(5):
        index.add(f"k{n}", 0xABCDEF << n)
    index.add("twin", 0xABCDEF)
    index.remove("k0")
    assert "k0" not in index
    assert index.query(0xABCDEF) == [("twin", 0)]
    index.remove("twin")
    assert index.query(0xABCDEF) == []
    with pytest.raises(KeyError, match="'twin' is not in the index"):
        index.remove("twin")


def test_empty_tables_after_removing_everything() -> None:
    """Removing every key leaves no bucket behind."""
    index = HammingIndex(bits=128, k=4)
    for n in range(50):
        index.add(str(n), (n * 0x9E3779B97F4A7C15) % (1 << 128))
    for n in range(50):
        index.remove(str(n))
    assert len(index) == 0
    assert all(not table for table in index._tables)


@pytest.mark.parametrize(
    ("text", "bits"),
    [
        ("北京今天天气晴朗", 64),
        ("The quick brown fox jumps over the lazy dog", 64),
        ("中文 and English 混合", 128),
    ],
)
def test_index_with_simhash_fingerprints(text: str, bits: int) -> None:
    """A document's own fingerprint and a lightly edited one are found, at the right distance."""
    from neardup.sketch.simhash import simhash

    fp = simhash(list(text), bits=bits)
    edited = simhash([*list(text), "!"], bits=bits)
    distance = (fp ^ edited).bit_count()
    index = HammingIndex(bits=bits, k=max(3, distance))
    index.add("original", fp)
    assert index.query(fp) == [("original", 0)]
    assert index.query(edited) == [("original", distance)]


def test_numpy_integer_fingerprints() -> None:
    """numpy unsigned integers are taken as the ints they are."""
    index = HammingIndex()
    index.add("x", np.uint64(2**63 + 5))
    assert index.query(2**63 + 4) == [("x", 1)]


# ---------------------------------------------------------------------------------------------
# The join


@settings(max_examples=300, deadline=None)
@given(join_cases())
def test_join_equals_brute_force(case: tuple[int, int, int | None, list[int]]) -> None:
    """The join finds exactly the pairs of brute force, sorted, once each."""
    bits, k, blocks, fingerprints = case
    expected = naive_pairs(fingerprints, k)
    got = hamming_join(as_array(fingerprints, bits), k=k, bits=bits, blocks=blocks)
    assert got.dtype == np.int64
    assert got.shape == (len(expected), 2)
    assert got.tolist() == expected
    assert hamming_join(fingerprints, k=k, bits=bits, blocks=blocks).tolist() == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(join_cases(), st.integers(1, 9), st.integers(1, 20))
def test_join_in_tiny_chunks(
    case: tuple[int, int, int | None, list[int]], chunk: int, block: int
) -> None:
    """Splitting the candidates and the output into tiny chunks changes nothing."""
    bits, k, blocks, fingerprints = case
    with (
        mock.patch.object(hamming_module, "_CHUNK_PAIRS", chunk),
        mock.patch.object(hamming_module._Codes, "BLOCK", block),
    ):
        got = hamming_join(as_array(fingerprints, bits), k=k, bits=bits, blocks=blocks)
    assert got.tolist() == naive_pairs(fingerprints, k)


@settings(max_examples=100, deadline=None)
@given(join_cases())
def test_join_when_every_key_hash_collides(case: tuple[int, int, int | None, list[int]]) -> None:
    """With a hash that maps everything to 0 (every long key and every 128-bit fingerprint
    collides), the exact checks still give brute force's pairs."""
    bits, k, blocks, fingerprints = case

    def constant(low: np.ndarray, high: np.ndarray) -> np.ndarray:
        return np.zeros_like(low)

    with mock.patch.object(hamming_module, "_mix", constant):
        got = hamming_join(as_array(fingerprints, bits), k=k, bits=bits, blocks=blocks)
    assert got.tolist() == naive_pairs(fingerprints, k)


@settings(max_examples=100, deadline=None)
@given(join_cases())
def test_join_agrees_with_index_queries(case: tuple[int, int, int | None, list[int]]) -> None:
    """Batch and streaming make the same decisions: the join's pairs are the index's answers."""
    bits, k, blocks, fingerprints = case
    index = HammingIndex(bits=bits, k=k, blocks=blocks)
    for n, fp in enumerate(fingerprints):
        index.add(str(n), fp)
    from_index = sorted(
        [n, int(key)]
        for n, fp in enumerate(fingerprints)
        for key, _ in index.query(fp)
        if n < int(key)
    )
    assert hamming_join(fingerprints, k=k, bits=bits, blocks=blocks).tolist() == from_index


@pytest.mark.parametrize("bits", [64, 128])
def test_join_many_copies(bits: int) -> None:
    """Many copies of one fingerprint give all n (n - 1) / 2 pairs, plus their near neighbours."""
    base = (1 << (bits - 1)) | 0xF0F0
    fingerprints = [base] * 300 + [base ^ 0b111, base ^ 0b1111, 12345] + [base] * 5
    got = hamming_join(as_array(fingerprints, bits), k=3, bits=bits)
    assert got.tolist() == naive_pairs(fingerprints, 3)
    assert len(got) == math.comb(305, 2) + 305 + 1  # copies, copies with ^0b111, it with ^0b1111


def test_join_random_large_sample() -> None:
    """A few thousand random fingerprints with planted neighbours: the pairs planted, no more."""
    rng = np.random.default_rng(7)
    fps = rng.integers(0, 2**64, 3000, dtype=np.uint64)
    fps[1000:1100] = fps[:100] ^ (np.uint64(1) << rng.integers(0, 64, 100).astype(np.uint64))
    got = hamming_join(fps, k=3)
    ints = [int(f) for f in fps]
    assert got.tolist() == naive_pairs(ints, 3)
    assert len(got) >= 100


@pytest.mark.parametrize("fingerprints", [[], [5]])
def test_join_of_fewer_than_two(fingerprints: list[int]) -> None:
    """No fingerprints or one give an empty (0, 2) array."""
    for bits in (64, 128):
        got = hamming_join(as_array(fingerprints, bits), bits=bits)
        assert got.shape == (0, 2)
        assert got.dtype == np.int64


def test_join_takes_signed_non_negative_arrays() -> None:
    """Non-negative int64 fingerprints are converted."""
    assert hamming_join(np.array([1, 3, 100], dtype=np.int64), k=1).tolist() == [[0, 1]]


def test_join_blocks_choice() -> None:
    """Short keys for few fingerprints, longer ones for many; always a valid layout."""
    assert join_blocks(64, 3, 1_000_000) == 5
    assert join_blocks(64, 3, 1_000) == 4
    for bits, k, n in itertools.product([64, 128], [0, 1, 3, 8, 40], [2, 10**3, 10**7]):
        blocks = join_blocks(bits, k, n)
        assert k < blocks <= bits
        assert math.comb(blocks, k) <= MAX_TABLES


def test_default_blocks() -> None:
    """k + 2 blocks by default, k + 1 when k + 2 would not fit."""
    assert default_blocks(64, 3) == 5
    assert default_blocks(64, 63) == 64
    assert default_blocks(128, 60) == 61
    assert HammingIndex(k=3).blocks == 5
    assert HammingIndex(k=3).tables == 10
    assert HammingIndex(k=63).blocks == 64


# ---------------------------------------------------------------------------------------------
# Validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bits": 32}, "bits must be 64 or 128, got 32"),
        ({"k": -1}, "0 <= k < bits = 64, got k = -1"),
        ({"k": 64}, "0 <= k < bits = 64, got k = 64"),
        ({"bits": 128, "k": 128}, "0 <= k < bits = 128, got k = 128"),
        ({"k": 3, "blocks": 3}, "3 < blocks <= 64, got blocks = 3"),
        ({"k": 3, "blocks": 65}, "3 < blocks <= 64, got blocks = 65"),
        ({"k": 10, "blocks": 30}, r"C\(30, 10\) = 30045015 tables, more than 1024"),
    ],
)
def test_config_errors(kwargs: dict[str, int], message: str) -> None:
    """Impossible options raise ConfigError (a ValueError) with the numbers in the message."""
    with pytest.raises(ConfigError, match=message):
        HammingIndex(**kwargs)
    with pytest.raises(ValueError, match=message):
        hamming_join(np.zeros(3, dtype=np.uint64), **kwargs)
    if "blocks" not in kwargs:
        with pytest.raises(ConfigError, match=message):
            BruteForceHammingIndex(**kwargs)


@pytest.mark.parametrize("cls", [HammingIndex, BruteForceHammingIndex])
@pytest.mark.parametrize(("bits", "fingerprint"), [(64, 1 << 64), (64, -1), (128, 1 << 128)])
def test_fingerprint_out_of_range(
    cls: type[HammingIndex] | type[BruteForceHammingIndex], bits: int, fingerprint: int
) -> None:
    """A fingerprint that does not fit in the index's bits raises InputError, on add and query."""
    index = cls(bits=bits)
    with pytest.raises(InputError, match=f"does not fit in {bits} unsigned bits"):
        index.add("x", fingerprint)
    with pytest.raises(InputError, match=f"does not fit in {bits} unsigned bits"):
        index.query(fingerprint)


@pytest.mark.parametrize(
    ("fingerprints", "bits", "message"),
    [
        (np.zeros((3, 2), dtype=np.uint64), 64, r"shape \(n,\), got shape \(3, 2\)"),
        (
            np.zeros(3, dtype=np.uint64),
            128,
            r"shape \(n, 2\) as \(high, low\) words, got shape \(3,\)",
        ),
        (np.array([1, -2], dtype=np.int64), 64, "got dtype int64; .*view"),
        (np.array([1.0, 2.0]), 64, "got dtype float64"),
        ([1, 1 << 64], 64, "does not fit in 64 unsigned bits"),
    ],
)
def test_join_input_errors(fingerprints: object, bits: int, message: str) -> None:
    """Arrays of the wrong shape or type raise InputError saying what was expected."""
    with pytest.raises(InputError, match=message):
        hamming_join(fingerprints, bits=bits)  # type: ignore[arg-type]
