"""``neardup dedup --workers N``: how many processes sketch a batch run, and by default one
per CPU the process may use (a container's quota included), up to 4."""

from __future__ import annotations

import concurrent.futures
import json
from pathlib import Path
from typing import Any

import pytest

from neardup import batch
from neardup.batch import BatchRun

from ..test_deduper import corpus
from .test_cli_dedup import refused, run, write_lines


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ``max_workers`` of every process pool a run starts (the run itself unchanged)."""
    started: list[int] = []
    real = concurrent.futures.ProcessPoolExecutor

    def counted(*args: Any, **kw: Any) -> Any:
        started.append(kw["max_workers"])
        return real(*args, **kw)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", counted)
    return started


def _dedup(tmp_path: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[object, ...]:
    """UNIQUE and CLUSTERS as bytes, and how the summary says the records were sketched."""
    lines = []
    for seed in range(3):
        ids, texts = corpus(seed, "all")
        lines += [
            json.dumps({"id": f"{seed}-{i}", "text": t}) for i, t in zip(ids, texts, strict=True)
        ]
    src = write_lines(tmp_path / "in.jsonl", lines)
    out, clusters = tmp_path / "u.jsonl", tmp_path / "c.jsonl"
    argv = ["dedup", str(src), "-o", str(out), "--clusters", str(clusters), *more]
    status, _, err = run(argv, capsys)
    assert status == 0, err
    (sketch,) = [line for line in err.splitlines() if line.startswith("  sketch ")]
    return out.read_bytes(), clusters.read_bytes(), sketch.split(" s   ")[1]


def test_workers_choose_the_processes_and_not_the_decisions(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    pools: list[int],
) -> None:
    monkeypatch.setattr(BatchRun, "POOL_BYTES", 1)  # big enough for workers by default
    monkeypatch.setattr(batch, "machine_cpus", lambda: 3)
    *one, said = _dedup(tmp_path, capsys, "--workers", "1")
    assert pools == [] and said == "in the run's own process"
    *three, said = _dedup(tmp_path, capsys, "--workers", "3")
    assert pools == [3] and said == "on 3 worker processes"  # asked for: however small the input
    assert one == three


@pytest.mark.parametrize(("cpus", "started"), [(1, []), (3, [3]), (64, [4])])
def test_by_default_a_worker_a_cpu_the_process_may_use_up_to_four(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    pools: list[int],
    cpus: int,
    started: list[int],
) -> None:
    """An input big enough for workers (POOL_BYTES, made small here) gets one per CPU that
    :func:`~neardup.machine.machine_cpus` counts — a container limited to one CPU by its
    quota none, however many the machine has."""
    monkeypatch.setattr(BatchRun, "POOL_BYTES", 1)
    monkeypatch.setattr(batch, "machine_cpus", lambda: cpus)
    _dedup(tmp_path, capsys)
    assert pools == started


@pytest.mark.parametrize(
    ("more", "says"),
    [
        (["--workers", "0"], "must be at least 1"),
        (["--workers", "two"], "not a whole number"),
        (["--workers", "2", "--stream"], "drop it with --stream"),
        (["--workers", "2", "--window", "30d"], "drop it with --stream"),
        (["--workers", "2", "--engine", "spark"], "drop it with --stream"),
    ],
)
def test_the_cli_refuses_workers_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], more: list[str], says: str
) -> None:
    assert says in refused(tmp_path, capsys, *more)
