"""A store that fails in the middle of a run: a real full disk under SQLite (a small tmpfs,
when the tests run as root), a real redis-server out of memory, and a redis-server killed
while ``neardup dedup`` writes to it. Each gives one line naming the store (never its
password) and the real cause, exit status 2, and leaves what was committed before intact:
the same command run again finishes the job, with the outputs of an uninterrupted run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from neardup import Deduper, StoreError

from ..conftest import redis_on_free_port
from ..synth import corpus
from .servers import redis_server, stop, tmpfs

#: real services, full disks and runs to the end twice: not the quick loop
pytestmark = pytest.mark.slow


def _write_corpus(path: Path, docs: list[tuple[str, str, int]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i, t, _ in docs:
            f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")


def _dedup(src: Path, out: Path, *store: str) -> list[str]:
    return [sys.executable, "-m", "neardup", "dedup", str(src), *store,
            "-o", str(out / "u.jsonl"), "--clusters", str(out / "c.jsonl"),
            "--batch-size", "16", "-q"]  # fmt: skip


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)


def _reference(tmp_path: Path, src: Path) -> dict[str, str]:
    """The outputs of the same run, uninterrupted, on a fresh SQLite store."""
    ref = tmp_path / "ref"
    ref.mkdir()
    r = _run(_dedup(src, ref, "--db", str(ref / "s.db")))
    assert r.returncode == 0, r.stderr
    return {name: (ref / name).read_text() for name in ("u.jsonl", "c.jsonl")}


def _outputs(folder: Path) -> dict[str, str]:
    return {name: (folder / name).read_text() for name in ("u.jsonl", "c.jsonl")}


def _stored(client: object, ns: str) -> int:
    """How many documents a Redis namespace holds (compact: its counter; the layout of whole
    sketches: its time index)."""
    counted = client.get(f"{ns}:n")  # type: ignore[attr-defined]
    if counted is not None:
        return int(counted)
    return int(client.zcard(f"{ns}:ts"))  # type: ignore[attr-defined]


def _one_line(stderr: str) -> str:
    """The whole of standard error, which must be one line (with -q)."""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "un-acquired lock" not in stderr
    assert "cannot rollback" not in stderr
    return lines[0]


# -- SQLite on a full disk -------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real file system of 1 MB (tmpfs), mounted for the test: root only."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a real full disk needs a tmpfs mount, which needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    with tmpfs(disk, "1m"):
        yield disk


def test_sqlite_on_a_full_disk_is_one_line_and_the_same_command_then_finishes(
    tmp_path: Path, small_disk: Path
) -> None:
    docs = corpus(23, 400, 3, cut=False)
    src = tmp_path / "crawl.jsonl"
    _write_corpus(src, docs)
    expected = _reference(tmp_path, src)
    run = tmp_path / "run"
    run.mkdir()
    db = small_disk / "s.db"
    cmd = _dedup(src, run, "--db", str(db))
    r = _run(cmd)
    assert r.returncode == 2
    line = _one_line(r.stderr)
    assert line.startswith(f"neardup: error: store sqlite:///{db}: database or disk is full; ")
    assert "free space, then run again to finish" in line
    # what was committed before the disk filled up is there, and sound
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = con.execute("SELECT count(*) FROM docs").fetchone()[0]
    assert 0 < stored < len(docs)
    # room again: the same command finishes the job
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    r = _run(cmd)
    assert r.returncode == 0, r.stderr
    assert _outputs(run) == expected


def test_the_library_on_a_full_disk_raises_the_store_error(small_disk: Path) -> None:
    docs = [(i, t) for i, t, _ in corpus(29, 400, 2, cut=False)]
    added = 0
    with Deduper(store=f"sqlite:///{small_disk / 's.db'}") as dd:
        with pytest.raises(StoreError, match="database or disk is full") as failed:
            for k in range(0, len(docs), 16):
                dd.check_and_add_many(docs[k : k + 16])
                added = k + 16
        assert isinstance(failed.value.__cause__, sqlite3.OperationalError)
        # the store is still usable for reads, and holds every batch committed before
        assert len(dd) == added > 0
        assert dd.check(*docs[0]).id == docs[0][0]


# -- Redis out of memory, and killed -------------------------------------------------------


def test_redis_out_of_memory_is_one_line_without_the_password(tmp_path: Path) -> None:
    import redis

    docs = corpus(31, 400, 3, cut=False)
    src = tmp_path / "crawl.jsonl"
    _write_corpus(src, docs)
    expected = _reference(tmp_path, src)
    proc, port = redis_on_free_port(tmp_path, "--appendonly", "no", password="TopS3cretPW")
    try:
        client = redis.Redis(port=port, password="TopS3cretPW")
        base = int(client.info("memory")["used_memory"])
        client.config_set("maxmemory", base + 1_500_000)
        client.config_set("maxmemory-policy", "noeviction")
        url = f"redis://:TopS3cretPW@127.0.0.1:{port}/0?namespace=oom"
        run = tmp_path / "run"
        run.mkdir()
        cmd = _dedup(src, run, "--store", url)
        r = _run(cmd)
        assert r.returncode == 2
        assert "TopS3cretPW" not in r.stderr
        line = _one_line(r.stderr)
        assert line.startswith(
            f"neardup: error: Redis store redis://:***@127.0.0.1:{port}/0?namespace=oom: "
            "command not allowed when used memory > 'maxmemory'; Redis is full"
        )
        stored = _stored(client, "oom")
        assert 0 < stored < len(docs)
        client.config_set("maxmemory", 0)
        r = _run(cmd)
        assert r.returncode == 0, r.stderr
        assert _outputs(run) == expected
        assert _stored(client, "oom") == len(docs)
        client.close()
    finally:
        stop(proc)


def test_redis_killed_during_a_run_is_one_line_and_the_same_command_then_finishes(
    tmp_path: Path,
) -> None:
    import redis

    docs = corpus(37, 300, 3, cut=False)
    src = tmp_path / "crawl.jsonl"
    _write_corpus(src, docs)
    expected = _reference(tmp_path, src)
    data = tmp_path / "redis"
    data.mkdir()
    keep = ("--appendonly", "yes", "--appendfsync", "always")  # what it acknowledged survives
    proc, port = redis_on_free_port(data, *keep)
    ns = f"k{uuid.uuid4().hex[:8]}"
    run = tmp_path / "run"
    run.mkdir()
    cmd = _dedup(src, run, "--store", f"redis://127.0.0.1:{port}/0?namespace={ns}")
    client = redis.Redis(port=port)
    try:
        dedup = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while dedup.poll() is None and time.monotonic() < deadline:
            if _stored(client, ns) >= 100:
                break
            time.sleep(0.01)
        assert dedup.poll() is None, "the run finished before redis-server could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        _, stderr = dedup.communicate(timeout=120)
        assert dedup.returncode == 2
        line = _one_line(stderr)
        assert line.startswith(f"neardup: error: Redis store redis://127.0.0.1:{port}/0")
        assert "Redis went away or stopped answering: once it is back, run again" in line
        # back, with what it had written to its append-only file
        proc = redis_server(data, port, *keep)
        stored = _stored(client, ns)
        assert 0 < stored < len(docs)
        r = _run(cmd)
        assert r.returncode == 0, r.stderr
        assert _outputs(run) == expected
    finally:
        client.close()
        stop(proc)


@pytest.mark.parametrize("layout", ["compact", "full"])
def test_a_redis_that_restarted_empty_is_refused_not_filled_again(
    tmp_path: Path, layout: str
) -> None:
    """A redis-server without persistence that restarts under a running process has lost
    the namespace: the next batch is refused (StoreLost, one message saying what happened
    and what to do) instead of filling an empty namespace with no settings, beside a
    learned chrome and a story log that are no longer there; a process started again goes
    on with it. So is a namespace that another process made again meanwhile."""
    from neardup.store import StoreLost

    docs = [(i, t) for i, t, _ in corpus(41, 6, 2, cut=False)]
    proc, port = redis_on_free_port(tmp_path, "--appendonly", "no")
    url = f"redis://127.0.0.1:{port}/0?namespace=lost&format={layout}"
    try:
        dd = Deduper(store=url)
        dd.check_and_add_many(docs[:6])
        stop(proc)
        proc = redis_server(tmp_path, port, "--appendonly", "no")  # back, empty
        with pytest.raises(
            StoreLost, match="the namespace is not the one this process opened"
        ) as lost:
            dd.check_and_add_many(docs[6:9])
        assert "give Redis persistence (appendonly yes)" in str(lost.value)
        dd.close()
        with Deduper(store=url) as again:  # started again: the namespace as it is now
            assert [d.is_duplicate for d in again.check_and_add_many(docs[6:9])] == [
                d.is_duplicate for d in Deduper().check_and_add_many(docs[6:9])
            ]
            first = Deduper(store=url)  # opened beside it ...
        import redis

        client = redis.Redis(port=port)
        client.flushdb()
        client.close()
        with Deduper(store=url) as other:  # ... then the namespace made again by another
            other.check_and_add_many(docs[9:10])
        with pytest.raises(StoreLost):
            first.check_and_add_many(docs[10:])
        first.close()
    finally:
        stop(proc)


@pytest.mark.parametrize("how", ["deleted", "replaced", "moved"])
def test_a_sqlite_file_deleted_or_replaced_under_a_process_is_refused(
    tmp_path: Path, how: str
) -> None:
    """``rm crawl.db`` (or a file put in its place) under a running process: its writes went
    on into the file it had open — gone when it ended, without a word. Now its next batch is
    refused (StoreLost), and a process started again uses the file at that path."""
    from neardup.store import StoreLost

    docs = [(i, t) for i, t, _ in corpus(43, 6, 2, cut=False)]
    db = tmp_path / "crawl.db"
    dd = Deduper(store=f"sqlite:///{db}")
    dd.check_and_add_many(docs[:6])
    if how == "moved":
        os.replace(db, tmp_path / "elsewhere.db")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    if how == "replaced":
        Deduper(store=f"sqlite:///{db}").close()  # another store made there meanwhile
    said = "deleted or moved away" if how != "replaced" else "replaced"
    with pytest.raises(StoreLost, match=f"the file was {said} while this process used it"):
        dd.check_and_add_many(docs[6:9])
    dd.close()
    with Deduper(store=f"sqlite:///{db}") as again:
        assert len(again.check_and_add_many(docs[6:9])) == 3
        assert len(again) == 3
