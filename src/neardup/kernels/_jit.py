"""The one place numba is imported: ``jit`` compiles a kernel on its first call, caching the
machine code where numba finds a writable place for it (the package's ``__pycache__``, else
the user's cache folder, ``~/.cache/numba`` on Linux), so a later process loads it instead.

``prefetch`` asks the CPU for an element of an array ahead of its use: the kernels that look
codes up in a large table (the template guard's counts) ask for the ones a few shingles
ahead, so the cache misses overlap instead of waiting one after another.

Importing this module imports numba (about 0.3 s); :mod:`neardup.kernels` imports it only
when a call is large enough to pay for it. It also loads numba's numpy support without
numba's probe for SciPy's BLAS (:func:`_numpy_support`), which no kernel uses.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

__all__ = ["jit", "prefetch"]

F = TypeVar("F", bound=Callable[..., Any])


def _numpy_support() -> bool:
    """Load numba's numpy functions (``numba.np.arraymath``, which numba loads anyway before
    its first compiled call) telling it there is no BLAS; whether this process skipped the
    probe.

    Where SciPy is installed, that module's probe for a BLAS imports ``scipy.linalg`` (0.3 s
    of a process's start, a tenth of a 10,000-article batch run, on the critical path: the
    sketch workers fork after the kernels are loaded). No kernel calls BLAS (no ``np.dot``,
    no ``np.linalg``); what the answer changes is numba's own choice, for the ``np.dot``
    inside its ``np.correlate`` and ``np.convolve`` of floats, of a loop instead. Skipped
    when ``scipy.linalg`` is imported already (the probe then costs nothing) or numba's
    numpy support is loaded; a numba without the probe where this looks for it is loaded as
    it is."""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return False
    try:
        from numba.np import linalg
    except ImportError:  # pragma: no cover - another numba's layout
        return False
    probe = getattr(linalg, "ensure_blas", None)
    if probe is None:  # pragma: no cover - another numba's layout
        return False

    def no_blas() -> None:
        raise ImportError("neardup's kernels call no BLAS")

    linalg.ensure_blas = no_blas  # what numba.np.arraymath takes at its import
    try:
        from numba.np import arraymath
    finally:
        linalg.ensure_blas = probe
    if getattr(arraymath, "ensure_blas", None) is no_blas:
        setattr(arraymath, "ensure_blas", probe)  # noqa: B010 (numba does not export it)
    return True


_numpy_support()


def _quick_loads() -> type | None:
    """numba's cache of a function's machine code, loading it without first loading every
    typing and lowering registry numba has (``refresh()`` of the target context: about
    0.09 s of a process's first load, on the critical path of a batch run, whose sketch
    workers fork after it): running cached machine code needs numba's runtime (NRT),
    initialized here, and the registries only compiling reads, which numba's compiler
    loads itself (``CompilerBase.__init__`` refreshes both contexts), so a function not in
    the cache compiles as before. None (numba's own cache kept) where numba's cache does
    not have the parts this uses."""
    try:
        from numba.core.caching import FunctionCache
        from numba.core.runtime import nrt
    except ImportError:  # pragma: no cover - another numba's layout
        return None
    runtime: Any = getattr(nrt, "rtsys", None)
    if not callable(getattr(runtime, "initialize", None)) or not all(
        callable(getattr(FunctionCache, name, None))
        for name in ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")
    ):  # pragma: no cover - another numba's layout
        return None

    class QuickLoads(FunctionCache):
        def load_overload(self, sig: Any, target_context: Any) -> Any:
            runtime.initialize(target_context)
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)  # type: ignore[no-untyped-call]

    return QuickLoads


_QUICK_LOADS = _quick_loads()


def jit(func: F) -> F:
    """``numba.njit`` with the machine code cached on disk (in memory only when no folder
    for it is writable) and loaded from there quickly (:func:`_quick_loads`), and the GIL
    released, so threads can run kernels side by side."""
    try:
        compiled = numba.njit(cache=True, nogil=True)(func)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        compiled = numba.njit(cache=False, nogil=True)(func)
    else:
        cache = getattr(compiled, "_cache", None)
        if _QUICK_LOADS is not None and type(cache) is _QUICK_LOADS.__base__:
            setattr(compiled, "_cache", _QUICK_LOADS(compiled.py_func))  # noqa: B010
    return cast(F, compiled)


@intrinsic
def prefetch(typingctx: Any, array: Any, index: Any) -> Any:
    """Ask the CPU to bring ``array[index]`` into its caches (LLVM's ``llvm.prefetch``: a
    read, to be kept close): a hint, which changes no result and never faults, whatever
    the address. A kernel that looks up codes in a table much larger than the caches at
    random (the template guard's 64 MiB of counts) asks for the slot of the code some places
    ahead of the one it reads: 1,500 lookups took 24 µs one after another, 15 µs so."""
    sig = types.void(array, index)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        at = context.cast(builder, args[1], signature.args[1], types.intp)
        byte = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic(
            "llvm.prefetch", [byte], ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32])
        )
        where = builder.bitcast(builder.gep(data, [at]), byte)
        # (address, 0: a read, 3: keep it in every cache level, 1: data, not code)
        builder.call(fn, [where, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
