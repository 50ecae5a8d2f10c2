"""What a run read, kept and dropped, and how long each stage took: :class:`RunSummary`.

>>> s = RunSummary("crawl.jsonl", "batch", "first", records=10, kept=6, duplicates=3, errors=1,
...                seconds=2.0, stages={"read": 0.5, "verify": 1.5})
>>> print(s.format().splitlines()[-2])
10 in → 6 kept, 3 duplicates (33.3% of documents), 1 error · 2.00 s, 5 docs/s
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..engine import Decision
from ..records import Document

__all__ = ["Mode", "RunResult", "RunSummary", "plural"]

Mode = Literal["batch", "stream"]


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
    #: why the input could not be read to its end (a truncated file, an unreadable folder)
    unread: tuple[str, ...] = ()
    #: a batch run's sketch worker processes (0: it sketched in its own process); None for
    #: a streaming run
    sketch_workers: int | None = None

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
            "notes": list(self.notes),
            "unread": list(self.unread),
            "sketch_workers": self.sketch_workers,
        }

    def format(self) -> str:
        """The stage table and the before/after line, for people."""
        details = {
            "read": f"{plural(self.records, 'record')}: {plural(self.documents, 'document')}, "
            f"{plural(self.errors, 'error')}",
            "candidates": ""
            if self.candidate_pairs is None
            else f"{plural(self.candidate_pairs, 'candidate pair')}",
            "sketch": _sketched(self.sketch_workers),
            "verify": f"{plural(self.duplicates, 'duplicate')} confirmed",
            "dedup": f"{plural(self.duplicates, 'duplicate')} found",
            "clusters": f"{plural(self.kept, 'story', 'stories')}",
        }
        written = [
            f"{n} → {self.outputs[what]}"
            for what, n in (
                ("kept", f"{self.kept:,} kept"),
                (
                    "clusters",
                    plural(
                        self.documents,
                        "row" if self.outputs.get("clusters", "").endswith(".parquet") else "line",
                    ),
                ),
            )
            if what in self.outputs
        ]
        details["write"] = ", ".join(written)
        lines = [f"neardup dedup {self.source} ({self.mode}, keep {self.keep})"]
        for name, seconds in self.stages.items():
            lines.append(f"  {name:<11}{seconds:8.3f} s   {details.get(name, '')}".rstrip())
        lines.append(f"  {'total':<11}{self.seconds:8.3f} s")
        lines.extend(f"  note: {note}" for note in self.notes)
        lines.extend(f"  not read to its end: {why}" for why in self.unread)
        share = self.duplicates / self.documents if self.documents else 0.0
        lines.append(
            f"{self.records:,} in → {self.kept:,} kept, {plural(self.duplicates, 'duplicate')} "
            f"({share:.1%} of documents), {plural(self.errors, 'error')} · "
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


def _sketched(workers: int | None) -> str:
    """Where a batch run sketched (nothing for a streaming run)."""
    if workers is None:
        return ""
    if workers == 0:
        return "in the run's own process"
    return f"on {plural(workers, 'worker process', 'worker processes')}"


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


@dataclass(frozen=True)
class RunResult:
    """The summary of a run, and (when asked for) every document with its decision."""

    summary: RunSummary
    decided: list[tuple[Document, Decision]] = field(default_factory=list)
