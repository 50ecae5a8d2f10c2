"""What a run writes: the CLUSTERS line of a decision, the counts of what was written, and
where each output went (for the summary). Shared by the local and the Spark runs.

>>> print(cluster_line(Decision("b", True, "a", "a", 0.987654, "coverage")))
{"id": "b", "cluster": "a", "duplicate_of": "a", "extends": null, "score": 0.9877}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..engine import Decision
from ..records import Document, json_object_line
from ..records.document import _STRING  # a string as json_object_line writes it

__all__ = ["Tally", "cluster_line", "output_names"]


def cluster_line(decision: Decision, ids: Mapping[str, object] | None = None) -> str:
    """One line of CLUSTERS: ``{"id", "cluster", "duplicate_of", "extends", "score"}`` (score
    to 4 places): a dropped copy names what it copies, a kept document of a story seen before
    what it extends.

    ``ids`` maps an id to the value to write for it, for ids the input held as another JSON
    type than a string (an integer id comes back as an integer)."""

    d = decision
    score = round(d.score, 4)
    if ids:  # ids the input held as numbers (few runs have any)
        values = [
            None if i is None else ids.get(i, i)
            for i in (d.id, d.cluster, d.duplicate_of, d.extends)
        ]
    else:
        doc_id, cluster, copied, extended = d.id, d.cluster, d.duplicate_of, d.extends
        if (
            type(doc_id) is str
            and type(cluster) is str
            and type(score) is float
            and math.isfinite(score)
            and (copied is None or type(copied) is str)
            and (extended is None or type(extended) is str)
        ):
            # json_object_line's characters for the fields every line has, one per record
            # of a run: 3.8 -> 1.6 us a line (tests/run/test_outputs.py compares the two)
            line = (
                f'{{"id": {_STRING(doc_id)}, "cluster": {_STRING(cluster)}, "duplicate_of": '
                f'{"null" if copied is None else _STRING(copied)}, "extends": '
                f'{"null" if extended is None else _STRING(extended)}, "score": {score!r}}}'
            )
            if line.isascii():
                return line
        values = [doc_id, cluster, copied, extended]
    values.append(score)
    return json_object_line(_CLUSTER_FIELDS, values)


_CLUSTER_FIELDS = ("id", "cluster", "duplicate_of", "extends", "score")


@dataclass
class Tally:
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


def output_names(
    unique: str | None, clusters: str | None, errors: str | None, tally: Tally
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
