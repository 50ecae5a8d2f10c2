"""The state behind the endpoints: the Deduper, used by one thread at a time."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from ..deduper import Deduper
from ._metrics import Metrics
from ._settings import Settings

__all__ = ["Service"]

T = TypeVar("T")


class Service:
    """The state behind the endpoints: one Deduper, used by one thread at a time."""

    def __init__(self, deduper: Deduper, settings: Settings, *, owned: bool) -> None:
        self.deduper = deduper
        self.settings = settings
        self.owned = owned
        self.metrics = Metrics()
        self._lock = threading.Lock()

    @property
    def api_key(self) -> str | None:
        """The key writes need, if any."""
        return self.settings.api_key

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(deduper, *args)`` on a worker thread, one call at a time (a Deduper is
        not safe to share between threads), so the event loop keeps serving."""
        return await run_in_threadpool(self._locked, functools.partial(fn, self.deduper, *args))

    def _locked(self, fn: Callable[[], T]) -> T:
        with self._lock:
            return fn()

    def close(self) -> None:
        """Close the store when the service opened it."""
        if self.owned:
            with self._lock:
                self.deduper.close()
