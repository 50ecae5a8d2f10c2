"""The state behind the endpoints: the Deduper, used by one thread at a time, and what the
endpoints that must answer at once use instead of it."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import anyio

from ..deduper import Deduper
from ._errors import ServiceError, StoreDamaged, busy, store_failure
from ._metrics import Metrics
from ._probe import StoreProbe, outcome
from ._settings import Settings

__all__ = ["Service"]

log = logging.getLogger("neardup.service")

T = TypeVar("T")


class Service:
    """The state behind the endpoints: one Deduper, used by one thread at a time.

    A request for the Deduper waits for its turn without holding a thread (so the
    endpoints that never need the Deduper always find one), at most
    ``settings.queue_timeout`` seconds and behind at most ``settings.max_queue`` others;
    past either it is answered 503 with Retry-After. When the store fails a call (it timed
    out, it cannot be reached), the requests that were waiting behind that call are answered
    503 at once rather than each trying the store again: a hung store costs one timeout per
    wave of requests, not one per request. Requests that come later try the store again.

    A damaged SQLite file, found by the check the service starts with or by any call that
    meets the damage, makes every request for the store a 503 :class:`StoreDamaged` from
    then on: it will not mend by itself, and writing to it could make it worse."""

    def __init__(self, deduper: Deduper, settings: Settings, *, owned: bool) -> None:
        self.deduper = deduper
        self.settings = settings
        self.owned = owned
        self.metrics = Metrics()
        self.probe = StoreProbe(deduper.store)
        self._lock = threading.Lock()  # the Deduper, on whichever thread runs it
        self._turn = anyio.Lock()  # whose turn it is, waited for on the event loop
        self._waiting = 0
        self._failures = 0  # store failures so far, to fail their waiting requests fast
        self._failure: ServiceError | None = None
        self._damage: StoreDamaged | None = None
        self._file_check = self.probe.check_file()
        self._comparing = 0

    @property
    def api_key(self) -> str | None:
        """The key writes need, if any."""
        return self.settings.api_key

    def damage(self) -> StoreDamaged | None:
        """The 503 of a damaged store, once the damage is known."""
        check = self._file_check
        if self._damage is None and check is not None and check.done():
            self._file_check = None
            try:
                found = check.result()
            except Exception as exc:  # a file too damaged to check, or a check that failed
                answer = store_failure(exc)
                if isinstance(answer, StoreDamaged):
                    self._damaged(answer, exc)
                else:
                    log.warning("could not check the store's file: %s", exc)
            else:
                if found != "ok":
                    self._damaged(StoreDamaged(found), found)
        return self._damage

    def _damaged(self, answer: StoreDamaged, cause: object) -> None:
        if self._damage is None:
            log.error("the store %s is damaged: %s", self.deduper.store.url, cause)
            self._damage = answer

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(deduper, *args)`` on a worker thread, one call at a time (a Deduper is
        not safe to share between threads), so the event loop keeps serving. A store that
        fails is a :class:`ServiceError` 503."""
        damage = self.damage()
        if damage is not None:
            raise damage
        if self._waiting >= self.settings.max_queue:
            raise busy(
                503,
                f"{self._waiting} requests are already waiting for the store; try again later",
            )
        self._waiting += 1
        failures = self._failures
        try:
            with anyio.move_on_after(self.settings.queue_timeout) as wait:
                await self._turn.acquire()
        finally:
            self._waiting -= 1
        if wait.cancelled_caught:
            raise busy(
                503,
                f"the store was busy for {self.settings.queue_timeout:g} s with the requests "
                "before this one; try again later",
            )
        try:
            if self._failures != failures and self._failure is not None:
                failed = self._failure
                raise ServiceError(
                    failed.status,
                    failed.code,
                    f"{failed.message} (it failed the request before this one)",
                    headers=failed.headers,
                )
            work = functools.partial(fn, self.deduper, *args)
            return await anyio.to_thread.run_sync(self._locked, work)
        except ServiceError:
            raise
        except Exception as exc:
            answer = store_failure(exc)
            if answer is None:
                raise
            log.error("store error in %s: %s", getattr(fn, "__name__", fn), exc)
            if isinstance(answer, StoreDamaged):
                self._damaged(answer, exc)
            self._failures += 1
            self._failure = answer
            raise answer from exc
        finally:
            self._turn.release()

    @contextlib.asynccontextmanager
    async def comparing(self) -> AsyncIterator[None]:
        """A place among the ``settings.max_concurrent_compare`` comparisons that may run
        at once, or a 429 with Retry-After at once when none is free."""
        if self._comparing >= self.settings.max_concurrent_compare:
            raise busy(
                429,
                f"{self._comparing} comparisons are running, as many as this service runs at "
                "once (--max-concurrent-compare); try again in a moment",
            )
        self._comparing += 1
        try:
            yield
        finally:
            self._comparing -= 1

    def _locked(self, fn: Callable[[], T]) -> T:
        with self._lock:
            return fn()

    async def health(self) -> None:
        """Whether the store answers a read within ``settings.health_timeout`` seconds,
        without waiting for the Deduper; a :class:`ServiceError` 503 when it does not."""
        timeout = self.settings.health_timeout
        check = self._file_check
        if check is not None and not check.done():  # a large file may take longer: go on
            with contextlib.suppress(Exception):
                await outcome(check, timeout / 2)
        damage = self.damage()
        if damage is not None:
            raise damage
        try:
            await self.probe.health(timeout)
        except TimeoutError:
            raise ServiceError(
                503,
                "unavailable",
                f"the store did not answer within {timeout:g} s",
                headers={"Retry-After": "5"},
            ) from None
        except Exception as exc:
            answer = store_failure(exc)
            if answer is None:
                raise
            log.error("health probe: %s", exc)
            if isinstance(answer, StoreDamaged):
                self._damaged(answer, exc)
            raise answer from exc

    async def stats(self) -> dict[str, object]:
        """What the store holds, or nothing when it does not say within the health timeout
        (the counters of /metrics are still worth serving then)."""
        if self.damage() is not None:
            return {}
        try:
            return await self.probe.stats(self.settings.health_timeout)
        except Exception as exc:
            log.warning("store counts for /metrics: %s", exc or type(exc).__name__)
            return {}

    def close(self) -> None:
        """Close the store when the service opened it (and the probe's own connection)."""
        self.probe.close()
        if self.owned:
            with self._lock:
                self.deduper.close()
