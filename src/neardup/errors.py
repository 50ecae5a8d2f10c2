"""The exceptions neardup raises: one root, and each also the builtin it is."""

from __future__ import annotations


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
