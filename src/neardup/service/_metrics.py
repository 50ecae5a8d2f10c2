"""Counters and latency histograms in the Prometheus text format, without a client library.

>>> m = Metrics()
>>> m.observe("GET", "/healthz", 200, 0.003)
>>> print(m.render({"documents": 3}).splitlines()[2])
neardup_http_requests_total{method="GET",route="/healthz",status="200"} 1
"""

from __future__ import annotations

import json
import os
import threading
import time
from bisect import bisect_left
from collections import defaultdict
from pathlib import Path
from typing import Any

__all__ = ["Metrics"]

#: Upper bounds of the latency buckets, in seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


#: How often a worker of ``neardup serve --workers N`` writes its counts for the others.
SHARE_EVERY = 1.0


class Metrics:
    """What this process has served: requests by route and status, their latency, and the
    decisions it returned for documents added.

    Worker processes of one service :meth:`share` a folder: each writes its counts there
    (every :data:`SHARE_EVERY` seconds while it serves, and when it stops), and each renders
    the sum of its own and everyone else's, so /metrics counts the whole service whichever
    worker answers it (the others' counts up to a second late)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, str], int] = defaultdict(int)
        self._hist: dict[str, list[int]] = {}
        self._sum: dict[str, float] = defaultdict(float)
        self._decisions: dict[str, int] = {"kept": 0, "duplicate": 0}
        #: what the deciding process of ``--workers`` decided: batches, their documents,
        #: and the seconds it spent deciding them (of its wall time)
        self._decider: dict[str, float] = {"batches": 0, "documents": 0, "seconds": 0.0}
        self._folder: Path | None = None
        self._mine: Path | None = None
        self._changed = False

    def share(self, folder: str) -> None:
        """Write this process's counts into ``folder`` and add the others' found there."""
        self._folder = Path(folder)
        self._mine = self._folder / f"{os.getpid()}.json"
        threading.Thread(target=self._keep_writing, name="neardup-metrics", daemon=True).start()

    def _keep_writing(self) -> None:
        while True:
            time.sleep(SHARE_EVERY)
            self.write()

    def write(self) -> None:
        """Write this process's counts for the other workers (when they changed)."""
        if self._mine is None or not self._changed:
            return
        with self._lock:
            self._changed = False
            data = json.dumps(self._counts())
        part = self._mine.with_suffix(".part")
        try:
            part.write_text(data)
            part.replace(self._mine)  # whole, never half written
        except OSError:  # the folder went away: the service is stopping
            pass

    def _counts(self) -> dict[str, Any]:
        return {
            "requests": [[*key, n] for key, n in self._requests.items()],
            "hist": self._hist,
            "sum": self._sum,
            "decisions": self._decisions,
            "decider": self._decider,
        }

    def _others(self) -> list[dict[str, Any]]:
        """The counts the other workers wrote."""
        if self._folder is None:
            return []
        out = []
        for path in self._folder.glob("*.json"):
            if path == self._mine:
                continue
            try:
                out.append(json.loads(path.read_text()))
            except (OSError, ValueError):  # being replaced, or gone
                continue
        return out

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one request and its latency."""
        with self._lock:
            self._requests[(method, route, str(status))] += 1
            counts = self._hist.setdefault(route, [0] * (len(BUCKETS) + 1))
            counts[bisect_left(BUCKETS, seconds)] += 1
            self._sum[route] += seconds
            self._changed = True

    def decided(self, kept: int, duplicates: int) -> None:
        """Count the decisions returned for documents added."""
        with self._lock:
            self._decisions["kept"] += kept
            self._decisions["duplicate"] += duplicates
            self._changed = True

    def batch(self, documents: int, seconds: float) -> None:
        """Count a batch the deciding process decided, and the seconds it took."""
        with self._lock:
            self._decider["batches"] += 1
            self._decider["documents"] += documents
            self._decider["seconds"] += seconds
            self._changed = True

    def render(self, store: dict[str, object] | None = None) -> str:
        """The Prometheus text exposition of everything counted (and the store's counts)."""
        others = self._others()
        out: list[str] = []
        with self._lock:
            requests = dict(self._requests)
            hist = {route: list(counts) for route, counts in self._hist.items()}
            sums = dict(self._sum)
            decisions = dict(self._decisions)
            decider = dict(self._decider)
        for other in others:
            _add(other, requests, hist, sums, decisions, decider)
        out.append("# HELP neardup_http_requests_total HTTP requests served, by route and status.")
        out.append("# TYPE neardup_http_requests_total counter")
        for (method, route, status), n in sorted(requests.items()):
            out.append(
                f'neardup_http_requests_total{{method="{_label(method)}",'
                f'route="{_label(route)}",status="{status}"}} {n}'
            )
        out.append(
            "# HELP neardup_http_request_duration_seconds Time to answer a request, by route."
        )
        out.append("# TYPE neardup_http_request_duration_seconds histogram")
        for route, counts in sorted(hist.items()):
            r = _label(route)
            total = 0
            for bound, n in zip((*BUCKETS, float("inf")), counts, strict=True):
                total += n
                le = "+Inf" if bound == float("inf") else repr(bound)
                out.append(
                    f'neardup_http_request_duration_seconds_bucket{{route="{r}",le="{le}"}} {total}'
                )
            out.append(
                f'neardup_http_request_duration_seconds_sum{{route="{r}"}} {sums.get(route, 0.0)!r}'
            )
            out.append(f'neardup_http_request_duration_seconds_count{{route="{r}"}} {total}')
        out.append(
            "# HELP neardup_decisions_total Decisions returned for documents added through "
            "this service (kept or duplicate; an id added again counts again)."
        )
        out.append("# TYPE neardup_decisions_total counter")
        for result, n in decisions.items():
            out.append(f'neardup_decisions_total{{result="{result}"}} {n}')
        if self._folder is not None:  # workers: one process decides what they prepared
            for key, name, help_text in (
                ("batches", "batches_total", "Batches the deciding process decided."),
                ("documents", "documents_total", "Documents in those batches."),
                (
                    "seconds",
                    "busy_seconds_total",
                    "Seconds the deciding process spent deciding them: its share of the "
                    "time near 1 means it is what limits the service.",
                ),
            ):
                count = decider.get(key, 0)
                out.append(f"# HELP neardup_decider_{name} {help_text}")
                out.append(f"# TYPE neardup_decider_{name} counter")
                out.append(f"neardup_decider_{name} {count if key == 'seconds' else int(count)}")
        if store:
            for key, help_text in (
                ("documents", "Documents the store holds."),
                ("kept", "Documents the store holds that were kept (one per story)."),
                ("duplicates", "Documents the store holds that duplicate an earlier one."),
            ):
                value = store.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    out.append(f"# HELP neardup_store_{key} {help_text}")
                    out.append(f"# TYPE neardup_store_{key} gauge")
                    out.append(f"neardup_store_{key} {value}")
        return "\n".join(out) + "\n"


def _add(
    other: dict[str, Any],
    requests: dict[tuple[str, str, str], int],
    hist: dict[str, list[int]],
    sums: dict[str, float],
    decisions: dict[str, int],
    decider: dict[str, float],
) -> None:
    """Add another process's counts (as :meth:`Metrics.write` wrote them) to these."""
    for *key, n in other.get("requests", ()):
        k = (str(key[0]), str(key[1]), str(key[2]))
        requests[k] = requests.get(k, 0) + int(n)
    for route, counts in other.get("hist", {}).items():
        mine = hist.setdefault(route, [0] * (len(BUCKETS) + 1))
        for i, n in enumerate(counts[: len(mine)]):
            mine[i] += int(n)
    for route, seconds in other.get("sum", {}).items():
        sums[route] = sums.get(route, 0.0) + float(seconds)
    for result, n in other.get("decisions", {}).items():
        decisions[result] = decisions.get(result, 0) + int(n)
    for key, value in other.get("decider", {}).items():
        decider[key] = decider.get(key, 0) + float(value)
