"""The template guard on Spark: the input position from which each shingle slot is common.

The local engine counts a shingle once it has been seen in ``common_after`` *kept* stories
earlier in the input (:class:`~neardup.engine.CommonShingles`), so a verdict depends on which
earlier documents were kept. Spark computes, for every slot, the input position of the
``common_after``-th kept document containing it (:func:`template_table`), verifies with
those positions (:class:`~neardup.engine.TemplateTable`), recomputes the kept set, and
repeats on the pairs whose guard changed (:func:`pairs_at_risk`) until nothing changes.
Position ``p``'s decision depends only on earlier positions, so the fixed point is unique
and is the local engine's answer. The rounds are cheap: only original documents count (a
byte-identical copy is never kept), and a document that is the later one of no passed pair
is kept in every round, so each slot keeps its memberships up to its ``common_after``-th
such document, once, partitioned by slot (:func:`guard_rows`); a round drops the
duplicates found and takes the ``common_after``-th position of each slot in place, without
a shuffle.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..engine import DedupConfig
from ..engine.templates import PASSAGE_STORIES, SLOT_BITS, slots
from ..engine.verify import QUOTE_START, unquoted_codes
from .columns import Batches, BatchFn, arrow_schema, column, groups, sorted_rows
from .verify import PAIR_SCHEMA, Table

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "GUARD_SCHEMA",
    "common_candidates",
    "guard_rows",
    "pairs_at_risk",
    "same_table",
    "slots_of",
    "template_table",
]

I64 = npt.NDArray[np.int64]
NO_POSITION = np.iinfo(np.int64).max
#: Up to this many documents, the flags of the guard's rows are broadcast.
BROADCAST_ROWS = 2_000_000

_SLOT_ROWS_SCHEMA = "slot int, _pos long, _sure boolean, _own boolean"
GUARD_SCHEMA = "slot int, _pos long, _sure boolean, _keep boolean, _vol boolean"
_FIRSTS_SCHEMA = "slot long, first long, second long"


def slots_of(blob: bytes) -> I64:
    """The distinct template-guard slots of a document's shingle codes."""
    codes = np.frombuffer(blob, dtype="<u4")
    return np.unique(slots(codes).astype(np.int64))


def story_slots(blob: bytes, text: str | None, n_units: int) -> I64:
    """The distinct slots a story counts (:func:`~neardup.engine.story_codes`): those of its
    shingle codes that do not start on a quoted line of its prepared ``text`` (None: a text
    with no quoted line)."""
    codes = np.frombuffer(blob, dtype="<u4")
    own = None if text is None else unquoted_codes(codes, text, n_units)
    return np.unique(slots(codes if own is None else own).astype(np.int64))


def fewest(cfg: DedupConfig) -> int:
    """The fewest kept stories a slot must be in for the guard to read it: two with chrome
    passages (a passage's shingles are seen in two), else ``common_after``."""
    if cfg.common_after <= 0:
        return 0
    return min(PASSAGE_STORIES, cfg.common_after) if cfg.chrome_passage > 0 else cfg.common_after


def common_candidates(docs: DataFrame, cfg: DedupConfig, n_parts: int = 1) -> I64:
    """Slots found in :func:`fewest` or more of ``docs`` (``_sh``; sorted): given the
    original documents, a superset of the slots the guard can ever read (count as common,
    or as seen for a passage), whichever of them are kept (a byte-identical copy is never
    kept, and quoted lines only add slots).

    Each input partition counts its slots, cut into ``n_parts`` ranges of the slot space;
    a range travels as one row (the slots and counts as bytes), and the partition that gets
    a range adds up its counts. A partition's distinct slots run into the millions on news,
    and as one row each, Spark's per-row cost of the shuffle and the sum was most of the
    template stage's time."""
    from pyspark.sql import functions as F

    limit = fewest(cfg)
    if limit <= 0:
        return np.zeros(0, dtype=np.int64)
    ranges = max(1, n_parts)

    def count(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        parts = [slots_of(blob) for batch in batches for blob in batch.column("_sh").to_pylist()]
        if not parts:
            return
        found, counts = np.unique(np.concatenate(parts), return_counts=True)
        # a count past the limit says no more (the sum only meets the limit or not)
        counts = np.minimum(counts, limit).astype("<u4")
        cut = np.searchsorted(found, _range_starts(ranges))
        ids, blobs = [], []
        for r in range(ranges):
            lo, hi = cut[r], cut[r + 1]
            if hi > lo:
                ids.append(r)
                blobs.append(found[lo:hi].astype("<u4").tobytes() + counts[lo:hi].tobytes())
        if ids:
            yield pa.RecordBatch.from_arrays(
                [pa.array(ids, pa.int32()), pa.array(blobs, pa.binary())], names=["_r", "_b"]
            )

    def add(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        parts, tallies = [], []
        for batch in batches:
            for blob in batch.column("_b").to_pylist():
                both = np.frombuffer(blob, dtype="<u4")
                half = len(both) // 2
                parts.append(both[:half])
                tallies.append(both[half:])
        if not parts:
            return
        every = np.concatenate(parts)
        order = np.argsort(every, kind="stable")
        every, tally = every[order], np.concatenate(tallies)[order]
        starts = np.flatnonzero(np.r_[True, every[1:] != every[:-1]])
        sums = np.add.reduceat(tally.astype(np.int64), starts)
        common = every[starts[sums >= limit]].astype(np.int32)
        step = 1 << 20
        for lo in range(0, len(common), step):
            yield pa.RecordBatch.from_arrays([pa.array(common[lo : lo + step])], names=["slot"])

    found = (
        docs.select("_sh")
        .mapInArrow(count, "_r int, _b binary")
        .repartition(ranges, F.col("_r"))
        .mapInArrow(add, "slot int")
    )
    return np.sort(column(found, "slot"))


def _range_starts(ranges: int) -> I64:
    """The first slot of each of ``ranges`` equal ranges of the slot space, and its end."""
    return (np.arange(ranges + 1, dtype=np.int64) << SLOT_BITS) // ranges


def guard_rows(
    spark: SparkSession,
    sketches: DataFrame,
    originals: DataFrame,
    later: DataFrame,
    cfg: DedupConfig,
    n_parts: int,
    stats: dict[str, Any],
) -> DataFrame:
    """The (slot, document) memberships the template guard can ever need, partitioned by
    slot (persisted): ``slot, _pos, _sure, _keep, _vol``.

    Only original documents are counted (a byte-identical copy is never kept), and only in
    the candidate slots of :func:`common_candidates`. A document that is the later one of
    no passed pair (``_sure``) is kept whatever the verdicts, so a slot's table entry is
    never after ``t``, the position of its ``common_after``-th sure document: the rows after
    ``t`` never matter and are dropped (``_keep`` marks the rest). A slot is volatile
    (``_vol``: its entry may change between rounds) when an unsure document comes before
    ``t``; all its rows are kept for the lists of :func:`pairs_at_risk`.
    """
    from pyspark.sql import functions as F
    from pyspark.storagelevel import StorageLevel

    if cfg.common_after <= 0:
        stats["template_candidates"] = 0
        return spark.createDataFrame([], GUARD_SCHEMA)
    flags = originals.join(later.withColumn("_u", F.lit(True)), "_pos", "left").persist()
    small = stats["documents"] <= BROADCAST_ROWS
    # a story counts the lines it does not quote: the prepared text of those that quote
    quoting = F.when(F.col("_ptext").rlike("(?md)" + QUOTE_START), F.col("_ptext"))
    docs = sketches.select("_pos", "_sh", "_n", quoting.alias("_qt")).join(
        F.broadcast(flags) if small else flags, "_pos"
    )
    candidates = common_candidates(docs, cfg, n_parts)
    stats["template_candidates"] = len(candidates)
    common = spark.sparkContext.broadcast(candidates)
    rows = (
        docs.mapInArrow(slot_rows(common), _SLOT_ROWS_SCHEMA)
        .repartition(n_parts, "slot")
        .mapInArrow(trim_rows(cfg.common_after, fewest(cfg)), GUARD_SCHEMA)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    stats["template_rows"] = rows.count()
    flags.unpersist()
    common.destroy()
    return rows


def slot_rows(common: Any) -> BatchFn:
    """Each document's distinct slots among the broadcast candidates, one row each, with
    whether the document is sure to be kept (``_u`` null: the later one of no pair) and
    whether it holds the slot as a story counts it (``_own``: not only on quoted lines,
    :func:`story_slots`)."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        cand: I64 = common.value
        schema = arrow_schema(_SLOT_ROWS_SCHEMA)
        if len(cand) == 0:
            return
        for batch in batches:
            if batch.num_rows == 0:
                continue
            pos = np.asarray(batch.column("_pos").to_numpy(), dtype=np.int64)
            sure = np.asarray(batch.column("_u").is_null().to_numpy(zero_copy_only=False))
            found, owned = [], []
            for blob, text, n in zip(
                batch.column("_sh").to_pylist(),
                batch.column("_qt").to_pylist(),
                batch.column("_n").to_pylist(),
                strict=True,
            ):
                slots = slots_of(blob)
                at = np.minimum(np.searchsorted(cand, slots), len(cand) - 1)
                slots = slots[cand[at] == slots]
                found.append(slots)
                if text is None:
                    owned.append(np.ones(len(slots), dtype=np.bool_))
                else:
                    owned.append(np.isin(slots, story_slots(blob, text, n), assume_unique=True))
            counts = [len(f) for f in found]
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(np.concatenate(found).astype(np.int32)),
                    pa.array(np.repeat(pos, counts)),
                    pa.array(np.repeat(sure, counts)),
                    pa.array(np.concatenate(owned)),
                ],
                schema=schema,
            )

    return run


def trim_rows(limit: int, low: int) -> BatchFn:
    """The ``mapInArrow`` function of :func:`guard_rows` on a partition of whole slots: the
    slots a story counts in ``low`` documents or more (:func:`fewest`), each up to its
    ``limit``-th sure such document; the rows of a document that holds a slot only on its
    quoted lines (``_own`` false) never count, but stay with a volatile slot's rows, as the
    slot is read when that document is verified."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        cols = sorted_rows(batches, ["slot", "_pos", "_sure", "_own"])
        if not cols:
            return
        slot, pos = cols[0].astype(np.int64), cols[1].astype(np.int64)
        sure, own = cols[2].astype(np.bool_), cols[3].astype(np.bool_)
        counted = sure & own
        starts, sizes, group = groups(slot)
        done = np.cumsum(counted, dtype=np.int64)  # counted rows up to and including each row
        rank: I64 = done - (done[starts] - counted[starts])[group]
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
        schema = arrow_schema(GUARD_SCHEMA)
        step = 1 << 20
        for lo in range(0, len(out), step):
            take = out[lo : lo + step]
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(slot[take].astype(np.int32)),
                    pa.array(pos[take]),
                    pa.array(sure[take]),
                    pa.array(keep[take]),
                    pa.array(vol[take]),
                ],
                schema=schema,
            )

    return run


def template_table(rows: DataFrame, cfg: DedupConfig) -> Table:
    """For each slot held by :func:`fewest` of the documents in ``rows`` (``slot, _pos``,
    partitioned by slot: the kept documents' rows of :func:`guard_rows`), the position of
    the ``common_after``-th of them (from there on the engine counts the slot as a
    template; :data:`NO_POSITION` when fewer hold it) and of the second (from there on it
    is seen, for a passage of chrome)."""
    limit, low, passage = cfg.common_after, fewest(cfg), cfg.chrome_passage > 0
    if limit <= 0:
        none = np.zeros(0, dtype=np.int64)
        return none, none, none

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        cols = sorted_rows(batches, ["slot", "_pos"])
        if not cols:
            return
        slot, pos = cols[0].astype(np.int64), cols[1].astype(np.int64)
        starts, sizes, _ = groups(slot)
        ok = sizes >= low
        first = np.full(len(starts), NO_POSITION, dtype=np.int64)
        full = sizes >= limit
        first[full] = pos[starts[full] + limit - 1]
        second = pos[starts[ok] + min(PASSAGE_STORIES, low) - 1] if passage else first[ok]
        yield pa.RecordBatch.from_arrays(
            [pa.array(slot[starts[ok]]), pa.array(first[ok]), pa.array(second)],
            schema=arrow_schema(_FIRSTS_SCHEMA),
        )

    found = rows.select("slot", "_pos").mapInArrow(run, _FIRSTS_SCHEMA)
    slots, firsts, seconds = column(found, "slot"), column(found, "first"), column(found, "second")
    order = np.argsort(slots, kind="stable")
    return slots[order], firsts[order], seconds[order]


def same_table(a: Table, b: Table) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def pairs_at_risk(
    spark: SparkSession, pairs: DataFrame, slot_lists: DataFrame, old: Table, new: Table
) -> DataFrame:
    """The pairs one of whose documents holds a slot that the later document sees as common,
    or as seen, under one table and not under the other: the only verdicts that can change
    (coverage reads the shorter text's slots; where the shared text lies, the longer's too;
    a passage of chrome, every slot of one text)."""
    from pyspark.sql import functions as F

    every = np.union1d(old[0], new[0])

    def at(table: Table, k: int) -> I64:
        out = np.full(len(every), NO_POSITION, dtype=np.int64)
        out[np.searchsorted(every, table[0])] = table[k]
        return out

    was1, now1, was2, now2 = at(old, 1), at(new, 1), at(old, 2), at(new, 2)
    differ = (was1 != now1) | (was2 != now2)
    delta = spark.sparkContext.broadcast(
        (every[differ], was1[differ], now1[differ], was2[differ], now2[differ])
    )
    lists = slot_lists.select("_pos", "_s")
    none = F.array().cast("array<int>")
    joined = (
        pairs.join(lists.toDF("i", "_si"), "i", "left")
        .join(lists.toDF("j", "_sj"), "j", "left")
        .withColumn("_s", F.concat(F.coalesce("_si", none), F.coalesce("_sj", none)))
        .filter(F.size("_s") > 0)
        .drop("_si", "_sj")
    )

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.compute as pc

        slots, was, now, was2, now2 = delta.value
        schema = arrow_schema(PAIR_SCHEMA)
        if len(slots) == 0:
            return
        for batch in batches:
            if batch.num_rows == 0:
                continue
            lists = batch.column("_s")
            held = np.asarray(pc.list_flatten(lists).to_numpy(), dtype=np.int64)
            row = np.asarray(pc.list_parent_indices(lists).to_numpy(), dtype=np.int64)
            j = np.asarray(batch.column("j").to_numpy(), dtype=np.int64)[row]
            at = np.minimum(np.searchsorted(slots, held), len(slots) - 1)
            flips = (slots[at] == held) & (
                ((was[at] < j) != (now[at] < j)) | ((was2[at] < j) != (now2[at] < j))
            )
            keep = np.unique(row[flips])
            if len(keep):
                out = batch.select(["i", "j", "ni", "nj"]).take(pa.array(keep))
                yield pa.RecordBatch.from_arrays(list(out.columns), schema=schema)

    return joined.mapInArrow(run, PAIR_SCHEMA).localCheckpoint()
