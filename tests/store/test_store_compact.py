"""Compact stores (the default for a new SQLite file or Redis namespace): what they keep of a
document, copies joining no bucket, the optional text tier, the log of stories folded into
the saved count table, space given back, and stores of the other layout refused with what
to do."""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from neardup import ConfigError, Deduper, StoreError
from neardup import deduper as deduper_module
from neardup.engine import bucket_keys
from neardup.engine.compact import Compact
from neardup.store import VERBATIM, open_store, sqlite_compact

from ..engine.test_real_crawls import zh
from ..synth import corpus


@pytest.fixture(params=["sqlite", "redis"])
def compact_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new compact store: a SQLite file or a Redis namespace."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    url: str = request.getfixturevalue("redis_url")
    return url


def test_a_compact_store_keeps_samples_not_sketches(compact_url: str) -> None:
    """Each document not dropped as a near-verbatim copy keeps a compact sketch (a sample
    of its codes) and its 64 bucket entries; such a copy keeps its decision alone."""
    docs = corpus(61, 20, 2, cut=False)
    with Deduper(store=compact_url, explain=False) as dd:
        decided = dd.check_and_add_many([(i, t) for i, t, _ in docs])
        kept = [d.id for d in decided if not d.is_duplicate or d.score < VERBATIM]
        copies = [d.id for d in decided if d.is_duplicate and d.score >= VERBATIM]
        assert 20 <= len(kept) < 40 and len(copies) > 20
        stored = dd.store.sketches([d.id for d in decided])
        assert set(stored) == set(kept)
        assert all(isinstance(c, Compact) and len(c.codes) < c.n_shingles for c in stored.values())
        stats = dd.stats()
        if "bucket_entries" in stats:
            assert stats["bucket_entries"] == 64 * len(kept)
        else:  # Redis: one lookup table, a record a document for its id, cluster, exact text
            records = int(stats["lookup_records"])  # type: ignore[call-overload]
            assert 64 * len(kept) + 2 * 60 <= records <= 64 * len(kept) + 3 * 60
        assert stats["layout"] == "compact"


def test_a_verbatim_copy_joins_no_bucket_and_later_ones_find_the_kept_one(
    compact_url: str,
) -> None:
    (_, t0, _), *_ = corpus(62, 1, 0)
    with Deduper(store=compact_url, explain=False) as dd:
        dd.check_and_add("first", t0)
        copy = dd.check_and_add("copy", "转载：" + t0 + "（完）")
        assert copy.duplicate_of == "first"
        keys = bucket_keys(dd.sketch(t0))
        members = {m[1] for ms in dd.store.buckets(keys).values() for m in ms}
        assert members == {"first"}
        later = dd.check_and_add("later", "来源：某网\n" + t0)
        assert (later.duplicate_of, later.cluster) == ("first", "first")
        assert [d.id for d in dd.cluster("first")] == ["first", "copy", "later"]


def test_a_compact_store_explains_a_match_as_whole_sketches_do(compact_url: str) -> None:
    """The passages a duplicate shares with what it matched, and those set aside as chrome,
    are read from the text a compact store keeps, the same as from the whole sketches a
    memory store holds (chrome: pages of one site's frame around different stories)."""
    rng = random.Random(66)
    block = zh(rng, 4)  # a site's block: chrome once it is in common_after stories
    docs = [(i, f"{t}\n{block}") for i, t, _ in corpus(66, 12, 3)]
    story = zh(rng, 8)
    docs += [("story", story + "\n" + block), ("copy", "转载\n" + story + "\n" + block)]
    with Deduper() as whole, Deduper(store=compact_url) as compact:
        want = whole.check_and_add_many(docs)
        got = compact.check_and_add_many(docs)
    # where both matched the same document (a compact store's scores are estimates: one
    # extension here extends another copy of its story)
    same = [(w, g) for w, g in zip(want, got, strict=True) if w.match == g.match and w.evidence]
    assert len(same) >= len(want) // 2 and any(w.chrome for w, _ in same)
    assert [(g.evidence, g.chrome) for _, g in same] == [(w.evidence, w.chrome) for w, _ in same]


def test_texts_are_kept_when_a_deduper_explains_or_keep_text_says(compact_url: str) -> None:
    """Decisions never read the texts: a compact store keeps them (for the passages two
    documents share, and the page) when a Deduper explains (the default; the HTTP service)
    or the URL says keep_text=1 — not for the command line or the Scrapy add-on."""
    (_, t1, _), (_, t2, _), (_, t3, _) = corpus(63, 3, 0)
    with Deduper(store=compact_url, explain=False) as quiet:
        quiet.check_and_add("q-a", t1)
        assert not quiet.check_and_add("q-b", "转载：" + t1[:-5]).evidence
    with Deduper(store=compact_url) as dd:
        assert dd.decision("q-b").is_duplicate and not dd.decision("q-b").evidence
        assert dd.stored_text("q-a") is None  # added without its text
        dd.check_and_add("e-a", t2)
        d = dd.check_and_add("e-b", "转载：" + t2[:-5])
        assert d.is_duplicate and d.evidence and dd.decision("e-b").evidence
        text = dd.stored_text("e-a")
        assert text and text == dd.sketch(t2).text
    sep = "&" if "?" in compact_url else "?"
    with Deduper(store=compact_url + f"{sep}keep_text=1", explain=False) as kept:
        kept.check_and_add("k-a", t3)
        assert kept.stored_text("k-a") is not None


def test_the_log_of_stories_is_folded_and_a_process_behind_reloads(
    compact_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the log of stories outgrows the saved count table, a process saves the table
    and the log before it goes; a process still behind it loads the table again, and both
    count the same chrome."""
    monkeypatch.setattr(deduper_module, "_SNAPSHOT_EVERY", 15)
    docs = [(i, t) for i, t, _ in corpus(64, 40, 1)]
    behind = Deduper(store=compact_url, explain=False)
    behind.check_and_add_many(docs[:5])
    with Deduper(store=compact_url, explain=False) as ahead:
        ahead.check_and_add_many(docs[5:25])
        ahead.check_and_add_many(docs[25:])  # its first look at the log saves the table
        saved = ahead.store.load_common()
        assert saved is not None and saved[0] > 5
        page = ahead.store.log_stories(0, 100)
        assert page.behind  # what followed position 0 is in the saved table now
        table = ahead.chrome().counts
    assert np.array_equal(behind.chrome().counts, table)
    behind.close()


def test_the_log_leaves_the_slots_of_the_stories_it_is_told_to_skip_unread(
    compact_url: str,
) -> None:
    """A process's own stories (counted already) come back from the log without slots; the
    others with theirs, and both processes count the same chrome."""
    docs = [(i, t) for i, t, _ in corpus(71, 6, 0)]
    with Deduper(store=compact_url, explain=False) as dd:
        dd.check_and_add_many(docs)
        mine = {docs[0][0], docs[3][0]}
        page = dd.store.log_stories(0, 100, skip=mine)
        assert [i for i, _ in page.stories] == [i for i, _ in docs]
        for i, slots in page.stories:
            assert slots is not None and (len(slots) == 0) == (i in mine)
        other = Deduper(store=compact_url, explain=False)
        assert np.array_equal(other.chrome().counts, dd.chrome().counts)
        other.close()


def test_reclaim_takes_the_records_of_forgotten_documents_out(compact_url: str) -> None:
    docs = corpus(65, 12, 0)
    with Deduper(store=compact_url, explain=False) as dd:
        dd.check_and_add_many([(i, t) for i, t, _ in docs])
        name = "bucket_entries" if "bucket_entries" in dd.stats() else "lookup_records"
        per = 64 if name == "bucket_entries" else 64 + 3  # Redis: its id, cluster, exact text
        assert dd.stats()[name] == per * 12
        for i, _, _ in docs[:8]:
            assert dd.remove(i)
        dd.store.reclaim()
        assert dd.stats()[name] == per * 4
        assert dd.store.check() == []
        again = dd.check_and_add("again", docs[0][1])  # its story is new again
        assert not again.is_duplicate


def test_a_sqlite_file_of_the_other_layout_is_refused_with_what_to_do(tmp_path: Path) -> None:
    full, compact = tmp_path / "full.db", tmp_path / "compact.db"
    Deduper(store=f"sqlite:///{full}?format=full").close()
    Deduper(store=f"sqlite:///{compact}").close()
    with sqlite3.connect(full) as con:
        assert con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'lsh'").fetchone() == (
            0,
        )
    assert type(open_store(f"sqlite:///{full}")).__name__ == "SQLiteStore"
    assert type(open_store(f"sqlite:///{compact}")).__name__ == "CompactSQLiteStore"
    with pytest.raises(ConfigError, match="is a full store, not format=compact: leave format"):
        open_store(f"sqlite:///{full}?format=compact")
    with pytest.raises(ConfigError, match="is a compact store, not format=full"):
        open_store(f"sqlite:///{compact}?format=full")
    with pytest.raises(ConfigError, match="unknown store format 'tiny'"):
        open_store(f"sqlite:///{tmp_path / 'x.db'}?format=tiny")


def test_a_redis_namespace_of_the_other_layout_is_refused(redis_url: str) -> None:
    Deduper(store=redis_url + "&format=full").close()
    assert type(open_store(redis_url)).__name__ == "RedisStore"
    with pytest.raises(ConfigError, match="is a full store, not format=compact"):
        open_store(redis_url + "&format=compact")


def test_processes_opening_a_new_redis_namespace_at_once_all_take_it_as_compact(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that opens a new namespace while another opens it, claims it and writes
    its settings, between any two of its reads, still takes it as compact (read apart, it
    found no mark, then the other's settings, and opened a full store on a compact
    namespace: the fleet's first batch then failed to read the log of stories)."""
    import redis

    other: list[object] = []

    def meanwhile() -> None:
        if not other:  # the other process, once, at this moment
            other.append(None)
            dd = Deduper(store=redis_url)
            other[0] = type(dd.store).__name__
            dd.close()

    get, eval_ = redis.Redis.get, redis.Redis.eval

    def get_then(self: redis.Redis, name: str) -> object:
        found = get(self, name)
        if str(name).endswith(":format"):
            meanwhile()
        return found

    def eval_then(self: redis.Redis, script: str, numkeys: int, *args: object) -> object:
        found = eval_(self, script, numkeys, *args)
        if numkeys and str(args[0]).endswith(":format"):
            meanwhile()
        return found

    monkeypatch.setattr(redis.Redis, "get", get_then)
    monkeypatch.setattr(redis.Redis, "eval", eval_then)
    store = open_store(redis_url)
    monkeypatch.undo()
    try:
        assert other == ["CompactRedisStore"]
        assert type(store).__name__ == "CompactRedisStore"
    finally:
        store.close()
    with Deduper(store=redis_url) as dd:  # and it reads as one
        rng = random.Random(3)
        dd.check_and_add_many([("a", zh(rng, 8)), ("b", zh(rng, 8))])
        assert len(dd) == 2 and type(dd.store).__name__ == "CompactRedisStore"


def test_the_lookup_table_grows_one_shard_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linear hashing: as records come, shards split one by one, and every record stays
    where a lookup finds it."""
    monkeypatch.setattr(sqlite_compact, "_CAP", 4)
    monkeypatch.setattr(sqlite_compact, "_FOLD_MIN", 64 * 3)  # a fold every few documents
    docs = corpus(66, 30, 0)
    url = f"sqlite:///{tmp_path / 's.db'}"
    with Deduper(store=url, explain=False) as dd:
        for i, t, _ in docs:
            dd.check_and_add(i, t)
        layout = dd.store._layout()  # type: ignore[attr-defined]
        assert 64 * 20 < layout.count <= 64 * 30 and layout.size > 64 * 20 // 8
        for i, t, _ in docs:
            keys = bucket_keys(dd.sketch(t))
            found = dd.store.buckets(keys)
            assert all(i in {m[1] for m in found[k]} for k in keys)
        assert dd.store.check() == []
        dd.store.reclaim()  # the log folded in whole
        layout = dd.store._layout()  # type: ignore[attr-defined]
        assert layout.count == 64 * 30 and layout.size > 64 * 30 // 8
        assert dd.stats()["bucket_entries"] == 64 * 30
        assert dd.store.check() == []


def _logged(path: Path) -> tuple[int, list[int]]:
    """The shards written and the records of each row of the log, read from the file."""
    with sqlite3.connect(path) as con:
        (shards,) = con.execute("SELECT count(*) FROM lsh").fetchone()
        rows = con.execute("SELECT length(records) FROM lsh_log ORDER BY pos").fetchall()
    return int(shards), [int(n) // 9 for (n,) in rows]


def test_a_batch_appends_its_records_to_the_log_and_another_process_finds_them(
    tmp_path: Path,
) -> None:
    """A batch writes its records once, in one row of the log, and rewrites no shard; a
    store opened on the same file (another process) finds them there, and the next ones."""
    path = tmp_path / "s.db"
    url = f"sqlite:///{path}"
    docs = corpus(67, 12, 0)
    other = open_store(url)
    with Deduper(store=url, explain=False) as dd:
        dd.check_and_add_many([(i, t) for i, t, _ in docs[:6]])
        assert _logged(path) == (0, [64 * 6])
        dd.check_and_add_many([(i, t) for i, t, _ in docs[6:9]])
        dd.check_and_add_many([(i, t) for i, t, _ in docs[9:]])
        assert _logged(path) == (0, [64 * 6, 64 * 3, 64 * 3])
        assert dd.stats()["bucket_entries"] == 64 * 12
        for i, t, _ in docs:
            keys = bucket_keys(dd.sketch(t))
            found = other.buckets(keys)
            assert all([m[1] for m in found[k]] == [i] for k in keys)
    assert other.check() == []
    other.close()


def test_a_fold_moves_the_log_into_the_shards_a_slice_a_batch_and_lookups_miss_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the log holds its share of the table, the batches that follow fold it into the
    shards a slice each, and the last deletes the rows folded; before, during and after,
    another process's lookups find every record once."""
    monkeypatch.setattr(sqlite_compact, "_FOLD_MIN", 64 * 4)
    monkeypatch.setattr(sqlite_compact, "_FOLD_STEPS", 3)
    path = tmp_path / "s.db"
    url = f"sqlite:///{path}"
    docs = corpus(68, 24, 0)
    other = open_store(url)
    states = set()
    with Deduper(store=url, explain=False) as dd:
        for n, (i, t, _) in enumerate(docs):
            dd.check_and_add(i, t)
            with sqlite3.connect(path) as con:
                going = con.execute("SELECT value FROM meta WHERE key = 'lsh_fold'").fetchone()
            states.add("folding" if going else "logging")
            for j, u, _ in docs[: n + 1]:
                keys = bucket_keys(dd.sketch(u))
                found = other.buckets(keys)
                assert all([m[1] for m in found[k]] == [j] for k in keys)
        shards, rows = _logged(path)
        assert shards > 0 and sum(rows) < 64 * 24
        assert other.check() == [] and dd.store.check() == []
    assert states == {"folding", "logging"}
    other.close()


def test_decisions_do_not_depend_on_when_the_log_is_folded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = [(i, t) for i, t, _ in corpus(69, 30, 3)]

    def decided(name: str) -> list[tuple[object, ...]]:
        with Deduper(store=f"sqlite:///{tmp_path / name}", explain=False) as dd:
            out = [
                d for k in range(0, len(docs), 7) for d in dd.check_and_add_many(docs[k : k + 7])
            ]
        return [(d.id, d.is_duplicate, d.duplicate_of, d.cluster, d.score, d.measure) for d in out]

    never = decided("never.db")
    monkeypatch.setattr(sqlite_compact, "_FOLD_MIN", 64)
    monkeypatch.setattr(sqlite_compact, "_FOLD_STEPS", 2)
    assert decided("often.db") == never
    assert sum(d[1] for d in never) > 30  # the reprints are found


def test_a_batch_rolled_back_leaves_the_log_and_the_fold_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that fails after writing its records (the disk full, say) takes them back,
    and its fold step too; the process's copy of the log still matches the file."""
    monkeypatch.setattr(sqlite_compact, "_FOLD_MIN", 64 * 3)
    monkeypatch.setattr(sqlite_compact, "_FOLD_STEPS", 4)
    path = tmp_path / "s.db"
    url = f"sqlite:///{path}"
    docs = corpus(70, 16, 0)
    inserted = sqlite_compact.CompactSQLiteStore._inserted
    failing = {"now": False}

    def flaky(self: sqlite_compact.CompactSQLiteStore) -> None:
        inserted(self)
        if failing["now"]:
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(sqlite_compact.CompactSQLiteStore, "_inserted", flaky)
    with Deduper(store=url, explain=False) as dd:
        for n, (i, t, _) in enumerate(docs):
            failing["now"] = n % 3 == 1
            if failing["now"]:
                with pytest.raises(StoreError, match="disk is full"):
                    dd.check_and_add(i, t)
                continue
            dd.check_and_add(i, t)
        added = [(i, t) for n, (i, t, _) in enumerate(docs) if n % 3 != 1]
        failing["now"] = False
        for i, t in added:
            keys = bucket_keys(dd.sketch(t))
            assert all([m[1] for m in dd.store.buckets(keys)[k]] == [i] for k in keys)
        assert dd.stats()["documents"] == len(added)
        assert dd.store.check() == []
        dd.store.reclaim()
        assert dd.stats()["bucket_entries"] == 64 * len(added)


def test_a_compact_file_of_the_version_before_the_log_opens_and_takes_one(
    tmp_path: Path,
) -> None:
    """A compact file written before the log (every record in its shard, no ``lsh_log``)
    reads as it was — also read-only, where it is not upgraded — and takes the log when a
    process opens it to write."""
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    docs = corpus(71, 10, 0)
    with Deduper(store=url, explain=False) as dd:
        dd.check_and_add_many([(i, t) for i, t, _ in docs[:6]])
        dd.store.reclaim()
    with sqlite3.connect(path) as con:
        con.execute("DROP TABLE lsh_log")
        con.execute("DELETE FROM meta WHERE key = 'lsh_folded'")
    old = open_store(url, readonly=True)
    assert old.stats()["bucket_entries"] == 64 * 6 and old.check() == []
    probe = Deduper(explain=False)
    keys = bucket_keys(probe.sketch(docs[0][1]))
    assert all([m[1] for m in old.buckets(keys)[k]] == [docs[0][0]] for k in keys)
    with Deduper(store=url, explain=False) as dd:
        again = dd.check_and_add("again", docs[0][1])
        assert again.duplicate_of == docs[0][0]
        dd.check_and_add_many([(i, t) for i, t, _ in docs[6:]])
        assert _logged(path) == (_logged(path)[0], [64 * 4])
        assert dd.stats()["bucket_entries"] == 64 * 10 and dd.store.check() == []
    assert old.stats()["bucket_entries"] == 64 * 10  # it sees the log now
    old.close()


def test_a_torn_row_of_the_log_or_a_shard_is_a_store_error_and_check_names_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    url = f"sqlite:///{path}"
    docs = [(i, t) for i, t, _ in corpus(72, 4, 0)]
    with Deduper(store=url, explain=False) as dd:
        dd.check_and_add_many(docs)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE lsh_log SET records = substr(records, 1, 100)")
    with Deduper(store=url, explain=False) as dd:
        with pytest.raises(StoreError, match=r"is damaged: a log row of 100 bytes .*store check"):
            dd.check_and_add("later", "转载：" + docs[0][1])
        problems = dd.store.check()
    assert problems == ["1 rows of the LSH log are not whole records"]
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM lsh_log")
        con.execute("INSERT INTO lsh VALUES (3, x'0102')")
    with (
        Deduper(store=url, explain=False) as dd,
        pytest.raises(StoreError, match="is damaged: a shard of 2 bytes"),
    ):
        dd.store.buckets([3 + 256])  # a key of shard 3


def test_a_fold_leaves_the_shards_pages_packed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold writes each slice's shards again whole, in order, where it deleted them, so
    when it ends the table's pages are nearly full (rows rewritten in place as they grew,
    or shrunk by a split, left them a sixth to a third empty), and every record is found."""
    monkeypatch.setattr(sqlite_compact, "_FOLD_MIN", 64 * 16)
    monkeypatch.setattr(sqlite_compact, "_FOLD_STEPS", 2)
    path = tmp_path / "s.db"
    docs = corpus(70, 320, 0)

    def state() -> tuple[bool, int, float]:
        with sqlite3.connect(path) as con:
            going = con.execute("SELECT value FROM meta WHERE key = 'lsh_fold'").fetchone()
            try:
                pages, used, size = con.execute(
                    "SELECT count(*), sum(pgsize - unused), sum(pgsize) FROM dbstat"
                    " WHERE name = 'lsh'"
                ).fetchone()
            except sqlite3.OperationalError:
                pytest.skip("this SQLite is built without the dbstat table")
        return going is not None, pages, (used or 0) / (size or 1)

    after_folds = []
    with Deduper(store=f"sqlite:///{path}", explain=False) as dd:
        folding = False
        for k in range(0, len(docs), 16):
            dd.check_and_add_many([(i, t) for i, t, _ in docs[k : k + 16]])
            was, (folding, pages, fill) = folding, state()
            if was and not folding and pages >= 25:
                after_folds.append(fill)
        for i, t, _ in docs[::10]:
            keys = bucket_keys(dd.sketch(t))
            found = dd.store.buckets(keys)
            assert all(i in {m[1] for m in found[k]} for k in keys)
        assert dd.store.check() == []
    assert len(after_folds) >= 2 and min(after_folds) > 0.88


def test_the_log_bytes_a_file_sums_as_it_grows_are_what_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log's size the snapshot rule reads in a compact file — summed over the rows
    added since the last look — is the bytes the log holds, as two processes add to it, a
    saved table folds it, and a fold in a section rolled back comes undone."""
    monkeypatch.setattr(deduper_module, "_SNAPSHOT_EVERY", 15)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    docs = [(i, t) for i, t, _ in corpus(65, 60, 1)]
    with Deduper(store=url, explain=False) as dd, Deduper(store=url, explain=False) as other:
        store = dd.store
        assert isinstance(store, sqlite_compact.CompactSQLiteStore)

        def held() -> int:
            (size,) = store._db.execute("SELECT total(length(slots)) FROM log").fetchone()
            return int(size)

        for k in range(0, len(docs), 7):
            (other if k % 2 else dd).check_and_add_many(docs[k : k + 7])
            assert store._log_bytes() == held()
        saved = store.load_common()
        assert saved is not None and held() > 0
        store.begin()
        store.save_common(saved[0] + 10_000, saved[1])  # folds every row
        assert store._log_bytes() == held() == 0
        store.rollback()
        assert store._log_bytes() == held() > 0


@pytest.mark.parametrize("layout", ["compact", "full"])
def test_one_process_of_a_redis_fleet_at_a_time_saves_the_chrome_table(
    redis_url: str, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Processes on one Redis save the chrome table outside any lock: while another one has
    claimed the save, a process that finds it due does not encode it too, and saves once
    the claim lapses; a save ends the claim."""
    from neardup.store import redis as redis_module

    monkeypatch.setattr(deduper_module, "_SNAPSHOT_EVERY", 5)
    monkeypatch.setattr(redis_module, "SAVE_CLAIM", 0.3)
    sep = "&" if "?" in redis_url else "?"
    url = redis_url + (f"{sep}format=full" if layout == "full" else "")
    docs = [(i, t) for i, t, _ in corpus(66, 30, 0)]
    encoded: list[int] = []
    real = deduper_module.compact_sketch.encode_guard
    monkeypatch.setattr(
        deduper_module.compact_sketch,
        "encode_guard",
        lambda common: encoded.append(1) or real(common),
    )
    with Deduper(store=url, explain=False) as dd, open_store(url) as other:
        assert other.claim_save(1) and not dd.store.claim_save(2)
        dd.check_and_add_many(docs[:12])  # due, while another process saves
        assert dd.store.load_common() is None and not encoded
        time.sleep(0.4)  # the other process stopped: its claim lapses
        dd.check_and_add_many(docs[12:20])
        saved = dd.store.load_common()
        assert saved is not None and saved[0] >= 12
        assert other.claim_save(saved[0])  # the save ended dd's claim
        assert encoded or layout == "full"  # (a full store saves its table whole)


def test_a_lookup_finds_the_records_of_the_keys_asked_as_a_search_of_each_would() -> None:
    """``_member`` (a bitmap of some of the keys' bits, then a search of the keys that pass)
    says of each key what a binary search of it says: keys asked sharing those bits with
    records that are not asked, repeated keys, keys above and below all records, none."""
    rng = np.random.default_rng(7)
    for n_sorted, n_keys in [(0, 5), (5, 0), (1, 1), (512, 16_000), (3_000, 200)]:
        sorted_keys = np.unique(rng.integers(0, 1 << 40, n_sorted, dtype=np.uint64))
        keys = rng.integers(0, 1 << 40, n_keys, dtype=np.uint64)
        if n_sorted and n_keys:
            keys[::7] = rng.choice(sorted_keys, len(keys[::7]))  # members, some repeated
            # not members whose bits 24 to 39 are a member's: the bitmap lets them through
            keys[3::7] = rng.choice(sorted_keys, len(keys[3::7])) ^ np.uint64(1 << 9)
            keys[-1] = (1 << 40) - 1  # above every record
            keys[0] = 0  # below
        got = sqlite_compact._member(sorted_keys, keys)
        assert got.dtype == np.bool_ and len(got) == len(keys)
        assert got.tolist() == np.isin(keys, sorted_keys).tolist()


def test_a_redis_block_grown_batch_by_batch_holds_the_bytes_of_one_written_whole(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespace's blocks of records and texts take each batch's documents by APPEND
    (and the offsets after them by SETRANGE), and are written whole when full or when an
    earlier slot changes: byte for byte the blocks the write script makes when it writes
    every block whole (as it did before), in no more memory once full; and every document
    is read back after one is forgotten (its block written whole) and added again."""
    import redis

    from neardup.store import redis_compact

    docs = [
        {"id": i, "text": t, "timestamp": 1_700_000_000 + k}
        for k, (i, t, _) in enumerate(corpus(71, 40, 1))
    ]  # 80 documents: two full blocks of 32 and a third
    sizes = (1, 2, 3, 5, 1, 31, 2, 4, 7, 1, 23)  # batches across the blocks' ends
    whole, grown = redis_url, redis_url.replace("namespace=", "namespace=grown")
    decided = []
    for url, script in (
        (whole, redis_compact._WRITE.replace("if not appended(key, slots) then", "if true then")),
        (grown, redis_compact._WRITE),
    ):
        monkeypatch.setattr(redis_compact, "_WRITE", script)
        with Deduper(store=url + "&keep_text=1") as dd:
            got, at = [], 0
            for size in sizes:
                got += dd.check_and_add_many(docs[at : at + size])
                at += size
            assert at == len(docs)
            decided.append([(d.id, d.duplicate_of, d.score) for d in got])
    assert decided[0] == decided[1]
    client = redis.Redis.from_url(redis_url.split("?")[0])
    ns_whole, ns_grown = (u.split("namespace=")[1].split("&")[0] for u in (whole, grown))
    for kind in ("b", "t"):
        keys = sorted(k.decode().rsplit(":", 1)[1] for k in client.keys(f"{ns_whole}:{kind}:*"))
        assert len(keys) == 3, keys
        for block in keys:
            mine, theirs = (client.get(f"{ns}:{kind}:{block}") for ns in (ns_whole, ns_grown))
            assert mine == theirs, (kind, block)
        for block in keys[:2]:  # full: written whole at their size
            used = [client.memory_usage(f"{ns}:{kind}:{block}") for ns in (ns_whole, ns_grown)]
            assert used[0] is not None and used[1] is not None and used[1] <= used[0]
    with Deduper(store=grown + "&keep_text=1") as dd:
        first = str(docs[3]["id"])
        assert dd.remove(first)  # an earlier slot changes: the block is written whole
        dd.check_and_add_many(docs[3:4] + docs[:2])
        entries = dd.store.entries([str(d["id"]) for d in docs])
        assert set(entries) == {str(d["id"]) for d in docs}
        assert dd.stored_text(first) is not None and dd.store.check() == []


def _before_commit(dd: Deduper, monkeypatch: pytest.MonkeyPatch, meanwhile: object) -> list[int]:
    """Run ``meanwhile()`` once, right before ``dd``'s next commit (another writer acting
    between its reads and its write); what each commit returned."""
    store = dd.store
    real = type(store).commit
    applied: list[int] = []

    def commit() -> int:
        if not applied:
            meanwhile()  # type: ignore[operator]
        applied.append(real(store))
        return applied[-1]

    monkeypatch.setattr(store, "commit", commit)
    return applied


def test_a_redis_write_sees_a_document_another_writer_added_to_a_bucket_it_read(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer adds a copy of the story between a batch's reads and its write: the
    write adds nothing, and the batch, decided again, finds that copy."""
    (_, text, _), *_ = corpus(64, 1, 0)
    with Deduper(store=redis_url, explain=False) as a, Deduper(store=redis_url) as b:
        applied = _before_commit(a, monkeypatch, lambda: b.check_and_add("b", "转载：" + text))
        got = a.check_and_add("a", text + "（完）")
        assert applied == [0, 1]
        assert (got.duplicate_of, got.cluster) == ("b", "b")


def test_a_redis_write_sees_that_the_first_of_an_exact_text_went_meanwhile(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No document added meanwhile, but the first document of an exact text deleted: the
    write still checks the exact texts it read, adds nothing, and the batch, decided again,
    keeps the document."""
    (_, text, _), *_ = corpus(65, 1, 0)
    with Deduper(store=redis_url, explain=False) as a, Deduper(store=redis_url) as b:
        a.check_and_add("x", text)
        applied = _before_commit(a, monkeypatch, lambda: b.remove("x"))
        got = a.check_and_add("y", text)
        assert applied == [0, 1]
        assert not got.is_duplicate and "x" not in a
