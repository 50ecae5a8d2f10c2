"""The exceptions neardup raises: one root, and each also the builtin it is."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class NeardupError(Exception):
    """Root of every error neardup raises on purpose."""


class ConfigError(NeardupError, ValueError):
    """An option or setting has a value neardup cannot use."""


class InputError(NeardupError, ValueError):
    """A text or record cannot be used as given."""


class TextTooLongError(InputError):
    """A quadratic measure was asked to compare texts whose product of lengths is too large."""


class OutputError(NeardupError, OSError):
    """An output cannot be opened or written."""


class MissingDependencyError(NeardupError, ImportError):
    """An optional dependency is not installed."""


class StoreError(NeardupError, OSError):
    """A store (SQLite file, Redis server) cannot be reached or fails while in use."""


class EngineError(NeardupError, RuntimeError):
    """The engine a run was given could not finish it (Spark's JVM out of memory, or gone)."""


class RunWarning(RuntimeWarning):
    """Something a run did otherwise than asked, and went on: the command line prints it as
    one line on standard error."""


class WorkersCapped(RunWarning):
    """More worker processes were asked for than half the memory the process may use holds
    (:func:`~neardup.machine.workers_memory_holds`): that many were started."""


class WorkersLost(RunWarning):
    """A batch run's sketch worker process ended under it (killed: by the kernel's
    out-of-memory killer, most likely) or ran out of memory (a ``MemoryError``): the run went
    on sketching in its own process, with the same decisions, more slowly. The command line
    says so on standard error."""


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal: SIGINT (Ctrl-C) or SIGTERM. A KeyboardInterrupt, so that
    nothing that catches Exception takes it for an error of a record; ``status`` is the exit
    status shells give a process that signal ends (128 + its number: 130, 143)."""

    def __init__(self, signum: int, message: str | None = None) -> None:
        import signal

        self.signum = signum
        self.signal_name = signal.Signals(signum).name
        super().__init__(message or f"interrupted by {self.signal_name}")

    @property
    def status(self) -> int:
        return 128 + self.signum


#: how deep the main thread is in sections a signal must not cut (see :func:`shielded`)
_shield_depth = 0
#: what a signal handler asked to do while the main thread was in one
_deferred: list[Callable[[], None]] = []


@contextmanager
def shielded() -> Iterator[None]:
    """A section of the main thread that a signal handler going through :func:`when_safe`
    does not cut: such a handler's action (raising :class:`Interrupted`) waits for the
    section's end. For two steps that must both happen or neither, e.g. unlinking a
    shared-memory block and telling the resource tracker so: cut between them, the tracker
    would be left a name to clean up that is gone, and warn about it on standard error.

    (Masking the signals with ``pthread_sigmask`` does not do it: the kernel then delivers
    them to another thread, and Python runs the handler in the main thread all the same.)
    In any thread but the main one it does nothing: handlers run in the main thread only."""
    global _shield_depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _shield_depth += 1
    try:
        yield
    finally:
        _shield_depth -= 1
        if not _shield_depth and _deferred:
            act = _deferred.pop()
            _deferred.clear()
            act()


def when_safe(act: Callable[[], None]) -> None:
    """What a signal handler calls to act: now, or at the end of the :func:`shielded`
    section the main thread is in."""
    if _shield_depth:
        _deferred.append(act)
    else:
        act()
