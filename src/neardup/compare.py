"""Compare two texts by every measure at once, with the passages they share — and what
``neardup dedup`` would decide for the second after the first.

>>> c = compare("北京今天天气晴朗，适合出游。", "北京今天天气晴朗，适合出游！")
>>> c.scores["levenshtein"] > 0.9, len(c.scores)
(True, 11)
>>> c.dedup.verdict.is_duplicate, c.dedup.verdict.is_copy
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .engine import DedupConfig, TemplateGuard, Verdict, make_sketch, shared_text, verify
from .errors import TextTooLongError
from .measures import DEFAULT_PROCESSOR, METHODS, Processor, prepare
from .passages import Passage, shared_passages

__all__ = ["Comparison", "DedupView", "compare"]


@dataclass(frozen=True)
class DedupView:
    """What the dedup engine decides for ``b`` arriving after ``a``: the verdict (the same
    story? a copy, or a text extending ``a``?), on the texts as the engine compares them
    (normalized, boilerplate stripped: ``a`` and ``b`` here), with the shared passages that
    counted and those set aside as chrome (learned from a store, when one was given)."""

    verdict: Verdict
    a: str
    b: str
    counted: tuple[Passage, ...] = ()
    chrome: tuple[Passage, ...] = ()

    @property
    def summary(self) -> str:
        """The verdict in words."""
        v = self.verdict
        if v.edges:
            return "two stories: what they share lies only at their edges (chrome)"
        if not v.is_duplicate:
            return "two stories"
        if v.is_copy:
            return "the same story: b is a copy of a (dedup drops it)"
        return "the same story: b extends a with text of its own (dedup keeps it)"


@dataclass(frozen=True)
class Comparison:
    """Every measure's score for one pair, the passages shown as evidence, and the dedup
    engine's verdict (:class:`DedupView`). A measure that cannot compare texts this long
    (mcc, contiguity and levenshtein past their limits of cells) is left out of ``scores``
    and in ``skipped``, with why."""

    a: str
    b: str
    scores: dict[str, float]
    passages: list[Passage] = field(default_factory=list)
    dedup: DedupView | None = None
    skipped: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, float]:
        """The scores alone, keyed by measure name (what ``neardup compare --json`` prints)."""
        return dict(self.scores)


def _flip(passages: tuple[Passage, ...]) -> tuple[Passage, ...]:
    """Passages found in (later, first) as passages of (a, b) = (first, later)."""
    return tuple(Passage(p.b_start, p.a_start, p.length, p.text) for p in passages)


def compare(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    min_passage: int = 6,
    config: DedupConfig | None = None,
    guard: TemplateGuard | None = None,
) -> Comparison:
    """Score a and b with every measure (normalized once), find their shared passages, and
    verify b against a as the dedup engine does (``config``; ``guard``: the chrome a store
    has learned, e.g. ``Deduper.chrome``). ``processor=None`` compares the texts as given
    (and the engine then neither normalizes nor strips boilerplate)."""
    raw_a, raw_b = a, b
    a, b = prepare(a, b, processor)
    scores: dict[str, float] = {}
    skipped: dict[str, str] = {}
    for name, m in METHODS.items():
        try:
            scores[name] = float(m.normalized_similarity(a, b, processor=None))
        except TextTooLongError as e:  # mcc, contiguity, levenshtein on two long texts
            skipped[name] = str(e)
    cfg = config if config is not None else DedupConfig()
    if processor is None:
        cfg = DedupConfig(**{**cfg.__dict__, "normalize": False, "strip_boilerplate": False})
    first, later = make_sketch(raw_a, cfg), make_sketch(raw_b, cfg)
    counted, chrome = (_flip(found) for found in shared_text(later, first, cfg, guard))
    view = DedupView(verify(later, first, cfg, guard), first.text, later.text, counted, chrome)
    passages = shared_passages(a, b, min_len=min_passage)
    return Comparison(a, b, scores, passages, view, skipped)
