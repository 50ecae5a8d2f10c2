"""The one place numba is imported: ``jit`` compiles a kernel on its first call, caching the
machine code where numba finds a writable place for it (the package's ``__pycache__``, else
the user's cache folder, ``~/.cache/numba`` on Linux), so a later process loads it instead.

Importing this module imports numba (about 0.3 s); :mod:`neardup.kernels` imports it only
when a call is large enough to pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

__all__ = ["jit"]

F = TypeVar("F", bound=Callable[..., Any])


def jit(func: F) -> F:
    """``numba.njit`` with the machine code cached on disk (in memory only when no folder
    for it is writable) and the GIL released, so threads can run kernels side by side."""
    try:
        compiled = numba.njit(cache=True, nogil=True)(func)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        compiled = numba.njit(cache=False, nogil=True)(func)
    return cast(F, compiled)
