"""The local ``neardup dedup`` run: read, deduplicate, write, in timed stages.

The command line parses options and calls :func:`run_dedup`; this module reads the records
(:mod:`neardup.records`), decides with the library (a :class:`~neardup.batch.BatchRun` fed as
it reads, or a streaming :class:`~neardup.deduper.Deduper`), writes the three outputs, and
describes the run as a :class:`~neardup.run.summary.RunSummary`.
"""

from __future__ import annotations

import functools
import gc
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from ..batch import BatchRun
from ..deduper import Deduper
from ..engine import Decision, DedupConfig, KeepPolicy
from ..engine.templates import crowding
from ..errors import ConfigError, Interrupted, shielded, when_safe
from ..records import (
    DEFAULT_MAX_RECORD,
    BadRecord,
    Document,
    Fields,
    LineWriter,
    RecordReader,
    UniqueWriter,
    read_records,
)
from ..records.writers import ParquetLines, open_lines, shown_id_line
from ..store import redacted
from ..timing import Stages
from .outputs import Tally, cluster_line, output_names
from .progress import Progress
from .summary import Mode, RunResult, RunSummary

__all__ = ["run_dedup"]


def run_dedup(
    source: str | Sequence[str],
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
    output_format: str | None = None,
    duplicates: str | None = None,
    max_record_size: int = DEFAULT_MAX_RECORD,
    sketch_memory: int | None = None,
    workers: int | None = None,
    encoding: str | None = None,
) -> RunResult:
    """Deduplicate ``source`` (one input, or several read in order) into the UNIQUE,
    CLUSTERS and ERRORS outputs.

    ``unique`` and ``clusters`` may be None (not written); ``errors`` None means standard
    error. Every record read ends in CLUSTERS (documents) or ERRORS (bad records). The input
    is opened, then the store (streaming), then every output, before anything is read, so a
    missing input, a store refused or an unwritable output fails at once (and a store
    refused leaves no output behind). ``output_format`` (jsonl, csv, parquet, warc) is what
    UNIQUE is written as (by default what its name says, or the input's own format; parquet
    makes CLUSTERS Parquet too, as does a CLUSTERS path ending ``.parquet``);
    ``duplicates`` is a file for the ids of the duplicates, one a line. ``collect`` keeps
    each document with its decision in the result (for a report; it holds the whole corpus
    in memory). ``store`` (a store URL) or ``window`` decide in streaming mode against that
    store, ``batch_size`` records per atomic section. ``sketch_memory``: the batch run's
    memory for the sketches of decided documents, and ``workers`` the processes that sketch
    them (see :func:`~neardup.batch.dedup_batch`).
    (The Spark engine's run is :func:`neardup.spark.run_cli`.)
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
    tally = Tally(collect)
    opened: list[RecordReader] = []
    # SIGINT and SIGTERM end the run here, the workers stopped, saying how far it got
    say = functools.partial(_interrupted, opened=opened, tally=tally, store=store)
    with _interruptible(say), ExitStack() as stack:
        reader = stack.enter_context(
            read_records(
                source,
                fields=fields,
                fmt=fmt,
                max_record_size=max_record_size,
                encoding=encoding,
            )
        )
        opened.append(reader)
        _check_outputs_are_not_inputs(
            reader,
            {
                "-o": unique,
                "--clusters": clusters,
                "--errors": errors,
                "--duplicates-only": duplicates,
            },
        )
        deduper: Deduper | None = None
        if mode == "stream":  # before the outputs: a store refused leaves none behind
            deduper = Deduper(cfg, store=store or "memory://", window=window, explain=False)
            stack.callback(deduper.close)
        unique_out: UniqueWriter | None = None
        if unique is not None:
            header = reader.csv_header
            in_fmt = reader.format if reader.format != "csv" or header is not None else "jsonl"
            unique_out = UniqueWriter(
                unique, in_fmt, header, fields=fields, output=output_format, parts=reader.parts
            )
            stack.callback(unique_out.close)
        clusters_out: LineWriter | ParquetLines | None = None
        if clusters is not None:
            clusters_out = open_lines(
                clusters,
                "parquet" if output_format == "parquet" else None,
                columns=("id", "cluster", "duplicate_of", "extends", "score"),
            )
            stack.callback(clusters_out.close)
        dups_out = None
        if duplicates is not None:
            dups_out = LineWriter(duplicates)
            stack.callback(dups_out.close)
        errors_out = (
            LineWriter(errors) if errors is not None else LineWriter(None, stream=sys.stderr)
        )
        stack.callback(errors_out.close)
        if errors is None:
            errors_out.before_write = progress.clear
        stack.callback(progress.clear)
        stack.callback(progress.done)

        out = _Outputs(unique_out, clusters_out, dups_out)
        args = (reader, cfg, keep, stages, progress, tally, out, errors_out)
        candidate_pairs: int | None = None
        on_file, in_memory = 0, ""
        sketch_workers: int | None = None
        if deduper is None:
            candidate_pairs, load, on_file, in_memory, sketch_workers = _batch(
                *args, sketch_memory=sketch_memory, workers=workers
            )
        else:
            load = _stream(*args, deduper=deduper, batch_size=batch_size)

    notes = list(reader.notes)
    if crowded := crowding(load, cfg.common_after, cfg.chrome_passage, cfg.chrome_window):
        notes.append(crowded)
    if on_file:
        notes.append(
            f"the sketches of {on_file:,} documents were kept in a temporary file (past "
            f"--sketch-memory) and read back where needed"
            + (
                f"; but {in_memory} is held in memory (tmpfs), so the file saved none: set "
                f"TMPDIR to a folder on disk"
                if in_memory
                else ""
            )
        )
    if reader.not_documents:
        notes.append(_not_documents(reader))
    if reader.skipped_files:
        n = sum(reader.skipped_files.values())
        kinds = ", ".join(
            f"{k or 'no suffix'} ×{v:,}"
            for k, v in sorted(reader.skipped_files.items(), key=lambda kv: -kv[1])[:5]
        )
        notes.append(f"{n:,} file{'s' if n != 1 else ''} in the input folders not read ({kinds})")
    if store is not None:
        notes.append(f"compared with, and added to, the store {redacted(store)}")
    if keep == "earliest" and tally.kept and not tally.timestamped:
        notes.append(f"no document has a {fields.timestamp!r}, so each story kept its first copy")
    outputs = output_names(unique, clusters, errors, tally)
    if duplicates is not None:
        outputs["duplicates"] = "standard output" if duplicates == "-" else duplicates
    summary = RunSummary(
        source=label or reader.source,
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
        unread=tuple(reader.unread),
        sketch_workers=sketch_workers,
    )
    return RunResult(summary, tally.decided)


class _Outputs:
    """Where each decided document goes: UNIQUE (kept), CLUSTERS (all), the duplicates'
    ids; ``ids`` holds the ids the input gave as another JSON type than a string, so that
    they come back as they were."""

    def __init__(
        self,
        unique: UniqueWriter | None,
        clusters: LineWriter | ParquetLines | None,
        duplicates: LineWriter | None,
    ) -> None:
        self.unique, self.clusters, self.duplicates = unique, clusters, duplicates
        self.ids: dict[str, object] = {}

    def seen(self, doc: Document) -> None:
        if doc.id_value is not None:
            self.ids[doc.id] = doc.id_value

    def needs_text(self, doc: Document) -> bool:
        """Whether writing ``doc`` later reads its text (UNIQUE may write it from its raw
        line, its row or its capture instead)."""
        return self.unique is not None and self.unique.needs_text(doc)

    def write(self, doc: Document, decision: Decision) -> None:
        if self.clusters is not None:
            self.clusters.write(cluster_line(decision, self.ids))
        if decision.is_duplicate:
            if self.unique is not None:
                self.unique.drop(doc)
            if self.duplicates is not None:
                self.duplicates.write(shown_id_line(doc.shown_id))
        elif self.unique is not None:
            self.unique.write(doc)

    def finish(self) -> None:
        """Close the outputs now, so the write stage's time includes flushing them."""
        for out in (self.unique, self.clusters, self.duplicates):
            if out is not None:
                out.close()


def _raise_interrupted(signum: int) -> None:
    raise Interrupted(signum)


@contextmanager
def _interruptible(say: Callable[[str], str]) -> Iterator[None]:
    """Run the block so that SIGINT (Ctrl-C) and SIGTERM stop it: each raises
    :class:`~neardup.errors.Interrupted` where the run is, the block unwinds (the sketch
    workers stopped, the outputs closed, a store's open section rolled back), and the
    Interrupted that leaves says what ``say`` (given the signal's name) says.

    The handlers are set in the main thread only, and only over the default ones (a signal
    ignored, as ``nohup`` or a shell's background job ignores SIGINT, stays ignored). A
    second signal while the run unwinds is not raised again: unwinding is quick and bounded.
    """
    fired: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if not fired:
            fired.append(signum)
            when_safe(functools.partial(_raise_interrupted, signum))

    saved: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig, default in (
            (signal.SIGINT, signal.default_int_handler),
            (signal.SIGTERM, signal.SIG_DFL),
        ):
            if signal.getsignal(sig) is default:
                saved[sig] = signal.signal(sig, handler)
    try:
        yield
    except KeyboardInterrupt as exc:
        signum: int = exc.signum if isinstance(exc, Interrupted) else int(signal.SIGINT)
        raise Interrupted(signum, say(signal.Signals(signum).name)) from None
    except Exception:
        # raised inside compiled code (numba's dispatcher), the Interrupted comes out as a
        # SystemError: once a signal has fired, what unwinds the run is that signal
        if not fired:
            raise
        raise Interrupted(fired[0], say(signal.Signals(fired[0]).name)) from None
    finally:
        for number, old in saved.items():
            signal.signal(number, old)


def _interrupted(
    signal_name: str, opened: list[RecordReader], tally: Tally, store: str | None
) -> str:
    """What an interrupted run says: how far it got, and how to finish it."""
    read = opened[0].records_read if opened else 0
    written = tally.kept + tally.duplicates + tally.errors
    done = (
        f"interrupted by {signal_name} after reading {read:,} record{'s' if read != 1 else ''}; "
        f"{written:,} of them are in CLUSTERS or ERRORS, and the outputs end there"
    )
    if store is not None:
        return (
            f"{done}. Run the same command again to finish: the documents already in the store "
            f"{redacted(store)} return their decisions, and the rest are decided"
        )
    return (
        f"{done}. Run the same command again to start over; with a store (--db FILE) an "
        "interrupted run resumes: the documents already stored return their decisions"
    )


def _not_documents(reader: RecordReader) -> str:
    counts = reader.not_documents
    n = sum(counts.values())
    kinds = ", ".join(f"{k} ×{v:,}" for k, v in counts.most_common())
    return f"{n:,} WARC record{'s' if n != 1 else ''} held no document to compare ({kinds})"


def _check_outputs_are_not_inputs(reader: RecordReader, outputs: dict[str, str | None]) -> None:
    """An output that is an input file, or lies in an input folder, would destroy or be
    read as input: refuse it before anything is opened for writing."""
    folders = [os.path.realpath(s) for s in reader.sources if s != "-" and os.path.isdir(s)]
    files = {os.path.realpath(p.path): p.name for p in reader.parts if p.path != "-"}
    for flag, path in outputs.items():
        if path is None or path == "-":
            continue
        real = os.path.realpath(path)
        if real in files:
            raise ConfigError(f"{flag} {path} is the input; writing it would destroy the input")
        for folder in folders:
            if real.startswith(folder + os.sep):
                raise ConfigError(
                    f"{flag} {path} is inside the input folder {folder}; a later run would "
                    "read it as input: write it elsewhere"
                )


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


#: ``neardup dedup`` (batch) hides what it holds from the cyclic garbage collector every
#: 65,536 documents (a mask: ``len & FREEZE_EVERY == 0``)
FREEZE_EVERY = (1 << 16) - 1

#: characters: a record that waits only until it is decided (keeping the first of each
#: story) keeps a text shorter than this as it is: the copy of the record without it would
#: cost its time (a million tiny records: 2 s) to free about 100 bytes for a moment
SHORT_TEXT = 64

#: the collector's thresholds during a batch run (Python's default: 700, 10, 10)
BATCH_THRESHOLDS = (50_000, 20, 100)


@contextmanager
def _collector_spared() -> Iterator[Callable[[], None]]:
    """A function that takes every object alive out of the cyclic garbage collector's sight
    (``gc.freeze``) until the block ends, and the collector run less often meanwhile
    (:data:`BATCH_THRESHOLDS`). What a batch run holds of each document (ids, sketches,
    decisions) has no cycles, so reference counting frees it all the same: the collector's
    passes over millions of such objects took 6 of the 90 s of a million tiny records, 3.0
    s with the freezing, 0.7 s with both.

    When objects are frozen already — by the program that runs the batch, or, on Python
    3.12, the interpreter's own few hundred from its start — it freezes none: ``gc.unfreeze``
    would give those back too, and the process would not be left as it was (a million tiny
    records then take some 3-5 % longer)."""
    froze = [False]
    before = gc.get_threshold()
    free = gc.get_freeze_count() == 0

    def spare() -> None:
        if free:
            gc.freeze()
            froze[0] = True

    gc.set_threshold(*BATCH_THRESHOLDS)
    try:
        yield spare
    finally:
        gc.set_threshold(*before)
        if froze[0]:
            gc.unfreeze()


def _batch(
    reader: RecordReader,
    cfg: DedupConfig,
    keep: KeepPolicy,
    stages: Stages,
    progress: Progress,
    tally: Tally,
    out: _Outputs,
    errors_out: LineWriter,
    *,
    sketch_memory: int | None,
    workers: int | None,
) -> tuple[int, float, int, str, int]:
    """Read everything (errors written as they come), decide, write in input order; the
    candidate pairs, the chrome table's load, the documents whose sketches went to a
    temporary file past ``sketch_memory``, that file's folder if it is held in memory, and
    the worker processes that sketched (0: none).

    The documents are sketched and decided while the rest is read (:class:`~neardup.batch.BatchRun`);
    keeping the first of each story, each is written as soon as it is decided.
    """
    docs: list[Document] = []
    clock = [0.0]
    released = 0  # the documents before it are decided, and their copies let go
    # keeping the first of each story, a document's decision is final once it is decided:
    # it is written then, and the document let go (the others wait for the clusters)
    hand_out = keep == "first" and not tally.collect
    queue: deque[Document] = deque()  # handing out: the documents not yet written
    write_seconds = [0.0]

    def write(decisions: list[Decision]) -> None:
        t0 = time.perf_counter()
        with shielded():  # what is written is what the tally counts, even when interrupted
            for decision in decisions:
                doc = queue.popleft()
                out.write(doc, decision)
                tally.add(doc, decision)
        write_seconds[0] += time.perf_counter() - t0

    with (
        BatchRun(
            cfg,
            workers=workers,
            chars=None,
            input_bytes=reader.total_bytes,
            hand_out=hand_out,
            sketch_memory=sketch_memory,
        ) as run,
        _collector_spared() as spare,
    ):
        progress.watch(
            lambda: {
                "bytes": reader.bytes_read,
                "total_bytes": reader.total_bytes,
                "total_records": reader.total_records,
                # the slots of the sketches are filled up to the first document not decided
                "decided": len(run.sketches),
            }
        )
        progress.start("read")
        for record in _timed(reader, clock):
            progress.advance()
            if isinstance(record, BadRecord):
                errors_out.write(record.to_json())
                tally.errors += 1
            else:
                out.seen(record)
                run.add(record.id, record.text)
                if not len(run.ids) & FREEZE_EVERY:
                    spare()
                if (
                    not tally.collect
                    and not (hand_out and len(record.text) < SHORT_TEXT)
                    and not out.needs_text(record)
                ):
                    record = record.without_text()  # the run holds what it needs
                if hand_out:
                    queue.append(record)
                    made = run.take()
                    if made:
                        write(made)
                    continue
                docs.append(record)
                if not tally.collect:
                    released = _release_copies(docs, run, released)
        total, left = len(run.ids), len(run.ids) - run.decided
        progress.watch(None)
        progress.start(
            "dedup",
            note=f"deduplicating {total:,} documents… ({left:,} still to sketch and verify)",
        )
        timestamps = None if hand_out else [d.timestamp for d in docs]
        result = run.finish(keep=keep, timestamps=timestamps)
    stages.add("read", clock[0])
    for name in ("sketch", "candidates", "verify", "clusters"):
        stages.add(name, result.timings.get(name, 0.0))

    rest = queue if hand_out else docs
    progress.start("write", total=len(rest))
    t0 = time.perf_counter()
    for doc, decision in zip(rest, result.decisions, strict=True):
        with shielded():
            out.write(doc, decision)
            tally.add(doc, decision)
        progress.advance()
    out.finish()
    stages.add("write", write_seconds[0] + time.perf_counter() - t0)
    return (
        result.candidate_pairs,
        result.chrome_load,
        result.sketches_on_file,
        result.sketches_in_memory,
        result.sketch_workers,
    )


def _release_copies(docs: list[Document], run: BatchRun, start: int) -> int:
    """Let go the text and raw line of the documents decided since ``start`` that are
    copies: a copy is never written to UNIQUE (CLUSTERS, the duplicates' ids and a WARC
    output need its id and origin only). Returns how many documents are decided."""
    end = run.decided
    for i in range(start, end):
        doc = docs[i]
        if run.copy[i] and (doc.raw is not None or doc.text):
            docs[i] = doc.without_text(raw=True)
    return end


def _stream(
    reader: RecordReader,
    cfg: DedupConfig,
    keep: KeepPolicy,
    stages: Stages,
    progress: Progress,
    tally: Tally,
    out: _Outputs,
    errors_out: LineWriter,
    *,
    deduper: Deduper,
    batch_size: int = 256,
) -> float:
    """Decide records as they are read, ``batch_size`` at a time, with ``deduper`` (its
    store: memory by default); write each batch once the store has committed it. The chrome
    table's load at the end (the store's, as this run last read it)."""
    read_clock = [0.0]
    dedup_seconds = write_seconds = 0.0
    progress.watch(
        lambda: {
            "bytes": reader.bytes_read,
            "total_bytes": reader.total_bytes,
            "total_records": reader.total_records,
            "decided": tally.kept + tally.duplicates,
        }
    )
    progress.start("read")
    batch: list[Document] = []

    def flush() -> None:
        nonlocal dedup_seconds, write_seconds
        if not batch:
            return
        t0 = time.perf_counter()
        decisions = deduper.check_and_add_many(batch)
        t1 = time.perf_counter()
        with shielded():
            for doc, decision in zip(batch, decisions, strict=True):
                out.write(doc, decision)
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
            out.seen(record)
            if len(batch) >= batch_size:
                flush()
        flush()
        load = deduper.chrome_load()
    finally:
        deduper.close()
    t0 = time.perf_counter()
    out.finish()
    write_seconds += time.perf_counter() - t0
    stages.add("read", read_clock[0])
    stages.add("dedup", dedup_seconds)
    stages.add("write", write_seconds)
    return load
