"""Weighted Simhash: against an exact pure-Python vote, the batch path against the single
one, what weights do, Hamming distance, and the bits option."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError
from neardup.hashing import SEED
from neardup.sketch.simhash import hamming, simhash, simhash_batch

FAST = settings(max_examples=80, deadline=None)

BITS = st.sampled_from([64, 128])
TERMS = st.text(alphabet="ab中文天气 ", max_size=4)
# Small whole weights add up exactly in float32, so an exact reference applies.
WEIGHTED = st.dictionaries(TERMS, st.integers(1, 50).map(float), max_size=30)
PLAIN = st.lists(TERMS, max_size=30)
FEATURES = st.one_of(WEIGHTED, PLAIN)


def term_hash(term: str, bits: int) -> int:
    """The XXH3 hash of a feature, 64 or 128 bits, as simhash uses it."""
    data = term.encode("utf-8", "surrogatepass")
    if bits == 64:
        return xxhash.xxh3_64_intdigest(data, SEED)
    return xxhash.xxh3_128_intdigest(data, SEED)


def naive_simhash(features: dict[str, float] | list[str], bits: int) -> int:
    """Bit i set when the features whose hash has bit i set outweigh those that do not."""
    pairs = features.items() if isinstance(features, dict) else [(t, 1.0) for t in features]
    votes = [0.0] * bits
    for term, weight in pairs:
        h = term_hash(term, bits)
        for i in range(bits):
            votes[i] += weight if (h >> i) & 1 else -weight
    return sum(1 << i for i, v in enumerate(votes) if v > 0)


@given(FEATURES, BITS)
@FAST
def test_simhash_matches_naive(features: dict[str, float] | list[str], bits: int) -> None:
    """simhash equals the exact weighted vote over every bit."""
    assert simhash(features, bits=bits) == naive_simhash(features, bits)


@given(st.lists(FEATURES, max_size=6), BITS)
@FAST
def test_batch_equals_single(documents: list[dict[str, float] | list[str]], bits: int) -> None:
    """simhash_batch gives every document the fingerprint simhash gives it alone."""
    assert simhash_batch(documents, bits=bits) == [simhash(d, bits=bits) for d in documents]


def exact_simhash(features: dict[str, float], bits: int) -> int:
    """The weighted vote in exact rational arithmetic: a tie leaves its bit clear."""
    votes = [Fraction(0)] * bits
    for term, weight in features.items():
        h = term_hash(term, bits)
        for i in range(bits):
            votes[i] += Fraction(weight) if (h >> i) & 1 else -Fraction(weight)
    return sum(1 << i for i, v in enumerate(votes) if v > 0)


def test_fractional_ties_give_one_fingerprint() -> None:
    """Fractional weights whose votes cancel give the exact fingerprint, batch or single."""
    rng = random.Random(5)
    docs = []
    for k in range(50):
        x, y = rng.uniform(0.01, 10), rng.uniform(0.01, 10)
        docs.append({f"a{k}": x, f"b{k}": y, f"c{k}": x, f"d{k}": y})
    exact = [exact_simhash(d, 64) for d in docs]
    assert [simhash(d) for d in docs] == exact
    assert simhash_batch(docs) == exact


@pytest.mark.parametrize("bits", [64, 128])
@pytest.mark.parametrize("term", ["北京", "weather", "GDP增长", ""])
def test_one_feature_is_its_hash(term: str, bits: int) -> None:
    """The fingerprint of a single feature is that feature's hash."""
    assert simhash([term], bits=bits) == term_hash(term, bits)
    assert simhash({term: 3.5}, bits=bits) == term_hash(term, bits)


@given(st.dictionaries(TERMS, st.floats(0.0, 1.0), max_size=10), TERMS, BITS)
@FAST
def test_heavy_feature_decides_every_bit(rest: dict[str, float], heavy: str, bits: int) -> None:
    """A feature heavier than all the others together sets the whole fingerprint."""
    features = {k: v for k, v in rest.items() if k != heavy}
    features[heavy] = sum(features.values()) + 1.0
    assert simhash(features, bits=bits) == term_hash(heavy, bits)


def test_weights_matter() -> None:
    """Moving the weight from one feature to another changes the fingerprint."""
    terms = ["北京", "天气", "晴朗", "多云", "气温"]
    even = simhash(dict.fromkeys(terms, 1.0))
    tilted = simhash({t: (10.0 if t == "多云" else 1.0) for t in terms})
    assert tilted != even
    assert tilted == simhash(["多云"])


def test_repeated_terms_count_as_weight() -> None:
    """A term listed twice weighs as much as a term of weight 2."""
    assert simhash(["北京", "北京", "天气", "晴朗"]) == simhash(
        {"北京": 2.0, "天气": 1.0, "晴朗": 1.0}
    )


@pytest.mark.parametrize("bits", [64, 128])
def test_pinned_values(bits: int) -> None:
    """Fingerprints keep their values, so stored ones stay valid."""
    expected = {64: 5783756931076194306, 128: 1994897096027163442286285749232226448}
    assert simhash(["北京", "天气"], bits=bits) == expected[bits]


@pytest.mark.parametrize("bits", [64, 128])
def test_empty_features(bits: int) -> None:
    """No features give the zero fingerprint, alone or within a batch."""
    assert simhash([], bits=bits) == 0
    assert simhash({}, bits=bits) == 0
    assert simhash_batch([[], ["a"], {}], bits=bits) == [0, simhash(["a"], bits=bits), 0]
    assert simhash_batch([], bits=bits) == []


@given(FEATURES, FEATURES, BITS)
@FAST
def test_hamming(
    a: dict[str, float] | list[str], b: dict[str, float] | list[str], bits: int
) -> None:
    """Hamming distance is 0 on itself, symmetric, bounded by the width, and counts bits."""
    x, y = simhash(a, bits=bits), simhash(b, bits=bits)
    assert hamming(x, x) == 0
    assert hamming(x, y) == hamming(y, x) == bin(x ^ y).count("1")
    assert 0 <= hamming(x, y) <= bits
    assert x < 1 << bits


def test_near_texts_are_near() -> None:
    """Feature sets that differ in one of many features are a few bits apart."""
    words = [f"词{i}" for i in range(60)]
    a = simhash(words)
    b = simhash([*words[:-1], "另一个词"])
    assert hamming(a, b) < 16


@pytest.mark.parametrize("bits", [0, 32, 96, 256])
def test_bits_validation(bits: int) -> None:
    """Only 64 and 128 bits are offered; the message names the value given."""
    with pytest.raises(ConfigError, match=f"64 or 128, got {bits}"):
        simhash(["a"], bits=bits)
    with pytest.raises(ValueError, match=str(bits)):
        simhash_batch([["a"]], bits=bits)
