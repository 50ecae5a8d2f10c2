"""Compiled kernels (numba) for the work done per document and per pair, and when to use them.

Every kernel computes exactly what a numpy function of the engine computes — the same
shingle codes, signatures and vocabularies bit for bit, the same placements and scores —
and that numpy code stays the reference the tests compare the kernels with. The kernels
pay off on many documents; loading them costs a process about 0.3 s (importing numba, then
the machine code numba cached on disk at the first run), and the first run on a machine
compiles them (a few seconds, once). So:

- ``NEARDUP_KERNELS=off`` (or numba missing): never; ``on``: always;
- ``auto`` (the default): once a process has done enough work to pay for them (see
  :func:`wanted`), and from then on for every call, since they are loaded. A ``neardup
  compare`` or a ``neardup dedup --sample`` never loads them.

>>> mode() in ("on", "off", "auto")
True
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

__all__ = ["AUTO_AT", "loaded", "mode", "wanted", "work_done"]

#: Characters of text (or units of pairs) a process handles with numpy before ``auto``
#: loads the kernels: about what loading them costs, at the numpy path's speed.
AUTO_AT = 1_000_000

_state = {"work": 0, "loaded": False}
_available: bool | None = None


def mode() -> str:
    """``on``, ``off`` or ``auto``, from the ``NEARDUP_KERNELS`` environment variable (read
    at every call: a process may change it)."""
    value = _variable()
    known = _MODES.get(value)
    if known is None:
        word = "auto" if value is None else _decoded(value).strip().lower()
        known = "on" if word in _ON else "off" if word in _OFF else "auto"
        _MODES[value] = known
    return known


def _environment() -> tuple[Any, Any, Any]:
    """The mapping ``os.environ`` keeps its variables in, the variable's key in it, and how
    a value is read back (CPython's ``os.environ``); or Nones, where it has none of them."""
    environ: Any = os.environ
    try:
        data, key, decode = environ._data, environ.encodekey("NEARDUP_KERNELS"), environ.decodevalue
    except AttributeError:  # pragma: no cover - another Python's os.environ
        return None, None, None
    return (data, key, decode) if isinstance(data, dict) else (None, None, None)


#: ``os.environ.get(...)`` raises and catches a KeyError inside when the variable is not
#: set (most processes): 1.4 us, once per story and per pair verified; the mapping it
#: reads answers in a tenth of that (what os.environ.get returns, read the same way)
_DATA, _KEY, _DECODE = _environment()


def _variable() -> object:
    """The variable's value as os.environ keeps it (None: not set)."""
    if _DATA is not None:
        return _DATA.get(_KEY)
    return os.environ.get("NEARDUP_KERNELS")


def _decoded(value: object) -> str:
    """A value of the variable as a string (os.environ keeps bytes on POSIX). (Not named
    after a kernel module: importing one sets the package's attribute of its name.)"""
    return value if isinstance(value, str) else str(_DECODE(value))


_ON = ("1", "on", "true", "yes")
_OFF = ("0", "off", "false", "no")
#: each value of the variable seen (as os.environ keeps it), as a mode (per-pair calls ask
#: often)
_MODES: dict[object, str] = {}


def _numba_available() -> bool:
    global _available
    if _available is None:
        _available = importlib.util.find_spec("numba") is not None
    return _available


def possible() -> bool:
    """Whether this process may use the kernels at all: numba is installed and they are not
    turned off (a structure that only the kernels read fast may choose its layout by it)."""
    return mode() != "off" and _numba_available()


def loaded() -> bool:
    """Whether this process has loaded the kernels (they are then used for everything)."""
    return bool(_state["loaded"])


def work_done(amount: int) -> None:
    """Count ``amount`` (characters sketched, units verified) done by the numpy path."""
    _state["work"] = int(_state["work"]) + amount


def wanted(amount: int) -> bool:
    """Whether a call about to handle ``amount`` of work should use the kernels: never when
    they are off or numba is missing; always when on or already loaded; under ``auto`` once
    the work of this process, this call included, reaches :data:`AUTO_AT`."""
    m = mode()
    if m == "off" or not _numba_available():
        return False
    if _state["loaded"] or m == "on":
        return True
    return int(_state["work"]) + amount >= AUTO_AT


def load(name: str) -> Any:
    """The kernel module ``neardup.kernels.<name>`` (importing numba the first time)."""
    module = _modules.get(name)
    if module is None:
        module = _modules[name] = importlib.import_module(f"{__name__}.{name}")
    _state["loaded"] = True
    return module


#: the kernel modules loaded, by name (per-pair calls ask for them often)
_modules: dict[str, Any] = {}
