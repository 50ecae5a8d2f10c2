"""Find fingerprints within k bits of each other: the permuted-table index of Manku, Jain and
Das Sarma (WWW 2007), and a vectorized all-pairs join built on the same tables.

The fingerprint is cut into ``blocks`` contiguous blocks. Two fingerprints that differ in at
most ``k`` bits differ in at most ``k`` blocks, so they agree exactly on some ``blocks - k`` of
them (pigeonhole). One table per choice of ``blocks - k`` blocks, keyed on those blocks, puts
every such pair in a common bucket: the buckets give the *candidates*, and the full Hamming
distance verifies them. ``blocks = k + 1`` gives ``k + 1`` tables with short keys; more blocks
give more tables (C(blocks, k)) with longer keys, hence smaller buckets and fewer candidates.
Manku et al. store each table as the fingerprints permuted so that its key blocks lead, sorted;
here a table is a dict from key to keys (the index) or one sort by key (the join): the same
buckets.

>>> index = HammingIndex(bits=64, k=3)
>>> index.add("a", 0b1011)
>>> index.add("b", 0b0011)
>>> index.add("c", 0xFFFF)
>>> index.query(0b1111)
[Neighbor(key='a', distance=1), Neighbor(key='b', distance=2)]
>>> import numpy as np
>>> hamming_join(np.array([0b1011, 0xFFFF, 0b0011], dtype=np.uint64), k=3).tolist()
[[0, 2]]
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError, InputError

__all__ = [
    "BruteForceHammingIndex",
    "HammingIndex",
    "Neighbor",
    "default_blocks",
    "hamming_join",
    "join_blocks",
]

MAX_TABLES = 1024
"""Most tables a (blocks, k) choice may need: C(blocks, k) grows fast with blocks."""
MAX_JOIN = 1 << 31
"""Most fingerprints :func:`hamming_join` takes: a pair is coded as one int64 while joining."""

_CHUNK_PAIRS = 1 << 16
"""Candidate pairs the join verifies at once: small temporaries stay in cache, no page faults."""

_U64 = (1 << 64) - 1

U64Array = npt.NDArray[np.uint64]
IntArray = npt.NDArray[np.intp]


class Neighbor(NamedTuple):
    """A key found by a query, and its fingerprint's Hamming distance to the query."""

    key: str
    distance: int


# ---------------------------------------------------------------------------------------------
# The layout: blocks and tables


@dataclass(frozen=True)
class _Layout:
    """Where the blocks lie and which blocks key each table."""

    bits: int
    k: int
    blocks: int
    tables: tuple[tuple[int, ...], ...]  # the blocks each table keys on
    masks: tuple[int, ...]  # each table's key bits, as one int mask
    ranges: tuple[tuple[tuple[int, int], ...], ...]  # each table's key as (start, length) runs

    @property
    def key_bits(self) -> tuple[int, ...]:
        return tuple(m.bit_count() for m in self.masks)


def default_blocks(bits: int, k: int) -> int:
    """The number of blocks :class:`HammingIndex` uses when none is given: k + 2, i.e.
    C(k + 2, 2) tables with keys long enough that buckets stay small as the index grows (at
    k = 3 on 64 bits, 10 tables of 25- or 26-bit keys: about the queries/s of k + 1 blocks at
    100,000 keys, 13 times it at 1,000,000, for twice the memory); k + 1 when k + 2 blocks
    would not fit in ``bits`` or need more than MAX_TABLES tables.

    >>> default_blocks(64, 3)
    5
    """
    if k + 2 <= bits and math.comb(k + 2, 2) <= MAX_TABLES:
        return k + 2
    return k + 1


def _layout(bits: int, k: int, blocks: int | None) -> _Layout:
    if bits not in (64, 128):
        raise ConfigError(f"bits must be 64 or 128, got {bits}")
    if not 0 <= k < bits:
        raise ConfigError(f"k must satisfy 0 <= k < bits = {bits}, got k = {k}")
    if blocks is None:
        blocks = default_blocks(bits, k)
    if not k < blocks <= bits:
        raise ConfigError(
            f"blocks must satisfy k < blocks <= bits, i.e. {k} < blocks <= {bits}, "
            f"got blocks = {blocks} (k + 1 = {k + 1} is the fewest that works)"
        )
    n_tables = math.comb(blocks, k)
    if n_tables > MAX_TABLES:
        raise ConfigError(
            f"blocks = {blocks} with k = {k} needs C({blocks}, {k}) = {n_tables} tables, "
            f"more than {MAX_TABLES}; use fewer blocks (k + 1 = {k + 1} needs {k + 1})"
        )
    # As even as possible: the first bits % blocks blocks get one bit more.
    size, extra = divmod(bits, blocks)
    starts = [b * size + min(b, extra) for b in range(blocks + 1)]
    tables = tuple(itertools.combinations(range(blocks), blocks - k))
    masks: list[int] = []
    ranges: list[tuple[tuple[int, int], ...]] = []
    for table in tables:
        runs: list[list[int]] = []
        for b in table:  # adjacent blocks merge into one run of bits
            if runs and runs[-1][1] == starts[b]:
                runs[-1][1] = starts[b + 1]
            else:
                runs.append([starts[b], starts[b + 1]])
        ranges.append(tuple((lo, hi - lo) for lo, hi in runs))
        masks.append(sum(((1 << (hi - lo)) - 1) << lo for lo, hi in runs))
    return _Layout(bits, k, blocks, tables, tuple(masks), tuple(ranges))


def _check_fingerprint(fingerprint: int, bits: int) -> int:
    fp = operator.index(fingerprint)
    if not 0 <= fp < 1 << bits:
        raise InputError(
            f"fingerprint {fp:#x} does not fit in {bits} unsigned bits "
            f"(must be 0 <= fingerprint < 2**{bits})"
        )
    return fp


# ---------------------------------------------------------------------------------------------
# The indexes


class HammingIndex:
    """Keys and their fingerprints, found again by any fingerprint within ``k`` bits.

    Each of the C(blocks, k) tables maps a fingerprint's key bits to the keys that have them;
    a query unions its buckets (the candidates) and keeps those within ``k`` bits. The result
    is exact: the same as :class:`BruteForceHammingIndex`. ``blocks`` defaults to
    :func:`default_blocks` (``k + 2``); ``k + 1`` uses less memory, more blocks query faster.

    >>> index = HammingIndex(k=2)
    >>> index.add("doc-1", 0xDEADBEEF)
    >>> index.add("doc-2", 0xDEADBEEF ^ 0b101)
    >>> index.query(0xDEADBEEF)
    [Neighbor(key='doc-1', distance=0), Neighbor(key='doc-2', distance=2)]
    >>> index.remove("doc-1")
    >>> len(index), "doc-1" in index
    (1, False)
    """

    def __init__(self, *, bits: int = 64, k: int = 3, blocks: int | None = None) -> None:
        self._layout = _layout(bits, k, blocks)
        self._masks = self._layout.masks
        # A bucket holding one key stores it bare: most buckets do, and a set costs ~200 bytes.
        self._tables: list[dict[int, str | set[str]]] = [{} for _ in self._masks]
        self._entries: dict[str, tuple[int, int]] = {}  # key -> (fingerprint, insertion number)
        self._added = 0

    @property
    def bits(self) -> int:
        """Width of the fingerprints: 64 or 128."""
        return self._layout.bits

    @property
    def k(self) -> int:
        """Largest Hamming distance a query returns."""
        return self._layout.k

    @property
    def blocks(self) -> int:
        """Number of blocks the fingerprint is cut into."""
        return self._layout.blocks

    @property
    def tables(self) -> int:
        """Number of tables: C(blocks, k)."""
        return len(self._masks)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __repr__(self) -> str:
        return (
            f"HammingIndex(bits={self.bits}, k={self.k}, blocks={self.blocks}) "
            f"with {len(self)} keys in {self.tables} tables"
        )

    def add(self, key: str, fingerprint: int) -> None:
        """Store ``key`` with its fingerprint; adding a key again replaces it (as the newest)."""
        fp = _check_fingerprint(fingerprint, self.bits)
        if key in self._entries:
            self.remove(key)
        self._entries[key] = (fp, self._added)
        self._added += 1
        for mask, table in zip(self._masks, self._tables, strict=True):
            bucket_key = fp & mask
            bucket = table.get(bucket_key)
            if bucket is None:
                table[bucket_key] = key
            elif isinstance(bucket, str):
                table[bucket_key] = {bucket, key}
            else:
                bucket.add(key)

    def remove(self, key: str) -> None:
        """Forget ``key``; raise KeyError if it is not in the index."""
        try:
            fp, _ = self._entries.pop(key)
        except KeyError:
            raise KeyError(f"key {key!r} is not in the index") from None
        for mask, table in zip(self._masks, self._tables, strict=True):
            bucket_key = fp & mask
            bucket = table[bucket_key]
            if isinstance(bucket, str):
                del table[bucket_key]
            else:
                bucket.discard(key)
                if len(bucket) == 1:
                    table[bucket_key] = next(iter(bucket))

    def query(self, fingerprint: int) -> list[Neighbor]:
        """Every key within ``k`` bits of ``fingerprint``, with its distance, sorted by
        (distance, insertion order)."""
        fp = _check_fingerprint(fingerprint, self.bits)
        candidates: set[str] = set()
        for mask, table in zip(self._masks, self._tables, strict=True):
            bucket = table.get(fp & mask)
            if bucket is None:
                continue
            if isinstance(bucket, str):
                candidates.add(bucket)
            else:
                candidates.update(bucket)
        return _verify(fp, candidates, self._entries, self.k)


class BruteForceHammingIndex:
    """The same interface as :class:`HammingIndex`, by comparing the query with every key.

    The reference the fast index is tested against; fine for a few thousand keys.

    >>> index = BruteForceHammingIndex(k=1)
    >>> index.add("x", 0b100)
    >>> index.query(0b101), index.query(0b111)
    ([Neighbor(key='x', distance=1)], [])
    """

    def __init__(self, *, bits: int = 64, k: int = 3) -> None:
        _layout(bits, k, k + 1)  # the same validation
        self._bits = bits
        self._k = k
        self._entries: dict[str, tuple[int, int]] = {}
        self._added = 0

    @property
    def bits(self) -> int:
        """Width of the fingerprints: 64 or 128."""
        return self._bits

    @property
    def k(self) -> int:
        """Largest Hamming distance a query returns."""
        return self._k

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def add(self, key: str, fingerprint: int) -> None:
        """Store ``key`` with its fingerprint; adding a key again replaces it (as the newest)."""
        fp = _check_fingerprint(fingerprint, self._bits)
        self._entries.pop(key, None)
        self._entries[key] = (fp, self._added)
        self._added += 1

    def remove(self, key: str) -> None:
        """Forget ``key``; raise KeyError if it is not in the index."""
        if self._entries.pop(key, None) is None:
            raise KeyError(f"key {key!r} is not in the index")

    def query(self, fingerprint: int) -> list[Neighbor]:
        """Every key within ``k`` bits of ``fingerprint``, with its distance, sorted by
        (distance, insertion order)."""
        fp = _check_fingerprint(fingerprint, self._bits)
        return _verify(fp, self._entries, self._entries, self._k)


def _verify(
    fp: int, candidates: Iterable[str], entries: dict[str, tuple[int, int]], k: int
) -> list[Neighbor]:
    found: list[tuple[int, int, str]] = []
    for key in candidates:
        other, added = entries[key]
        distance = (fp ^ other).bit_count()
        if distance <= k:
            found.append((distance, added, key))
    found.sort()
    return [Neighbor(key, distance) for distance, _, key in found]


# ---------------------------------------------------------------------------------------------
# The all-pairs join


def hamming_join(
    fingerprints: npt.ArrayLike | Sequence[int],
    *,
    k: int = 3,
    bits: int = 64,
    blocks: int | None = None,
) -> npt.NDArray[np.int64]:
    """Every pair (i, j), i < j, of fingerprints at most ``k`` bits apart.

    ``fingerprints`` is a uint64 array of shape (n,) for 64 bits, or of shape (n, 2) holding
    (high, low) words for 128 bits; a sequence of Python ints is also accepted. The result is
    an int64 array of shape (P, 2), sorted, each pair once.

    For each table the keys are sorted, equal keys form groups, the pairs inside groups are the
    candidates, verified on the full distance; a pair is kept only by the first table in which
    its keys are equal. ``blocks=None`` picks the number of blocks that minimizes the estimated
    work for this many fingerprints (:func:`join_blocks`: 5 for a million at k = 3).

    The output is O(P) for P pairs, 16 bytes each, and may dwarf the input: n copies of one
    fingerprint give n (n - 1) / 2 pairs (100,000 copies: 5e9 pairs, 80 GB). Exact duplicates
    are joined once and their pairs expanded afterwards, so time and memory stay O(n + P): the
    candidates are verified in small chunks, and the peak memory is about the output's own
    plus O(n) (the pairs are sorted inside the output's buffer).

    >>> import numpy as np
    >>> fps = np.array([0, 0b111, 0xFF00, 0b1, 0], dtype=np.uint64)
    >>> hamming_join(fps, k=2).tolist()
    [[0, 3], [0, 4], [1, 3], [3, 4]]
    """
    _layout(bits, k, blocks)  # validate the options before looking at the data
    words = _words(fingerprints, bits)
    n = len(words[0])
    if n < 2:
        return np.empty((0, 2), dtype=np.int64)
    if n > MAX_JOIN:
        raise InputError(f"hamming_join takes at most 2**31 = {MAX_JOIN} fingerprints, got {n}")
    classes = _duplicate_classes(words)
    if classes is None:
        layout = _layout(bits, k, join_blocks(bits, k, n) if blocks is None else blocks)
        codes = _join_tables(words, layout)
    else:
        order, starts, sizes = classes
        reps = order[starts]
        m = len(reps)
        layout = _layout(bits, k, join_blocks(bits, k, m) if blocks is None else blocks)
        distinct = _join_tables([w[reps] for w in words], layout) if m > 1 else []
        codes = _expand(distinct, m, order, starts, sizes, n)
    return _assemble(codes, _index_bits(n))


# The join's cost model, measured on one core: nanoseconds per table (Python and numpy call
# overhead), per fingerprint per table (key, sort, scan) and per candidate pair verified.
_NS_PER_TABLE = 50_000
_NS_PER_FINGERPRINT = 12
_NS_PER_CANDIDATE = 32


def join_blocks(bits: int, k: int, n: int) -> int:
    """The number of blocks :func:`hamming_join` uses for ``n`` distinct random fingerprints.

    More blocks mean more tables, each a sort of all the fingerprints, but longer keys, hence
    fewer candidate pairs to verify; this picks the cheapest by a cost model measured on this
    implementation (tables at most 256).

    >>> join_blocks(64, 3, 1_000_000), join_blocks(64, 3, 10_000), join_blocks(64, 5, 1_000_000)
    (5, 4, 8)
    """
    _layout(bits, k, None)
    room = 64 - _index_bits(n)
    best_cost, best = math.inf, k + 1
    for blocks in range(k + 1, bits + 1):
        tables = math.comb(blocks, k)
        if tables > 256:
            break
        key_bits = min(bits * (blocks - k) / blocks, room)
        candidates = tables * n * (n - 1) / 2 / 2**key_bits
        cost = tables * (_NS_PER_TABLE + n * _NS_PER_FINGERPRINT) + candidates * _NS_PER_CANDIDATE
        if cost < best_cost:
            best_cost, best = cost, blocks
    return best


def _index_bits(n: int) -> int:
    """Bits needed to hold an index below n."""
    return max(1, (n - 1).bit_length())


def _words(fingerprints: npt.ArrayLike | Sequence[int], bits: int) -> list[U64Array]:
    """The fingerprints as contiguous uint64 arrays, lowest word first."""
    if isinstance(fingerprints, Sequence) and fingerprints:
        seq: Sequence[Any] = fingerprints
        if isinstance(seq[0], (int, np.integer)):  # Python ints, maybe wider than 64 bits
            ints = [_check_fingerprint(v, bits) for v in seq]
            low = np.fromiter((v & _U64 for v in ints), dtype=np.uint64, count=len(ints))
            if bits == 64:
                return [low]
            high = np.fromiter((v >> 64 for v in ints), dtype=np.uint64, count=len(ints))
            return [low, high]
    array = np.asarray(fingerprints)
    if array.size == 0:
        return [np.empty(0, dtype=np.uint64)] * (bits // 64)
    if array.dtype != np.uint64:
        if array.dtype.kind not in "iu" or (array.dtype.kind == "i" and array.min() < 0):
            raise InputError(
                f"fingerprints must be a uint64 array (or non-negative integers), got dtype "
                f"{array.dtype}; for unsigned fingerprints stored as signed int64, pass "
                f"array.view(np.uint64)"
            )
        array = array.astype(np.uint64)
    if bits == 64:
        if array.ndim != 1:
            raise InputError(f"64-bit fingerprints must have shape (n,), got shape {array.shape}")
        return [np.ascontiguousarray(array)]
    if array.ndim != 2 or array.shape[1] != 2:
        raise InputError(
            f"128-bit fingerprints must have shape (n, 2) as (high, low) words, "
            f"got shape {array.shape}"
        )
    return [np.ascontiguousarray(array[:, 1]), np.ascontiguousarray(array[:, 0])]


def _duplicate_classes(words: list[U64Array]) -> tuple[IntArray, IntArray, IntArray] | None:
    """None if all fingerprints are distinct; else the indices in runs of equal fingerprints,
    by index within a run, and each run's start and size.

    128-bit fingerprints are sorted by a 64-bit hash: in the rare case that two values collide,
    their copies may interleave and one value take several runs. That only costs speed: the
    runs' values are joined as if distinct, and the join is exact for equal values too.
    """
    n = len(words[0])
    key = words[0] if len(words) == 1 else _mix(words[0], words[1])
    probe = np.sort(key)
    if not np.any(probe[1:] == probe[:-1]):  # distinct keys prove distinct fingerprints
        return None
    del probe
    order = np.argsort(key)
    differs = np.zeros(n - 1, dtype=bool)
    for w in words:
        s = w[order]
        differs |= s[1:] != s[:-1]
    starts = np.concatenate(([0], np.flatnonzero(differs) + 1)).astype(np.intp)
    sizes = np.diff(np.append(starts, n)).astype(np.intp)
    # By index within each run (argsort is not stable): the pairs of copies come out as i < j.
    shift = _index_bits(n)
    run = np.repeat(np.arange(len(starts), dtype=np.uint64), sizes)
    packed = (run << np.uint64(shift)) | order.astype(np.uint64)
    packed.sort()
    order = (packed & np.uint64((1 << shift) - 1)).astype(np.intp)
    return order, starts, sizes


def _mix(low: U64Array, high: U64Array) -> U64Array:
    """A 64-bit hash of (high, low) words: multiply, xor-shift, multiply."""
    h = low * np.uint64(0x9E3779B97F4A7C15) + high * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(29)
    return h


def _table_key(
    words: list[U64Array], layout: _Layout, table: int, room: int
) -> tuple[U64Array, bool]:
    """Each fingerprint's key in ``table`` as at most ``room`` bits, and whether it is exact
    (the key bits themselves) rather than a hash of them (equal hashes must then be checked)."""
    n = len(words[0])
    if layout.key_bits[table] <= room:
        key = np.zeros(n, dtype=np.uint64)
        at = 0
        for start, length in layout.ranges[table]:
            while length:  # a run may cross from the low word into the high one
                word, offset = divmod(start, 64)
                take = min(length, 64 - offset)
                piece = (words[word] >> np.uint64(offset)) & np.uint64((1 << take) - 1)
                key |= piece << np.uint64(at)
                at += take
                start += take
                length -= take
        return key, True
    mask = layout.masks[table]
    low = words[0] & np.uint64(mask & _U64)
    high = words[1] & np.uint64(mask >> 64) if len(words) == 2 else np.zeros_like(low)
    return _mix(low, high) >> np.uint64(64 - room), False


def _chunks(counts: IntArray, budget: int) -> Iterator[tuple[int, int]]:
    """Slices [lo, hi) of ``counts`` summing to about ``budget`` (or one item, if larger)."""
    ends = np.cumsum(counts)
    lo, total = 0, len(counts)
    while lo < total:
        base = int(ends[lo - 1]) if lo else 0
        hi = max(int(np.searchsorted(ends, base + budget, side="right")), lo + 1)
        yield lo, hi
        lo = hi


def _group_pairs(starts: IntArray, sizes: IntArray) -> Iterator[tuple[IntArray, IntArray]]:
    """Every pair of positions p < q inside each run [start, start + size), in chunks."""
    multi = sizes >= 2
    starts, sizes = starts[multi], sizes[multi]
    if not len(starts):
        return
    offsets = np.cumsum(sizes) - sizes
    positions = np.arange(int(sizes.sum()), dtype=np.intp) + np.repeat(starts - offsets, sizes)
    after = np.repeat(starts + sizes - 1, sizes) - positions  # partners following each one
    for lo, hi in _chunks(after, _CHUNK_PAIRS):
        counts = after[lo:hi]
        first = np.cumsum(counts) - counts
        p = np.repeat(positions[lo:hi], counts)
        q = np.arange(len(p), dtype=np.intp) + np.repeat(positions[lo:hi] + 1 - first, counts)
        yield p, q


class _Codes:
    """Pair codes gathered into blocks of millions. Many small arrays scattered through the
    heap keep it from shrinking when they are freed; one big block is unmapped whole, so
    :func:`_assemble` can free each block as it copies it into the output."""

    BLOCK = 1 << 23

    def __init__(self) -> None:
        self._blocks: list[npt.NDArray[np.int64]] = []
        self._pending: list[npt.NDArray[np.int64]] = []
        self._pending_size = 0

    def append(self, codes: npt.NDArray[np.int64]) -> None:
        self._pending.append(codes)
        self._pending_size += len(codes)
        if self._pending_size >= self.BLOCK:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._blocks.append(np.concatenate(self._pending))
            self._pending, self._pending_size = [], 0

    def take(self) -> list[npt.NDArray[np.int64]]:
        """The blocks, handed over: the collector is left empty."""
        self._flush()
        blocks, self._blocks = self._blocks, []
        return blocks


def _join_tables(words: list[U64Array], layout: _Layout) -> list[npt.NDArray[np.int64]]:
    """Pairs (i, j), i < j, within k bits, as codes i << s | j (s = _index_bits(n)), found
    through the tables: exact for any fingerprints, meant for distinct ones."""
    n = len(words[0])
    k = layout.k
    shift = _index_bits(n)
    room = 64 - shift
    index = np.arange(n, dtype=np.uint64)
    index_mask = np.uint64((1 << shift) - 1)
    word_masks = [
        [np.uint64((m >> (64 * w)) & _U64) for w in range(len(words))] for m in layout.masks
    ]
    found = _Codes()
    for t in range(len(layout.masks)):
        key, exact = _table_key(words, layout, t, room)
        # One sort of key and index packed together beats an argsort of the keys.
        packed = (key << np.uint64(shift)) | index
        del key
        packed.sort()
        sorted_key = packed >> np.uint64(shift)
        same = sorted_key[1:] == sorted_key[:-1]
        del sorted_key
        if not same.any():
            continue
        edges = np.diff(np.concatenate(([False], same, [False])).view(np.int8))
        starts = np.flatnonzero(edges == 1)
        sizes = np.flatnonzero(edges == -1) - starts + 1
        del same, edges
        position_index = (packed & index_mask).astype(np.intp)
        del packed
        for p, q in _group_pairs(starts, sizes):
            i, j = position_index[p], position_index[q]
            del p, q
            xor = [w[i] ^ w[j] for w in words]
            distance = np.bitwise_count(xor[0])
            for x in xor[1:]:
                distance += np.bitwise_count(x)
            keep = distance <= k
            if not exact:  # a hash collision is not a shared key
                for x, m in zip(xor, word_masks[t], strict=True):
                    keep &= (x & m) == 0
            i, j, xor = i[keep], j[keep], [x[keep] for x in xor]
            for earlier in range(t):  # the pair belongs to the first table sharing its key
                shared = np.ones(len(i), dtype=bool)
                for x, m in zip(xor, word_masks[earlier], strict=True):
                    shared &= (x & m) == 0
                if shared.any():
                    i, j, xor = i[~shared], j[~shared], [x[~shared] for x in xor]
            if len(i):
                lo, hi = np.minimum(i, j).astype(np.int64), np.maximum(i, j).astype(np.int64)
                found.append((lo << shift) | hi)
    return found.take()


def _expand(
    distinct: list[npt.NDArray[np.int64]],
    m: int,
    order: IntArray,
    starts: IntArray,
    sizes: IntArray,
    n: int,
) -> list[npt.NDArray[np.int64]]:
    """Pairs of the n fingerprints from pairs of their m distinct values (both as codes i << s
    | j): every pair among copies of one value, and every copy of u with every copy of v."""
    shift, distinct_shift = _index_bits(n), _index_bits(m)
    codes = _Codes()
    for p, q in _group_pairs(starts, sizes):  # a run is in index order: p < q gives i < j
        codes.append((order[p].astype(np.int64) << shift) | order[q])
    if not distinct:
        return codes.take()
    pairs = np.concatenate(distinct)
    distinct.clear()
    u, v = pairs >> distinct_shift, pairs & ((1 << distinct_shift) - 1)
    del pairs
    counts = sizes[u] * sizes[v]
    for lo, hi in _chunks(counts, _CHUNK_PAIRS):
        c = counts[lo:hi]
        row = np.repeat(np.arange(lo, hi, dtype=np.intp), c)
        r = np.arange(len(row), dtype=np.intp) - np.repeat(np.cumsum(c) - c, c)
        a, b = np.divmod(r, sizes[v[row]])
        i = order[starts[u[row]] + a].astype(np.int64)
        j = order[starts[v[row]] + b].astype(np.int64)
        codes.append((np.minimum(i, j) << shift) | np.maximum(i, j))
    return codes.take()


def _assemble(codes: list[npt.NDArray[np.int64]], shift: int) -> npt.NDArray[np.int64]:
    """The sorted (P, 2) pairs from codes i << shift | j, consuming ``codes``.

    The codes are sorted in the first half of the output's own buffer and decoded from the
    back, so the peak memory is the output's (plus one chunk), not 1.5 times it.
    """
    total = sum(len(c) for c in codes)
    out = np.empty((total, 2), dtype=np.int64)
    flat = out.reshape(-1)
    at = 0
    while codes:  # each chunk is freed as it is copied
        size = len(codes[-1])
        flat[at : at + size] = codes.pop()
        at += size
    head = flat[:total]
    head.sort()
    mask = (1 << shift) - 1
    step = 1 << 20
    hi = total
    while hi > 0:  # rows [lo, hi) overwrite codes [2 lo, 2 hi), all at or after lo
        lo = max(0, hi - step)
        part = head[lo:hi].copy()
        rows = out[lo:hi]  # ufuncs writing in place: a temporary per chunk costs page faults
        np.right_shift(part, shift, out=rows[:, 0])
        np.bitwise_and(part, mask, out=rows[:, 1])
        hi = lo
    return out
