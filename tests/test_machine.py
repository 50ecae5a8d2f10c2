"""What a process may use of its machine: the CPUs (affinity, a cgroup's quota) and the
memory (a cgroup's limit)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from neardup import machine
from neardup.machine import cpu_quota, machine_cpus, machine_memory


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n")
    return root


@pytest.mark.parametrize(
    ("files", "cpus"),
    [
        ({"cpu.max": "max 100000"}, None),  # cgroup v2, no quota
        ({"cpu.max": "150000 100000"}, 2),  # --cpus=1.5: two processes can keep it busy
        ({"cpu.max": "50000 100000"}, 1),
        ({"cpu.max": "400000 100000"}, 4),
        ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, None),  # v1
        ({"cpu/cpu.cfs_quota_us": "300000", "cpu/cpu.cfs_period_us": "100000"}, 3),
        ({"cpu/cpu.cfs_quota_us": "300000"}, None),  # no period to divide by
        ({"cpu.max": "garbage"}, None),
        ({"cpu.max": "0 100000"}, None),
        ({}, None),  # no cgroup files at all (not Linux, or not mounted)
    ],
)
def test_a_cgroups_cpu_quota_is_read_as_whole_cpus(
    tmp_path: Path, files: dict[str, str], cpus: int | None
) -> None:
    assert cpu_quota(_tree(tmp_path, files)) == cpus


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


def test_the_memory_is_the_machines_or_a_cgroups_lower_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = machine_memory()
    assert whole > 256 << 20
    monkeypatch.setattr(machine, "CGROUP", _tree(tmp_path / "v2", {"memory.max": "max"}))
    assert machine_memory() == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    monkeypatch.setattr(machine, "CGROUP", _tree(tmp_path / "lim", {"memory.max": "268435456"}))
    assert machine_memory() == 256 << 20
    v1 = _tree(tmp_path / "v1", {"memory/memory.limit_in_bytes": str(1 << 62)})  # "no limit"
    monkeypatch.setattr(machine, "CGROUP", v1)
    assert machine_memory() == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
