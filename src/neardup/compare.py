"""Compare two texts by every measure at once, with the passages they share.

>>> c = compare("北京今天天气晴朗，适合出游。", "北京今天天气晴朗，适合出游！")
>>> c.scores["levenshtein"] > 0.9, len(c.scores)
(True, 11)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .measures import DEFAULT_PROCESSOR, METHODS, Processor, prepare
from .passages import Passage, shared_passages

__all__ = ["Comparison", "compare"]


@dataclass(frozen=True)
class Comparison:
    """Every measure's score for one pair, and the passages shown as evidence."""

    a: str
    b: str
    scores: dict[str, float]
    passages: list[Passage] = field(default_factory=list)

    def to_dict(self) -> dict[str, float]:
        """The scores alone, keyed by measure name (what ``neardup compare --json`` prints)."""
        return dict(self.scores)


def compare(
    a: str, b: str, *, processor: Processor = DEFAULT_PROCESSOR, min_passage: int = 6
) -> Comparison:
    """Score a and b with every measure (normalized once), and find their shared passages."""
    a, b = prepare(a, b, processor)
    scores = {
        name: float(m.normalized_similarity(a, b, processor=None)) for name, m in METHODS.items()
    }
    return Comparison(a, b, scores, shared_passages(a, b, min_len=min_passage))
