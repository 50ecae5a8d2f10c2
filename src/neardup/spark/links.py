"""Verdicts, best matches and clusters on the driver, for a run whose pairs to verify are few
(a few million at most): what the Spark frames of :mod:`neardup.spark.verify` compute, as
numpy columns and with the same engine functions, without a Spark job per step.

The verification itself stays on the executors; only its verdicts (a few numbers a pair)
come back. Each template round then costs one pass over the guard and one verification of
the pairs at risk, instead of a shuffle, a join and a checkpoint per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..engine import best_of, roots
from ..engine.decide import stories
from ..shingling import distinct

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Parents", "Verdicts", "components"]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Verdicts:
    """Same-story verdicts of ``verify(j, i)`` (``i`` earlier, ``j`` later), column by
    column: what :data:`~neardup.spark.verify.VERDICT_SCHEMA` holds."""

    i: I64
    j: I64
    score: F64
    measure: npt.NDArray[np.object_]
    copy: F64
    is_copy: B
    repeated: F64

    @classmethod
    def of(cls, table: pa.Table) -> Verdicts:
        """The verdicts of an Arrow table of :data:`~neardup.spark.verify.VERDICT_SCHEMA`."""

        def col(name: str, dtype: Any) -> Any:
            if table.num_rows == 0:
                return np.zeros(0, dtype=dtype)
            return np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=dtype)

        return cls(
            col("i", np.int64),
            col("j", np.int64),
            col("score", np.float64),
            np.asarray(table.column("measure").to_pylist(), dtype=object),
            col("copy", np.float64),
            col("is_copy", np.bool_),
            col("repeated", np.float64),
        )

    def replaced(self, i: I64, j: I64, redone: Verdicts, positions: int) -> Verdicts:
        """These verdicts without those of the pairs ``(i, j)``, and with ``redone``."""
        span = positions + 1
        gone = np.isin(self.i * span + self.j, i * span + j)
        return Verdicts(
            *(
                np.concatenate([mine[~gone], theirs])
                for mine, theirs in (
                    (self.i, redone.i),
                    (self.j, redone.j),
                    (self.score, redone.score),
                    (self.measure, redone.measure),
                    (self.copy, redone.copy),
                    (self.is_copy, redone.is_copy),
                    (self.repeated, redone.repeated),
                )
            )
        )

    def best(self) -> Parents:
        """Each later document's match as the engine picks it
        (:func:`~neardup.engine.best_of`: its earliest copy, else its highest score, the
        earliest ``i`` on ties), and whether it counts as a story for the template guard
        (:func:`~neardup.engine.counts_as_story`) — :func:`~neardup.spark.verify.best_matches`."""
        scores = np.where(self.is_copy, self.copy, self.score).astype(np.float64)
        rows = best_of(self.j, self.i, scores, self.is_copy)
        copies = self.is_copy[rows]
        return Parents(
            self.j[rows],
            self.i[rows],
            scores[rows],
            self.measure[rows],
            copies,
            stories(copies, self.repeated[rows]),
        )


@dataclass(frozen=True)
class Parents:
    """Each matched later document (``pos``, increasing) and its best match (``parent``)."""

    pos: I64
    parent: I64
    score: F64
    measure: npt.NDArray[np.object_]
    copy: B
    story: B

    def removed(self) -> I64:
        """The documents that do not count as stories (sorted): copies, and kept ones that
        mostly repeat what they extend."""
        out: I64 = self.pos[~self.story]
        return out

    def hubs(self, verdicts: Verdicts) -> B:
        """Whether each document starts a cluster of its own although it extends its parent
        (:func:`~neardup.engine.hub`): it is mostly new text, an earlier document extends
        the same parent, and it was verified the same story as none of those —
        ``_with_hubs`` of :mod:`neardup.spark.pipeline`, on arrays."""
        ext = ~self.copy
        if not ext.any():
            return np.zeros(len(self.pos), dtype=np.bool_)
        parent_of = np.where(ext, self.parent, -1)  # what each extends (-1: a copy)
        order = np.lexsort((self.pos[ext], self.parent[ext]))
        by_parent, pos_of = self.parent[ext][order], self.pos[ext][order]
        first = np.ones(len(by_parent), dtype=np.bool_)
        first[1:] = by_parent[1:] != by_parent[:-1]
        # the first document extending each parent
        first_ext, extended = pos_of[first], by_parent[first]
        at = np.minimum(np.searchsorted(extended, self.parent), len(extended) - 1)
        earlier = ext & (extended[at] == self.parent) & (first_ext[at] < self.pos)
        maybe = earlier & self.story
        # matched: a verdict (i, j) with j maybe, and i extending the same parent
        j_at = np.searchsorted(self.pos, verdicts.j)
        j_in = j_at < len(self.pos)
        j_in[j_in] &= self.pos[j_at[j_in]] == verdicts.j[j_in]
        i_at = np.searchsorted(self.pos, verdicts.i)
        i_in = i_at < len(self.pos)
        i_in[i_in] &= self.pos[i_at[i_in]] == verdicts.i[i_in]
        jx, ix = np.minimum(j_at, len(self.pos) - 1), np.minimum(i_at, len(self.pos) - 1)
        same = j_in & i_in
        same[same] &= maybe[jx[same]] & (parent_of[ix[same]] == self.parent[jx[same]])
        matched = np.zeros(len(self.pos), dtype=np.bool_)
        matched[jx[same]] = True
        hub: B = maybe & ~matched
        return hub

    def arrow(self, hub: B) -> pa.Table:
        """The links (:data:`~neardup.spark.verify.LINK_SCHEMA` and ``_hub``) as an Arrow
        table, for a Spark frame."""
        import pyarrow as pa

        return pa.table(
            {
                "_pos": pa.array(self.pos, pa.int64()),
                "_parent": pa.array(self.parent, pa.int64()),
                "_score": pa.array(self.score, pa.float64()),
                "_measure": pa.array(self.measure.tolist(), pa.string()),
                "_copy": pa.array(self.copy, pa.bool_()),
                "_story": pa.array(self.story, pa.bool_()),
                "_hub": pa.array(hub, pa.bool_()),
            }
        )


def components(pos: I64, parent: I64) -> tuple[I64, I64]:
    """The components of links ``pos -> parent`` (each to an earlier document) as
    ``(node, component)``: every node on a link, and the component's first document, as
    :func:`~neardup.spark.graph.connected_components` names it (:func:`~neardup.engine.roots`).

    >>> [c.tolist() for c in components(np.array([5, 7, 9]), np.array([2, 5, 3]))]
    [[2, 3, 5, 7, 9], [2, 3, 2, 2, 3]]
    """
    nodes = distinct(np.concatenate([pos, parent]))
    up = np.full(len(nodes), -1, dtype=np.int64)
    up[np.searchsorted(nodes, pos)] = np.searchsorted(nodes, parent)
    root = nodes[np.asarray(roots(up.tolist()), dtype=np.int64)]
    return nodes, root
