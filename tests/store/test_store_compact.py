"""Compact stores (the default for a new SQLite file or Redis namespace): what they keep of a
document, copies joining no bucket, the optional text tier, the log of stories folded into
the saved count table, space given back, and stores of the other layout refused with what
to do."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from neardup import ConfigError, Deduper
from neardup import deduper as deduper_module
from neardup.engine import bucket_keys
from neardup.engine.compact import Compact
from neardup.store import VERBATIM, open_store, sqlite_compact

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


def test_the_lookup_table_grows_one_shard_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linear hashing: as records come, shards split one by one, and every record stays
    where a lookup finds it."""
    monkeypatch.setattr(sqlite_compact, "_CAP", 4)
    docs = corpus(66, 30, 0)
    url = f"sqlite:///{tmp_path / 's.db'}"
    with Deduper(store=url, explain=False) as dd:
        for i, t, _ in docs:
            dd.check_and_add(i, t)
        layout = dd.store._layout()  # type: ignore[attr-defined]
        assert layout.count == 64 * 30 and layout.size > 64 * 30 // 8
        for i, t, _ in docs:
            keys = bucket_keys(dd.sketch(t))
            found = dd.store.buckets(keys)
            assert all(i in {m[1] for m in found[k]} for k in keys)
        assert dd.store.check() == []
