"""What a process may use of the machine it runs on: its memory and its CPUs — the machine's,
or its container's where that allows less (a cgroup's memory limit, its CPU quota).
Standard library only: the service's command line reads it before anything heavy loads.

>>> machine_cpus() >= 1, machine_memory() >= 0
(True, True)
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cpu_quota", "machine_cpus", "machine_memory"]

CGROUP = Path("/sys/fs/cgroup")


def machine_memory() -> int:
    """The bytes of memory this process may use: the machine's, or its cgroup's limit if
    lower (a container's); 0 when neither can be read."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 0
    for path in (CGROUP / "memory.max", CGROUP / "memory" / "memory.limit_in_bytes"):
        try:
            limit = path.read_text().strip()
        except OSError:
            continue
        if limit.isdigit() and (total == 0 or 0 < int(limit) < total):
            total = int(limit)
    return total


def machine_cpus() -> int:
    """The CPUs this process may keep busy: those it may run on (its affinity: a cpuset,
    ``taskset``), or fewer where its cgroup's CPU quota allows less (a container's
    ``--cpus``, a Kubernetes CPU limit: a quota of 1.5 CPUs counts 2); at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, cpus if quota is None else min(cpus, quota))


def cpu_quota(root: Path = CGROUP) -> int | None:
    """The CPUs the cgroup quota under ``root`` allows, rounded up (cgroup v2's
    ``cpu.max``, else v1's ``cpu/cpu.cfs_quota_us`` over ``cpu/cpu.cfs_period_us``); None
    where there is no quota or none can be read.

    >>> cpu_quota(Path("/nonexistent")) is None
    True
    """
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]  # "max 100000": none
    except (OSError, ValueError):
        try:
            quota = (root / "cpu" / "cpu.cfs_quota_us").read_text().strip()  # -1: none
            period = (root / "cpu" / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    if q <= 0 or p <= 0:
        return None
    return -(-q // p)
