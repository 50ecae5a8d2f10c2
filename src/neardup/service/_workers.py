"""``neardup serve --workers N``: N server processes on one listening socket and one store.

The parent binds the socket, checks that the store opens, then starts the decider and the
workers (fresh interpreters, ``spawn``) and watches them. Each worker opens its own Deduper
on the store and runs its own uvicorn server on the shared socket; the kernel hands each new
connection to one of them. The documents to add or check go from every worker to the one
decider (:mod:`~neardup.service._decider`), which decides what they sent meanwhile together;
reads and deletes stay in the workers. Deciding stays atomic across services and other
processes as it is across any processes sharing a SQLite file or a Redis (immediate
transactions; optimistic sections on Redis).

The parent only supervises: a worker or decider that ends while the service runs is
replaced (one that cannot start at all stops the service: it would fail the same way
again); SIGTERM or SIGINT stops every worker gracefully (each finishes the requests it has,
the decider answering them), and the parent then ends as a single-process server does, by
the signal it was sent.

Only the standard library and uvicorn are imported here; a worker imports the application.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

__all__ = ["STARTUP_FAILURE", "serve_workers"]

#: A worker's (or the decider's) exit status when it could not build the application (its
#: store would not open): starting another would fail the same way.
STARTUP_FAILURE = 3
#: Workers that end this soon after they started, this many times in a row, stop the service.
_QUICK = 10.0
_QUICK_LIMIT = 5
#: The longest temporary folder the decider's socket is made in (a Unix socket's path has at
#: most 107 bytes: the folder's name and "/neardup-serve-XXXXXXXX/decider.sock" must fit).
_SOCKET_ROOM = 64
#: How long workers have to finish their requests when the service stops, before they are
#: killed (uvicorn's graceful shutdown is given 10 s).
_STOP_GRACE = 20.0


def _say(message: str) -> None:
    print(f"neardup serve: {message}", file=sys.stderr, flush=True)


def _ended(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _decider(app_options: Mapping[str, Any], address: str, metrics: str) -> None:
    """The decider process (:func:`~neardup.service._decider.serve_decider`)."""
    from ._decider import serve_decider
    from ._service import MAX_COALESCED

    serve_decider(app_options, address, MAX_COALESCED, metrics)


def _worker(
    app_options: Mapping[str, Any],
    server_options: Mapping[str, Any],
    sock: socket.socket,
    metrics: str | None,
) -> None:
    """A worker process: the application on its own Deduper, served on the shared socket."""
    import uvicorn

    from ..store import opening_failure
    from .app import create_app

    try:
        app = create_app(**app_options)
    except Exception as e:  # the store that opened in the parent does not open here
        url = str(app_options.get("store", ""))
        reason = opening_failure(url, e)
        _say(f"worker [{os.getpid()}]: {reason}")
        sys.exit(STARTUP_FAILURE)
    if metrics is not None:
        app.state.service.metrics.share(metrics)
    uvicorn.Server(uvicorn.Config(app, **server_options)).run(sockets=[sock])


@dataclass
class _Slot:
    process: BaseProcess
    started: float
    what: str = "worker"


class _Supervisor:
    def __init__(
        self,
        n: int,
        app_options: Mapping[str, Any],
        server_options: Mapping[str, Any],
        sock: socket.socket,
        folder: str,
    ) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.folder = folder  # the decider's socket, and the counts /metrics adds up
        self.address = os.path.join(folder, "decider.sock")
        self.deciding = dict(app_options)
        worker_options = {**app_options, "decider": self.address}
        self.args = (worker_options, dict(server_options), sock, folder)
        self.n = n
        self.slots: list[_Slot] = []
        self.stopping: int | None = None  # the signal that stops the service
        self.quick = 0  # workers in a row that ended soon after they started

    def start_one(self, what: str = "worker") -> _Slot:
        if what == "decider":
            process = self.context.Process(
                target=_decider,
                args=(self.deciding, self.address, self.folder),
                name="neardup-decider",
            )
        else:
            process = self.context.Process(target=_worker, args=self.args, name="neardup-worker")
        process.start()
        return _Slot(process, time.monotonic(), what)

    def on_signal(self, sig: int, frame: FrameType | None) -> None:
        if self.stopping is None:
            self.stopping = sig
            self.terminate()
        elif sig == signal.SIGINT:  # a second Ctrl-C: do not wait for the requests
            for slot in self.slots:
                if slot.process.is_alive() and slot.process.pid is not None:
                    os.kill(slot.process.pid, signal.SIGKILL)

    def terminate(self) -> None:
        # SIGTERM, never a SIGINT of our own: a Ctrl-C has already reached every worker
        # (they are in the terminal's process group), and a second SIGINT would make uvicorn
        # drop the requests it is answering
        for slot in self.slots:
            if slot.process.is_alive() and slot.process.pid is not None:
                os.kill(slot.process.pid, signal.SIGTERM)

    def watch(self) -> int:
        """Keep the decider and N workers running until a signal stops the service; its
        exit status."""
        self.slots = [self.start_one("decider")] + [self.start_one() for _ in range(self.n)]
        while self.stopping is None:
            for i, slot in enumerate(self.slots):
                slot.process.join(0.1 if i == 0 else 0)
                code = slot.process.exitcode
                if code is None or self.stopping is not None:
                    continue
                pid, what = slot.process.pid, slot.what
                if code == STARTUP_FAILURE:
                    _say(f"{what} [{pid}] could not start (see above); stopping")
                    self.stop()
                    return 1
                quick = time.monotonic() - slot.started < _QUICK
                self.quick = self.quick + 1 if quick else 0
                if self.quick >= _QUICK_LIMIT:
                    _say(
                        f"{what} [{pid}] ended ({_ended(code)}), the {self.quick}th in a row "
                        f"within {_QUICK:g} s of starting; stopping"
                    )
                    self.stop()
                    return 1
                _say(f"{what} [{pid}] ended ({_ended(code)}); starting another")
                self.slots[i] = self.start_one(what)
        self.stop()
        return 0

    def stop(self) -> None:
        """Stop every worker: SIGTERM, then a kill for those still running after the grace."""
        self.terminate()
        deadline = time.monotonic() + _STOP_GRACE
        for slot in self.slots:
            slot.process.join(max(0.0, deadline - time.monotonic()))
        for slot in self.slots:
            if slot.process.is_alive():
                _say(
                    f"{slot.what} [{slot.process.pid}] did not stop within {_STOP_GRACE:g} s; "
                    "killed"
                )
                slot.process.kill()
                slot.process.join()


def serve_workers(
    n: int,
    app_options: Mapping[str, Any],
    server_options: Mapping[str, Any],
    sock: socket.socket,
) -> int:
    """Serve ``create_app(**app_options)`` in ``n`` worker processes on ``sock`` (bound,
    listening) with ``uvicorn.Config(app, **server_options)``, and one decider for them
    all, until SIGTERM or SIGINT; their /metrics add up what every worker served (through a
    temporary folder they share, which holds the decider's socket too).
    Returns the exit status (after a signal, the signal is raised again, as uvicorn does,
    so the process ends by it)."""
    caught = (signal.SIGINT, signal.SIGTERM)
    # the folder is the owner's alone (mode 0700): what crosses the decider's socket is
    # pickled, so no other user may connect to it; a Unix socket's path is at most some
    # hundred bytes, so a long TMPDIR gives way to /tmp
    short = None if len(tempfile.gettempdir()) <= _SOCKET_ROOM else "/tmp"
    with tempfile.TemporaryDirectory(prefix="neardup-serve-", dir=short) as folder:
        supervisor = _Supervisor(n, app_options, server_options, sock, folder)
        previous = {sig: signal.signal(sig, supervisor.on_signal) for sig in caught}
        try:
            status = supervisor.watch()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if supervisor.stopping is not None:
        signal.raise_signal(supervisor.stopping)
    return status
