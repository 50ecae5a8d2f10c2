"""Space comes back: ``neardup store prune`` and ``delete`` give a SQLite file's pages back
to the file system and take a Redis namespace's keys away, ``store vacuum`` rewrites a file
written before that, and ``store stats`` says the bytes a document takes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from neardup.store import open_store

from ..synth import corpus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
T0 = 1_700_000_000


def _neardup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup", *args], capture_output=True, text=True, check=False
    )


def _fill(tmp_path: Path, *store: str) -> None:
    """300 stories and their reprints, one a second from T0, added by neardup dedup."""
    src = tmp_path / "crawl.jsonl"
    with src.open("w", encoding="utf-8") as f:
        for n, (i, text, _) in enumerate(corpus(43, 300, 2, cut=False)):
            f.write(json.dumps({"id": i, "text": text, "timestamp": T0 + n}) + "\n")
    out = ["-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c"), "-q"]
    r = _neardup("dedup", str(src), *store, *out)
    assert r.returncode == 0, r.stderr


def _stats(*store: str) -> dict[str, object]:
    r = _neardup("store", "stats", *store, "--json")
    assert r.returncode == 0, r.stderr
    stats: dict[str, object] = json.loads(r.stdout)
    return stats


def _file_size(db: Path) -> int:
    wal = Path(str(db) + "-wal")
    return db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def test_prune_and_delete_give_a_sqlite_file_its_space_back(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _fill(tmp_path, "--db", str(db))
    full = _stats("--db", str(db))
    assert full["documents"] == 900 and full["reclaims_space"] is True
    assert full["bytes_per_document"] == round(_file_size(db) / 900)
    before = _file_size(db)
    r = _neardup("store", "prune", "--db", str(db), "--before", str(T0 + 800))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("pruned 800 documents older than ")
    assert "store file " in r.stdout and r.stderr == ""
    after = _stats("--db", str(db))
    assert after["documents"] == 100 and after["free_bytes"] == 0
    # about an eighth of the documents left: well under half of the file stays
    assert _file_size(db) < before / 2, (before, _file_size(db))
    ids = [json.loads(line)["id"] for line in (tmp_path / "c").open()][-2:]
    r = _neardup("store", "delete", "--db", str(db), *ids)
    assert r.returncode == 0 and r.stdout.startswith("deleted 2 documents"), r.stderr
    assert _stats("--db", str(db))["free_bytes"] == 0
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    r = _neardup("store", "check", "--db", str(db))
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_file_of_the_first_version_says_how_to_reclaim_and_vacuum_does(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    db.write_bytes((FIXTURES / "store-v1.db").read_bytes())
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA auto_vacuum").fetchone()[0] == 0  # written without it
    r = _neardup("store", "prune", "--db", str(db), "--before", "2100-01-01")
    assert r.returncode == 0, r.stderr
    stats = _stats("--db", str(db))
    assert stats["documents"] == 0 and stats["reclaims_space"] is False
    free = stats["free_bytes"]
    assert isinstance(free, int) and free > 0
    assert "of free pages stay in the file" in r.stderr
    assert "'neardup store vacuum' rewrites it once" in r.stderr
    r = _neardup("store", "vacuum", "--db", str(db))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    stats = _stats("--db", str(db))
    assert stats["free_bytes"] == 0 and stats["reclaims_space"] is True
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with open_store(f"sqlite:///{db}") as store:  # still a store that takes documents
        assert store.stats()["documents"] == 0


@pytest.mark.slow
def test_prune_takes_a_redis_namespace_keys_away(tmp_path: Path) -> None:
    from ..conftest import start_redis_server

    proc, url = start_redis_server(tmp_path)
    try:
        store = ["--store", url + "?namespace=space"]
        _fill(tmp_path, *store)
        full = _stats(*store)
        assert full["documents"] == 900
        keys, size = full["keys"], full["bytes"]
        assert isinstance(keys, int) and isinstance(size, int)
        assert keys < 900  # compact: blocks of 32 documents, shards of about 128 records
        assert full["bytes_per_document"] == round(size / 900)
        r = _neardup("store", "prune", *store, "--before", str(T0 + 10_000))
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("pruned 900 documents")
        assert "\nredis used_memory " in r.stdout and "nothing to rewrite" in r.stdout
        empty = _stats(*store)
        assert empty["documents"] == 0 and empty["bytes_per_document"] is None
        left, left_bytes = empty["keys"], empty["bytes"]
        assert isinstance(left, int) and isinstance(left_bytes, int)
        # what stays is the namespace's own few keys (settings, counters, the chrome table)
        assert left < 16 and left_bytes < size / 2, (left, left_bytes, size)
        r = _neardup("store", "vacuum", *store)
        assert r.returncode == 0 and r.stdout.startswith("redis used_memory "), r.stderr
    finally:
        proc.kill()
        proc.wait()
