"""SIGINT and SIGTERM to a real ``neardup dedup``: the sketch workers stop with it (none is
left running, whatever the signal, even SIGKILL of the parent on Linux), standard error says
how far the run got and how to finish it, and the exit status is the shells' (130, 143). A
run with a store resumes: the same command run again gives the outputs of an uninterrupted
run."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..synth import corpus

#: real processes, a large input: not the quick loop
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc"),
]


@pytest.fixture(scope="module")
def big_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough text that the batch run starts its workers (from 300,000 characters) and is
    still sketching seconds later: 30,000 records of 500 CJK characters."""
    path = tmp_path_factory.mktemp("signals") / "big.jsonl"
    rng = random.Random(7)
    with path.open("w", encoding="utf-8") as f:
        for i in range(30_000):
            text = "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(500))
            f.write(json.dumps({"id": f"d{i}", "text": text}, ensure_ascii=False) + "\n")
    return path


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # a thread that just ended
            found += map(int, Path(f"/proc/{pid}/task/{task}/children").read_text().split())
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _start(args: list[str], **kw: object) -> subprocess.Popen[str]:
    kw["env"] = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "neardup", "dedup", *args, "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,  # type: ignore[arg-type]
    )


def _workers_of(proc: subprocess.Popen[str], n: int = 2) -> list[int]:
    """The worker processes of a batch run, once it has started them."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        kids = _children(proc.pid)
        if len(kids) >= n:
            time.sleep(0.5)  # at work on their first chunks
            return _children(proc.pid)
        time.sleep(0.02)
    pytest.fail(f"the run started no workers (exit status {proc.poll()})")


def _stop_group(proc: subprocess.Popen[str]) -> None:
    """Kill what is left of the run's session (it, and workers it left behind)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _free_blocks(proc: subprocess.Popen[str]) -> None:
    """Free the blocks of a run killed with its session, which it could not free (its
    resource tracker killed with it; a later run would free them an hour on:
    ``codec.sweep_stale``)."""
    if os.path.isdir("/dev/shm"):
        for name in os.listdir("/dev/shm"):
            if name.startswith(f"nd{proc.pid}_"):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join("/dev/shm", name))


def _gone(pids: list[int], seconds: float = 10) -> list[int]:
    """The pids still running after ``seconds`` at most."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(map(_running, pids)):
        time.sleep(0.05)
    return [p for p in pids if _running(p)]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="workers start only with 2 CPUs or more")
@pytest.mark.parametrize(
    ("sig", "to_group"),
    [(signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGINT, True)],
    ids=["SIGTERM", "SIGINT", "Ctrl-C to the process group"],
)
def test_a_signal_stops_the_batch_run_and_its_workers(
    big_input: Path, tmp_path: Path, sig: signal.Signals, to_group: bool
) -> None:
    out = ["-o", str(tmp_path / "u.jsonl"), "--clusters", str(tmp_path / "c.jsonl")]
    proc = _start([str(big_input), *out], start_new_session=True)
    try:
        workers = _workers_of(proc)
        if to_group:  # as a terminal's Ctrl-C: the workers get it too
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        try:
            _, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            # still running (its threads' stacks, please), or gone with its workers left
            # holding the pipes
            os.kill(proc.pid, signal.SIGABRT)
            time.sleep(2)
            _stop_group(proc)
            pytest.fail(f"the run did not end after {sig.name}: {proc.communicate()[1][-8000:]}")
    finally:
        _stop_group(proc)
    assert proc.returncode == 128 + sig
    assert not _gone(workers), "sketch workers outlived the run"
    assert "Traceback" not in stderr, stderr
    assert len(stderr.splitlines()) == 1, stderr  # one line, and nothing else
    (line,) = stderr.splitlines()
    assert line.startswith(f"neardup: interrupted by {sig.name} after reading ")
    said = re.search(
        r"records; ([\d,]+) of them are in CLUSTERS or ERRORS, and the outputs end", line
    )
    assert said is not None, line
    # the run writes each decision as it is made (keeping the first of each story): the
    # outputs hold what the line says, whole lines in input order
    clusters = tmp_path / "c.jsonl"
    written = clusters.read_text(encoding="utf-8").splitlines() if clusters.exists() else []
    assert len(written) == int(said.group(1).replace(",", ""))
    assert all(json.loads(w)["id"] == f"d{k}" for k, w in enumerate(written))
    assert line.endswith(
        "Run the same command again to start over; with a store (--db FILE) an interrupted "
        "run resumes: the documents already stored return their decisions"
    )


#: a run whose futures' locks (Conditions) raise SIGTERM in the main thread the ``at``-th
#: time one is taken there: after the lock is taken, before the ``with`` holds it — where a
#: real signal can land (CPython runs handlers after a call returns, there too)
_TRAPPED_RUN = """
import signal, sys, threading
from concurrent.futures import _base

at, taken = int(sys.argv[1]), [0]

class Trap(threading.Condition):
    def __enter__(self):
        got = self._lock.__enter__()
        if threading.current_thread() is threading.main_thread():
            taken[0] += 1
            if taken[0] == at:
                signal.raise_signal(signal.SIGTERM)
        return got

made = _base.Future.__init__
def init(self):
    made(self)
    self._condition = Trap()
_base.Future.__init__ = init

from neardup.cli import main
sys.exit(main(["dedup", *sys.argv[2:], "-q"]))
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="workers start only with 2 CPUs or more")
@pytest.mark.parametrize("at", [1, 4, 30, 120])
def test_a_signal_inside_a_futures_lock_still_ends_the_run(
    big_input: Path, tmp_path: Path, at: int
) -> None:
    """The run's main thread takes the locks of its workers' and its join's futures; a
    signal landing just after one is taken (found in CI: the run hung at exit, the pool's
    thread waiting for the lock the main thread had left taken) ends the run as anywhere."""
    script = tmp_path / "trapped.py"
    script.write_text(_TRAPPED_RUN)
    out = ["-o", str(tmp_path / "u.jsonl"), "--clusters", str(tmp_path / "c.jsonl")]
    proc = subprocess.Popen(
        [sys.executable, str(script), str(at), str(big_input), *out],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )
    try:
        _, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGABRT)  # its threads' stacks, please
        time.sleep(2)
        _stop_group(proc)
        pytest.fail(f"the run did not end: {proc.communicate()[1][-8000:]}")
    finally:
        _stop_group(proc)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    (line,) = stderr.splitlines()
    assert line.startswith("neardup: interrupted by SIGTERM after reading "), line


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="workers start only with 2 CPUs or more")
def test_the_workers_end_when_the_run_is_killed(big_input: Path, tmp_path: Path) -> None:
    out = ["-o", str(tmp_path / "u.jsonl"), "--clusters", str(tmp_path / "c.jsonl")]
    proc = _start([str(big_input), *out], start_new_session=True)
    try:
        workers = _workers_of(proc)
        proc.kill()
        proc.wait(timeout=60)
        left = _gone(workers)
    finally:
        _stop_group(proc)
        proc.communicate()
        _free_blocks(proc)
    assert not left, "sketch workers outlived a run killed with SIGKILL"


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="workers start only with 2 CPUs or more")
def test_a_sketch_worker_killed_leaves_the_run_to_finish_alone(
    big_input: Path, tmp_path: Path
) -> None:
    """A worker the kernel kills (its out-of-memory killer's SIGKILL) breaks the pool: the
    run sketches the chunks it had sent, and the rest, in its own process, and writes what
    an uninterrupted run writes, with one line saying so (it ended with a traceback)."""
    ref, run = tmp_path / "ref", tmp_path / "run"
    ref.mkdir()
    run.mkdir()

    def args(folder: Path) -> list[str]:
        return [str(big_input), "-o", str(folder / "u.jsonl"), "--clusters",
                str(folder / "c.jsonl")]  # fmt: skip

    done = _start(args(ref))
    assert done.communicate(timeout=300)[1] == ""
    assert done.returncode == 0
    proc = _start(args(run), start_new_session=True)
    try:
        workers = _workers_of(proc)
        os.kill(workers[-1], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=300)
    finally:
        _stop_group(proc)
    assert proc.returncode == 0, stderr
    (line,) = stderr.splitlines()
    # (how it ended, where the run could still read it)
    assert re.fullmatch(
        r"neardup: warning: a sketch worker process (was killed by SIGKILL \(out of memory, "
        r"most likely\)|ended); the run goes on sketching in its main process alone, with "
        r"the same decisions, more slowly",
        line,
    ), stderr
    for name in ("u.jsonl", "c.jsonl"):
        assert (run / name).read_bytes() == (ref / name).read_bytes()
    if os.path.isdir("/dev/shm"):  # every chunk's block freed, the lost ones' too
        assert not [b for b in os.listdir("/dev/shm") if b.startswith(f"nd{proc.pid}_")]


def _write_corpus(path: Path, docs: list[tuple[str, str, int]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i, t, _ in docs:
            f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_an_interrupted_run_with_a_db_resumes(tmp_path: Path, sig: signal.Signals) -> None:
    docs = corpus(59, 400, 3, cut=False)
    src = tmp_path / "crawl.jsonl"
    _write_corpus(src, docs)
    ref, run = tmp_path / "ref", tmp_path / "run"
    ref.mkdir()
    run.mkdir()

    def args(folder: Path) -> list[str]:
        return [str(src), "--db", str(folder / "s.db"), "-o", str(folder / "u.jsonl"),
                "--clusters", str(folder / "c.jsonl"), "--batch-size", "8"]  # fmt: skip

    done = _start(args(ref))
    assert done.wait(timeout=300) == 0
    proc = _start(args(run))
    clusters = run / "c.jsonl"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if clusters.exists() and clusters.stat().st_size > 20_000:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig
    (line,) = stderr.splitlines()
    assert line.startswith(f"neardup: interrupted by {sig.name} after reading ")
    written = int(line.split("; ", 1)[1].split(" of them")[0].replace(",", ""))
    assert 0 < written < len(docs)
    # the outputs end there (a signal between writing a line and counting it: one more)
    assert written <= len(clusters.read_text().splitlines()) <= written + 1
    assert line.endswith(
        f"Run the same command again to finish: the documents already in the store "
        f"sqlite:///{run / 's.db'} return their decisions, and the rest are decided"
    )
    again = _start(args(run))
    assert again.wait(timeout=300) == 0
    for name in ("u.jsonl", "c.jsonl"):
        assert (run / name).read_text() == (ref / name).read_text()


def test_a_signal_inside_a_shielded_section_stops_the_run_at_its_end() -> None:
    """Freeing a shared-memory block (unlink, then the resource tracker told) is one step for
    a signal: one that comes between the two stops the run once the block is freed, not
    between (which left the tracker a name that was gone, and a warning on stderr)."""
    from neardup.errors import Interrupted, shielded
    from neardup.run.local import _interruptible

    steps: list[str] = []
    with pytest.raises(Interrupted) as stopped, _interruptible(lambda name: f"stopped: {name}"):
        with shielded():
            steps.append("unlinked")
            signal.raise_signal(signal.SIGTERM)
            with shielded():  # nested: the outer section's end is where it stops
                steps.append("inner")
            steps.append("unregistered")
        steps.append("after the section")
    assert steps == ["unlinked", "inner", "unregistered"]
    assert stopped.value.signum == signal.SIGTERM
    assert str(stopped.value) == "stopped: SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler given back


def test_a_shared_memory_block_freed_under_a_signal_leaves_the_tracker_nothing(
    tmp_path: Path,
) -> None:
    """A real block shared and taken back in a child process (with a second thread, as a run
    with workers has) with a SIGTERM sent to it from inside the unlink: the run stops with
    its one line, the block is gone, and the resource tracker has nothing to warn about at
    exit."""
    script = tmp_path / "take.py"
    script.write_text(
        "import os, signal, sys\n"
        "import numpy as np\n"
        "from multiprocessing import resource_tracker, shared_memory\n"
        "from neardup.engine import codec\n"
        "from neardup.engine.sketches import make_sketches\n"
        "from neardup.engine import DedupConfig\n"
        "from neardup.run.local import _interruptible\n"
        "import threading, time\n"
        "resource_tracker.ensure_running()\n"
        "# another thread (a run has the pool's): the kernel gives it a signal the main\n"
        "# thread masks, and Python runs the handler in the main thread all the same\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "cfg = DedupConfig()\n"
        "packed = codec.pack(make_sketches(['一篇文章的正文' * 40], cfg), shingles=False)\n"
        "shared = codec.share(packed, f'ndtest{os.getpid()}')\n"
        "assert isinstance(shared, codec.Shared), 'no /dev/shm here'\n"
        "real = shared_memory.SharedMemory.unlink\n"
        "def unlink(self):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)  # between the unlink and the unregister\n"
        "    real(self)\n"
        "shared_memory.SharedMemory.unlink = unlink\n"
        "try:\n"
        "    with _interruptible(lambda name: f'stopped by {name}'):\n"
        "        codec.take(shared)\n"
        "except KeyboardInterrupt as e:\n"
        "    print(e, file=sys.stderr)\n"
        "    print(os.path.exists('/dev/shm/' + shared.name))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["stopped by SIGTERM"], done.stderr
    assert done.stdout.split() == ["False"]
