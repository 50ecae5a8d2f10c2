"""The ``neardup dedup`` run behind the command line: read, deduplicate, write, in timed stages.

The command line parses options and calls :func:`run_dedup`; this module reads the records
(:mod:`neardup.records`), decides with the library (the run behind
:func:`~neardup.deduper.dedup_batch`, fed as it reads, or a streaming
:class:`~neardup.deduper.Deduper`), writes the three outputs, and describes the run
as a :class:`RunSummary`. It also formats the summary and the ``--sample`` report.

>>> s = RunSummary("crawl.jsonl", "batch", "first", records=10, kept=6, duplicates=3, errors=1,
...                seconds=2.0, stages={"read": 0.5, "verify": 1.5})
>>> print(s.format().splitlines()[-2])
10 in → 6 kept, 3 duplicates (33.3% of documents), 1 error · 2.00 s, 5 docs/s
"""

from __future__ import annotations

import json
import sys
import time
import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Literal, TextIO

from .deduper import Decision, Deduper, KeepPolicy, _BatchRun
from .engine import DedupConfig
from .errors import ConfigError
from .records import (
    BadRecord,
    Document,
    Fields,
    LineWriter,
    UniqueWriter,
    json_line,
    read_records,
)

__all__ = [
    "Progress",
    "RunResult",
    "RunSummary",
    "cluster_line",
    "format_sample_report",
    "run_dedup",
]

Mode = Literal["batch", "stream"]


# -- small pieces ------------------------------------------------------------------------------


def cluster_line(decision: Decision) -> str:
    """One line of CLUSTERS: ``{"id", "cluster", "duplicate_of", "score"}`` (score to 4 places).

    >>> print(cluster_line(Decision("b", True, "a", "a", 0.987654, "coverage")))
    {"id": "b", "cluster": "a", "duplicate_of": "a", "score": 0.9877}
    """
    return json_line(
        {
            "id": decision.id,
            "cluster": decision.cluster,
            "duplicate_of": decision.duplicate_of,
            "score": round(decision.score, 4),
        }
    )


class Progress:
    """A one-line progress report on standard error, redrawn at most every ``interval`` seconds.

    Off unless ``enabled`` (the command line turns it on when standard error is a terminal).
    """

    def __init__(self, stream: TextIO, *, enabled: bool, interval: float = 0.25) -> None:
        self.stream = stream
        self.enabled = enabled
        self.interval = interval
        self._label = ""
        self._count = 0
        self._start = 0.0
        self._drawn_at = 0.0
        self._shown = False

    def start(self, label: str, *, note: str = "") -> None:
        """Begin counting a new stage; ``note`` is shown at once instead of a count."""
        self._label, self._count = label, 0
        self._start = self._drawn_at = time.perf_counter()
        if note:
            self._draw(note)

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more records, redrawing if the last drawing is old enough."""
        self._count += n
        if self.enabled:
            now = time.perf_counter()
            if now - self._drawn_at >= self.interval:
                self._drawn_at = now
                rate = self._count / max(now - self._start, 1e-9)
                self._draw(f"{self._count:,} records  {rate:,.0f}/s  {now - self._start:.0f} s")

    def _draw(self, text: str) -> None:
        if self.enabled:
            self.stream.write(f"\r\x1b[K{self._label:<8} {text}")
            self.stream.flush()
            self._shown = True

    def clear(self) -> None:
        """Erase the line, so other output starts on a clean one."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


@dataclass
class _Tally:
    """Counts of a run, and (with ``collect``) every document with its decision."""

    collect: bool
    errors: int = 0
    kept: int = 0
    duplicates: int = 0
    timestamped: int = 0
    decided: list[tuple[Document, Decision]] = field(default_factory=list)

    def add(self, doc: Document, decision: Decision) -> None:
        if decision.is_duplicate:
            self.duplicates += 1
        else:
            self.kept += 1
        if doc.timestamp is not None:
            self.timestamped += 1
        if self.collect:
            self.decided.append((doc, decision))


class _Stages:
    """Seconds spent in each stage of the run, in the order the stages ran."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds


# -- the summary -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSummary:
    """What a run read, kept and dropped, and how long each stage took."""

    source: str
    mode: Mode
    keep: str
    records: int  # every record read: documents and errors
    kept: int
    duplicates: int
    errors: int
    seconds: float
    stages: Mapping[str, float] = field(default_factory=dict)
    candidate_pairs: int | None = None
    outputs: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def documents(self) -> int:
        """Records that could be used: kept plus duplicates."""
        return self.kept + self.duplicates

    @property
    def docs_per_second(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict of the numbers (``in`` is every record read)."""
        return {
            "source": self.source,
            "mode": self.mode,
            "keep": self.keep,
            "in": self.records,
            "documents": self.documents,
            "kept": self.kept,
            "duplicates": self.duplicates,
            "errors": self.errors,
            "seconds": round(self.seconds, 4),
            "docs_per_second": round(self.docs_per_second, 1),
            "candidate_pairs": self.candidate_pairs,
            "stages": {name: round(s, 4) for name, s in self.stages.items()},
            "outputs": dict(self.outputs),
        }

    def format(self) -> str:
        """The stage table and the before/after line, for people."""
        details = {
            "read": f"{_plural(self.records, 'record')}: {_plural(self.documents, 'document')}, "
            f"{_plural(self.errors, 'error')}",
            "candidates": ""
            if self.candidate_pairs is None
            else f"{_plural(self.candidate_pairs, 'candidate pair')}",
            "verify": f"{_plural(self.duplicates, 'duplicate')} confirmed",
            "dedup": f"{_plural(self.duplicates, 'duplicate')} found",
            "clusters": f"{_plural(self.kept, 'story', 'stories')}",
        }
        written = [
            f"{n} → {self.outputs[what]}"
            for what, n in (
                ("kept", f"{self.kept:,} kept"),
                ("clusters", _plural(self.documents, "line")),
            )
            if what in self.outputs
        ]
        details["write"] = ", ".join(written)
        lines = [f"neardup dedup {self.source} ({self.mode}, keep {self.keep})"]
        for name, seconds in self.stages.items():
            lines.append(f"  {name:<11}{seconds:8.3f} s   {details.get(name, '')}".rstrip())
        lines.append(f"  {'total':<11}{self.seconds:8.3f} s")
        lines.extend(f"  note: {note}" for note in self.notes)
        share = self.duplicates / self.documents if self.documents else 0.0
        lines.append(
            f"{self.records:,} in → {self.kept:,} kept, {_plural(self.duplicates, 'duplicate')} "
            f"({share:.1%} of documents), {_plural(self.errors, 'error')} · "
            f"{self.seconds:.2f} s, {self.docs_per_second:,.0f} docs/s"
        )
        if self.errors:
            were = (
                "record could not be used; it is"
                if self.errors == 1
                else "records could not be used; they are"
            )
            lines.append(
                f"{self.errors:,} {were} listed in {self.outputs.get('errors', 'ERRORS')}, "
                "and every other record was deduplicated."
            )
        return "\n".join(lines)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


# -- the run -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunResult:
    """The summary of a run, and (when asked for) every document with its decision."""

    summary: RunSummary
    decided: list[tuple[Document, Decision]] = field(default_factory=list)


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
    engine: str = "local",
    spark_master: str = "local[*]",
) -> RunResult:
    """Deduplicate ``source`` into the UNIQUE, CLUSTERS and ERRORS outputs.

    ``unique`` and ``clusters`` may be None (not written); ``errors`` None means standard
    error. Every record read ends in CLUSTERS (documents) or ERRORS (bad records). The input
    is opened, and then every output, before anything is read, so a missing input or an
    unwritable output fails at once. ``collect`` keeps each document with its decision in
    the result (for a report; it holds the whole corpus in memory). ``store`` (a store URL)
    or ``window`` decide in streaming mode against that store, ``batch_size`` records per
    atomic section. ``engine="spark"`` runs the batch on Spark at ``spark_master``
    (:func:`neardup.spark.run_cli`; JSONL or Parquet input, the same outputs).
    """
    if engine == "spark":
        if mode == "stream" or store is not None or window is not None:
            raise ConfigError(
                "--engine spark deduplicates the whole input at once; "
                "drop --stream, --db/--store and --window"
            )
        from .spark import run_cli

        return run_cli(
            source,
            unique=unique,
            clusters=clusters,
            errors=errors,
            master=spark_master,
            fields=fields,
            fmt=fmt,
            config=config,
            keep=keep,
            collect=collect,
            label=label,
        )
    if engine != "local":
        raise ConfigError(f"engine must be 'local' or 'spark', got {engine!r}")
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
    stages = _Stages()
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

        tally = _Tally(collect)
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
    outputs = _outputs(unique, clusters, errors, tally)
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


def _outputs(
    unique: str | None, clusters: str | None, errors: str | None, tally: _Tally
) -> dict[str, str]:
    """Where the run wrote its kept records, clusters and errors, for the summary."""
    outputs = {}
    if unique is not None:
        outputs["kept"] = "standard output" if unique == "-" else unique
    if clusters is not None:
        outputs["clusters"] = "standard output" if clusters == "-" else clusters
    if tally.errors:
        outputs["errors"] = {None: "standard error", "-": "standard output"}.get(
            errors, errors or ""
        )
    return outputs


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
    stages: _Stages,
    progress: Progress,
    tally: _Tally,
    unique_out: UniqueWriter | None,
    clusters_out: LineWriter | None,
    errors_out: LineWriter,
) -> int:
    """Read everything (errors written as they come), decide, write in input order.

    The documents are sketched and decided while the rest is read (:class:`_BatchRun`).
    Returns the number of candidate pairs.
    """
    docs: list[Document] = []
    progress.start("read")
    clock = [0.0]
    with _BatchRun(cfg, workers=None, chars=None) as run:
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
    stages: _Stages,
    progress: Progress,
    tally: _Tally,
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


# -- the --sample report -----------------------------------------------------------------------


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal (CJK and other wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _fit(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` columns (with …) and padded to exactly that."""
    text = " ".join(text.split())
    text = text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate cannot be shown
    if _width(text) > width:
        out, used = [], 0
        for c in text:
            w = _width(c)
            if used + w > width - 1:
                break
            out.append(c)
            used += w
        text = "".join(out) + "…"
    return text + " " * (width - _width(text))


def _headline(doc: Document) -> str:
    return doc.title or doc.text


def format_sample_report(decided: list[tuple[Document, Decision]], *, width: int = 60) -> str:
    """Each story with the copy kept and every duplicate merged into it, by title and score.

    Stories are in the order their kept copy came in; stories with no duplicate are listed
    together at the end. When the records carry the sample's own labels (``cluster``), a
    last line says how the result agrees with them.
    """
    members: dict[str, list[tuple[Document, Decision]]] = {}
    for doc, decision in decided:
        members.setdefault(decision.cluster, []).append((doc, decision))
    by_id = {doc.id: doc for doc, _ in decided}
    groups = [(by_id[c], m) for c, m in members.items() if len(m) > 1]
    alone = [by_id[c] for c, m in members.items() if len(m) == 1]
    n_dup = sum(1 for _, d in decided if d.is_duplicate)

    lines = [
        f"{_plural(len(decided), 'document')} → {_plural(len(members), 'story', 'stories')} kept, "
        f"{_plural(n_dup, 'duplicate')} merged into them.",
        "score: how much of the shorter text the other one covers (1 = all of it).",
        "",
    ]
    for k, (kept, group) in enumerate(groups, 1):
        lines.append(f"story {k}: {_plural(len(group) - 1, 'duplicate')}")
        lines.append(f"  kept    {_fit(_headline(kept), width)}  {kept.id}")
        for doc, decision in group:
            if doc.id == kept.id:
                continue
            via = "" if decision.duplicate_of == kept.id else f"  (matched {decision.duplicate_of})"
            lines.append(f"  {decision.score:.4f}  {_fit(_headline(doc), width)}  {doc.id}{via}")
        lines.append("")
    if alone:
        lines.append(f"kept alone, no duplicate found ({len(alone)}):")
        lines.extend(f"  kept    {_fit(_headline(doc), width)}  {doc.id}" for doc in alone)
        lines.append("")
    check = _label_check(decided)
    if check:
        lines.append(check)
        lines.append("")
    return "\n".join(lines)


def _label_check(decided: list[tuple[Document, Decision]]) -> str:
    """How the decisions agree with the records' own ``cluster`` labels ("" without labels)."""
    truth: dict[str, str] = {}
    for doc, _ in decided:
        try:
            label = json.loads(doc.raw or "").get("cluster")
        except (ValueError, AttributeError):
            return ""
        if not isinstance(label, str):
            return ""
        truth[doc.id] = label
    cluster_of = {doc.id: d.cluster for doc, d in decided}
    first_of: dict[str, str] = {}
    for doc, _ in decided:
        first_of.setdefault(truth[doc.id], doc.id)
    copies = [doc.id for doc, _ in decided if first_of[truth[doc.id]] != doc.id]
    missed = [i for i in copies if cluster_of[i] != cluster_of[first_of[truth[i]]]]
    merged_wrongly = [doc.id for doc, d in decided if truth[d.cluster] != truth[doc.id]]
    lines = [
        f"Against the sample's own labels: {len(copies) - len(missed)} of {len(copies)} "
        "reprints joined their story"
        + ("" if merged_wrongly else ", and no two stories were merged.")
    ]
    if missed:
        lines.append(f"  missed: {', '.join(missed)}")
    if merged_wrongly:
        lines.append(f"  merged into another story: {', '.join(merged_wrongly)}")
    return "\n".join(lines)
