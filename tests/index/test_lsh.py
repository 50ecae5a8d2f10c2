"""MinHash LSH: choosing bands and rows, the index's contract, and the batch join against
streaming lookups in the same order."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError
from neardup.hashing import mix
from neardup.index.lsh import LSHJoin, MinHashLSH, band_keys, lsh_join, optimal_params
from neardup.sketch.minhash import minhash

FAST = settings(max_examples=60, deadline=None)

NUM_PERM = 16
SHAPES = [(16, 1), (8, 2), (4, 4), (2, 8), (5, 3), (3, 4), (1, 16)]


def signature(seed: int, k: int = 128) -> np.ndarray:
    """The MinHash signature of a random set of 300 shingles."""
    return minhash(mix(np.arange(seed * 1000, seed * 1000 + 300, dtype=np.uint64)), num_perm=k)


@st.composite
def clustered_signatures(draw: st.DrawFn) -> np.ndarray:
    """Signatures copied from a few bases with some positions changed, over a tiny alphabet,
    so that bands collide within clusters and, now and then, across them."""
    n_bases = draw(st.integers(1, 4))
    row = st.lists(st.integers(0, 3), min_size=NUM_PERM, max_size=NUM_PERM)
    bases = draw(st.lists(row, min_size=n_bases, max_size=n_bases))
    n = draw(st.integers(0, 30))
    docs = []
    for _ in range(n):
        doc = list(bases[draw(st.integers(0, n_bases - 1))])
        for pos in draw(st.lists(st.integers(0, NUM_PERM - 1), max_size=6)):
            doc[pos] = draw(st.integers(0, 3))
        docs.append(doc)
    return np.array(docs, dtype=np.uint64).reshape(n, NUM_PERM)


def streamed_pairs(sigs: np.ndarray, bands: int, rows: int, cap: int) -> list[list[int]]:
    """Pairs (earlier, later) found by querying, then adding, each signature in order."""
    lsh = MinHashLSH(num_perm=sigs.shape[1], params=(bands, rows), bucket_cap=cap)
    pairs = []
    for j, sig in enumerate(sigs):
        found = [int(k) for k in lsh.query(sig)]
        assert found == sorted(found)  # insertion order
        pairs += [[i, j] for i in found]
        lsh.add(str(j), sig)
    return sorted(pairs)


@given(clustered_signatures(), st.sampled_from(SHAPES), st.sampled_from([1, 2, 3, 100]))
@FAST
def test_join_equals_streaming(sigs: np.ndarray, shape: tuple[int, int], cap: int) -> None:
    """lsh_join finds exactly the pairs streaming queries in the same order find."""
    bands, rows = shape
    joined = lsh_join(sigs, bands=bands, rows=rows, bucket_cap=cap)
    assert joined.dtype == np.int64 and joined.shape[1] == 2
    assert joined.tolist() == streamed_pairs(sigs, bands, rows, cap)


@given(clustered_signatures(), st.sampled_from(SHAPES))
@FAST
def test_join_is_sorted_unique_and_ordered(sigs: np.ndarray, shape: tuple[int, int]) -> None:
    """Join pairs are unique, sorted, and each is (earlier, later)."""
    pairs = lsh_join(sigs, bands=shape[0], rows=shape[1]).tolist()
    assert pairs == [list(p) for p in sorted({(i, j) for i, j in pairs})]
    assert all(i < j for i, j in pairs)


@given(clustered_signatures(), st.sampled_from(SHAPES))
@FAST
def test_join_pairs_share_a_band(sigs: np.ndarray, shape: tuple[int, int]) -> None:
    """Without a cap, the join holds exactly the pairs that agree on some whole band."""
    bands, rows = shape
    cut = sigs[:, : bands * rows].reshape(len(sigs), bands, rows)
    expected = [
        [i, j]
        for i in range(len(sigs))
        for j in range(i + 1, len(sigs))
        if any((cut[i, b] == cut[j, b]).all() for b in range(bands))
    ]
    assert lsh_join(sigs, bands=bands, rows=rows, bucket_cap=10_000).tolist() == expected


@given(
    clustered_signatures(),
    st.sampled_from(SHAPES),
    st.sampled_from([1, 2, 3, 100]),
    st.lists(st.integers(1, 8), max_size=30),
    st.integers(0, 5),
    st.sampled_from([0, 2**31 - 3, 2**40]),
)
@FAST
def test_join_in_blocks_equals_join(
    sigs: np.ndarray, shape: tuple[int, int], cap: int, sizes: list[int], gap: int, start: int
) -> None:
    """LSHJoin.extend, block by block, returns exactly lsh_join's pairs, each block's pairs
    those of its later documents, sorted by (later, earlier); positions may skip numbers,
    and go beyond 32 bits. With the compiled lookups and merges (kernels on) as with numpy."""
    bands, rows = shape
    keys = band_keys(sigs, bands, rows)
    # e.g. copies in between
    positions = start + np.arange(len(sigs), dtype=np.int64) * (gap + 1)
    want = start + lsh_join(sigs, bands=bands, rows=rows, bucket_cap=cap) * (gap + 1)
    for mode in KERNEL_MODES:
        with kernels_set(mode):
            join = LSHJoin(bucket_cap=cap)
            found: list[list[int]] = []
            at = 0
            for size in [*sizes, len(sigs)]:
                block = slice(at, min(len(sigs), at + size))
                got = join.extend(keys[block], positions[block])
                assert got.dtype == np.int64 and got.shape[1] == 2
                assert got.tolist() == sorted(got.tolist(), key=lambda p: (p[1], p[0]))
                assert all(positions[block.start] <= j for _, j in got.tolist())
                found += got.tolist()
                at = block.stop
        assert sorted(found) == want.tolist(), mode


KERNEL_MODES = ["off", "on"] if importlib.util.find_spec("numba") else ["off"]


@contextlib.contextmanager
def kernels_set(mode: str) -> Iterator[None]:
    """NEARDUP_KERNELS set to ``mode`` for a while."""
    old = os.environ.get("NEARDUP_KERNELS")
    os.environ["NEARDUP_KERNELS"] = mode
    try:
        yield
    finally:
        if old is None:
            del os.environ["NEARDUP_KERNELS"]
        else:
            os.environ["NEARDUP_KERNELS"] = old


#: join keys (48 bits) in a few directory slots, the first and last among them, with low
#: bits at both ends of their range
JOIN_KEYS = st.lists(
    st.builds(
        lambda t, v: (t << 32) | v,
        st.sampled_from([0, 1, 2, 0xFFFE, 0xFFFF]),
        st.sampled_from([0, 1, 2, 3, 0xFFFFFFFE, 0xFFFFFFFF]),
    ),
    max_size=60,
)


@pytest.mark.skipif("on" not in KERNEL_MODES, reason="numba is not installed")
@given(JOIN_KEYS, JOIN_KEYS)
@FAST
def test_compiled_lookups_and_merges_equal_numpy(run: list[int], keys: list[int]) -> None:
    """The kernels' sorted lookups in a run (its directory and low bits) are np.searchsorted's
    in its keys made whole, left and right; their merge of two runs is the numpy merge's,
    old members first under a key, positions widened as needed; a run's keys made whole
    are the keys it was made of."""
    from neardup.index.lsh import _merge_runs, _run, _run_keys
    from neardup.kernels import _join

    r = np.array(sorted(run), dtype=np.uint64)
    k = np.array(sorted(keys), dtype=np.uint64)
    old = _run(r, np.arange(len(r), dtype=np.int32))
    assert _run_keys(old).tolist() == r.tolist()
    lo, hi = _join.sorted_ranges(old[0], old[1], k)
    assert lo.tolist() == np.searchsorted(r, k, "left").tolist()
    assert hi.tolist() == np.searchsorted(r, k, "right").tolist()
    new = _run(k, np.arange(len(r), len(r) + len(k), dtype=np.int64))
    a, b = _merge_runs(old, new), _merge_runs(old, new, fast=True)
    assert all(x.tolist() == y.tolist() for x, y in zip(a, b, strict=True))
    assert a[2].dtype == b[2].dtype == np.int64
    assert _run_keys(a).tolist() == sorted(run + keys)
    # positions of one width: merged in place, into the old run grown, from the back
    new32 = _run(k, np.arange(len(r), len(r) + len(k), dtype=np.int32))
    want = _merge_runs(old, new32)
    got = _merge_runs((old[0], old[1].copy(), old[2].copy()), new32, fast=True)
    assert all(x.tolist() == y.tolist() for x, y in zip(got, want, strict=True))
    assert got[2].dtype == np.int32


@pytest.mark.skipif("on" not in KERNEL_MODES, reason="numba is not installed")
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(["even", "clustered", "one slot", "few values"]),
    st.integers(1, 3_000),
)
@FAST
def test_compiled_lookups_in_runs_of_any_spread_equal_numpy(seed: int, spread: str, n: int) -> None:
    """Wherever a run's keys are (spread evenly, clustered low bits, one directory slot,
    many equal keys) and whatever is looked for (members, keys beside them or missing from
    the run), the galloping lookups' ranges are np.searchsorted's."""
    from neardup.index.lsh import _run
    from neardup.kernels import _join

    rng = np.random.default_rng(seed)
    if spread == "even":
        r = rng.integers(0, 1 << 48, n, dtype=np.uint64)
    elif spread == "clustered":  # low bits bunched near a few values in a few slots
        r = (rng.integers(0, 4, n, dtype=np.uint64) << np.uint64(32)) | rng.choice(
            np.array([5, 1 << 20, 0xFFFF0000], dtype=np.uint64), n
        ) + rng.integers(0, 64, n, dtype=np.uint64)
    elif spread == "one slot":
        r = (np.uint64(7) << np.uint64(32)) | rng.integers(0, 1 << 32, n, dtype=np.uint64)
    else:
        r = rng.choice(np.array([3, 7 << 32, (7 << 32) | 9], dtype=np.uint64), n)
    r.sort()
    near = np.concatenate((r[:3] - np.uint64(1), r[-3:] + np.uint64(1), r[rng.integers(0, n, 50)]))
    k = np.concatenate((
        r[rng.integers(0, n, 50)],  # in the run
        near[near < np.uint64(1 << 48)],  # beside its ends, or one bit off a member
        near ^ np.uint64(1),
        rng.integers(0, 1 << 48, 50, dtype=np.uint64),  # anywhere
    ))  # fmt: skip
    k = np.sort(k[k < np.uint64(1 << 48)])  # join keys: 48 bits
    run = _run(r, np.arange(n, dtype=np.int32))
    lo, hi = _join.sorted_ranges(run[0], run[1], k)
    assert lo.tolist() == np.searchsorted(r, k, "left").tolist()
    assert hi.tolist() == np.searchsorted(r, k, "right").tolist()


def test_runs_keep_a_directory_only_where_the_kernels_can_read_it() -> None:
    """Without the kernels (turned off, or numba missing) a run keeps its keys whole, as
    numpy searches them (a directory would have numpy make every run's keys whole again for
    every block); with them, a directory and 32 bits a key."""
    keys = band_keys(np.stack([signature(s, 16) for s in range(40)]), 4, 4)
    for mode in KERNEL_MODES:
        with kernels_set(mode):
            join = LSHJoin()
            for at in range(0, 40, 8):
                join.extend(keys[at : at + 8], np.arange(at, at + 8))
        layouts = {(run[0] is None, run[1].dtype) for run in join._runs}
        assert layouts == (
            {(True, np.dtype(np.uint64))} if mode == "off" else {(False, np.dtype(np.uint32))}
        )


def test_join_in_blocks_checks_positions() -> None:
    """Blocks must come in order, with as many positions as rows of keys."""
    keys = band_keys(np.stack([signature(s, 16) for s in range(3)]), 4, 4)
    join = LSHJoin()
    join.extend(keys[:2], np.array([3, 4]))
    with pytest.raises(ConfigError, match="increase"):
        join.extend(keys[2:], np.array([4]))
    with pytest.raises(ConfigError, match="positions"):
        join.extend(keys[2:], np.array([5, 6]))
    with pytest.raises(ConfigError, match="bucket_cap"):
        LSHJoin(bucket_cap=0)
    assert join.extend(keys[:0], np.zeros(0, np.int64)).shape == (0, 2)


def test_join_of_nothing() -> None:
    """No signatures, or one, give no pairs."""
    assert lsh_join(np.zeros((0, 16), np.uint64), bands=4, rows=4).shape == (0, 2)
    assert lsh_join(signature(1, 16)[None, :], bands=4, rows=4).shape == (0, 2)


def test_band_keys_shape() -> None:
    """One key per band; a single signature is treated as one row."""
    sig = signature(3)
    assert band_keys(sig, 20, 6).shape == (1, 20)
    assert band_keys(np.stack([sig, sig]), 20, 6).shape == (2, 20)
    assert band_keys(sig, 20, 6).dtype == np.uint64


@pytest.mark.parametrize("threshold", [0.1, 0.15, 0.3, 0.5, 0.7, 0.9])
@pytest.mark.parametrize("num_perm", [16, 64, 128])
def test_optimal_params_fit(threshold: float, num_perm: int) -> None:
    """The chosen bands and rows are positive and use at most num_perm positions."""
    b, r = optimal_params(threshold, num_perm)
    assert b >= 1 and r >= 1
    assert b * r <= num_perm


def test_optimal_params_pinned() -> None:
    """A well-known setting keeps its value: threshold 0.5 over 128 permutations."""
    assert optimal_params(0.5, 128) == (25, 5)


def test_higher_threshold_needs_more_rows() -> None:
    """Rows per band grow with the threshold (the S-curve moves right)."""
    low, high = optimal_params(0.2, 128), optimal_params(0.8, 128)
    assert high[1] > low[1]


@pytest.mark.parametrize("threshold", [0.0, 1.0, -0.5, 1.5])
def test_optimal_params_threshold_validation(threshold: float) -> None:
    """The threshold must lie strictly between 0 and 1; the message names it."""
    with pytest.raises(ConfigError, match=f"got {threshold}"):
        optimal_params(threshold, 128)


def test_optimal_params_weight_validation() -> None:
    """The two weights must add up to 1; the message shows both."""
    with pytest.raises(ConfigError, match=r"0\.3 \+ 0\.3"):
        optimal_params(0.5, 128, 0.3, 0.3)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ((8, 20), r"b \* r = 8 \* 20 = 160 must not exceed num_perm 128"),
        ((129, 1), r"b \* r = 129 \* 1 = 129 must not exceed num_perm 128"),
        ((0, 5), r"b = 0, r = 5"),
        ((4, -1), r"b = 4, r = -1"),
    ],
)
def test_index_params_validation(params: tuple[int, int], message: str) -> None:
    """Bands and rows that do not fit the signature are refused, with the numbers shown."""
    with pytest.raises(ConfigError, match=message):
        MinHashLSH(num_perm=128, params=params)
    with pytest.raises(ValueError, match=message):
        lsh_join(np.zeros((2, 128), np.uint64), bands=params[0], rows=params[1])


def test_bucket_cap_validation() -> None:
    """A bucket must hold at least one key; the message names the value."""
    with pytest.raises(ConfigError, match="got 0"):
        MinHashLSH(bucket_cap=0)


def test_join_bucket_cap_validation() -> None:
    """The batch join refuses bucket_cap 0 as the streaming index does."""
    sigs = np.stack([signature(1, 16), signature(1, 16)])
    with pytest.raises(ConfigError, match="got 0"):
        lsh_join(sigs, bands=4, rows=4, bucket_cap=0)


def test_signature_size_validation() -> None:
    """A signature of the wrong length is refused, with both lengths in the message."""
    lsh = MinHashLSH(num_perm=128)
    with pytest.raises(ConfigError, match="64 positions, the index expects 128"):
        lsh.add("a", signature(1, 64))
    with pytest.raises(ConfigError, match="64 positions"):
        lsh.query(signature(1, 64))


def test_add_query_remove() -> None:
    """Added keys are found by a similar signature, not by an unrelated one, until removed."""
    lsh = MinHashLSH(threshold=0.5, num_perm=128)
    x = mix(np.arange(1, 500, dtype=np.uint64))
    lsh.add("a", minhash(x))
    lsh.add("b", signature(7))
    assert len(lsh) == 2 and "a" in lsh and "c" not in lsh
    assert lsh.query(minhash(x[20:])) == ["a"]
    assert lsh.query(signature(99)) == []
    lsh.remove("a")
    assert "a" not in lsh and len(lsh) == 1
    assert lsh.query(minhash(x[20:])) == []
    assert lsh.query(signature(7)) == ["b"]


def test_add_twice_and_remove_missing() -> None:
    """A key is added once; removing an absent key is a KeyError naming it."""
    lsh = MinHashLSH(num_perm=128)
    lsh.add("a", signature(1))
    with pytest.raises(ConfigError, match="'a' is already in the index"):
        lsh.add("a", signature(2))
    with pytest.raises(KeyError, match="'zz'"):
        lsh.remove("zz")


def test_query_returns_insertion_order() -> None:
    """Candidates come back in the order they were added, not by key or by band."""
    lsh = MinHashLSH(num_perm=128)
    sig = signature(5)
    for key in ["新闻-3", "c", "a", "B", "新闻-1"]:
        lsh.add(key, sig)
    assert lsh.query(sig) == ["新闻-3", "c", "a", "B", "新闻-1"]
    lsh.remove("c")
    lsh.add("c", sig)
    assert lsh.query(sig) == ["新闻-3", "a", "B", "新闻-1", "c"]


def test_bucket_cap_keeps_the_first() -> None:
    """A bucket keeps only its first bucket_cap keys; later copies are indexed but not listed."""
    lsh = MinHashLSH(num_perm=128, bucket_cap=2)
    sig = signature(5)
    for key in "abcd":
        lsh.add(key, sig)
    assert len(lsh) == 4
    assert lsh.query(sig) == ["a", "b"]


def test_query_keys_equals_query() -> None:
    """Querying by precomputed band keys gives what querying by signature gives."""
    lsh = MinHashLSH(num_perm=128)
    for i in range(5):
        lsh.add(f"k{i}", signature(i % 2))
    sig = signature(1)
    assert lsh.query_keys(lsh.keys_of(sig)) == lsh.query(sig) == ["k1", "k3"]


@pytest.mark.skipif("on" not in KERNEL_MODES, reason="numba is not installed")
@given(
    st.lists(
        st.lists(st.integers(0, 2**64 - 1), min_size=3, max_size=3)
        | st.lists(st.sampled_from([0, 1, 2**63, 2**64 - 1, 2**64 - 2]), min_size=3, max_size=3),
        max_size=8,
    )
)
@FAST
def test_compiled_bucket_ids_equal_numpy(rows: list[list[int]]) -> None:
    """The kernel's bucket ids are numpy's (each key plus its band's number, wrapping at
    2^64, through SplitMix64), for every key, the largest among them; and bucket_ids gives
    them with the kernels on as off."""
    from neardup.index.lsh import bucket_ids
    from neardup.kernels import _join

    keys = np.array(rows, dtype=np.uint64).reshape(len(rows), 3)
    with np.errstate(over="ignore"):
        want = mix(keys + np.arange(3, dtype=np.uint64))
    assert _join.bucket_ids(keys).tolist() == want.tolist()
    with kernels_set("on"):
        on = bucket_ids(keys)
    with kernels_set("off"):
        off = bucket_ids(keys)
    assert on.tolist() == off.tolist() == want.tolist()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([0, 1, 4095, 4096, 2**24 - 1, 2**24, 2**36 + 5, 2**47, 2**48 - 1])
        | st.integers(0, 2**48 - 1),
        max_size=300,
    )
)
def test_the_join_keys_radix_sort_is_a_stable_argsort(values: list[int]) -> None:
    """The compiled sort of a block's join keys (48 bits, by digits of 12) gives numpy's
    stable order — equal keys in the order they came — and the keys in it: many ties, keys
    at the digits' bounds, none."""
    if KERNEL_MODES[-1] != "on":
        pytest.skip("numba is not installed")
    from neardup import kernels

    keys = np.array(values, dtype=np.uint64)
    order, ordered = kernels.load("_join").sorted_stably(keys, 48)
    want = np.argsort(keys, kind="stable")
    assert order.dtype == np.int64 and order.tolist() == want.tolist()
    assert ordered.dtype == np.uint64 and ordered.tolist() == keys[want].tolist()
