"""Verification on Spark: the engine's prefilter, ``verify`` and best match, on Arrow batches.

Pairs are ``i`` (earlier) and ``j`` (later) input positions. The prefilter first runs on
the low 16 bits of the MinHash values (:data:`~neardup.spark.columns.LIGHT_BITS`), which
can only agree more often than the full values, so it keeps a superset of the pairs the
engine's prefilter keeps (:func:`~neardup.engine.may_verify_counts`); ``verify`` then
applies the full one. Each later document is then verified against at most
``max_verify`` of the pairs that pass, its most alike (:func:`~neardup.engine.to_verify`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..engine import (
    DedupConfig,
    Sketch,
    TemplateTable,
    alike,
    best_of,
    may_verify_counts,
    to_verify,
    verify,
)
from ..engine.codec import from_row
from ..engine.decide import stories
from ..engine.templates import slot_buckets
from ..engine.verify import CHARACTER_UNITS, NUMERALS, QUOTE_START, Verdict
from ..shingling import distinct, union
from .columns import (
    Batches,
    BatchFn,
    arrow_schema,
    frame_of,
    partition_keys,
    sorted_rows,
    split_by,
    to_arrow,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "ALIKE_SCHEMA",
    "LINK_SCHEMA",
    "PAIR_SCHEMA",
    "VERDICT_SCHEMA",
    "Grouped",
    "Light",
    "Table",
    "best_matches",
    "light_of",
    "passed_pairs",
    "prefilter_batches",
    "to_verify_batches",
    "verify_pairs",
]

I64 = npt.NDArray[np.int64]

PAIR_SCHEMA = "i long, j long, ni int, nj int"
#: The pairs the prefilter passes, with how alike each pair is (:func:`~neardup.engine.alike`).
ALIKE_SCHEMA = PAIR_SCHEMA + ", alike double"
VERDICT_SCHEMA = (
    "i long, j long, score double, measure string, same boolean, copy double, is_copy boolean, "
    "repeated double"
)

#: The template guard of a whole run: (sorted slots, input position of the
#: ``common_after``-th kept story holding each, and of the second) — see
#: :class:`~neardup.engine.TemplateTable`.
Table = tuple[I64, I64, I64]


#: The light signatures of every original document, for a run whose documents are few:
#: sorted positions, their units, their vocabulary sizes, one row of light values each,
#: and how many figures each has.
Light = tuple[I64, I64, I64, npt.NDArray[np.uint16], I64]


def light_of(table: pa.Table) -> Light:
    """:data:`Light` of an Arrow table of ``_pos, _n, _nv, _light, _nn`` (any order)."""
    pos = np.asarray(table.column("_pos").to_numpy(), dtype=np.int64)
    order = np.argsort(pos, kind="stable")
    n, nv, nn = (
        np.asarray(table.column(c).to_numpy(), dtype=np.int64)[order] for c in ("_n", "_nv", "_nn")
    )
    blobs = table.column("_light").to_pylist()
    values = np.frombuffer(b"".join(blobs[k] for k in order), dtype="<u2")
    width = len(values) // max(1, len(pos))
    return pos[order], n, nv, values.reshape(len(pos), width).astype(np.uint16), nn


def passed_pairs(
    i: I64, j: I64, light: Light, cfg: DedupConfig
) -> tuple[I64, I64, I64, I64, npt.NDArray[np.float64]]:
    """Of the candidate pairs ``(i, j)`` (all of each later document ``j``'s), those the
    engine verifies: the MinHash prefilter on the light signatures
    (:func:`~neardup.engine.may_verify_counts`, a superset of its passes), then each later
    document's ``max_verify`` most alike (:func:`~neardup.engine.to_verify`) — what
    :func:`prefilter_batches` and :func:`to_verify_batches` do on joined rows. Returns
    ``i, j, ni, nj, alike``."""
    pos, n, nv, values, _ = light
    a, b = np.searchsorted(pos, i), np.searchsorted(pos, j)
    agree = alike(values[a], values[b])
    ok = may_verify_counts(agree, nv[b], n[b], nv[a], n[a], cfg)
    i, j, a, b, agree = i[ok], j[ok], a[ok], b[ok], agree[ok]
    keep = to_verify(j, i, agree, cfg)
    return i[keep], j[keep], n[a][keep], n[b][keep], agree[keep]


def prefilter_batches(cfg: DedupConfig) -> BatchFn:
    """The ``mapInArrow`` function that drops the pairs the engine's MinHash prefilter
    rejects, judged on the light signatures (``li``, ``lj``) with the vocabulary sizes
    (``nvi``, ``nvj``) and units (``ni``, ``nj``)."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = arrow_schema(ALIKE_SCHEMA)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            ni, nj, nvi, nvj = (
                np.asarray(batch.column(name).to_numpy(), dtype=np.int64)
                for name in ("ni", "nj", "nvi", "nvj")
            )
            li = np.frombuffer(b"".join(batch.column("li").to_pylist()), dtype="<u2")
            lj = np.frombuffer(b"".join(batch.column("lj").to_pylist()), dtype="<u2")
            rows = batch.num_rows
            agree = alike(li.reshape(rows, -1), lj.reshape(rows, -1))
            keep = np.flatnonzero(may_verify_counts(agree, nvj, nj, nvi, ni, cfg))
            if len(keep):
                out = batch.select(["i", "j", "ni", "nj"]).take(pa.array(keep))
                cols = [*out.columns, pa.array(agree[keep])]
                yield pa.RecordBatch.from_arrays(cols, schema=schema)

    return run


def to_verify_batches(cfg: DedupConfig) -> BatchFn:
    """The ``mapInArrow`` function that keeps, of the pairs the prefilter passed (all of a
    later document ``j``'s in one partition), those the engine verifies
    (:func:`~neardup.engine.to_verify`: each document's ``max_verify`` most alike)."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        cols = sorted_rows(batches, ["j", "i", "ni", "nj", "alike"])
        if not cols:
            return
        j, i, ni, nj, agree = cols
        keep = to_verify(j.astype(np.int64), i.astype(np.int64), agree.astype(np.float64), cfg)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(i[keep]),
                pa.array(j[keep]),
                pa.array(ni[keep]),
                pa.array(nj[keep]),
                pa.array(agree[keep]),
            ],
            schema=arrow_schema(ALIKE_SCHEMA),
        )

    return run


def verify_pairs(
    spark: SparkSession,
    pairs: DataFrame,
    sketches: DataFrame,
    table: Table | None,
    cfg: DedupConfig,
    *,
    keep_all: bool = False,
    few_pairs: bool = False,
) -> DataFrame:
    """``verify(later, earlier)`` on each pair (``i`` earlier, ``j`` later) with the template
    guard ``table`` as j sees it: the same-story verdicts (every verdict with ``keep_all``).

    Only pairs compared as titles or both short, or whose figures may disagree, carry the
    prepared texts through the join, and the later text travels where it has a numeral, a
    figure the earlier lacks or quoted lines (the copy decision reads where they are);
    otherwise verification reads shingles, signatures and figures alone. ``few_pairs`` (a
    few million at most) broadcasts their positions so that only the sketches they need are
    shuffled.
    """
    from pyspark.sql import functions as F

    cols = ["_n", "_ptext", "_sh", "_sig", "_nums"]
    full = sketches.select("_pos", *cols)
    if few_pairs:
        # only the sketches these pairs need travel to the join (the positions broadcast)
        needed = pairs.select(F.col("i").alias("_pos")).union(pairs.select(F.col("j")))
        full = full.join(F.broadcast(needed.distinct()), "_pos", "left_semi")
    left = full.toDF("i", *(f"i{c}" for c in cols))
    right = full.toDF("j", *(f"j{c}" for c in cols))
    joined = pairs.select("i", "j").join(left, "i").join(right, "j")
    # the texts travel only where verify reads them: titles, and pairs whose figures may
    # disagree (verify then looks where the figures are)
    common_figures = F.size(F.array_intersect("i_nums", "j_nums"))
    figures = (F.greatest(F.size("i_nums"), F.size("j_nums")) >= 2) & (
        2 * common_figures < F.greatest(F.size("i_nums"), F.size("j_nums"))
    )
    # (and two short texts: their numbers are read from their characters)
    short = F.greatest("i_n", "j_n") < CHARACTER_UNITS
    titles = (F.least("i_n", "j_n") < cfg.short_units) | short | figures | F.lit(keep_all)
    # and the later text where it has quoted lines (verify sets them aside for the copy
    # decision: engine.verify.has_quotes, the same lines in Java's regex) or a numeral (a
    # copy repeats its numbers, and every figure: verify looks where they are)
    quoted = F.col("j_ptext").rlike("(?md)" + QUOTE_START)
    numerals = F.col("j_ptext").rlike(f"[{NUMERALS}]")
    new_figures = F.size(F.array_except("j_nums", "i_nums")) > 0
    joined = joined.withColumn("i_ptext", F.when(titles, F.col("i_ptext"))).withColumn(
        "j_ptext", F.when(titles | quoted | numerals | new_figures, F.col("j_ptext"))
    )
    shared = spark.sparkContext.broadcast(table) if table is not None else None
    limit, passage = cfg.common_after, cfg.chrome_passage

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = arrow_schema(VERDICT_SCHEMA)
        buckets = slot_buckets(shared.value[0]) if shared is not None else None
        # a document's sketch is rebuilt once per batch side; with or without its text
        cache: dict[tuple[str, int, bool], Sketch] = {}
        for batch in batches:
            out: dict[str, list[Any]] = {name: [] for name in schema.names}
            for row in batch.to_pylist():
                i, j = row["i"], row["j"]
                if len(cache) > 4096:
                    cache.clear()
                ka = ("j", j, row["j_ptext"] is not None)
                kb = ("i", i, row["i_ptext"] is not None)
                a = cache.get(ka) or from_row(row, "j_")
                b = cache.get(kb) or from_row(row, "i_")
                cache[ka], cache[kb] = a, b
                guard = None
                if shared is not None:
                    slot_ids, firsts, seconds = shared.value
                    guard = TemplateTable(
                        slot_ids,
                        firsts,
                        at=j,
                        limit=limit,
                        seconds=seconds,
                        passage=passage,
                        buckets=buckets,
                    )
                v = verify(a, b, cfg, guard)
                if v.is_duplicate or keep_all:
                    _add_verdict(out, i, j, v)
            if out["i"]:
                yield pa.RecordBatch.from_pydict(out, schema=schema)

    return joined.mapInArrow(run, VERDICT_SCHEMA)


def _add_verdict(out: dict[str, list[Any]], i: int, j: int, v: Verdict) -> None:
    """Append the verdict on the pair (earlier ``i``, later ``j``) to the columns of a batch
    of :data:`VERDICT_SCHEMA`."""
    out["i"].append(i)
    out["j"].append(j)
    out["score"].append(float(v.score))
    out["measure"].append(v.measure)
    out["same"].append(v.is_duplicate)
    out["copy"].append(float(v.copy_score))
    out["is_copy"].append(v.is_copy)
    out["repeated"].append(float(v.repeated))


_SKETCH_COLS = ["_n", "_ptext", "_sh", "_sig", "_nums"]


#: Bytes of sketches a group of :class:`Grouped` holds, about, at most: a group is one
#: partition, cached (and, where the executors' storage memory is short, written to disk and
#: read back whole) and held whole by the Python worker that verifies it.
GROUP_BYTES = 64 << 20
#: A sketch's bytes, about: 4 a unit (its shingle codes) and this beyond.
SKETCH_BYTES = 600


def pair_groups(i: I64, j: I64, ni: I64, nj: I64, groups: int) -> tuple[I64, I64, int]:
    """Which group verifies the pairs of each later document, for :class:`Grouped`:
    ``(later, group, n)``, the later documents ``j`` (sorted), each one's group, and how
    many groups there are — ``groups`` at least, and a multiple of it, so that none holds
    much more than :data:`GROUP_BYTES` of sketches.

    The pairs that share documents (a component of the pairs, the copies of a story) go to
    one group, so that a sketch travels to one group, not to as many as hold a pair of it;
    the components are spread over the groups heaviest first, each to the lightest group.
    The pairs of a component heavier than a group's share go by their later document
    (``j % n``).

    >>> units = np.array([10, 10, 10, 10])
    >>> later, group, n = pair_groups(np.array([1, 1, 5, 8]), np.array([2, 3, 6, 9]), units,
    ...                               units, groups=2)
    >>> later.tolist(), group.tolist(), n
    ([2, 3, 6, 9], [0, 0, 1, 1], 2)
    """
    import heapq

    groups = max(1, groups)
    nodes = distinct(np.concatenate([i, j]))
    a, b = np.searchsorted(nodes, i), np.searchsorted(nodes, j)
    weight = np.zeros(len(nodes), dtype=np.int64)
    weight[a] = 4 * ni.astype(np.int64) + SKETCH_BYTES
    weight[b] = 4 * nj.astype(np.int64) + SKETCH_BYTES
    total = int(weight.sum())
    n = -(-max(groups, -(-total // GROUP_BYTES)) // groups) * groups
    root = _components(a, b, len(nodes))
    heavy = np.bincount(root, weights=weight, minlength=len(nodes))
    share = total / n
    tops = np.flatnonzero((root == np.arange(len(nodes))) & (heavy <= share))
    tops = tops[np.argsort(-heavy[tops], kind="stable")]
    # the split components' pairs spread evenly: each group starts with its part of them
    spread = (total - float(heavy[tops].sum())) / n
    loads = [(spread, g) for g in range(n)]
    group_of_top = np.zeros(len(nodes), dtype=np.int64)
    for top, w in zip(tops.tolist(), heavy[tops].tolist(), strict=True):
        load, g = heapq.heappop(loads)
        group_of_top[top] = g
        heapq.heappush(loads, (load + w, g))
    later = distinct(j)
    at = np.searchsorted(nodes, later)
    whole = heavy[root[at]] <= share
    group = np.where(whole, group_of_top[root[at]], later % n)
    return later, group.astype(np.int64), n


def _components(a: I64, b: I64, n: int) -> I64:
    """Each of ``n`` nodes' component under the edges ``a - b``, named by its smallest node:
    the smallest label of either end taken by both until none changes, each round's labels
    followed to their end (pointer jumping)."""
    label = np.arange(n, dtype=np.int64)
    while True:
        low = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        while True:
            further = new[new]
            if np.array_equal(further, new):
                break
            new = further
        if np.array_equal(new, label):
            return label
        label = new


class Grouped:
    """:func:`verify_pairs` for pairs known on the driver (``i, j, ni, nj``): the pairs of
    each later document go to one of at least ``groups`` groups (:func:`pair_groups`: the
    copies of a story together), each sketch they need travels once to each group that
    needs it (a broadcast join gives it a row per group), and the group verifies its pairs
    there. The grouped sketches are persisted: :meth:`verify` of a part of the pairs (a
    template round's pairs at risk) is one pass over them, no shuffle.

    A sketch travels with its text where verify may read it: the pair is compared as titles
    or both texts are short (:data:`~neardup.engine.verify.CHARACTER_UNITS`), or one side
    has two figures or more (``numbers``: sorted positions and how many figures each has;
    None: always), or it is the later document and has a figure (for the copy decision), a
    numeral or quoted lines — a superset of where the texts travel in :func:`verify_pairs`."""

    def __init__(
        self,
        spark: SparkSession,
        pairs: tuple[I64, I64, I64, I64],
        sketches: DataFrame,
        numbers: tuple[I64, I64] | None,
        cfg: DedupConfig,
        groups: int,
    ) -> None:
        import pyarrow as pa
        from pyspark.sql import functions as F
        from pyspark.storagelevel import StorageLevel

        self.spark, self.cfg = spark, cfg
        i, j, ni, nj = pairs
        self.size = len(i)
        self.later, self.later_group, n_groups = pair_groups(i, j, ni, nj, groups)
        self.n_groups = n_groups
        self.keys = keys = np.asarray(partition_keys(n_groups), dtype=np.int32)
        group = self._group(j)
        text = (np.minimum(ni, nj) < cfg.short_units) | (np.maximum(ni, nj) < CHARACTER_UNITS)
        if numbers is None:
            text |= True
            later = text
        else:
            pos, count = numbers
            later_count = count[np.searchsorted(pos, j)]
            text |= np.maximum(count[np.searchsorted(pos, i)], later_count) >= 2
            later = text | (later_count >= 1)  # a figure it may not repeat: for the copy
        # each (document, group) once, with whether it carries its text, or does if quoted
        code = np.concatenate([i * n_groups + group, j * n_groups + group])
        always = np.concatenate([text, later])
        quoted = np.concatenate([np.zeros(len(i), dtype=np.bool_), ~later])
        order = np.lexsort((~always, code))
        code, always, quoted = code[order], always[order], quoted[order]
        first = np.r_[True, code[1:] != code[:-1]] if len(code) else np.zeros(0, dtype=np.bool_)
        # the first row of a code has its text if any row has (sorted so); quoted if any is
        quoted_any = np.maximum.reduceat(quoted, np.flatnonzero(first)) if len(code) else quoted
        needs = pa.table(
            {
                "_pos": pa.array(code[first] // n_groups, pa.int64()),
                "_g": pa.array(keys[code[first] % n_groups], pa.int32()),
                "_t": pa.array(always[first], pa.bool_()),
                "_q": pa.array(quoted_any.astype(np.bool_), pa.bool_()),
            }
        )
        # the later text where it has quoted lines (verify sets them aside for the copy
        # decision: engine.verify.has_quotes, the same lines in Java's regex) or a numeral
        # (engine.verify.numbers_kept reads where the numbers changed)
        has_quotes = F.col("_ptext").rlike("(?md)" + QUOTE_START)
        has_numeral = F.col("_ptext").rlike(f"[{NUMERALS}]")
        carried = F.when(F.col("_t") | (F.col("_q") & (has_quotes | has_numeral)), F.col("_ptext"))
        self.frame = (
            sketches.select("_pos", *_SKETCH_COLS)
            .join(F.broadcast(frame_of(spark, needs)), "_pos")
            .withColumn("_ptext", carried)
            .select("_g", "_pos", *_SKETCH_COLS)
            .repartition(n_groups, F.col("_g"))
            .persist(StorageLevel.MEMORY_AND_DISK)
        )

    def verify(self, pairs: tuple[I64, I64], table: Table | None) -> pa.Table:
        """The same-story verdicts (:data:`VERDICT_SCHEMA`) of the pairs ``i, j`` (all of
        them, or some, of those it was made for), on the driver: each later document's pairs
        earliest first, up to its first copy — the later pairs cannot be its best match and
        are not verified (as the engine's :func:`~neardup.engine.best_match`), so give every
        pair of each later document it is to verify."""
        import pyarrow as pa
        from pyspark.sql import functions as F

        i, j = pairs
        n_groups, keys, cfg = self.n_groups, self.keys, self.cfg
        work = [(i[take], j[take]) for take in split_by(self._group(j), n_groups)]
        shared = self.spark.sparkContext.broadcast((work, table))
        frame = self.frame
        if len(i) < self.size:
            # a template round's pairs at risk (a few): only the rows they need leave the
            # JVM (a semi join on the broadcast needs keeps each row where it is)
            need = [union(a, b) for a, b in work]
            needs = pa.table(
                {
                    "_g": pa.array(np.repeat(keys, [len(n) for n in need]), pa.int32()),
                    "_pos": pa.array(np.concatenate(need), pa.int64()),
                }
            )
            frame = frame.join(
                F.broadcast(frame_of(self.spark, needs)), ["_g", "_pos"], "left_semi"
            )
        limit, passage = cfg.common_after, cfg.chrome_passage
        group_of = {int(key): g for g, key in enumerate(keys)}

        def check(batches: Batches) -> Iterator[pa.RecordBatch]:
            import pyarrow as pa

            todo, guard_table = shared.value
            schema = arrow_schema(VERDICT_SCHEMA)
            found: dict[int, dict[int, Sketch]] = {}
            # every row is needed: the frame holds the sketches of all its pairs, and a
            # round's pairs at risk came through the semi join above
            for batch in batches:
                for row in batch.to_pylist():
                    found.setdefault(group_of[row["_g"]], {})[row["_pos"]] = from_row(row, "_")
            buckets = slot_buckets(guard_table[0]) if guard_table is not None and found else None
            for g, sketch_of in found.items():
                out: dict[str, list[Any]] = {name: [] for name in schema.names}
                # each later document's pairs earliest first, up to the first copy (as the
                # engine's best_match: the rest cannot be its best match)
                later, earlier = todo[g][1], todo[g][0]
                order = np.lexsort((earlier, later))
                copied = -1
                for a_pos, b_pos in zip(
                    later[order].tolist(), earlier[order].tolist(), strict=True
                ):
                    if a_pos == copied:
                        continue
                    guard = None
                    if guard_table is not None:
                        slot_ids, firsts, seconds = guard_table
                        guard = TemplateTable(
                            slot_ids,
                            firsts,
                            at=a_pos,
                            limit=limit,
                            seconds=seconds,
                            passage=passage,
                            buckets=buckets,
                        )
                    v = verify(sketch_of[a_pos], sketch_of[b_pos], cfg, guard)
                    if v.is_duplicate:
                        _add_verdict(out, b_pos, a_pos, v)
                        if v.is_copy:
                            copied = a_pos
                if out["i"]:
                    yield pa.RecordBatch.from_pydict(out, schema=schema)

        out = to_arrow(frame.mapInArrow(check, VERDICT_SCHEMA))
        shared.destroy()
        return out

    def _group(self, j: I64) -> I64:
        """The group of each later document ``j`` (of the pairs it was made for)."""
        out: I64 = self.later_group[np.searchsorted(self.later, j)]
        return out

    def unpersist(self) -> None:
        self.frame.unpersist()


#: The best match of each later document: :func:`best_matches`.
LINK_SCHEMA = (
    "_pos long, _parent long, _score double, _measure string, _copy boolean, _story boolean"
)


def best_matches(verdicts: DataFrame, n_parts: int) -> DataFrame:
    """For each later document ``j``, its match as the engine picks it
    (:func:`~neardup.engine.best_of`: its earliest copy, else its highest score, the
    earliest ``i`` on ties): ``_pos, _parent, _score`` (the copy score for a copy), ``_measure``,
    ``_copy``, and ``_story``: whether ``j`` counts as a story for the template guard
    (:func:`~neardup.engine.counts_as_story`)."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        names = ["j", "i", "score", "measure", "copy", "is_copy", "repeated"]
        cols = sorted_rows(batches, names)
        if not cols:
            return
        j, i, score, measure, copy, is_copy, repeated = cols
        copies = is_copy.astype(np.bool_)
        scores = np.where(copies, copy, score).astype(np.float64)
        rows = best_of(j.astype(np.int64), i.astype(np.int64), scores, copies)
        story = stories(copies[rows], repeated[rows].astype(np.float64))
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(j[rows].astype(np.int64)),
                pa.array(i[rows].astype(np.int64)),
                pa.array(scores[rows]),
                pa.array(measure[rows].tolist(), type=pa.string()),
                pa.array(copies[rows]),
                pa.array(story),
            ],
            schema=arrow_schema(LINK_SCHEMA),
        )

    return verdicts.repartition(n_parts, "j").mapInArrow(run, LINK_SCHEMA)
