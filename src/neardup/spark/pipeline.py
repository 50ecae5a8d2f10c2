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

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..engine import IDENTICAL, DedupConfig, KeepPolicy, check_keep, choose_kept
from ..engine.templates import SLOT_BITS, turn_size
from ..errors import ConfigError
from ..index.lsh import bucket_pairs
from ..records.document import NO_TEXT
from ..records.document import text_problem as text_problem_of
from ..shingling import distinct
from ..timing import Stages
from .columns import (
    SIDE_BUCKETS,
    SKETCH_SCHEMA,
    Batches,
    BatchFn,
    binary,
    blank,
    column,
    columns,
    field_of,
    frame_of,
    groups,
    holds_no_text,
    partition_keys,
    python_str,
    read_time_strings,
    sketch_batches,
    sorted_rows,
    split_by,
    to_arrow,
    unbinary,
)
from .graph import connected_components
from .links import Verdicts, components
from .session import held_rdds, is_set, release, require_pyspark
from .templates import Guard, Table, at_risk, build_guard, risk_intervals, same_table
from .verify import (
    ALIKE_SCHEMA,
    PAIR_SCHEMA,
    Grouped,
    Light,
    best_matches,
    light_of,
    passed_pairs,
    prefilter_batches,
    to_verify_batches,
    verify_pairs,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

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
    ``timestamp_col`` (a timestamp, a date, epoch seconds or milliseconds, or strings the
    local readers read: ISO 8601, numbers, HTTP dates; a row whose time cannot be read is an
    error) is what ``keep="earliest"`` looks at. A column name may be a dotted path into
    struct columns (``content.text``). ``order_col`` fixes the input order (smallest first;
    ties broken arbitrarily); without it the frame's own order is used. ``max_rounds`` bounds the
    template-guard iteration (``stats["converged"]`` says whether it reached the fixed point,
    which takes two or three rounds on news). ``partitions``: how many partitions to sketch
    in (default ``spark.sql.shuffle.partitions``). The result's frames are cached, and the
    run's own checkpoints are let go of: call ``unpersist()`` on them when done with them
    (they are not computed again after).

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
        if col is not None and field_of(df, col) is None:
            raise ConfigError(
                f"{name}={col!r} is not a column of the frame; its columns are {df.columns}"
            )
    before = held_rdds(df.sparkSession)
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
        held=before,
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
    from pyspark.sql.types import ArrayType, NumericType, StringType

    text, text_type = _field(df, text_col)
    paragraphs = isinstance(text_type, ArrayType) and isinstance(text_type.elementType, StringType)
    if isinstance(text_type, StringType) or paragraphs:
        # an array of strings is one text, its items joined by lines (records.joined_text)
        text_value = F.concat_ws("\n", text) if paragraphs else text
        odd = F.exists(text, lambda x: x.isNull()) if paragraphs else F.lit(False)
        text_problem = (
            F.when(text.isNull(), F.lit(f"{text_col!r} is null"))
            .when(odd, F.lit(text_problem_of(text_col, [None])))
            .when(F.length(text_value) == 0, F.lit(f"{text_col!r} is empty"))
            .when(blank(text_value), F.lit(f"{text_col!r} is only whitespace"))
            .when(holds_no_text(text_value), F.lit(f"{text_col!r} {NO_TEXT}"))
        )
    else:
        text_problem = F.lit(f"{text_col!r} must be a string, not {text_type.simpleString()}")
        text_value = F.lit(None).cast("string")
    raw_id, id_type = _field(df, id_col)
    if isinstance(id_type, StringType | NumericType):
        ident = raw_id.cast("string")
        id_problem = F.when(raw_id.isNull(), F.lit(f"{id_col!r} is null")).when(
            ident == "", F.lit(f"{id_col!r} is empty")
        )
    else:
        ident = F.lit(None).cast("string")
        id_problem = F.lit(f"{id_col!r} must be a string or a number, not {id_type.simpleString()}")
    ts, ts_problem = F.lit(None).cast("double"), F.lit(None).cast("string")
    if timestamp_col is not None:
        ts, ts_problem = _read_timestamps(df, timestamp_col)
    title = _field(df, title_col)[0].cast("string") if title_col is not None else F.lit(None)
    problem = F.concat_ws("; ", id_problem, text_problem, ts_problem)
    return df.select(
        ident.alias("_id"),
        text_value.alias("_text"),
        title.cast("string").alias("_title"),
        ts.cast("double").alias("_ts"),
        F.when(problem == "", None).otherwise(problem).alias("_problem"),
        *([_field(df, order_col)[0].alias("_order")] if order_col is not None else []),
        *carry,
    )


def _field(df: DataFrame, name: str) -> tuple[Column, Any]:
    """:func:`~neardup.spark.columns.field_of` of a field known to be there."""
    found = field_of(df, name)
    if found is None:
        raise ConfigError(f"{name!r} is not a column of the frame; its columns are {df.columns}")
    return found


def _read_timestamps(df: DataFrame, name: str) -> tuple[Column, Column]:
    """The epoch seconds of a timestamp column and each row's problem with it (null: none),
    as the local readers read them (:func:`~neardup.times.parse_timestamp`): a timestamp or a
    date as it is; numbers as seconds, or milliseconds above ``MILLISECONDS_ABOVE``, within
    the years 1 to 9999; strings by the local rule itself (ISO 8601, numbers, HTTP dates;
    blank: none); any other type is a problem where it is not null."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import FractionalType, NumericType, StringType

    from ..times import END_SECOND, FIRST_SECOND, MILLISECONDS_ABOVE, NOT_A_TIME

    tcol, kind = _field(df, name)
    none = F.lit(None).cast("string")
    simple = kind.simpleString()
    # a date, and a timestamp without a zone, are UTC's as the local readers read them (a
    # cast to timestamp would read them in the session's time zone)
    if simple == "date":
        return F.unix_date(tcol).cast("double") * 86400.0, none
    if simple == "timestamp_ntz":
        wall = F.date_format(tcol, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS")
        utc = F.to_timestamp(F.concat(wall, F.lit("Z")), "yyyy-MM-dd'T'HH:mm:ss.SSSSSSX")
        return F.unix_micros(utc) / 1e6, none
    if simple.startswith("timestamp"):
        return F.unix_micros(tcol) / 1e6, none
    if isinstance(kind, StringType):
        read = read_time_strings(tcol, name)
        return read["t"], read["p"]
    if isinstance(kind, NumericType):
        x = tcol.cast("double")
        seconds = F.when(F.abs(x) > MILLISECONDS_ABOVE, x / 1000).otherwise(x)
        bad = F.isnan(seconds) | (seconds < FIRST_SECOND) | (seconds >= END_SECOND)
        # the number as the local readers write it: Python's str of a float
        number = (
            python_str(F.when(bad, x)) if isinstance(kind, FractionalType) else tcol.cast("string")
        )
        said = F.concat(F.lit(f"bad {name!r}: the timestamp '"), number, F.lit(f"' {NOT_A_TIME}"))
        return F.when(~bad, seconds), F.when(bad, said)
    what = f"bad {name!r}: a timestamp must be a number or a string, not {kind.simpleString()}"
    return F.lit(None).cast("double"), F.when(tcol.isNotNull(), F.lit(what))


def with_position(df: DataFrame, *, order_by: str | None = None) -> DataFrame:
    """``df`` with ``_pos``: 0, 1, 2... in the frame's order (or sorted by ``order_by``),
    numbered where the rows are (one small job counts each partition's rows). The rows are
    checkpointed with their partition and place in it before they are numbered: the numbers
    must not change if the frame were computed again (the numbering itself is a broadcast
    join on the checkpoint, the same every time).

    The pipeline checkpoints (rather than caches) the frames it reuses: a cached frame's plan
    is printed inside every plan that reads it, and those descriptions grow past the
    driver's memory on a plan as deep as this one."""
    from pyspark.sql import functions as F

    if order_by is not None:
        df = df.orderBy(order_by).drop(order_by)
    tagged = (
        df.withColumn("_pid", F.spark_partition_id())
        .withColumn("_mid", F.monotonically_increasing_id())
        .localCheckpoint()
    )
    counts = sorted((r[0], r[1]) for r in tagged.groupBy("_pid").count().collect())
    offsets, total = [], 0
    for pid, n in counts:
        offsets.append((pid, total))
        total += n
    table = df.sparkSession.createDataFrame(offsets or [(0, 0)], "_pid int, _offset long")
    # monotonically_increasing_id is (partition index << 33) + the row's place in it
    within = F.col("_mid") - F.shiftleft(F.col("_pid").cast("long"), 33)
    return (
        tagged.join(F.broadcast(table), "_pid")
        .withColumn("_pos", F.col("_offset") + within)
        .drop("_pid", "_mid", "_offset")
    )


def turning_note(cfg: DedupConfig, shingles: int) -> str | None:
    """What to tell the user of a run whose stories hold ``shingles`` distinct shingles in
    all (at least what they count in the template guard): None while they cannot fill two
    turns of ``chrome_window`` — below that the local engine's guard has forgotten nothing,
    and the two engines decide alike — else that the Spark engine's guard, which does not
    turn yet, counted every story and may decide otherwise past that point."""
    if cfg.common_after <= 0 or cfg.chrome_window <= 0:
        return None
    if shingles < 2 * turn_size(cfg.chrome_window):
        return None
    return (
        f"this run's stories hold {shingles:,} distinct shingles (a load of "
        f"{shingles / (1 << SLOT_BITS):.2f}), enough to turn the chrome guard twice at "
        f"chrome_window={cfg.chrome_window:g}: the local engine's guard would have forgotten "
        "its first turns, the Spark engine's counts every story (it does not turn yet), so "
        "past that point their decisions may differ and this table may be crowded; give "
        "--set chrome_window=0 to both engines for the same decisions (README: How many "
        "stories the chrome guard holds)"
    )


def run_pipeline(
    spark: SparkSession,
    prepared: DataFrame,
    *,
    config: DedupConfig | None,
    keep: KeepPolicy,
    max_rounds: int,
    partitions: int | None,
    where: str,
    held: set[int] | None = None,
) -> SparkResult:
    """The stages on ``_pos, _id, _text, _title, _ts, _problem`` (null problem: usable).

    ``where`` names positions in messages: "line" (shown 1-based) or "position" (0-based).
    Partitions and Arrow batch sizes are sized to the input (:func:`plan`) unless
    ``partitions`` or the session's settings say otherwise; the session's settings are as
    they were afterwards.

    The run lets go of each checkpoint it made (:func:`release`) once the next stage no
    longer needs it — the input's once the rows are checked, the checked texts once they
    are sketched, the rest once the results are cached — so that it holds one copy of the
    texts at a time, and a session running one input after another does not keep each
    run's until the JVM collects them. ``held``: the RDDs the session held before the
    caller prepared the input (default: those held when the run starts), left alone.
    """
    cfg = config if config is not None else DedupConfig()
    check_keep(keep)
    if max_rounds < 1:
        raise ConfigError(f"max_rounds must be at least 1, got {max_rounds}")
    if partitions is not None and partitions < 1:
        raise ConfigError(f"partitions must be at least 1, got {partitions}")
    if held is None:
        held = held_rdds(spark)
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
        with run.stage("check"):
            before = held_rdds(spark)
            usable, errors = _check(run, prepared, where)
            errors = _errors(run, errors, where)
            # one copy of the texts at a time: the input's checkpoint goes
            release(spark, before - held)
        docs_n, chars = run.stats["documents"], run.stats["characters"]
        run.resize(
            plan(
                cores, docs_n, chars, partitions, partitions_set=partitions_set, batch_set=batch_set
            )
        )
        with run.stage("sketch"):
            before = held_rdds(spark)
            sketches, docs, side, light = _sketch(run, usable)
            # the checked texts go: the sketches and the errors hold what the run needs
            release(spark, before - held)
        with run.stage("candidates"):
            found = _candidates(run, side, light)
        links = _verify(run, found, sketches, docs, side, light, max_rounds)
        with run.stage("clusters"):
            clusters = _clusters(run, docs, links, sketches, keep)
            links.frame.unpersist()
            release(spark, held_rdds(spark) - held)
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

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the ``with`` block as stage ``name``, and name its Spark jobs after it (the
        Spark UI shows "neardup: sketch" beside each job)."""
        sc = self.spark.sparkContext
        before = sc.getLocalProperty("spark.job.description")
        sc.setJobDescription(f"neardup: {name}")
        try:
            with self.stages.time(name):
                yield
        finally:
            sc.setJobDescription(before)  # type: ignore[arg-type]

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
    errors = checked.filter(bad).select(
        (F.col("_pos") + shift).alias(where),
        F.col("_id").alias("id"),
        F.col("_problem").alias("reason"),
    )
    return checked.filter(~bad), errors


def _errors(run: _Run, errors: DataFrame, where: str) -> DataFrame:
    """The errors frame, cached (an empty frame when there are none): it must not need the
    checkpoints the run lets go of (:func:`release`)."""
    if run.stats["errors"] == 0:
        return run.spark.createDataFrame([], f"{where} long, id string, reason string")
    errors = errors.persist(run.disk)
    errors.count()
    return errors


def _sketch(run: _Run, usable: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame, Light | None]:
    """The engine's sketches of the first copy of each text; each document with its id,
    title and time, its first copy (``_first``: the first position holding the same exact
    text, :func:`~neardup.engine.text_key`) and its length; the side rows of
    :func:`~neardup.spark.columns.sketch_batches` (slot counts and LSH buckets); and, when
    the originals are few enough that verifying ``max_verify`` pairs each stays on the
    driver (:data:`BROADCAST_PAIRS`), their light signatures (:data:`Light`).

    The rows are hash-partitioned by their text, so every copy of a text is in one
    partition, and sorted by position there: the first copy is the first row of its text,
    and the only one sketched (a byte-identical copy costs a hash, not a sketch)."""
    from pyspark.sql import functions as F

    sketched = (
        usable.select("_pos", "_id", "_text", "_title", "_ts")
        .repartition(run.n_parts, "_text")
        .sortWithinPartitions("_pos")
        .mapInArrow(sketch_batches(run.cfg, run.n_parts), SKETCH_SCHEMA)
        .localCheckpoint()
    )
    rows = sketched.filter(F.col("_side").isNull())
    sketches = rows.filter(F.col("_first") == F.col("_pos"))
    docs = rows.select("_pos", "_id", "_title", "_ts", "_first", "_n", "_chars")
    side = sketched.filter(F.col("_side").isNotNull()).select("_side", "_kind", "_b", "_b2")
    light: Light | None = None
    if run.stats["documents"] * run.cfg.max_verify <= BROADCAST_PAIRS:
        light = light_of(to_arrow(sketches.selectExpr(*_LIGHT)))
        run.stats["originals"] = len(light[0])
        shingles = int(light[2].sum())
    else:
        row = sketches.agg(F.count(F.lit(1)).alias("n"), F.sum("_nv").alias("v")).first()
        assert row is not None
        run.stats["originals"], shingles = int(row["n"]), int(row["v"] or 0)
        if run.stats["originals"] * run.cfg.max_verify <= BROADCAST_PAIRS:
            light = light_of(to_arrow(sketches.selectExpr(*_LIGHT)))
    run.stats["original_shingles"] = shingles
    return sketches, docs, side, light


#: What the driver keeps of each original when they are few (:data:`Light`).
_LIGHT = ("_pos", "_n", "_nv", "_light", "coalesce(size(_nums), 0) AS _nn")

#: Pairs to verify on the driver: ``i, j, ni, nj, alike``.
Found = tuple[I64, I64, I64, I64, npt.NDArray[np.float64]]


def _candidates(run: _Run, side: DataFrame, light: Light | None) -> Found | DataFrame:
    """The candidate pairs ``i, j`` (earlier, later) among the first copies: the members of
    each LSH bucket, paired as the engine pairs them, bucket cap included
    (:func:`~neardup.index.lsh.bucket_pairs`), each pair once.

    The buckets come as rows of bytes per range of bucket ids (the sketch stage's side
    rows); each range's pairs go, as bytes, to the partition of their later document. With
    the ``light`` signatures, that partition also applies the prefilter and picks the pairs
    to verify (:func:`~neardup.spark.verify.passed_pairs`), which come back to the driver;
    without, the distinct pairs stay a Spark frame (persisted) for the joins of
    :func:`_verify`."""
    from pyspark.sql import functions as F

    n_parts, cfg, positions = run.n_parts, run.cfg, run.positions
    by_later = (
        side.filter(F.col("_kind") == SIDE_BUCKETS)
        .repartition(n_parts, F.col("_side"))
        .mapInArrow(_bucket_pair_blobs(cfg.bucket_cap, n_parts, positions), _PAIR_BLOBS)
        .repartition(n_parts, F.col("_t"))
    )
    if light is None:
        pairs = by_later.mapInArrow(_distinct_pairs(positions), "i long, j long").persist(run.disk)
        run.stats["candidate_pairs"] = pairs.count()
        return pairs
    shared = run.spark.sparkContext.broadcast(light)
    table = to_arrow(by_later.mapInArrow(_passed_blobs(shared, cfg, positions), _PASSED_BLOBS))
    shared.destroy()
    run.stats["candidate_pairs"] = int(sum(table.column("_n").to_pylist()))
    cols = {name: table.column(name).to_pylist() for name in ("i", "j", "ni", "nj", "alike")}
    i, j, ni, nj = (
        np.concatenate([unbinary(b, "<i8") for b in cols[c]] or [np.zeros(0, dtype=np.int64)])
        for c in ("i", "j", "ni", "nj")
    )
    agree = np.concatenate([unbinary(b, "<f8", np.float64) for b in cols["alike"]] or [np.zeros(0)])
    return i, j, ni, nj, agree


_PAIR_BLOBS = "_t int, _i binary, _j binary"
_PASSED_BLOBS = "_n long, i binary, j binary, ni binary, nj binary, alike binary"


def _bucket_pair_blobs(cap: int, n_parts: int, positions: int) -> BatchFn:
    """The ``mapInArrow`` function that pairs the members of each bucket (side rows of
    bucket ids and positions, whole ranges to a partition) and sends the pairs, as bytes,
    towards the partition of their later document."""
    keys = partition_keys(n_parts)
    span = positions + 1

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        bids: list[npt.NDArray[np.uint64]] = []
        members: list[I64] = []
        for batch in batches:
            for b, m in zip(
                batch.column("_b").to_pylist(), batch.column("_b2").to_pylist(), strict=True
            ):
                bids.append(np.frombuffer(b, dtype="<u8"))
                members.append(unbinary(m, "<i8"))
        if not bids:
            return
        bid, pos = np.concatenate(bids), np.concatenate(members)
        order = np.lexsort((pos, bid))
        bid, pos = bid[order], pos[order]
        starts, sizes, _ = groups(bid.view(np.int64))  # equal ids stay equal
        found = list(bucket_pairs(pos, starts.astype(np.int64), sizes.astype(np.int64), cap))
        if not found:
            return
        code = distinct(np.concatenate([f[:, 0] * span + f[:, 1] for f in found]))
        i, j = code // span, code % span
        out: dict[str, list[Any]] = {"_t": [], "_i": [], "_j": []}
        for t, take in enumerate(split_by(j % n_parts, n_parts)):
            if len(take):
                out["_t"].append(keys[t])
                out["_i"].append(binary(i[take], "<i8"))
                out["_j"].append(binary(j[take], "<i8"))
        yield pa.RecordBatch.from_pydict(
            out, schema=pa.schema([("_t", pa.int32()), ("_i", pa.binary()), ("_j", pa.binary())])
        )

    return run


def _partition_pairs(batches: Batches, positions: int) -> tuple[I64, I64]:
    """The distinct pairs of a partition's pair blobs (sorted by ``j``, then ``i``)."""
    span = positions + 1
    codes: list[I64] = []
    for batch in batches:
        for a, b in zip(
            batch.column("_i").to_pylist(), batch.column("_j").to_pylist(), strict=True
        ):
            codes.append(unbinary(b, "<i8") * span + unbinary(a, "<i8"))
    if not codes:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    code = distinct(np.concatenate(codes))
    return code % span, code // span


def _distinct_pairs(positions: int) -> BatchFn:
    """The ``mapInArrow`` function that turns a partition's pair blobs into its distinct
    pairs, one row each."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        i, j = _partition_pairs(batches, positions)
        step = 1 << 20
        for lo in range(0, len(i), step):
            yield pa.RecordBatch.from_arrays(
                [pa.array(i[lo : lo + step]), pa.array(j[lo : lo + step])], names=["i", "j"]
            )

    return run


def _passed_blobs(light: Any, cfg: DedupConfig, positions: int) -> BatchFn:
    """The ``mapInArrow`` function that turns a partition's pair blobs (every pair of its
    later documents) into the pairs to verify (:func:`~neardup.spark.verify.passed_pairs`,
    with the broadcast ``light`` signatures): one row of bytes, and the number of distinct
    candidate pairs it had."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        i, j = _partition_pairs(batches, positions)
        if len(i) == 0:
            return
        found = passed_pairs(i, j, light.value, cfg)
        blobs = [binary(c, "<i8") for c in found[:4]] + [binary(found[4], "<f8")]
        yield pa.RecordBatch.from_arrays(
            [pa.array([len(i)], pa.int64()), *(pa.array([b], pa.binary()) for b in blobs)],
            names=["_n", "i", "j", "ni", "nj", "alike"],
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
    run: _Run,
    found: Found | DataFrame,
    sketches: DataFrame,
    docs: DataFrame,
    side: DataFrame,
    light: Light | None,
    max_rounds: int,
) -> _Links:
    """The engine's verify with the template guard iterated to its fixed point
    (:func:`_fixed_point`), then each document's best match.

    When the pairs to verify are few (:data:`BROADCAST_PAIRS`: ``max_verify`` a document
    bounds them), they come here ``found`` by :func:`_candidates`, and their verdicts and
    the bookkeeping of each round — best matches, the documents kept, the pairs at risk —
    live on the driver (:class:`_Here`); otherwise the candidate pairs (a frame) go through
    the prefilter in Spark joins, and the rest in Spark frames (:class:`_Spread`) unless
    few pairs pass. The verification is on the executors either way."""
    cfg, stats, n_parts = run.cfg, run.stats, run.n_parts
    book: _Here | _Spread
    numbers = (light[0], light[4]) if light is not None else None
    if isinstance(found, tuple):
        book = _Here(run, found, sketches, numbers)
    else:
        with run.stage("prefilter"):
            lights = sketches.select("_pos", "_n", "_nv", "_light")
            passed = (
                found.join(lights.toDF("i", "ni", "nvi", "li"), "i")
                .join(lights.toDF("j", "nj", "nvj", "lj"), "j")
                .mapInArrow(prefilter_batches(cfg), ALIKE_SCHEMA)
                .repartition(n_parts, "j")
                .mapInArrow(to_verify_batches(cfg), ALIKE_SCHEMA)
                .persist(run.disk)
            )
            if passed.count() <= BROADCAST_PAIRS:
                book = _Here(run, _found(to_arrow(passed)), sketches, numbers)
                passed.unpersist()
            else:
                book = _Spread(run, passed, sketches)
            found.unpersist()
    stats["prefiltered_pairs"] = book.size
    with run.stage("templates"):
        originals = sketches.select("_pos", "_sh", "_n", "_ptext")
        flags = book.flags()
        if isinstance(flags, tuple):
            guard = build_guard(
                run.spark, originals, side, cfg, n_parts, run.positions, stats, flags
            )
        else:
            originals = originals.join(flags, "_pos", "left")
            guard = build_guard(run.spark, originals, side, cfg, n_parts, run.positions, stats)
        before = book.guess()
        table, _, _, _, stats["template_rows"] = guard.table(before)
    with run.stage("verify"):
        book.verify(table)
        table = _fixed_point(run, guard, book, table, before, max_rounds)
        guard.unpersist()
        stats["template_slots"] = len(table[0])
        links = book.links(docs)
    stats["guard_note"] = None
    if turning_note(cfg, stats["original_shingles"]):  # then count what the stories hold
        from pyspark.sql import functions as F

        repeated = (
            links.frame.filter(~F.col("_story"))
            .select("_pos")
            .join(sketches.select("_pos", "_nv"), "_pos")
            .agg(F.sum("_nv"))
            .first()
        )
        stories = stats["original_shingles"] - int((repeated[0] if repeated else 0) or 0)
        stats["guard_note"] = turning_note(cfg, stories)
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

    def __init__(
        self, run: _Run, found: Found, sketches: DataFrame, numbers: tuple[I64, I64] | None
    ) -> None:
        self.run, self.sketches, self.numbers = run, sketches, numbers
        self.i, self.j, self.ni, self.nj, self.alike = found
        self.size = len(self.i)
        self.verdicts: Verdicts | None = None
        self.grouped: Grouped | None = None

    def flags(self) -> tuple[I64, I64]:
        """The later documents of the pairs, and all of theirs (sorted)."""
        return distinct(self.j), distinct(np.concatenate([self.i, self.j]))

    def guess(self) -> I64:
        """The later documents the first round guesses are not stories (sorted)."""
        return distinct(self.j[guessed_copies(self.alike, self.ni, self.nj)])

    def _verified(self, keep: npt.NDArray[np.bool_] | slice, table: Table) -> Verdicts:
        run = self.run
        if self.grouped is None:  # made for all the pairs: later rounds verify some of them
            pairs = (self.i, self.j, self.ni, self.nj)
            self.grouped = Grouped(
                run.spark, pairs, self.sketches, self.numbers, run.cfg, run.n_parts
            )
            run.stats["groups"] = self.grouped.n_groups
        return Verdicts.of(self.grouped.verify((self.i[keep], self.j[keep]), table))

    def verify(self, table: Table) -> None:
        self.verdicts = self._verified(slice(None), table)

    def removed(self) -> I64:
        assert self.verdicts is not None
        return self.verdicts.best().removed()

    def reverify(self, intervals: tuple[I64, I64], table: Table) -> int:
        assert self.verdicts is not None
        risky = at_risk(self.i, self.j, intervals, self.run.positions)
        # every pair of a later document with one at risk: its pairs after its first copy
        # were not verified (Grouped.verify), and it may now have another first copy
        marks = np.zeros(self.run.positions + 1, dtype=np.bool_)
        marks[self.j[risky]] = True
        risky = marks[self.j]
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
        if self.grouped is not None:
            self.grouped.unpersist()
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


def _found(passed: pa.Table) -> Found:
    """:data:`Found` of an Arrow table of ``i, j, ni, nj, alike``."""
    i, j, ni, nj = (
        np.asarray(passed.column(c).to_numpy(), dtype=np.int64) for c in ("i", "j", "ni", "nj")
    )
    return i, j, ni, nj, np.asarray(passed.column("alike").to_numpy(), dtype=np.float64)


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
        # the kept document extends nothing and is kept, even when it is a copy of the
        # story's first (a reprint dated before its original)
        link = (
            F.when(is_rep, F.lit(None))
            .when(F.col("_copy"), F.col("_parent"))
            .when(recopied, F.col("_kept"))
            .when(adopted, F.col("_kept"))
            .otherwise(F.col("_parent"))
        )
        score = (
            F.when(is_rep, F.lit(None))
            .when(F.col("_copy"), F.col("_score"))
            .when(recopied, F.col("_rcs"))
            .when(adopted, F.col("_rs"))
            .otherwise(F.col("_score"))
        )
        measure = (
            F.when(is_rep, F.lit(None))
            .when(F.col("_copy"), F.col("_measure"))
            .when(recopied | adopted, F.col("_rm"))
            .otherwise(F.col("_measure"))
        )
        decided = (
            decided.withColumn("_link", link)
            .withColumn("_lscore", score)
            .withColumn("_lmeasure", measure)
            .withColumn("_dropped", (F.col("_copy") & ~is_rep) | recopied)
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
