"""The local ``neardup dedup`` run: read, deduplicate, write, in timed stages.

The command line parses options and calls :func:`run_dedup`; this module reads the records
(:mod:`neardup.records`), decides with the library (a :class:`~neardup.batch.BatchRun` fed as
it reads, or a streaming :class:`~neardup.deduper.Deduper`), writes the three outputs, and
describes the run as a :class:`~neardup.run.summary.RunSummary`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack

from ..batch import BatchRun
from ..deduper import Deduper
from ..engine import Decision, DedupConfig, KeepPolicy
from ..errors import ConfigError
from ..records import BadRecord, Document, Fields, LineWriter, UniqueWriter, read_records
from ..timing import Stages
from .outputs import Tally, cluster_line, output_names
from .progress import Progress
from .summary import Mode, RunResult, RunSummary

__all__ = ["run_dedup"]


def run_dedup(
    source: str,
    *,
    unique: str | None,
    clusters: str | None,
    errors: str | None,
    fields: Fields | None = None,
    fmt: str | None = None,
    config: DedupConfig | None = None,
    keep: KeepPolicy = "first",
    mode: Mode = "batch",
    progress: Progress | None = None,
    collect: bool = False,
    label: str | None = None,
    store: str | None = None,
    window: str | None = None,
    batch_size: int = 256,
) -> RunResult:
    """Deduplicate ``source`` into the UNIQUE, CLUSTERS and ERRORS outputs.

    ``unique`` and ``clusters`` may be None (not written); ``errors`` None means standard
    error. Every record read ends in CLUSTERS (documents) or ERRORS (bad records). The input
    is opened, and then every output, before anything is read, so a missing input or an
    unwritable output fails at once. ``collect`` keeps each document with its decision in
    the result (for a report; it holds the whole corpus in memory). ``store`` (a store URL)
    or ``window`` decide in streaming mode against that store, ``batch_size`` records per
    atomic section. (The Spark engine's run is :func:`neardup.spark.run_cli`.)
    """
    cfg = config if config is not None else DedupConfig()
    fields = fields if fields is not None else Fields()
    if store is not None or window is not None:
        mode = "stream"
    if mode == "stream" and keep != "first":
        raise ConfigError(
            f"streaming and stores keep the first copy of each story, not keep={keep!r}"
        )
    if batch_size < 1:
        raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
    progress = progress if progress is not None else Progress(sys.stderr, enabled=False)
    started = time.perf_counter()
    stages = Stages()
    with ExitStack() as stack:
        reader = stack.enter_context(read_records(source, fields=fields, fmt=fmt))
        unique_out: UniqueWriter | None = None
        if unique is not None:
            header = reader.csv_header
            out_fmt = reader.format if reader.format != "csv" or header is not None else "jsonl"
            unique_out = UniqueWriter(unique, out_fmt, header, fields=fields)
            stack.callback(unique_out.close)
        clusters_out = None
        if clusters is not None:
            clusters_out = LineWriter(clusters)
            stack.callback(clusters_out.close)
        errors_out = (
            LineWriter(errors) if errors is not None else LineWriter(None, stream=sys.stderr)
        )
        stack.callback(errors_out.close)
        if errors is None:
            errors_out.before_write = progress.clear
        stack.callback(progress.clear)

        tally = Tally(collect)
        args = (reader, cfg, keep, stages, progress, tally, unique_out, clusters_out, errors_out)
        candidate_pairs: int | None = None
        if mode == "batch":
            candidate_pairs = _batch(*args)
        else:
            _stream(*args, store=store, window=window, batch_size=batch_size)
    notes = []
    if store is not None:
        notes.append(f"compared with, and added to, the store {store}")
    if keep == "earliest" and tally.kept and not tally.timestamped:
        notes.append(f"no document has a {fields.timestamp!r}, so each story kept its first copy")
    outputs = output_names(unique, clusters, errors, tally)
    summary = RunSummary(
        source=label or source,
        mode=mode,
        keep=keep,
        records=tally.kept + tally.duplicates + tally.errors,
        kept=tally.kept,
        duplicates=tally.duplicates,
        errors=tally.errors,
        seconds=time.perf_counter() - started,
        stages=stages.seconds,
        candidate_pairs=candidate_pairs,
        outputs=outputs,
        notes=tuple(notes),
    )
    return RunResult(summary, tally.decided)


def _timed(
    records: Iterator[Document | BadRecord], clock: list[float]
) -> Iterator[Document | BadRecord]:
    """The records, adding the time spent producing each to ``clock[0]``."""
    while True:
        t0 = time.perf_counter()
        record = next(records, None)
        clock[0] += time.perf_counter() - t0
        if record is None:
            return
        yield record


def _batch(
    reader: Iterator[Document | BadRecord],
    cfg: DedupConfig,
    keep: KeepPolicy,
    stages: Stages,
    progress: Progress,
    tally: Tally,
    unique_out: UniqueWriter | None,
    clusters_out: LineWriter | None,
    errors_out: LineWriter,
) -> int:
    """Read everything (errors written as they come), decide, write in input order.

    The documents are sketched and decided while the rest is read (:class:`~neardup.batch.BatchRun`).
    Returns the number of candidate pairs.
    """
    docs: list[Document] = []
    progress.start("read")
    clock = [0.0]
    with BatchRun(cfg, workers=None, chars=None) as run:
        for record in _timed(reader, clock):
            progress.advance()
            if isinstance(record, BadRecord):
                errors_out.write(record.to_json())
                tally.errors += 1
            else:
                docs.append(record)
                run.add(record.id, record.text)
        progress.start("dedup", note=f"deduplicating {len(docs):,} documents…")
        result = run.finish(keep=keep, timestamps=[d.timestamp for d in docs])
    stages.add("read", clock[0])
    for name in ("sketch", "candidates", "verify", "clusters"):
        stages.add(name, result.timings.get(name, 0.0))

    progress.start("write")
    t0 = time.perf_counter()
    for doc, decision in zip(docs, result.decisions, strict=True):
        _write(doc, decision, unique_out, clusters_out)
        tally.add(doc, decision)
        progress.advance()
    _finish(unique_out, clusters_out)
    stages.add("write", time.perf_counter() - t0)
    return result.candidate_pairs


def _stream(
    reader: Iterator[Document | BadRecord],
    cfg: DedupConfig,
    keep: KeepPolicy,
    stages: Stages,
    progress: Progress,
    tally: Tally,
    unique_out: UniqueWriter | None,
    clusters_out: LineWriter | None,
    errors_out: LineWriter,
    *,
    store: str | None = None,
    window: str | None = None,
    batch_size: int = 256,
) -> None:
    """Decide records as they are read, ``batch_size`` at a time, with a Deduper on ``store``
    (memory by default); write each batch once the store has committed it."""
    deduper = Deduper(cfg, store=store or "memory://", window=window, explain=False)
    read_clock = [0.0]
    dedup_seconds = write_seconds = 0.0
    progress.start("dedup")
    batch: list[Document] = []

    def flush() -> None:
        nonlocal dedup_seconds, write_seconds
        if not batch:
            return
        t0 = time.perf_counter()
        decisions = deduper.check_and_add_many(batch)
        t1 = time.perf_counter()
        for doc, decision in zip(batch, decisions, strict=True):
            _write(doc, decision, unique_out, clusters_out)
            tally.add(doc, decision)
        progress.advance(len(batch))
        batch.clear()
        dedup_seconds += t1 - t0
        write_seconds += time.perf_counter() - t1

    try:
        for record in _timed(reader, read_clock):
            if isinstance(record, BadRecord):
                t0 = time.perf_counter()
                errors_out.write(record.to_json())
                tally.errors += 1
                progress.advance()
                write_seconds += time.perf_counter() - t0
                continue
            batch.append(record)
            if len(batch) >= batch_size:
                flush()
        flush()
    finally:
        deduper.close()
    t0 = time.perf_counter()
    _finish(unique_out, clusters_out)
    write_seconds += time.perf_counter() - t0
    stages.add("read", read_clock[0])
    stages.add("dedup", dedup_seconds)
    stages.add("write", write_seconds)
    return None


def _write(
    doc: Document,
    decision: Decision,
    unique_out: UniqueWriter | None,
    clusters_out: LineWriter | None,
) -> None:
    if clusters_out is not None:
        clusters_out.write(cluster_line(decision))
    if unique_out is not None and not decision.is_duplicate:
        unique_out.write(doc)


def _finish(unique_out: UniqueWriter | None, clusters_out: LineWriter | None) -> None:
    """Close the outputs now, so the write stage's time includes flushing them."""
    if unique_out is not None:
        unique_out.close()
    if clusters_out is not None:
        clusters_out.close()
