"""The template guard: shingles seen in many stories are boilerplate, whatever their wording.

A shingle found in ``limit`` or more distinct stories (kept documents) is a site's footer, a
sign-off or a template phrase; coverage ignores it on both sides. Counts live in a fixed
table of ``2^SLOT_BITS`` saturating bytes indexed by the top bits of the shingle code
(:func:`slots`); a few collisions only make a rare shingle look common a little sooner.

:class:`CommonShingles` is the guard the local runners update as they keep documents;
:class:`TemplateTable` is the same guard as the document at one input position sees it,
summarized by the position at which each slot became common (the Spark engine's form).
Verification takes either (:class:`TemplateGuard`).

>>> import numpy as np
>>> common = CommonShingles(limit=2)
>>> a, b = np.array([1 << 20, 2 << 20], dtype=np.uint32), np.array([2 << 20], dtype=np.uint32)
>>> common.add(a); common.add(b)
>>> common.is_common(np.array([1 << 20, 2 << 20, 3 << 20], dtype=np.uint32)).tolist()
[False, True, False]
"""

from __future__ import annotations

import zlib
from typing import Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["SLOT_BITS", "CommonShingles", "TemplateGuard", "TemplateTable", "slots"]

U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]

#: The count table has 2^SLOT_BITS slots; a shingle code's slot is its top SLOT_BITS bits.
SLOT_BITS = 26
_SHIFT = np.uint32(32 - SLOT_BITS)


def slots(codes: U32) -> npt.NDArray[np.intp]:
    """The count-table slot of each shingle code."""
    return (codes >> _SHIFT).astype(np.intp)


class TemplateGuard(Protocol):
    """What verification asks of a template guard."""

    def is_common(self, codes: U32) -> npt.NDArray[np.bool_]:
        """Which of ``codes`` are boilerplate (seen in ``limit`` stories or more)."""
        ...


class CommonShingles:
    """How many distinct stories (kept documents) each shingle has appeared in, so far."""

    def __init__(self, *, limit: int) -> None:
        self.limit = limit
        self.counts = np.zeros(1 << SLOT_BITS, dtype=np.uint8)

    def add(self, vocab: U32) -> None:
        """Count one more story for each (distinct) shingle code in ``vocab``."""
        if self.limit <= 0 or len(vocab) == 0:
            return
        at = slots(vocab)  # a fancy-index assignment counts a repeated slot once
        counts = self.counts[at]
        counts += counts < 255  # saturating
        self.counts[at] = counts

    def remove(self, vocab: U32) -> None:
        """Undo one :meth:`add` of ``vocab`` (a saturated count stays at or above the limit)."""
        if self.limit <= 0 or len(vocab) == 0:
            return
        at = slots(vocab)
        self.counts[at] = np.maximum(self.counts[at].astype(np.int16) - 1, 0).astype(np.uint8)

    def to_bytes(self) -> bytes:
        """The count table, compressed, for a store to keep (see :meth:`load`)."""
        return zlib.compress(self.counts.tobytes(), 1)

    def load(self, blob: bytes) -> None:
        """Replace the counts with those :meth:`to_bytes` saved (a table of the same size)."""
        counts = np.frombuffer(zlib.decompress(blob), dtype=np.uint8)
        if len(counts) != len(self.counts):
            raise ValueError(f"saved table has {len(counts)} slots, expected {len(self.counts)}")
        self.counts = counts.copy()

    def is_common(self, codes: U32) -> npt.NDArray[np.bool_]:
        """Which of ``codes`` have been seen in ``limit`` stories or more."""
        if self.limit <= 0:
            return np.zeros(len(codes), dtype=np.bool_)
        return self.counts[slots(codes)] >= self.limit


class TemplateTable:
    """The guard as the document at input position ``at`` sees it, from a summary of the
    whole run: the sorted slots that ever become common (``slot_ids``) and the input
    position of the ``limit``-th kept story holding each (``firsts``). A slot is common for
    ``at`` when that story came before it — what :class:`CommonShingles` says at that point
    of a run in input order."""

    def __init__(self, slot_ids: I64, firsts: I64, *, at: int, limit: int) -> None:
        self.slot_ids, self.firsts, self.at, self.limit = slot_ids, firsts, at, limit

    def is_common(self, codes: U32) -> npt.NDArray[np.bool_]:
        if self.limit <= 0 or len(self.slot_ids) == 0:
            return np.zeros(len(codes), dtype=np.bool_)
        s = slots(codes).astype(np.int64)
        pos = np.minimum(np.searchsorted(self.slot_ids, s), len(self.slot_ids) - 1)
        hit: npt.NDArray[np.bool_] = (self.slot_ids[pos] == s) & (self.firsts[pos] < self.at)
        return hit
