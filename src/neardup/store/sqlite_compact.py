"""The compact SQLite store: what decisions need, in about a kilobyte a document.

The file and its guarantees are the SQLite store's (:mod:`neardup.store.sqlite`: WAL,
``synchronous=FULL``, one immediate transaction a batch); what it holds is compact:

- ``docs``: a row a document — its id, decision, title, the hash of its exact text, and,
  for a document that is not dropped as a copy, its compact sketch
  (:mod:`neardup.engine.compact`: sampled shingle codes and figures, about half a byte a
  shingle). A document dropped as a copy keeps its row alone: it joins no bucket, so no
  later document is verified against it (they find the documents of its story that were
  kept).
- ``lsh``: the LSH buckets packed in shards of 8-byte records (:mod:`._packed`).
- ``lsh_log``: the records of the batches since the last fold, a row a batch, in the order
  they came. A batch appends its 64 records a document there — written once, together —
  instead of rewriting the 64 shards they belong to: rewriting them wrote a page of the
  file for each record, about 250 KiB a document once the table outgrew a batch's records.
  Once the log holds a quarter of the records the shards hold (at most 2^21), the batches
  that follow fold it into the shards a slice of the table at a time, and the last one
  deletes the rows folded. Each process keeps the log's records in memory (read once, row
  by row as they come), so a lookup reads the shards and that copy.
- ``log``: the template-guard slots of each story since the last saved count table, so that
  other processes count them without a sketch; saving the table (``meta``) empties it.
- ``texts`` (``?keep_text=1``): the prepared texts, compressed, for people — the page's
  texts and the passages two documents share. Decisions never read them.

A file written before compact stores (``format=full``, :class:`~neardup.store.sqlite.
SQLiteStore`) opens as it was; ``sqlite:///crawl.db?format=full`` makes a new one.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..engine.compact import (
    decode,
    decode_slots,
    encode_guard,
    guard_window,
    load_guard,
)
from ..engine.templates import CommonShingles
from ..errors import ConfigError, StoreError
from ..hashing import signed64
from ..index.lsh import _ranges
from ..shingling import distinct
from . import LOG_BYTES, LOG_SHARE, NO_SLOTS, BandKey, Entry, LogPage, NewEntry, Stored
from ._packed import (
    LEVEL,
    LOG_RECORD,
    RECORD,
    Layout,
    keys40,
    pack,
    pack_log,
    sized,
    split,
    unpack,
    unpack_log,
)
from .sqlite import SQLiteStore, _db, _guarded, _ids, _py

__all__ = ["CompactSQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
CREATE TABLE IF NOT EXISTS docs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    ts REAL NOT NULL,
    duplicate_of TEXT,
    cluster TEXT,
    score REAL NOT NULL,
    measure,
    title TEXT,
    copy_of TEXT,
    extends TEXT,
    text_key INTEGER NOT NULL,
    kept INTEGER NOT NULL,
    story INTEGER NOT NULL,
    sketch BLOB
);
CREATE UNIQUE INDEX IF NOT EXISTS docs_id ON docs (id);
CREATE INDEX IF NOT EXISTS docs_cluster ON docs (cluster) WHERE cluster IS NOT NULL;
CREATE INDEX IF NOT EXISTS docs_ts ON docs (ts);
CREATE INDEX IF NOT EXISTS docs_extends ON docs (extends) WHERE extends IS NOT NULL AND kept = 1;
CREATE TABLE IF NOT EXISTS exact (text_key INTEGER PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS lsh (shard INTEGER PRIMARY KEY, records BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS lsh_log (pos INTEGER PRIMARY KEY AUTOINCREMENT, records BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS log (
    pos INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, slots BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS texts (seq INTEGER PRIMARY KEY, text BLOB NOT NULL);
"""

#: measures stored as small integers (a name not here is stored as it is)
_MEASURES = {"coverage": 1, "identical": 2, "lcsubstr": 3, "levenshtein": 4}
_MEASURE_NAMES = {v: k for k, v in _MEASURES.items()}
#: the columns an Entry is read from (a NULL cluster is the document's own id)
_ENTRY = "id, seq, ts, duplicate_of, coalesce(cluster, id), score, measure, title, copy_of, extends"
#: records a shard (a row) holds on average: a small part of a 4 KB page, so that a row
#: that grows seldom splits its page
_CAP = 32
#: the records of ``lsh_log`` are folded into the shards once they are this share of the
#: records the shards hold (so the table is rewritten once for each quarter it grows) ...
_FOLD_SHARE = 4
#: ... or this many (what a process keeps of the log in memory: about 16 bytes a record),
#: and never fewer than this many
_FOLD_MAX = 1 << 21
_FOLD_MIN = 1 << 15
#: records of the shards a batch rewrites while a fold goes on, at most (the fold takes at
#: least _FOLD_STEPS batches)
_FOLD_SLICE = 1 << 21
_FOLD_STEPS = 8
#: shards split a batch at least, after a fold (the rest of what the fold's records ask for
#: is spread over _FOLD_STEPS batches; no fold starts before the table has grown)
_SPLITS = 64


def _measure(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return str(_py(value))
    return _MEASURE_NAMES.get(int(value), str(value))


def _entry(row: Sequence[Any]) -> Entry:
    return Entry(
        _py(row[0]), row[1], row[2], _py(row[3]), _py(row[4]), row[5], _measure(row[6]),
        _py(row[7]), _py(row[8]), _py(row[9]),
    )  # fmt: skip


def _text(blob: bytes) -> str:
    return zlib.decompress(blob).decode("utf-8", "surrogatepass")


class CompactSQLiteStore(SQLiteStore):
    """A compact :class:`~neardup.store.Store` in one SQLite file (see the module)."""

    schema = _SCHEMA
    layout = "compact"
    indexes_copies = False
    folds_log = True
    page_size = 4096

    def __init__(
        self, path: str, *, timeout: float = 600.0, readonly: bool = False, keep_text: bool = False
    ) -> None:
        self.keep_text = keep_text
        self._records: list[tuple[list[int], int]] = []  # (bucket keys, seq) of a batch
        self._log = _Log()  # this process's copy of the rows of lsh_log not folded yet
        self._has_log = False  # whether the file has lsh_log (one of an earlier version may not)
        #: the log's floor when this process last summed its bytes, the last row summed, and
        #: the bytes of the stories' slots up to it (see :meth:`_log_bytes`)
        self._logged = (-1, 0, 0)
        super().__init__(path, timeout=timeout, readonly=readonly)
        if not readonly:
            self.keep_text = self._keeps_text()

    # -- the file -------------------------------------------------------------------------

    def _upgrade(self) -> None:
        """Say the file is compact (a new one), or refuse one of another layout."""
        with self._write():
            row = self._db.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()
            if row is None:
                full = self._db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'buckets'"
                ).fetchone()
                if full is None:
                    self._db.execute("INSERT INTO meta VALUES ('layout', 'compact')")
                    row = ("compact",)
        if row is None or row[0] != "compact":
            raise ConfigError(
                f"store {self.url} is not a compact store: open it without format=compact"
            )

    def _keeps_text(self) -> bool:
        """Whether the file keeps texts: it says so, or this store was asked to (from now on)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'keep_text'").fetchone()
        if self.keep_text and row is None:
            with self._write():
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('keep_text', '1')")
            return True
        return self.keep_text or row is not None

    def _layout(self) -> Layout:
        raw = self._meta("lsh")
        return Layout(*json.loads(raw)) if raw is not None else Layout(LEVEL, 0, 0, _CAP)

    # -- writing --------------------------------------------------------------------------

    def begin(self, *, write: bool = True) -> None:
        super().begin(write=write)
        self._records = []

    def _insert(self, new: NewEntry) -> None:
        e = new.entry
        sketch = new.sketch
        indexed = sketch is not None and self.indexes(e)
        forms = new.forms
        blob = forms.blob if indexed and forms is not None else None
        measure = _MEASURES.get(e.measure, e.measure) if e.measure is not None else None
        cur = self._db.execute(
            "INSERT INTO docs (id, ts, duplicate_of, cluster, score, measure, title, copy_of,"
            " extends, text_key, kept, story, sketch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                _db(e.id), e.timestamp, _db(e.duplicate_of),
                None if e.cluster == e.id else _db(e.cluster), e.score,
                _db(measure) if isinstance(measure, str) else measure, _db(e.title),
                _db(e.copy_of), _db(e.extends), signed64(new.text_key), int(e.kept),
                int(new.counts), blob,
            ),
        )  # fmt: skip
        seq = int(cur.lastrowid or 0)
        if e.copy_of is None:
            self._db.execute(
                "INSERT OR IGNORE INTO exact VALUES (?, ?)", (signed64(new.text_key), seq)
            )
        if indexed and new.buckets:
            self._records.append((list(new.buckets), seq))
        if new.counts and forms is not None:
            self._db.execute(
                "INSERT INTO log (id, slots) VALUES (?, ?)",
                (_db(e.id), forms.slots),
            )
        if self.keep_text and forms is not None:
            text = forms.text
            self._db.execute("INSERT INTO texts VALUES (?, ?)", (seq, text))

    def _inserted(self) -> None:
        """Append the batch's records to the log of records (one row), after taking the
        fold of the log into the shards a step further, if one is due or going on."""
        if not self._records:
            return
        keys = np.concatenate([keys40(k) for k, _ in self._records])
        seqs = np.concatenate([np.full(len(k), seq, dtype=np.int64) for k, seq in self._records])
        self._records = []
        self._fold_step()
        self._db.execute("INSERT INTO lsh_log (records) VALUES (?)", (pack_log(keys, seqs),))

    def _recent(self) -> _Log:
        """This process's copy of the log of records, brought up to date: the rows folded
        since it was read let go, the rows added since read (inside the caller's transaction,
        or under the lock: what the file holds now)."""
        log = self._log
        if not self._has_log:
            self._has_log = (
                self._db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'lsh_log'"
                ).fetchone()
                is not None
            )
            if not self._has_log:  # a file of an earlier version, opened read-only
                return log
        log.forget(int(self._meta("lsh_folded") or 0))
        rows = self._db.execute(
            "SELECT pos, records FROM lsh_log WHERE pos > ? ORDER BY pos", (log.last,)
        ).fetchall()
        try:
            log.add(rows)
        except ValueError as exc:
            raise self._damaged(exc) from exc
        return log

    def _read_shards(self, shards: list[int]) -> tuple[Any, Any, Any]:
        """The records of ``shards`` (see :func:`_records_of`); a StoreError if damaged."""
        return self._records_in(self._shards(shards))

    def _records_in(self, blobs: Mapping[int, bytes]) -> tuple[Any, Any, Any]:
        """:func:`_records_of` the rows of shards; a StoreError if damaged."""
        try:
            return _records_of(blobs)
        except ValueError as exc:
            raise self._damaged(exc) from exc

    def _damaged(self, exc: ValueError) -> StoreError:
        return StoreError(
            f"store {self.url} is damaged: {exc}; restore it from a backup, or rebuild it (move "
            "it away and run neardup dedup again over what it held); neardup store check "
            "lists what is wrong"
        )

    def _fold_step(self) -> None:
        """Fold the log's records into their shards, a slice of the table a batch: start a
        fold once the log has grown past its share of the table, take one going on a slice
        further, and end it (the rows folded deleted) at the last slice; the batches after
        it split the shards the records folded ask for, a few at a time.
        Every record stays where a lookup finds it meanwhile: a record folded and not yet
        deleted from the log is found twice, and a lookup counts it once."""
        log = self._recent()
        layout = self._layout()
        going = self._meta("lsh_fold")
        if going is None and layout.due():  # the table grows for the last fold's records
            floor = self._floor()
            owed = -(-layout.count // layout.cap) - layout.size
            most = max(_SPLITS, -(-owed // _FOLD_STEPS))
            layout = split(layout, self._shards, self._put_shards, floor, most)
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('lsh', ?)", (json.dumps(list(layout)),)
            )
            return
        if going is None:
            due = max(_FOLD_MIN, min(layout.count // _FOLD_SHARE, _FOLD_MAX))
            if len(log) < due:
                return
            upto, start, size = log.last, 0, layout.size
        else:
            upto, start, size = json.loads(going)
        if size != layout.size:  # the table grew meanwhile (by a reclaim): start again
            start, size = 0, layout.size
        steps = max(_FOLD_STEPS, -(-(layout.count + len(log)) // _FOLD_SLICE))
        end = min(size, start + -(-size // steps))
        floor = self._floor()
        keys, seqs = log.records(upto)
        shards = layout.shards(keys)
        mine = (shards >= start) & (shards < end) & (seqs >= floor)
        keys, seqs, shards = keys[mine], seqs[mine], shards[mine]
        # every row of the slice is written again, in order, where the slice's rows were
        # deleted: the pages they fill are packed (rows rewritten in place as they grew, or
        # shrunk by a split, left the table's pages a third empty)
        old_keys, old_seqs, old_shards = self._records_in(self._shards_in(start, end))
        live = old_seqs >= floor
        every = _unique_records(
            np.concatenate((old_shards[live], shards)),
            np.concatenate((old_keys[live], keys)),
            np.concatenate((old_seqs[live], seqs)),
        )
        self._db.execute("DELETE FROM lsh WHERE shard >= ? AND shard < ?", (start, end))
        self._put_shards(_by_shard(*every))
        layout = layout._replace(count=layout.count + len(every[0]) - len(old_seqs))
        if end < size:
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('lsh_fold', ?)",
                (json.dumps([upto, end, size]),),
            )
        else:  # the last slice: the rows folded go (the batches after grow the table)
            self._db.execute("DELETE FROM lsh_log WHERE pos <= ?", (upto,))
            self._db.execute("DELETE FROM meta WHERE key = 'lsh_fold'")
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('lsh_folded', ?)", (upto,))
        self._db.execute(
            "INSERT OR REPLACE INTO meta VALUES ('lsh', ?)", (json.dumps(list(layout)),)
        )

    def _floor(self) -> int:
        """The lowest sequence number still stored: records below it are of documents gone."""
        row = self._db.execute("SELECT min(seq) FROM docs").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _shards(self, shards: list[int]) -> dict[int, bytes]:
        rows = self._select("SELECT shard, records FROM lsh WHERE shard IN ({})", shards)
        return {int(s): bytes(b) for s, b in rows}

    def _shards_in(self, start: int, end: int) -> dict[int, bytes]:
        rows = self._db.execute(
            "SELECT shard, records FROM lsh WHERE shard >= ? AND shard < ? ORDER BY shard",
            (start, end),
        ).fetchall()
        return {int(s): bytes(b) for s, b in rows}

    def _put_shards(self, blobs: dict[int, bytes]) -> None:
        self._db.executemany("INSERT OR REPLACE INTO lsh VALUES (?, ?)", list(blobs.items()))

    def keep_texts(self) -> None:
        self.keep_text = True

    # -- reads ----------------------------------------------------------------------------

    @_guarded
    def entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        rows = self._select(f"SELECT {_ENTRY} FROM docs WHERE id IN ({{}})", _ids(ids))
        return {e.id: e for e in map(_entry, rows)}

    @_guarded
    def exact(self, text_keys: Iterable[int]) -> dict[int, str]:
        keys = {signed64(k): k for k in text_keys}
        rows = self._select(
            "SELECT e.text_key, d.id FROM exact e JOIN docs d ON d.seq = e.seq"
            " WHERE e.text_key IN ({})",
            list(keys),
        )
        return {keys[k]: _py(i) for k, i in rows}

    @_guarded
    def buckets(self, keys: Iterable[BandKey]) -> dict[BandKey, list[tuple[int, str, float]]]:
        wanted: list[BandKey] = list(set(keys))
        if not wanted:
            return {}
        short = keys40(wanted)
        asked = distinct(short)
        with self._lock:
            layout = self._layout()
            recent = self._recent().find(asked)
        found, seqs, _ = self._read_shards(distinct(layout.shards(short)).tolist())
        hit = _member(asked, found)
        found, seqs = (
            np.concatenate((found[hit], recent[0])),
            np.concatenate((seqs[hit], recent[1])),
        )
        order = np.lexsort((seqs, found))
        found, seqs = found[order], seqs[order]
        alive = {
            int(q): (_py(i), ts)
            for q, i, ts in self._select(
                "SELECT seq, id, ts FROM docs WHERE sketch IS NOT NULL AND seq IN ({})",
                distinct(seqs).tolist(),
            )
        }
        lo = np.searchsorted(found, short, side="left").tolist()
        hi = np.searchsorted(found, short, side="right").tolist()
        every = seqs.tolist()
        out: dict[BandKey, list[tuple[int, str, float]]] = {}
        for bk, a, b in zip(wanted, lo, hi, strict=True):
            found = [(q, *alive[q]) for q in dict.fromkeys(every[a:b]) if q in alive]
            if found:
                out[bk] = found
        return out

    @_guarded
    def sketches(self, ids: Iterable[str]) -> dict[str, Stored]:
        rows = self._select(
            "SELECT d.id, d.sketch, t.text FROM docs d LEFT JOIN texts t ON t.seq = d.seq"
            " WHERE d.sketch IS NOT NULL AND d.id IN ({})",
            _ids(ids),
        )
        out: dict[str, Stored] = {}
        for i, blob, text in rows:
            c = decode(bytes(blob))
            if text is not None:
                c = dataclasses.replace(c, page_text=_text(bytes(text)))
            out[_py(i)] = c
        return out

    @_guarded
    def texts(self, ids: Iterable[str]) -> dict[str, str]:
        rows = self._select(
            "SELECT d.id, t.text, d.sketch FROM docs d LEFT JOIN texts t ON t.seq = d.seq"
            " WHERE d.id IN ({})",
            _ids(ids),
        )
        out: dict[str, str] = {}
        for i, text, blob in rows:
            if text is not None:
                out[_py(i)] = _text(bytes(text))
            elif blob is not None and (short := decode(bytes(blob)).short_text):
                out[_py(i)] = short
        return out

    @_guarded
    def log(self, after: int, limit: int) -> tuple[int, list[str], bool]:
        page = self.log_stories(after, limit)
        return page.position, [i for i, _ in page.stories], page.done

    @_guarded
    def log_stories(self, after: int, limit: int, skip: Container[str] = ()) -> LogPage:
        with self._lock:
            folded = int(self._meta("log_floor") or 0)
            if after < folded:
                return LogPage(after, [], False, behind=True)
            rows = self._db.execute(
                "SELECT pos, id, slots FROM log WHERE pos > ? ORDER BY pos LIMIT ?", (after, limit)
            ).fetchall()
        if not rows:
            return LogPage(after, [], True)
        stories = [
            (s, NO_SLOTS if s in skip else decode_slots(bytes(b)))
            for s, b in ((str(_py(i)), b) for _, i, b in rows)
        ]
        return LogPage(int(rows[-1][0]), stories, len(rows) < limit)

    @_guarded
    def snapshot_due(self, position: int, saved: int) -> bool:
        with self._lock:
            size = self._log_bytes()
            table = self._db.execute(
                "SELECT length(value) FROM meta WHERE key = 'common'"
            ).fetchone()
        return size >= max(LOG_BYTES, (int(table[0]) if table else 0) // LOG_SHARE)

    def _log_bytes(self) -> int:
        """The bytes of the stories' slots the log holds: the rows added since this process
        last looked, added to what it summed then (a Deduper asks at every batch, and the
        log holds some thousands of rows). Rows leave the log only when a saved table folds
        them, which moves its floor: then it is summed again."""
        floor = int(self._meta("log_floor") or 0)
        at, last, size = self._logged
        if at != floor:
            last, size = 0, 0
        more, newest = self._db.execute(
            "SELECT total(length(slots)), max(pos) FROM log WHERE pos > ?", (last,)
        ).fetchone()
        if newest is not None:
            last, size = int(newest), size + int(more)
        self._logged = (floor, last, size)
        return size

    @_guarded
    def save_common(self, position: int, table: bytes) -> None:
        """Save the table (unless a newer one is saved) and drop the log it covers."""
        blob = position.to_bytes(8, "little") + table
        with self._lock:
            if self._in_section:
                self._save(position, blob)
            else:
                with self._write():
                    self._save(position, blob)

    def _save(self, position: int, blob: bytes) -> None:
        saved = self._meta("common")
        if saved is not None and int.from_bytes(bytes(saved)[:8], "little") >= position:
            return
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('common', ?)", (blob,))
        self._db.execute("DELETE FROM log WHERE pos <= ?", (position,))
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('log_floor', ?)", (position,))
        if self._auto_vacuum() == 2:  # the log's pages back to the file system
            (free,) = self._db.execute("PRAGMA freelist_count").fetchone()
            for _ in range(int(free)):  # one page a step (sqlite3 steps a pragma once)
                self._db.execute("PRAGMA incremental_vacuum(1)")

    # -- management -----------------------------------------------------------------------

    def _forget(self, rows: list[Any]) -> None:
        """Delete documents given (seq, id, text_key, sketch) rows, inside a transaction; their
        records stay in the shards until :meth:`reclaim` (readers skip them)."""
        for seq, _doc_id, text_key, _blob in rows:
            self._db.execute("DELETE FROM exact WHERE text_key = ? AND seq = ?", (text_key, seq))
            self._db.execute("DELETE FROM texts WHERE seq = ?", (seq,))
            self._db.execute("DELETE FROM docs WHERE seq = ?", (seq,))

    @_guarded
    def reclaim(self, *, rewrite: bool = False) -> None:
        """Drop the records of forgotten documents from the shards, fold the log into the
        saved count table, then give the free pages back (see :meth:`SQLiteStore.reclaim`)."""
        with self._lock, self._write():
            self._fold()
            live = np.array(
                [q for (q,) in self._db.execute("SELECT seq FROM docs WHERE sketch IS NOT NULL")],
                dtype=np.int64,
            )
            layout = self._layout()
            keys, seqs = [], []
            for shard, blob in self._db.execute("SELECT shard, records FROM lsh"):
                k, q = unpack(bytes(blob), int(shard))
                keep = np.isin(q, live)
                keys.append(k[keep])
                seqs.append(q[keep])
            logged = self._recent()
            if len(logged):  # the log's records too (those a fold took already, once)
                k, q = logged.records(logged.last)
                keep = np.isin(q, live)
                keys.append(k[keep])
                seqs.append(q[keep])
            if len(logged) or sum(len(q) for q in seqs) < layout.count:  # rebuild, for the rest
                every_key = np.concatenate(keys) if keys else np.zeros(0, dtype=np.uint64)
                every_seq = np.concatenate(seqs) if seqs else np.zeros(0, dtype=np.int64)
                _, every_key, every_seq = _unique_records(
                    np.zeros(len(every_key), dtype=np.int64), every_key, every_seq
                )  # in the order added
                new = sized(len(every_key), layout.cap)
                shards = new.shards(every_key)
                self._db.execute("DELETE FROM lsh_log WHERE pos <= ?", (logged.last,))
                self._db.execute("DELETE FROM meta WHERE key = 'lsh_fold'")
                self._db.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('lsh_folded', ?)", (logged.last,)
                )
                self._db.execute("DELETE FROM lsh")
                self._put_shards(_by_shard(shards, every_key, every_seq))
                self._db.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('lsh', ?)", (json.dumps(list(new)),)
                )
        super().reclaim(rewrite=rewrite)

    def _fold(self) -> None:
        """Count the logged stories into the saved table and empty the log (what a Deduper
        does when the log grows long; the counts are the same either way)."""
        rows = self._db.execute("SELECT pos, slots FROM log ORDER BY pos").fetchall()
        if not rows:
            return
        saved = self._meta("common")
        blob = b"" if saved is None else bytes(saved)[8:]
        # the guard turns as the Deduper that saved it does (a guard with a window saves its
        # table before it logs a story)
        common = CommonShingles(limit=1, window=guard_window(blob))
        if saved is not None:
            load_guard(common, blob)
        for _, slots in rows:
            common.add(decode_slots(bytes(slots)))
        position = int(rows[-1][0])
        self._save(position, position.to_bytes(8, "little") + encode_guard(common))

    @_guarded
    def clusters(self, limit: int = 100, offset: int = 0) -> list[tuple[str, int]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT coalesce(cluster, id) AS c, count(*) AS n FROM docs GROUP BY c"
                " ORDER BY n DESC, c LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
        return [(_py(c), int(n)) for c, n in rows]

    @_guarded
    def members(self, cluster: str) -> list[Entry]:
        label = _db(cluster)
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_ENTRY} FROM docs WHERE cluster = ? OR (cluster IS NULL AND id = ?)"
                " ORDER BY seq",
                (label, label),
            ).fetchall()
        return [_entry(r) for r in rows]

    def _bucket_entries(self) -> int:
        """The records in the shards and in the log (one that a fold going on has put in
        its shard already counted twice)."""
        return self._layout().count + len(self._recent())

    @_guarded
    def stats(self, *, full: bool = False) -> dict[str, object]:
        out = super().stats(full=full)
        with self._lock:
            (texts,) = self._db.execute("SELECT count(*) FROM texts").fetchone()
        out["layout"] = "compact"
        out["keeps_text"] = bool(texts) or self.keep_text
        return out

    TABLES = ("meta", "docs", "exact", "lsh", "log")

    def _decode_sketch(self, blob: bytes) -> object:
        return decode(blob)

    def _check(self) -> list[str]:
        problems, readable = self._check_tables_and_sketches()
        if not readable:
            return problems
        db = self._db
        layout = self._layout()
        records = broken = 0
        for shard, blob in db.execute("SELECT shard, records FROM lsh"):
            try:
                records += len(unpack(bytes(blob), int(shard))[0])
            except ValueError:
                broken += 1
            if not 0 <= int(shard) < layout.size:
                broken += 1
        if broken:
            problems.append(f"{broken:,} LSH shards are damaged or out of the table")
        elif records != layout.count:
            problems.append(f"the LSH table counts {layout.count:,} records but holds {records:,}")
        if "lsh_log" in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}:
            (torn,) = db.execute(
                f"SELECT count(*) FROM lsh_log WHERE length(records) % {LOG_RECORD} != 0"
            ).fetchone()
            if torn:
                problems.append(f"{torn:,} rows of the LSH log are not whole records")
        checks = (
            ("exact-text rows name no stored document",
             "SELECT count(*) FROM exact e LEFT JOIN docs d ON d.seq = e.seq WHERE d.seq IS NULL"),
            ("documents kept have neither a sketch nor the document they copy",
             "SELECT count(*) FROM docs WHERE sketch IS NULL AND copy_of IS NULL"
             " AND duplicate_of IS NULL"),
        )  # fmt: skip
        return problems + self._counted(checks)


def _records_of(blobs: Mapping[int, bytes]) -> tuple[Any, Any, Any]:
    """The records of many shards at once: keys, sequence numbers, and each one's shard."""
    if not blobs:
        empty = np.zeros(0, dtype=np.int64)
        return empty.astype(np.uint64), empty, empty
    shards = list(blobs)
    sizes = [len(blobs[s]) // RECORD for s in shards]
    each = np.repeat(np.array(shards, dtype=np.int64), sizes)
    keys, seqs = unpack(b"".join(blobs[s] for s in shards), each)
    return keys, seqs, each


def _by_shard(shards: Any, keys: Any, seqs: Any) -> dict[int, bytes]:
    """The blobs of the shards that records go to, each in the records' order."""
    if len(shards) == 0:
        return {}
    order = np.argsort(shards, kind="stable")
    shards, blob = shards[order], pack(keys[order], seqs[order])
    cuts = np.flatnonzero(np.diff(shards)) + 1
    starts = np.concatenate(([0], cuts)).tolist()
    stops = np.concatenate((cuts, [len(shards)])).tolist()
    return {
        int(shards[a]): blob[a * RECORD : b * RECORD] for a, b in zip(starts, stops, strict=True)
    }


def _unique_records(shards: Any, keys: Any, seqs: Any) -> tuple[Any, Any, Any]:
    """Records (shard, key, sequence number) each once, in the order they were added (by
    sequence number, then key: the order lookups read a bucket's members in)."""
    order = np.lexsort((keys, seqs))
    shards, keys, seqs = shards[order], keys[order], seqs[order]
    new = np.ones(len(keys), dtype=np.bool_)
    new[1:] = (keys[1:] != keys[:-1]) | (seqs[1:] != seqs[:-1])
    return shards[new], keys[new], seqs[new]


class _Log:
    """A process's copy of the rows of ``lsh_log`` not folded yet: their records in runs
    sorted by key (a run merged into the one before once it holds half as many records, so
    each record is copied O(log n) times), with the row each came in."""

    def __init__(self) -> None:
        self.folded = 0  # rows up to this one were folded into the shards, and are gone
        self.last = 0  # the last row read
        self.runs: list[tuple[Any, Any, Any]] = []  # (keys, seqs, rows), sorted by key

    def __len__(self) -> int:
        return sum(len(keys) for keys, _, _ in self.runs)

    def forget(self, folded: int) -> None:
        """Rows up to ``folded`` were folded into the shards: let their records go."""
        if folded <= self.folded:
            return
        if folded >= self.last:
            self.runs, self.last = [], folded
        else:
            runs = [(k[r > folded], q[r > folded], r[r > folded]) for k, q, r in self.runs]
            self.runs = [run for run in runs if len(run[0])]
        self.folded = folded

    def add(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Take the records of rows read from the table (in order, after :attr:`last`)."""
        if not rows:
            return
        parts = [unpack_log(bytes(blob)) for _, blob in rows]
        sizes = [len(k) for k, _ in parts]
        self.runs.append(
            _sorted(
                np.concatenate([k for k, _ in parts]),
                np.concatenate([q for _, q in parts]).astype(np.uint32),
                np.repeat(np.array([int(p) for p, _ in rows], dtype=np.uint32), sizes),
            )
        )
        self.last = int(rows[-1][0])
        while len(self.runs) > 1 and 2 * len(self.runs[-1][0]) >= len(self.runs[-2][0]):
            (k2, q2, r2), (k1, q1, r1) = self.runs.pop(), self.runs.pop()
            self.runs.append(
                _sorted(
                    np.concatenate((k1, k2)), np.concatenate((q1, q2)), np.concatenate((r1, r2))
                )
            )

    def find(self, keys: Any) -> tuple[Any, Any]:
        """The keys and sequence numbers of the records whose key is one of ``keys``
        (sorted, distinct)."""
        found_keys, found_seqs = [np.zeros(0, dtype=np.uint64)], [np.zeros(0, dtype=np.int64)]
        for run_keys, seqs, _ in self.runs:
            lo = np.searchsorted(run_keys, keys, "left")
            count = np.searchsorted(run_keys, keys, "right") - lo
            if not count.any():
                continue
            at = _ranges(lo, count)
            found_keys.append(run_keys[at])
            found_seqs.append(seqs[at].astype(np.int64))
        return np.concatenate(found_keys), np.concatenate(found_seqs)

    def records(self, upto: int) -> tuple[Any, Any]:
        """The keys and sequence numbers of the records of the rows up to ``upto``."""
        keys = [k[r <= upto] for k, _, r in self.runs]
        seqs = [q[r <= upto].astype(np.int64) for _, q, r in self.runs]
        if not keys:
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
        return np.concatenate(keys), np.concatenate(seqs)


def _sorted(keys: Any, seqs: Any, rows: Any) -> tuple[Any, Any, Any]:
    order = np.argsort(keys, kind="stable")
    return keys[order], seqs[order], rows[order]


def _member(sorted_keys: Any, keys: Any) -> Any:
    """Which of ``keys`` (40-bit record keys, in no order) are in ``sorted_keys``. A binary
    search costs some 50 ns a key in no order (a lookup's 512 keys against the 16,000
    records of their shards: 0.8 ms), so the keys are sifted first by a bitmap of the sorted
    keys' bits 24 to 39 (the shard a record is in says its lowest bits, which it shares with
    the keys asked), and only the few that pass are searched: 0.04 ms."""
    out = np.zeros(len(keys), dtype=np.bool_)
    if len(sorted_keys) == 0 or len(keys) == 0:
        return out
    sieve = np.zeros(1 << 16, dtype=np.bool_)
    sieve[_sifted(sorted_keys)] = True
    maybe = np.flatnonzero(sieve[_sifted(keys)])
    if len(maybe):
        at = np.minimum(np.searchsorted(sorted_keys, keys[maybe]), len(sorted_keys) - 1)
        out[maybe] = sorted_keys[at] == keys[maybe]
    return out


def _sifted(keys: Any) -> Any:
    """Bits 24 to 39 of 40-bit keys, as indexes of :func:`_member`'s bitmap."""
    return ((keys >> np.uint64(24)) & np.uint64(0xFFFF)).astype(np.intp)


#: The tables every neardup SQLite store has had, of every format and version: a file that
#: holds tables but not these is another program's database
_OWN_TABLES = frozenset({"meta", "docs"})


def open_sqlite(
    path: str, query: Mapping[str, list[str]], *, readonly: bool = False, existing: bool = False
) -> SQLiteStore:
    """The store in the SQLite file ``path``: compact unless the file was written before
    compact stores, or a new one is asked for with ``format=full``. A SQLite database of
    something else (tables, none of them neardup's) is refused unless opened ``readonly``
    (``neardup store check`` says what it lacks), before anything is written to it; with
    ``existing``, so is a file that holds no neardup store (empty, or no such file), and a
    new one is never made (the commands that look after a store: their answers would be
    about a store made for the asking)."""
    import os
    import sqlite3
    import urllib.parse
    from contextlib import closing

    fmt = (query.get("format") or [""])[0]
    if fmt not in ("", "compact", "full"):
        raise ConfigError(f"unknown store format {fmt!r}: use format=compact or format=full")
    keep_text = (query.get("keep_text") or ["0"])[0].lower() in ("1", "true", "yes")
    layout = None
    tables: set[str] | None = set()  # None: a file SQLite cannot read
    if os.path.exists(path) and os.path.getsize(path) > 0:
        try:
            uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
            with closing(sqlite3.connect(uri, uri=True, timeout=60)) as con:
                rows = con.execute("SELECT name, type FROM sqlite_master").fetchall()
            names = {name for name, _ in rows}
            tables = {name for name, kind in rows if kind == "table"} - {"sqlite_sequence"}
            if "lsh" in names:
                layout = "compact"
            elif "docs" in names:
                layout = "full"
        except sqlite3.Error:
            layout, tables = None, None  # the stores say what is wrong with it
    url = f"sqlite:///{path}"
    if tables and not tables >= _OWN_TABLES and not readonly:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise StoreError(
            f"store {url}: the file is a SQLite database of something else (tables {shown}), "
            "not a neardup store; neardup left it as it was: give it a file of its own"
        )
    if existing and tables is not None and not tables >= _OWN_TABLES:
        if not os.path.exists(path):
            held = "no such file"
        elif not tables:
            held = "the file holds no tables" if os.path.getsize(path) else "the file is empty"
        else:
            held = "the file holds no neardup tables"
        raise StoreError(f"no neardup store at {url} ({held}): check the path")
    if layout is None:
        layout = fmt or "compact"
    elif fmt and fmt != layout:
        raise ConfigError(
            f"store sqlite:///{path} is a {layout} store, not format={fmt}: leave format out, "
            "or give a new file"
        )
    if layout == "full":
        return SQLiteStore(path, readonly=readonly)
    return CompactSQLiteStore(path, readonly=readonly, keep_text=keep_text)
