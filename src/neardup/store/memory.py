"""The in-process store: dicts, gone when the process ends. Thread-safe."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence

from ..engine import Sketch
from ..errors import ConfigError
from . import BandKey, Entry, NewEntry, Store, Stored

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """A :class:`~neardup.store.Store` in memory (``memory://``)."""

    url = "memory://"
    in_process = True

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._entries: dict[str, Entry] = {}
        self._sketches: dict[str, Sketch] = {}
        self._buckets: dict[BandKey, list[tuple[int, str, float]]] = {}
        self._joined: dict[str, tuple[BandKey, ...]] = {}
        self._exact: dict[int, str] = {}
        self._extended: set[str] = set()  # ids a kept document extends
        self._text_key: dict[str, int] = {}
        self._log: list[str] = []  # ids of documents that counted as stories, in order
        self._common: tuple[int, bytes] | None = None
        self._seq = 0
        self._pending: list[NewEntry] = []
        self._fingerprint: dict[str, object] | None = None
        self._in_section = False

    def check_config(self, fingerprint: Mapping[str, object]) -> None:
        with self._lock:
            if self._fingerprint is None:
                self._fingerprint = dict(fingerprint)
            elif self._fingerprint != dict(fingerprint):
                raise ConfigError(
                    f"this store was filled with other sketch settings: {self._fingerprint}"
                )

    def begin(self, *, write: bool = True) -> None:
        self._lock.acquire()
        self._in_section = True
        self._pending = []

    def _end(self) -> None:
        self._pending = []
        if self._in_section:
            self._in_section = False
            self._lock.release()

    def commit(self) -> int:
        n = len(self._pending)
        try:
            for new in self._pending:
                self._apply(new)
        finally:
            self._end()
        return n

    def rollback(self) -> None:
        self._end()

    def put(self, entries: Sequence[NewEntry]) -> None:
        self._pending.extend(entries)

    def _apply(self, new: NewEntry) -> None:
        self._seq += 1
        e = new.entry
        entry = Entry(
            e.id, self._seq, e.timestamp, e.duplicate_of, e.cluster, e.score, e.measure,
            e.title, e.copy_of, e.extends,
        )  # fmt: skip
        self._entries[e.id] = entry
        if e.extends is not None and e.kept:
            self._extended.add(e.extends)
        self._text_key[e.id] = new.text_key
        if new.sketch is not None:
            self._sketches[e.id] = new.sketch
        if e.copy_of is None:
            self._exact.setdefault(new.text_key, e.id)
        for key in new.buckets:
            self._buckets.setdefault(key, []).append((self._seq, e.id, e.timestamp))
        self._joined[e.id] = tuple(new.buckets)
        if new.counts:
            self._log.append(e.id)

    def entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        with self._lock:
            return {i: self._entries[i] for i in ids if i in self._entries}

    def exact(self, text_keys: Iterable[int]) -> dict[int, str]:
        with self._lock:
            return {k: self._exact[k] for k in text_keys if k in self._exact}

    def buckets(self, keys: Iterable[BandKey]) -> dict[BandKey, list[tuple[int, str, float]]]:
        with self._lock:
            return {k: list(self._buckets[k]) for k in keys if k in self._buckets}

    def sketches(self, ids: Iterable[str]) -> dict[str, Stored]:
        with self._lock:
            return {i: self._sketches[i] for i in ids if i in self._sketches}

    def extended(self, ids: Iterable[str]) -> set[str]:
        with self._lock:
            return {i for i in ids if i in self._extended}

    def log(self, after: int, limit: int) -> tuple[int, list[str], bool]:
        with self._lock:
            page = self._log[after : after + limit]
            return after + len(page), page, len(page) < limit

    def load_common(self) -> tuple[int, bytes] | None:
        return self._common

    def save_common(self, position: int, table: bytes) -> None:
        self._common = (position, table)

    def delete(self, doc_id: str) -> bool:
        with self._lock:
            entry = self._entries.pop(doc_id, None)
            if entry is None:
                return False
            self._sketches.pop(doc_id, None)
            self._extended.discard(doc_id)
            key = self._text_key.pop(doc_id)
            if self._exact.get(key) == doc_id:
                del self._exact[key]
            for bk in self._joined.pop(doc_id, ()):
                members = [m for m in self._buckets.get(bk, []) if m[1] != doc_id]
                if members:
                    self._buckets[bk] = members
                else:
                    self._buckets.pop(bk, None)
            return True

    def prune(self, before: float) -> int:
        with self._lock:
            old = [i for i, e in self._entries.items() if e.timestamp < before]
            for i in old:
                self.delete(i)
            return len(old)

    def clusters(self, limit: int = 100, offset: int = 0) -> list[tuple[str, int]]:
        with self._lock:
            sizes: dict[str, int] = {}
            for e in self._entries.values():
                sizes[e.cluster] = sizes.get(e.cluster, 0) + 1
        ranked = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[offset : offset + limit]

    def members(self, cluster: str) -> list[Entry]:
        with self._lock:
            found = [e for e in self._entries.values() if e.cluster == cluster]
        return sorted(found, key=lambda e: e.seq)

    def stats(self, *, full: bool = False) -> dict[str, object]:
        with self._lock:
            kept = sum(1 for e in self._entries.values() if e.kept)
            return {
                "store": self.url,
                "documents": len(self._entries),
                "kept": kept,
                "duplicates": len(self._entries) - kept,
                "bucket_entries": sum(map(len, self._buckets.values())),
                "oldest": min((e.timestamp for e in self._entries.values()), default=None),
                "newest": max((e.timestamp for e in self._entries.values()), default=None),
            }
