"""``neardup dedup --engine spark``: read JSON Lines or Parquet with Spark, deduplicate, and
write UNIQUE, CLUSTERS and ERRORS as the local run does (:mod:`neardup.run`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..engine import Decision, DedupConfig, KeepPolicy
from ..errors import ConfigError, InputError
from ..records import BadRecord, Document, Fields, LineWriter, UniqueWriter
from ..run import RunResult, RunSummary, Tally, cluster_line, output_names
from ..timing import Stages
from .columns import Batches, BatchFn, arrow_schema, blank
from .pipeline import checked, run_pipeline, with_position
from .session import require_pyspark, spark_session

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

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
    stages = Stages()
    try:
        with stages.time("start"):
            spark = spark_session(master)
        t0 = time.perf_counter()
        if fmt == "jsonl":
            lines = spark.read.text(source).withColumnRenamed("value", "_raw")
            parsed = (
                with_position(lines)
                .filter(~blank(F.col("_raw")))
                .mapInArrow(_parse_jsonl(fields), _PARSED_SCHEMA)
            )
            where = "line"
        else:
            frame = spark.read.parquet(source)
            parsed = _parquet_records(frame, fields)
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
        rows = (
            result.clusters.join(parsed.select(F.col("_pos").alias("position"), "_raw"), "position")
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
    finally:
        for out in (unique_out, clusters_out, errors_out):
            if out is not None:
                out.close()
    stages.add("write", time.perf_counter() - t0)
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

        from ..records import RecordChecker

        checker = RecordChecker(fields, repeated_ids=False)  # repeated ids: the pipeline
        schema = arrow_schema(_PARSED_SCHEMA)
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
    frame_checked = checked(
        frame.withColumn("_raw", raw), fields.id, fields.text, title, stamp, carry=["_raw"]
    )
    return with_position(frame_checked)
