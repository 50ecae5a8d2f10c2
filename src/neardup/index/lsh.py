"""MinHash LSH: signatures cut into bands of rows; documents that agree on a whole band are
candidates (Indyk and Motwani 1998; Broder 1997), to be verified by an exact measure.

The number of bands ``b`` and rows ``r`` come from a Jaccard threshold as datasketch derives
them: the pair that minimizes the weighted areas of false positives below the threshold and
false negatives above it, for the S-curve 1 - (1 - s^r)^b. Each bucket keeps its first
``bucket_cap`` documents, so a flood of copies of one page costs a bounded amount per
lookup; the batch join applies the same rule, so it finds exactly the pairs that streaming
lookups in the same order would (and, with odds of about 2^-48 a pair, a candidate more:
see :class:`LSHJoin`).

>>> from neardup.sketch.minhash import minhash
>>> import numpy as np
>>> lsh = MinHashLSH(threshold=0.5, num_perm=128)
>>> x = np.arange(1, 500, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
>>> lsh.add("a", minhash(x)); lsh.add("b", minhash(x[:400] + np.uint64(1)))
>>> lsh.query(minhash(x[50:]))
['a']
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import ConfigError
from ..hashing import mix
from ..memory import grown
from ..shingling import distinct

__all__ = [
    "LSHJoin",
    "MinHashLSH",
    "band_keys",
    "bucket_ids",
    "bucket_pairs",
    "lsh_join",
    "optimal_params",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
#: positions in a run: 32-bit while they fit, else 64-bit
Pos = npt.NDArray[np.int32] | npt.NDArray[np.int64]
_STEP = np.uint64(0x9E3779B97F4A7C15)
#: A sorted run of :class:`LSHJoin`: its keys' top 16 bits as a directory (where the keys
#: of each value of them begin: 2^16 + 1 offsets), the next 32 bits of each key, and its
#: members' ordinals: 8 bytes a key where the whole key beside an ordinal takes 12 — or,
#: where the compiled kernels cannot run (numba missing, or turned off), no directory
#: (None) and the whole keys, which numpy searches as they are
Run = tuple[I64 | None, npt.NDArray[np.uint32] | U64, Pos]
_TOP = 16  # bits of a join key in a run's directory
_SLOTS = 1 << _TOP
_LOW = np.uint64(0xFFFFFFFF)
_JOIN_BITS = 48  # a bucket id's top bits the join keeps as its key
_JOIN_SHIFT = np.uint64(64 - _JOIN_BITS)  # and the bits it drops


@functools.lru_cache(maxsize=64)
def optimal_params(
    threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5
) -> tuple[int, int]:
    """(bands, rows) minimizing fp_weight * P(false positive) + fn_weight * P(false negative).

    >>> optimal_params(0.5, 128)
    (25, 5)
    """
    if not 0.0 < threshold < 1.0:
        raise ConfigError(f"LSH threshold must be strictly between 0 and 1, got {threshold}")
    if abs(fp_weight + fn_weight - 1.0) > 1e-9:
        raise ConfigError(f"fp_weight + fn_weight must be 1, got {fp_weight} + {fn_weight}")
    best, best_err = (1, 1), float("inf")
    below = np.linspace(0.0, threshold, 201)
    above = np.linspace(threshold, 1.0, 201)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = float(np.trapezoid(1 - (1 - below**r) ** b, below))
            fn = float(np.trapezoid((1 - above**r) ** b, above))
            err = fp_weight * fp + fn_weight * fn
            if err < best_err:
                best, best_err = (b, r), err
    return best


def _check_params(bands: int, rows: int, num_perm: int) -> None:
    if bands < 1 or rows < 1:
        raise ConfigError(f"bands and rows must be positive, got b = {bands}, r = {rows}")
    if bands * rows > num_perm:
        raise ConfigError(
            f"b * r = {bands} * {rows} = {bands * rows} must not exceed num_perm {num_perm}"
        )


def band_keys(signatures: U64, bands: int, rows: int) -> U64:
    """One 64-bit key per band of each signature: shape (n, bands) for (n, num_perm) input."""
    sig = np.atleast_2d(signatures)
    n = sig.shape[0]
    cut = sig[:, : bands * rows].reshape(n, bands, rows)
    with np.errstate(over="ignore"):
        h = np.zeros((n, bands), dtype=np.uint64)
        for t in range(rows):
            h = mix(h * _STEP + cut[:, :, t])
    return h


def bucket_ids(bands: U64) -> U64:
    """One 64-bit id per (band, band key) of an (n, bands) array of band keys: the key mixed
    with the band's number, so one id names one bucket across all bands (the stores, the
    batch join and the Spark engine all group by it). Two buckets share an id with odds of
    about 2^-64 a pair, which adds a candidate that verification then checks."""
    keys = np.atleast_2d(np.asarray(bands, dtype=np.uint64))
    if keys.ndim == 2 and kernels.wanted(0):  # once the kernels are in use: one pass
        ids: U64 = kernels.load("_join").bucket_ids(np.ascontiguousarray(keys))
        return ids
    offsets = np.arange(keys.shape[1], dtype=np.uint64)
    with np.errstate(over="ignore"):
        return mix(keys + offsets)


class MinHashLSH:
    """A MinHash LSH index: ``add`` keys with signatures, ``query`` returns candidate keys."""

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        num_perm: int = 128,
        params: tuple[int, int] | None = None,
        bucket_cap: int = 100,
    ) -> None:
        bands, rows = params if params is not None else optimal_params(threshold, num_perm)
        _check_params(bands, rows, num_perm)
        if bucket_cap < 1:
            raise ConfigError(f"bucket_cap must be at least 1, got {bucket_cap}")
        self.num_perm, self.bands, self.rows, self.bucket_cap = num_perm, bands, rows, bucket_cap
        self._tables: list[dict[int, list[str]]] = [{} for _ in range(bands)]
        self._keys: dict[str, list[int]] = {}
        self._order: dict[str, int] = {}  # insertion number of each key, for sorting results
        self._added = 0

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys_of(self, signature: U64) -> list[int]:
        """The band keys of one signature, as Python ints."""
        if signature.shape != (self.num_perm,):
            raise ConfigError(
                f"signature has {signature.shape[0]} positions, the index expects {self.num_perm}"
            )
        return [int(k) for k in band_keys(signature, self.bands, self.rows)[0]]

    def add(self, key: str, signature: U64) -> None:
        """Index ``key`` under each band of its signature (a key can be added once)."""
        if key in self._keys:
            raise ConfigError(f"key {key!r} is already in the index; remove it first")
        band = self.keys_of(signature)
        for table, k in zip(self._tables, band, strict=True):
            bucket = table.setdefault(k, [])
            if len(bucket) < self.bucket_cap:
                bucket.append(key)
        self._keys[key] = band
        self._order[key] = self._added
        self._added += 1

    def remove(self, key: str) -> None:
        """Take ``key`` out of every bucket."""
        band = self._keys.pop(key, None)
        if band is None:
            raise KeyError(f"key {key!r} is not in the index")
        del self._order[key]
        for table, k in zip(self._tables, band, strict=True):
            bucket = table.get(k)
            if bucket is not None and key in bucket:
                bucket.remove(key)
                if not bucket:
                    del table[k]

    def query(self, signature: U64) -> list[str]:
        """Keys that share at least one band with ``signature``, in the order they were added."""
        return self.query_keys(self.keys_of(signature))

    def query_keys(self, band: list[int]) -> list[str]:
        """Like :meth:`query`, from precomputed band keys."""
        seen: set[str] = set()
        for table, k in zip(self._tables, band, strict=True):
            bucket = table.get(k)
            if bucket:
                seen.update(bucket)
        return sorted(seen, key=self._order.__getitem__)


def bucket_pairs(members: I64, starts: I64, sizes: I64, cap: int) -> Iterator[I64]:
    """The candidate pairs of buckets: (earlier, later) within each bucket, the earlier one
    among the bucket's first ``cap`` members — the bucket cap, which bounds what a flood of
    copies of one page costs. ``members`` lists each bucket's members in input order, the
    buckets one after another (bucket k at ``starts[k]``, ``sizes[k]`` long)."""
    for size in distinct(sizes).tolist():
        if size < 2:
            continue
        s = starts[sizes == size]
        x = np.arange(min(cap, size - 1))
        count = size - 1 - x  # partners after position x
        xs = np.repeat(x, count)
        ys = np.arange(len(xs)) - np.repeat(np.cumsum(count) - count, count) + xs + 1
        a = members[s[:, None] + xs[None, :]].ravel()
        b = members[s[:, None] + ys[None, :]].ravel()
        yield np.stack((a, b), axis=1)


def lsh_join(signatures: U64, *, bands: int, rows: int, bucket_cap: int = 100) -> I64:
    """All candidate pairs (i, j), i < j, of an (n, num_perm) signature array: those sharing
    a band key, with i among the first ``bucket_cap`` documents of that bucket. Sorted, unique.
    """
    sig = np.atleast_2d(signatures)
    _check_params(bands, rows, sig.shape[1])
    if bucket_cap < 1:
        raise ConfigError(f"bucket_cap must be at least 1, got {bucket_cap}")
    keys = band_keys(sig, bands, rows)
    n = sig.shape[0]
    found: list[I64] = []
    for band in range(bands):
        col = keys[:, band]
        order = np.lexsort((np.arange(n), col))
        sorted_keys = col[order]
        boundary = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))
        sizes = np.diff(np.concatenate((boundary, [n]))).astype(np.int64)
        found.extend(bucket_pairs(order.astype(np.int64), boundary, sizes, bucket_cap))
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.concatenate(found)
    code = distinct(pairs[:, 0] * n + pairs[:, 1])
    return np.stack((code // n, code % n), axis=1)


def _ranges(starts: I64, counts: I64) -> I64:
    """The concatenated ranges ``starts[k] .. starts[k] + counts[k] - 1``."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    out: I64 = np.arange(total, dtype=np.int64) + np.repeat(starts - offsets, counts)
    return out


def _ends(run_keys: U64, keys: U64, seen: I64, lo: I64) -> I64:
    """For the keys ``keys[seen]`` found in a sorted run at ``lo[seen]``, where their
    members in it end: a step at a time (most buckets have a few members, next to each
    other in memory), then a binary search for the keys still running."""
    at = lo[seen] + 1
    want = keys[seen]
    n = len(run_keys)
    going = np.arange(len(seen))
    for _ in range(4):
        if not len(going):
            return at
        more = at[going] < n
        more[more] = run_keys[at[going][more]] == want[going][more]
        going = going[more]
        at[going] += 1
    if len(going):
        at[going] = np.searchsorted(run_keys, want[going], "right")
    return at


def _sorted_pairs(e: I64, j: I64) -> I64:
    """The pairs (e, j), sorted by j then e, unique."""
    if len(j) and max(int(e.max()), int(j.max())) < (1 << 31):
        code = np.sort((j << 32) | e)
        code = code[np.concatenate(([True], code[1:] != code[:-1]))]
        return np.stack((code & 0xFFFFFFFF, code >> 32), axis=1)
    by = np.lexsort((e, j))
    e, j = e[by], j[by]
    new_pair = np.concatenate(([True], (j[1:] != j[:-1]) | (e[1:] != e[:-1])))
    return np.stack((e[new_pair], j[new_pair]), axis=1)


def _merge(old: tuple[U64, Pos], new: tuple[U64, Pos]) -> tuple[U64, Pos]:
    """Two runs sorted by key, ``new``'s positions all after ``old``'s, as one sorted run:
    under a key, old members first."""
    (old_keys, old_pos), (new_keys, new_pos) = old, new
    total = len(old_keys) + len(new_keys)
    # where each new key goes: after the old keys equal to it, so that ties keep old first
    at = np.searchsorted(old_keys, new_keys, "right") + np.arange(len(new_keys))
    rest = np.ones(total, dtype=bool)
    rest[at] = False
    keys = np.empty(total, dtype=old_keys.dtype)
    pos = np.empty(total, dtype=np.result_type(old_pos, new_pos))
    keys[at], pos[at] = new_keys, new_pos
    keys[rest], pos[rest] = old_keys, old_pos
    return keys, pos


def _run(keys: U64, pos: Pos, split: bool = True) -> Run:
    """The run of join keys (48 bits, sorted) and their ordinals (``split``: with a
    directory)."""
    if not split:
        return None, keys, pos
    counts = np.bincount((keys >> np.uint64(32)).astype(np.intp), minlength=_SLOTS)
    top = np.zeros(_SLOTS + 1, dtype=np.int64)
    np.cumsum(counts, out=top[1:])
    return top, (keys & _LOW).astype(np.uint32), pos


def _run_keys(run: Run) -> U64:
    """A run's join keys, whole (again, from a directory: the numpy path's lookups and
    merges read them, on inputs too small for the kernels)."""
    top, low, _ = run
    if top is None:
        return low  # type: ignore[return-value]
    tops = np.repeat(np.arange(_SLOTS, dtype=np.uint64), np.diff(top))
    keys: U64 = (tops << np.uint64(32)) | low.astype(np.uint64)
    return keys


def _merge_runs(old: Run, new: Run, fast: bool = False) -> Run:
    """Two runs, ``new``'s ordinals all after ``old``'s, as one (with the compiled kernel
    when ``fast``: the same run): under a key, old members first."""
    (old_top, old_low, old_pos), (new_top, new_low, new_pos) = old, new
    if old_top is None or new_top is None:  # whole keys
        keys, pos = _merge((_run_keys(old), old_pos), (_run_keys(new), new_pos))
        return None, keys, pos
    top = old_top + new_top  # each directory counts the keys before a value: they add up
    if not fast:
        keys, pos = _merge((_run_keys(old), old_pos), (_run_keys(new), new_pos))
        return top, (keys & _LOW).astype(np.uint32), pos
    n, total = len(old_low), len(old_low) + len(new_low)
    if old_pos.dtype == new_pos.dtype and old_low.flags.owndata and old_pos.flags.owndata:
        # in place: the old run grown (realloc, most often without a copy) and merged from
        # the back, so that the two runs and their merge are never all held at once
        old_low.resize(total, refcheck=False)
        old_pos.resize(total, refcheck=False)
        low, pos = old_low, old_pos
    else:
        low = grown(old_low, total)
        pos = np.empty(total, dtype=np.result_type(old_pos, new_pos))
        pos[:n] = old_pos
    kernels.load("_join").merge_back(old_top, low, pos, n, new_top, new_low, new_pos)
    return top, low, pos


class LSHJoin:
    """:func:`lsh_join` for documents that arrive in blocks, each block after the last.

    :meth:`extend` takes the band keys of a block and returns the candidate pairs whose
    later document is in it: over all blocks, the pairs :func:`lsh_join` returns for the
    whole input (bucket_cap included), without joining the earlier blocks again. The blocks
    seen are kept as sorted runs, merged as a binary counter merges (each key is copied
    O(log n) times). A bucket is a (band, key) pair hashed to one 64-bit id, as the stores
    do; the join keeps its top 48 bits (a run holds the top 16 of them once, in a
    directory, and 32 a key): two buckets sharing them (odds about 2^-48 per pair: a few
    in a million tiny records, none to expect in hkcnews 4x) add a candidate, which
    verification then checks, as it does the stores' 64-bit collisions. The runs name a
    document by its ordinal (the how-many-th document joined, 32 bits), and its position
    is looked up at the end: 8 bytes a key.

    >>> from neardup.sketch.minhash import minhash_batch
    >>> x = np.arange(1, 300, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    >>> keys = band_keys(minhash_batch([x, x + np.uint64(7), x[:250]], num_perm=16), 8, 2)
    >>> join = LSHJoin()
    >>> join.extend(keys[:2], np.array([0, 1])).tolist(), join.extend(keys[2:], np.array([2]))
    ([], array([[0, 2]]))
    """

    def __init__(self, *, bucket_cap: int = 100) -> None:
        if bucket_cap < 1:
            raise ConfigError(f"bucket_cap must be at least 1, got {bucket_cap}")
        self.bucket_cap = bucket_cap
        # sorted runs of (join key, ordinal), oldest first; by ordinal within a key;
        # ordinals as 32-bit integers while they fit (8 bytes a key instead of 12)
        self._runs: list[Run] = []
        self._split = kernels.possible()  # runs with a directory: see Run
        self._next = 0  # the smallest position the next block may start at
        self._count = 0  # documents joined so far
        self._positions = np.zeros(0, dtype=np.int64)  # each ordinal's position
        # the compiled path's last later ordinal each earlier one was paired with, so that
        # a pair found under several buckets is kept once
        self._stamp = np.zeros(0, dtype=np.int64)

    def extend(self, bands: U64, positions: I64) -> I64:
        """Add documents (an (m, bands) array of band keys, at increasing ``positions``
        after every earlier block's) and return their pairs (earlier, later), sorted by
        the later document, then the earlier; unique."""
        keys2d = np.atleast_2d(np.asarray(bands, dtype=np.uint64))
        pos1d = np.asarray(positions, dtype=np.int64)
        m, n_bands = keys2d.shape
        if len(pos1d) != m:
            raise ConfigError(f"{m} rows of band keys for {len(pos1d)} positions")
        if m == 0:
            return np.zeros((0, 2), dtype=np.int64)
        if pos1d[0] < self._next or (m > 1 and bool(np.any(pos1d[1:] <= pos1d[:-1]))):
            raise ConfigError("positions must increase, within a block and from block to block")
        self._next = int(pos1d[-1]) + 1
        first_ord, self._count = self._count, self._count + m
        if self._count > len(self._positions):
            self._positions = grown(self._positions, max(2 * len(self._positions), self._count))
        self._positions[first_ord : self._count] = pos1d
        wide = self._count > np.iinfo(np.int32).max
        rows: Pos = np.arange(first_ord, self._count, dtype=np.int64 if wide else np.int32)  # type: ignore[assignment]
        flat = bucket_ids(keys2d).ravel()  # row by row: equal keys in ordinal order
        flat >>= _JOIN_SHIFT  # the join keys: 48 bits
        work = len(flat) + sum(len(run[1]) for run in self._runs)
        fast = self._split and kernels.wanted(work)
        order: I64
        keys: U64
        if fast:  # one stable radix sort
            order, keys = kernels.load("_join").sorted_stably(flat, _JOIN_BITS)
        else:
            order = np.argsort(flat)  # not stable (6x quicker); equal keys put back in order
            keys = flat[order]
            kernels.work_done(work)
            tied = np.flatnonzero(keys[1:] == keys[:-1])
            if len(tied):
                in_run = np.zeros(len(keys), dtype=bool)
                in_run[tied] = in_run[tied + 1] = True
                runs = np.flatnonzero(in_run)
                order[runs] = order[runs][np.lexsort((order[runs], keys[runs]))]
        del flat
        pos: Pos = np.repeat(rows, n_bands)[order]  # type: ignore[assignment]
        cap = self.bucket_cap
        before = np.zeros(len(keys), dtype=np.int64)  # the bucket's members in earlier blocks
        # each run's part: (first member, members taken, ordinals) of the block's buckets.
        # With the kernels a run's pairs are made as soon as its ranges are found, and the
        # ranges let go (a block is joined with several runs, 16 bytes a key each)
        walk = self._walker(order, n_bands, rows) if fast else None
        found: list[tuple[I64, I64, Pos]] = []
        pieces: list[tuple[I64, I64]] = []
        for run in self._runs:
            run_pos = run[2]
            if fast:
                lo, hi = kernels.load("_join").sorted_ranges(run[0], run[1], keys)
            else:
                run_keys = _run_keys(run)
                lo = np.searchsorted(run_keys, keys, "left")
                hi = lo.copy()  # most keys are in no earlier bucket
                seen = np.flatnonzero(run_keys[np.minimum(lo, len(run_keys) - 1)] == keys)
                hi[seen] = _ends(run_keys, keys, seen, lo)
                del run_keys
            hi -= lo  # the bucket's members in this run
            take = cap - before
            np.maximum(take, 0, out=take)
            np.minimum(take, hi, out=take)
            before += hi
            del hi
            if walk is None:
                found.append((lo, take, run_pos))
            else:
                pieces.append(walk(lo, take, run_pos))
            del lo, take
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        first = np.repeat(starts, np.diff(np.append(starts, len(keys))))
        rank = np.arange(len(keys), dtype=np.int64) - first  # members before it in this block
        take = np.maximum(np.minimum(rank, cap - before), 0)
        if walk is None:
            found.append((first, take, pos))
            e = np.concatenate([p[_ranges(lo, take)] for lo, take, p in found]).astype(np.int64)
            j = np.concatenate([np.repeat(pos, take) for _, take, _ in found]).astype(np.int64)
            keep = e != j  # one document under one key twice (odds 2^-64) pairs with itself
            e, j = e[keep], j[keep]
        else:
            pieces.append(walk(first, take, pos))
            e = pieces[0][0] if len(pieces) == 1 else np.concatenate([p[0] for p in pieces])
            j = pieces[0][1] if len(pieces) == 1 else np.concatenate([p[1] for p in pieces])
            del pieces
        del first, take
        # a bucket's members past its first ``cap`` never pair with a later document: they
        # are not kept (a bucket holds at most ``cap`` members in the runs, so ``before``
        # stays what decides, and a flood of near-identical records adds nothing to keep)
        kept = before + rank < cap
        if not kept.all():
            keys, pos = keys[kept], pos[kept]
        if len(keys):
            self._runs.append(_run(keys, pos, self._split))
        del keys
        # a run is merged into the one before it once it holds half as many keys
        while len(self._runs) > 1 and 2 * len(self._runs[-1][1]) >= len(self._runs[-2][1]):
            new = self._runs.pop()
            self._runs[-1] = _merge_runs(self._runs[-1], new, fast)
        if len(j) == 0:
            return np.zeros((0, 2), dtype=np.int64)
        pairs = _sorted_pairs(e, j)  # ordinals sort as their positions do
        out: I64 = self._positions[pairs]
        return out

    def _walker(
        self, order: I64, n_bands: int, rows: Pos
    ) -> Callable[[I64, I64, Pos], tuple[I64, I64]]:
        """What makes the pairs (earlier, later ordinals) of one run's part of a block (its
        first members, members taken and ordinals), each once: the kernel walks each later
        document's buckets and skips an earlier one it has already paired it with (a
        document's keys all lie in one run, so no pair comes from two runs)."""
        if self._count > len(self._stamp):
            old = len(self._stamp)
            self._stamp = grown(self._stamp, max(2 * old, self._count))
            self._stamp[old:] = -1
        where = np.empty(len(order), dtype=np.int64)  # each (row, band)'s place in keys
        where[order] = np.arange(len(order), dtype=np.int64)
        join, stamp = kernels.load("_join"), self._stamp

        def walk(lo: I64, take: I64, ordinals: Pos) -> tuple[I64, I64]:
            total = int(take.sum())  # a pair under several buckets is counted in each
            e = np.empty(total, dtype=np.int64)
            j = np.empty(total, dtype=np.int64)
            n = join.bucket_pairs(lo, take, ordinals, where, n_bands, rows, stamp, e, j, 0)
            if 2 * n < total:  # most were found before: the room for them is let go
                return e[:n].copy(), j[:n].copy()
            return e[:n], j[:n]

        return walk
