"""Decisions: which earlier document a document matches best, which document of each story
is kept, and the evidence a person reads.

- A document is a duplicate of the earlier candidate that verifies with the highest score,
  the earliest on ties (:func:`best_match` for one document, :func:`best_of` for many); a
  byte-identical copy is a duplicate of its first copy (:func:`identical`).
- Each duplicate links to its match, which came earlier, so following the links from any
  document ends at the first document of its story (:func:`roots`).
- ``keep`` chooses the document kept for each story (:func:`choose_kept`): the first (the
  streaming rule), the longest text or the earliest timestamp. Under "longest" and
  "earliest" the first of a story is itself a duplicate — of the kept document, scored by
  verifying the two.

>>> best_of(np.array([5, 5, 7]), np.array([1, 2, 3]), np.array([0.8, 0.9, 0.7])).tolist()
[1, 2]
>>> roots([-1, 0, 1, -1, 3])
[0, 0, 0, 3, 3]
>>> choose_kept(np.array([0, 0, 3]), np.array([0, 1, 3]), "longest", lengths=np.array([5, 9, 2])).tolist()
[1, 1, 3]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..passages import Passage, shared_passages
from .config import DedupConfig, KeepPolicy, check_keep
from .sketches import Sketch
from .templates import TemplateGuard
from .verify import Verdict, verify

__all__ = [
    "IDENTICAL",
    "Decision",
    "best_match",
    "best_of",
    "choose_kept",
    "evidence",
    "identical",
    "roots",
]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: The verdict on a byte-identical copy of an earlier text.
IDENTICAL = Verdict(1.0, "identical", True)


def identical() -> Verdict:
    """The verdict on a byte-identical copy of an earlier text: a duplicate, score 1.0."""
    return IDENTICAL


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict on one document.

    ``duplicate_of`` is the earlier document it matched best (None when it is kept);
    ``cluster`` is the id of the document kept for its story; ``score`` and ``measure`` say
    how close the match was; ``evidence`` holds the passages the two share.
    """

    id: str
    is_duplicate: bool
    duplicate_of: str | None
    cluster: str
    score: float
    measure: str | None
    evidence: tuple[Passage, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (evidence as its passages' texts)."""
        return {
            "id": self.id,
            "is_duplicate": self.is_duplicate,
            "duplicate_of": self.duplicate_of,
            "cluster": self.cluster,
            "score": round(self.score, 4),
            "measure": self.measure,
            "evidence": [p.text for p in self.evidence],
        }


def best_match(
    sketch: Sketch,
    candidates: Iterable[tuple[str, Sketch]],
    cfg: DedupConfig,
    guard: TemplateGuard | None,
) -> tuple[str, float, str] | None:
    """The candidate (given earliest first) that verifies with the highest score, the
    earliest on ties: its key, score and measure; None when none verifies."""
    best: tuple[str, float, str] | None = None
    for key, other in candidates:
        v = verify(sketch, other, cfg, guard)
        if v.is_duplicate and (best is None or v.score > best[1]):
            best = (key, v.score, v.measure)
            if v.score >= 1.0:
                break  # nothing scores higher, and candidates come earliest first
    return best


def best_of(later: I64, earlier: I64, scores: F64) -> I64:
    """:func:`best_match` over many verified pairs at once: for each distinct ``later``
    document (in increasing order), the row of its best pair — the highest score, the
    earliest ``earlier`` on ties."""
    if len(later) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((earlier, -scores, later))
    first = np.concatenate(([True], later[order][1:] != later[order][:-1]))
    out: I64 = order[first].astype(np.int64)
    return out


def evidence(a: Sketch, b: Sketch) -> tuple[Passage, ...]:
    """The passages two prepared texts share, longest first (what a person reads)."""
    return tuple(shared_passages(a.text, b.text, min_len=6, limit=10))


def roots(parent: Sequence[int]) -> list[int]:
    """The first document of each document's story, given each one's match (-1: none).
    Matches come earlier, so one pass in input order resolves every root."""
    root = list(range(len(parent)))
    for i, p in enumerate(parent):
        if p >= 0:
            root[i] = root[p]
    return root


def choose_kept(
    root: I64,
    position: I64,
    keep: KeepPolicy,
    *,
    lengths: I64 | None = None,
    timestamps: F64 | None = None,
) -> I64:
    """For each document (its story's ``root`` and its own ``position``), the position of
    the document kept for its story: the first (``keep="first"``: the root), the longest
    (``lengths``; the first on ties) or the one with the earliest timestamp
    (``timestamps``, NaN for none; documents without one come last; the first on ties)."""
    check_keep(keep)
    root = np.asarray(root, dtype=np.int64)
    position = np.asarray(position, dtype=np.int64)
    if keep == "first" or len(root) == 0:
        return root.copy()
    if keep == "longest":
        if lengths is None:
            raise ValueError("keep='longest' needs the lengths")
        order = np.lexsort((position, -np.asarray(lengths, dtype=np.int64), root))
    else:
        ts = np.full(len(root), np.nan) if timestamps is None else np.asarray(timestamps, float)
        missing = np.isnan(ts)
        order = np.lexsort((position, np.where(missing, 0.0, ts), missing, root))
    ordered = root[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    starts = np.flatnonzero(first)
    kept_of_group = position[order][starts]
    group = np.cumsum(first) - 1  # the group of each row of ``order``
    out = np.empty(len(root), dtype=np.int64)
    out[order] = kept_of_group[group]
    return out
