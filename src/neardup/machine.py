"""What a process may use of the machine it runs on: its memory and its CPUs — the machine's,
or fewer where its control groups allow less: a container's limits (``docker run --memory
--cpus``, a Kubernetes pod's), a systemd unit's (``MemoryMax=``, ``CPUQuota=``). The groups
are the process's own (``/proc/self/cgroup``) and those above them, in cgroup v2's unified
hierarchy or v1's ``memory`` and ``cpu`` controllers; in a container that sees its own
groups at the top of ``/sys/fs/cgroup``, those. Standard library only: the service's
command line reads it before anything heavy loads.

>>> machine_cpus() >= 1, machine_memory() >= 0
(True, True)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "WORKER_MEMORY",
    "cpu_quota",
    "machine_cpus",
    "machine_memory",
    "memory_limit",
    "workers_memory_holds",
    "workers_within_memory",
]

#: where the control groups are mounted, and where a process finds its own
CGROUP = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def machine_memory() -> int:
    """The bytes of memory this process may use: the machine's, or its control groups'
    lowest limit if lower; 0 when neither can be read."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 0
    limit = memory_limit()
    if limit is not None and (total == 0 or limit < total):
        total = limit
    return total


#: the memory a worker process is planned for: each of the service's took 197-199 MiB, and
#: its decider 288 MiB, with the compiled kernels loaded (3,000 hkcnews articles through two
#: workers, 2026-12-05); a batch run's sketch worker some 120 MiB as it starts, and its
#: chunks' arrays besides
WORKER_MEMORY = 256 << 20
#: workers take at most this share of the memory the process may use, leaving the rest to
#: the process that starts them, the page cache and the machine's other work
WORKERS_MEMORY_SHARE = 2


def workers_memory_holds() -> int | None:
    """How many worker processes half the memory this process may use holds at
    :data:`WORKER_MEMORY` each (at least 1); None where that memory is not known. What
    ``neardup serve`` and a batch run start at most, asked for more or not: 1,000 asked of a
    2-core machine forked 1,000 sketch workers."""
    memory = machine_memory()
    if memory <= 0:
        return None
    return max(1, memory // WORKERS_MEMORY_SHARE // WORKER_MEMORY)


def workers_within_memory(asked: int, what: str) -> int:
    """``asked`` workers, or as many as :func:`workers_memory_holds` where that is fewer,
    with a :class:`~neardup.errors.WorkersCapped` warning that says so (``what``: how the
    workers were asked for, "--workers 500")."""
    import warnings

    from .errors import WorkersCapped

    held = workers_memory_holds()
    if held is None or asked <= held:
        return asked
    warnings.warn(
        WorkersCapped(
            f"{what}; half the memory this process may use holds {held} at "
            f"{WORKER_MEMORY >> 20} MiB each: starting {held}"
        ),
        stacklevel=3,
    )
    return held


def machine_cpus() -> int:
    """The CPUs this process may keep busy: those it may run on (its affinity: a cpuset,
    ``taskset``), or fewer where its control groups' CPU quota allows less (a quota of 1.5
    CPUs counts 2); at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, cpus if quota is None else min(cpus, quota))


def memory_limit(root: Path | None = None, proc: Path | None = None) -> int | None:
    """The lowest memory limit, in bytes, of this process's control groups under ``root``
    (v2's ``memory.max``, v1's ``memory.limit_in_bytes``); None where there is none.

    >>> memory_limit(Path("/nonexistent")) is None
    True
    """
    found: list[int] = []
    for group, v2 in _groups("memory", root, proc):
        text = _read(group / ("memory.max" if v2 else "memory.limit_in_bytes"))
        if text and text.isascii() and text.isdigit() and 0 < int(text) < 1 << 60:  # v1: none
            found.append(int(text))
    return min(found, default=None)


def cpu_quota(root: Path | None = None, proc: Path | None = None) -> int | None:
    """The CPUs the lowest quota of this process's control groups under ``root`` allows,
    rounded up (v2's ``cpu.max``, v1's ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``);
    None where there is none.

    >>> cpu_quota(Path("/nonexistent")) is None
    True
    """
    found: list[int] = []
    for group, v2 in _groups("cpu", root, proc):
        if v2:
            quota, _, period = (_read(group / "cpu.max") or "").partition(" ")
        else:
            quota = _read(group / "cpu.cfs_quota_us") or ""  # -1: none
            period = _read(group / "cpu.cfs_period_us") or ""
        try:
            q, p = int(quota), int(period)
        except ValueError:  # "max": none
            continue
        if q > 0 and p > 0:
            found.append(-(-q // p))
    return min(found, default=None)


def _groups(controller: str, root: Path | None, proc: Path | None) -> Iterator[tuple[Path, bool]]:
    """The directories of this process's control groups for ``controller``, its own first,
    then each one above it up to the hierarchy's top (whose limits apply too), each with
    whether it is cgroup v2's. A group named in ``/proc/self/cgroup`` that is not there (a
    container that sees its own groups at the top) is skipped: the top is still read."""
    root = CGROUP if root is None else root
    lines = (_read(PROC_CGROUP if proc is None else proc) or "").splitlines()
    unified = (root / "cgroup.controllers").exists()
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if unified and hierarchy == "0" and controllers == "":
            top = root
        elif not unified and controller in controllers.split(","):
            top = root / controllers
            if not top.is_dir():  # mounted under the controller's own name alone
                top = root / controller
        else:
            continue
        yield from _upwards(top, path, unified)
        return
    # no /proc/self/cgroup (or no line for the controller): the top alone
    yield root if unified else root / controller, unified


def _upwards(top: Path, path: str, v2: bool) -> Iterator[tuple[Path, bool]]:
    group = top.joinpath(*[part for part in path.split("/") if part not in ("", ".", "..")])
    while True:
        if group.is_dir():
            yield group, v2
        if group == top:
            return
        group = group.parent


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
