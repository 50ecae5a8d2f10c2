"""A damaged store, and ``neardup store check``: a SQLite file overwritten in the middle is a
one-line StoreError naming the file and saying what to do (exit 2 from ``neardup dedup`` and
``neardup store stats``); ``store check`` runs SQLite's integrity check and the store's own,
for SQLite files and Redis namespaces (exit 0 ok, 1 not sound); ``stats`` and ``check`` read
a read-only file."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from neardup import ConfigError, Deduper, StoreError
from neardup.options import sqlite_url
from neardup.store import open_store

from ..synth import corpus
from .servers import tmpfs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _neardup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup", *args], capture_output=True, text=True, check=False
    )


def _write_corpus(path: Path, docs: list[tuple[str, str, int]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i, t, _ in docs:
            f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")


def _filled(tmp_path: Path, stories: int = 300) -> tuple[Path, Path]:
    """A corpus and a SQLite store filled with it by neardup dedup."""
    src = tmp_path / "crawl.jsonl"
    _write_corpus(src, corpus(41, stories, 3, cut=False))
    db = tmp_path / "s.db"
    r = _neardup("dedup", str(src), "--db", str(db), "-o", str(tmp_path / "u"),
                 "--clusters", str(tmp_path / "c"), "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(str(db) + "-wal") or os.path.getsize(str(db) + "-wal") == 0
    return src, db


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def _refused(src: Path, db: Path, tmp_path: Path) -> str:
    """The one line ``neardup dedup`` of ``src`` into the store ``db`` exits 2 with."""
    out = ["-o", str(tmp_path / "u2"), "--clusters", str(tmp_path / "c2"), "-q"]
    r = _neardup("dedup", str(src), "--db", str(db), *out)
    assert r.returncode == 2
    return _one_line(r.stderr)


def test_a_sqlite_file_overwritten_in_the_middle_is_one_line_everywhere(tmp_path: Path) -> None:
    src, db = _filled(tmp_path)
    size = db.stat().st_size
    assert size > 600_000
    with db.open("r+b") as f:  # 200 KB of garbage in the middle
        f.seek(size // 2)
        f.write(os.urandom(200_000))
    line = _refused(src, db, tmp_path)
    assert line.startswith(
        f"neardup: error: store sqlite:///{db}: database disk image is malformed"
    )
    assert "restore it from a backup, or rebuild the store" in line
    assert f"neardup store check --db {db} says what is wrong" in line
    r = _neardup("store", "stats", "--db", str(db))
    assert r.returncode == 2
    assert "database disk image is malformed; the file is damaged" in _one_line(r.stderr)
    r = _neardup("store", "check", "--db", str(db))
    assert r.returncode == 1
    assert r.stdout.startswith(f"sqlite:///{db}: ")
    assert "SQLite's integrity check: " in r.stdout or "SQLite said: " in r.stdout
    assert "the store is not sound: restore the file from a backup" in _one_line(r.stderr)
    with pytest.raises(StoreError, match="malformed"), Deduper(store=f"sqlite:///{db}") as dd:
        dd.check_and_add_many([(i, t) for i, t, _ in corpus(41, 300, 3, cut=False)])


def test_a_sqlite_file_whose_header_is_gone_is_no_database(tmp_path: Path) -> None:
    src, db = _filled(tmp_path, stories=20)
    with db.open("r+b") as f:
        f.write(b"\0" * 100)
    line = _refused(src, db, tmp_path)
    assert f"sqlite:///{db}: file is not a database; the file is damaged" in line
    r = _neardup("store", "check", "--db", str(db))
    assert r.returncode == 1
    assert "file is not a database" in r.stdout + r.stderr


def test_store_check_says_ok_of_a_sound_store(tmp_path: Path) -> None:
    _, db = _filled(tmp_path, stories=20)
    r = _neardup("store", "check", "--db", str(db))
    assert (r.returncode, r.stdout, r.stderr) == (
        0,
        f"sqlite:///{db}: ok (80 documents checked)\n",
        "",
    )
    v1 = tmp_path / "v1.db"  # a store of the first version, never upgraded
    v1.write_bytes((FIXTURES / "store-v1.db").read_bytes())
    r = _neardup("store", "check", "--db", str(v1))
    assert r.returncode == 0 and "ok (18 documents checked)" in r.stdout, r.stdout
    r = _neardup("store", "check", "--db", str(tmp_path / "none.db"))
    assert r.returncode == 2 and "no store at" in r.stderr


def test_store_check_finds_what_the_integrity_check_does_not(tmp_path: Path) -> None:
    _, db = _filled(tmp_path, stories=20)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE docs SET sketch = x'0badf00d' WHERE seq = 3")
        con.execute("INSERT INTO exact VALUES (42, 'ghost')")
    r = _neardup("store", "check", "--db", str(db))
    assert r.returncode == 1
    problems = r.stdout.splitlines()
    assert problems[0] == f"sqlite:///{db}: 2 problems"
    assert "does not decode" in problems[1] and "1 exact-text rows name no stored" in problems[2]
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE t (x)")
    r = _neardup("store", "check", "--db", str(other))
    assert r.returncode == 1 and "not a neardup store: no table meta, docs" in r.stdout


@pytest.mark.parametrize(
    "damage",
    [
        "cut",  # a guard's table cut short in its compressed body
        "head",  # no more than the guard's mark
        "garbage",  # bytes that are none of the saved forms
        "slots",  # a count table of another size
    ],
)
def test_a_damaged_chrome_table_is_one_line_and_check_names_it(tmp_path: Path, damage: str) -> None:
    """A store whose saved chrome table (the template guard's counts) does not read as one
    is a one-line StoreError from ``neardup dedup`` and ``store stats`` (exit 2), a problem
    that ``store check`` names (exit 1), and a StoreError from the API: never a traceback."""
    from neardup.engine import compact

    src, db = _filled(tmp_path, stories=20)
    with sqlite3.connect(db) as con:
        value = bytes(con.execute("SELECT value FROM meta WHERE key = 'common'").fetchone()[0])
        head, blob = value[:8], value[8:]
        assert compact.is_guard(blob)
        broken = {
            "cut": blob[: len(blob) - 20],
            "head": blob[:6],
            "garbage": b"\x00not a table\xff" * 3,
            "slots": compact.encode_counts(np.ones(1 << 10, dtype=np.uint8)),
        }[damage]
        con.execute("UPDATE meta SET value = ? WHERE key = 'common'", (head + broken,))
    line = _refused(src, db, tmp_path)
    assert line.startswith(
        f"neardup: error: the store's saved chrome table ({len(broken):,} bytes)"
    )
    assert "is damaged" in line and "restore the store from a backup, or rebuild it" in line
    r = _neardup("store", "stats", "--db", str(db))
    assert r.returncode == 2 and "saved chrome table" in _one_line(r.stderr)
    r = _neardup("store", "check", "--db", str(db))
    assert r.returncode == 1
    assert r.stdout.splitlines()[1].strip().startswith("the store's saved chrome table")
    with (
        pytest.raises(StoreError, match="saved chrome table"),
        Deduper(store=f"sqlite:///{db}") as dd,
    ):
        dd.check_and_add_many([("x", "a text of its own, long enough to be verified")])


def test_store_check_of_a_redis_namespace(redis_url: str, tmp_path: Path) -> None:
    """A namespace in the layout of whole sketches (``format=full``)."""
    import redis

    redis_url += "&format=full"
    with Deduper(store=redis_url) as dd:
        dd.check_and_add_many([(i, t) for i, t, _ in corpus(43, 10, 3, cut=False)])
    r = _neardup("store", "check", "--store", redis_url)
    assert r.returncode == 0 and r.stdout.endswith(": ok (40 documents checked)\n"), r.stdout
    ns = redis_url.rsplit("namespace=", 1)[1].split("&")[0]
    client = redis.Redis.from_url(redis_url.split("?")[0])
    first = client.zrange(f"{ns}:ts", 0, 0)[0].decode()
    client.set(f"{ns}:d:{first}", "not json")
    client.delete(f"{ns}:s:{client.zrange(f'{ns}:ts', 1, 1)[0].decode()}")
    client.rpush(f"{ns}:b:123", "a list, not a sorted set")
    client.close()
    r = _neardup("store", "check", "--store", redis_url)
    assert r.returncode == 1
    assert r.stdout.splitlines()[1:] == [
        f"  1 {ns}:b keys are not of the type neardup writes",
        "  1 entries do not parse",
        "  1 entries of documents that copy no other have no sketch",
    ]
    r = _neardup("store", "check", "--store", redis_url.replace(ns, ns + "x"))
    assert r.returncode == 1 and "no neardup store under namespace" in r.stdout
    assert "check the URL and its namespace" in r.stderr


def test_store_check_of_a_compact_redis_namespace(redis_url: str) -> None:
    """A compact namespace: its blocks parse, its lookup shards are whole records and as
    many as it counts; a damaged block or shard is named."""
    import redis

    with Deduper(store=redis_url) as dd:
        dd.check_and_add_many([(i, t) for i, t, _ in corpus(43, 10, 3, cut=False)])
    r = _neardup("store", "check", "--store", redis_url)
    assert r.returncode == 0 and r.stdout.endswith(": ok (40 documents checked)\n"), r.stdout
    ns = redis_url.rsplit("namespace=", 1)[1]
    client = redis.Redis.from_url(redis_url.split("?")[0])
    client.setrange(f"{ns}:b:0", 0, b"\xff\xff\xff\xff")  # the first offset, far out
    shard = sorted(client.scan_iter(f"{ns}:s:*"))[0]
    client.append(shard, b"xy")
    client.close()
    r = _neardup("store", "check", "--store", redis_url)
    assert r.returncode == 1
    assert r.stdout.splitlines()[1:] == [
        "  1 blocks of documents do not parse",
        "  1 lookup shards are not whole records",
    ]


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A folder whose files cannot be written: a tmpfs remounted read-only (root), or a
    folder and files without write permission (anyone else)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        yield folder
        for p in (folder, *folder.iterdir()):
            p.chmod(0o755)
        return
    with tmpfs(folder, "16m"):
        yield folder


def _make_read_only(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
    else:
        for p in (*folder.iterdir(), folder):
            p.chmod(0o555 if p.is_dir() else 0o444)


def test_stats_and_check_read_a_read_only_store(tmp_path: Path, read_only: Path) -> None:
    src = tmp_path / "crawl.jsonl"
    _write_corpus(src, corpus(47, 10, 2, cut=False))
    db = read_only / "s.db"
    out = ["-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c"), "-q"]
    assert _neardup("dedup", str(src), "--db", str(db), *out).returncode == 0
    _make_read_only(read_only)
    r = _neardup("store", "stats", "--db", str(db), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["documents"] == 30
    r = _neardup("store", "check", "--db", str(db))
    assert r.returncode == 0 and "ok (30 documents checked)" in r.stdout, r.stdout + r.stderr
    with open_store(f"sqlite:///{db}", readonly=True) as store:
        assert store.stats()["documents"] == 30
    r = _neardup("dedup", str(src), "--db", str(db), *out)  # a run must write: one line
    assert r.returncode == 2
    assert f"store sqlite:///{db}: " in _one_line(r.stderr)


def _tables_and_bytes(path: Path) -> tuple[list[tuple[str, str]], bytes]:
    with contextlib.closing(sqlite3.connect(path)) as con:
        tables = sorted(con.execute("SELECT type, name FROM sqlite_master").fetchall())
    return tables, path.read_bytes()


def test_a_sqlite_database_of_another_program_is_never_written(tmp_path: Path) -> None:
    """Given another program's SQLite file, every command that would write a store into it
    (dedup, the commands that look after a store, the service, the library) refuses it in
    one line and leaves it byte for byte as it was; ``store check`` says what it lacks."""
    other = tmp_path / "app #1?.db"  # (a URI would read the name as a path and a query)
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE users (name TEXT)")
        con.execute("INSERT INTO users VALUES ('ada')")
    before = _tables_and_bytes(other)
    src = tmp_path / "a.jsonl"
    _write_corpus(src, corpus(5, 3, 2, cut=False))
    line = _refused(src, other, tmp_path)
    assert "a SQLite database of something else (tables users)" in line, line
    assert "give it a file of its own" in line
    for action in (["prune", "--window", "1d"], ["delete", "x"], ["vacuum"]):
        r = _neardup("store", *action, "--db", str(other))
        assert r.returncode == 2, (action, r.stdout)
        assert "something else (tables users)" in _one_line(r.stderr), action
    r = _neardup("store", "stats", "--db", str(other))
    assert r.returncode == 2 and "no neardup store at" in _one_line(r.stderr), r.stderr
    assert "holds no neardup tables" in r.stderr
    r = _neardup("serve", "--db", str(other), "--port", "0", "--workers", "1")
    assert r.returncode == 2 and "something else (tables users)" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    with pytest.raises(StoreError, match="something else"):
        Deduper(store=sqlite_url(str(other)))  # (a ? in a URL's path is written %3F)
    r = _neardup("store", "check", "--db", str(other))
    assert r.returncode == 1 and "not a neardup store: no table meta, docs" in r.stdout
    assert _tables_and_bytes(other) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", other.name]


def test_the_commands_that_look_after_a_store_make_none(tmp_path: Path) -> None:
    """``store stats``, ``prune``, ``delete`` and ``vacuum`` of an empty file, or of a
    SQLite file with no tables, say there is no store there and leave the file alone (they
    made an empty store and reported on it); ``dedup`` still makes a new store in either."""
    empty = tmp_path / "empty.db"
    empty.touch()
    bare = tmp_path / "bare.db"
    with sqlite3.connect(bare) as con:
        con.execute("PRAGMA user_version = 7")  # a database, with a header and no tables
    assert bare.stat().st_size > 0
    bare_bytes = bare.read_bytes()
    for path, held in ((empty, "the file is empty"), (bare, "the file holds no tables")):
        for action in (["stats"], ["prune", "--window", "1d"], ["delete", "x"], ["vacuum"]):
            r = _neardup("store", *action, "--db", str(path))
            assert r.returncode == 2, (path, action, r.stdout)
            assert f"no neardup store at sqlite:///{path} ({held})" in _one_line(r.stderr)
    assert empty.stat().st_size == 0 and bare.read_bytes() == bare_bytes
    # nor does compare, which reads a store's learned chrome (it made a store to read)
    r = _neardup("compare", "a b c", "a b d", "--db", str(tmp_path / "none.db"))
    assert r.returncode == 2 and "no store at" in _one_line(r.stderr)
    r = _neardup("compare", "a b c", "a b d", "--db", str(empty))
    assert r.returncode == 2 and "no neardup store at" in _one_line(r.stderr)
    assert not (tmp_path / "none.db").exists() and empty.stat().st_size == 0
    with pytest.raises(StoreError, match="no neardup store"):
        open_store(f"sqlite:///{empty}", existing=True)
    with pytest.raises(StoreError, match=r"no neardup store .*\(no such file\)"):
        open_store(f"sqlite:///{tmp_path / 'none.db'}", existing=True)
    assert not (tmp_path / "none.db").exists()
    src = tmp_path / "a.jsonl"
    _write_corpus(src, corpus(5, 3, 2, cut=False))
    for path in (empty, bare):
        out = ["-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c"), "-q"]
        assert _neardup("dedup", str(src), "--db", str(path), *out).returncode == 0
        r = _neardup("store", "stats", "--db", str(path), "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["documents"] == 9, r.stderr


def test_the_commands_that_look_after_a_store_write_no_redis_key(redis_url: str) -> None:
    """Of a namespace no Deduper ever opened (a typo), ``store stats``, ``prune``,
    ``delete`` and ``vacuum`` say there is no store and write nothing under it (they marked
    it with its format and reported an empty store); of a store, they work as before."""
    import redis

    ns = redis_url.rsplit("namespace=", 1)[1]
    client = redis.Redis.from_url(redis_url.split("?")[0])
    try:
        for action in (["stats"], ["prune", "--window", "1d"], ["delete", "x"], ["vacuum"]):
            r = _neardup("store", *action, "--store", redis_url)
            assert r.returncode == 2, (action, r.stdout)
            line = _one_line(r.stderr)
            assert "no neardup store at redis://" in line and f"namespace {ns!r}" in line
            assert "check the URL and its namespace" in line
        r = _neardup("compare", "a b c", "a b d", "--store", redis_url)
        assert r.returncode == 2 and "no neardup store at redis://" in _one_line(r.stderr)
        assert client.keys(f"{ns}:*") == []
        with Deduper(store=redis_url) as dd:
            dd.check_and_add_many([(i, t) for i, t, _ in corpus(47, 4, 2, cut=False)])
        r = _neardup("store", "stats", "--store", redis_url, "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["documents"] == 12, r.stderr
        r = _neardup("compare", "a b c", "a b d", "--store", redis_url, "--json")
        assert r.returncode == 0 and "coverage" in json.loads(r.stdout), r.stderr
        r = _neardup("store", "delete", "--store", redis_url, "s0-0")
        assert r.returncode == 0 and "deleted 1 document" in r.stdout, (r.stdout, r.stderr)
    finally:
        client.close()


def test_a_store_file_with_a_question_mark_in_its_path_is_that_file(tmp_path: Path) -> None:
    """``--db PATH`` is that file whatever its name: a ``?`` in it began the URL's options
    (``--db 'crawl?.db'`` filled a store called ``crawl``), and ``%`` is read as it is."""
    src = tmp_path / "a.jsonl"
    _write_corpus(src, corpus(5, 3, 2, cut=False))
    db = tmp_path / "crawl?100%25.db"
    out = ["-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c"), "-q"]
    r = _neardup("dedup", str(src), "--db", str(db), *out)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "c", db.name, "u"]
    r = _neardup("store", "stats", "--db", str(db), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["documents"] == 9, r.stderr
    with Deduper(store=sqlite_url(str(db))) as dd:
        assert len(dd) == 9
    r = _neardup("store", "stats", "--db", str(tmp_path / "crawl?"))
    assert r.returncode == 2 and "no store at" in r.stderr
    # a URL with an option the store does not read, or a ? left in a file's name, is one
    # line (the option was dropped: no text tier; a store in a file called "crawl")
    with pytest.raises(ConfigError, match=r"no option 'keep_txt' \(did you mean keep_text\?\)"):
        Deduper(store=f"sqlite:///{tmp_path / 'new.db'}?keep_txt=1")
    r = _neardup("dedup", str(src), "--store", f"sqlite:///{tmp_path / 'new?.db'}", *out)
    assert r.returncode == 2 and "no option '.db'" in _one_line(r.stderr)
    assert "in a file's name it is written %3F" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "c", db.name, "u"]


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("namespace=", "the option 'namespace' has no value"),  # ?namespace=$NS, NS unset
        ("namespace=crawl&ttl=", "the option 'ttl' has no value"),
        ("namespce=", "the option 'namespce' has no value (did you mean namespace?)"),
        ("ssl_ca_certs=", "the option 'ssl_ca_certs' has no value"),  # redis-py's own
    ],
)
def test_a_redis_url_option_with_no_value_is_one_line(query: str, said: str) -> None:
    """An option given no value was dropped unseen (by neardup, or by redis-py), and its
    default taken: the default namespace filled, a window's TTL gone. Refused before
    anything is reached or written."""
    url = f"redis://127.0.0.1:1/0?{query}"  # nothing listens there
    with pytest.raises(ConfigError, match=re.escape(said)):
        Deduper(store=url)
    r = _neardup("store", "stats", "--store", url)
    assert r.returncode == 2 and said in _one_line(r.stderr), r.stderr


def test_a_sqlite_url_option_with_no_value_is_one_line(tmp_path: Path) -> None:
    """The same for a SQLite file's options (``?format=``), and no file is made."""
    with pytest.raises(ConfigError, match="the option 'format' has no value"):
        Deduper(store=f"sqlite:///{tmp_path / 'a.db'}?format=")
    assert list(tmp_path.iterdir()) == []


def test_a_store_path_that_names_an_input_says_so(tmp_path: Path) -> None:
    """``--db`` given the input (JSONL, gzip, Parquet ...) by mistake: one line saying what
    the file is and that a store is a file of its own, not that a store is damaged and
    should be restored from a backup or moved away; the file is left as it was."""
    import gzip

    src = tmp_path / "crawl.jsonl"
    _write_corpus(src, corpus(5, 3, 2, cut=False))
    packed = tmp_path / "crawl.jsonl.gz"
    packed.write_bytes(gzip.compress(src.read_bytes()))
    for path, kind in ((src, 'a text file (it begins \'{"id": '), (packed, "a gzip file")):
        before = path.read_bytes()
        line = _refused(src, path, tmp_path)
        assert f"{path} is {kind}" in line, line
        assert "not a store: a store is a file of its own" in line
        assert "backup" not in line and "damaged" not in line
        r = _neardup("store", "stats", "--db", str(path))
        assert r.returncode == 2 and f"{path} is {kind}" in _one_line(r.stderr)
        assert path.read_bytes() == before


def test_a_redis_database_is_the_one_the_url_names(tmp_path: Path) -> None:
    """``redis://host:port/N`` and ``unix:///socket?db=N`` fill database N; a database that
    is no number is refused in one line (redis-py took ``redis://host:port/x`` for database
    0, and a socket URL's ``db`` was left out with the rest of its query: database 0)."""
    import shutil
    import tempfile

    import redis

    from ..conftest import redis_on_free_port

    folder = Path(tempfile.mkdtemp(prefix="nd", dir="/tmp"))  # a socket's path is short
    sock = folder / "r.sock"
    proc, port = redis_on_free_port(folder, "--unixsocket", str(sock), "--appendonly", "no")
    try:
        docs = [(i, t) for i, t, _ in corpus(7, 3, 1, cut=False)]
        filled: set[int] = set()
        for url, db in ((f"unix://{sock}?db=3&namespace=u", 3), (f"redis://127.0.0.1:{port}/2", 2)):
            with Deduper(store=url) as dd:
                dd.check_and_add_many(docs)
            filled.add(db)
            for n in range(4):
                client = redis.Redis(host="127.0.0.1", port=port, db=n)
                assert bool(client.keys("*")) == (n in filled), (url, n)
                client.close()
        r = _neardup("store", "stats", "--store", f"unix://{sock}?db=3&namespace=u", "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["documents"] == 6, r.stderr
        for url, shown in (
            (f"redis://127.0.0.1:{port}/x", "(redis://host:port/N), not 'x'"),
            (f"unix://{sock}?db=three", "(?db=N), not 'three'"),
        ):
            with pytest.raises(ConfigError, match=re.escape(shown)):
                Deduper(store=url)
            src = tmp_path / "a.jsonl"
            _write_corpus(src, corpus(5, 1, 1, cut=False))
            out = ["-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c"), "-q"]
            r = _neardup("dedup", str(src), "--store", url, *out)
            assert r.returncode == 2 and shown in _one_line(r.stderr)
        client = redis.Redis(host="127.0.0.1", port=port, db=0)
        assert client.keys("*") == []
        client.close()
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_tls_redis_with_a_private_ca_opens(tmp_path: Path) -> None:
    """``rediss://`` with redis-py's own options in the URL (here ``ssl_ca_certs``, the CA
    of a real TLS redis-server's certificate): neardup reads its own options and gives
    redis-py the others (it gave it none, so such a server could not be used at all); an
    option neither takes is one line naming it, without the URL's secrets."""
    from ..conftest import free_port, redis_on_free_port

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)

    # a CA and a server certificate as strict verification wants them (Python 3.13's
    # default context checks the CA's key usage, among others)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.crt", "-days", "2", "-subj", "/CN=neardup test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr",
            "-subj", "/CN=127.0.0.1")  # fmt: skip
    (tmp_path / "ext.cnf").write_text(
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n"
    )
    openssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "srv.crt", "-days", "2", "-extfile", "ext.cnf")  # fmt: skip
    tls = free_port()
    proc, _ = redis_on_free_port(
        tmp_path, "--tls-port", str(tls), "--tls-cert-file", str(tmp_path / "srv.crt"),
        "--tls-key-file", str(tmp_path / "srv.key"), "--tls-ca-cert-file",
        str(tmp_path / "ca.crt"), "--tls-auth-clients", "no", "--appendonly", "no",
    )  # fmt: skip
    try:
        url = f"rediss://127.0.0.1:{tls}/0?namespace=tls&ssl_ca_certs={tmp_path / 'ca.crt'}"
        with Deduper(store=url) as dd:
            dd.check_and_add_many([(i, t) for i, t, _ in corpus(9, 3, 1, cut=False)])
        r = _neardup("store", "stats", "--store", url, "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["documents"] == 6, r.stderr
        with pytest.raises(ConfigError, match="certificate verify failed"):
            Deduper(store=f"rediss://127.0.0.1:{tls}/0?namespace=tls")
        for url, name in (
            (f"rediss://:s3cret@127.0.0.1:{tls}/0?namespce=tls", "namespce"),
            (f"redis://127.0.0.1:{tls}/0?ssl_password=s3cret", "ssl_password"),
        ):
            with pytest.raises(ConfigError, match=f"no option '{name}'") as info:
                Deduper(store=url)
            assert "s3cret" not in str(info.value)
            assert ("(did you mean namespace?)" in str(info.value)) == (name == "namespce")
    finally:
        proc.kill()
        proc.wait()
