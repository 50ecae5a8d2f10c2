"""``neardup serve --workers N``: worker processes on one port and one store. Copies posted
at once to different workers keep each story once, on SQLite and on Redis; /metrics counts
every worker; a worker that dies is replaced; a signal stops them all; memory:// is one
process's alone."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neardup.service import cli
from neardup.service.cli import default_workers

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
import httpx

from tests.service.test_service_serve import (
    _assert_each_story_kept_once,
    _crawl,
    _run,
    _start,
    serving,
)

_WORKER = re.compile(r"Started server process \[(\d+)\]")


def _workers(log: list[str], at_least: int) -> list[int]:
    """The pids of the workers that have started, once ``at_least`` of them have."""
    for _ in range(600):
        pids = [int(p) for p in _WORKER.findall("".join(log))]
        if len(pids) >= at_least:
            return pids
        time.sleep(0.05)
    pytest.fail("the workers did not start:\n" + "".join(log))


def _posted(url: str) -> int:
    found = re.search(
        r'neardup_http_requests_total\{method="POST",route="/v1/documents",status="200"\} (\d+)',
        httpx.get(url + "metrics").text,
    )
    return int(found.group(1)) if found else 0


def _decider(url: str) -> dict[str, float]:
    """The deciding process's counts, as /metrics gives them."""
    found = re.findall(r"^neardup_decider_(\w+) (\S+)$", httpx.get(url + "metrics").text, re.M)
    return {name: float(value) for name, value in found}


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_workers_keep_each_story_once(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """8 clients posting reprints of the same 6 stories at once to a service of 2 workers:
    each story is kept exactly once, every copy in its cluster, and /metrics (whichever
    worker answers it) counts the requests of both, and what the decider decided for them."""
    store = (
        f"sqlite:///{tmp_path / 'crawl.db'}"
        if kind == "sqlite"
        else request.getfixturevalue("redis_url")
    )
    with serving("--store", store, "--workers", "2") as s:
        assert "2 workers" in s.log[0]
        assert len(set(_workers(s.log, 2))) == 2
        decisions = _crawl([s.url], stories=6, clients=8, seed=30)
        assert len(decisions) == 48
        _assert_each_story_kept_once(decisions, s.url, 6)
        # each worker shares its counts every second: soon every worker's answer adds up
        for _ in range(100):
            if [_posted(s.url) for _ in range(6)] == [8 * (6 + 2)] * 6:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"/metrics counts {_posted(s.url)} of the 64 requests")
        for _ in range(100):  # the decider shares its counts every second too
            decider = _decider(s.url)
            if decider.get("documents_total") == 8 * (6 + 2):  # one document a request
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"/metrics: the decider counted {decider} of 64 documents")
        assert 1 <= decider["batches_total"] <= 64 and decider["busy_seconds_total"] > 0


def test_the_default_is_a_worker_a_cpu_and_one_for_memory(tmp_path: Path) -> None:
    """Without --workers: as many workers as CPUs (as half the memory holds) on a shared
    store, one on memory://."""
    cpus = default_workers()  # the CPUs the process may use, a container's quota included
    with serving("--db", str(tmp_path / "crawl.db")) as s:
        assert (f"{cpus} workers" in s.log[0]) == (cpus > 1), s.log[0]
        assert len(set(_workers(s.log, cpus))) == cpus
    with serving() as s:
        assert "workers" not in s.log[0] and "memory" in s.log[0]


@pytest.mark.parametrize(
    ("cpus", "memory", "workers"),
    [
        (2, 24 << 30, 2),  # this machine: the CPUs decide
        (64, 0, 64),  # memory not known: the CPUs
        (64, 8 << 30, 16),  # a 64-core host with 8 GiB: half of it at 256 MiB a worker
        (4, 1 << 30, 2),  # a container of 4 CPUs and 1 GiB
        (4, 300 << 20, 1),  # too little for two: one process, as --workers 1
    ],
)
def test_the_default_workers_fit_in_half_the_memory(
    monkeypatch: pytest.MonkeyPatch, cpus: int, memory: int, workers: int
) -> None:
    """A worker a CPU, no more than half the memory the process may use holds at 256 MiB
    each (the machine's, or its control groups' limit: :func:`neardup.machine.machine_memory`),
    at least one; --workers overrides the CPUs, not the memory (a WorkersCapped warning,
    which the command line prints as one line: 500 asked of this machine started 500)."""
    from neardup import machine
    from neardup.errors import WorkersCapped

    monkeypatch.setattr(cli, "machine_cpus", lambda: cpus)
    monkeypatch.setattr(machine, "machine_memory", lambda: memory)
    assert default_workers() == workers
    assert cli.workers_for("sqlite:///crawl.db", None) == workers
    held = memory // 2 // (256 << 20) or 1 if memory else None
    if held is None or held >= 8:
        assert cli.workers_for("redis://localhost/0", 8) == 8
    else:
        with pytest.warns(WorkersCapped, match=f"--workers 8; .* holds {held} at 256 MiB"):
            assert cli.workers_for("redis://localhost/0", 8) == held
    assert cli.workers_for("memory://", None) == 1


def test_several_workers_on_memory_are_refused() -> None:
    """--workers 2 on memory:// (the default store): status 2 and one line saying why."""
    r = _run("--workers", "2", "--port", "0")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("neardup: error: --workers 2 needs a store the workers can share")
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_a_worker_that_dies_is_replaced(tmp_path: Path) -> None:
    """kill -9 of a worker: the service says so, starts another and goes on answering."""
    with serving("--db", str(tmp_path / "crawl.db"), "--workers", "2") as s:
        first, second = _workers(s.log, 2)[:2]
        os.kill(first, signal.SIGKILL)
        third = _workers(s.log, 3)[2]
        assert third not in (first, second)
        assert f"worker [{first}] ended (killed by SIGKILL); starting another" in "".join(s.log)
        for k in range(6):  # new connections reach the workers alive
            r = httpx.post(s.url + "v1/documents", json={"id": f"d{k}", "text": "一段正文。"})
            assert r.status_code == 200, r.text
        assert "Traceback" not in "".join(s.log)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_every_worker(tmp_path: Path, sig: signal.Signals) -> None:
    """SIGINT or SIGTERM to the service: every worker finishes and exits, then the service,
    by that signal as a single process does (or 0 where SIGINT is ignored, as in a
    background job), without a traceback."""
    server = _start("--db", str(tmp_path / "crawl.db"), "--workers", "2")
    pids = _workers(server.log, 2)
    server.proc.send_signal(sig)
    code = server.proc.wait(timeout=60)
    assert code in (0, 130, -sig), "".join(server.log)
    time.sleep(0.5)  # the log's last lines
    log = "".join(server.log)
    assert log.count("Finished server process") == 2 and "Traceback" not in log
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_worker_that_cannot_start_stops_the_service() -> None:
    """A worker whose store does not open: its one line, then the service stops (status 1)
    instead of starting it again and again."""
    script = (
        "import socket, sys\n"
        "from neardup.service._workers import serve_workers\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "sys.exit(serve_workers(2, {'store': 'ftp://x'}, {'log_level': 'info'}, s))\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "unknown store URL 'ftp://x'" in r.stderr
    assert "could not start (see above); stopping" in r.stderr and "Traceback" not in r.stderr
