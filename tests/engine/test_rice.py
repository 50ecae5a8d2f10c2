"""The Rice code of compact stores' sorted slots: every list of gaps reads back as written,
in about the bits their entropy says, and a code cut short or garbled is an error."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.engine import rice

_gaps = st.lists(st.integers(0, (1 << 40) - 1), max_size=300)


@given(_gaps, st.integers(0, 40) | st.none())
def test_any_gaps_read_back_as_written(values: list[int], k: int | None) -> None:
    gaps = np.array(values, dtype=np.uint64)
    if k is not None and values and max(values) >> k > 1 << 16:
        k = None  # a unary part of more than 65,536 bits a gap: legal, but slow to test
    blob = b"head" + rice.encode(gaps, k) + b"tail"
    back, end = rice.decode(blob, 4)
    assert back.dtype == np.uint64 and back.tolist() == values
    assert blob[end:] == b"tail"


@given(_gaps, st.integers(0, 40))
def test_few_gaps_and_many_take_the_same_bytes(values: list[int], k: int) -> None:
    """Low bits packed all at once (a story's slots) or a plane at a time (a count table's
    millions): the same code, read back the same either way."""
    gaps = np.array(values, dtype=np.uint64)
    if values and max(values) >> k > 1 << 16:
        k = rice.best_k(gaps)
    at_once = rice.encode(gaps, k)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rice, "_AT_ONCE", -1)
        planes = rice.encode(gaps, k)
        assert rice.decode(at_once)[0].tolist() == values
    assert planes == at_once and rice.decode(planes)[0].tolist() == values


@given(st.floats(0.05, 1e6), st.integers(1, 2000), st.integers(0, 2**32 - 1))
def test_best_k_codes_geometric_gaps_in_about_the_fewest_bits(
    mean: float, n: int, seed: int
) -> None:
    """Kiely's rule, from the mean alone: within a bit a gap of the best parameter."""
    rng = np.random.default_rng(seed)
    gaps = (rng.geometric(1 / (mean + 1), n) - 1).astype(np.uint64)
    k = rice.best_k(gaps)
    size = {j: len(rice.encode(gaps, j)) for j in range(0, 26)}
    assert size[k] <= min(size.values()) + n / 8 + 2


def test_random_slots_cost_about_their_entropy() -> None:
    """1,300 slots drawn from 2^26 (a story's template-guard slots): about 17 bits a gap,
    where their three bytes each took 24."""
    rng = np.random.default_rng(7)
    slots = np.unique(rng.integers(0, 1 << 26, 1300, dtype=np.uint64))
    blob = rice.encode(np.diff(slots, prepend=np.uint64(0)))
    assert len(blob) * 8 / len(slots) < 17.5


@pytest.mark.parametrize("damage", ["cut", "no ones", "big k", "head only"])
def test_a_damaged_code_is_a_value_error(damage: str) -> None:
    blob = rice.encode(np.array([3, 90, 7, 1000], dtype=np.uint64), 4)
    broken = {
        "cut": blob[:-1],
        "no ones": blob[:3] + bytes(len(blob) - 3),
        "big k": rice.varints([4, 41, 1]) + b"\x0f",
        "head only": blob[:2],
    }[damage]
    with pytest.raises(ValueError):
        rice.decode(broken)


@given(_gaps, st.integers(0, 40) | st.none())
def test_the_compiled_code_is_the_references_byte_for_byte(
    values: list[int], k: int | None
) -> None:
    """With the kernels loaded, a list of gaps is coded into the same bytes as by numpy."""
    from unittest import mock

    pytest.importorskip("numba")
    gaps = np.array(values, dtype=np.uint64)
    if k is not None and values and max(values) >> k > 1 << 16:
        k = None
    with mock.patch("neardup.kernels.wanted", return_value=False):
        want = rice.encode(gaps, k)
    with mock.patch("neardup.kernels.wanted", return_value=True):
        assert rice.encode(gaps, k) == want
