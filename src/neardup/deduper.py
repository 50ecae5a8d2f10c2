"""The Deduper: decide, document by document or for a whole corpus, which texts are
near-duplicates of which, keep one per story, and say why.

Streaming: ``check`` (decide without remembering), ``add`` (remember), ``check_and_add``.
Batch: :func:`dedup_batch` sketches the whole corpus at once, finds every candidate pair with
one join on the LSH band keys, verifies them, and links each document to its best earlier
match, exactly as streaming the documents in the same order would.

>>> dd = Deduper()
>>> dd.check_and_add("a", "北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。").is_duplicate
False
>>> d = dd.check_and_add("b", "转载：北京地铁十九号线今天开通运营，全长二十二公里，设车站十座！")
>>> d.is_duplicate, d.duplicate_of, d.cluster, d.measure
(True, 'a', 'a', 'coverage')
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Union, cast

import numpy as np
import numpy.typing as npt
import xxhash

from .engine import (
    CommonShingles,
    DedupConfig,
    Sketch,
    make_sketches,
    may_verify,
    verify,
)
from .errors import ConfigError, InputError
from .hashing import SEED
from .index.lsh import LSHJoin
from .passages import Passage, shared_passages
from .store import BandKey, Entry, NewEntry, Store, bucket_keys, open_store, parse_window
from .store.memory import MemoryStore

if TYPE_CHECKING:
    from .records import Document

__all__ = ["BatchResult", "Decision", "Deduper", "dedup_batch"]

KeepPolicy = Literal["first", "longest", "earliest"]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict on one document.

    ``duplicate_of`` is the earlier document it matched best (None when it is kept);
    ``cluster`` is the id of the document kept for its story; ``score`` and ``measure`` say
    how close the match was; ``evidence`` holds the passages the two share.
    """

    id: str
    is_duplicate: bool
    duplicate_of: str | None
    cluster: str
    score: float
    measure: str | None
    evidence: tuple[Passage, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (evidence as its passages' texts)."""
        return {
            "id": self.id,
            "is_duplicate": self.is_duplicate,
            "duplicate_of": self.duplicate_of,
            "cluster": self.cluster,
            "score": round(self.score, 4),
            "measure": self.measure,
            "evidence": [p.text for p in self.evidence],
        }


def _best(
    sketch: Sketch,
    candidates: Iterable[tuple[str, Sketch]],
    cfg: DedupConfig,
    common: CommonShingles,
) -> tuple[str, float, str] | None:
    """The candidate that verifies with the highest score (the earliest on ties)."""
    best: tuple[str, float, str] | None = None
    for key, other in candidates:
        v = verify(sketch, other, cfg, common)
        if v.is_duplicate and (best is None or v.score > best[1]):
            best = (key, v.score, v.measure)
            if v.score >= 1.0:
                break  # nothing scores higher, and candidates come earliest first
    return best


def _evidence(a: Sketch, b: Sketch) -> tuple[Passage, ...]:
    return tuple(shared_passages(a.text, b.text, min_len=6, limit=10))


def _text_key(text: str) -> int:
    """A stable hash of a text exactly as given, to spot byte-identical copies."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"), SEED)


_SNAPSHOT_EVERY = 20_000  # kept documents between saved common-shingle tables
_LOG_PAGE = 1_000  # log entries read at a time when catching up


@dataclass(frozen=True, slots=True)
class _Item:
    """One document of a batch, validated."""

    id: str
    text: str
    title: str | None
    timestamp: float | None
    key: int


def _item(doc_id: object, text: object, title: object, timestamp: object) -> _Item:
    if not isinstance(doc_id, str) or not doc_id:
        raise InputError(f"document id must be a non-empty str, got {doc_id!r}")
    if not isinstance(text, str):
        raise InputError(f"document {doc_id!r}: text must be a str, not {type(text).__name__}")
    if title is not None and not isinstance(title, str):
        raise InputError(f"document {doc_id!r}: title must be a str, not {type(title).__name__}")
    ts: float | None = None
    if timestamp is not None:
        from .records import parse_timestamp

        try:
            ts = parse_timestamp(timestamp)  # epoch seconds or ms, ISO 8601, HTTP dates
        except InputError as exc:
            raise InputError(f"document {doc_id!r}: {exc}") from None
        if ts != ts:
            raise InputError(f"document {doc_id!r}: timestamp is NaN")
    return _Item(doc_id, text, title, ts, _text_key(text))


DocLike = Union["Document", tuple[str, str], Mapping[str, object]]


def _items(docs: Iterable[DocLike]) -> list[_Item]:
    out = []
    for doc in docs:
        if isinstance(doc, tuple):
            out.append(_item(doc[0], doc[1], None, None))
        elif isinstance(doc, Mapping):
            out.append(
                _item(doc.get("id"), doc.get("text"), doc.get("title"), doc.get("timestamp"))
            )
        else:
            out.append(_item(doc.id, doc.text, doc.title, doc.timestamp))
    return out


def _from_entry(e: Entry) -> Decision:
    return Decision(e.id, not e.kept, e.duplicate_of, e.cluster, e.score, e.measure)


def _fingerprint(cfg: DedupConfig) -> dict[str, object]:
    """The settings a store's sketches depend on."""
    n = cfg.normalizer
    return {
        "format": 1,
        "num_perm": cfg.num_perm,
        "bands_rows": list(cfg.bands_rows),
        "cjk_width": cfg.cjk_width,
        "word_width": cfg.word_width,
        "normalize": [cfg.normalize, n.html, n.width, n.case, n.whitespace, n.script],
        "strip_boilerplate": cfg.strip_boilerplate,
    }


class Deduper:
    """Near-duplicate detection over a stream of documents, remembered in a store.

    ``store`` is a URL (``memory://`` by default, ``sqlite:///crawl.db``,
    ``redis://localhost:6379/0``; see :mod:`neardup.store`) or a store object. Every document
    added is remembered, kept or not, so a later reprint can match any earlier copy of its
    story; its cluster is the id of the first document of that story. A byte-identical copy
    of an earlier text is a duplicate of its first copy at once (score 1.0, measure
    "identical"). An id the store already has returns its earlier decision and changes
    nothing. ``window`` (``"90d"``, seconds) compares a document only with those whose
    timestamp (the time it was added, when it has none) is within that much of its own.

    Several Dedupers, in several processes or machines, can share one SQLite file or one
    Redis: each batch is decided and added atomically, so two copies of one story added at
    the same moment are never both kept. ``cache_size`` sketches of recent candidates are
    kept in this process, so a popular story is not fetched from the store again and again.

    A Deduper is not meant to be called from several threads at once; give each thread its
    own, or serialize the calls.
    """

    def __init__(
        self,
        config: DedupConfig | None = None,
        *,
        store: str | Store = "memory://",
        window: str | float | None = None,
        explain: bool = True,
        namespace: str | None = None,
        cache_size: int = 2_048,
    ) -> None:
        self.config = config if config is not None else DedupConfig()
        self.explain = explain
        self.window = parse_window(window)
        self.store = open_store(store, namespace=namespace) if isinstance(store, str) else store
        self.store.check_config(_fingerprint(self.config))
        self.store.expire_after(self.window)
        self._common = CommonShingles(limit=self.config.common_after)
        self._log_pos = 0
        self._saved_pos = 0
        self._loaded = False
        self._own: set[str] = set()  # kept ids this process counted, not yet seen in the log
        self._cache: OrderedDict[tuple[str, int], Sketch] = OrderedDict()
        self._cache_size = 0 if isinstance(self.store, MemoryStore) else cache_size
        self.retries = 0  # atomic sections started again because another writer interfered

    # -- the public API -------------------------------------------------------------------

    def __len__(self) -> int:
        return int(cast(int, self.store.stats()["documents"]))

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and bool(self.store.entries([doc_id]))

    def __enter__(self) -> Deduper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store (connections, files)."""
        self.store.close()

    def sketch(self, text: str) -> Sketch:
        """The sketch of one text under this Deduper's configuration."""
        if not isinstance(text, str):
            raise InputError(f"text must be a str, not {type(text).__name__}")
        return make_sketches([text], self.config)[0]

    def check(
        self,
        doc_id: str,
        text: str,
        *,
        title: str | None = None,
        timestamp: float | str | None = None,
    ) -> Decision:
        """Decide whether ``text`` duplicates a document already added, without adding it.

        An id already added returns its earlier decision.
        """
        return self._run([_item(doc_id, text, title, timestamp)], add=False)[0]

    def check_and_add(
        self,
        doc_id: str,
        text: str,
        *,
        title: str | None = None,
        timestamp: float | str | None = None,
    ) -> Decision:
        """Decide, then remember the document so later ones are compared with it (atomic)."""
        return self._run([_item(doc_id, text, title, timestamp)], add=True)[0]

    def add(
        self,
        doc_id: str,
        text: str,
        *,
        title: str | None = None,
        timestamp: float | str | None = None,
    ) -> Decision:
        """Remember a document (deciding it first); an id already added changes nothing."""
        return self.check_and_add(doc_id, text, title=title, timestamp=timestamp)

    def check_many(self, docs: Iterable[DocLike]) -> list[Decision]:
        """:meth:`check` for each document, each against the store only."""
        return self._run(_items(docs), add=False)

    def check_and_add_many(self, docs: Iterable[DocLike]) -> list[Decision]:
        """:meth:`check_and_add` for many documents in one atomic section (one round trip
        to the store for the lot): the same decisions as adding them one by one, in order.

        A document is a :class:`~neardup.records.Document`, an ``(id, text)`` pair, or a
        mapping with ``id``, ``text`` and optional ``title`` and ``timestamp``.
        """
        return self._run(_items(docs), add=True)

    def decision(self, doc_id: str) -> Decision:
        """The decision made for ``doc_id`` when it was added (with its evidence when this
        Deduper explains and both documents are still stored)."""
        entry = self.store.entries([doc_id]).get(doc_id)
        if entry is None:
            raise KeyError(f"document {doc_id!r} has not been added")
        return self._explained(entry)

    def _explained(self, entry: Entry) -> Decision:
        """The decision an entry records, its evidence recomputed from the stored sketches."""
        d = _from_entry(entry)
        if not self.explain or d.duplicate_of is None:
            return d
        mine = entry.copy_of or entry.id
        other = self.store.entries([d.duplicate_of]).get(d.duplicate_of)
        theirs = (other.copy_of or other.id) if other is not None else d.duplicate_of
        found = self._sketches([(mine, -1), (theirs, -1)])
        if mine not in found or theirs not in found:
            return d
        return dataclasses.replace(d, evidence=_evidence(found[mine], found[theirs]))

    def entry(self, doc_id: str) -> Entry | None:
        """What the store keeps of ``doc_id`` (None if it has not been added)."""
        return self.store.entries([doc_id]).get(doc_id)

    def stored_text(self, doc_id: str) -> str | None:
        """The prepared text (normalized, boilerplate stripped) stored for ``doc_id``."""
        entry = self.entry(doc_id)
        if entry is None:
            return None
        sk = self._sketches([(entry.copy_of or doc_id, -1)]).get(entry.copy_of or doc_id)
        return None if sk is None else sk.text

    def remove(self, doc_id: str) -> bool:
        """Forget one document (False if it was not there)."""
        for key in [k for k in self._cache if k[0] == doc_id]:
            del self._cache[key]
        return self.store.delete(doc_id)

    def prune(self, before: float | None = None) -> int:
        """Forget documents older than ``before`` (default: now minus the window)."""
        if before is None:
            if self.window is None:
                raise ConfigError("prune needs a window or a time to prune before")
            before = time.time() - self.window
        return self.store.prune(before)

    def clusters(self, limit: int = 100, offset: int = 0) -> list[tuple[str, int]]:
        """(cluster label, size), largest first."""
        return self.store.clusters(limit, offset)

    def cluster(self, label: str) -> list[Decision]:
        """The decisions of one cluster's members, earliest first (empty if unknown)."""
        return [_from_entry(e) for e in self.store.members(label)]

    def stats(self) -> dict[str, object]:
        """What the store holds."""
        return self.store.stats()

    # -- the work -------------------------------------------------------------------------

    def _sketches(self, wanted: Iterable[tuple[str, int]]) -> dict[str, Sketch]:
        """Sketches by id, from the cache or the store; ``wanted`` pairs (id, seq)."""
        found: dict[str, Sketch] = {}
        missing: dict[str, int] = {}
        for doc_id, seq in wanted:
            sk = self._cache.get((doc_id, seq)) if seq >= 0 else None
            if sk is not None:
                self._cache.move_to_end((doc_id, seq))
                found[doc_id] = sk
            else:
                missing[doc_id] = seq
        if missing:
            loaded = self.store.sketches(missing)
            found.update(loaded)
            if self._cache_size:
                for doc_id, sk in loaded.items():
                    if missing[doc_id] >= 0:
                        self._cache[(doc_id, missing[doc_id])] = sk
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return found

    def _sync(self) -> None:
        """Bring the common-shingle counts up to date with what every process has kept."""
        if not self._loaded:
            saved = self.store.load_common()
            if saved is not None:
                self._log_pos = self._saved_pos = saved[0]
                self._common.load(saved[1])
            self._loaded = True
        while True:
            pos, kept, done = self.store.log(self._log_pos, _LOG_PAGE)
            others = [i for i in kept if i not in self._own]
            self._own.difference_update(kept)
            if others:
                found = self.store.sketches(others)
                for doc_id in others:  # in log order (deleted documents are skipped)
                    if doc_id in found:
                        self._common.add(found[doc_id].vocab)
            self._log_pos = pos
            if done:
                break
        self._own.clear()  # anything left was deleted before it reached the log
        if self.config.common_after > 0 and self._log_pos - self._saved_pos >= _SNAPSHOT_EVERY:
            self.store.save_common(self._log_pos, self._common.to_bytes())
            self._saved_pos = self._log_pos

    def _run(self, items: list[_Item], *, add: bool) -> list[Decision]:
        if not items:
            return []
        now = time.time()
        times = [it.timestamp if it.timestamp is not None else now for it in items]
        ids = [it.id for it in items]
        keys = [it.key for it in items]
        # sketch, outside the atomic section, what is neither known nor an exact copy
        known = self.store.entries(ids)
        exact = self.store.exact(keys)
        first_of_key: dict[int, int] = {}
        first_of_id: set[str] = set()
        need: list[int] = []
        for i, it in enumerate(items):
            fresh = it.id not in known and it.id not in first_of_id
            first_of_id.add(it.id)
            if fresh and it.key not in exact and first_of_key.setdefault(it.key, i) == i:
                need.append(i)
        sketches = dict(
            zip(need, make_sketches([items[i].text for i in need], self.config), strict=True)
        )
        done: list[Decision] = []
        start = attempt = 0
        while True:
            self.store.begin(write=add)
            counted: list[tuple[int, Sketch]] = []  # (entry number, sketch) of kept documents
            try:
                self._sync()
                decisions, news, origin = self._decide(items, times, sketches, add, counted, start)
                if add:
                    self.store.put(news)
                    applied = self.store.commit()
                else:
                    self.store.rollback()
                    applied = len(news)
            except BaseException:
                self.store.rollback()
                for _, sk in counted:
                    self._common.remove(sk.vocab)
                raise
            if not add:
                for _, sk in counted:  # a check counts nothing
                    self._common.remove(sk.vocab)
                return decisions
            self._own.update(
                n.entry.id for n in news[:applied] if n.entry.kept and n.sketch is not None
            )
            if applied == len(news):
                return done + decisions
            # another writer changed what entry `applied` read: keep what was added before it
            # and decide the rest again
            for number, sk in counted:
                if number >= applied:
                    self._common.remove(sk.vocab)
            stop = origin[applied]
            done += decisions[: stop - start]
            start = stop
            attempt += 1
            self.retries += 1
            time.sleep(min(0.05, 0.001 * attempt) * random.random())

    def _in_window(self, a: float, b: float) -> bool:
        return self.window is None or abs(a - b) <= self.window

    def _decide(
        self,
        items: list[_Item],
        times: list[float],
        sketches: dict[int, Sketch],
        add: bool,
        counted: list[tuple[int, Sketch]],
        start: int = 0,
    ) -> tuple[list[Decision], list[NewEntry], list[int]]:
        """Decide ``items[start:]`` in order inside the atomic section: their decisions, the
        entries to add, and the item each entry comes from."""
        cfg, store, cap = self.config, self.store, self.config.bucket_cap
        known = store.entries({it.id for it in items[start:]})
        exact = store.exact({it.key for it in items[start:]})
        buckets_of = {i: bucket_keys(sk) for i, sk in sketches.items() if i >= start}
        stored = store.buckets({bk for keys in buckets_of.values() for bk in keys})
        for members in stored.values():
            del members[cap:]
        # entries and sketches of everything a document of this batch may be compared with
        wanted = {(doc_id, seq) for members in stored.values() for seq, doc_id, _ in members}
        entries = store.entries({m[0] for m in wanted} | set(exact.values()))
        pool = self._sketches(wanted)
        local: dict[BandKey, list[tuple[int, str, float]]] = {}
        decided: dict[str, Decision] = {}
        local_exact: dict[int, str] = {}
        decisions: list[Decision] = []
        news: list[NewEntry] = []
        origin: list[int] = []
        for i in range(start, len(items)):
            it, t = items[i], times[i]
            if it.id in decided:
                decisions.append(decided[it.id])
                continue
            if it.id in known:
                decided[it.id] = self._explained(known[it.id])
                decisions.append(decided[it.id])
                continue
            # an exact copy of an earlier text (within the window)
            first = exact.get(it.key)
            if (
                first is None
                or first not in entries
                or not self._in_window(entries[first].timestamp, t)
            ):
                first = local_exact.get(it.key) if add else None
                if first is not None and not self._in_window(entries[first].timestamp, t):
                    first = None
            if first is not None:
                fe = entries[first]
                sk = pool.get(fe.copy_of or first) if self.explain else None
                if sk is None and self.explain:
                    sk = self._sketches([(fe.copy_of or first, -1)]).get(fe.copy_of or first)
                ev = _evidence(sk, sk) if sk is not None else ()
                d = Decision(it.id, True, first, fe.cluster, 1.0, "identical", ev)
                entry = Entry(it.id, 0, t, first, fe.cluster, 1.0, "identical", it.title, first)
                if add:
                    news.append(NewEntry(entry, it.key, None, ()))
                    origin.append(i)
                    entries[it.id] = entry
                    decided[it.id] = d
                decisions.append(d)
                continue
            sk = sketches.get(i)
            if sk is None:  # its exact twin went away since the first look
                sk = sketches[i] = make_sketches([it.text], cfg)[0]
                buckets_of[i] = bucket_keys(sk)
                more = store.buckets(buckets_of[i])
                for bk, members in more.items():
                    stored[bk] = members[:cap]
                extra = {(doc_id, seq) for members in more.values() for seq, doc_id, _ in members}
                entries.update(store.entries({m[0] for m in extra}))
                pool.update(self._sketches(extra))
            cands: dict[str, int] = {}
            for bk in buckets_of[i]:
                for seq, doc_id, ts in (*stored.get(bk, ()), *local.get(bk, ())):
                    if doc_id not in cands and self._in_window(ts, t) and doc_id in pool:
                        cands[doc_id] = seq
            order = sorted(cands, key=cands.__getitem__)
            best = _best(sk, ((k, pool[k]) for k in order), cfg, self._common)
            if best is None:
                d = Decision(it.id, False, None, it.id, 0.0, None)
                if add:
                    self._common.add(sk.vocab)
                    counted.append((len(news), sk))
            else:
                key, score, measure = best
                cluster = entries[key].cluster
                ev = _evidence(sk, pool[key]) if self.explain else ()
                d = Decision(it.id, True, key, cluster, score, measure, ev)
            decisions.append(d)
            if not add:
                continue
            joined = [
                bk for bk in buckets_of[i] if len(stored.get(bk, ())) + len(local.get(bk, ())) < cap
            ]
            entry = Entry(it.id, 0, t, d.duplicate_of, d.cluster, d.score, d.measure, it.title)
            seq = (1 << 62) + i  # after everything stored
            for bk in joined:
                local.setdefault(bk, []).append((seq, it.id, t))
            pool[it.id] = sk
            entries[it.id] = entry
            local_exact.setdefault(it.key, it.id)
            decided[it.id] = d
            news.append(NewEntry(entry, it.key, sk, joined))
            origin.append(i)
        return decisions, news, origin


@dataclass(frozen=True)
class BatchResult:
    """Decisions for a whole corpus, in input order, and what the run found."""

    decisions: list[Decision]
    candidate_pairs: int
    verified_pairs: int
    timings: dict[str, float] = field(default_factory=dict)


def dedup_batch(
    ids: Sequence[str],
    texts: Sequence[str],
    *,
    config: DedupConfig | None = None,
    keep: KeepPolicy = "first",
    timestamps: Sequence[float | None] | None = None,
    explain: bool = False,
    chunk: int = 2000,
    workers: int | None = None,
) -> BatchResult:
    """Deduplicate a corpus at once: the same decisions as streaming it through a Deduper.

    ``keep`` chooses which document of each cluster is kept and names the cluster: the
    first seen (the streaming rule), the longest text, or the earliest timestamp.
    ``workers`` processes sketch the documents (default: one per CPU, up to 4, once the texts
    hold two million characters or more); the decisions do not depend on it. ``chunk`` is
    the most documents a worker sketches at a time.
    """
    cfg = config if config is not None else DedupConfig()
    if len(ids) != len(texts):
        raise ConfigError(f"{len(ids)} ids for {len(texts)} texts")
    if keep not in ("first", "longest", "earliest"):
        raise ConfigError(f"keep must be 'first', 'longest' or 'earliest', got {keep!r}")
    if len(set(ids)) != len(ids):
        raise InputError("ids must be unique within a batch")
    with _BatchRun(cfg, chunk=chunk, workers=workers, chars=sum(map(len, texts))) as run:
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
        return run.finish(keep=keep, timestamps=timestamps, explain=explain)


class _BatchRun:
    """:func:`dedup_batch` fed one document at a time, so that reading, sketching and
    deciding overlap (the CLI feeds it as it reads).

    Byte-identical copies of an earlier text take its sketch and are matched to it at once.
    The other documents (originals) are sketched in chunks, by worker processes when it
    pays; each chunk that comes back is joined on its band keys with every earlier document
    (:class:`~neardup.index.lsh.LSHJoin`: lsh_join block by block), and every document
    before the first original not yet sketched is decided, in input order, as streaming
    would. A decision depends only on earlier documents, so the timing changes nothing.
    """

    #: the first chunks are this small, so that the workers start soon
    MIN_CHUNK = 100
    #: without the total size, worker processes start once this many characters came in
    STREAM_POOL_AT = 300_000

    def __init__(
        self, cfg: DedupConfig, *, chunk: int = 2000, workers: int | None, chars: int | None
    ) -> None:
        if workers is not None and workers < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        if chunk < 1:
            raise ConfigError(f"chunk must be at least 1, got {chunk}")
        self.cfg, self.chunk = cfg, chunk
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.copy_of: list[int] = []  # the first copy of the same text, or -1
        self.sketches: list[Sketch] = []
        self.parent: list[int] = []
        self.score: list[float] = []
        self.measure: list[str | None] = []
        self._first_copy: dict[int, int] = {}
        self._pending: list[int] = []  # originals not yet sent to be sketched
        self._sent: deque[tuple[list[int], Any]] = deque()  # (originals, future or sketches)
        self._sent_docs = 0
        self._workers = workers
        self._chars_seen = 0
        # workers=None: processes when the texts hold two million characters (they pay from
        # there) and ``chars``, the total, says so; without a total, once STREAM_POOL_AT
        # characters came in (the input goes on, likely: it is being read)
        self._auto_at = self.STREAM_POOL_AT if chars is None else (0 if chars >= 2_000_000 else -1)
        self._pool: Any = None
        self._common = CommonShingles(limit=cfg.common_after)
        self._join = LSHJoin(bucket_cap=cfg.bucket_cap)
        self._next = 0  # the next document to decide
        self._pairs = 0
        # the live documents sketched so far (positions increasing), for the prefilter
        self._known = 0
        self._positions = np.zeros(0, dtype=np.int64)
        self._sigs = np.zeros((0, cfg.num_perm), dtype=np.uint64)
        self._vocab_sizes = np.zeros(0, dtype=np.int64)
        self._units = np.zeros(0, dtype=np.int64)
        self.timings = {"sketch": 0.0, "candidates": 0.0, "verify": 0.0}

    def __enter__(self) -> _BatchRun:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def add(self, doc_id: str, text: str) -> None:
        """Take the next document; decide those whose sketches are all in."""
        i = len(self.ids)
        self.ids.append(doc_id)
        self.texts.append(text)
        self.parent.append(-1)
        self.score.append(0.0)
        self.measure.append(None)
        j = self._first_copy.setdefault(_text_key(text), i)
        self.copy_of.append(-1 if j == i else j)
        if j == i:
            self._pending.append(i)
            self._chars_seen += len(text)
            if len(self._pending) >= self._chunk_size():
                self._send()
        while self._sent and self._ready(self._sent[0][1]):
            self._receive()

    def finish(
        self,
        *,
        keep: KeepPolicy = "first",
        timestamps: Sequence[float | None] | None = None,
        explain: bool = False,
    ) -> BatchResult:
        """Decide the rest, form the clusters, and shut the workers down."""
        if keep not in ("first", "longest", "earliest"):
            raise ConfigError(f"keep must be 'first', 'longest' or 'earliest', got {keep!r}")
        if self._pending:
            self._send()
        while self._sent:
            self._receive()
        self._decide(len(self.ids))
        self.__exit__()
        t0 = time.perf_counter()
        ids, sketches, parent = self.ids, self.sketches, self.parent
        root = list(range(len(ids)))
        for i, p in enumerate(parent):  # parents come earlier, so one pass resolves every root
            if p >= 0:
                root[i] = root[p]
        label = _labels(np.array(root, dtype=np.int64), keep, self.texts, timestamps)
        decisions = []
        for i, doc_id in enumerate(ids):
            kept = label[root[i]]
            if kept == i:
                decisions.append(Decision(doc_id, False, None, doc_id, 0.0, None))
                continue
            if parent[i] >= 0:
                dup_of, s, m = parent[i], self.score[i], self.measure[i]
            else:  # the first of a cluster whose "longest"/"earliest" document is kept instead
                v = verify(sketches[i], sketches[kept], self.cfg)
                dup_of, s, m = kept, v.score, v.measure
            ev = _evidence(sketches[i], sketches[dup_of]) if explain else ()
            decisions.append(Decision(doc_id, True, ids[dup_of], ids[kept], s, m, ev))
        self.timings["clusters"] = time.perf_counter() - t0
        verified = sum(1 for p in parent if p >= 0)
        return BatchResult(decisions, self._pairs, verified, dict(self.timings))

    def _chunk_size(self) -> int:
        """A quarter of what was sent so far, from MIN_CHUNK up to ``chunk``: the workers
        start soon, and the chunks stay few."""
        return max(1, min(self.chunk, max(self.MIN_CHUNK, self._sent_docs // 4)))

    def _send(self) -> None:
        """Sketch the pending originals: on the workers, or here."""
        block, self._pending = self._pending, []
        self._sent_docs += len(block)
        texts = [self.texts[i] for i in block]
        if self._pool is None and self._wants_pool():
            import multiprocessing
            import os
            from concurrent.futures import ProcessPoolExecutor

            n = self._workers or min(4, os.cpu_count() or 1)
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            self._pool = ProcessPoolExecutor(max_workers=n, mp_context=context)
        if self._pool is not None:
            self._sent.append((block, self._pool.submit(_sketch_packed, texts, self.cfg)))
            return
        t0 = time.perf_counter()
        self._sent.append((block, make_sketches(texts, self.cfg)))
        self.timings["sketch"] += time.perf_counter() - t0

    def _wants_pool(self) -> bool:
        if self._workers is not None:
            return self._workers > 1
        import os

        return 0 <= self._auto_at <= self._chars_seen and (os.cpu_count() or 1) > 1

    @staticmethod
    def _ready(item: Any) -> bool:
        return isinstance(item, list) or bool(item.done())

    def _receive(self) -> None:
        """Take the oldest sketched chunk, join it, and decide what it lets us decide."""
        block, item = self._sent.popleft()
        t0 = time.perf_counter()
        part: list[Sketch] = item if isinstance(item, list) else _unpack(item.result())
        t1 = time.perf_counter()
        self.timings["sketch"] += t1 - t0
        frontier = self._frontier()
        self._grow(frontier, part[0])
        for i, sk in zip(block, part, strict=True):
            self.sketches[i] = sk
        live = [i for i in block if not self.sketches[i].is_empty]
        bands = [self.sketches[i].bands for i in live]
        keys = np.stack(bands) if bands else np.zeros((0, self.cfg.bands_rows[0]), np.uint64)
        pairs = self._join.extend(keys, np.array(live, dtype=np.int64))
        self._pairs += len(pairs)
        self._remember(live)
        t2 = time.perf_counter()
        self.timings["candidates"] += t2 - t1
        if len(pairs):  # the MinHash prefilter on every pair at once; verify repeats it
            pairs = pairs[
                may_verify(self._figures(pairs[:, 1]), self._figures(pairs[:, 0]), self.cfg)
            ]
        self.timings["verify"] += time.perf_counter() - t2
        self._decide(frontier, pairs)

    def _grow(self, frontier: int, filler: Sketch | None) -> None:
        """Make room in ``sketches`` for every document before ``frontier``: the slots are
        filled with ``filler`` until the chunk's sketches, or a copy's original, are set."""
        if filler is not None and len(self.sketches) < frontier:
            self.sketches.extend([filler] * (frontier - len(self.sketches)))

    def _remember(self, live: list[int]) -> None:
        """Keep the signatures, vocabulary sizes and units of new documents in arrays, for
        the prefilter over all of a chunk's pairs at once."""
        n, more = self._known, len(live)
        if n + more > len(self._positions):
            size = max(2 * len(self._positions), n + more, 1024)
            self._positions = np.resize(self._positions, size)
            self._sigs = np.resize(self._sigs, (size, self.cfg.num_perm))
            self._vocab_sizes = np.resize(self._vocab_sizes, size)
            self._units = np.resize(self._units, size)
        sks = [self.sketches[i] for i in live]
        self._positions[n : n + more] = live
        if more:
            self._sigs[n : n + more] = np.stack([sk.signature for sk in sks])
        self._vocab_sizes[n : n + more] = [len(sk.vocab) for sk in sks]
        self._units[n : n + more] = [sk.n_units for sk in sks]
        self._known = n + more

    def _figures(self, positions: I64) -> tuple[np.ndarray, I64, I64]:
        """Signatures, vocabulary sizes and units of documents already remembered."""
        rows = np.searchsorted(self._positions[: self._known], positions)
        return self._sigs[rows], self._vocab_sizes[rows], self._units[rows]

    def _frontier(self) -> int:
        """The first document that cannot be decided yet: the first original not sketched."""
        if self._sent:
            return self._sent[0][0][0]
        if self._pending:
            return self._pending[0]
        return len(self.ids)

    def _decide(self, frontier: int, pairs: I64 | None = None) -> None:
        """Decide documents ``_next`` .. ``frontier - 1``, whose candidate pairs (sorted by
        (later, earlier)) are ``pairs``: they came with the chunk that holds them."""
        t0 = time.perf_counter()
        nxt, cfg, common, sketches = self._next, self.cfg, self._common, self.sketches
        self._grow(frontier, sketches[0] if sketches else None)
        if pairs is None:
            pairs = np.zeros((0, 2), dtype=np.int64)
        # earlier partners of each document, in index order
        bounds = np.searchsorted(pairs[:, 1], np.arange(nxt, frontier + 1)).tolist()
        earlier = pairs[:, 0]
        for i in range(nxt, frontier):
            c = self.copy_of[i]
            if c >= 0:
                sketches[i] = sketches[c]
                self.parent[i], self.score[i], self.measure[i] = c, 1.0, "identical"
                continue
            lo, hi = bounds[i - nxt], bounds[i - nxt + 1]
            best = None
            if lo < hi:
                pool = ((str(j), sketches[j]) for j in earlier[lo:hi].tolist())
                best = _best(sketches[i], pool, cfg, common)
            if best is None:
                common.add(sketches[i].vocab)
            else:
                self.parent[i], self.score[i], self.measure[i] = int(best[0]), best[1], best[2]
        self._next = max(nxt, frontier)
        self.timings["verify"] += time.perf_counter() - t0


class _Packed(NamedTuple):
    """A chunk's sketches as a few flat arrays: far quicker to pickle than Sketch objects."""

    texts: list[str]
    n_units: list[int]
    signatures: np.ndarray
    bands: np.ndarray
    shingle_counts: np.ndarray
    shingles: np.ndarray
    vocab_counts: np.ndarray
    vocabs: np.ndarray
    numbers: list[frozenset[str]]
    vocab_indexes: np.ndarray  # one per shingle, split like ``shingles``


def _sketch_packed(texts: list[str], cfg: DedupConfig) -> _Packed:
    """Sketch a chunk (in a worker) and pack the sketches for the way back."""
    sks = make_sketches(texts, cfg)
    return _Packed(
        [s.text for s in sks],
        [s.n_units for s in sks],
        np.stack([s.signature for s in sks]),
        np.stack([s.bands for s in sks]),
        np.array([len(s.shingles) for s in sks], dtype=np.int64),
        np.concatenate([s.shingles for s in sks]),
        np.array([len(s.vocab) for s in sks], dtype=np.int64),
        np.concatenate([s.vocab for s in sks]),
        [s.numbers for s in sks],
        np.concatenate([cast(np.ndarray, s.vocab_index) for s in sks]),  # make_sketches sets it
    )


def _unpack(p: _Packed) -> list[Sketch]:
    """The sketches of a packed chunk (their arrays are views into the packed ones)."""
    shingles = np.split(p.shingles, np.cumsum(p.shingle_counts)[:-1])
    indexes = np.split(p.vocab_indexes, np.cumsum(p.shingle_counts)[:-1])
    vocabs = np.split(p.vocabs, np.cumsum(p.vocab_counts)[:-1])
    return [
        Sketch(
            text=p.texts[i],
            shingles=shingles[i],
            n_units=p.n_units[i],
            signature=p.signatures[i],
            bands=p.bands[i],
            vocab=vocabs[i],
            numbers=p.numbers[i],
            vocab_index=indexes[i],
        )
        for i in range(len(p.texts))
    ]


def _labels(
    root: np.ndarray,
    keep: KeepPolicy,
    texts: Sequence[str],
    timestamps: Sequence[float | None] | None,
) -> dict[int, int]:
    """For each cluster root, the index of the document kept for it."""
    if keep == "first":
        return {int(r): int(r) for r in np.unique(root)}
    best: dict[int, int] = {}
    for i, r in enumerate(root.tolist()):
        j = best.get(r)
        if j is None:
            best[r] = i
            continue
        if keep == "longest":
            if len(texts[i]) > len(texts[j]):
                best[r] = i
        else:
            ti = timestamps[i] if timestamps is not None else None
            tj = timestamps[j] if timestamps is not None else None
            if ti is not None and (tj is None or ti < tj):
                best[r] = i
    return best
