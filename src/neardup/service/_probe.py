"""Reads of the store off the Deduper's thread, each waited for only so long.

``/healthz`` and ``/metrics`` must answer at once even while the Deduper waits on a store
that stopped answering. They read the store on daemon threads of their own, never behind
the Deduper's lock, and give up waiting after their timeout; at most one read of each kind
runs at a time (a request that comes while one is running waits for that one), so a hung
store holds a thread or two, never one per request.

SQLite reads go through a connection of their own (the Deduper's connection is held for the
whole of each of its atomic sections); the other stores are safe to share across threads.
A SQLite file is also checked once when the service starts (``PRAGMA quick_check``, on a
read-only connection of its own, in the background): a file damaged in the middle answers
most reads until one meets the damage, and /healthz should say so from the start.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio

from ..store import Store
from ..store.sqlite import SQLiteStore

__all__ = ["StoreProbe", "outcome"]

T = TypeVar("T")

#: The id the health probe looks up (no document has it).
HEALTH_ID = "\x00neardup-health"


async def outcome(future: Future[T], timeout: float) -> T:
    """The result of ``future``, waited for at most ``timeout`` seconds (then TimeoutError),
    without holding a thread."""
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while not future.done():
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no answer within {timeout:g} s")
        await anyio.sleep(min(delay, left))
        delay = min(delay * 2, 0.02)
    return future.result()


def _sqlite_path(store: Store) -> str | None:
    """The file of a SQLite store that another connection can open (not ``:memory:``)."""
    if isinstance(store, SQLiteStore) and store.path not in ("", ":memory:"):
        return store.path
    return None


class StoreProbe:
    """The health probe and the counts of a store, off the Deduper's thread."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._path = _sqlite_path(store)
        self._reader: Store | None = None
        self._opening = threading.Lock()
        self._guard = threading.Lock()
        self._running: dict[str, Future[Any]] = {}
        self._closed = False

    def _store(self) -> Store:
        """The store to read from on these threads."""
        if self._path is None:
            return self.store
        with self._opening:
            if self._reader is None:
                if self._closed:
                    raise RuntimeError("the service is closed")
                self._reader = SQLiteStore(self._path, timeout=10.0)
            return self._reader

    def start(self, kind: str, fn: Callable[[], T]) -> Future[T]:
        """``fn()`` on a thread of its own, or the one of this kind already running."""
        with self._guard:
            running = self._running.get(kind)
            if running is not None and not running.done():
                return running
            future: Future[T] = Future()
            self._running[kind] = future
        threading.Thread(
            target=self._work, args=(future, fn), name=f"neardup-{kind}", daemon=True
        ).start()
        return future

    def _work(self, future: Future[T], fn: Callable[[], T]) -> None:
        try:
            future.set_result(fn())
        except BaseException as exc:
            future.set_exception(exc)

    def check_file(self) -> Future[str] | None:
        """Start checking a SQLite store's file (None for other stores): the future says
        "ok", or what is damaged."""
        path = self._path
        if path is None:
            return None
        return self.start("check", lambda: _quick_check(path))

    async def health(self, timeout: float) -> None:
        """One read from the store, within ``timeout`` seconds (else TimeoutError)."""
        await outcome(self.start("health", lambda: self._store().entries([HEALTH_ID])), timeout)

    async def stats(self, timeout: float) -> dict[str, object]:
        """What the store holds, within ``timeout`` seconds (else TimeoutError)."""
        return await outcome(self.start("stats", lambda: self._store().stats()), timeout)

    def close(self) -> None:
        """Close the connection of these reads, if one was opened."""
        with self._opening:
            self._closed = True
            reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()


def _quick_check(path: str) -> str:
    """What ``PRAGMA quick_check`` says of a SQLite file: "ok", or its first problems."""
    from urllib.parse import quote

    db = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=10.0)
    try:
        rows = db.execute("PRAGMA quick_check(3)").fetchall()
    finally:
        db.close()
    lines = [line.strip() for r in rows for line in str(r[0]).splitlines()]
    found = [line for line in lines if line and not line.startswith("***")]
    if found == ["ok"]:
        return "ok"
    return "PRAGMA quick_check: " + "; ".join(found[:3])
