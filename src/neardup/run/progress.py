"""The progress line a run draws on standard error while it works (on a terminal)."""

from __future__ import annotations

import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """A one-line progress report on standard error, redrawn at most every ``interval`` seconds.

    Off unless ``enabled`` (the command line turns it on when standard error is a terminal).
    """

    def __init__(self, stream: TextIO, *, enabled: bool, interval: float = 0.25) -> None:
        self.stream = stream
        self.enabled = enabled
        self.interval = interval
        self._label = ""
        self._count = 0
        self._start = 0.0
        self._drawn_at = 0.0
        self._shown = False

    def start(self, label: str, *, note: str = "") -> None:
        """Begin counting a new stage; ``note`` is shown at once instead of a count."""
        self._label, self._count = label, 0
        self._start = self._drawn_at = time.perf_counter()
        if note:
            self._draw(note)

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more records, redrawing if the last drawing is old enough."""
        self._count += n
        if self.enabled:
            now = time.perf_counter()
            if now - self._drawn_at >= self.interval:
                self._drawn_at = now
                rate = self._count / max(now - self._start, 1e-9)
                self._draw(f"{self._count:,} records  {rate:,.0f}/s  {now - self._start:.0f} s")

    def _draw(self, text: str) -> None:
        if self.enabled:
            self.stream.write(f"\r\x1b[K{self._label:<8} {text}")
            self.stream.flush()
            self._shown = True

    def clear(self) -> None:
        """Erase the line, so other output starts on a clean one."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False
