"""The store's format mark: every SQLite file and Redis namespace a neardup opens for writing
says the newest format it writes (``store.FORMAT``); a store a newer neardup marked is refused
with what to do, before anything in it is read or upgraded, rather than misread."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from neardup import ConfigError, Deduper, StoreError
from neardup.store import FORMAT, format_found, open_store

from ..synth import corpus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _mark(path: Path) -> object:
    with sqlite3.connect(path) as con:
        row = con.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    return None if row is None else row[0]


def _set_mark(path: Path, value: str) -> None:
    with sqlite3.connect(path) as con:
        con.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (value,))


def test_a_mark_is_read_as_a_format() -> None:
    assert format_found(None, "s") == 1  # written before the mark
    assert format_found(b"1", "s") == 1
    assert format_found(str(FORMAT), "s") == FORMAT
    with pytest.raises(ConfigError, match=r"store s was written by a newer neardup \(store "):
        format_found(str(FORMAT + 1).encode(), "s")
    for bad in ("", "0", "two", "-3", "2.0"):
        with pytest.raises(StoreError, match="store s is damaged: its format mark is"):
            format_found(bad, "s")


@pytest.mark.parametrize("layout", ["compact", "full"])
def test_a_sqlite_file_says_its_format_and_a_newer_one_is_refused(
    tmp_path: Path, layout: str
) -> None:
    path = tmp_path / "store.db"
    url = f"sqlite:///{path}?format={layout}"
    docs = corpus(71, 4, 1, cut=False)
    with Deduper(store=url, explain=False) as dd:
        dd.check_and_add_many([(i, t) for i, t, _ in docs])
    assert _mark(path) == str(FORMAT)
    _set_mark(path, str(FORMAT + 1))
    before = path.read_bytes()
    for opening in (
        lambda: open_store(url),
        lambda: open_store(url, readonly=True),
        lambda: Deduper(store=url),
    ):
        with pytest.raises(ConfigError) as caught:
            opening()
        said = str(caught.value)
        assert f"sqlite:///{path}" in said and f"store format {FORMAT + 1}" in said
        assert "upgrade neardup" in said and "rebuild the store" in said
    assert path.read_bytes() == before  # nothing upgraded or written
    _set_mark(path, str(FORMAT))
    with Deduper(store=url, explain=False) as dd:  # this version's mark: as before
        assert len(dd) == len(docs)


def test_the_command_line_says_what_to_do_with_a_newer_file(tmp_path: Path) -> None:
    """``store stats``, ``store check`` and ``dedup --db`` exit with status 2 and the line
    that says what to do; ``dedup`` leaves no output behind (the store is opened first)."""
    path = tmp_path / "store.db"
    Deduper(store=f"sqlite:///{path}").close()
    _set_mark(path, "99")
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "a few words of text"}\n', encoding="utf-8")
    outputs = [tmp_path / "unique.jsonl", tmp_path / "clusters.jsonl"]
    dedup = ["dedup", str(src), "--db", str(path), "-o", str(outputs[0])]
    for args in (
        ["store", "stats", "--db", str(path)],
        ["store", "check", "--db", str(path)],
        [*dedup, "--clusters", str(outputs[1])],
    ):
        r = subprocess.run(
            [sys.executable, "-m", "neardup", *args], capture_output=True, text=True, check=False
        )
        assert r.returncode == 2
        assert "written by a newer neardup (store format 99" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    assert not any(p.exists() for p in outputs)


def test_a_file_written_before_the_mark_is_marked_once_opened_for_writing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.db"
    path.write_bytes((FIXTURES / "store-v1.db").read_bytes())
    open_store(f"sqlite:///{path}", readonly=True).close()
    assert _mark(path) is None  # reading leaves it as it is
    open_store(f"sqlite:///{path}").close()
    assert _mark(path) == str(FORMAT)


def test_a_redis_namespace_says_its_format_and_a_newer_one_is_refused(redis_url: str) -> None:
    import redis

    ns = redis_url.rpartition("namespace=")[2]
    r = redis.Redis.from_url(redis_url.partition("?")[0])
    key = f"{ns}:version"
    for url in (redis_url, redis_url + "-full&format=full"):
        with Deduper(store=url, explain=False) as dd:
            dd.check_and_add("a", "".join(chr(0x4E00 + k * 11 % 20000) for k in range(200)))
            assert dd.store.check() == []  # the mark is a key neardup writes
    assert r.get(key) == str(FORMAT).encode()
    r.set(key, "1")  # an older mark is raised
    open_store(redis_url).close()
    assert r.get(key) == str(FORMAT).encode()
    r.set(key, str(FORMAT + 1))
    with pytest.raises(ConfigError, match=f"store format {FORMAT + 1}; this one reads formats"):
        Deduper(store=redis_url)
    assert r.get(key) == str(FORMAT + 1).encode()  # never lowered
    r.set(key, "garbage")
    with pytest.raises(StoreError, match="is damaged: its format mark is 'garbage'"):
        open_store(redis_url)
