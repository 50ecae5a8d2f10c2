"""``neardup serve --workers N``: the one process that decides for every worker.

N server processes share one store, and deciding is one atomic section at a time on it (a
SQLite file's write lock; Redis's optimistic sections). When each worker decided its own
requests, each held the section for batches of the few requests its own clients had
waiting, and first counted again every story the others had kept (the learned chrome), so
two workers on two cores did fewer requests a second than one. Here the workers parse and
check requests, and prepare their documents (:meth:`~neardup.Deduper.prepare`: validated
and sketched), and send them through a Unix socket to one *decider* process, which takes
what every worker has sent meanwhile into one :meth:`~neardup.Deduper.decide_prepared` (up
to ``MAX_COALESCED`` documents): the decisions that adding them one by one, in the order
they came, would make. It answers each worker its share. A worker sends its next batch
while one is decided. Reads (a document, its cluster, the clusters) and deletes stay in
each worker, on its own connection to the store.

The supervisor (:mod:`~neardup.service._workers`) starts the decider before the workers and
starts it again if it ends; a worker sends a batch again, on a new connection, when the
decider its kept connection led to has gone (deciding again is safe: a document added is
answered the decision it was added with), and answers 503 ``unavailable`` with Retry-After
when no decider takes a connection.

A group that fails for anything but the store is decided again ask by ask, so one
request's fault is its own; a store failure is answered as the 503 the worker would have
answered (:func:`~neardup.service._errors.store_failure`), to the asks that came while it
failed too (a wave of requests costs the store one failure)."""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from types import FrameType
from typing import Any

from ..deduper import Decision, Deduper, Prepared
from ._errors import ServiceError, StoreDamaged, store_failure
from ._metrics import Metrics

__all__ = ["DECIDING", "Decider", "DeciderGone", "serve_decider"]

log = logging.getLogger("neardup.service")

#: The work a worker sends the decider, by name: whether it adds the documents.
DECIDING: dict[str, bool] = {"add": True, "check": False}
#: How long a worker tries to connect to a decider that is (re)starting.
_CONNECT_WAIT = 10.0
#: The most batches a worker has on their way to the decider at once.
_ON_WAY = 4


class DeciderGone(Exception):
    """The decider cannot be reached, or went away before it answered."""


# -- what goes through the socket -------------------------------------------------------------


def _answer_fields(answer: ServiceError) -> tuple[Any, ...]:
    return ("answer", answer.status, answer.code, answer.message, answer.headers)


def _answer(status: int, code: str, message: str, headers: dict[str, str] | None) -> ServiceError:
    """The ServiceError a decider's fields describe (a :class:`StoreDamaged` for "damaged",
    so the worker knows its store will not mend)."""
    if code == "damaged":
        damaged = StoreDamaged.__new__(StoreDamaged)
        ServiceError.__init__(damaged, status, code, message, headers=headers)
        return damaged
    return ServiceError(status, code, message, headers=headers)


def _portable(exc: BaseException) -> BaseException:
    """``exc``, or a RuntimeError saying what it was when it cannot cross the socket."""
    try:
        back = pickle.loads(pickle.dumps(exc))
    except Exception:
        back = None
    if not isinstance(back, BaseException):
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def _failure(exc: BaseException) -> tuple[Any, ...]:
    """The reply for a batch that failed: the store failure's answer, or the error."""
    answer = store_failure(exc)
    if answer is not None:
        log.error("store error in the decider: %s", exc)
        return _answer_fields(answer)
    return ("error", _portable(exc))


# -- the worker's side -------------------------------------------------------------------------


@dataclass(eq=False)
class _Sent:
    """A batch sent to the decider: the message, the connection its answer comes on, and
    whether that connection was kept from an earlier request."""

    message: tuple[str, Prepared]
    conn: Connection | None = None
    reused: bool = False


class Decider:
    """A worker's connections to the decider at ``address`` (a Unix socket's path): one
    for each batch on its way (a worker sends its next batch while one is decided)."""

    def __init__(self, address: str, timeout: float) -> None:
        self.address = address
        self.timeout = timeout  # for an answer: the decider's queue and the store's own wait
        self._free: list[Connection] = []
        self._lock = threading.Lock()
        # a worker's batches on their way, each on a connection of its own: a few, so that
        # an overloaded service waits in its workers' lines, not in connections to the decider
        self._on_way = threading.BoundedSemaphore(_ON_WAY)

    def ask(self, dd: Deduper, op: str, docs: list[dict[str, object]]) -> list[Decision]:
        """:meth:`send`, then :meth:`receive`."""
        return self.receive(self.send(dd, op, docs))

    def send(self, dd: Deduper, op: str, docs: list[dict[str, object]]) -> _Sent:
        """Send ``docs`` to be added (``op`` "add") or checked ("check") by the decider,
        prepared (validated and sketched) here with ``dd``
        (:meth:`~neardup.Deduper.prepare`); what :meth:`receive` takes. An
        :class:`~neardup.errors.InputError` names a document at fault;
        :class:`DeciderGone` when it cannot be sent."""
        sent = _Sent((op, dd.prepare(docs)))
        self._on_way.acquire()
        try:
            self._post(sent)
        except BaseException:
            self._on_way.release()
            raise
        return sent

    def _post(self, sent: _Sent) -> None:
        conn, sent.reused = self._connect()
        try:
            conn.send(sent.message)
        except OSError as exc:
            self._close(conn)
            if sent.reused:  # a connection to a decider that has gone: a new one
                self._post(sent)
                return
            raise DeciderGone("the deciding process went away") from exc
        sent.conn = conn

    def receive(self, sent: _Sent) -> list[Decision]:
        """The decisions that come for ``sent``, or what the decider raised (a
        :class:`ServiceError` for a store failure); :class:`DeciderGone` when none came.
        Sent on a connection kept from before, whose decider has gone (it was started
        again), it is sent again on a new one: deciding again is safe, a document added
        is answered the decision it was added with."""
        try:
            return self._receive(sent)
        finally:
            self._on_way.release()

    def _receive(self, sent: _Sent) -> list[Decision]:
        conn = sent.conn
        assert conn is not None
        try:
            if not conn.poll(self.timeout):
                raise DeciderGone(f"the deciding process did not answer in {self.timeout:g} s")
            reply = conn.recv()
        except (EOFError, OSError, DeciderGone) as exc:
            self._close(conn)  # an answer that comes later must not answer another request
            if isinstance(exc, DeciderGone):
                raise
            if sent.reused:
                self._post(sent)
                return self._receive(sent)
            raise DeciderGone("the deciding process went away before it answered") from exc
        with self._lock:
            self._free.append(conn)
        kind = reply[0]
        if kind == "ok":
            decisions: list[Decision] = reply[1]
            return decisions
        if kind == "answer":
            raise _answer(*reply[1:])
        raise reply[1]

    def _connect(self) -> tuple[Connection, bool]:
        """A connection, and whether it was kept from an earlier request."""
        with self._lock:
            if self._free:
                return self._free.pop(), True
        deadline = time.monotonic() + _CONNECT_WAIT
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.address)
            except OSError:  # not listening yet (starting, or starting again)
                sock.close()
                if time.monotonic() >= deadline:
                    raise DeciderGone(
                        f"the deciding process did not take a connection in {_CONNECT_WAIT:g} s"
                    ) from None
                time.sleep(0.05)
                continue
            return Connection(sock.detach()), False

    def _close(self, conn: Connection) -> None:
        with contextlib.suppress(OSError):
            conn.close()

    def close(self) -> None:
        with self._lock:
            free, self._free = self._free, []
        for conn in free:
            self._close(conn)


# -- the decider's side ------------------------------------------------------------------------

_Ask = tuple[Connection, str, Prepared]


class _Loop:
    """The decider's loop: take every request waiting on any connection, decide them in
    groups, answer each its share."""

    def __init__(
        self, dd: Deduper, listener: socket.socket, most: int, metrics: Metrics | None = None
    ) -> None:
        self.dd = dd
        self.listener = listener
        self.most = most
        self.metrics = metrics if metrics is not None else Metrics()
        self.conns: list[Connection] = []
        self.stopping = False

    def run(self) -> None:
        # after a signal: answer what comes until every worker has closed its connection
        while not (self.stopping and not self.conns):
            ready = wait([self.listener, *self.conns], timeout=0.5)
            asks = self._take(ready)
            if asks:  # and whatever else came meanwhile
                asks += self._waiting()
            groups = self._groups(asks)
            for k, group in enumerate(groups):
                failed = self._decide(group)
                if failed is not None:  # a wave of requests costs the store one failure
                    behind = [a for g in groups[k + 1 :] for a in g]
                    behind += self._waiting()
                    for conn, _, _ in behind:
                        self._send(conn, failed)
                    break

    def _waiting(self) -> list[_Ask]:
        """Every ask that has come and is not taken yet (on connections made meanwhile too;
        a connection that cannot be taken, out of file descriptors, waits for the next
        round instead of being tried again and again)."""
        out: list[_Ask] = []
        while True:
            conns = len(self.conns)
            ready = wait([self.listener, *self.conns], timeout=0)
            got = self._take(ready)
            out += got
            if not got and len(self.conns) == conns:
                return out

    def _take(self, ready: Sequence[object]) -> list[_Ask]:
        asks: list[_Ask] = []
        for r in ready:
            if r is self.listener:
                with contextlib.suppress(OSError):
                    sock, _ = self.listener.accept()
                    sock.setblocking(True)
                    self.conns.append(Connection(sock.detach()))
                continue
            assert isinstance(r, Connection)
            try:
                op, prepared = r.recv()
            except (EOFError, OSError):
                self._drop(r)
                continue
            except Exception as exc:  # a message that does not unpickle: a bug
                log.error("the decider could not read a request: %s", exc)
                self._drop(r)
                continue
            asks.append((r, op, prepared))
        return asks

    def _groups(self, asks: list[_Ask]) -> list[list[_Ask]]:
        """Runs of asks for the same work, in the order they came, of at most ``most``
        documents (one ask larger than that is a group of its own)."""
        groups: list[list[_Ask]] = []
        size = 0
        for ask in asks:
            g = groups[-1] if groups else None
            if g is not None and g[0][1] == ask[1] and size + len(ask[2]) <= self.most:
                g.append(ask)
                size += len(ask[2])
            else:
                groups.append([ask])
                size = len(ask[2])
        return groups

    def _decide(self, group: list[_Ask]) -> tuple[Any, ...] | None:
        """Decide a group and answer its asks; the reply for the asks behind it when the
        store failed (they are answered it at once, as a worker's line is)."""
        add = DECIDING.get(group[0][1])
        if add is None:
            for conn, op, _ in group:
                self._send(conn, ("error", RuntimeError(f"no such work: {op!r}")))
            return None
        prepared = Prepared.join([p for _, _, p in group])
        began = time.perf_counter()
        try:
            decisions = self.dd.decide_prepared(prepared, add=add)
        except Exception as exc:
            answer = store_failure(exc)
            if len(group) > 1 and answer is None:  # whose fault? each on its own
                for k, ask in enumerate(group):
                    failed = self._decide([ask])
                    if failed is not None:  # the store failed meanwhile: the rest get it
                        for conn, _, _ in group[k + 1 :]:
                            self._send(conn, failed)
                        return failed
                return None
            reply = _failure(exc)
            for conn, _, _ in group:
                self._send(conn, reply)
            if answer is None:
                return None
            return _answer_fields(
                ServiceError(
                    answer.status,
                    answer.code,
                    f"{answer.message} (it failed the request before this one)",
                    headers=answer.headers,
                )
            )
        self.metrics.batch(len(prepared), time.perf_counter() - began)
        at = 0
        for conn, _, p in group:
            self._send(conn, ("ok", decisions[at : at + len(p)]))
            at += len(p)
        return None

    def _send(self, conn: Connection, reply: tuple[Any, ...]) -> None:
        try:
            conn.send(reply)
        except (OSError, ValueError):  # the worker went away (or stopped waiting)
            self._drop(conn)

    def _drop(self, conn: Connection) -> None:
        with contextlib.suppress(OSError):
            conn.close()
        if conn in self.conns:
            self.conns.remove(conn)


def serve_decider(
    app_options: Mapping[str, Any], address: str, most: int, metrics: str | None = None
) -> None:
    """The decider process: a Deduper on the workers' store, listening at ``address``;
    what it decides is counted in the workers' shared ``metrics`` folder.

    Exits with :data:`~neardup.service._workers.STARTUP_FAILURE` when its store does not
    open. SIGTERM or SIGINT: it goes on answering until every worker has closed its
    connection (the workers finish their requests first), then closes the store."""
    from ..engine.warm import load_kernels
    from ..store import opening_failure
    from ._workers import STARTUP_FAILURE, _say

    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(message)s")
    url = str(app_options.get("store", ""))
    try:
        dd = Deduper(store=url, window=app_options.get("window"))
    except Exception as e:
        reason = opening_failure(url, e)
        _say(f"decider [{os.getpid()}]: {reason}")
        sys.exit(STARTUP_FAILURE)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(address)  # left by a decider that was killed
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address)
        listener.listen(64)
    except OSError as e:
        _say(f"decider [{os.getpid()}]: cannot listen on {address}: {e.strerror or e}")
        dd.close()
        sys.exit(STARTUP_FAILURE)
    counts = Metrics()
    if metrics is not None:  # the workers' /metrics add what it decided
        counts.share(metrics)
    loop = _Loop(dd, listener, most, counts)

    def on_signal(sig: int, frame: FrameType | None) -> None:
        loop.stopping = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    try:
        load_kernels(dd.config)
        try:  # the learned chrome, read and in memory before the first request comes
            dd.warm()
        except Exception as exc:  # the store failing now: the requests meet it, answered
            log.warning("decider: could not read the store's learned chrome at start: %s", exc)
        loop.run()
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(address)
        counts.write()
        dd.close()
