"""Counters and latency histograms in the Prometheus text format, without a client library.

>>> m = Metrics()
>>> m.observe("GET", "/healthz", 200, 0.003)
>>> print(m.render({"documents": 3}).splitlines()[2])
neardup_http_requests_total{method="GET",route="/healthz",status="200"} 1
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import defaultdict

__all__ = ["Metrics"]

#: Upper bounds of the latency buckets, in seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """What this process has served: requests by route and status, their latency, and the
    decisions it returned for documents added."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, str], int] = defaultdict(int)
        self._hist: dict[str, list[int]] = {}
        self._sum: dict[str, float] = defaultdict(float)
        self._decisions: dict[str, int] = {"kept": 0, "duplicate": 0}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one request and its latency."""
        with self._lock:
            self._requests[(method, route, str(status))] += 1
            counts = self._hist.setdefault(route, [0] * (len(BUCKETS) + 1))
            counts[bisect_left(BUCKETS, seconds)] += 1
            self._sum[route] += seconds

    def decided(self, kept: int, duplicates: int) -> None:
        """Count the decisions returned for documents added."""
        with self._lock:
            self._decisions["kept"] += kept
            self._decisions["duplicate"] += duplicates

    def render(self, store: dict[str, object] | None = None) -> str:
        """The Prometheus text exposition of everything counted (and the store's counts)."""
        out: list[str] = []
        with self._lock:
            out.append(
                "# HELP neardup_http_requests_total HTTP requests served, by route and status."
            )
            out.append("# TYPE neardup_http_requests_total counter")
            for (method, route, status), n in sorted(self._requests.items()):
                out.append(
                    f'neardup_http_requests_total{{method="{_label(method)}",'
                    f'route="{_label(route)}",status="{status}"}} {n}'
                )
            out.append(
                "# HELP neardup_http_request_duration_seconds Time to answer a request, by route."
            )
            out.append("# TYPE neardup_http_request_duration_seconds histogram")
            for route, counts in sorted(self._hist.items()):
                r = _label(route)
                total = 0
                for bound, n in zip((*BUCKETS, float("inf")), counts, strict=True):
                    total += n
                    le = "+Inf" if bound == float("inf") else repr(bound)
                    out.append(
                        f'neardup_http_request_duration_seconds_bucket{{route="{r}",le="{le}"}} '
                        f"{total}"
                    )
                out.append(
                    f'neardup_http_request_duration_seconds_sum{{route="{r}"}} {self._sum[route]!r}'
                )
                out.append(f'neardup_http_request_duration_seconds_count{{route="{r}"}} {total}')
            out.append(
                "# HELP neardup_decisions_total Decisions returned for documents added through "
                "this process (kept or duplicate; an id added again counts again)."
            )
            out.append("# TYPE neardup_decisions_total counter")
            for result, n in self._decisions.items():
                out.append(f'neardup_decisions_total{{result="{result}"}} {n}')
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
