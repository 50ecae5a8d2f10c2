"""The SQLite store: one file, shared by every process on a machine, crash-safe.

The database runs in WAL mode with ``synchronous=FULL``: a batch is committed, or not at all,
whatever happens to the process (``kill -9``) or the machine. Each atomic section is an
immediate transaction, so processes sharing the file decide one batch at a time; readers are
never blocked. A process waiting for another's section tries again every few tenths of a
millisecond (:func:`_begin_immediate`), so that it takes the file as soon as it is free.
Sketches are stored as compact blobs (:mod:`neardup.engine.codec`).

Ids, titles and the other strings are stored as text, except one holding a lone surrogate
(which UTF-8 cannot carry: an id or title read from JSON's ``"\\udc00"``), stored as the blob
of its ``surrogatepass`` bytes and read back as the same string: every string a Deduper gives
comes back as it was, and lookups find it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from ..engine.codec import decode, encode
from ..errors import ConfigError, NeardupError, StoreError
from ..hashing import signed64
from . import (
    FORMAT,
    RUN_AGAIN,
    BandKey,
    Entry,
    NewEntry,
    Store,
    Stored,
    StoreLost,
    bucket_keys,
    format_found,
)

__all__ = ["SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
CREATE TABLE IF NOT EXISTS docs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    ts REAL NOT NULL,
    duplicate_of TEXT,
    cluster TEXT NOT NULL,
    score REAL NOT NULL,
    measure TEXT,
    title TEXT,
    copy_of TEXT,
    text_key INTEGER NOT NULL,
    kept INTEGER NOT NULL,
    sketch BLOB,
    extends TEXT,
    story INTEGER
);
CREATE INDEX IF NOT EXISTS docs_cluster ON docs (cluster);
CREATE INDEX IF NOT EXISTS docs_ts ON docs (ts);
CREATE TABLE IF NOT EXISTS buckets (
    bucket INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    ts REAL NOT NULL,
    PRIMARY KEY (bucket, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS exact (text_key INTEGER PRIMARY KEY, id TEXT NOT NULL);
"""

#: Which documents a kept one extends (:meth:`SQLiteStore.extended`), added to an older file
#: when it is opened.
_EXTENDS_INDEX = (
    "CREATE INDEX IF NOT EXISTS docs_extends ON docs (extends) "
    "WHERE extends IS NOT NULL AND kept = 1"
)
_ENTRY = "id, seq, ts, duplicate_of, cluster, score, measure, title, copy_of, extends"
#: Columns added since the first version, added to an older file when it is opened.
_ADDED = {"extends": "TEXT", "story": "INTEGER"}
_CHUNK = 400  # parameters per IN list, well under SQLite's limit


def _db(value: str | None) -> str | bytes | None:
    """A string as SQLite keeps it: itself, or (holding a lone surrogate, which UTF-8 cannot
    carry) the blob of its ``surrogatepass`` bytes, always the same for the same string."""
    if value is None or value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value


def _py(value: Any) -> Any:
    """A string read back: what :func:`_db` stored, as the string it was."""
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _entry(row: Sequence[Any]) -> Entry:
    return Entry(
        _py(row[0]), row[1], row[2], _py(row[3]), _py(row[4]), row[5], _py(row[6]),
        _py(row[7]), _py(row[8]), _py(row[9]),
    )  # fmt: skip


def _ids(ids: Iterable[str]) -> list[str | bytes | None]:
    """Distinct ids as SQLite keeps them (:func:`_db`), for an ``IN`` list."""
    return list({_db(i) for i in ids})


def _chunks(values: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(values), size):
        yield values[i : i + size]


_R = TypeVar("_R")
_P = ParamSpec("_P")
_S = TypeVar("_S", bound="SQLiteStore")


def _guarded(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_S, _P], _R]:
    """``method``, the SQLite errors of a failing store (a full disk, a damaged file, a lock
    held too long...) raised as :class:`~neardup.errors.StoreError` with a message naming
    the file and saying what to do (the SQLite error is its cause)."""

    @functools.wraps(method)
    def guarded(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise  # a misuse (a closed store), not a failing store
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc

    return guarded


class SQLiteStore(Store):
    """A :class:`~neardup.store.Store` in one SQLite file (``sqlite:///path/to/file.db``),
    as neardup wrote it before compact stores (``format=full``): every document's whole
    sketch and one row per LSH bucket entry (about 8.7 KB a document)."""

    #: the tables of a new file
    schema = _SCHEMA
    #: what meta 'layout' says of a file of this kind (a file without it is of this kind)
    layout = "full"
    #: the page size of a new file (0: SQLite's default)
    page_size = 0

    def __init__(self, path: str, *, timeout: float = 600.0, readonly: bool = False) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self.readonly = readonly
        self._timeout = timeout
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise ConfigError(f"cannot open store {self.url}: folder {folder} does not exist")
        self._lock = threading.RLock()
        self._has_story = False  # whether docs has its story column (see _story)
        self._pending: list[NewEntry] = []
        self._in_section = False
        try:
            if readonly:
                self._db = _connect_readonly(path, timeout)
            else:
                self._db = sqlite3.connect(
                    path, timeout=timeout, isolation_level=None, check_same_thread=False
                )
        except sqlite3.Error as exc:
            raise self._failure(exc, "cannot open store") from exc
        try:
            self._db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            if readonly:
                self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()
                self._version()
            else:
                self._db.execute("PRAGMA synchronous=FULL")
                self._create(timeout)
        except sqlite3.Error as exc:
            self._db.close()
            raise self._failure(exc, "cannot open store") from exc
        except NeardupError:
            self._db.close()
            raise
        #: the file this process opened: a write section where the path names another file,
        #: or none (deleted, or replaced, under the running process), is refused (StoreLost)
        self._where = os.path.abspath(path)  # (a process that changes its folder still asks it)
        self._file = _file_identity(self._where)

    def _failure(self, exc: sqlite3.Error, doing: str = "store") -> StoreError:
        """The one-line error for what SQLite said: the file, SQLite's words, what to do."""
        return StoreError(f"{doing} {self.url}: {exc}{_advice(exc, self.path)}")

    def _create(self, timeout: float) -> None:
        """WAL mode and the tables. Several processes opening a new file at once race for
        it, and SQLite answers "locked" at once (no busy wait) to all but one: try again."""
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                # Before the first table (a no-op on an existing file): freed pages can go
                # back to the file system (:meth:`reclaim`), not only to later documents.
                if self.page_size:  # before anything else touches the new file
                    self._db.execute(f"PRAGMA page_size={self.page_size}")
                self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.executescript(f"BEGIN IMMEDIATE;{self.schema}COMMIT;")
                self._version(mark=True)  # before an upgrade touches a newer file
                self._upgrade()
                return
            except sqlite3.OperationalError as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if not _busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(0.5, delay * 2)

    def _version(self, *, mark: bool = False) -> None:
        """Refuse a file a newer neardup wrote (:func:`~neardup.store.format_found`); with
        ``mark``, say this version's format in an older or new one."""
        has_meta = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        found = self._meta("version") if has_meta is not None else None
        if format_found(found, self.url) < FORMAT and mark:
            with self._write():  # read again: another process may have marked it meanwhile
                if format_found(self._meta("version"), self.url) < FORMAT:
                    self._db.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('version', ?)", (str(FORMAT),)
                    )

    def _meta(self, key: str) -> Any:
        """The value of ``key`` in the file's meta table (None: not there)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def _upgrade(self) -> None:
        """Add the columns a file written by an earlier version lacks (its documents keep
        their decisions: none extends another, and the kept ones counted as stories)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(docs)")}
        missing = [(name, kind) for name, kind in _ADDED.items() if name not in have]
        if missing:
            with self._write():
                have = {row[1] for row in self._db.execute("PRAGMA table_info(docs)")}
                for name, kind in missing:
                    if name not in have:
                        self._db.execute(f"ALTER TABLE docs ADD COLUMN {name} {kind}")
        index = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'docs_extends'"
        if self._db.execute(index).fetchone() is None:
            with self._write():
                self._db.execute(_EXTENDS_INDEX)

    # -- transactions ---------------------------------------------------------------------

    def _write(self) -> _Immediate:
        return _Immediate(self._db, self._timeout)

    @_guarded
    def check_config(self, fingerprint: Mapping[str, object]) -> None:
        wanted = json.dumps(fingerprint, sort_keys=True)
        with self._write():
            row = self._db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta VALUES ('config', ?)", (wanted,))
                return
        if row[0] != wanted:
            raise ConfigError(
                f"store {self.url} was filled with other sketch settings ({row[0]}); "
                f"this Deduper uses {wanted}: use another store or the same settings"
            )

    def begin(self, *, write: bool = True) -> None:
        self._lock.acquire()
        try:
            if write:
                _begin_immediate(self._db, self._timeout)
                if self._file is not None and _file_identity(self._where) != self._file:
                    _abort(self._db)
                    raise self._lost()
            else:
                self._db.execute("BEGIN")
        except BaseException as exc:
            self._lock.release()
            if isinstance(exc, sqlite3.Error):
                raise self._failure(exc) from exc
            raise
        self._in_section = True
        self._pending = []

    def _lost(self) -> StoreLost:
        gone = "deleted or moved away" if not os.path.exists(self._where) else "replaced"
        return StoreLost(
            "SQLite file",
            f"was {gone}",
            f"store {self.url}: the file was {gone} while this process used it; nothing of "
            "this batch was written, and what the process wrote before went to the file it "
            "had open (lost when the process ends, if that file was deleted). Start the "
            "process again to go on with the file at that path now; to start a store "
            "afresh, stop its processes first",
        )

    def _end(self, sql: str) -> None:
        """End the section with ``sql`` (COMMIT or ROLLBACK) and release it, whatever
        happens: a COMMIT that fails is rolled back, and a ROLLBACK never fails (SQLite may
        have rolled the transaction back itself, on a full disk or an I/O error)."""
        if not self._in_section:
            return
        self._in_section = False
        self._pending = []
        try:
            if sql == "COMMIT":
                self._db.execute(sql)
        finally:
            try:
                _abort(self._db)
            finally:
                self._lock.release()

    def commit(self) -> int:
        n = len(self._pending)
        try:
            for new in self._pending:
                self._insert(new)
            self._inserted()
        except BaseException as exc:
            self._end("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise self._failure(exc) from exc
            raise
        try:
            self._end("COMMIT")
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc
        return n

    def rollback(self) -> None:
        self._end("ROLLBACK")

    def _inserted(self) -> None:
        """What a batch's inserts leave to do before it commits (nothing here)."""
        return None

    def put(self, entries: Sequence[NewEntry]) -> None:
        self._pending.extend(entries)

    def _insert(self, new: NewEntry) -> None:
        e = new.entry
        doc_id = _db(e.id)
        blob = encode(new.sketch) if new.sketch is not None else None
        cur = self._db.execute(
            "INSERT INTO docs (id, ts, duplicate_of, cluster, score, measure, title, copy_of,"
            " text_key, kept, sketch, extends, story) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                doc_id, e.timestamp, _db(e.duplicate_of), _db(e.cluster), e.score, _db(e.measure),
                _db(e.title), _db(e.copy_of), signed64(new.text_key), int(e.kept), blob,
                _db(e.extends), int(new.counts),
            ),
        )  # fmt: skip
        seq = cur.lastrowid
        if e.copy_of is None:
            self._db.execute(
                "INSERT OR IGNORE INTO exact VALUES (?, ?)", (signed64(new.text_key), doc_id)
            )
        if new.buckets:
            self._db.executemany(
                "INSERT OR IGNORE INTO buckets VALUES (?, ?, ?, ?)",
                [(bucket, seq, doc_id, e.timestamp) for bucket in new.buckets],
            )

    # -- reads ----------------------------------------------------------------------------

    def _select(self, sql: str, values: Sequence[Any]) -> list[Any]:
        """Run ``sql`` (with one ``{}`` for a list of placeholders) over chunks of values."""
        rows: list[Any] = []
        with self._lock:
            for part in _chunks(values):
                marks = ",".join("?" * len(part))
                rows.extend(self._db.execute(sql.format(marks), tuple(part)).fetchall())
        return rows

    @_guarded
    def entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        rows = self._select(f"SELECT {_ENTRY} FROM docs WHERE id IN ({{}})", _ids(ids))
        return {e.id: e for e in map(_entry, rows)}

    @_guarded
    def extended(self, ids: Iterable[str]) -> set[str]:
        rows = self._select(
            "SELECT DISTINCT extends FROM docs "
            "WHERE extends IN ({}) AND extends IS NOT NULL AND kept = 1",
            _ids(ids),
        )
        return {str(_py(r[0])) for r in rows}

    @_guarded
    def exact(self, text_keys: Iterable[int]) -> dict[int, str]:
        keys = {signed64(k): k for k in text_keys}
        rows = self._select("SELECT text_key, id FROM exact WHERE text_key IN ({})", list(keys))
        return {keys[k]: _py(i) for k, i in rows}

    @_guarded
    def buckets(self, keys: Iterable[BandKey]) -> dict[BandKey, list[tuple[int, str, float]]]:
        rows = self._select(
            "SELECT bucket, seq, id, ts FROM buckets WHERE bucket IN ({}) ORDER BY bucket, seq",
            list(set(keys)),
        )
        out: dict[BandKey, list[tuple[int, str, float]]] = {}
        for bucket, seq, doc_id, ts in rows:
            out.setdefault(bucket, []).append((seq, _py(doc_id), ts))
        return out

    @_guarded
    def sketches(self, ids: Iterable[str]) -> dict[str, Stored]:
        rows = self._select(
            "SELECT id, sketch FROM docs WHERE sketch IS NOT NULL AND id IN ({})", _ids(ids)
        )
        return {_py(i): decode(blob) for i, blob in rows}

    @_guarded
    def log(self, after: int, limit: int) -> tuple[int, list[str], bool]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT seq, id FROM docs WHERE seq > ? AND {self._story()} = 1"
                " AND sketch IS NOT NULL ORDER BY seq LIMIT ?",
                (after, limit),
            ).fetchall()
        if not rows:
            return after, [], True
        return rows[-1][0], [_py(i) for _, i in rows], len(rows) < limit

    def _story(self) -> str:
        """Whether a document counted as a story: its ``story`` column, or ``kept`` where
        it has none (a file of the first version opened read-only, so not upgraded: what
        :meth:`_upgrade` says of its documents)."""
        if not self._has_story:
            have = {row[1] for row in self._db.execute("PRAGMA table_info(docs)")}
            self._has_story = "story" in have
        return "coalesce(story, kept)" if self._has_story else "kept"

    @_guarded
    def load_common(self) -> tuple[int, bytes] | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'common'").fetchone()
        if row is None:
            return None
        blob = bytes(row[0])
        return int.from_bytes(blob[:8], "little"), blob[8:]

    @_guarded
    def save_common(self, position: int, table: bytes) -> None:
        blob = position.to_bytes(8, "little") + table
        with self._lock:
            if self._in_section:
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('common', ?)", (blob,))
            else:
                with self._write():
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES ('common', ?)", (blob,))

    # -- management -----------------------------------------------------------------------

    def _forget(self, rows: list[Any]) -> None:
        """Delete documents given (seq, id, text_key, sketch) rows, inside a transaction."""
        for seq, doc_id, text_key, blob in rows:
            if blob is not None:
                self._db.executemany(
                    "DELETE FROM buckets WHERE bucket = ? AND seq = ?",
                    [(k, seq) for k in bucket_keys(decode(blob))],
                )
            self._db.execute("DELETE FROM exact WHERE text_key = ? AND id = ?", (text_key, doc_id))
            self._db.execute("DELETE FROM docs WHERE seq = ?", (seq,))

    @_guarded
    def delete(self, doc_id: str) -> bool:
        with self._lock, self._write():
            rows = self._db.execute(
                "SELECT seq, id, text_key, sketch FROM docs WHERE id = ?", (_db(doc_id),)
            ).fetchall()
            self._forget(rows)
        return bool(rows)

    @_guarded
    def prune(self, before: float) -> int:
        with self._lock, self._write():
            rows = self._db.execute(
                "SELECT seq, id, text_key, sketch FROM docs WHERE ts < ?", (before,)
            ).fetchall()
            self._forget(rows)
        return len(rows)

    @_guarded
    def reclaim(self, *, rewrite: bool = False) -> None:
        """Free pages back to the file system: at once in a file that reclaims as it goes
        (``auto_vacuum=INCREMENTAL``, every file this version creates), by rewriting the file
        (``VACUUM``, which also turns that on) when ``rewrite``; then the WAL is emptied."""
        with self._lock:
            if rewrite:
                self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
                self._db.execute("VACUUM")
            elif self._auto_vacuum() == 2:
                # sqlite3's execute would step it once, freeing one page; exec runs it through
                self._db.executescript("PRAGMA incremental_vacuum;")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def _auto_vacuum(self) -> int:
        """SQLite's auto_vacuum mode of the file: 0 none, 1 full, 2 incremental."""
        return int(self._db.execute("PRAGMA auto_vacuum").fetchone()[0])

    @_guarded
    def clusters(self, limit: int = 100, offset: int = 0) -> list[tuple[str, int]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT cluster, count(*) AS n FROM docs GROUP BY cluster"
                " ORDER BY n DESC, cluster LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
        return [(_py(c), int(n)) for c, n in rows]

    @_guarded
    def members(self, cluster: str) -> list[Entry]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_ENTRY} FROM docs WHERE cluster = ? ORDER BY seq", (_db(cluster),)
            ).fetchall()
        return [_entry(r) for r in rows]

    @_guarded
    def stats(self, *, full: bool = False) -> dict[str, object]:
        with self._lock:
            n, kept, oldest, newest = self._db.execute(
                "SELECT count(*), coalesce(sum(kept), 0), min(ts), max(ts) FROM docs"
            ).fetchone()
            buckets = self._bucket_entries()
            (free,) = self._db.execute("PRAGMA freelist_count").fetchone()
            (page,) = self._db.execute("PRAGMA page_size").fetchone()
            reclaims = self._auto_vacuum() == 2
        size = sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))
        return {
            "store": self.url,
            "documents": n,
            "kept": kept,
            "duplicates": n - kept,
            "bucket_entries": buckets,
            "oldest": oldest,
            "newest": newest,
            "bytes": size,
            "bytes_per_document": round(size / n) if n else None,
            "free_bytes": free * page,
            "reclaims_space": reclaims,
        }

    def _bucket_entries(self) -> int:
        (n,) = self._db.execute("SELECT count(*) FROM buckets").fetchone()
        return int(n)

    @_guarded
    def integrity(self) -> str:
        """What ``PRAGMA integrity_check`` says ("ok" when the file is sound)."""
        with self._lock:
            return str(self._db.execute("PRAGMA integrity_check(20)").fetchone()[0])

    def check(self) -> list[str]:
        """SQLite's integrity check of the whole file (its first 20 problems), then the
        store's own: its tables and settings are there, every sketch decodes, the exact-text
        and bucket rows name stored documents."""
        try:
            with self._lock:
                return self._check()
        except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise
        except sqlite3.Error as exc:
            return [f"the check stopped where SQLite said: {exc}"]

    #: the tables of this layout (``store check`` names those missing)
    TABLES: tuple[str, ...] = ("meta", "docs", "buckets", "exact")

    def _decode_sketch(self, blob: bytes) -> object:
        """A stored sketch read back (``store check``: whether it decodes)."""
        return decode(blob)

    def _check(self) -> list[str]:
        problems, readable = self._check_tables_and_sketches()
        if not readable:
            return problems
        checks = (
            ("exact-text rows name no stored document",
             "SELECT count(*) FROM exact e LEFT JOIN docs d ON d.id = e.id WHERE d.id IS NULL"),
            ("bucket rows name no stored document",
             "SELECT count(*) FROM buckets b LEFT JOIN docs d ON d.seq = b.seq"
             " WHERE d.seq IS NULL"),
            ("documents have neither a sketch nor the document they copy",
             "SELECT count(*) FROM docs WHERE sketch IS NULL AND copy_of IS NULL"),
        )  # fmt: skip
        return problems + self._counted(checks)

    def _check_tables_and_sketches(self) -> tuple[list[str], bool]:
        """SQLite's integrity check, the layout's tables, the settings and every sketch:
        the problems found, and whether the rest of the store can be read (not when the
        file is damaged or a table is missing)."""
        db = self._db
        said = [
            line
            for r in db.execute("PRAGMA integrity_check(20)")
            for line in str(r[0]).splitlines()
        ]
        said = [line for line in said if line.strip() and not line.startswith("*** in database")]
        problems = [] if said == ["ok"] else [f"SQLite's integrity check: {x}" for x in said]
        if len(said) >= 20:
            problems[-1] += " (the check stops after 20 problems: there may be more)"
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = [t for t in self.TABLES if t not in tables]
        if missing:
            return [*problems, f"not a neardup store: no table {', '.join(missing)}"], False
        if problems:  # the rest would read damaged pages
            return problems, False
        if db.execute("SELECT 1 FROM meta WHERE key = 'config'").fetchone() is None:
            problems.append("no sketch settings (meta 'config'): not filled by neardup")
        bad = 0
        for doc_id, blob in db.execute("SELECT id, sketch FROM docs WHERE sketch IS NOT NULL"):
            try:
                self._decode_sketch(bytes(blob))
            except Exception:  # any damage to the blob shows as some error of the decoder
                bad += 1
                if bad <= 5:
                    problems.append(f"the sketch of {_py(doc_id)!r} does not decode")
        if bad > 5:
            problems.append(f"{bad - 5:,} more sketches do not decode")
        return problems, True

    def _counted(self, checks: Iterable[tuple[str, str]]) -> list[str]:
        """A problem for each (what, SQL counting rows) whose count is not 0."""
        problems = []
        for what, sql in checks:
            (n,) = self._db.execute(sql).fetchone()
            if n:
                problems.append(f"{n:,} {what}")
        return problems

    def close(self) -> None:
        try:
            self._db.close()
        except sqlite3.Error as exc:  # pragma: no cover - closing twice is fine
            raise NeardupError(f"cannot close {self.url}: {exc}") from exc


def _connect_readonly(path: str, timeout: float) -> sqlite3.Connection:
    """``path`` opened read-only. A WAL file needs its ``-shm`` beside it, which a read-only
    folder or file system cannot hold: then, if no WAL file holds anything, the file is read
    as immutable (nothing else can write it there either)."""
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
    db = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None,
                         check_same_thread=False)  # fmt: skip
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError as exc:
        db.close()
        wal = path + "-wal"
        if "unable to open" not in str(exc) or (os.path.exists(wal) and os.path.getsize(wal)):
            raise
    return sqlite3.connect(uri + "&immutable=1", uri=True, timeout=timeout,
                           isolation_level=None, check_same_thread=False)  # fmt: skip


def _abort(db: sqlite3.Connection) -> None:
    """Roll back the transaction if one is still open; never fails (the error that led here
    is the one to tell)."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


#: What to do about each kind of SQLite failure (by its error code's name), after SQLite's
#: own words; FILE is the store's path.
_ADVICE = {
    "SQLITE_FULL": f"; the disk is full: free space, then {RUN_AGAIN}",
    "SQLITE_IOERR": f"; the disk could not read or write FILE: check it, then {RUN_AGAIN}",
    "SQLITE_CORRUPT": "; the file is damaged: restore it from a backup, or rebuild the store "
    "(move FILE away and run again over what it held); neardup store check --db FILE says "
    "what is wrong",
    "SQLITE_READONLY": "; neardup cannot write FILE (a read-only file, folder or file system): "
    "make it writable, or give another store",
    "SQLITE_BUSY": "; another process held FILE longer than the timeout",
    "SQLITE_CANTOPEN": "; check that FILE (and FILE-wal, FILE-shm beside it) can be opened",
}
_ADVICE["SQLITE_NOTADB"] = _ADVICE["SQLITE_CORRUPT"]
_ADVICE["SQLITE_LOCKED"] = _ADVICE["SQLITE_BUSY"]
#: SQLite's words for those codes, for errors that come without one
_WORDS = {
    "disk is full": "SQLITE_FULL",
    "disk I/O error": "SQLITE_IOERR",
    "malformed": "SQLITE_CORRUPT",
    "not a database": "SQLITE_NOTADB",
    "readonly database": "SQLITE_READONLY",
    "database is locked": "SQLITE_BUSY",
    "unable to open": "SQLITE_CANTOPEN",
}


def _advice(exc: sqlite3.Error, path: str) -> str:
    """What to do about a SQLite failure on ``path`` ("" when there is nothing to say)."""
    code = str(getattr(exc, "sqlite_errorname", "") or "")
    name = next((n for n in _ADVICE if code == n or code.startswith(n + "_")), None)
    if name is None:
        name = next((n for words, n in _WORDS.items() if words in str(exc)), None)
    if name is None and type(exc) is sqlite3.DatabaseError:  # what corruption codes map to
        name = "SQLITE_CORRUPT"
    if name == "SQLITE_NOTADB" and (kind := _plainly(path)) is not None:
        return (
            f"; {path} is {kind}, not a store: a store is a file of its own (give a new path, "
            "or the store's file)"
        )
    return "" if name is None else _ADVICE[name].replace("FILE", path)


#: how files begin that are plainly not a SQLite database (inputs, most likely)
_MAGIC = {
    b"\x1f\x8b": "a gzip file",
    b"\x28\xb5\x2f\xfd": "a zstd file",
    b"PAR1": "a Parquet file",
    b"ARROW1": "an Arrow file",
    b"WARC/": "a WARC file",
    b"PK\x03\x04": "a zip file",
}


def _plainly(path: str) -> str | None:
    """What a file SQLite will not read as a database plainly is — a compressed or columnar
    file, or text (named by how it begins) — or None where it may be a store whose first
    page is damaged (bytes that are none of these)."""
    import codecs

    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    kind = next((k for magic, k in _MAGIC.items() if head.startswith(magic)), None)
    if kind is not None or head.startswith(b"SQLite format 3\x00"):
        return kind
    try:  # (the last character may be cut by the 256 bytes)
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return None
    if not text.strip() or not all(c.isprintable() or c in "\t\r\n" for c in text):
        return None
    return f"a text file (it begins {text.split(chr(10))[0][:32]!r})"


#: how long a connection waiting for another's write transaction sleeps between tries: at
#: first, and at most (doubling from the first); once it has waited _RETRY_PATIENT seconds
#: (another process saving a large table, folding or vacuuming), at most _RETRY_LONG, so a
#: long wait costs a few hundred tries a second, not thousands
_RETRY_FIRST = 0.0001
_RETRY_MOST = 0.0005
_RETRY_PATIENT = 0.1
_RETRY_LONG = 0.005


def _begin_immediate(db: sqlite3.Connection, timeout: float) -> None:
    """Begin an immediate (write) transaction, waiting up to ``timeout`` seconds for another
    connection's to end: trying again every few tenths of a millisecond, so that a process
    waiting for the file takes it as soon as it is free. SQLite's own wait (``busy_timeout``)
    sleeps 1, 2, 5, 10, 15, 20, 25 ... 100 ms between its tries: processes taking turns at
    one file left it idle for milliseconds at each turn, and two service workers on one
    file did fewer requests a second than one. After ``timeout``, SQLite's "database is
    locked" is raised, as its own wait raises it."""
    db.execute("PRAGMA busy_timeout=0")
    try:
        began = time.monotonic()
        delay = _RETRY_FIRST
        while True:
            try:
                db.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                _abort(db)  # nothing was begun; never leave a transaction open
                waited = time.monotonic() - began
                if not _busy(exc) or waited >= timeout:
                    raise
            time.sleep(delay)
            delay = min(_RETRY_MOST if waited < _RETRY_PATIENT else _RETRY_LONG, 2 * delay)
    finally:
        db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")


def _busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says another connection holds the lock wanted (SQLITE_BUSY or
    SQLITE_LOCKED, any extended code)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _file_identity(path: str) -> tuple[int, int] | None:
    """The device and inode ``path`` names (None: no file there, or an in-memory one)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class _Immediate:
    """``with`` an immediate write transaction (committed on success, rolled back on error)."""

    def __init__(self, db: sqlite3.Connection, timeout: float) -> None:
        self._db = db
        self._timeout = timeout

    def __enter__(self) -> None:
        _begin_immediate(self._db, self._timeout)

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is None:
            try:
                self._db.execute("COMMIT")
            except BaseException:
                _abort(self._db)
                raise
        else:
            _abort(self._db)
