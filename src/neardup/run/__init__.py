"""The run layer under the command line: a whole ``neardup dedup`` run — read, decide, write
the outputs, report progress and the summary — for the local engine (:mod:`.local`), with
the pieces the Spark engine's run shares (:mod:`.outputs`, :mod:`.summary`,
:mod:`.progress`, :mod:`.report`)."""

from __future__ import annotations

from .local import run_dedup
from .outputs import Tally, cluster_line, output_names
from .progress import Progress
from .report import format_sample_report
from .summary import Mode, RunResult, RunSummary

__all__ = [
    "Mode",
    "Progress",
    "RunResult",
    "RunSummary",
    "Tally",
    "cluster_line",
    "format_sample_report",
    "output_names",
    "run_dedup",
]
