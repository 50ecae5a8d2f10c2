"""One-permutation MinHash with densification: against a naive per-bin computation, its
Jaccard estimates, its edge cases, and the batch path against the single-document one."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError
from neardup.hashing import mix
from neardup.shingling import shingle_hashes
from neardup.sketch.minhash import EMPTY, jaccard, minhash, minhash_batch

FAST = settings(max_examples=80, deadline=None)

MASK = (1 << 64) - 1
STEP = 0x9E3779B97F4A7C15
PERMS = st.sampled_from([1, 2, 8, 16, 64, 128])
# Shingle hashes: arbitrary 64-bit values below the EMPTY marker, few enough to leave bins empty.
VALUES = st.lists(st.integers(0, MASK - 1), max_size=200)


def splitmix(z: int) -> int:
    """The SplitMix64 finalizer on Python ints."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def naive_minhash(values: list[int], k: int) -> list[int]:
    """Smallest value per bin (low bits), empty bins filled from the next full bin rightwards."""
    bins: list[int | None] = [None] * k
    for v in values:
        b = v & (k - 1)
        current = bins[b]
        bins[b] = v if current is None else min(current, v)
    if all(b is None for b in bins):
        return [MASK] * k
    out = []
    for j in range(k):
        own = bins[j]
        if own is not None:
            out.append(own)
            continue
        d = 1
        while bins[(j + d) % k] is None:
            d += 1
        borrowed = bins[(j + d) % k]
        assert borrowed is not None
        out.append(splitmix((borrowed + d * STEP) & MASK))
    return out


def u64(values: list[int]) -> np.ndarray:
    """A list of ints as an unsigned 64-bit array."""
    return np.array(values, dtype=np.uint64)


@given(VALUES, PERMS)
@FAST
def test_minhash_matches_naive(values: list[int], k: int) -> None:
    """minhash equals the per-bin minimum with rotation densification, computed naively."""
    assert minhash(u64(values), num_perm=k).tolist() == naive_minhash(values, k)


@given(st.lists(VALUES, max_size=6), PERMS)
@FAST
def test_batch_equals_single(documents: list[list[int]], k: int) -> None:
    """minhash_batch gives every document the signature minhash gives it alone."""
    batch = minhash_batch([u64(d) for d in documents], num_perm=k)
    assert batch.shape == (len(documents), k)
    assert batch.dtype == np.uint64
    for row, d in zip(batch, documents, strict=True):
        assert row.tolist() == minhash(u64(d), num_perm=k).tolist()


@given(VALUES, st.randoms(use_true_random=False), PERMS)
@FAST
def test_same_set_same_signature(values: list[int], rnd: random.Random, k: int) -> None:
    """Order and repetition of shingles do not change the signature."""
    shuffled = values + values[: len(values) // 2]
    rnd.shuffle(shuffled)
    assert minhash(u64(values), num_perm=k).tolist() == minhash(u64(shuffled), num_perm=k).tolist()


@pytest.mark.parametrize(
    "text",
    [
        "临江市轨道交通5号线一期工程正式开通初期运营。",
        "The city's first light rail line.",
        "GDP增长5.2%",
    ],
)
def test_identical_texts_identical_signatures(text: str) -> None:
    """Two copies of one text have equal signatures and an estimated Jaccard of 1."""
    a = minhash(shingle_hashes(text).hashes)
    b = minhash(shingle_hashes(text).hashes)
    assert a.tolist() == b.tolist()
    assert jaccard(a, b) == 1.0


@pytest.mark.parametrize("k", [1, 16, 128, 4096])
def test_empty_document_is_all_empty(k: int) -> None:
    """A document without shingles has EMPTY in every position."""
    sig = minhash(np.zeros(0, dtype=np.uint64), num_perm=k)
    assert sig.shape == (k,)
    assert (sig == EMPTY).all()


def test_empty_rows_in_a_batch_stay_empty() -> None:
    """Empty documents among full ones keep all-EMPTY rows; the others have none."""
    full = mix(np.arange(1, 300, dtype=np.uint64))
    sig = minhash_batch([np.zeros(0, np.uint64), full, np.zeros(0, np.uint64)], num_perm=64)
    assert (sig[0] == EMPTY).all() and (sig[2] == EMPTY).all()
    assert not (sig[1] == EMPTY).any()


@pytest.mark.parametrize("n", [1, 2, 3, 10])
@pytest.mark.parametrize("k", [16, 128])
def test_tiny_sets_are_densified(n: int, k: int) -> None:
    """A document with fewer shingles than bins has no EMPTY position left."""
    sig = minhash(mix(np.arange(7, 7 + n, dtype=np.uint64)), num_perm=k)
    assert not (sig == EMPTY).any()
    # borrowed values differ from the bins they came from
    assert len(set(sig.tolist())) == k


@pytest.mark.parametrize(
    ("a_only", "common", "b_only"),
    [(500, 1000, 500), (100, 100, 100), (30, 10, 20), (5, 5, 5), (2000, 200, 2000), (1, 3, 1)],
)
def test_jaccard_estimate_is_unbiased(a_only: int, common: int, b_only: int) -> None:
    """Over many random sets the mean estimate is close to the true Jaccard similarity."""
    rng = np.random.default_rng(20260301)
    trials = 200
    size = a_only + common + b_only
    docs = []
    for _ in range(trials):
        v = mix(rng.integers(0, 2**63, size=size, dtype=np.uint64))
        docs += [v[: a_only + common], v[a_only:]]
    sigs = minhash_batch(docs, num_perm=128)
    estimates = [jaccard(sigs[2 * t], sigs[2 * t + 1]) for t in range(trials)]
    assert np.mean(estimates) == pytest.approx(common / size, abs=0.03)


def test_disjoint_sets_rarely_agree() -> None:
    """Signatures of disjoint sets share almost no positions."""
    a = minhash(mix(np.arange(0, 1000, dtype=np.uint64)))
    b = minhash(mix(np.arange(1000, 2000, dtype=np.uint64)))
    assert jaccard(a, b) < 0.05


@pytest.mark.parametrize("k", [0, -1, 3, 100, 8192])
def test_num_perm_validation(k: int) -> None:
    """num_perm must be a power of two up to 4096; the message names the value."""
    with pytest.raises(ConfigError, match=rf"power of two.*got {k}"):
        minhash(np.zeros(3, dtype=np.uint64), num_perm=k)
    with pytest.raises(ValueError, match=str(k)):
        minhash_batch([], num_perm=k)


def test_jaccard_shape_mismatch() -> None:
    """Signatures of different lengths cannot be compared; the message gives both lengths."""
    a = minhash(np.arange(5, dtype=np.uint64), num_perm=64)
    b = minhash(np.arange(5, dtype=np.uint64), num_perm=128)
    with pytest.raises(ConfigError, match="64 and 128"):
        jaccard(a, b)
