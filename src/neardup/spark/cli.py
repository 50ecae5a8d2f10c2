"""``neardup dedup --engine spark``: read JSON Lines or Parquet with Spark, deduplicate, and
write UNIQUE, CLUSTERS and ERRORS as the local run does (:mod:`neardup.run`)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..engine import Decision, DedupConfig, KeepPolicy
from ..errors import ConfigError, EngineError, InputError, OutputError
from ..records import BadRecord, Document, Fields, LineWriter, UniqueWriter
from ..run import RunResult, RunSummary, Tally, cluster_line, output_names
from ..timing import Stages
from .columns import Batches, BatchFn, arrow_schema, blank, field_of
from .pipeline import checked, run_pipeline, with_position
from .session import check_executors, jvm_failure, require_pyspark, spark_session

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["run_cli"]

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
    conf: Mapping[str, str] | None = None,
    output_dir: str | None = None,
) -> RunResult:
    """``neardup dedup --engine spark``: read JSON Lines or Parquet with Spark, deduplicate,
    and write UNIQUE, CLUSTERS and ERRORS as the local engine does, in input order.

    JSONL errors carry their line; Parquet rows have no line (``null``) and their reasons
    name the row's 0-based position. UNIQUE holds the kept JSONL lines as read, or each kept
    Parquet row as a JSON line. These outputs are local files written through the driver.
    With ``output_dir``, the executors write UNIQUE (``output_dir/unique``: the kept
    records as rows, JSONL records by their fields) and CLUSTERS (``output_dir/clusters``:
    ``position, id, cluster, duplicate_of, extends, score, measure``) as Parquet, in parts,
    in input order; ERRORS, which are few, still go through the driver.

    ``conf``: Spark settings for the session (``spark.executor.memory``...). Before the
    run, one tiny job checks that the executors can import neardup
    (:func:`~neardup.spark.session.check_executors`).
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
    if fmt == "jsonl" and os.path.isfile(source):
        _check_lines(source)
    if output_dir is not None:
        if unique is not None or clusters is not None:
            raise ConfigError("output_dir holds UNIQUE and CLUSTERS: give no unique or clusters")
        _check_folder(output_dir)
    # open every output before the long run, so a bad path fails at once
    unique_out = UniqueWriter(unique, "jsonl", fields=fields) if unique is not None else None
    clusters_out = LineWriter(clusters) if clusters is not None else None
    errors_out = LineWriter(errors) if errors is not None else LineWriter(None, stream=sys.stderr)
    tally = Tally(collect)
    stages = Stages()
    try:
        with stages.time("start"):
            spark = spark_session(master, conf=conf)
            executors = check_executors(spark)
        t0 = time.perf_counter()
        if fmt == "jsonl":
            lines = spark.read.text(source).withColumnRenamed("value", "_raw")
            parsed = (
                with_position(lines)
                .filter(~blank(F.col("_raw")))
                # as bytes: a line that is not UTF-8 is an error row, not a failed job
                .withColumn("_raw", F.col("_raw").cast("binary"))
                .mapInArrow(_parse_jsonl(fields), _PARSED_SCHEMA)
            )
            where = "line"
        else:
            frame = spark.read.parquet(source)
            parsed = _parquet_records(frame, fields, rows=output_dir is not None)
            where = "position"
        parsed = parsed.persist()
        stages.add("read", time.perf_counter() - t0)
        result = run_pipeline(
            spark,
            parsed.select("_pos", "_id", "_text", "_title", "_ts", "_problem"),
            config=config,
            keep=keep,
            max_rounds=10,
            partitions=None,
            where=where,
        )
        stages.merge(result.stats["timings"])

        t0 = time.perf_counter()
        for r in result.errors.orderBy(where).toLocalIterator():
            line = r[where] if where == "line" else None
            bad = BadRecord(line, r["id"], r["reason"])
            errors_out.write(bad.to_json())
            tally.errors += 1
        if output_dir is not None:
            _write_folder(spark, output_dir, parsed, result.clusters, fmt)
            tally.kept, tally.duplicates = result.stats["kept"], result.stats["duplicates"]
        else:
            rows = (
                result.clusters.join(
                    parsed.select(F.col("_pos").alias("position"), "_raw"), "position"
                )
                .orderBy("position")
                .toLocalIterator()
            )
            for r in rows:
                dup = r["duplicate_of"] is not None
                decision = Decision(
                    r["id"],
                    dup,
                    r["duplicate_of"],
                    r["cluster"],
                    float(r["score"]),
                    r["measure"],
                    extends=r["extends"],
                )
                doc = Document(r["id"], "", r["title"], raw=r["_raw"])
                if clusters_out is not None:
                    clusters_out.write(cluster_line(decision))
                if unique_out is not None and not dup:
                    unique_out.write(doc)
                tally.add(doc, decision)
    except Exception as e:
        failure = jvm_failure(e)
        if failure is None:
            raise
        raise EngineError(failure) from None
    finally:
        for out in (unique_out, clusters_out, errors_out):
            if out is not None:
                out.close()
    stages.add("write", time.perf_counter() - t0)
    if output_dir is not None:
        folder = output_dir.rstrip("/")
        outputs = output_names(None, None, errors, tally)
        outputs = {
            "kept": f"{folder}/unique (Parquet)",
            "clusters": f"{folder}/clusters (Parquet)",
            **outputs,
        }
    else:
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
        stages=stages.seconds,
        candidate_pairs=stats["candidate_pairs"],
        outputs=outputs,
        notes=(
            f"Spark {spark.version} on {master}, {stats['partitions']} partitions, Arrow "
            f"batches of {stats['batch']:,}; executors run {executors}",
            f"{stats['originals']:,} distinct texts sketched; {stats['prefiltered_pairs']:,} "
            f"pairs verified in {stats['rounds']} round(s)",
            *((stats["guard_note"],) if stats.get("guard_note") else ()),
        ),
    )
    result.clusters.unpersist()
    result.errors.unpersist()
    parsed.unpersist()
    return RunResult(summary, tally.decided)


def _check_lines(path: str) -> None:
    """Fail now if a local input is one JSON array (Spark reads JSON Lines, line by line) or
    compressed as Spark cannot read it."""
    from contextlib import ExitStack

    from ..records.jsonarray import starts_an_array
    from ..records.streams import BrokenOff, open_bytes, peek

    with ExitStack() as stack:
        opened = open_bytes(path, stack)
        if opened.compression == "xz":
            raise ConfigError(
                f"{path} is xz-compressed, which Spark's readers do not open (gzip, bzip2 and "
                "zstd they do): run the local engine, or compress it another way"
            )
        try:
            head = peek(opened.stream, 4096)
        except BrokenOff:
            return  # Spark says what is wrong with it
    if starts_an_array(head):
        raise ConfigError(
            f"{path} is one JSON array, and --engine spark reads JSON Lines: run the local "
            f"engine (it reads the array element by element), or write it as lines first "
            f"(jq -c '.[]' {path} > records.jsonl)"
        )


def _check_folder(folder: str) -> None:
    """Fail now, not after the run, if a local output folder cannot be made."""
    import os

    if "://" in folder:
        return  # a cluster's file system: Spark says when it writes
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot write in {folder}: {e.strerror or e}") from None
    if not os.access(folder, os.W_OK):
        raise OutputError(f"cannot write in {folder}: permission denied")


def _write_folder(
    spark: SparkSession, folder: str, parsed: DataFrame, clusters: DataFrame, fmt: str
) -> None:
    """UNIQUE and CLUSTERS as Parquet in ``folder`` (``unique/``, ``clusters/``), written by
    the executors in parts, each sorted by input position (the parts' names follow it)."""
    from pyspark.sql import functions as F

    base = folder.rstrip("/")
    (
        clusters.select("position", "id", "cluster", "duplicate_of", "extends", "score", "measure")
        .orderBy("position")
        .write.mode("overwrite")
        .parquet(f"{base}/clusters")
    )
    kept = parsed.join(
        clusters.filter(F.col("duplicate_of").isNull()).select(F.col("position").alias("_pos")),
        "_pos",
    )
    if fmt == "parquet":  # the rows themselves
        records = kept.select("_pos", "_row.*")
    else:  # each JSON object by its fields (every field any kept record has)
        lines = kept.select("_raw")
        schema = spark.read.json(lines if _reads_frames() else lines.rdd.map(lambda r: r[0])).schema
        records = kept.select("_pos", F.from_json("_raw", schema).alias("_r")).select(
            "_pos", "_r.*"
        )
    records.orderBy("_pos").drop("_pos").write.mode("overwrite").parquet(f"{base}/unique")


def _reads_frames() -> bool:
    """Whether ``spark.read.json`` takes a frame of lines (Spark 4), not only an RDD."""
    import pyspark

    return int(pyspark.__version__.split(".")[0]) >= 4


def _parse_jsonl(fields: Fields) -> BatchFn:
    """The ``mapInArrow`` function that reads JSON lines with the local reader's checks
    (every problem but a repeated id, which needs the whole input)."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from ..records import RecordChecker
        from ..records.readers import id_of_line, not_utf8

        checker = RecordChecker(fields, repeated_ids=False)  # repeated ids: the pipeline
        schema = arrow_schema(_PARSED_SCHEMA)
        for batch in batches:
            out: dict[str, list[Any]] = {name: [] for name in schema.names}
            for pos, data in zip(
                batch.column("_pos").to_pylist(), batch.column("_raw").to_pylist(), strict=True
            ):
                data = data[:-1] if data.endswith(b"\r") else data
                try:
                    line = data.decode("utf-8")
                except UnicodeDecodeError as e:  # as the local reader says it
                    line = data.decode("utf-8", "replace")
                    rec: Document | BadRecord = checker.bad(
                        pos + 1, id_of_line(data, fields.id), not_utf8(e)
                    )
                else:
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


def _parquet_records(frame: DataFrame, fields: Fields, *, rows: bool = False) -> DataFrame:
    """Parquet rows as the parsed frame: their problems, and each row as a JSON line (and,
    with ``rows``, as itself: ``_row``, for a Parquet UNIQUE)."""
    from pyspark.sql import functions as F

    for name in (fields.id, fields.text):
        if field_of(frame, name) is None:
            raise InputError(
                f"the Parquet input has no column {name!r}; its columns are {frame.columns}"
            )
    title = fields.title if field_of(frame, fields.title) is not None else None
    stamp = fields.timestamp if field_of(frame, fields.timestamp) is not None else None
    every = F.struct(*[F.col(c) for c in frame.columns])
    frame = frame.withColumn("_raw", F.to_json(every))
    carry = ["_raw"]
    if rows:
        frame = frame.withColumn("_row", every)
        carry.append("_row")
    frame_checked = checked(frame, fields.id, fields.text, title, stamp, carry=carry)
    return with_position(frame_checked)
