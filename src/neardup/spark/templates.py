"""The template guard on Spark: the input position from which each shingle slot is common.

The local engine counts a shingle once it has been seen in ``common_after`` *kept* stories
earlier in the input (:class:`~neardup.engine.CommonShingles`), and as part of a chrome
passage once seen in two, so a verdict depends on which earlier documents were kept. Spark
computes, for every slot, the input position of the ``common_after``-th kept document
containing it and of the second (:meth:`Guard.table`), verifies with those positions
(:class:`~neardup.engine.TemplateTable`), recomputes the kept set, and repeats on
the pairs whose guard changed (:func:`at_risk`) until nothing changes. Position ``p``'s
decision depends only on earlier positions, so the fixed point is unique and is the local
engine's answer.

The rounds are cheap: only original documents count (a byte-identical copy is never kept),
a story counts the lines it does not quote, and a document that is the later one of no
passed pair is kept in every round, so each slot keeps its memberships up to its
``common_after``-th such document, once (:func:`build_guard`).
The memberships are cut into ranges of the slot space, and a range travels and is kept as a
few rows of bytes (slots, positions, flags), never as a Spark row per membership: a round is
one pass over them, without a shuffle, that returns the table and, for the slots whose
position moved, the documents holding them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..engine import DedupConfig
from ..engine.templates import PASSAGE_STORIES, SLOT_BITS, slots
from ..engine.verify import QUOTE_START, unquoted_codes
from ..shingling import distinct, symmetric_difference, union
from .columns import (
    SIDE_SLOTS,
    Batches,
    BatchFn,
    SlotCounts,
    binary,
    column,
    fewest,
    groups,
    partition_keys,
    slot_range,
    slot_range_starts,
    split_by,
    to_arrow,
    unbinary,
)
from .session import driver_heap, held_rdds, release
from .verify import Table

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "Guard",
    "Table",
    "at_risk",
    "build_guard",
    "common_candidates",
    "fewest",
    "risk_intervals",
    "same_table",
    "slots_of",
    "story_slots",
]

I64 = npt.NDArray[np.int64]
NO_POSITION = np.iinfo(np.int64).max

#: The flags of a membership (a byte each): its document is kept whatever the verdicts (the
#: later one of no passed pair), the row counts towards the slot's position, the slot's
#: position may move between rounds, the document is in a passed pair, the document holds
#: the slot as a story counts it (not only on quoted lines, :func:`story_slots`).
SURE, KEEP, VOLATILE, PAIRED, OWN = 1, 2, 4, 8, 16

#: Memberships in one row of bytes at most (13 bytes each): its positions, the largest of
#: its values, are 1 MB, under half a region of an 8 GB heap (G1 keeps larger objects in
#: regions of their own). Rows eight times as large, each copied whole by the task writing
#: them to Python, ran an 8 GB heap out on the 4x corpus after other runs in the session.
ROW_MEMBERSHIPS = 1 << 17
#: Up to this many memberships of volatile slots (9 bytes each as they come, about 21 held),
#: they come to the driver with the first table, and the rounds after it run there,
#: without a Spark job ...
DRIVER_MEMBERSHIPS = 32_000_000
#: ... and up to one for this many bytes of the driver's heap: they pass through it
#: serialized, into buffers that grow by doubling (10,000 articles' 4.7 million, then 13
#: bytes each, ran Spark's default 1 GB heap out). Where they are more, each round is a
#: Spark job.
HEAP_PER_MEMBERSHIP = 9 * 32


def driver_memberships(spark: SparkSession, ranges: int) -> int:
    """How many volatile memberships of each of ``ranges`` ranges may come to the driver
    (:data:`DRIVER_MEMBERSHIPS`, :data:`HEAP_PER_MEMBERSHIP`, shared by the ranges)."""
    total = min(DRIVER_MEMBERSHIPS, driver_heap(spark) // HEAP_PER_MEMBERSHIP)
    return total // max(1, ranges)


_BLOB_SCHEMA = "_r int, slot binary, pos binary, flags binary"
_PASS_SCHEMA = (
    "slots binary, firsts binary, seconds binary, tpos binary, tlo binary, thi binary, "
    "rows long, vol long, vslot binary, vpos binary, vflag binary"
)


def slots_of(blob: bytes) -> I64:
    """The distinct template-guard slots of a document's shingle codes."""
    codes = np.frombuffer(blob, dtype="<u4")
    return distinct(slots(codes).astype(np.int64))


def story_slots(blob: bytes, text: str | None, n_units: int) -> I64:
    """The distinct slots a story counts (:func:`~neardup.engine.story_codes`): those of its
    shingle codes that do not start on a quoted line of its prepared ``text`` (None: a text
    with no quoted line)."""
    codes = np.frombuffer(blob, dtype="<u4")
    own = None if text is None else unquoted_codes(codes, text, n_units)
    return distinct(slots(codes if own is None else own).astype(np.int64))


def common_candidates(side: DataFrame, cfg: DedupConfig, n_parts: int = 1) -> I64:
    """Slots found in :func:`fewest` or more original documents (sorted): a superset of the
    slots the guard can ever read (count as common, or as seen for a passage), whichever of
    them are kept (a byte-identical copy is never kept, and quoted lines only add slots).

    ``side``: the sketch stage's slot counts (``_side``, ``_b``, of kind ``SIDE_SLOTS``:
    each input partition's counts of one range of
    :func:`~neardup.spark.columns.slot_range_starts`, as bytes,
    :class:`~neardup.spark.columns.SlotCounts`); the partition that gets a range adds its
    counts up in a table of the range."""
    from pyspark.sql import functions as F

    limit = fewest(cfg)
    if limit <= 0:
        return np.zeros(0, dtype=np.int64)
    ranges = max(1, n_parts)
    kind = SlotCounts(limit).kind

    def add(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        starts = slot_range_starts(ranges)
        totals: dict[int, npt.NDArray[Any]] = {}  # range -> its counts, up to the limit
        for batch in batches:
            for blob in batch.column("_b").to_pylist():
                both = np.frombuffer(blob, dtype="<u4")
                half = len(both) // 2
                found = both[:half].astype(np.int64)
                r = int(slot_range(found[:1], ranges)[0])
                if r not in totals:
                    totals[r] = np.zeros(int(starts[r + 1] - starts[r]), dtype=kind)
                at = found - starts[r]
                # one input partition's slots are distinct: a fancy += adds each once
                summed = totals[r][at].astype(np.int64) + both[half:]
                totals[r][at] = np.minimum(summed, limit).astype(kind)
        for r, total in totals.items():
            common = (np.flatnonzero(total >= limit) + starts[r]).astype(np.int32)
            yield pa.RecordBatch.from_arrays([pa.array(common)], names=["slot"])

    if "_kind" in side.columns:
        side = side.filter(F.col("_kind") == SIDE_SLOTS)
    found = (
        side.select("_side", "_b").repartition(ranges, F.col("_side")).mapInArrow(add, "slot int")
    )
    return np.sort(column(found, "slot"))


@dataclass
class Guard:
    """The (slot, document) memberships the template guard can ever need: ``frame`` holds
    them as rows of bytes, whole ranges of the slot space to a partition, checkpointed by
    the first table's job (lazily: no job of its own, and rows rather than Spark's columnar
    cache, which the next job would read back).

    :meth:`table` is one round's table; :meth:`unpersist` lets the rows go. The first
    table also brings the memberships of the volatile slots to the driver when they are few
    (:func:`driver_memberships`): the other slots' entries never change, and the later
    tables are computed here (:meth:`_here`)."""

    spark: SparkSession
    frame: DataFrame
    cfg: DedupConfig
    positions: int
    ranges: int
    #: the entries of the slots that are not volatile, and the volatile slots' memberships
    #: (slot, position, flags; sorted), once on the driver
    stable: Table | None = None
    held: _Held | None = None
    rows: int = 0
    #: the checkpoint of :attr:`frame`, once the first table has computed it
    own: set[int] = field(default_factory=set)

    def table(
        self, removed: I64 | None = None, before: I64 | None = None
    ) -> tuple[Table, I64, I64, I64, int]:
        """The table when the documents at the sorted positions ``removed`` are not kept
        (None: every document that is the later one of a passed pair), and, given the
        ``removed`` of the table ``before``, the paired documents holding a slot whose
        position differs between the two: ``(table, tpos, tlo, thi, memberships)``. A pair
        ``(i, j)`` with ``i`` or ``j`` in ``tpos`` and ``tlo < j <= thi`` may have another
        verdict with the new table (:func:`at_risk`); ``memberships`` counts the rows."""
        if self.held is not None:
            return self._here(removed, before)
        sc = self.spark.sparkContext
        first = self.stable is None
        cap = driver_memberships(self.spark, self.ranges) if first else 0
        bits = (
            _bits(removed, self.positions),
            _bits(before, self.positions),
            before is not None,
            cap,
            self._pos_type,
        )
        shared = sc.broadcast(bits)
        made = held_rdds(self.spark) if first else set()
        rows = to_arrow(self.frame.mapInArrow(_table_pass(shared, self.cfg), _PASS_SCHEMA))
        if first:  # the job that computed the frame checkpointed it
            self.own = held_rdds(self.spark) - made
        shared.destroy()
        slot_ids = _column_in(rows.column("slots"), "<i4")
        firsts, seconds = (_positions_in(rows.column(c), self._pos_type) for c in _ENTRIES)
        tpos, tlo, thi = (_column_in(rows.column(c), "<i8") for c in ("tpos", "tlo", "thi"))
        order = np.argsort(slot_ids, kind="stable")
        table = (slot_ids[order], firsts[order], seconds[order])
        self.rows = int(sum(rows.column("rows").to_pylist()))
        if first:
            self.stable = table
            vol = rows.column("vol").to_pylist()
            vslot = rows.column("vslot").is_valid().to_pylist()
            if all(b or n == 0 for b, n in zip(vslot, vol, strict=True)):
                self._hold(*(_views(rows.column(c)) for c in ("vslot", "vpos", "vflag")))
        return table, tpos, tlo, thi, self.rows

    def _hold(self, slot: list[Any], pos: list[Any], flag: list[Any]) -> None:
        """Keep the volatile slots' memberships here (:class:`_Held`), and the other slots'
        entries of the first table (which never change) as :attr:`stable`: ``slot``, ``pos``
        and ``flag`` hold each range's bytes (or None)."""
        # each range's rows come sorted by slot and position, and the ranges are disjoint
        taken = [k for k, b in enumerate(slot) if b is not None and len(b)]
        order = sorted(taken, key=lambda k: int(np.frombuffer(slot[k], "<i4", count=1)[0]))
        s = np.concatenate(
            [np.frombuffer(slot[k], "<i4") for k in order] or [np.zeros(0, np.int32)],
            dtype=np.int32,
        )
        p = np.concatenate(
            [np.frombuffer(pos[k], self._pos_type) for k in order] or [np.zeros(0, np.int64)],
            dtype=np.int64,
        )
        f = np.concatenate(
            [np.frombuffer(flag[k], dtype=np.uint8) for k in order] or [np.zeros(0, np.uint8)]
        )
        if not _in_order(s, p):
            by = np.lexsort((p, s))
            s, p, f = s[by], p[by], f[by]
        assert self.stable is not None
        held = _Held(s, p, f, self.cfg, self.positions)
        ids = self.stable[0]
        at = np.minimum(np.searchsorted(held.slot_ids, ids), max(0, len(held.slot_ids) - 1))
        steady = ~(held.slot_ids[at] == ids) if len(held.slot_ids) else np.ones(len(ids), bool)
        self.stable = (ids[steady], self.stable[1][steady], self.stable[2][steady])
        self.held = held

    def _here(self, removed: I64 | None, before: I64 | None) -> tuple[Table, I64, I64, I64, int]:
        """:meth:`table` from the memberships held here."""
        assert self.held is not None and self.stable is not None
        held = self.held
        moved = [np.zeros(0, dtype=np.int64)] * 3
        if before is not None:
            held.settle(before, moved=False)
            moved = held.settle(removed)
        else:
            held.settle(removed, moved=False)
        tpos, tlo, thi = moved
        return _merged(self.stable, held.table()), tpos, tlo, thi, self.rows

    @property
    def _pos_type(self) -> str:
        """How the volatile memberships' positions come to the driver: 4 bytes when they fit."""
        return "<i4" if self.positions < 1 << 31 else "<i8"

    def unpersist(self) -> None:
        release(self.spark, self.own)


def _merged(a: Table, b: Table) -> Table:
    """The entries of two tables of distinct slots (each sorted by slot) in one, sorted."""
    n = len(a[0]) + len(b[0])
    at = np.searchsorted(a[0], b[0]) + np.arange(len(b[0]))
    mine = np.ones(n, dtype=np.bool_)
    mine[at] = False
    out: list[I64] = []
    for x, y in zip(a, b, strict=True):
        both = np.empty(n, dtype=np.result_type(x, y))
        both[mine], both[at] = x, y
        out.append(both)
    return out[0], out[1], out[2]


class _Held:
    """The volatile slots' memberships on the driver (sorted by slot and position) and each
    slot's entries for the documents last removed: a round recomputes only the slots held by
    a document whose removal changed (:meth:`settle`)."""

    def __init__(
        self,
        slot: npt.NDArray[np.integer[Any]],
        pos: I64,
        flag: npt.NDArray[np.uint8],
        cfg: DedupConfig,
        positions: int,
    ) -> None:
        self.pos, self.flag, self.cfg, self.positions = pos, flag, cfg, positions
        self.starts, self.sizes, self.group = groups(slot)
        self.slot_ids = slot[self.starts].astype(np.int64)
        n = len(self.starts)
        self.first = np.full(n, NO_POSITION, dtype=np.int64)
        self.second = np.full(n, NO_POSITION, dtype=np.int64)
        self.removed: I64 | None = None
        self.unsure = True  # the entries are for the unsure documents removed

    def table(self) -> Table:
        """The entries of the slots held by :func:`fewest` kept documents."""
        ok = self.second != NO_POSITION  # the second is set whenever fewest() hold it
        return self.slot_ids[ok], self.first[ok], self.second[ok]

    def settle(self, removed: I64 | None, moved: bool = True) -> list[I64]:
        """Take the entries for ``removed`` (sorted; None: the unsure documents) and return
        the paired documents holding a slot whose entry moved, with the interval it moved
        over: ``[tpos, tlo, thi]`` (see :meth:`Guard.table`); nothing unless ``moved``."""
        if removed is None or self.unsure or self.removed is None:
            every = None
        else:
            changed = symmetric_difference(self.removed, removed)
            rows = np.flatnonzero(self._marks(changed)[self.pos])
            every = distinct(self.group[rows])
        now1, now2 = self._entries(every, removed)
        if every is None:
            every = np.arange(len(self.starts))
            was1, was2 = self.first, self.second
            self.first, self.second = now1, now2
        else:
            was1, was2 = self.first[every], self.second[every]
            self.first[every], self.second[every] = now1, now2
        self.removed, self.unsure = removed, removed is None
        out: list[list[I64]] = [[], [], []]
        for was, now in ((was1, now1), (was2, now2)) if moved else ():
            differ = np.flatnonzero(was != now)
            if len(differ) == 0:
                continue
            g = every[differ]
            rows = _spans(self.starts[g], self.starts[g] + self.sizes[g])
            which = np.repeat(differ, self.sizes[g])
            paired = (self.flag[rows] & PAIRED) != 0
            out[0].append(self.pos[rows][paired])
            out[1].append(np.minimum(was, now)[which][paired])
            out[2].append(np.maximum(was, now)[which][paired])
        return [np.concatenate(o) if o else np.zeros(0, dtype=np.int64) for o in out]

    def _marks(self, positions: I64) -> npt.NDArray[np.bool_]:
        """A bitmap of the document ``positions``, to look rows' positions up in."""
        marks = np.zeros(self.positions + 1, dtype=np.bool_)
        marks[positions] = True
        return marks

    def _entries(self, every: I64 | None, removed: I64 | None) -> tuple[I64, I64]:
        """The first and second entries of the slots ``every`` (group numbers, sorted; None:
        all of them) when ``removed`` are not kept (:func:`_firsts`; NO_POSITION for both
        when fewer than :func:`fewest` hold a slot)."""
        cfg = self.cfg
        limit, low = cfg.common_after, fewest(cfg)
        if every is None:  # every row, in place
            n, pos, flag, local = len(self.starts), self.pos, self.flag, self.group
        else:
            sizes = self.sizes[every]
            rows = _spans(self.starts[every], self.starts[every] + sizes)
            n, pos, flag = len(every), self.pos[rows], self.flag[rows]
            local = np.repeat(np.arange(n), sizes)
        kept = (flag & KEEP) != 0
        if removed is None:
            kept &= (flag & SURE) != 0
        elif len(removed):
            kept &= ~self._marks(removed)[pos]
        kp, kg = pos[kept], local[kept]
        count = np.bincount(kg, minlength=n)
        begin = np.cumsum(count) - count
        first = np.full(n, NO_POSITION, dtype=np.int64)
        full = count >= limit
        first[full] = kp[begin[full] + limit - 1]
        ok = count >= low
        first[~ok] = NO_POSITION
        if cfg.chrome_passage > 0:
            second = np.full(n, NO_POSITION, dtype=np.int64)
            second[ok] = kp[begin[ok] + min(PASSAGE_STORIES, low) - 1]
        else:
            second = first.copy()
        return first, second


def _spans(lo: npt.NDArray[Any], hi: npt.NDArray[Any]) -> I64:
    """The indices ``lo[k] .. hi[k] - 1`` of every k, in order."""
    sizes = (hi - lo).astype(np.int64)
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(lo.astype(np.int64) - (np.cumsum(sizes) - sizes), sizes)
    out: I64 = shift + np.arange(total, dtype=np.int64)
    return out


def build_guard(
    spark: SparkSession,
    docs: DataFrame,
    side: DataFrame,
    cfg: DedupConfig,
    n_parts: int,
    positions: int,
    stats: dict[str, Any],
    flags: tuple[I64, I64] | None = None,
) -> Guard:
    """The guard's memberships for the original documents ``docs`` (``_pos, _sh, _n,
    _ptext``), in ``n_parts`` ranges of the slot space (checkpointed by the first
    :meth:`Guard.table`).

    Only the candidate slots of :func:`common_candidates` (of the slot counts ``side``) are
    kept, each flagged ``OWN`` where the document holds it as a story counts it
    (:func:`story_slots`). Which documents are the later one of a passed pair (not sure to
    be kept) and which are in a pair at all: the sorted positions ``flags`` (later, paired),
    or else the column ``_u`` of ``docs`` (true: a later one; false: an earlier one only;
    null: in no pair). A slot's table entry is never after ``t``, the position of its
    ``common_after``-th sure document: the rows after ``t`` never matter and are dropped. A
    slot is volatile (its entry may change between rounds) when an unsure document comes
    before ``t``; all its rows are kept, to find the pairs a change puts at risk.
    ``positions``: one more than the largest input position.
    """
    from pyspark.sql import functions as F

    limit = cfg.common_after
    ranges = max(1, n_parts)
    if limit <= 0:
        stats["template_candidates"] = 0
        empty = spark.createDataFrame([], _BLOB_SCHEMA)
        return Guard(spark, empty, cfg, positions, ranges)
    candidates = common_candidates(side, cfg, n_parts)
    stats["template_candidates"] = len(candidates)
    sc = spark.sparkContext
    common = sc.broadcast(candidates)
    marks = sc.broadcast(flags) if flags is not None else None
    keys = partition_keys(ranges)

    def memberships(batches: Batches) -> Iterator[pa.RecordBatch]:
        cand: I64 = common.value
        if len(cand) == 0:
            return
        wanted = np.zeros(1 << SLOT_BITS, dtype=np.bool_)
        wanted[cand] = True
        # each range's memberships, a piece a batch (in the batches' order, each piece in
        # its rows' order, and their slots in order)
        parts: list[list[tuple[I64, I64, npt.NDArray[np.uint8]]]] = [[] for _ in range(ranges)]
        for batch in batches:
            if batch.num_rows == 0:
                continue
            pos = np.asarray(batch.column("_pos").to_numpy(), dtype=np.int64)
            if marks is not None:
                later, paired = marks.value
                unsure = _member(pos, later)
                in_pair = _member(pos, paired)
            else:
                u = batch.column("_u")
                in_pair = np.asarray(u.is_valid().to_numpy(zero_copy_only=False))
                unsure = np.asarray(u.fill_null(False).to_numpy(zero_copy_only=False))
            flag = np.where(unsure, 0, SURE) | np.where(in_pair, PAIRED, 0)
            texts = batch.column("_qt").to_pylist()
            units = batch.column("_n").to_pylist()
            blobs = [b or b"" for b in batch.column("_sh").to_pylist()]
            key = _wanted_slots(blobs, wanted)
            k_of, s = key >> SLOT_BITS, key & ((1 << SLOT_BITS) - 1)
            own = np.full(len(s), OWN, dtype=np.uint8)
            for k in (k for k, text in enumerate(texts) if text is not None and blobs[k]):
                lo, hi = np.searchsorted(k_of, [k, k + 1])
                mine = _member(s[lo:hi], story_slots(blobs[k], texts[k], units[k]))
                own[lo:hi][~mine] = 0
            where = pos[k_of]
            flags_of = own | flag[k_of].astype(np.uint8)
            for k, take in enumerate(split_by(slot_range(s, ranges), ranges)):
                if len(take):
                    parts[k].append((s[take], where[take], flags_of[take]))
        for k, pieces in enumerate(parts):
            if not pieces:
                continue
            slot = np.concatenate([p[0] for p in pieces])
            where = np.concatenate([p[1] for p in pieces])
            flag = np.concatenate([p[2] for p in pieces])
            for lo in range(0, len(slot), ROW_MEMBERSHIPS):
                hi = min(lo + ROW_MEMBERSHIPS, len(slot))
                yield _blob_batch(keys[k], slot[lo:hi], where[lo:hi], flag[lo:hi])

    cols = ["_pos", "_sh", "_n"] if flags is not None else ["_pos", "_sh", "_n", "_u"]
    # a story counts the lines it does not quote: the prepared text of those that quote
    quoting = F.when(F.col("_ptext").rlike("(?md)" + QUOTE_START), F.col("_ptext"))
    frame = (
        docs.select(*cols, quoting.alias("_qt"))
        .mapInArrow(memberships, _BLOB_SCHEMA)
        .repartition(ranges, F.col("_r"))
        .mapInArrow(_trimmed(limit, fewest(cfg)), _BLOB_SCHEMA)
        .localCheckpoint(eager=False)
    )
    return Guard(spark, frame, cfg, positions, ranges)


#: Documents whose wanted slots :func:`_wanted_slots` finds at once (a few MB of arrays,
#: which the allocator keeps: fresh pages for a whole batch's cost more than the work)
SLOTS_STEP = 256


def _wanted_slots(blobs: list[bytes], wanted: npt.NDArray[np.bool_]) -> I64:
    """Each document's distinct slots that are ``wanted``, of its shingle codes ``blobs``
    (little-endian u4), as ``(row << SLOT_BITS) | slot``, sorted."""
    sizes = np.array([len(b) // 4 for b in blobs], dtype=np.int64)
    out: list[I64] = [np.zeros(0, dtype=np.int64)]
    for lo in range(0, len(blobs), SLOTS_STEP):
        hi = min(lo + SLOTS_STEP, len(blobs))
        at = slots(np.frombuffer(b"".join(blobs[lo:hi]), dtype="<u4"))
        keep = wanted[at]
        row = np.repeat(np.arange(lo, hi, dtype=np.int64), sizes[lo:hi])[keep]
        # rows come in order, so the keys come in sorted blocks: a stable sort is faster
        out.append(distinct((row << SLOT_BITS) | at[keep], kind="stable"))
    return np.concatenate(out)


def _member(pos: I64, sorted_positions: I64) -> npt.NDArray[np.bool_]:
    """Whether each of ``pos`` is in ``sorted_positions``."""
    if len(sorted_positions) == 0:
        return np.zeros(len(pos), dtype=np.bool_)
    at = np.minimum(np.searchsorted(sorted_positions, pos), len(sorted_positions) - 1)
    hit: npt.NDArray[np.bool_] = sorted_positions[at] == pos
    return hit


def _blob_batch(key: int, slot: I64, pos: I64, flag: npt.NDArray[Any]) -> pa.RecordBatch:
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [
            pa.array([key], pa.int32()),
            pa.array([binary(slot, "<i4")], pa.binary()),
            pa.array([binary(pos, "<i8")], pa.binary()),
            pa.array([flag.astype(np.uint8).tobytes()], pa.binary()),
        ],
        names=["_r", "slot", "pos", "flags"],
    )


def _ranges(batches: Batches) -> Iterator[tuple[int, I64, I64, npt.NDArray[np.uint8]]]:
    """The memberships of each range a partition holds, sorted by slot and position."""
    parts: dict[int, list[tuple[bytes, bytes, bytes]]] = {}
    for batch in batches:
        for key, s, p, f in zip(
            batch.column("_r").to_pylist(),
            batch.column("slot").to_pylist(),
            batch.column("pos").to_pylist(),
            batch.column("flags").to_pylist(),
            strict=True,
        ):
            parts.setdefault(int(key), []).append((s, p, f))
    for key, blobs in parts.items():
        slot = np.concatenate([unbinary(s, "<i4") for s, _, _ in blobs])
        pos = np.concatenate([unbinary(p, "<i8") for _, p, _ in blobs])
        flag = np.concatenate([np.frombuffer(f, dtype=np.uint8) for _, _, f in blobs])
        if _in_order(slot, pos):  # as :func:`_trimmed` wrote them
            yield key, slot, pos, flag
            continue
        if len(pos) and int(pos.max()) >> 32 == 0:  # one key: a third of lexsort's time
            order = np.argsort((slot.astype(np.int64) << 32) | pos, kind="stable")
        else:
            order = np.lexsort((pos, slot))
        yield key, slot[order], pos[order], flag[order]


#: The table's position columns (:func:`_positions_in`).
_ENTRIES = ("firsts", "seconds")


def _column_in(column: Any, dtype: str) -> I64:
    """A binary column's values (each an array of ``dtype``) as one int64 array."""
    parts = [np.frombuffer(b, dtype) for b in _views(column) if b is not None]
    return np.concatenate(parts or [np.zeros(0, np.int64)], dtype=np.int64)


def _positions_out(values: I64, pos_type: str) -> bytes:
    """Table positions as bytes of ``pos_type`` (``<i4``: :data:`NO_POSITION` as -1)."""
    if pos_type == "<i4":
        values = np.where(values == NO_POSITION, -1, values)
    return binary(values, pos_type)


def _positions_in(column: Any, pos_type: str) -> I64:
    """The positions :func:`_positions_out` wrote, as int64 (with :data:`NO_POSITION`)."""
    out = _column_in(column, pos_type)
    if pos_type == "<i4":
        out[out == -1] = NO_POSITION
    return out


def _views(column: Any) -> list[Any]:
    """Each value of an Arrow binary column as a buffer (no copy), or None."""
    return [None if v is None else v.as_buffer() for v in column]


def _in_order(slot: npt.NDArray[np.integer[Any]], pos: I64) -> bool:
    """Whether the rows are sorted by slot and then position."""
    if len(slot) < 2:
        return True
    if int(pos.min()) >= 0 and int(pos.max()) >> 32 == 0:  # one comparison of 64-bit keys
        key = (slot.astype(np.int64) << 32) | pos
        return bool(np.all(key[1:] >= key[:-1]))
    up = slot[1:] >= slot[:-1]
    if not bool(np.all(up)):
        return False
    tie = np.flatnonzero(slot[1:] == slot[:-1])
    return bool(np.all(pos[tie + 1] >= pos[tie]))


def _trimmed(limit: int, low: int) -> BatchFn:
    """The ``mapInArrow`` function of :func:`build_guard` on partitions of whole ranges:
    each range's memberships with the rows that can matter, flagged ``KEEP``/``VOLATILE``:
    the slots a story counts in ``low`` documents or more (:func:`fewest`), each up to its
    ``limit``-th sure such document; the rows of a document that holds a slot only on its
    quoted lines (no ``OWN``) never count, but stay with a volatile slot's rows, as the
    slot is read when that document is verified."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        for key, slot, pos, flag in _ranges(batches):
            sure, own = (flag & SURE) != 0, (flag & OWN) != 0
            counted = sure & own
            starts, sizes, group = groups(slot)
            done = np.cumsum(counted, dtype=np.int64)  # counted rows up to each row
            rank = done - (done[starts] - counted[starts])[group]
            ends = np.full(len(starts), NO_POSITION, dtype=np.int64)
            at = np.flatnonzero(counted & (rank == limit))
            ends[group[at]] = pos[at]
            end = ends[group]
            owners = np.add.reduceat(own.astype(np.int64), starts) if len(starts) else sizes
            reach = (owners >= low)[group]
            keep = reach & own & (pos <= end)
            vol_group = np.zeros(len(starts), dtype=np.bool_)
            vol_group[group[~sure & own & (pos < end)]] = True
            vol = reach & vol_group[group]
            out = np.flatnonzero(keep | vol)
            flags = (
                (flag[out] & (SURE | PAIRED | OWN))
                | np.where(keep[out], KEEP, 0)
                | np.where(vol[out], VOLATILE, 0)
            ).astype(np.uint8)
            slot_out, pos_out = slot[out], pos[out]
            for lo in range(0, len(out), ROW_MEMBERSHIPS):
                take = slice(lo, lo + ROW_MEMBERSHIPS)
                yield _blob_batch(key, slot_out[take], pos_out[take], flags[take])

    return run


def _bits(positions: I64 | None, n: int) -> npt.NDArray[np.uint8] | None:
    """Sorted positions as a bitmap of ``n`` bits (an eighth of a byte a document)."""
    if positions is None:
        return None
    mask = np.zeros(n, dtype=np.bool_)
    mask[positions] = True
    return np.packbits(mask, bitorder="little")


def _in_bits(bits: npt.NDArray[np.uint8], pos: I64) -> npt.NDArray[np.bool_]:
    found: npt.NDArray[np.bool_] = ((bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1) == 1
    return found


def _firsts(
    slot: I64, pos: I64, flag: npt.NDArray[np.uint8], removed: Any, cfg: DedupConfig
) -> Table:
    """For each slot held by :func:`fewest` kept documents, the position of its
    ``common_after``-th (:data:`NO_POSITION` when fewer hold it) and of its second (with
    chrome passages; else the first again): rows sorted by slot and position, ``removed``
    the bitmap of documents not kept, None for the unsure ones."""
    limit, low = cfg.common_after, fewest(cfg)
    kept = (flag & KEEP) != 0
    if removed is None:
        kept &= (flag & SURE) != 0
    else:
        kept &= ~_in_bits(removed, pos)
    s, p = slot[kept], pos[kept]
    if len(s) == 0:
        none = np.zeros(0, dtype=np.int64)
        return none, none, none
    starts, sizes, _ = groups(s)
    ok = sizes >= low
    first = np.full(len(starts), NO_POSITION, dtype=np.int64)
    full = sizes >= limit
    first[full] = p[starts[full] + limit - 1]
    if cfg.chrome_passage > 0:
        second = p[starts[ok] + min(PASSAGE_STORIES, low) - 1].astype(np.int64)
    else:
        second = first[ok]
    return s[starts[ok]].astype(np.int64), first[ok], second


def _table_pass(shared: Any, cfg: DedupConfig) -> BatchFn:
    """The ``mapInArrow`` function of :meth:`Guard.table`: one row per range."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        removed, before, compare, cap, pos_type = shared.value
        for _, slot, pos, flag in _ranges(batches):
            new = _firsts(slot, pos, flag, removed, cfg)
            moved = [np.zeros(0, dtype=np.int64)] * 3
            if compare:
                old = _firsts(slot, pos, flag, before, cfg)
                moved = _moved(slot, pos, flag, old, new)
            vol = np.flatnonzero((flag & VOLATILE) != 0)
            # the volatile memberships, for the driver, when the range's share fits
            held: list[bytes | None] = [None, None, None]
            if 0 < len(vol) <= cap:
                held = [binary(slot[vol], "<i4"), binary(pos[vol], pos_type), flag[vol].tobytes()]
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([binary(new[0], "<i4")], pa.binary()),
                    *(pa.array([_positions_out(t, pos_type)], pa.binary()) for t in new[1:]),
                    *(pa.array([binary(m, "<i8")], pa.binary()) for m in moved),
                    pa.array([len(slot)], pa.int64()),
                    pa.array([len(vol)], pa.int64()),
                    *(pa.array([b], pa.binary()) for b in held),
                ],
                names=[
                    "slots", "firsts", "seconds", "tpos", "tlo", "thi",
                    "rows", "vol", "vslot", "vpos", "vflag",
                ],
            )  # fmt: skip

    return run


def _moved(slot: I64, pos: I64, flag: npt.NDArray[np.uint8], old: Table, new: Table) -> list[I64]:
    """The paired documents holding a slot whose first or second position differs between
    the tables ``old`` and ``new``, each with the interval (lo, hi] the position moved over:
    ``[tpos, tlo, thi]`` (a row for each position that moved)."""
    every = union(old[0], new[0])
    out: list[list[I64]] = [[], [], []]
    for k in (1, 2):
        was, now = _spread(old, every, k), _spread(new, every, k)
        differ = was != now
        changed = every[differ]
        if len(changed) == 0:
            continue
        at = np.minimum(np.searchsorted(changed, slot), len(changed) - 1)
        rows = np.flatnonzero((changed[at] == slot) & ((flag & PAIRED) != 0))
        out[0].append(pos[rows])
        out[1].append(np.minimum(was, now)[differ][at[rows]])
        out[2].append(np.maximum(was, now)[differ][at[rows]])
    return [np.concatenate(o) if o else np.zeros(0, dtype=np.int64) for o in out]


def _spread(table: Table, every: I64, k: int = 1) -> I64:
    """The table's ``k``-th column (1: firsts, 2: seconds) for each of the sorted slots
    ``every`` (NO_POSITION if absent)."""
    out = np.full(len(every), NO_POSITION, dtype=np.int64)
    out[np.searchsorted(every, table[0])] = table[k]
    return out


def same_table(a: Table, b: Table) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def risk_intervals(tpos: I64, tlo: I64, thi: I64, positions: int) -> tuple[I64, I64]:
    """The moved slots' intervals (``tlo``, ``thi``] of each document ``tpos``, merged, on
    one line: document ``d``'s interval (lo, hi] is (d·(n + 1) + lo, d·(n + 1) + hi], ``n``
    being ``positions`` (so the intervals of two documents never touch)."""
    span = positions + 1
    lo = tpos * span + tlo
    hi = tpos * span + np.minimum(thi, positions)
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    if len(lo) == 0:
        return lo, hi
    reach = np.maximum.accumulate(hi)
    new = np.ones(len(lo), dtype=np.bool_)
    new[1:] = lo[1:] > reach[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], len(lo)) - 1
    return lo[starts], reach[ends]


def at_risk(i: I64, j: I64, intervals: tuple[I64, I64], positions: int) -> npt.NDArray[np.bool_]:
    """Which pairs ``(i, j)`` may get another verdict: ``i`` or ``j`` holds a slot whose
    position moved across ``j`` — the later document sees it as common under one table and
    not under the other (coverage reads the shorter text's slots; where the shared text
    lies, the longer's too).

    >>> iv = risk_intervals(np.array([3, 6]), np.array([4, 2]), np.array([9, 8]), 20)
    >>> at_risk(np.array([3, 3, 1, 3]), np.array([5, 4, 6, 12]), iv, 20).tolist()
    [True, False, True, False]
    """
    starts, ends = intervals
    hit = np.zeros(len(j), dtype=np.bool_)
    if len(starts) == 0:
        return hit
    span = positions + 1
    for doc in (i, j):
        q = doc * span + j
        k = np.searchsorted(starts, q, side="left") - 1
        hit |= (k >= 0) & (q <= ends[np.maximum(k, 0)])
    return hit
