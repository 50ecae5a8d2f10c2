"""The stage timer every run uses: seconds per named stage, in the order the stages ran.

>>> stages = Stages()
>>> with stages.time("sketch"):
...     pass
>>> stages.add("sketch", 1.0); list(stages.seconds), stages.seconds["sketch"] >= 1.0
(['sketch'], True)
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

__all__ = ["Stages"]


class Stages:
    """Seconds spent in each stage of a run (a stage may be entered many times)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        """Count ``seconds`` more in stage ``name``."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def merge(self, other: Mapping[str, float]) -> None:
        """Count every stage of ``other`` too."""
        for name, seconds in other.items():
            self.add(name, seconds)

    @contextmanager
    def time(self, name: str) -> Iterator[None]:
        """Count the time spent in the ``with`` block in stage ``name``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0)
