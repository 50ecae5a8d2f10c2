"""The state behind the endpoints: the Deduper, used by one thread at a time, and what the
endpoints that must answer at once use instead of it."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio

from ..deduper import Deduper
from ._decider import Decider, DeciderGone
from ._errors import ServiceError, StoreDamaged, busy, store_failure
from ._metrics import Metrics
from ._probe import StoreProbe, outcome
from ._settings import Settings

__all__ = ["MAX_COALESCED", "Service"]

log = logging.getLogger("neardup.service")

T = TypeVar("T")

#: The most documents that requests waiting together are decided with in one atomic section
#: (a single batch request larger than this is still decided whole).
MAX_COALESCED = 256
#: How much longer than the queue timeout a worker waits for the decider's answer.
_DECIDER_MARGIN = 60.0


@dataclass(eq=False)
class _Job:
    """One request's work for the Deduper, waiting in line for its turn.

    ``docs`` is set for work that coalesces: ``fn(deduper, docs)`` returns one answer per
    document, so the jobs of the same ``fn`` that wait together are done in one call.
    ``state`` goes from "waiting" (in line) to "leading" (its request runs the head of the
    line now) or straight to "running" (in a batch another request runs), then "done"."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    docs: list[dict[str, object]] | None = None
    wake: anyio.Event = field(default_factory=anyio.Event)
    state: str = "waiting"
    result: Any = None
    error: BaseException | None = None

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        self.result, self.error, self.state = result, error, "done"
        self.wake.set()


class Service:
    """The state behind the endpoints: one Deduper, used by one thread at a time.

    Requests for the Deduper wait in line without holding a thread (so the endpoints that
    never need the Deduper always find one), at most ``settings.queue_timeout`` seconds and
    behind at most ``settings.max_queue`` others; past either they are answered 503 with
    Retry-After. There is no thread or task of its own: the request at the head of the line
    does the work, on a worker thread, then hands the head to the next.

    Documents to add (or to check) that wait together are decided together: the request at
    the head takes every such request behind it (up to :data:`MAX_COALESCED` documents) into
    one :meth:`~neardup.Deduper.check_and_add_many`, which makes the decisions that adding
    them one by one, in the order they came, would make, in one atomic section: one set of
    round trips to the store and one commit for them all, instead of one each. That is what
    makes a busy service cheap per request. A batch that fails for anything but the store
    is tried again document by document, so one request's fault is its own.

    When the store fails a call (it timed out, it cannot be reached), the requests waiting in
    line behind that call are answered 503 at once rather than each trying the store again:
    a hung store costs one timeout per wave of requests, not one per request. Requests that
    come later try the store again.

    A damaged SQLite file, found by the check the service starts with or by any call that
    meets the damage, makes every request for the store a 503 :class:`StoreDamaged` from
    then on: it will not mend by itself, and writing to it could make it worse."""

    def __init__(
        self, deduper: Deduper, settings: Settings, *, owned: bool, decider: str | None = None
    ) -> None:
        self.deduper = deduper
        self.settings = settings
        self.owned = owned
        self.metrics = Metrics()
        self.probe = StoreProbe(deduper.store)
        self._lock = threading.Lock()  # the Deduper, on whichever thread runs it
        self._line: deque[_Job] = deque()  # requests waiting for the Deduper, in order
        self._busy = False  # a request runs the head of the line (or is about to)
        self._damage: StoreDamaged | None = None
        self._file_check = self.probe.check_file()
        self._comparing = 0
        # the documents to add or check go to the decider of `serve --workers` (its queue and
        # the store's own wait bound how long it takes to answer)
        self._decider = (
            Decider(decider, settings.queue_timeout + _DECIDER_MARGIN) if decider else None
        )

    def warm(self) -> None:
        """Ready the Deduper for its first decision as the service starts
        (:meth:`~neardup.Deduper.warm`), where this process decides: the decider of ``serve
        --workers`` warms its own, and its workers decide nothing. A store that fails now
        is left for the requests to meet, as they would have without this."""
        if self._decider is not None:
            return
        try:
            with self._lock:
                self.deduper.warm()
        except Exception as exc:
            log.warning(
                "could not read the store's learned chrome at start: %s", exc or type(exc).__name__
            )

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

    # -- the line -----------------------------------------------------------------------------

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(deduper, *args)`` on a worker thread, one call at a time (a Deduper is
        not safe to share between threads), so the event loop keeps serving. A store that
        fails is a :class:`ServiceError` 503."""
        result: T = await self._submit(_Job(fn, args))
        return result

    async def decide(
        self,
        fn: Callable[[Deduper, list[dict[str, object]]], list[T]],
        docs: list[dict[str, object]],
    ) -> list[T]:
        """``fn(deduper, docs)``, one answer per document, as :meth:`call` runs it, but
        together with the documents of the other requests for ``fn`` that wait in line
        beside this one (in the order they came); this request's answers."""
        result: list[T] = await self._submit(_Job(fn, docs=docs))
        return result

    async def _submit(self, job: _Job) -> Any:
        damage = self.damage()
        if damage is not None:
            raise damage
        if len(self._line) >= self.settings.max_queue:
            raise busy(
                503,
                f"{len(self._line)} requests are already waiting for the store; try again later",
            )
        self._line.append(job)
        if not self._busy:  # nobody runs the line: this request does
            self._busy = True
            job.state = "leading"
        else:
            await self._wait(job)
        if job.state == "leading":
            await self._lead(job)
        if job.error is not None:
            raise job.error
        return job.result

    async def _wait(self, job: _Job) -> None:
        """Wait until it is this job's turn to lead, or until another request has done it."""
        try:
            with anyio.move_on_after(self.settings.queue_timeout):
                await job.wake.wait()
            if job.state == "waiting":  # still in line when the time ran out
                self._line.remove(job)
                raise busy(
                    503,
                    f"the store was busy for {self.settings.queue_timeout:g} s with the "
                    "requests before this one; try again later",
                )
            if job.state == "running":  # taken into a batch as the time ran out: it ends
                await job.wake.wait()
        except anyio.get_cancelled_exc_class():  # the client went away, the server stops
            if job.state in ("waiting", "leading"):
                self._line.remove(job)
            if job.state == "leading":  # its turn came: give it to the next
                self._hand_on()
            raise

    async def _lead(self, leader: _Job) -> None:
        """Run the head of the line (the leader and, when its work coalesces, the jobs of
        the same work right behind it), then hand the head on (as soon as the documents
        are sent, when a decider decides them)."""
        handed = False

        def release() -> None:
            nonlocal handed
            if not handed:
                handed = True
                self._hand_on()

        try:
            batch = [self._line.popleft()]
            assert batch[0] is leader
            if leader.docs is not None:
                size = len(leader.docs)
                while self._line:
                    nxt = self._line[0]
                    if nxt.fn is not leader.fn or nxt.docs is None:
                        break
                    if size + len(nxt.docs) > MAX_COALESCED:
                        break
                    size += len(nxt.docs)
                    batch.append(self._line.popleft())
            for job in batch:
                job.state = "running"
            with anyio.CancelScope(shield=True):  # the others in the batch wait for it
                await self._run(batch, release)
        finally:
            release()

    def _hand_on(self) -> None:
        if self._line:
            nxt = self._line[0]
            nxt.state = "leading"
            nxt.wake.set()
        else:
            self._busy = False

    async def _run(self, batch: Sequence[_Job], release: Callable[[], None]) -> None:
        damage = self.damage()
        if damage is not None:
            for job in batch:
                job.finish(error=damage)
            return
        first = batch[0]
        args = first.args if first.docs is None else ([d for j in batch for d in j.docs or ()],)
        try:
            if first.docs is not None and self._decider is not None:  # decided there
                decider = self._decider
                send = functools.partial(decider.send, self.deduper, first.fn.__name__, *args)
                sent = await anyio.to_thread.run_sync(self._locked, send)
                release()  # the next batch may be prepared and sent while this one is decided
                result = await anyio.to_thread.run_sync(decider.receive, sent)
            else:
                work = functools.partial(first.fn, self.deduper, *args)
                result = await anyio.to_thread.run_sync(self._locked, work)
        except DeciderGone as exc:
            log.error("%s", exc)
            gone = ServiceError(
                503,
                "unavailable",
                f"{exc}; try again in a moment",
                headers={"Retry-After": "1"},
            )
            for job in batch:
                job.finish(error=gone)
            return
        except Exception as exc:
            answer = store_failure(exc)
            if answer is None and len(batch) > 1:  # whose fault? each on its own
                for job in batch:
                    await self._run([job], release)
                return
            if answer is None:
                first.finish(error=exc)
                return
            self._failed(answer, exc, getattr(first.fn, "__name__", first.fn))
            for job in batch:
                job.finish(error=answer)
            return
        if first.docs is None:
            first.finish(result)
            return
        at = 0
        for job in batch:
            n = len(job.docs or ())
            job.finish(result[at : at + n])
            at += n

    def _failed(self, answer: ServiceError, exc: BaseException, what: object) -> None:
        """A store failure: say so, and answer every request waiting in line behind it."""
        log.error("store error in %s: %s", what, exc)
        if isinstance(answer, StoreDamaged):
            self._damaged(answer, exc)
        behind = ServiceError(
            answer.status,
            answer.code,
            f"{answer.message} (it failed the request before this one)",
            headers=answer.headers,
        )
        while self._line:
            self._line.popleft().finish(error=behind)

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
        self.metrics.write()  # the last counts, for the other workers
        self.probe.close()
        if self._decider is not None:
            self._decider.close()
        if self.owned:
            with self._lock:
                self.deduper.close()
