"""Where a run is, on standard error while it works: the stage running, its count, how much
of the input was read (bytes of the total size, records of the total when known), the
percentage, the rate and the time left — one redrawn line on a terminal, or JSON lines for
schedulers (``--progress json``).

>>> import io
>>> out = io.StringIO()
>>> p = Progress(out, enabled=True, json=True)
>>> p.watch(lambda: {"bytes": 50, "total_bytes": 200, "decided": 10})
>>> p.start("read")
>>> p.advance(20)
>>> p.flush()
>>> last = json.loads(out.getvalue().splitlines()[-1])
>>> last["stage"], last["records"], last["bytes"], last["percent"], last["decided"]
('read', 20, 50, 25.0, 10)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import TextIO

from ..records import format_size

__all__ = ["Progress"]

Probe = Callable[[], Mapping[str, int | None]]


def _duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60}:{s % 60:02d}"
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    """Progress on ``stream`` (standard error), redrawn at most every ``interval`` seconds
    (every second as JSON lines).

    Off unless ``enabled`` (the command line turns it on when standard error is a terminal,
    or when asked). A stage (:meth:`start`) counts its records (:meth:`advance`), of a
    ``total`` when it is known; :meth:`watch` adds figures read when drawing: ``bytes`` and
    ``total_bytes`` of the input, ``total_records``, and ``decided`` (documents sketched
    and verified so far).
    """

    def __init__(
        self, stream: TextIO, *, enabled: bool, interval: float = 0.25, json: bool = False
    ) -> None:
        self.stream = stream
        self.enabled = enabled
        self.json = json
        self.interval = 1.0 if json and interval == 0.25 else interval
        self._label = ""
        self._count = 0
        self._total: int | None = None
        self._start = 0.0
        self._run_start = time.perf_counter()
        self._drawn_at = 0.0
        self._shown = False
        self._probe: Probe | None = None
        self._note = ""

    def watch(self, probe: Probe | None) -> None:
        """Read ``probe()`` for the input's figures each time the progress is drawn."""
        self._probe = probe

    def start(self, label: str, *, note: str = "", total: int | None = None) -> None:
        """Begin counting a new stage (of ``total`` records, if known); ``note`` is shown at
        once instead of a count."""
        self._label, self._count, self._total, self._note = label, 0, total, note
        self._start = self._drawn_at = time.perf_counter()
        if self.json or note:
            self.flush()

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more records, redrawing if the last drawing is old enough."""
        self._count += n
        if self.enabled:
            now = time.perf_counter()
            if now - self._drawn_at >= self.interval:
                self._drawn_at = now
                self.flush()

    def figures(self) -> dict[str, object]:
        """Where the run is now, as a dict (what ``--progress json`` writes)."""
        now = time.perf_counter()
        elapsed = now - self._start
        extra = dict(self._probe()) if self._probe is not None else {}
        out: dict[str, object] = {
            "stage": self._label,
            "records": self._count,
            "elapsed": round(now - self._run_start, 2),
            "stage_elapsed": round(elapsed, 2),
            "rate": round(self._count / elapsed, 1) if elapsed > 0 else 0.0,
        }
        done = total = None
        if self._label == "read":
            out["bytes"] = extra.get("bytes")
            out["total_bytes"] = extra.get("total_bytes")
            out["total_records"] = extra.get("total_records")
            if extra.get("total_records"):
                done, total = self._count, extra.get("total_records")
            elif extra.get("bytes") is not None and extra.get("total_bytes"):
                done, total = extra.get("bytes"), extra.get("total_bytes")
        elif self._total:
            done, total = self._count, self._total
            out["total_records"] = self._total
        if done is not None and total:
            frac = min(done / total, 1.0)
            out["percent"] = round(100 * frac, 1)
            out["eta"] = round(elapsed * (1 - frac) / frac, 1) if frac > 0 else None
        if extra.get("decided") is not None:
            out["decided"] = extra.get("decided")
        if self._note:
            out["note"] = self._note
        return out

    def flush(self) -> None:
        """Draw (or write) the progress now."""
        if not self.enabled:
            return
        f = self.figures()
        if self.json:
            self.stream.write(json.dumps(f, ensure_ascii=False) + "\n")
            self.stream.flush()
            return
        self._draw(self._line(f))

    def _line(self, f: Mapping[str, object]) -> str:
        if self._note and not self._count:
            return self._note
        parts = []
        count = f"{self._count:,} records"
        if f.get("bytes") is not None:
            read = format_size(float(f["bytes"]))  # type: ignore[arg-type]
            total = f.get("total_bytes")
            parts.append(f"{read} of {format_size(float(total))}" if total else read)  # type: ignore[arg-type]
        if f.get("total_records"):
            count = f"{self._count:,} of {f['total_records']:,} records"
        if "percent" in f:
            parts.append(f"{f['percent']:.1f}%")
        parts.append(count)
        parts.append(f"{f['rate']:,.0f}/s")
        if f.get("eta") is not None:
            parts.append(f"ETA {_duration(float(f['eta']))}")  # type: ignore[arg-type]
        else:
            parts.append(_duration(float(f["stage_elapsed"])))  # type: ignore[arg-type]
        if f.get("decided") is not None:
            parts.append(f"decided {f['decided']:,}")
        return "  ".join(parts)

    def _draw(self, text: str) -> None:
        if self.enabled:
            self.stream.write(f"\r\x1b[K{self._label:<8} {text}")
            self.stream.flush()
            self._shown = True

    def done(self) -> None:
        """The run is over: a last JSON line (``{"stage": "done", ...}``) in JSON mode."""
        if self.enabled and self.json:
            self._label, self._note, self._total = "done", "", None
            self.flush()

    def clear(self) -> None:
        """Erase the line, so other output starts on a clean one."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False
