"""One contract for every store (memory, SQLite, a real Redis): the same decisions as a batch
run, incremental runs, idempotence, atomic check-and-add under concurrent processes, crash
safety, the time window, deletion and pruning."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from multiprocessing.synchronize import Event
from pathlib import Path

import numpy as np
import pytest

from neardup import ConfigError, Deduper, StoreError, dedup_batch
from neardup import deduper as deduper_module
from neardup.deduper import chrome_of
from neardup.engine import DedupConfig, bucket_keys, text_key
from neardup.store import open_store, parse_window
from neardup.store.sqlite import SQLiteStore
from neardup.store.sqlite_compact import CompactSQLiteStore

from ..engine.test_real_crawls import hub_posts
from ..synth import corpus

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "neardup" / "data" / "sample.jsonl"


def _sample() -> list[dict[str, object]]:
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]


def _persistent(url: str) -> bool:
    return not url.startswith("memory")


def _compact(url: str) -> bool:
    """A compact store: its scores are estimated from sampled codes (close to, not equal
    to, the batch run's), and it keeps no texts unless asked to."""
    return _persistent(url) and "format=full" not in url


def _labels(decisions: list[deduper_module.Decision]) -> list[tuple[str, str | None, str]]:
    return [(d.id, d.duplicate_of, d.cluster) for d in decisions]


def _counts(dd: Deduper) -> dict[str, object]:
    return {k: v for k, v in dd.stats().items() if k not in ("bytes", "redis_used_memory")}


# -- the contract --------------------------------------------------------------------------


def test_batches_in_a_store_decide_as_one_batch_run(store_url: str) -> None:
    docs = _sample()
    ref = dedup_batch([str(d["id"]) for d in docs], [str(d["text"]) for d in docs]).decisions
    with Deduper(store=store_url, explain=False) as dd:
        got = dd.check_and_add_many(docs[:9]) + [
            dd.check_and_add(str(d["id"]), str(d["text"])) for d in docs[9:20]
        ]
        got += dd.check_and_add_many(docs[20:])
        assert _labels(got) == _labels(ref)
        if _compact(store_url):  # estimated from the sampled codes
            assert max(abs(d.score - r.score) for d, r in zip(got, ref, strict=True)) < 0.05
        else:
            assert [round(d.score, 6) for d in got] == [round(d.score, 6) for d in ref]
        stats = dd.stats()
        assert stats["documents"] == len(docs)
        assert stats["kept"] == sum(not d.is_duplicate for d in ref)


def test_a_hub_is_decided_as_the_batch_run_decides_it(store_url: str) -> None:
    """A post of chrome alone, then posts that carry it (tests/engine/test_real_crawls.py):
    one document at a time or all at once, every store says what the batch run says."""
    ids, texts = hub_posts(random.Random(12))
    ref = dedup_batch(ids, texts).decisions
    key = [(d.id, d.duplicate_of, d.extends, d.cluster) for d in ref]
    assert [d.cluster for d in ref] == ["hub", "hub", "p2", "p3"]
    with Deduper(store=store_url, explain=False) as dd:
        one = [dd.check_and_add(i, t) for i, t in zip(ids[:2], texts[:2], strict=True)]
        got = one + dd.check_and_add_many(list(zip(ids[2:], texts[2:], strict=True)))
        assert dd.store.extended(ids) == {"hub"}
        assert (dd.stats()["kept"], len(dd.clusters())) == (4, 3)
    assert [(d.id, d.duplicate_of, d.extends, d.cluster) for d in got] == key


def test_redis_decides_again_when_what_a_document_extends_was_extended_meanwhile(
    redis_url: str,
) -> None:
    """Two writers: one read that nothing extends "hub" yet; before it commits, the other
    adds a document extending it. The first commit adds nothing (its decision is redone)."""
    from neardup.store import Entry, NewEntry

    def extending(doc_id: str) -> NewEntry:
        return NewEntry(Entry(doc_id, 0, 1.0, None, "hub", 0.9, "coverage", extends="hub"), 1, None)

    first, second = open_store(redis_url), open_store(redis_url)
    first.begin()
    assert first.extended(["hub"]) == set()
    second.begin()
    second.put([extending("a")])
    assert second.commit() == 1
    first.put([extending("b")])
    assert first.commit() == 0
    first.begin()
    assert first.extended(["hub", "a"]) == {"hub"}
    first.rollback()
    assert first.delete("hub") is False  # never added itself; its flag stays with its extender
    first.close()
    second.close()


def test_a_batch_another_writer_changes_at_every_try_ends_in_one_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose every commit says another writer changed what the first document was
    decided from: the Deduper tries it again a bounded number of times, then raises a
    StoreError naming the store and the document, instead of deciding it again forever."""
    from neardup.errors import StoreError

    monkeypatch.setattr(deduper_module, "_MOST_TRIES", 5)
    monkeypatch.setattr(deduper_module.time, "sleep", lambda s: None)
    with Deduper(store=f"sqlite:///{tmp_path / 'x.db'}") as dd:
        tries = []

        def never(self: object) -> int:
            tries.append(1)
            type(dd.store).rollback(dd.store)  # type: ignore[arg-type]
            return 0

        monkeypatch.setattr(type(dd.store), "commit", never)
        with pytest.raises(StoreError, match=r"document 'a' was decided 5 times") as raised:
            dd.check_and_add("a", "北京地铁十九号线今天开通运营，全长二十二公里。")
        assert "x.db" in str(raised.value)
        assert len(tries) == 5
        monkeypatch.undo()
        assert (
            dd.check_and_add("a", "北京地铁十九号线今天开通运营，全长二十二公里。").cluster == "a"
        )


def test_a_redis_record_under_a_colliding_key_does_not_make_a_batch_decide_again(
    redis_url: str,
) -> None:
    """A compact namespace's lookup keys are 40 bits of a hash under which short values of
    different kinds fall on the same bits (the id "103" and the document "100" extends;
    the id "101" and the exact text 100). A record found under a key counts in the write's
    checks only if its own fields say it is the one looked for, as they do for the reader:
    before, such a record failed the check at every try, and the Deduper decided the batch
    again and again (two service workers on Redis hung)."""
    from neardup.store import Entry, NewEntry
    from neardup.store.redis_compact import _key

    assert _key("id", "103") == _key("extends", "100")
    assert _key("id", "101") == _key("exact", 100)
    store = open_store(redis_url)
    store.begin()
    store.put([NewEntry(Entry(i, 0, 1.0, None, i, 0.0, None), 7, None) for i in ("101", "103")])
    assert store.commit() == 2
    store.begin()
    assert store.extended(["100"]) == set()
    assert store.exact([100]) == {}
    extending = Entry("b", 0, 1.0, None, "100", 0.9, "coverage", extends="100")
    store.put([NewEntry(extending, 100, None)])
    assert store.commit() == 1
    store.begin()  # and a document that does extend it, or has that text, is still seen
    assert store.extended(["100"]) == {"100"}
    assert store.exact([100]) == {100: "b"}
    store.put(
        [NewEntry(Entry("c", 0, 1.0, None, "100", 0.9, "coverage", extends="100"), 100, None)]
    )
    store.rollback()
    store.close()


def test_incremental_runs_agree_with_one_run(persistent_url: str) -> None:
    store_url = persistent_url
    docs = corpus(7, 30, 3, cut=False)
    ids, texts = [d[0] for d in docs], [d[1] for d in docs]
    ref = dedup_batch(ids, texts).decisions
    got = []
    for part in (docs[:40], docs[40:41], docs[41:]):
        with Deduper(store=store_url, explain=False) as dd:
            got += dd.check_and_add_many([(i, t) for i, t, _ in part])
    assert _labels(got) == _labels(ref)
    kept = [d for d in got if not d.is_duplicate]
    assert len(kept) == 30


def test_an_id_already_stored_returns_its_decision_and_changes_nothing(store_url: str) -> None:
    docs = _sample()
    with Deduper(store=store_url) as dd:
        first = dd.check_and_add_many(docs)
        before = _counts(dd)
        again = dd.check_and_add_many([(str(d["id"]), "something else entirely") for d in docs])
        assert _labels(again) == _labels(first)
        assert [d.score for d in again] == [d.score for d in first]
        assert _counts(dd) == before
        dup = next(d for d in first if d.is_duplicate and d.measure == "coverage")
        assert dd.decision(dup.id).evidence  # the evidence is recomputed from the store
    if _persistent(store_url):
        with Deduper(store=store_url) as dd:
            assert _labels(dd.check_and_add_many(docs)) == _labels(first)


def test_check_does_not_add(store_url: str) -> None:
    docs = corpus(3, 2, 1)
    by_story = {s: (i, t) for i, t, s in docs if i.endswith("-0")}
    with Deduper(store=store_url) as dd:
        dd.check_and_add(*by_story[0])
        copy = next((i, t) for i, t, s in docs if s == 0 and not i.endswith("-0"))
        checked = dd.check(*copy)
        assert checked.is_duplicate and checked.duplicate_of == by_story[0][0]
        assert copy[0] not in dd and len(dd) == 1
        assert dd.check(*by_story[1]).is_duplicate is False
        assert len(dd) == 1


def test_one_lookup_reads_what_the_three_reads_read(store_url: str) -> None:
    """``Store.lookup`` (one round trip on a compact Redis) gives what ``entries``, ``exact``
    and ``buckets`` give, outside a section and inside a write section, for stored and
    unknown ids, texts and buckets alike."""
    docs = _sample()
    with Deduper(store=store_url, explain=False) as dd:
        dd.check_and_add_many(docs[:30])
        store = dd.store
        ids = [str(d["id"]) for d in docs[20:40]] + ["no-such-id"]
        keys = [text_key(str(d["text"])) for d in docs[20:40]] + [12345]
        bands = [bk for d in docs[25:35] for bk in bucket_keys(dd.sketch(str(d["text"])))]
        separate = (store.entries(ids), store.exact(keys), store.buckets(bands))
        assert separate[0] and separate[1] and separate[2]  # the test reads something
        assert store.lookup(ids, keys, bands) == separate
        assert store.lookup(ids, (), ()) == (separate[0], {}, {})
        for write in (False, True):
            for expected in (None, (ids, keys, bands), (ids[:3], keys, [])):
                store.begin(write=write)
                try:
                    if expected is not None:  # said first, read with the log
                        store.expect(*expected)
                        store.log_stories(0, 10_000)
                    assert store.lookup(ids, keys, bands) == separate
                    assert store.lookup(ids, keys, bands) == separate  # and again
                finally:
                    store.rollback()


def test_a_compact_redis_section_reads_its_lookup_with_the_log(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A section's lookup said first (``expect``) is read with the log's first page: the
    lookup then asks Redis nothing; one that asks something else reads afresh."""
    docs = _sample()
    with Deduper(store=redis_url, explain=False) as dd:
        dd.check_and_add_many(docs[:30])
        store = dd.store
        ids = [str(d["id"]) for d in docs[20:40]]
        keys = [text_key(str(d["text"])) for d in docs[20:40]]
        bands = [bk for d in docs[25:35] for bk in bucket_keys(dd.sketch(str(d["text"])))]
        calls: list[object] = []
        call = store._call
        monkeypatch.setattr(store, "_call", lambda fn, *a: calls.append(fn) or call(fn, *a))
        for asked, reads in (((ids, keys, bands), 1), ((ids, keys, bands[1:]), 2)):
            store.begin()
            store.expect(*asked)
            store.log_stories(0, 10_000)
            store.lookup(ids, keys, bands)
            store.rollback()
            assert len(calls) == reads
            calls.clear()
        store.begin()  # a log of several pages: the lookup comes with the first
        store.expect(ids, keys, bands)
        assert store.log_stories(0, 2).position == 2
        assert store.log_stories(2, 10_000).done
        separate = (store.entries(ids), store.exact(keys), store.buckets(bands))
        calls.clear()
        assert store.lookup(ids, keys, bands) == separate
        store.rollback()
        assert calls == []


def test_a_compact_redis_section_reads_the_texts_of_what_it_finds_with_it(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that keeps texts (a Deduper that explains) reads the texts of the documents a
    section's lookup finds with them: their sketches then come with no round trip of their
    own, and the texts are those read outside a section."""
    docs = _sample()
    with Deduper(store=redis_url) as dd:
        dd.check_and_add_many(docs[:30])
        store = dd.store
        ids = [str(d["id"]) for d in docs[:30]]
        outside = store.sketches(ids)
        assert all(sk.text for sk in outside.values())
        calls: list[object] = []
        call = store._call
        monkeypatch.setattr(store, "_call", lambda fn, *a: calls.append(fn) or call(fn, *a))
        store.begin()
        store.lookup(ids, [], [])
        inside = store.sketches(ids)
        store.rollback()
        assert len(calls) == 1 and inside == outside
        assert [sk.text for sk in inside.values()] == [sk.text for sk in outside.values()]


def test_a_compact_redis_store_reads_when_its_table_is_due_with_the_log(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log's last page brings whether the saved table is due, so ``snapshot_due`` at
    that position asks Redis nothing, and answers as a read of its own would."""
    docs = _sample()
    with Deduper(store=redis_url, explain=False) as dd:
        dd.check_and_add_many(docs)
        store = dd.store
        calls: list[object] = []
        call = store._call
        monkeypatch.setattr(store, "_call", lambda fn, *a: calls.append(fn) or call(fn, *a))
        for logged in (10**9, 0):  # the log's bytes: far past the bound, none
            store._r.set(store._k("logbytes"), logged)
            alone = store.snapshot_due(0, 0)  # no page read before: a read of its own
            assert alone is (logged > 0) and len(calls) == 1
            page = store.log_stories(0, 10_000)
            assert page.done and page.position > 0 and len(calls) == 2
            assert store.snapshot_due(page.position, 0) is alone and len(calls) == 2
            store.log_stories(0, 10_000)
            assert store.snapshot_due(page.position - 1, 0) is alone  # another position
            assert len(calls) == 4
            calls.clear()


def test_exact_copies_title_and_timestamp_are_kept(store_url: str) -> None:
    text = corpus(4, 1, 0)[0][1]
    with Deduper(store=store_url) as dd:
        dd.check_and_add("a", text, title="标题", timestamp=1_700_000_000.0)
        d = dd.check_and_add("b", text)
        assert (d.duplicate_of, d.measure, d.score) == ("a", "identical", 1.0)
        entry = dd.entry("a")
        assert entry is not None and entry.title == "标题"
        assert entry.timestamp == 1_700_000_000.0
        assert dd.stored_text("b") == dd.stored_text("a") != ""
        assert dd.clusters() == [("a", 2)]
        assert [m.id for m in dd.cluster("a")] == ["a", "b"]


def test_delete_forgets_a_document(store_url: str) -> None:
    docs = corpus(5, 1, 2)
    with Deduper(store=store_url, explain=False) as dd:
        decisions = dd.check_and_add_many([(i, t) for i, t, _ in docs])
        kept = next(d.id for d in decisions if not d.is_duplicate)
        assert dd.remove(kept) and not dd.remove(kept)
        assert kept not in dd
        assert len(dd) == 2
        assert dd.stats()["kept"] == sum(not d.is_duplicate for d in decisions) - 1
        for d in decisions:
            if d.id != kept:
                assert dd.remove(d.id)
        assert len(dd) == 0
        assert dd.stats()["kept"] == 0
        # nothing is left to match: the story is new again
        assert dd.check_and_add("again", docs[0][1]).is_duplicate is False


def test_the_window_compares_only_recent_documents(store_url: str) -> None:
    docs = corpus(6, 1, 3)
    day = 86_400.0
    (i0, t0, _), (i1, t1, _), (i2, t2, _), (i3, t3, _) = docs
    with Deduper(store=store_url, window="30d", explain=False) as dd:
        assert not dd.check_and_add(i0, t0, timestamp=1_000 * day).is_duplicate
        # 10 days later: inside the window
        assert dd.check_and_add(i1, t1, timestamp=1_010 * day).duplicate_of == i0
        # 100 days later: only compared with documents of the last 30 days: none
        late = dd.check_and_add(i2, t2, timestamp=1_110 * day)
        assert not late.is_duplicate
        # an exact copy of an old text outside the window is not a copy either
        assert not dd.check_and_add("copy", t0, timestamp=1_200 * day).is_duplicate
        assert dd.check_and_add(i3, t3, timestamp=1_111 * day).duplicate_of == i2
        assert dd.prune(before=1_100 * day) == 2
        assert i0 not in dd and i1 not in dd and i2 in dd


def test_redis_keys_expire_after_the_window(redis_url: str) -> None:
    """On Redis a window is also a TTL: an old document's keys go by themselves."""
    (i0, t0, _), (i1, t1, _) = corpus(23, 1, 1)
    with Deduper(store=redis_url, window=1, explain=False) as dd:
        assert not dd.check_and_add(i0, t0).is_duplicate
        assert i0 in dd
        time.sleep(2.5)
        assert i0 not in dd
        assert dd.stats()["documents"] == 0 and dd.clusters() == []
        assert dd.stats()["kept"] == 0
        assert not dd.check_and_add(i1, t1).is_duplicate
        assert dd.stats()["kept"] == 1


def test_a_store_refuses_other_sketch_settings(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    Deduper(store=url).close()
    Deduper(DedupConfig(threshold=0.8), store=url).close()  # thresholds may change
    with pytest.raises(ConfigError, match="other sketch settings"):
        Deduper(DedupConfig(num_perm=64), store=url)


def test_the_common_shingle_table_is_saved_and_replayed(
    persistent_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new process loads the saved table and replays the rest of the log: it decides as
    the process that built the table would."""
    store_url = persistent_url
    monkeypatch.setattr(deduper_module, "_SNAPSHOT_EVERY", 7)
    monkeypatch.setattr(deduper_module, "_LOG_PAGE", 3)
    docs = _sample()
    ref = dedup_batch([str(d["id"]) for d in docs], [str(d["text"]) for d in docs]).decisions
    got = []
    for lo, hi in ((0, 25), (25, 40), (40, len(docs))):
        with Deduper(store=store_url, explain=False) as dd:
            got += dd.check_and_add_many(docs[lo:hi])
    assert _labels(got) == _labels(ref)
    saved = open_store(store_url).load_common()
    assert saved is not None and saved[0] > 0


#: A template guard that turns every 1,000 counts: a dozen turns in the corpus below.
TURNING = DedupConfig(common_after=2, chrome_window=1000 / (1 << 26))


def test_a_guard_with_a_window_turns_at_the_same_story_in_every_process(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes taking turns on one store, saving and reading the table often, with
    checks that count stories and take them back across a turn: the decisions and the
    table's load are the batch run's."""
    monkeypatch.setattr(deduper_module, "_SNAPSHOT_EVERY", 7)
    monkeypatch.setattr(deduper_module, "_LOG_PAGE", 3)
    docs = [(i, t) for i, t, _ in corpus(7, 30, 3, cut=False)]
    ids, texts = [d[0] for d in docs], [d[1] for d in docs]
    ref = dedup_batch(ids, texts, config=TURNING)
    with Deduper(TURNING, store=store_url, explain=False) as first:
        second = (
            Deduper(TURNING, store=store_url, explain=False) if _persistent(store_url) else first
        )
        got = []
        for k, lo in enumerate(range(0, len(docs), 9)):
            dd = (first, second)[k % 2]
            dd.check_many(docs[lo:])  # counts every story to the end, then takes them back
            got += dd.check_and_add_many(docs[lo : lo + 9])
        assert first.chrome().turns > 5
        for dd in (first, second):
            dd.check_many(docs[:1])  # brought up to date with the log
            assert dd.chrome_load() == pytest.approx(ref.chrome_load, abs=1e-12)
        if second is not first:
            second.close()
    assert _labels(got) == _labels(ref.decisions)
    if store_url.startswith("sqlite") and _compact(store_url):  # folds its log into the table
        store = open_store(store_url)
        store.reclaim()
        store.close()
    if _persistent(store_url):  # a process started later reads the table and the log
        with Deduper(TURNING, store=store_url, explain=False) as late:
            late.check_many(docs[:1])
            assert late.chrome_load() == pytest.approx(ref.chrome_load, abs=1e-12)
            turns = late.chrome().turns
        with open_store(store_url, readonly=True) as store:  # what `store stats` shows
            read = chrome_of(store)
        assert read.window == TURNING.chrome_window and read.turns == turns
        assert read.load_factor() == pytest.approx(ref.chrome_load, abs=1e-12)


def test_store_stats_shows_the_chrome_load(tmp_path: Path) -> None:
    """`neardup store stats` reads the chrome guard's table and log without writing: its
    load is the batch run's, and the window it turns at when it has one."""
    docs = [(i, t) for i, t, _ in corpus(5, 20, 2, cut=False)]
    for cfg, name in ((DedupConfig(), "plain"), (TURNING, "turning")):
        path = tmp_path / f"{name}.db"
        with Deduper(cfg, store=f"sqlite:///{path}", explain=False) as dd:
            dd.check_and_add_many(docs)
        ref = dedup_batch([d[0] for d in docs], [d[1] for d in docs], config=cfg)
        before = path.stat().st_mtime_ns
        stats = json.loads(_cli("store", "stats", "--db", str(path), "--json").stdout)
        assert stats["chrome_load"] == float(f"{ref.chrome_load:.6g}") > 0
        assert stats.get("chrome_window") == (cfg.chrome_window or None)
        assert path.stat().st_mtime_ns == before


def test_bad_store_urls_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown store URL"):
        Deduper(store="postgres://x")
    with pytest.raises(ConfigError, match="does not exist"):
        Deduper(store=f"sqlite:///{tmp_path / 'no' / 'such' / 'x.db'}")
    with pytest.raises(ConfigError, match="window"):
        parse_window("-3d")


def test_an_unreachable_redis_is_a_clear_error_without_its_password() -> None:
    pytest.importorskip(
        "redis", reason="the Redis store needs redis-py: pip install 'neardup[redis]'"
    )
    with pytest.raises(ConfigError, match="cannot reach Redis") as failed:
        Deduper(store="redis://user:s3cret@127.0.0.1:1/0")
    assert "s3cret" not in str(failed.value) and "user:***@" in str(failed.value)


# -- many processes at once ----------------------------------------------------------------


def _feeder(url: str, docs: list[tuple[str, str]], start: object, batch: int) -> None:
    with Deduper(store=url, explain=False) as dd:
        start.wait()  # type: ignore[attr-defined]
        for i in range(0, len(docs), batch):
            dd.check_and_add_many(docs[i : i + batch])


def _race(url: str, processes: int, batch: int) -> None:
    """Each process gets different copies of the same stories, at the same moment."""
    docs = corpus(11, 12, processes * 3, cut=False)
    story_of = {i: s for i, _, s in docs}
    shares: list[list[tuple[str, str]]] = [[] for _ in range(processes)]
    for n, (i, t, _) in enumerate(docs):
        shares[n % processes].append((i, t))
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(processes)
    workers = [ctx.Process(target=_feeder, args=(url, s, start, batch)) for s in shares]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
        assert w.exitcode == 0
    with Deduper(store=url, explain=False) as dd:
        assert len(dd) == len(docs)
        every = [dd.decision(i) for i, _, _ in docs]
    kept = Counter(story_of[d.id] for d in every if not d.is_duplicate)
    assert kept == Counter(range(12)), "a story was kept twice"
    for d in every:  # every copy points at its own story's kept document
        assert story_of[d.cluster] == story_of[d.id]


def _opener(path: str, start: object) -> None:
    start.wait()  # type: ignore[attr-defined]
    Deduper(store=f"sqlite:///{path}").close()


def test_processes_opening_a_new_sqlite_file_at_once_all_succeed(tmp_path: Path) -> None:
    """A new file's first opening races for WAL mode and the tables; nobody may fail."""
    ctx = multiprocessing.get_context("fork")
    for n in range(5):
        start = ctx.Barrier(4)
        path = str(tmp_path / f"new{n}.db")
        workers = [ctx.Process(target=_opener, args=(path, start)) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=120)
            assert w.exitcode == 0


@pytest.mark.parametrize("batch", [1, 5])
def test_concurrent_processes_on_sqlite_keep_each_story_once(tmp_path: Path, batch: int) -> None:
    _race(f"sqlite:///{tmp_path / 'race.db'}", 4, batch)


@pytest.mark.parametrize("batch", [1, 5])
def test_concurrent_processes_on_redis_keep_each_story_once(redis_url: str, batch: int) -> None:
    _race(redis_url, 4, batch)


def _holder(path: str, held: Event, go: Event) -> None:
    """Hold the file's write lock (an immediate transaction) until ``go`` is set."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT OR REPLACE INTO meta VALUES ('held', 1)")
    held.set()
    go.wait(60)
    db.execute("COMMIT")
    db.close()


@contextlib.contextmanager
def _held(path: str) -> Iterator[Event]:
    """Another process holds ``path``'s write lock inside the block, until the event given
    is set (or the block ends)."""
    ctx = multiprocessing.get_context("fork")
    held, go = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_holder, args=(path, held, go))
    other.start()
    try:
        assert held.wait(60)
        yield go
    finally:
        go.set()
        other.join(60)
    assert other.exitcode == 0


def _set_later(go: Event, seconds: float) -> None:
    time.sleep(seconds)
    go.set()


@pytest.mark.parametrize("kind", [SQLiteStore, CompactSQLiteStore])
def test_a_write_section_waits_for_another_process_and_then_takes_the_file(
    tmp_path: Path, kind: type[SQLiteStore]
) -> None:
    """While another process writes, a section waits (trying again, not failing); once the
    other commits it begins, sees what the other wrote, and the file's busy timeout is the
    store's again."""
    path = str(tmp_path / "held.db")
    store = kind(path)
    try:
        with _held(path) as go:
            started = time.monotonic()
            threading.Thread(target=_set_later, args=(go, 0.3)).start()
            store.begin()
            waited = time.monotonic() - started
            assert store._db.execute("SELECT value FROM meta WHERE key = 'held'").fetchone() == (1,)
            assert store._db.execute("PRAGMA busy_timeout").fetchone() == (600_000,)
            store.rollback()
        assert waited >= 0.25, "the section began while the other process held the file"
    finally:
        store.close()


def test_a_file_held_past_the_timeout_is_one_store_error_and_the_store_goes_on(
    tmp_path: Path,
) -> None:
    """A section that cannot begin within the store's timeout raises SQLite's "locked" as
    the one-line StoreError, leaves no transaction open and the busy timeout as it was; the
    same store begins once the file is free. A write outside a batch's section (the
    settings' check) waits and fails the same way."""
    path = str(tmp_path / "held.db")
    store = CompactSQLiteStore(path, timeout=0.2)
    try:
        with _held(path):
            with pytest.raises(StoreError, match="longer than the timeout") as raised:
                store.begin()
            assert "database is locked" in str(raised.value)
            assert not store._db.in_transaction
            assert store._db.execute("PRAGMA busy_timeout").fetchone() == (200,)
        store.begin()
        store.rollback()
        with _held(path), pytest.raises(StoreError, match="longer than the timeout"):
            store.check_config({"k": 1})
        store.check_config({"k": 1})
    finally:
        store.close()


# -- crashes ---------------------------------------------------------------------------------


def _write_corpus(path: Path, docs: list[tuple[str, str, int]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i, t, _ in docs:
            f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")


def _dedup(*args: str) -> list[str]:
    return [sys.executable, "-m", "neardup", "dedup", *args, "-q"]


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=30) as con:
            return int(con.execute("SELECT count(*) FROM docs").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_kill_9_then_the_same_command_gives_the_uninterrupted_output(tmp_path: Path) -> None:
    docs = corpus(13, 150, 3, cut=False)
    src = tmp_path / "crawl.jsonl"
    _write_corpus(src, docs)
    # the uninterrupted run
    ref = tmp_path / "ref"
    ref.mkdir()
    subprocess.run(
        _dedup(str(src), "--db", str(ref / "s.db"), "-o", str(ref / "u.jsonl"),
               "--clusters", str(ref / "c.jsonl"), "--batch-size", "8"),
        check=True,
    )  # fmt: skip
    # killed in the middle, then run again
    run = tmp_path / "run"
    run.mkdir()
    db = run / "s.db"
    cmd = _dedup(str(src), "--db", str(db), "-o", str(run / "u.jsonl"),
                 "--clusters", str(run / "c.jsonl"), "--batch-size", "8")  # fmt: skip
    proc = subprocess.Popen(cmd)
    deadline = time.monotonic() + 120
    while _count(db) < 100 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    killed = proc.poll() is None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert killed, "the run finished before it could be killed"
    stored = _count(db)
    assert 0 < stored < len(docs)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    subprocess.run(cmd, check=True)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    for name in ("u.jsonl", "c.jsonl"):
        assert (run / name).read_text() == (ref / name).read_text()
    story_of = {i: s for i, _, s in docs}
    kept = [json.loads(line)["id"] for line in (run / "u.jsonl").read_text().splitlines()]
    assert sorted(story_of[i] for i in kept) == list(range(150))


# -- the command line ------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup", *args], capture_output=True, text=True, check=False
    )


def _decided(lines: str) -> list[tuple[object, ...]]:
    """What a CLUSTERS file decided, scores aside."""
    rows = [json.loads(line) for line in lines.splitlines()]
    return [(r["id"], r["cluster"], r["duplicate_of"], r["extends"]) for r in rows]


def test_cli_incremental_runs_on_a_db(tmp_path: Path) -> None:
    docs = corpus(17, 20, 2, cut=False)
    whole, first, second = tmp_path / "all.jsonl", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _write_corpus(whole, docs)
    _write_corpus(first, docs[:25])
    _write_corpus(second, docs[25:])
    r = _cli("dedup", str(whole), "-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c"))
    assert r.returncode == 0
    one_run = (tmp_path / "c").read_text()
    full = tmp_path / "full.db"
    db = tmp_path / "crawl.db"
    for where in (("--store", f"sqlite:///{full}?format=full"), ("--db", str(db))):
        out = []
        for part in (first, second):
            c = tmp_path / f"{part.stem}.clusters.jsonl"
            r = _cli("dedup", str(part), *where, "-o", str(tmp_path / "u"), "--clusters", str(c))
            assert r.returncode == 0, r.stderr
            assert "compared with, and added to, the store" in r.stderr
            out.append(c.read_text())
        if where[0] == "--store":  # whole sketches: the one run's output, byte for byte
            assert "".join(out) == one_run
        else:  # compact: the same decisions, scores estimated
            assert _decided("".join(out)) == _decided(one_run)

    r = _cli("store", "stats", "--db", str(db), "--json")
    assert r.returncode == 0
    stats = json.loads(r.stdout)
    assert (stats["documents"], stats["kept"]) == (60, 20)
    r = _cli("store", "delete", "--db", str(db), docs[0][0], "nope")
    assert r.returncode == 1 and "deleted 1 document\n" in r.stdout and "nope" in r.stderr
    r = _cli("store", "prune", "--db", str(db), "--window", "1d")
    assert r.returncode == 0 and "pruned 0 documents" in r.stdout
    r = _cli("store", "prune", "--db", str(db), "--before", "2999-01-01")
    assert r.returncode == 0 and "pruned 59 documents" in r.stdout


def test_cli_store_mistakes_are_clear(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    _write_corpus(src, corpus(1, 1, 1))
    out = ["-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c")]
    r = _cli("dedup", str(src), *out, "--db", str(tmp_path / "x.db"), "--keep", "longest")
    assert r.returncode == 2 and "keeps the first copy" in r.stderr
    r = _cli("dedup", str(src), *out, "--store", "mysql://x")
    assert r.returncode == 2 and "unknown store URL" in r.stderr
    r = _cli("dedup", str(src), *out, "--window", "soon")
    assert r.returncode == 2 and "window" in r.stderr
    r = _cli("store", "stats", "--db", str(tmp_path / "none.db"))
    assert r.returncode == 2 and "no store at" in r.stderr
    r = _cli("store", "prune", "--db", str(tmp_path / "x.db"))
    assert r.returncode == 2


def test_cli_window_on_a_redis_store(redis_url: str, tmp_path: Path) -> None:
    docs = corpus(19, 3, 1)
    src = tmp_path / "a.jsonl"
    with src.open("w", encoding="utf-8") as f:
        for n, (i, t, _) in enumerate(docs):
            day = 1 + 40 * n  # each record 40 days after the one before
            f.write(json.dumps({"id": i, "text": t, "timestamp": "2024-01-01T00:00:00Z"})
                    .replace("2024-01-01", f"2024-{1 + day // 28:02d}-{1 + day % 28:02d}") + "\n")  # fmt: skip
    c = tmp_path / "c.jsonl"
    r = _cli("dedup", str(src), "--store", redis_url, "--window", "30d",
             "-o", str(tmp_path / "u"), "--clusters", str(c))  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in c.read_text().splitlines()]
    assert all(line["duplicate_of"] is None for line in lines)  # all 40 days apart


# -- stores written by earlier versions ------------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: the documents tests/fixtures/make_v1_stores.py put into the v1 stores
V1_DOCS = corpus(21, 6, 2, cut=False)


def _check_v1_store(url: str) -> None:
    """A store written by neardup 0.1.0 opens: its decisions read back, and new documents
    are decided against it (a copy of a stored story is a copy of it)."""
    with Deduper(store=url, explain=False) as dd:
        assert len(dd) == len(V1_DOCS)
        stored = {i: dd.decision(i) for i, _, _ in V1_DOCS}
        assert sum(not d.is_duplicate for d in stored.values()) == 6
        assert all(d.extends is None for d in stored.values())
        first = next(i for i, _, s in V1_DOCS if s == 3 and not stored[i].is_duplicate)
        text = dict((i, t) for i, t, _ in V1_DOCS)[first]
        d = dd.check_and_add("new-copy", "转载：" + text)
        assert d.is_duplicate and d.cluster == stored[first].cluster
        fresh = dd.check_and_add(
            "new-story", "".join(chr(0x4E00 + k * 7 % 20000) for k in range(300))
        )
        assert not fresh.is_duplicate


def test_a_sqlite_store_of_the_first_version_opens(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    path.write_bytes((FIXTURES / "store-v1.db").read_bytes())
    _check_v1_store(f"sqlite:///{path}")
    with sqlite3.connect(path) as con:  # upgraded in place: the new columns are there
        names = {row[1] for row in con.execute("PRAGMA table_info(docs)")}
        assert {"extends", "story"} <= names
        indexes = {row[1] for row in con.execute("PRAGMA index_list(docs)")}
        assert "docs_extends" in indexes
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_stats_and_check_read_a_first_version_sqlite_store_as_it_is(tmp_path: Path) -> None:
    """``store stats`` and ``store check`` open a store read-only, so a file of the first
    version is not upgraded: its chrome load is read all the same (its kept documents are its
    stories), the same as once it is upgraded."""
    import subprocess
    import sys

    path = tmp_path / "store.db"
    path.write_bytes((FIXTURES / "store-v1.db").read_bytes())

    def stats() -> dict[str, object]:
        r = subprocess.run(
            [sys.executable, "-m", "neardup", "store", "stats", "--db", str(path), "--json"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        found: dict[str, object] = json.loads(r.stdout)
        return found

    before = stats()
    with sqlite3.connect(path) as con:
        assert "story" not in {row[1] for row in con.execute("PRAGMA table_info(docs)")}
    r = subprocess.run(
        [sys.executable, "-m", "neardup", "store", "check", "--db", str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert r.returncode == 0 and "ok (18 documents checked)" in r.stdout, r.stdout + r.stderr
    open_store(f"sqlite:///{path}").close()  # upgraded
    after = stats()
    assert isinstance(before["chrome_load"], float) and before["chrome_load"] > 0
    assert before["chrome_load"] == after["chrome_load"]


def test_a_redis_store_of_the_first_version_opens(tmp_path: Path) -> None:
    from ..conftest import start_redis_server

    (tmp_path / "dump.rdb").write_bytes((FIXTURES / "store-v1.rdb").read_bytes())
    proc, url = start_redis_server(tmp_path, dbfilename="dump.rdb")
    try:
        _check_v1_store(url + "?namespace=v1")
    finally:
        proc.kill()
        proc.wait()


def _twin(url: str) -> str:
    """A second store of the same kind and layout beside the store at ``url``."""
    if url.startswith("sqlite"):
        return url.replace("store.db", "twin.db")
    return re.sub(r"namespace=(\w+)", r"namespace=\1twin", url)


def test_warm_reads_the_chrome_first_and_changes_no_decision(
    persistent_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Deduper.warm` (what `neardup serve` does as it starts) reads the chrome the store
    has learned — its saved table and the log after it — and gives the count table its
    memory: the documents added next read no table again, and are decided as a Deduper not
    warmed decides them."""
    docs = [(i, t) for i, t, _ in corpus(83, 30, 2)]
    urls = persistent_url, _twin(persistent_url)
    for url in urls:  # two stores of the same documents
        with Deduper(store=url, explain=False) as dd:
            dd.check_and_add_many(docs[:60])
    with (
        Deduper(store=urls[0], explain=False) as cold,
        Deduper(store=urls[1], explain=False) as warm,
    ):
        warm.warm()
        loads: list[object] = []
        load_common = warm.store.load_common

        def counted() -> object:
            loads.append(1)
            return load_common()

        monkeypatch.setattr(warm.store, "load_common", counted)
        assert warm.check_and_add_many(docs[60:]) == cold.check_and_add_many(docs[60:])
        assert loads == []  # read by warm(), not again
        assert np.array_equal(warm.chrome().counts, cold.chrome().counts)
