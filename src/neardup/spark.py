"""Deduplicate a Spark DataFrame with the same decisions as :func:`~neardup.deduper.dedup_batch`.

For corpora bigger than one machine: the batch pipeline as Spark stages.

1. **check**: rows with a null, non-string, empty or whitespace-only text, a null id, or an id
   already used by an earlier usable row go to the errors frame, each with its reason.
2. **sketch**: :func:`~neardup.engine.make_sketches` on Arrow batches (``mapInArrow``); a
   byte-identical copy of an earlier text is a duplicate of its first copy (``identical``).
3. **candidates**: one aggregation on (band, band key); within a bucket, sorted by input
   position, each of the first ``bucket_cap`` documents pairs with every later one, exactly as
   :func:`~neardup.index.lsh.lsh_join` does.
4. **verify**: a cheap pass on 16-bit signature prefixes drops the pairs the engine's MinHash
   prefilter would drop (it keeps a superset, never loses one), then
   :func:`~neardup.engine.verify` on both full sketches. The local engine's template guard
   counts a shingle once it has been seen in ``common_after`` *kept* stories earlier in the
   input, so a verdict depends on which earlier documents were kept. Spark computes, for every
   shingle slot, the input position of the ``common_after``-th kept document containing it,
   verifies with those positions, recomputes the kept set, and repeats on the pairs whose
   guard changed until nothing changes. Position ``p``'s decision depends only on earlier
   positions, so the fixed point is unique and is the local engine's answer. The rounds
   are cheap: only original documents count (a byte-identical copy is never kept), and a
   document that is the later one of no passed pair is kept in every round, so each slot
   keeps its memberships up to its ``common_after``-th such document, once, partitioned by
   slot (:func:`_guard_rows`); a round drops the duplicates found and takes the
   ``common_after``-th position of each slot in place, without a shuffle.
5. **clusters**: each duplicate links to its best earlier match; clusters are the connected
   components of those links, found with the large-star / small-star iteration in Spark
   (:func:`connected_components`); ``keep`` chooses the document kept for each.

The input order is the frame's own (``monotonically_increasing_id`` of the frame as given) or
``order_col``. Nothing per document is collected on the driver except the counts of the run
and the table of template shingles (12 bytes per shingle slot that reaches ``common_after``
kept stories).

PySpark is an optional dependency: ``pip install 'neardup[spark]'``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .engine import Decision, DedupConfig, KeepPolicy, Sketch, make_sketches, text_key, verify
from .engine.templates import TemplateTable
from .errors import ConfigError, InputError, MissingDependencyError
from .records import BadRecord, Document, Fields, LineWriter, UniqueWriter
from .run import RunResult, RunSummary, Tally, cluster_line, output_names

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "SparkResult",
    "connected_components",
    "dedup",
    "require_pyspark",
    "run_cli",
    "spark_session",
]

I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]
Batches = Iterable["pa.RecordBatch"]
BatchFn = Callable[[Batches], Iterator["pa.RecordBatch"]]

#: The template guard's table: CommonShingles(bits=26) indexes its counts by code >> 6.
_COMMON_SHIFT = 32 - 26
#: Bits of each MinHash value kept for the cheap prefilter pass (a superset of its passes).
_LIGHT_BITS = 16
_NO_POSITION = np.iinfo(np.int64).max
#: Up to this many pairs, their positions are broadcast to pick the sketches to join.
_BROADCAST_PAIRS = 2_000_000

INSTALL_HINT = "the Spark engine needs PySpark: pip install 'neardup[spark]'"


def require_pyspark() -> None:
    """Raise :class:`MissingDependencyError` (saying what to install) without PySpark."""
    try:
        import pyarrow  # noqa: F401
        import pyspark
        import pyspark.sql  # noqa: F401
    except ImportError as e:
        raise MissingDependencyError(f"{INSTALL_HINT} ({e})") from None


def spark_session(
    master: str = "local[*]", *, app_name: str = "neardup", conf: dict[str, str] | None = None
) -> SparkSession:
    """A SparkSession for ``master`` (an existing session is reused, as Spark does)."""
    require_pyspark()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {"spark.ui.showConsoleProgress": "false", **(conf or {})}
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SparkResult:
    """What :func:`dedup` returns.

    ``clusters``: one row per usable input row — ``id``, ``cluster`` (the id kept for its
    story), ``duplicate_of`` (the id it matched best, null when kept), ``score`` (0.0 when
    kept), ``measure`` (null when kept) and ``position`` (its place in the input order,
    0-based). ``errors``: one row per unusable input row — ``position``, ``id`` (null when
    it has none) and ``reason``. Every input row is in exactly one of the two. ``stats``:
    the counts and stage times of the run (candidate pairs, verification rounds, ...).
    """

    clusters: DataFrame
    errors: DataFrame
    stats: dict[str, Any] = field(default_factory=dict)


# -- the pipeline --------------------------------------------------------------------------------


def dedup(
    df: DataFrame,
    *,
    id_col: str = "id",
    text_col: str = "text",
    title_col: str | None = None,
    timestamp_col: str | None = None,
    order_col: str | None = None,
    config: DedupConfig | None = None,
    keep: KeepPolicy = "first",
    max_rounds: int = 10,
    partitions: int | None = None,
) -> SparkResult:
    """Deduplicate the rows of ``df`` (one document per row) as ``dedup_batch`` would.

    ``text_col`` is compared; ``id_col`` (strings or numbers) names each row in the result.
    ``title_col``, when given, is carried into ``clusters`` as ``title`` (the local engine
    compares texts only; pass ``text_col=<the title column>`` to deduplicate titles).
    ``timestamp_col`` (a timestamp, a date or seconds since the epoch) is what
    ``keep="earliest"`` looks at. ``order_col`` fixes the input order (smallest first; ties
    broken arbitrarily); without it the frame's own order is used. ``max_rounds`` bounds the
    template-guard iteration (``stats["converged"]`` says whether it reached the fixed point,
    which takes two or three rounds on news). ``partitions``: how many partitions to sketch
    in (default ``spark.sql.shuffle.partitions``). The result's frames are cached; call
    ``unpersist()`` on them when done.

    >>> result = dedup(spark.read.parquet("crawl/"), id_col="url", text_col="body")  # doctest: +SKIP
    >>> result.clusters.filter("duplicate_of IS NULL").count()  # doctest: +SKIP
    """
    require_pyspark()
    for name, col in (
        ("id_col", id_col),
        ("text_col", text_col),
        ("title_col", title_col),
        ("timestamp_col", timestamp_col),
        ("order_col", order_col),
    ):
        if col is not None and col not in df.columns:
            raise ConfigError(
                f"{name}={col!r} is not a column of the frame; its columns are {df.columns}"
            )
    checked = _checked(df, id_col, text_col, title_col, timestamp_col, order_col)
    prepared = _with_position(checked, order_by="_order" if order_col is not None else None)
    return _pipeline(
        df.sparkSession,
        prepared,
        config=config,
        keep=keep,
        max_rounds=max_rounds,
        partitions=partitions,
        where="position",
    )


def _checked(
    df: DataFrame,
    id_col: str,
    text_col: str,
    title_col: str | None,
    timestamp_col: str | None,
    order_col: str | None = None,
    carry: Sequence[str] = (),
) -> DataFrame:
    """``_id, _text, _title, _ts, _problem`` (null when the row is usable) for each row,
    and the ``carry`` columns as they are."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType, StringType

    text_type = df.schema[text_col].dataType
    text = F.col(text_col)
    if isinstance(text_type, StringType):
        text_problem = (
            F.when(text.isNull(), F.lit(f"{text_col!r} is null"))
            .when(F.length(text) == 0, F.lit(f"{text_col!r} is empty"))
            .when(_blank(text), F.lit(f"{text_col!r} is only whitespace"))
        )
        text_value = text
    else:
        text_problem = F.lit(f"{text_col!r} must be a string, not {text_type.simpleString()}")
        text_value = F.lit(None).cast("string")
    id_type = df.schema[id_col].dataType
    raw_id = F.col(id_col)
    if isinstance(id_type, StringType | NumericType):
        ident = raw_id.cast("string")
        id_problem = F.when(raw_id.isNull(), F.lit(f"{id_col!r} is null")).when(
            ident == "", F.lit(f"{id_col!r} is empty")
        )
    else:
        ident = F.lit(None).cast("string")
        id_problem = F.lit(f"{id_col!r} must be a string or a number, not {id_type.simpleString()}")
    ts = F.lit(None).cast("double")
    if timestamp_col is not None:
        tcol = F.col(timestamp_col)
        kind = df.schema[timestamp_col].dataType.simpleString()
        if kind.startswith("timestamp") or kind == "date":
            ts = F.unix_micros(tcol.cast("timestamp")) / 1e6
        else:
            ts = tcol.cast("double")
    title = F.col(title_col).cast("string") if title_col is not None else F.lit(None)
    problem = F.concat_ws("; ", id_problem, text_problem)
    return df.select(
        ident.alias("_id"),
        text_value.alias("_text"),
        title.cast("string").alias("_title"),
        ts.cast("double").alias("_ts"),
        F.when(problem == "", None).otherwise(problem).alias("_problem"),
        *([F.col(order_col).alias("_order")] if order_col is not None else []),
        *carry,
    )


def _blank(text: Column) -> Column:
    """Whether a string holds only whitespace (Unicode whitespace, as ``str.strip`` sees it)."""
    from pyspark.sql import functions as F

    return F.length(F.regexp_replace(text, r"(?U)\s+", "")) == 0


def _with_position(df: DataFrame, *, order_by: str | None = None) -> DataFrame:
    """``df`` with ``_pos``: 0, 1, 2... in the frame's order (or sorted by ``order_by``),
    numbered where the rows are (one small job counts each partition's rows). The result
    is checkpointed: the numbers must not change if the frame were computed again.

    The pipeline checkpoints (rather than caches) the frames it reuses: a cached frame's plan
    is printed inside every plan that reads it, and those descriptions grow past the
    driver's memory on a plan as deep as this one."""
    from pyspark.sql import functions as F
    from pyspark.storagelevel import StorageLevel

    if order_by is not None:
        df = df.orderBy(order_by).drop(order_by)
    tagged = (
        df.withColumn("_pid", F.spark_partition_id())
        .withColumn("_mid", F.monotonically_increasing_id())
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    counts = sorted((r[0], r[1]) for r in tagged.groupBy("_pid").count().collect())
    offsets, total = [], 0
    for pid, n in counts:
        offsets.append((pid, total))
        total += n
    table = df.sparkSession.createDataFrame(offsets or [(0, 0)], "_pid int, _offset long")
    # monotonically_increasing_id is (partition index << 33) + the row's place in it
    within = F.col("_mid") - F.shiftleft(F.col("_pid").cast("long"), 33)
    numbered = (
        tagged.join(F.broadcast(table), "_pid")
        .withColumn("_pos", F.col("_offset") + within)
        .drop("_pid", "_mid", "_offset")
        .localCheckpoint()
    )
    tagged.unpersist()
    return numbered


def _pipeline(
    spark: SparkSession,
    prepared: DataFrame,
    *,
    config: DedupConfig | None,
    keep: KeepPolicy,
    max_rounds: int,
    partitions: int | None,
    where: str,
) -> SparkResult:
    """The stages on ``_pos, _id, _text, _title, _ts, _problem`` (null problem: usable).

    ``where`` names positions in messages: "line" (shown 1-based) or "position" (0-based).
    """
    from pyspark.sql import functions as F
    from pyspark.storagelevel import StorageLevel

    cfg = config if config is not None else DedupConfig()
    if keep not in ("first", "longest", "earliest"):
        raise ConfigError(f"keep must be 'first', 'longest' or 'earliest', got {keep!r}")
    if max_rounds < 1:
        raise ConfigError(f"max_rounds must be at least 1, got {max_rounds}")
    n_parts = partitions or int(spark.conf.get("spark.sql.shuffle.partitions") or 200)
    disk = StorageLevel.MEMORY_AND_DISK
    timings: dict[str, float] = {}
    stats: dict[str, Any] = {"timings": timings}
    shift = 1 if where == "line" else 0

    # -- check: every problem, and repeated ids (the first usable row keeps its id) ----------
    t0 = time.perf_counter()
    ids = prepared.filter(F.col("_id").isNotNull()).select(
        "_id", "_pos", F.col("_problem").isNull().alias("_ok")
    )
    repeated = (
        ids.groupBy("_id")
        .agg(F.count("*").alias("_n"), F.min(F.when(F.col("_ok"), F.col("_pos"))).alias("_first"))
        .filter((F.col("_n") > 1) & F.col("_first").isNotNull())
        .select("_id", "_first")
    )
    shown = F.when(F.length("_id") > 60, F.concat(F.substring("_id", 1, 60), F.lit("…")))
    note = F.when(
        F.col("_first") < F.col("_pos"),
        F.concat(
            F.lit("repeated id '"),
            F.coalesce(shown, F.col("_id")),
            F.lit(f"', first on {where} "),
            (F.col("_first") + shift).cast("string"),
        ),
    )
    checked = (
        prepared.join(repeated, "_id", "left")
        .withColumn("_problem", F.concat_ws("; ", "_problem", note))
        .withColumn("_problem", F.when(F.col("_problem") != "", F.col("_problem")))
        .localCheckpoint()
    )
    errors = (
        checked.filter(F.col("_problem").isNotNull())
        .select(
            (F.col("_pos") + shift).alias(where),
            F.col("_id").alias("id"),
            F.col("_problem").alias("reason"),
        )
        .persist(disk)
    )
    usable = checked.filter(F.col("_problem").isNull())
    stats["errors"] = errors.count()
    timings["check"] = time.perf_counter() - t0

    # -- sketch: the engine's own code on Arrow batches -------------------------------------
    t0 = time.perf_counter()
    sketches = (
        usable.select("_pos", "_text")
        .repartition(n_parts, "_pos")
        .mapInArrow(_sketch_batches(cfg), _SKETCH_SCHEMA)
        .localCheckpoint()
    )
    docs = usable.select("_pos", "_id", "_title", "_ts").join(
        sketches.select("_pos", "_tkey", "_n", "_chars"), "_pos"
    )
    firsts = docs.groupBy("_tkey").agg(F.min("_pos").alias("_first"))
    docs = docs.join(firsts, "_tkey").drop("_tkey").localCheckpoint()
    stats["documents"] = docs.count()
    timings["sketch"] = time.perf_counter() - t0

    # -- candidates: one aggregation on (band, key), bucket_cap as lsh_join -----------------
    t0 = time.perf_counter()
    live = docs.filter((F.col("_first") == F.col("_pos")) & (F.col("_n") > 0)).select("_pos", "_n")
    buckets = (
        sketches.select("_pos", "_bands")
        .join(live, "_pos")
        .select("_pos", "_n", F.posexplode("_bands").alias("_b", "_k"))
        .groupBy("_b", "_k")
        .agg(F.array_sort(F.collect_list(F.struct("_pos", "_n"))).alias("_m"))
        .filter(F.size("_m") > 1)
    )
    after = F.slice("_m", F.col("_p") + 2, F.size("_m") - F.col("_p") - 1)
    pairs = (
        buckets.select("_m", F.posexplode("_m").alias("_p", "_x"))
        .filter(F.col("_p") < cfg.bucket_cap)
        .select("_x", F.explode(after).alias("_y"))
        .select(
            F.col("_x._pos").alias("i"),
            F.col("_x._n").alias("ni"),
            F.col("_y._pos").alias("j"),
            F.col("_y._n").alias("nj"),
        )
        .distinct()
        .persist(disk)
    )
    stats["candidate_pairs"] = pairs.count()
    timings["candidates"] = time.perf_counter() - t0

    # -- verify: a cheap MinHash pass, then the engine's verify; iterate the template guard --
    t0 = time.perf_counter()
    light = sketches.select("_pos", "_nv", "_light")
    passed = (
        pairs.join(light.toDF("i", "nvi", "li"), "i")
        .join(light.toDF("j", "nvj", "lj"), "j")
        .mapInArrow(_prefilter_batches(cfg), _PAIR_SCHEMA)
        .persist(disk)
    )
    stats["prefiltered_pairs"] = passed.count()
    timings["prefilter"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    originals = docs.filter(F.col("_first") == F.col("_pos")).select("_pos")
    later = passed.select(F.col("j").alias("_pos")).distinct()
    guard = _guard_rows(spark, sketches, originals, later, cfg, n_parts, stats)
    table = _template_table(guard.filter("_keep AND _sure"), cfg)
    timings["templates"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    few = stats["prefiltered_pairs"] <= _BROADCAST_PAIRS
    verdicts = _verify_pairs(spark, passed, sketches, table, cfg, few_pairs=few)
    verdicts = verdicts.localCheckpoint()
    slot_lists: DataFrame | None = None
    # verdicts hold at most the passed pairs: their later documents broadcast when few
    few_removed = few
    rounds, converged = 1, cfg.common_after <= 0
    while not converged:
        removed = verdicts.select(F.col("j").alias("_pos")).distinct()
        kept = guard.filter("_keep").join(
            F.broadcast(removed) if few_removed else removed, "_pos", "left_anti"
        )
        if not few_removed:  # a shuffle join loses the partitioning by slot
            kept = kept.repartition(n_parts, "slot")
        new_table = _template_table(kept, cfg)
        if _same_table(table, new_table):
            converged = True
            break
        if rounds >= max_rounds:
            break
        if slot_lists is None:
            slot_lists = (
                guard.filter("_vol")
                .groupBy("_pos")
                .agg(F.collect_list("slot").alias("_s"))
                .persist(disk)
            )
        at_risk = _pairs_at_risk(spark, passed, slot_lists, table, new_table)
        few = at_risk.count() <= _BROADCAST_PAIRS
        redone = _verify_pairs(spark, at_risk, sketches, new_table, cfg, few_pairs=few)
        verdicts = (
            verdicts.join(at_risk.select("i", "j"), ["i", "j"], "left_anti")
            .unionByName(redone)
            .localCheckpoint()
        )
        table = new_table
        rounds += 1
    stats["rounds"] = rounds
    stats["converged"] = converged
    stats["template_slots"] = len(table[0])
    best = F.max(F.struct("score", (-F.col("i")).alias("neg_i"), "measure"))
    parents = (
        verdicts.groupBy("j")
        .agg(best.alias("_best"))
        .select(
            F.col("j").alias("_pos"),
            (-F.col("_best.neg_i")).alias("_parent"),
            F.col("_best.score").alias("_score"),
            F.col("_best.measure").alias("_measure"),
        )
    )
    copies = docs.filter(F.col("_first") != F.col("_pos")).select(
        "_pos",
        F.col("_first").alias("_parent"),
        F.lit(1.0).alias("_score"),
        F.lit("identical").alias("_measure"),
    )
    links = parents.unionByName(copies).persist(disk)
    stats["linked"] = links.count()
    timings["verify"] = time.perf_counter() - t0

    # -- clusters: connected components of the links; keep one document each ----------------
    t0 = time.perf_counter()
    components = connected_components(links, src="_pos", dst="_parent")
    members = (
        docs.join(components.toDF("_pos", "_component"), "_pos", "left")
        .withColumn("_root", F.coalesce("_component", "_pos"))
        .drop("_component")
    )
    if keep == "first":
        label = members.select("_root", F.col("_root").alias("_kept")).distinct()
    elif keep == "longest":
        longest = F.max(F.struct("_chars", (-F.col("_pos")).alias("neg")))
        label = members.groupBy("_root").agg(longest.alias("_b"))
        label = label.select("_root", (-F.col("_b.neg")).alias("_kept"))
    else:
        earliest = F.min(F.struct(F.col("_ts").isNull().alias("none"), "_ts", "_pos"))
        label = members.groupBy("_root").agg(earliest.alias("_b"))
        label = label.select("_root", F.col("_b._pos").alias("_kept"))
    # checkpointed: the plans below use it twice, and would otherwise grow large
    decided = members.join(label, "_root").join(links, "_pos", "left").localCheckpoint()
    # the first of a cluster whose longest or earliest copy is kept is matched to that copy
    orphans = decided.filter(F.col("_parent").isNull() & (F.col("_pos") != F.col("_kept")))
    rescored = _verify_pairs(
        spark,
        orphans.select(F.col("_pos").alias("j"), F.col("_kept").alias("i")),
        sketches,
        None,
        cfg,
        keep_all=True,
    ).toDF("_k2", "_pos", "_s2", "_m2")
    decided = (
        decided.join(rescored, "_pos", "left")
        .withColumn("_parent", F.coalesce("_parent", "_k2"))
        .withColumn("_score", F.coalesce("_score", "_s2"))
        .withColumn("_measure", F.coalesce("_measure", "_m2"))
    )
    names = docs.select("_pos", "_id")
    is_kept = F.col("_pos") == F.col("_kept")
    clusters = (
        decided.join(names.toDF("_kept", "_cluster_id"), "_kept")
        .join(names.toDF("_parent", "_parent_id"), "_parent", "left")
        .select(
            F.col("_id").alias("id"),
            F.col("_cluster_id").alias("cluster"),
            F.when(~is_kept, F.col("_parent_id")).alias("duplicate_of"),
            F.when(is_kept, F.lit(0.0)).otherwise(F.col("_score")).alias("score"),
            F.when(~is_kept, F.col("_measure")).alias("measure"),
            F.col("_title").alias("title"),
            F.col("_pos").alias("position"),
        )
        .persist(disk)
    )
    stats["kept"] = clusters.filter(F.col("duplicate_of").isNull()).count()
    stats["duplicates"] = stats["documents"] - stats["kept"]
    timings["clusters"] = time.perf_counter() - t0
    for frame in (passed, pairs, guard, slot_lists, links):
        if frame is not None:
            frame.unpersist()
    return SparkResult(clusters, errors, stats)


# -- sketches on Arrow batches ---------------------------------------------------------------

_SKETCH_SCHEMA = (
    "_pos long, _tkey long, _n int, _chars int, _nv int, _ptext string, _sh binary, "
    "_sig binary, _light binary, _bands array<long>, _nums array<string>"
)


def _sketch_batches(cfg: DedupConfig) -> BatchFn:
    """The ``mapInArrow`` function that sketches ``_pos, _text`` batches with the engine."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        for batch in batches:
            if batch.num_rows == 0:
                continue
            pos = batch.column("_pos").to_pylist()
            texts: list[str] = batch.column("_text").to_pylist()
            made = make_sketches(texts, cfg)
            mask = np.uint64((1 << _LIGHT_BITS) - 1)
            yield pa.RecordBatch.from_pydict(
                {
                    "_pos": pos,
                    "_tkey": [_signed(text_key(t)) for t in texts],
                    "_n": [s.n_units for s in made],
                    "_chars": [len(t) for t in texts],
                    "_nv": [len(s.vocab) for s in made],
                    "_ptext": [s.text for s in made],
                    "_sh": [s.shingles.tobytes() for s in made],
                    "_sig": [s.signature.tobytes() for s in made],
                    "_light": [(s.signature & mask).astype(np.uint16).tobytes() for s in made],
                    "_bands": [s.bands.view(np.int64).tolist() for s in made],
                    "_nums": [sorted(s.numbers) for s in made],
                },
                schema=_arrow_schema(_SKETCH_SCHEMA),
            )

    return run


def _signed(value: int) -> int:
    """An unsigned 64-bit value as the signed long Spark stores."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _arrow_schema(ddl: str) -> pa.Schema:
    """The Arrow schema of a simple Spark DDL string (the types this module uses)."""
    import pyarrow as pa

    kinds = {
        "long": pa.int64(),
        "int": pa.int32(),
        "double": pa.float64(),
        "string": pa.string(),
        "binary": pa.binary(),
        "boolean": pa.bool_(),
        "array<long>": pa.list_(pa.int64()),
        "array<int>": pa.list_(pa.int32()),
        "array<string>": pa.list_(pa.string()),
    }
    fields = []
    for part in ddl.split(","):
        name, kind = part.split()
        fields.append(pa.field(name, kinds[kind]))
    return pa.schema(fields)


def _sketch_of(row: dict[str, Any], prefix: str) -> Sketch:
    """A Sketch rebuilt from the columns written by :func:`_sketch_batches`."""
    shingles = np.frombuffer(row[prefix + "sh"], dtype=np.uint32)
    return Sketch(
        text=row[prefix + "ptext"] or "",
        shingles=shingles,
        n_units=row[prefix + "n"],
        signature=np.frombuffer(row[prefix + "sig"], dtype=np.uint64),
        bands=np.zeros(0, dtype=np.uint64),
        vocab=np.unique(shingles),
        numbers=frozenset(row[prefix + "nums"]),
    )


# -- verification -----------------------------------------------------------------------------

_PAIR_SCHEMA = "i long, j long, ni int, nj int"
_VERDICT_SCHEMA = "i long, j long, score double, measure string"


def _prefilter_batches(cfg: DedupConfig) -> BatchFn:
    """Drop the pairs the engine's MinHash prefilter rejects (its containment estimate from
    the share of equal signature values), judging from 16-bit prefixes of the values: equal
    values have equal prefixes, so the estimate can only rise and no pair the engine would
    verify is dropped. Pairs compared as titles always pass."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = _arrow_schema(_PAIR_SCHEMA)
        for batch in batches:
            if batch.num_rows == 0:
                continue

            ni, nj, nvi, nvj = (
                np.asarray(batch.column(name).to_pylist(), dtype=np.float64)
                for name in ("ni", "nj", "nvi", "nvj")
            )
            li = np.frombuffer(b"".join(batch.column("li").to_pylist()), dtype=np.uint16)
            lj = np.frombuffer(b"".join(batch.column("lj").to_pylist()), dtype=np.uint16)
            same = (li == lj).reshape(batch.num_rows, -1).mean(axis=1)
            low = np.minimum(nvi, nvj)
            with np.errstate(divide="ignore", invalid="ignore"):
                est = np.where(low > 0, same * (nvi + nvj) / ((1.0 + same) * low), 0.0)
            title = np.minimum(ni, nj) < cfg.short_units
            keep = np.flatnonzero(title | (np.minimum(est, 1.0) >= cfg.prefilter - 1e-9))
            if len(keep):
                out = batch.select(["i", "j", "ni", "nj"]).take(pa.array(keep))
                yield pa.RecordBatch.from_arrays(list(out.columns), schema=schema)

    return run


#: (sorted slots, input position of the ``common_after``-th kept story holding each)
Table = tuple[I64, I64]


def _verify_pairs(
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
    guard ``table`` as j sees it: the duplicate verdicts (every verdict with ``keep_all``).

    Only pairs compared as titles carry the prepared texts through the join; the coverage
    measure reads shingles, signatures and figures alone. ``few_pairs`` (a few million at
    most) broadcasts their positions so that only the sketches they need are shuffled.
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
    titles = (F.least("i_n", "j_n") < cfg.short_units) | F.lit(keep_all)
    joined = joined.withColumn("i_ptext", F.when(titles, F.col("i_ptext"))).withColumn(
        "j_ptext", F.when(titles, F.col("j_ptext"))
    )
    shared = spark.sparkContext.broadcast(table) if table is not None else None
    limit = cfg.common_after

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = _arrow_schema(_VERDICT_SCHEMA)
        # a document's sketch is rebuilt once per batch side; with or without its text
        cache: dict[tuple[str, int, bool], Sketch] = {}
        for batch in batches:
            out: dict[str, list[Any]] = {"i": [], "j": [], "score": [], "measure": []}
            for row in batch.to_pylist():
                i, j = row["i"], row["j"]
                if len(cache) > 4096:
                    cache.clear()
                ka = ("j", j, row["j_ptext"] is not None)
                kb = ("i", i, row["i_ptext"] is not None)
                a = cache.get(ka) or _sketch_of(row, "j_")
                b = cache.get(kb) or _sketch_of(row, "i_")
                cache[ka], cache[kb] = a, b
                guard = None
                if shared is not None:
                    slots, firsts = shared.value
                    guard = TemplateTable(slots, firsts, at=j, limit=limit)
                v = verify(a, b, cfg, guard)
                if v.is_duplicate or keep_all:
                    out["i"].append(i)
                    out["j"].append(j)
                    out["score"].append(float(v.score))
                    out["measure"].append(v.measure)
            if out["i"]:
                yield pa.RecordBatch.from_pydict(out, schema=schema)

    return joined.mapInArrow(run, _VERDICT_SCHEMA)


# -- the template guard ------------------------------------------------------------------------


def _slots_of(blob: bytes) -> I64:
    """The distinct template-guard slots of a document's shingle codes."""
    codes = np.frombuffer(blob, dtype=np.uint32)
    return np.unique((codes >> np.uint32(_COMMON_SHIFT)).astype(np.int64))


def _common_candidates(docs: DataFrame, cfg: DedupConfig) -> I64:
    """Slots found in ``common_after`` or more of ``docs`` (``_sh``; sorted): given the
    original documents, a superset of the slots the guard can ever count as common,
    whichever of them are kept (a byte-identical copy is never kept)."""
    from pyspark.sql import functions as F

    if cfg.common_after <= 0:
        return np.zeros(0, dtype=np.int64)

    def count(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        parts = [_slots_of(blob) for batch in batches for blob in batch.column("_sh").to_pylist()]
        if not parts:
            return
        slots, counts = np.unique(np.concatenate(parts), return_counts=True)
        step = 1 << 20
        for lo in range(0, len(slots), step):
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(slots[lo : lo + step].astype(np.int32)),
                    pa.array(counts[lo : lo + step].astype(np.int32)),
                ],
                names=["slot", "n"],
            )

    found = (
        docs.select("_sh")
        .mapInArrow(count, "slot int, n int")
        .groupBy("slot")
        .agg(F.sum("n").alias("n"))
        .filter(F.col("n") >= cfg.common_after)
        .select("slot")
    )
    return np.sort(_column(found, "slot"))


def _column(df: DataFrame, name: str) -> I64:
    """One integer column of a (small) frame as a numpy array, through Arrow."""
    frame: Any = df  # Spark 4 has toArrow; 3.5 a private equivalent
    table: Any = frame.toArrow() if hasattr(frame, "toArrow") else frame._collect_as_arrow()
    if isinstance(table, list):  # Spark 3.5 returns record batches
        import pyarrow as pa

        table = pa.Table.from_batches(table) if table else None
    if table is None or table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(table.column(name).to_numpy(), dtype=np.int64)


_SLOT_ROWS_SCHEMA = "slot int, _pos long, _sure boolean"
_GUARD_SCHEMA = "slot int, _pos long, _sure boolean, _keep boolean, _vol boolean"
_FIRSTS_SCHEMA = "slot long, first long"


def _guard_rows(
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
    the candidate slots of :func:`_common_candidates`. A document that is the later one of
    no passed pair (``_sure``) is kept whatever the verdicts, so a slot's table entry is
    never after ``t``, the position of its ``common_after``-th sure document: the rows after
    ``t`` never matter and are dropped (``_keep`` marks the rest). A slot is volatile
    (``_vol``: its entry may change between rounds) when an unsure document comes before
    ``t``; all its rows are kept for the lists of :func:`_pairs_at_risk`.
    """
    from pyspark.sql import functions as F
    from pyspark.storagelevel import StorageLevel

    if cfg.common_after <= 0:
        stats["template_candidates"] = 0
        return spark.createDataFrame([], _GUARD_SCHEMA)
    flags = originals.join(later.withColumn("_u", F.lit(True)), "_pos", "left").persist()
    small = stats["documents"] <= _BROADCAST_PAIRS
    docs = sketches.select("_pos", "_sh").join(F.broadcast(flags) if small else flags, "_pos")
    candidates = _common_candidates(docs, cfg)
    stats["template_candidates"] = len(candidates)
    common = spark.sparkContext.broadcast(candidates)
    rows = (
        docs.mapInArrow(_slot_rows(common), _SLOT_ROWS_SCHEMA)
        .repartition(n_parts, "slot")
        .mapInArrow(_trim_rows(cfg.common_after), _GUARD_SCHEMA)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    stats["template_rows"] = rows.count()
    flags.unpersist()
    common.destroy()
    return rows


def _slot_rows(common: Any) -> BatchFn:
    """Each document's distinct slots among the broadcast candidates, one row each, with
    whether the document is sure to be kept (``_u`` null: the later one of no pair)."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        cand: I64 = common.value
        schema = _arrow_schema(_SLOT_ROWS_SCHEMA)
        if len(cand) == 0:
            return
        for batch in batches:
            if batch.num_rows == 0:
                continue
            pos = np.asarray(batch.column("_pos").to_numpy(), dtype=np.int64)
            sure = np.asarray(batch.column("_u").is_null().to_numpy(zero_copy_only=False))
            found = []
            for blob in batch.column("_sh").to_pylist():
                slots = _slots_of(blob)
                at = np.minimum(np.searchsorted(cand, slots), len(cand) - 1)
                found.append(slots[cand[at] == slots])
            counts = [len(f) for f in found]
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(np.concatenate(found).astype(np.int32)),
                    pa.array(np.repeat(pos, counts)),
                    pa.array(np.repeat(sure, counts)),
                ],
                schema=schema,
            )

    return run


def _sorted_rows(batches: Batches, names: Sequence[str]) -> list[npt.NDArray[Any]]:
    """The columns ``names`` of a whole partition, sorted by (slot, _pos); empty when it
    has no rows."""
    cols: list[list[npt.NDArray[Any]]] = [[] for _ in names]
    for batch in batches:
        for k, name in enumerate(names):
            cols[k].append(batch.column(name).to_numpy(zero_copy_only=False))
    if not cols[0] or sum(len(c) for c in cols[0]) == 0:
        return []
    out = [np.concatenate(c) for c in cols]
    order = np.lexsort((out[1], out[0]))
    return [c[order] for c in out]


def _groups(slot: I64) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """For sorted slots: each group's start and size, and each row's group."""
    edge = np.ones(len(slot), dtype=np.bool_)
    edge[1:] = slot[1:] != slot[:-1]
    starts = np.flatnonzero(edge)
    sizes = np.diff(np.append(starts, len(slot)))
    return starts, sizes, np.cumsum(edge) - 1


def _trim_rows(limit: int) -> BatchFn:
    """The ``mapInArrow`` function of :func:`_guard_rows` on a partition of whole slots."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        cols = _sorted_rows(batches, ["slot", "_pos", "_sure"])
        if not cols:
            return
        slot, pos, sure = cols[0].astype(np.int64), cols[1].astype(np.int64), cols[2]
        sure = sure.astype(np.bool_)
        starts, sizes, group = _groups(slot)
        done = np.cumsum(sure)  # sure rows up to and including each row
        rank = done - (done[starts] - sure[starts])[group]
        ends = np.full(len(starts), _NO_POSITION, dtype=np.int64)
        at = np.flatnonzero(sure & (rank == limit))
        ends[group[at]] = pos[at]
        end = ends[group]
        reach = (sizes >= limit)[group]
        keep = reach & (pos <= end)
        vol_group = np.zeros(len(starts), dtype=np.bool_)
        vol_group[group[~sure & (pos < end)]] = True
        vol = reach & vol_group[group]
        out = np.flatnonzero(keep | vol)
        schema = _arrow_schema(_GUARD_SCHEMA)
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


def _template_table(rows: DataFrame, cfg: DedupConfig) -> Table:
    """For each slot held by ``common_after`` of the documents in ``rows`` (``slot, _pos``,
    partitioned by slot: the kept documents' rows of :func:`_guard_rows`), the position of
    the ``common_after``-th of them: from there on the engine counts the slot as a template.
    """
    limit = cfg.common_after
    if limit <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        cols = _sorted_rows(batches, ["slot", "_pos"])
        if not cols:
            return
        slot, pos = cols[0].astype(np.int64), cols[1].astype(np.int64)
        starts, sizes, _ = _groups(slot)
        ok = starts[sizes >= limit]
        yield pa.RecordBatch.from_arrays(
            [pa.array(slot[ok]), pa.array(pos[ok + limit - 1])],
            schema=_arrow_schema(_FIRSTS_SCHEMA),
        )

    found = rows.select("slot", "_pos").mapInArrow(run, _FIRSTS_SCHEMA)
    slots, firsts = _column(found, "slot"), _column(found, "first")
    order = np.argsort(slots, kind="stable")
    return slots[order], firsts[order]


def _same_table(a: Table, b: Table) -> bool:
    return bool(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))


def _pairs_at_risk(
    spark: SparkSession, pairs: DataFrame, slot_lists: DataFrame, old: Table, new: Table
) -> DataFrame:
    """The pairs whose shorter document holds a slot that the later document sees as
    common under one table and not under the other: the only verdicts that can change."""
    from pyspark.sql import functions as F

    every = np.union1d(old[0], new[0])

    def firsts(table: Table) -> I64:
        out = np.full(len(every), _NO_POSITION, dtype=np.int64)
        out[np.searchsorted(every, table[0])] = table[1]
        return out

    before, after = firsts(old), firsts(new)
    differ = before != after
    delta = spark.sparkContext.broadcast((every[differ], before[differ], after[differ]))
    short = F.when(F.col("nj") <= F.col("ni"), F.col("j")).otherwise(F.col("i"))
    joined = pairs.withColumn("_pos", short).join(slot_lists, "_pos")

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.compute as pc

        slots, was, now = delta.value
        schema = _arrow_schema(_PAIR_SCHEMA)
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
            flips = (slots[at] == held) & ((was[at] < j) != (now[at] < j))
            keep = np.unique(row[flips])
            if len(keep):
                out = batch.select(["i", "j", "ni", "nj"]).take(pa.array(keep))
                yield pa.RecordBatch.from_arrays(list(out.columns), schema=schema)

    return joined.mapInArrow(run, _PAIR_SCHEMA).localCheckpoint()


# -- connected components --------------------------------------------------------------------


def connected_components(
    edges: DataFrame, *, src: str = "src", dst: str = "dst", max_iterations: int = 100
) -> DataFrame:
    """The connected components of an undirected graph given as a frame of edges.

    ``src`` and ``dst`` hold integer node ids. Returns ``node, component`` for every node on
    an edge, ``component`` being the smallest node of its component. This is the large-star
    / small-star iteration of Kiveris et al., "Connected Components in MapReduce and Beyond"
    (2014), in Spark joins and aggregations: nothing is collected on the driver, and each
    round's edges are checkpointed so the plan stays short. Isolated nodes are not listed.
    """
    require_pyspark()
    from pyspark.sql import functions as F

    u, v, m = F.col("u"), F.col("v"), F.col("m")
    e = (
        edges.select(F.col(src).cast("long").alias("a"), F.col(dst).cast("long").alias("b"))
        .filter(F.col("a").isNotNull() & F.col("b").isNotNull() & (F.col("a") != F.col("b")))
        .select(F.greatest("a", "b").alias("u"), F.least("a", "b").alias("v"))
        .distinct()
        .localCheckpoint()
    )
    size = e.count()
    for _ in range(max_iterations):
        # large star: every neighbour larger than u attaches to the smallest node u sees
        both = e.unionByName(e.select(v.alias("u"), u.alias("v")))
        low = both.groupBy("u").agg(F.min("v").alias("m")).withColumn("m", F.least(m, u))
        large = both.join(low, "u").filter(v > u).select(v.alias("u"), m.alias("v")).distinct()
        # small star: u and its smaller neighbours attach to the smallest of them
        joined = large.join(large.groupBy("u").agg(F.min("v").alias("m")), "u")
        small = (
            joined.select(v.alias("u"), m.alias("v"))
            .filter(u != v)
            .unionByName(joined.select(u, m.alias("v")))
            .distinct()
            .localCheckpoint()
        )
        new_size = small.count()
        done = new_size == size and small.join(e, ["u", "v"], "left_anti").isEmpty()
        e, size = small, new_size
        if done:
            break
    else:
        raise InputError(f"connected components did not settle in {max_iterations} rounds")
    roots = e.select(v.alias("node"), v.alias("component")).distinct()
    return e.select(u.alias("node"), v.alias("component")).unionByName(roots)


# -- the command line ----------------------------------------------------------------------------


_PARSED_SCHEMA = (
    "_pos long, _id string, _text string, _title string, _ts double, _problem string, _raw string"
)


def run_cli(
    source: str,
    *,
    unique: str | None,
    clusters: str | None,
    errors: str | None,
    master: str = "local[*]",
    fields: Fields | None = None,
    fmt: str | None = None,
    config: DedupConfig | None = None,
    keep: KeepPolicy = "first",
    collect: bool = False,
    label: str | None = None,
) -> RunResult:
    """``neardup dedup --engine spark``: read JSON Lines or Parquet with Spark, deduplicate,
    and write UNIQUE, CLUSTERS and ERRORS as the local engine does, in input order.

    JSONL errors carry their line; Parquet rows have no line (``null``) and their reasons
    name the row's 0-based position. UNIQUE holds the kept JSONL lines as read, or each kept
    Parquet row as a JSON line. The outputs are local files written through the driver; for
    outputs too big for that, call :func:`dedup` and write with Spark.
    """
    require_pyspark()
    import os
    import sys

    from pyspark.sql import functions as F

    fields = fields if fields is not None else Fields()
    started = time.perf_counter()
    if fmt is None:
        fmt = "parquet" if source.rstrip("/").endswith(".parquet") else "jsonl"
    if fmt not in ("jsonl", "parquet"):
        raise ConfigError(f"--engine spark reads JSONL or Parquet, not {fmt}")
    if source == "-":
        raise ConfigError("--engine spark reads files Spark can open, not standard input")
    if "://" not in source and not os.path.exists(source):
        raise InputError(f"cannot read {source}: no such file or folder")
    # open every output before the long run, so a bad path fails at once
    unique_out = UniqueWriter(unique, "jsonl", fields=fields) if unique is not None else None
    clusters_out = LineWriter(clusters) if clusters is not None else None
    errors_out = LineWriter(errors) if errors is not None else LineWriter(None, stream=sys.stderr)
    tally = Tally(collect)
    stages: dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        spark = spark_session(master)
        stages["start"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        if fmt == "jsonl":
            lines = spark.read.text(source).withColumnRenamed("value", "_raw")
            parsed = (
                _with_position(lines)
                .filter(~_blank(F.col("_raw")))
                .mapInArrow(_parse_jsonl(fields), _PARSED_SCHEMA)
            )
            where = "line"
        else:
            frame = spark.read.parquet(source)
            parsed = _parquet_records(frame, fields)
            where = "position"
        parsed = parsed.persist()
        stages["read"] = time.perf_counter() - t0
        result = _pipeline(
            spark,
            parsed.select("_pos", "_id", "_text", "_title", "_ts", "_problem"),
            config=config,
            keep=keep,
            max_rounds=10,
            partitions=None,
            where=where,
        )
        for name, seconds in result.stats["timings"].items():
            stages[name] = stages.get(name, 0.0) + seconds

        t0 = time.perf_counter()
        for r in result.errors.orderBy(where).toLocalIterator():
            line = r[where] if where == "line" else None
            bad = BadRecord(line, r["id"], r["reason"])
            errors_out.write(bad.to_json())
            tally.errors += 1
        rows = (
            result.clusters.join(parsed.select(F.col("_pos").alias("position"), "_raw"), "position")
            .orderBy("position")
            .toLocalIterator()
        )
        for r in rows:
            dup = r["duplicate_of"] is not None
            decision = Decision(
                r["id"], dup, r["duplicate_of"], r["cluster"], float(r["score"]), r["measure"]
            )
            doc = Document(r["id"], "", r["title"], raw=r["_raw"])
            if clusters_out is not None:
                clusters_out.write(cluster_line(decision))
            if unique_out is not None and not dup:
                unique_out.write(doc)
            tally.add(doc, decision)
    finally:
        for out in (unique_out, clusters_out, errors_out):
            if out is not None:
                out.close()
    stages["write"] = time.perf_counter() - t0
    outputs = output_names(unique, clusters, errors, tally)
    stats = result.stats
    summary = RunSummary(
        source=label or source,
        mode="batch",
        keep=keep,
        records=tally.kept + tally.duplicates + tally.errors,
        kept=tally.kept,
        duplicates=tally.duplicates,
        errors=tally.errors,
        seconds=time.perf_counter() - started,
        stages=stages,
        candidate_pairs=stats["candidate_pairs"],
        outputs=outputs,
        notes=(
            f"Spark {spark.version} on {master}; {stats['prefiltered_pairs']:,} pairs verified "
            f"in {stats['rounds']} round(s)",
        ),
    )
    result.clusters.unpersist()
    result.errors.unpersist()
    parsed.unpersist()
    return RunResult(summary, tally.decided)


def _parse_jsonl(fields: Fields) -> BatchFn:
    """The ``mapInArrow`` function that reads JSON lines with the local reader's checks
    (every problem but a repeated id, which needs the whole input)."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from .records import RecordChecker

        checker = RecordChecker(fields, repeated_ids=False)  # repeated ids: the pipeline
        schema = _arrow_schema(_PARSED_SCHEMA)
        for batch in batches:
            out: dict[str, list[Any]] = {name: [] for name in schema.names}
            for pos, raw in zip(
                batch.column("_pos").to_pylist(), batch.column("_raw").to_pylist(), strict=True
            ):
                line = raw[:-1] if raw.endswith("\r") else raw
                rec = checker.from_json(line, pos + 1)
                out["_pos"].append(pos)
                out["_raw"].append(line)
                out["_id"].append(rec.id)
                if isinstance(rec, BadRecord):
                    out["_problem"].append(rec.reason)
                    for name in ("_text", "_title", "_ts"):
                        out[name].append(None)
                else:
                    out["_problem"].append(None)
                    out["_text"].append(rec.text)
                    out["_title"].append(rec.title)
                    out["_ts"].append(rec.timestamp)
            yield pa.RecordBatch.from_pydict(out, schema=schema)

    return run


def _parquet_records(frame: DataFrame, fields: Fields) -> DataFrame:
    """Parquet rows as the parsed frame: their problems, and each row as a JSON line."""
    from pyspark.sql import functions as F

    for name in (fields.id, fields.text):
        if name not in frame.columns:
            raise InputError(
                f"the Parquet input has no column {name!r}; its columns are {frame.columns}"
            )
    title = fields.title if fields.title in frame.columns else None
    stamp = fields.timestamp if fields.timestamp in frame.columns else None
    raw = F.to_json(F.struct(*[F.col(c) for c in frame.columns]))
    checked = _checked(
        frame.withColumn("_raw", raw), fields.id, fields.text, title, stamp, carry=["_raw"]
    )
    return _with_position(checked)
