"""What every measure module shares: the processor default and the cutoff rule."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InputError
from ..normalize import normalize

Processor = Callable[[str], str] | None

#: Every measure normalizes its inputs first unless given ``processor=None`` (or another one).
DEFAULT_PROCESSOR: Processor = normalize


def prepare(a: str, b: str, processor: Processor) -> tuple[str, str]:
    """Check the inputs are strings and apply the processor to both."""
    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, str):
            raise InputError(f"text {name} must be a str, not {type(value).__name__}")
    if processor is not None:
        return processor(a), processor(b)
    return a, b


def cutoff(score: float, score_cutoff: float | None) -> float:
    """``score``, or 0.0 when it falls below ``score_cutoff`` (rapidfuzz's convention)."""
    if score_cutoff is not None and score < score_cutoff:
        return 0.0
    return score


def ratio(num: float, den: float) -> float:
    """num / den in [0, 1], with two empty texts counting as identical."""
    if den <= 0:
        return 1.0
    return min(1.0, max(0.0, num / den))
