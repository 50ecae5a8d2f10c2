"""The Spark pipeline: :func:`dedup` a DataFrame with the same decisions as
:func:`~neardup.batch.dedup_batch`, in stages that call the engine for every rule.

1. **check** (:func:`checked`, then repeated ids): rows with a null, non-string, empty or
   whitespace-only text, a null id, or an id already used by an earlier usable row go to
   the errors frame, each with its reason.
2. **sketch**: :func:`~neardup.engine.make_sketches` on Arrow batches (``mapInArrow``); a
   byte-identical copy of an earlier text is a duplicate of its first copy
   (:data:`~neardup.engine.IDENTICAL`).
3. **candidates**: the members of each LSH bucket paired as the engine pairs them, bucket
   cap included (:func:`~neardup.index.lsh.bucket_pairs`).
4. **verify**: the engine's prefilter on the light signatures (the low 16 bits of each
   MinHash value, a superset of its passes), each document's ``max_verify`` most alike
   candidates (:func:`~neardup.engine.to_verify`), then :func:`~neardup.engine.verify` on both sketches with the template guard
   iterated to its fixed point (:mod:`neardup.spark.templates`), then each document's best
   match (:func:`~neardup.engine.best_of`).
5. **clusters**: the connected components of the links (:mod:`neardup.spark.graph`) and the
   document each keeps (:func:`~neardup.engine.choose_kept`).

The input order is the frame's own (``monotonically_increasing_id`` of the frame as given) or
``order_col``. Nothing per document is collected on the driver except the counts of the run
and the table of template shingles (12 bytes per shingle slot that reaches ``common_after``
kept stories).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..engine import IDENTICAL, DedupConfig, KeepPolicy, check_keep, choose_kept
from ..errors import ConfigError
from ..index.lsh import bucket_pairs
from ..records.document import NO_TEXT
from ..timing import Stages
from .columns import (
    SKETCH_SCHEMA,
    Batches,
    BatchFn,
    blank,
    column,
    columns,
    frame_of,
    holds_no_text,
    sketch_batches,
    sorted_rows,
    to_arrow,
)
from .graph import connected_components
from .links import Verdicts, components
from .session import is_set, require_pyspark
from .templates import Guard, Table, at_risk, build_guard, risk_intervals, same_table
from .verify import (
    ALIKE_SCHEMA,
    PAIR_SCHEMA,
    best_matches,
    prefilter_batches,
    to_verify_batches,
    verify_pairs,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SparkResult", "checked", "dedup", "run_pipeline", "with_position"]

I64 = npt.NDArray[np.int64]

#: Up to this many pairs, their positions are broadcast to pick the sketches to join, and
#: their verdicts are kept on the driver between template rounds.
BROADCAST_PAIRS = 2_000_000
#: The first template round guesses that a later document whose candidate holds this share
#: of it (estimated from the MinHash signatures) is not a story of its own: a good guess
#: leaves fewer pairs at risk (hkcnews 10k: 966 of 5,958 verified pairs verified again,
#: two rounds; 4,202 and three rounds when every later document is guessed a copy).
GUESS_CONTAINED = 0.7
#: Up to this many links (duplicates), the clusters are resolved on the driver with the
#: engine's :func:`~neardup.engine.roots` (16 bytes a link); beyond, in Spark joins.
LOCAL_LINKS = 5_000_000


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
    frame = checked(df, id_col, text_col, title_col, timestamp_col, order_col)
    prepared = with_position(frame, order_by="_order" if order_col is not None else None)
    return run_pipeline(
        df.sparkSession,
        prepared,
        config=config,
        keep=keep,
        max_rounds=max_rounds,
        partitions=partitions,
        where="position",
    )


def checked(
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
            .when(blank(text), F.lit(f"{text_col!r} is only whitespace"))
            .when(holds_no_text(text), F.lit(f"{text_col!r} {NO_TEXT}"))
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


def with_position(df: DataFrame, *, order_by: str | None = None) -> DataFrame:
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


def run_pipeline(
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
    Partitions and Arrow batch sizes are sized to the input (:func:`plan`) unless
    ``partitions`` or the session's settings say otherwise; the session's settings are as
    they were afterwards.
    """
    cfg = config if config is not None else DedupConfig()
    check_keep(keep)
    if max_rounds < 1:
        raise ConfigError(f"max_rounds must be at least 1, got {max_rounds}")
    if partitions is not None and partitions < 1:
        raise ConfigError(f"partitions must be at least 1, got {partitions}")
    cores = max(1, spark.sparkContext.defaultParallelism)
    partitions_set, batch_set = is_set(spark, _PARTITIONS), is_set(spark, _BATCH)
    with _restored(spark):
        # until the input's size is known: the user's, or a partition per core (or per
        # input partition, when there are more)
        if partitions is not None:
            first_guess = partitions
        elif partitions_set:
            first_guess = int(spark.conf.get(_PARTITIONS) or 200)
        else:
            first_guess = max(cores, prepared.rdd.getNumPartitions())
        spark.conf.set(_PARTITIONS, str(first_guess))
        run = _Run(spark, cfg, first_guess)
        with run.stages.time("check"):
            usable, errors = _check(run, prepared, where)
        docs_n, chars = run.stats["documents"], run.stats["characters"]
        run.resize(
            plan(
                cores, docs_n, chars, partitions, partitions_set=partitions_set, batch_set=batch_set
            )
        )
        with run.stages.time("sketch"):
            sketches, docs = _sketch(run, usable)
        with run.stages.time("candidates"):
            pairs = _candidates(run, sketches)
        links = _verify(run, pairs, sketches, docs, max_rounds)
        with run.stages.time("clusters"):
            clusters = _clusters(run, docs, links, sketches, keep)
        links.frame.unpersist()
    run.stats["timings"] = run.stages.seconds
    return SparkResult(clusters, errors, run.stats)


#: Characters of text a partition gets when the partitions are sized to the input (about
#: 20,000 news articles: a Python worker sketches them in a few seconds per core).
CHARS_PER_PARTITION = 32_000_000
#: Characters an Arrow batch holds when its size is chosen from the input: the engine
#: holds about 8 bytes a character of a batch's sketches (a verification row carries two).
CHARS_PER_BATCH = 4_000_000
_PARTITIONS = "spark.sql.shuffle.partitions"
_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"


@dataclass(frozen=True)
class Plan:
    """How a run is cut: ``partitions`` (of the shuffles and of the sketch stage) and
    ``batch`` (documents per Arrow batch), each None when the session's setting stands."""

    partitions: int | None
    batch: int | None
    cores: int


def plan(
    cores: int,
    documents: int,
    characters: int,
    partitions: int | None = None,
    *,
    partitions_set: bool = False,
    batch_set: bool = False,
) -> Plan:
    """Partitions and batch sizes for ``documents`` holding ``characters`` on ``cores``.

    Partitions: ``partitions`` if given, else None when the session's
    ``spark.sql.shuffle.partitions`` was set (``partitions_set``), else one per
    :data:`CHARS_PER_PARTITION` of text, at least one per core and a multiple of the cores
    (Spark's default of 200 dominates a small run). Batch: None when the session's
    ``spark.sql.execution.arrow.maxRecordsPerBatch`` was set (``batch_set``), else
    :data:`CHARS_PER_BATCH` of text, from 100 to 10,000 documents.

    >>> plan(2, 300, 500_000)
    Plan(partitions=2, batch=2400, cores=2)
    >>> plan(2, 48_005, 83_000_000).partitions, plan(2, 48_005, 83_000_000, batch_set=True).batch
    (4, None)
    >>> plan(16 * 50, 100_000_000, 173_000_000_000).partitions, plan(8, 10, 10, 7).partitions
    (5600, 7)
    """
    cores = max(1, cores)
    n: int | None = partitions
    if n is None and not partitions_set:
        wanted = max(cores, -(-characters // CHARS_PER_PARTITION))
        n = -(-wanted // cores) * cores
    batch: int | None = None
    if not batch_set:
        average = max(1, characters // max(1, documents))
        batch = int(min(10_000, max(100, CHARS_PER_BATCH // average)))
    return Plan(n, batch, cores)


@contextmanager
def _restored(spark: SparkSession) -> Iterator[None]:
    """The session's partitions and batch size as they were before the run (which sets
    them for Spark's own joins and aggregations)."""
    keys = (_PARTITIONS, _BATCH)
    before = {k: spark.conf.get(k) if is_set(spark, k) else None for k in keys}
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@dataclass
class _Run:
    """One run of the pipeline: the session, the settings, and what it found so far."""

    spark: SparkSession
    cfg: DedupConfig
    n_parts: int
    stats: dict[str, Any] = field(default_factory=dict)
    stages: Stages = field(default_factory=Stages)
    #: One more than the largest input position (known after the check).
    positions: int = 0

    @property
    def disk(self) -> Any:
        from pyspark.storagelevel import StorageLevel

        return StorageLevel.MEMORY_AND_DISK

    def resize(self, sizes: Plan) -> None:
        """Take the partitions and batch size of :func:`plan` for the rest of the run."""
        if sizes.partitions is not None:
            self.n_parts = sizes.partitions
            self.spark.conf.set(_PARTITIONS, str(self.n_parts))
        if sizes.batch is not None:
            self.spark.conf.set(_BATCH, str(sizes.batch))
        self.stats["partitions"] = self.n_parts
        self.stats["batch"] = int(self.spark.conf.get(_BATCH) or 10_000)
        self.stats["cores"] = sizes.cores


def _check(run: _Run, prepared: DataFrame, where: str) -> tuple[DataFrame, DataFrame]:
    """Every problem, and repeated ids (the first usable row keeps its id): the usable rows
    and the errors frame. Counts the errors, the documents and their characters."""
    from pyspark.sql import functions as F

    shift = 1 if where == "line" else 0
    ids = prepared.filter(F.col("_id").isNotNull()).select(
        "_id", "_pos", F.col("_problem").isNull().alias("_ok")
    )
    repeated = (
        ids.groupBy("_id")
        .agg(F.count("*").alias("_n"), F.min(F.when(F.col("_ok"), F.col("_pos"))).alias("_first"))
        .filter((F.col("_n") > 1) & F.col("_first").isNotNull())
        .select("_id", "_first")
        .localCheckpoint()
    )
    # usually none or few: broadcast, so the texts are not shuffled by id
    few = repeated.count() <= BROADCAST_PAIRS
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
        prepared.join(F.broadcast(repeated) if few else repeated, "_id", "left")
        .withColumn("_problem", F.concat_ws("; ", "_problem", note))
        .withColumn("_problem", F.when(F.col("_problem") != "", F.col("_problem")))
        .drop("_first")
        .localCheckpoint()
    )
    bad = F.col("_problem").isNotNull()
    counts = checked.agg(
        F.count(F.when(bad, 1)).alias("errors"),
        F.count(F.when(~bad, 1)).alias("documents"),
        F.coalesce(F.sum(F.when(~bad, F.length("_text"))), F.lit(0)).alias("characters"),
        F.coalesce(F.max("_pos") + 1, F.lit(0)).alias("positions"),
    ).collect()[0]
    run.stats.update({k: int(counts[k]) for k in ("errors", "documents", "characters")})
    run.positions = int(counts["positions"])
    errors = (
        checked.filter(bad)
        .select(
            (F.col("_pos") + shift).alias(where),
            F.col("_id").alias("id"),
            F.col("_problem").alias("reason"),
        )
        .persist(run.disk)
    )
    return checked.filter(~bad), errors


def _sketch(run: _Run, usable: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The engine's sketches of the first copy of each text, and each document with its
    first copy (``_first``: the first position holding the same exact text,
    :func:`~neardup.engine.text_key`) and its length.

    The rows are hash-partitioned by their text, so every copy of a text is in one
    partition, and sorted by position there: the first copy is the first row of its text,
    and the only one sketched (a byte-identical copy costs a hash, not a sketch)."""
    from pyspark.sql import functions as F

    sketched = (
        usable.select("_pos", "_text")
        .repartition(run.n_parts, "_text")
        .sortWithinPartitions("_pos")
        .mapInArrow(sketch_batches(run.cfg), SKETCH_SCHEMA)
        .localCheckpoint()
    )
    sketches = sketched.filter(F.col("_first") == F.col("_pos"))
    docs = (
        usable.select("_pos", "_id", "_title", "_ts")
        .join(sketched.select("_pos", "_first", "_n", "_chars"), "_pos")
        .localCheckpoint()
    )
    run.stats["originals"] = sketches.count()
    return sketches, docs


def _candidates(run: _Run, sketches: DataFrame) -> DataFrame:
    """The candidate pairs ``i, j`` (earlier, later) among the first copies: the members of
    each LSH bucket (:func:`~neardup.index.lsh.bucket_ids`), paired as the engine pairs
    them, bucket cap included (:func:`~neardup.index.lsh.bucket_pairs`)."""
    from pyspark.sql import functions as F

    buckets = (
        sketches.filter(F.col("_n") > 0)
        .select("_pos", F.explode("_bids").alias("_bid"))
        .groupBy("_bid")
        .agg(F.array_sort(F.collect_list("_pos")).alias("_m"))
        .filter(F.size("_m") > 1)
    )
    pairs = (
        buckets.select("_m")
        .mapInArrow(_bucket_pair_batches(run.cfg.bucket_cap), "i long, j long")
        .distinct()
        .persist(run.disk)
    )
    run.stats["candidate_pairs"] = pairs.count()
    return pairs


def _bucket_pair_batches(cap: int) -> BatchFn:
    """The ``mapInArrow`` function that pairs the members of each bucket (``_m``, sorted)."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.compute as pc

        for batch in batches:
            if batch.num_rows == 0:
                continue
            lists = batch.column("_m")
            members = np.asarray(pc.list_flatten(lists).to_numpy(), dtype=np.int64)
            sizes = np.asarray(pc.list_value_length(lists).to_numpy(), dtype=np.int64)
            starts = np.cumsum(sizes) - sizes
            for found in bucket_pairs(members, starts, sizes, cap):
                yield pa.RecordBatch.from_arrays(
                    [pa.array(found[:, 0]), pa.array(found[:, 1])], names=["i", "j"]
                )

    return run


@dataclass
class _Links:
    """What verification found: ``frame``, each matched document's link
    (``_pos, _parent, _score, _measure, _copy, _story, _hub``; byte-identical copies link to
    their first copy), and ``components`` (``node, component``) of the links that join
    documents (all but hubs' and byte-identical copies') when they were resolved on the
    driver."""

    frame: DataFrame
    components: DataFrame | None


def _verify(
    run: _Run, pairs: DataFrame, sketches: DataFrame, docs: DataFrame, max_rounds: int
) -> _Links:
    """The prefilter, then the engine's verify with the template guard iterated to its fixed
    point (:func:`_fixed_point`), then each document's best match.

    When the pairs to verify are few (:data:`BROADCAST_PAIRS`: ``max_verify`` a document
    bounds them), their verdicts and the bookkeeping of each round — best matches, the
    documents kept, the pairs at risk — live on the driver (:class:`_Here`); otherwise in
    Spark frames (:class:`_Spread`). The verification is on the executors either way."""
    cfg, stats, n_parts = run.cfg, run.stats, run.n_parts
    with run.stages.time("prefilter"):
        light = sketches.select("_pos", "_n", "_nv", "_light")
        passed = (
            pairs.join(light.toDF("i", "ni", "nvi", "li"), "i")
            .join(light.toDF("j", "nj", "nvj", "lj"), "j")
            .mapInArrow(prefilter_batches(cfg), ALIKE_SCHEMA)
            .repartition(n_parts, "j")
            .mapInArrow(to_verify_batches(cfg), ALIKE_SCHEMA)
            .persist(run.disk)
        )
        bounded = stats["originals"] * cfg.max_verify <= BROADCAST_PAIRS
        book: _Here | _Spread
        if bounded or passed.count() <= BROADCAST_PAIRS:
            book = _Here(run, to_arrow(passed), sketches)
            passed.unpersist()
        else:
            book = _Spread(run, passed, sketches)
        stats["prefiltered_pairs"] = book.size
        pairs.unpersist()
    with run.stages.time("templates"):
        originals = sketches.select("_pos", "_sh")
        flags = book.flags()
        if isinstance(flags, tuple):
            guard = build_guard(run.spark, originals, cfg, n_parts, run.positions, stats, flags)
        else:
            originals = originals.join(flags, "_pos", "left")
            guard = build_guard(run.spark, originals, cfg, n_parts, run.positions, stats)
        before = book.guess()
        table, _, _, _, stats["template_rows"] = guard.table(before)
    t0 = time.perf_counter()
    book.verify(table)
    table = _fixed_point(run, guard, book, table, before, max_rounds)
    guard.unpersist()
    stats["template_slots"] = len(table[0])
    links = book.links(docs)
    run.stages.add("verify", time.perf_counter() - t0)
    return links


def _fixed_point(
    run: _Run, guard: Guard, book: _Here | _Spread, table: Table, before: I64, max_rounds: int
) -> Table:
    """The template rounds: the documents kept under the verdicts, their table, and the
    pairs it puts at risk verified again, until the table stays (or ``max_rounds``). The
    table the verdicts were made with, last."""
    stats, positions = run.stats, run.positions
    stats["reverified"] = 0
    rounds, converged = 1, run.cfg.common_after <= 0
    while not converged:
        removed = book.removed()
        new_table, tpos, tlo, thi, _ = guard.table(removed, before)
        if same_table(table, new_table):
            converged = True
            break
        if rounds >= max_rounds:
            break
        stats["reverified"] += book.reverify(risk_intervals(tpos, tlo, thi, positions), new_table)
        table, before = new_table, removed
        rounds += 1
    stats["rounds"] = rounds
    stats["converged"] = converged
    return table


def guessed_copies(agree: npt.NDArray[np.float64], ni: I64, nj: I64) -> npt.NDArray[np.bool_]:
    """Whether the later document ``j`` of each pair is probably contained in ``i``, from
    the share of equal signature values ``agree`` (a Jaccard estimate) and the units: the
    guess of the first template round (:data:`GUESS_CONTAINED`). Only the number of rounds
    depends on it, never the decisions.

    >>> guessed_copies(np.array([0.9, 0.3]), np.array([100, 100]), np.array([100, 100])).tolist()
    [True, False]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        contained = agree * (ni + nj) / ((1.0 + agree) * nj)
    guess: npt.NDArray[np.bool_] = (nj > 0) & (contained >= GUESS_CONTAINED)
    return guess


class _Here:
    """The pairs to verify (``i, j, ni, nj, alike``) and their verdicts on the driver: a
    round costs one pass over the guard and one verification of the pairs at risk."""

    def __init__(self, run: _Run, passed: pa.Table, sketches: DataFrame) -> None:
        self.run, self.sketches = run, sketches
        self.i, self.j, self.ni, self.nj = (
            np.asarray(passed.column(c).to_numpy(), dtype=np.int64) for c in ("i", "j", "ni", "nj")
        )
        self.alike = np.asarray(passed.column("alike").to_numpy(), dtype=np.float64)
        self.size = len(self.i)
        self.verdicts: Verdicts | None = None

    def flags(self) -> tuple[I64, I64]:
        """The later documents of the pairs, and all of theirs (sorted)."""
        return np.unique(self.j), np.unique(np.concatenate([self.i, self.j]))

    def guess(self) -> I64:
        """The later documents the first round guesses are not stories (sorted)."""
        return np.unique(self.j[guessed_copies(self.alike, self.ni, self.nj)])

    def _verified(self, keep: npt.NDArray[np.bool_] | slice, table: Table) -> Verdicts:
        import pyarrow as pa

        run = self.run
        pairs = pa.table(
            {"i": self.i[keep], "j": self.j[keep], "ni": self.ni[keep], "nj": self.nj[keep]}
        )
        out = verify_pairs(
            run.spark, frame_of(run.spark, pairs), self.sketches, table, run.cfg, few_pairs=True
        )
        return Verdicts.of(to_arrow(out))

    def verify(self, table: Table) -> None:
        self.verdicts = self._verified(slice(None), table)

    def removed(self) -> I64:
        assert self.verdicts is not None
        return self.verdicts.best().removed()

    def reverify(self, intervals: tuple[I64, I64], table: Table) -> int:
        assert self.verdicts is not None
        risky = at_risk(self.i, self.j, intervals, self.run.positions)
        redone = self._verified(risky, table)
        self.verdicts = self.verdicts.replaced(
            self.i[risky], self.j[risky], redone, self.run.positions
        )
        return int(risky.sum())

    def links(self, docs: DataFrame) -> _Links:
        """The links (each matched document's best match, and the copies') and the
        components of those that join documents, resolved here."""
        import pyarrow as pa

        assert self.verdicts is not None
        run, stats = self.run, self.run.stats
        best = self.verdicts.best()
        hubs = best.hubs(self.verdicts)
        nodes, component = components(best.pos[~hubs], best.parent[~hubs])
        parents = frame_of(run.spark, best.arrow(hubs))
        stats["linked"] = len(best.pos) + stats["documents"] - stats["originals"]
        found = pa.table({"node": pa.array(nodes), "component": pa.array(component)})
        return _Links(parents.unionByName(_copies(docs)), frame_of(run.spark, found))


class _Spread:
    """The pairs to verify (``passed``, persisted) and their verdicts in Spark frames, for
    more pairs than the driver should hold."""

    def __init__(self, run: _Run, passed: DataFrame, sketches: DataFrame) -> None:
        self.run, self.passed, self.sketches = run, passed, sketches
        self.size = passed.count()
        self.verdicts: DataFrame | None = None

    def flags(self) -> DataFrame:
        """``_pos, _u``: true for the later documents of the pairs, false for the others."""
        from pyspark.sql import functions as F

        passed = self.passed
        return (
            passed.select(F.col("j").alias("_pos"), F.lit(True).alias("_u"))
            .unionByName(passed.select(F.col("i").alias("_pos"), F.lit(False).alias("_u")))
            .groupBy("_pos")
            .agg(F.max("_u").alias("_u"))
        )

    def guess(self) -> I64:
        from pyspark.sql import functions as F

        agree, ni, nj = F.col("alike"), F.col("ni"), F.col("nj")
        contained = agree * (ni + nj) / ((1.0 + agree) * nj)  # as guessed_copies
        guess = self.passed.filter((nj > 0) & (contained >= GUESS_CONTAINED))
        return np.sort(column(guess.select("j").distinct(), "j"))

    def verify(self, table: Table) -> None:
        run = self.run
        self.verdicts = verify_pairs(
            run.spark, self.passed, self.sketches, table, run.cfg
        ).localCheckpoint()

    def removed(self) -> I64:
        from pyspark.sql import functions as F

        assert self.verdicts is not None
        best = best_matches(self.verdicts, self.run.n_parts)
        return np.sort(column(best.filter(~F.col("_story")).select("_pos"), "_pos"))

    def reverify(self, intervals: tuple[I64, I64], table: Table) -> int:
        assert self.verdicts is not None
        run = self.run
        shared = run.spark.sparkContext.broadcast(intervals)
        risky = self.passed.mapInArrow(
            _at_risk_batches(shared, run.positions), PAIR_SCHEMA
        ).localCheckpoint()
        shared.destroy()
        count = risky.count()
        redone = verify_pairs(
            run.spark,
            risky,
            self.sketches,
            table,
            run.cfg,
            few_pairs=count <= BROADCAST_PAIRS,
        )
        self.verdicts = (
            self.verdicts.join(risky.select("i", "j"), ["i", "j"], "left_anti")
            .unionByName(redone)
            .localCheckpoint()
        )
        return count

    def links(self, docs: DataFrame) -> _Links:
        """The links, persisted; their components are left to :func:`_clusters`."""
        assert self.verdicts is not None
        run = self.run
        best = best_matches(self.verdicts, run.n_parts).localCheckpoint()
        parents = _with_hubs(best, self.verdicts)
        links = parents.unionByName(_copies(docs)).persist(run.disk)
        run.stats["linked"] = links.count()
        self.passed.unpersist()
        return _Links(links, None)


def _copies(docs: DataFrame) -> DataFrame:
    """The links of byte-identical copies, each to its first copy."""
    from pyspark.sql import functions as F

    return docs.filter(F.col("_first") != F.col("_pos")).select(
        "_pos",
        F.col("_first").alias("_parent"),
        F.lit(IDENTICAL.copy_score).alias("_score"),
        F.lit(IDENTICAL.measure).alias("_measure"),
        F.lit(True).alias("_copy"),
        F.lit(False).alias("_story"),
        F.lit(False).alias("_hub"),
    )


def _at_risk_batches(intervals: Any, positions: int) -> BatchFn:
    """The ``mapInArrow`` function that keeps the pairs :func:`at_risk` of a round's moved
    slots (``intervals``: broadcast :func:`risk_intervals`)."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            i = np.asarray(batch.column("i").to_numpy(), dtype=np.int64)
            j = np.asarray(batch.column("j").to_numpy(), dtype=np.int64)
            keep = np.flatnonzero(at_risk(i, j, intervals.value, positions))
            if len(keep):
                yield batch.select(["i", "j", "ni", "nj"]).take(keep)

    return run


def _with_hubs(parents: DataFrame, verdicts: DataFrame) -> DataFrame:
    """The links with ``_hub``: whether the document starts a cluster of its own although it
    extends its parent (:func:`~neardup.engine.hub`) — it is mostly new text, an earlier
    document extends the same parent, and it was verified the same story as none of those."""
    from pyspark.sql import functions as F

    ext = parents.filter(~F.col("_copy")).select("_pos", "_parent", "_story")
    first = ext.groupBy("_parent").agg(F.min("_pos").alias("_first_ext"))
    maybe = (
        ext.join(first, "_parent")
        .filter(F.col("_story") & (F.col("_pos") > F.col("_first_ext")))
        .select("_pos", "_parent")
    )
    same = verdicts.select("i", F.col("j").alias("_pos"))
    extending = ext.select(F.col("_pos").alias("i"), F.col("_parent").alias("_of"))
    matched = (
        maybe.join(same, "_pos")
        .join(extending, "i")
        .filter(F.col("_of") == F.col("_parent"))
        .select("_pos")
        .distinct()
    )
    hubs = maybe.select("_pos").join(matched, "_pos", "left_anti").withColumn("_hub", F.lit(True))
    return parents.join(hubs, "_pos", "left").withColumn(
        "_hub", F.coalesce(F.col("_hub"), F.lit(False))
    )


def _clusters(
    run: _Run, docs: DataFrame, links: _Links, sketches: DataFrame, keep: KeepPolicy
) -> DataFrame:
    """The connected components of the links, the document each story keeps
    (:func:`~neardup.engine.choose_kept`), and every usable row's decision.

    The components join stories (a document extending a hub starts its own); a
    byte-identical copy is in its first copy's component."""
    from pyspark.sql import functions as F

    components = links.components
    if components is None:
        joining = links.frame.filter(~F.col("_hub"))
        if run.stats["linked"] <= LOCAL_LINKS:
            components = _components_here(run.spark, joining)
        else:
            components = connected_components(joining, src="_pos", dst="_parent")
    members = (
        docs.join(components.toDF("_first", "_component"), "_first", "left")
        .withColumn("_root", F.coalesce("_component", "_first"))
        .drop("_component")
    )
    if keep == "first":
        label = members.select("_pos", F.col("_root").alias("_kept"))
    else:
        label = (
            members.select("_root", "_pos", "_chars", "_ts")
            .repartition(run.n_parts, "_root")
            .mapInArrow(_kept_batches(keep), "_pos long, _kept long")
        )
    # checkpointed: the plans below use it twice, and would otherwise grow large
    decided = members.join(label, "_pos").join(links.frame, "_pos", "left").localCheckpoint()
    decided = decided.withColumn("_copy", F.coalesce("_copy", F.lit(False)))
    is_rep = F.col("_pos") == F.col("_kept")
    if keep != "first":
        # a story keeps its longest or earliest document: a document it covers (the first of
        # the story, or one extending it) is a copy of that one
        # the kept document may be a byte-identical copy (the earliest, say): it has no
        # sketch of its own, its first copy's is the same
        kept_first = docs.select(F.col("_pos").alias("_kept"), F.col("_first").alias("_kf"))
        others = decided.filter(~F.col("_copy") & ~is_rep).join(kept_first, "_kept")
        rescored = verify_pairs(
            run.spark,
            others.select(F.col("_pos").alias("j"), F.col("_kf").alias("i")),
            sketches,
            None,
            run.cfg,
            keep_all=True,
        ).select(
            F.col("j").alias("_pos"),
            F.col("score").alias("_rs"),
            F.col("measure").alias("_rm"),
            F.col("same").alias("_rsame"),
            F.col("copy").alias("_rcs"),
            F.col("is_copy").alias("_rcopy"),
        )
        decided = decided.join(rescored, "_pos", "left")
        recopied = F.coalesce("_rcopy", F.lit(False))
        adopted = F.col("_parent").isNull() & F.coalesce("_rsame", F.lit(False))
        link = (
            F.when(F.col("_copy"), F.col("_parent"))
            .when(is_rep, F.lit(None))
            .when(recopied, F.col("_kept"))
            .when(adopted, F.col("_kept"))
            .otherwise(F.col("_parent"))
        )
        score = (
            F.when(F.col("_copy"), F.col("_score"))
            .when(is_rep, F.lit(None))
            .when(recopied, F.col("_rcs"))
            .when(adopted, F.col("_rs"))
            .otherwise(F.col("_score"))
        )
        measure = (
            F.when(F.col("_copy"), F.col("_measure"))
            .when(is_rep, F.lit(None))
            .when(recopied | adopted, F.col("_rm"))
            .otherwise(F.col("_measure"))
        )
        decided = (
            decided.withColumn("_link", link)
            .withColumn("_lscore", score)
            .withColumn("_lmeasure", measure)
            .withColumn("_dropped", F.col("_copy") | recopied)
        )
    else:
        decided = (
            decided.withColumn("_link", F.col("_parent"))
            .withColumn("_lscore", F.col("_score"))
            .withColumn("_lmeasure", F.col("_measure"))
            .withColumn("_dropped", F.col("_copy"))
        )
    names = docs.select("_pos", "_id")
    dropped = F.col("_dropped")
    clusters = (
        decided.join(names.toDF("_kept", "_cluster_id"), "_kept")
        .join(names.toDF("_link", "_link_id"), "_link", "left")
        .select(
            F.col("_id").alias("id"),
            F.col("_cluster_id").alias("cluster"),
            F.when(dropped, F.col("_link_id")).alias("duplicate_of"),
            F.when(~dropped, F.col("_link_id")).alias("extends"),
            F.coalesce("_lscore", F.lit(0.0)).alias("score"),
            F.col("_lmeasure").alias("measure"),
            F.col("_title").alias("title"),
            F.col("_pos").alias("position"),
        )
        .persist(run.disk)
    )
    run.stats["kept"] = clusters.filter(F.col("duplicate_of").isNull()).count()
    run.stats["duplicates"] = run.stats["documents"] - run.stats["kept"]
    return clusters


def _components_here(spark: SparkSession, links: DataFrame) -> DataFrame:
    """The components of a few million links at most, on the driver: each document links
    to an earlier one, so :func:`~neardup.engine.roots` resolves them in one pass
    (``node, component``: the component's first document, as
    :func:`~neardup.spark.graph.connected_components` names it)."""
    import pyarrow as pa

    nodes, root = components(*columns(links.select("_pos", "_parent"), ["_pos", "_parent"]))
    table = pa.table({"node": pa.array(nodes, pa.int64()), "component": pa.array(root, pa.int64())})
    return frame_of(spark, table)


def _kept_batches(keep: KeepPolicy) -> BatchFn:
    """The ``mapInArrow`` function that picks the document each story keeps, on partitions
    holding whole stories (``_root``)."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        cols = sorted_rows(batches, ["_root", "_pos", "_chars", "_ts"])
        if not cols:
            return
        root, pos, chars, ts = cols
        kept = choose_kept(
            root.astype(np.int64),
            pos.astype(np.int64),
            keep,
            lengths=chars.astype(np.int64),
            timestamps=ts.astype(np.float64),
        )
        yield pa.RecordBatch.from_arrays(
            [pa.array(pos.astype(np.int64)), pa.array(kept)], names=["_pos", "_kept"]
        )

    return run
