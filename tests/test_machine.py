"""What a process may use of its machine: the CPUs (affinity, a control group's quota) and
the memory (a control group's limit) — on trees written here, and on real groups where this
process may make them."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from neardup import machine
from neardup.machine import cpu_quota, machine_cpus, machine_memory, memory_limit

V2 = {"cgroup.controllers": "cpu memory"}  # the unified hierarchy's mark


def _tree(root: Path, files: dict[str, str], own: str | None = None) -> tuple[Path, Path]:
    """A cgroup tree of ``files`` under ``root``, and a /proc/self/cgroup naming ``own``
    (none: no such file)."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n")
    proc = root.parent / f"{root.name}.proc"
    if own is not None:
        proc.write_text(own + "\n")
    return root, proc


@pytest.mark.parametrize(
    ("files", "own", "cpus"),
    [
        ({**V2, "cpu.max": "max 100000"}, "0::/", None),  # v2, no quota
        ({**V2, "cpu.max": "150000 100000"}, "0::/", 2),  # --cpus=1.5: two can keep it busy
        ({**V2, "cpu.max": "50000 100000"}, "0::/", 1),
        ({**V2, "cpu.max": "400000 100000"}, None, 4),  # no /proc/self/cgroup: the top
        ({**V2, "cpu.max": "garbage"}, "0::/", None),
        ({**V2, "cpu.max": "0 100000"}, "0::/", None),
        (  # a systemd unit's CPUQuota=200%, its slice without a quota
            {
                **V2,
                "system.slice/cpu.max": "max 100000",
                "system.slice/nd.service/cpu.max": "200000 100000",
            },
            "0::/system.slice/nd.service",
            2,
        ),
        (  # a quota above the group's own is the one that holds
            {**V2, "a/cpu.max": "100000 100000", "a/b/cpu.max": "300000 100000"},
            "0::/a/b",
            1,
        ),
        ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, "1:cpu:/", None),
        (  # v1, the process in a group of its own
            {"cpu/x/cpu.cfs_quota_us": "300000", "cpu/x/cpu.cfs_period_us": "100000"},
            "3:cpuset:/\n1:cpu:/x\n2:cpuacct:/",
            3,
        ),
        (  # v1 in a container: the group it is named by is mounted as the top
            {
                "cpu,cpuacct/cpu.cfs_quota_us": "200000",
                "cpu,cpuacct/cpu.cfs_period_us": "100000",
            },
            "4:cpu,cpuacct:/docker/0123abcd",
            2,
        ),
        ({"cpu/cpu.cfs_quota_us": "300000"}, "1:cpu:/", None),  # no period to divide by
        ({}, None, None),  # no cgroup files at all (not Linux, or not mounted)
    ],
)
def test_a_control_groups_cpu_quota_is_read_as_whole_cpus(
    tmp_path: Path, files: dict[str, str], own: str | None, cpus: int | None
) -> None:
    assert cpu_quota(*_tree(tmp_path / "cg", files, own)) == cpus


@pytest.mark.parametrize(
    ("files", "own", "limit"),
    [
        ({**V2, "memory.max": "max"}, "0::/", None),
        ({**V2, "memory.max": "268435456"}, "0::/", 256 << 20),
        (
            {**V2, "s/memory.max": "536870912", "s/u/memory.max": "1073741824"},
            "0::/s/u",
            512 << 20,
        ),
        ({"memory/memory.limit_in_bytes": "9223372036854771712"}, "5:memory:/", None),
        ({"memory/g/memory.limit_in_bytes": "1073741824"}, "5:memory:/g", 1 << 30),
        ({"memory/memory.limit_in_bytes": "1073741824"}, "5:memory:/docker/0123abcd", 1 << 30),
        ({}, "0::/", None),
        ({**V2, "memory.max": "²"}, "0::/", None),  # a digit to str.isdigit, not to int
        ({**V2, "memory.max": ""}, "0::/", None),
    ],
)
def test_a_control_groups_memory_limit_is_the_lowest_on_the_way_up(
    tmp_path: Path, files: dict[str, str], own: str, limit: int | None
) -> None:
    assert memory_limit(*_tree(tmp_path / "cg", files, own)) == limit


def test_the_cpus_are_the_affinitys_or_fewer_where_a_quota_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mine = len(os.sched_getaffinity(0))
    monkeypatch.setattr(machine, "cpu_quota", lambda: None)
    assert machine_cpus() == mine
    monkeypatch.setattr(machine, "cpu_quota", lambda: 1)
    assert machine_cpus() == 1
    monkeypatch.setattr(machine, "cpu_quota", lambda: mine + 64)  # a quota above the CPUs
    assert machine_cpus() == mine


def test_the_memory_is_the_machines_or_a_lower_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    monkeypatch.setattr(machine, "memory_limit", lambda: None)
    assert machine_memory() == whole
    monkeypatch.setattr(machine, "memory_limit", lambda: 256 << 20)
    assert machine_memory() == 256 << 20
    monkeypatch.setattr(machine, "memory_limit", lambda: whole * 2)
    assert machine_memory() == whole


@pytest.fixture
def v1_groups() -> Iterator[dict[str, Path]]:
    """A group of cgroup v1's ``cpu`` and one of its ``memory`` controller, made for this
    test and removed after it — where this process may make them (root, v1 mounted)."""
    made: dict[str, Path] = {}
    name = f"neardup-test-{uuid.uuid4().hex[:8]}"
    try:
        for controller in ("cpu", "memory"):
            group = machine.CGROUP / controller / name
            group.mkdir()
            made[controller] = group
    except OSError as e:
        for group in made.values():
            group.rmdir()
        pytest.skip(f"cannot make cgroup v1 groups here ({e.strerror}): not root, or cgroup v2")
    try:
        yield made
    finally:
        for group in made.values():
            group.rmdir()


def test_a_real_control_groups_limits_are_found(v1_groups: dict[str, Path]) -> None:
    """A process put in groups with a quota of 1.5 CPUs and 300 MiB of memory, as a unit
    with CPUQuota=150% and MemoryMax=300M is: it counts 2 CPUs (or fewer, by its affinity)
    and 300 MiB."""
    (v1_groups["cpu"] / "cpu.cfs_period_us").write_text("100000")
    (v1_groups["cpu"] / "cpu.cfs_quota_us").write_text("150000")
    (v1_groups["memory"] / "memory.limit_in_bytes").write_text(str(300 << 20))
    join = "; ".join(f"echo $$ > {g / 'cgroup.procs'}" for g in v1_groups.values())
    code = "from neardup.machine import *; print(machine_cpus(), machine_memory())"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    found = subprocess.run(
        ["sh", "-c", f'{join}; exec "$0" -c "$1"', sys.executable, code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    assert found == [str(min(2, len(os.sched_getaffinity(0)))), str(300 << 20)]
