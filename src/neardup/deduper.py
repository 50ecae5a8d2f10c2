"""The Deduper: decide, document by document, which texts are near-duplicates of which,
remembered in a store (memory, SQLite or Redis), keep one per story, and say why.

``check`` (decide without remembering), ``add`` (remember), ``check_and_add``, and the same
for many documents at once. The rules are the engine's (:mod:`neardup.engine`); a whole
corpus at once is :func:`~neardup.batch.dedup_batch`, with the same decisions.

>>> dd = Deduper()
>>> dd.check_and_add("a", "北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。").is_duplicate
False
>>> d = dd.check_and_add("b", "转载：北京地铁十九号线今天开通运营，全长二十二公里，设车站十座！")
>>> d.is_duplicate, d.duplicate_of, d.cluster, d.measure
(True, 'a', 'a', 'coverage')
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Union, cast

import numpy as np
import numpy.typing as npt

from .batch import BatchResult, dedup_batch
from .engine import (
    CommonShingles,
    Decision,
    DedupConfig,
    KeepPolicy,
    Match,
    Sketch,
    alike,
    best_match,
    bucket_keys,
    counts_as_story,
    evidence,
    hub,
    light,
    make_sketches,
    may_verify_counts,
    shared_text,
    store_fingerprint,
    story_codes,
    text_key,
    to_verify,
)
from .engine import compact as compact_sketch
from .engine.compact import Compact, Forms
from .errors import ConfigError, InputError, StoreError
from .passages import Passage
from .store import BandKey, Entry, LogPage, NewEntry, Store, Stored, open_store
from .times import missing, parse_timestamp, parse_window, timestamp_or_none

if TYPE_CHECKING:
    from .records import Document

__all__ = ["BatchResult", "Decision", "Deduper", "KeepPolicy", "Prepared", "dedup_batch"]

U32 = npt.NDArray[np.uint32]


_SNAPSHOT_EVERY = 20_000  # kept documents between saved common-shingle tables
#: tries of one document whose reads another writer changed each time before a batch gives
#: up with a StoreError (each try that fails means another writer added documents)
_MOST_TRIES = 100
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
    try:  # epoch seconds or ms, ISO 8601, HTTP dates; a table's null (NaN, NaT) none, as
        # dedup_batch reads them
        ts = None if missing(timestamp) else timestamp_or_none(timestamp)
    except InputError as exc:
        raise InputError(f"document {doc_id!r}: {exc}") from None
    return _Item(doc_id, text, title, ts, text_key(text))


DocLike = Union["Document", tuple[str, str], Mapping[str, object]]


def _items(docs: Iterable[DocLike]) -> list[_Item]:
    out = []
    for n, doc in enumerate(docs):
        if isinstance(doc, tuple):
            if len(doc) != 2:
                raise InputError(
                    f"document {n} of the batch: a tuple must be (id, text), not {len(doc)} "
                    "value(s) (a title or timestamp goes in a mapping: "
                    "{'id': ..., 'text': ..., 'title': ..., 'timestamp': ...})"
                )
            out.append(_item(doc[0], doc[1], None, None))
        elif isinstance(doc, Mapping):
            out.append(
                _item(doc.get("id"), doc.get("text"), doc.get("title"), doc.get("timestamp"))
            )
        elif all(hasattr(doc, name) for name in ("id", "text", "title", "timestamp")):
            out.append(_item(doc.id, doc.text, doc.title, doc.timestamp))
        else:
            raise InputError(
                f"document {n} of the batch is {type(doc).__name__}: give an (id, text) tuple, "
                "a mapping with 'id' and 'text', or a neardup.records.Document"
            )
    return out


@dataclass(frozen=True)
class Prepared:
    """Documents validated, and the sketches deciding them needs, made outside the atomic
    section (:meth:`Deduper.prepare`): each one's, by position, unless it is known or an
    exact copy."""

    items: list[_Item]
    sketches: dict[int, Sketch]
    #: what a store writes of each sketch, made already (by position, as ``sketches``)
    forms: dict[int, Forms] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.items)

    @staticmethod
    def join(parts: Sequence[Prepared]) -> Prepared:
        """The documents of ``parts``, in order, as one preparation."""
        if len(parts) == 1:
            return parts[0]
        items: list[_Item] = []
        sketches: dict[int, Sketch] = {}
        forms: dict[int, Forms] = {}
        for p in parts:
            sketches.update((len(items) + i, sk) for i, sk in p.sketches.items())
            forms.update((len(items) + i, f) for i, f in p.forms.items())
            items += p.items
        return Prepared(items, sketches, forms)


def _from_entry(e: Entry) -> Decision:
    return Decision(
        e.id, not e.kept, e.duplicate_of, e.cluster, e.score, e.measure, extends=e.extends
    )


def _count_page(store: Store, common: CommonShingles, page: LogPage, own: set[str]) -> None:
    """Count the stories of a page of ``store``'s log in ``common``, in log order, but those
    in ``own`` (counted already, by this process: taken out of it)."""
    stories = [(i, slots) for i, slots in page.stories if i not in own]
    own.difference_update(i for i, _ in page.stories)
    unread = [i for i, slots in stories if slots is None]
    found = store.sketches(unread) if unread else {}
    for doc_id, slots in stories:  # in log order (deleted documents are skipped)
        if slots is not None:
            common.add(slots)
        elif isinstance(sk := found.get(doc_id), Sketch):
            common.add(story_codes(sk))


def chrome_of(store: Store) -> CommonShingles:
    """The template guard ``store`` holds — its saved table and the stories its log holds
    after it — read without writing anything, with the window it was saved with
    (``neardup store stats`` shows its load)."""
    while True:
        saved = store.load_common()
        blob = saved[1] if saved is not None else b""
        common = CommonShingles(limit=1, window=compact_sketch.guard_window(blob))
        position = 0
        if saved is not None:
            position = saved[0]
            compact_sketch.load_guard(common, blob)
        while True:
            page = store.log_stories(position, _LOG_PAGE)
            if page.behind:  # folded into a newer saved table meanwhile: read that one
                break
            _count_page(store, common, page, set())
            position = page.position
            if page.done:
                return common


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
        self.store.check_config(store_fingerprint(self.config))
        self.store.expire_after(self.window)
        if explain:  # the passages two documents share are read from their texts
            self.store.keep_texts()
        self._common = CommonShingles.of(self.config)
        self._log_pos = 0
        self._saved_pos = 0
        self._loaded = False
        self._has_saved = False  # the store holds a saved table
        self._own: set[str] = set()  # kept ids this process counted, not yet seen in the log
        self._cache: OrderedDict[tuple[str, int], Stored] = OrderedDict()
        self._cache_size = 0 if self.store.in_process else cache_size
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

    def chrome(self) -> CommonShingles:
        """The chrome learned so far (the template guard, up to date with the store): what
        coverage sets aside. Pass it to :func:`neardup.compare` as ``guard``."""
        self._sync()
        return self._common

    def warm(self) -> None:
        """Ready now what the first decision would otherwise wait for, without changing
        any: the chrome learned so far read from the store (its saved table and the log
        after it, as :meth:`chrome` reads them, saving nothing) and the memory of its count
        table given to this process. For a process that decides for a long time (``neardup
        serve`` calls it as it starts): without it, the first document added waits while a
        64 MiB table is cleared page by page, or a saved one read and decoded: up to some
        0.6 s on a virtual machine (``python bench/service_speed.py --first``)."""
        if self.config.common_after <= 0:
            return
        self._sync(save=False)
        self._common.touch()

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
        match = d.match
        if not self.explain or match is None:
            return d
        mine = entry.copy_of or entry.id
        other = self.store.entries([match]).get(match)
        theirs = (other.copy_of or other.id) if other is not None else match
        found = self._sketches([(mine, -1), (theirs, -1)])
        a, b = self._readable_of(mine, found), self._readable_of(theirs, found)
        if a is None or b is None:
            return d  # a compact store that keeps no texts: no passages to show
        counted, chrome = shared_text(a, b, self.config, self._common)
        return dataclasses.replace(d, evidence=counted, chrome=chrome)

    def _readable_of(self, doc_id: str, found: Mapping[str, Stored]) -> Sketch | None:
        """:meth:`_readable` of a stored document, or of the text a compact store keeps of
        one it keeps no sketch of (a copy)."""
        if doc_id in found:
            return self._readable(found[doc_id])
        text = self.store.texts([doc_id]).get(doc_id)
        return None if text is None else self._from_text(text)

    def _readable(self, stored: Stored) -> Sketch | None:
        """A whole sketch to find the passages two documents share: the stored one, or one
        made again from the text a compact store keeps (None: it keeps none)."""
        if isinstance(stored, Sketch):
            return stored
        return self._from_text(stored.text) if stored.text else None

    def _from_text(self, prepared: str) -> Sketch:
        """The whole sketch of a prepared text (as stored: normalized, boilerplate gone)."""
        cfg = dataclasses.replace(self.config, normalize=False, strip_boilerplate=False)
        return make_sketches([prepared], cfg)[0]

    def _view(self, stored: Stored, later: Sketch) -> Sketch:
        """What a later document is verified against: the stored sketch, or the stand-in a
        compact one gives (:func:`~neardup.engine.compact.stand_in`)."""
        if isinstance(stored, Sketch):
            return stored
        return compact_sketch.stand_in(stored, later, self.config)

    def entry(self, doc_id: str) -> Entry | None:
        """What the store keeps of ``doc_id`` (None if it has not been added)."""
        return self.store.entries([doc_id]).get(doc_id)

    def stored_text(self, doc_id: str) -> str | None:
        """The prepared text (normalized, boilerplate stripped) stored for ``doc_id``."""
        entry = self.entry(doc_id)
        if entry is None:
            return None
        source = entry.copy_of or doc_id
        sk = self._sketches([(source, -1)]).get(source)
        if isinstance(sk, Sketch):
            return sk.text
        return self.store.texts([source]).get(source)

    def remove(self, doc_id: str) -> bool:
        """Forget one document (False if it was not there)."""
        for key in [k for k in self._cache if k[0] == doc_id]:
            del self._cache[key]
        return self.store.delete(doc_id)

    def prune(self, before: float | str | datetime | None = None) -> int:
        """Forget documents older than ``before`` (epoch seconds, or any time a record's
        timestamp may be: ``"2024-06-01"``, a ``datetime``; default: now minus the window)."""
        if before is None:
            if self.window is None:
                raise ConfigError("prune needs a window or a time to prune before")
            return self.store.prune(time.time() - self.window)
        try:
            seconds = parse_timestamp(before)
        except InputError as e:
            raise ConfigError(f"prune before: {e}") from None
        return self.store.prune(seconds)

    def clusters(self, limit: int = 100, offset: int = 0) -> list[tuple[str, int]]:
        """(cluster label, size), largest first."""
        for name, value in (("limit", limit), ("offset", offset)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(
                    f"clusters: {name} must be a whole number of 0 or more, got {value!r}"
                )
        return self.store.clusters(limit, offset)

    def cluster(self, label: str) -> list[Decision]:
        """The decisions of one cluster's members, earliest first (empty if unknown)."""
        return [_from_entry(e) for e in self.store.members(label)]

    def stats(self) -> dict[str, object]:
        """What the store holds."""
        return self.store.stats()

    def chrome_load(self) -> float:
        """The stories each slot of the learned-chrome table has counted, on average, as
        this Deduper last read the store (from about 1 it costs recall:
        :data:`~neardup.engine.templates.NOISE`)."""
        return self._common.load_factor()

    # -- the work -------------------------------------------------------------------------

    def _sketches(self, wanted: Iterable[tuple[str, int]]) -> dict[str, Stored]:
        """Sketches by id, from the cache or the store; ``wanted`` pairs (id, seq)."""
        found: dict[str, Stored] = {}
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

    def _load_table(self) -> None:
        """Load the saved common-shingle table (if any) and read the log on from it."""
        saved = self.store.load_common()
        self._log_pos = self._saved_pos = 0
        if saved is None:
            self._common = CommonShingles.of(self.config)
        else:  # over the tables of the guard this process holds: every count is replaced
            self._log_pos = self._saved_pos = saved[0]
            compact_sketch.load_guard(self._common, saved[1])
        self._has_saved = saved is not None
        self._own.clear()  # the table replaced: what this process counted is in it or the log
        self._loaded = True

    def _sync(self, *, save: bool = True) -> None:
        """Bring the common-shingle counts up to date with what every process has kept;
        ``save``: the table may be saved now (not inside a section that is rolled back)."""
        if not self._loaded:
            self._load_table()
        while True:
            page = self.store.log_stories(self._log_pos, _LOG_PAGE, skip=self._own)
            if page.behind:  # folded into a newer saved table: start again from that one
                self._load_table()
                continue
            _count_page(self.store, self._common, page, self._own)
            self._log_pos = page.position
            if page.done:
                break
        self._own.clear()  # anything left was deleted before it reached the log
        due = self._log_pos - self._saved_pos >= _SNAPSHOT_EVERY or self.store.snapshot_due(
            self._log_pos, self._saved_pos
        )
        # a guard with a window saves its table at once in a store that folds its log into
        # its saved table itself (CompactSQLiteStore.reclaim), so that the fold knows the window
        first = self._common.window > 0 and not self._has_saved and self.store.folds_log
        if (
            save
            and self.config.common_after > 0
            and (first or (due and self._log_pos > self._saved_pos))
            and self.store.claim_save(self._log_pos)
        ):
            table = (
                self._common.to_bytes()
                if self.store.indexes_copies
                else compact_sketch.encode_guard(self._common)
            )
            self.store.save_common(self._log_pos, table)
            self._saved_pos = self._log_pos
            self._has_saved = True

    def prepare(self, docs: Iterable[DocLike]) -> Prepared:
        """The documents validated (an :class:`InputError` names the first at fault) and
        the sketches :meth:`check_and_add_many` makes of them before its atomic section:
        for a process that decides what others prepared (:meth:`decide_prepared`; the
        decider of ``neardup serve --workers``)."""
        items = _items(docs)
        sketches = self._sketches_needed(items)
        if not self.store.forms_ahead:
            return Prepared(items, sketches)
        text = self.store.keep_text
        return Prepared(
            items, sketches, {i: Forms(sk).made(text=text) for i, sk in sketches.items()}
        )

    def decide_prepared(self, prepared: Prepared, *, add: bool) -> list[Decision]:
        """:meth:`check_and_add_many` (``add``) or :meth:`check_many` of documents
        :meth:`prepare` gave (on a store of the same configuration; several preparations
        joined by :meth:`Prepared.join`): the same decisions. What was not sketched and
        needs to be is sketched here."""
        return self._run(prepared.items, add=add, sketches=prepared.sketches, forms=prepared.forms)

    def _sketches_needed(self, items: list[_Item]) -> dict[int, Sketch]:
        """Sketches, by position, of what is neither known nor an exact copy (of a stored
        text or of an earlier one of ``items``), made outside the atomic section."""
        if not items:
            return {}
        known, exact, _ = self.store.lookup([it.id for it in items], [it.key for it in items], ())
        first_of_key: dict[int, int] = {}
        first_of_id: set[str] = set()
        need: list[int] = []
        for i, it in enumerate(items):
            fresh = it.id not in known and it.id not in first_of_id
            first_of_id.add(it.id)
            if fresh and it.key not in exact and first_of_key.setdefault(it.key, i) == i:
                need.append(i)
        return dict(
            zip(need, make_sketches([items[i].text for i in need], self.config), strict=True)
        )

    def _run(
        self,
        items: list[_Item],
        *,
        add: bool,
        sketches: dict[int, Sketch] | None = None,
        forms: dict[int, Forms] | None = None,
    ) -> list[Decision]:
        if not items:
            return []
        now = time.time()
        times = [it.timestamp if it.timestamp is not None else now for it in items]
        if sketches is None:
            sketches = self._sketches_needed(items)
        forms = {} if forms is None else dict(forms)
        done: list[Decision] = []
        start = attempt = stuck = 0
        while True:
            buckets_of = {i: bucket_keys(sk) for i, sk in sketches.items() if i >= start}
            asked = (
                {it.id for it in items[start:]},
                {it.key for it in items[start:]},
                {bk for keys in buckets_of.values() for bk in keys},
            )
            self.store.begin(write=add)
            counted: list[tuple[int, U32]] = []  # (entry number, codes) of stories counted
            turns, had_saved = self._common.turns, self._has_saved
            try:
                self.store.expect(*asked)
                self._sync(save=add)
                turns = self._common.turns
                decisions, news, origin = self._decide(
                    items, times, sketches, forms, add, counted, start, buckets_of, asked
                )
                if add:
                    self.store.put(news)
                    applied = self.store.commit()
                else:
                    self.store.rollback()
                    applied = len(news)
            except BaseException:
                # leave the section; the error that ended it is the one to raise (a store
                # that failed in commit() has left it already, and may fail again here)
                with contextlib.suppress(Exception):
                    self.store.rollback()
                self._uncount(counted, turns)
                self._has_saved = had_saved  # a table saved in the section went with it
                raise
            if not add:
                self._uncount(counted, turns)  # a check counts nothing
                return decisions
            self._own.update(
                n.entry.id for n in news[:applied] if n.entry.kept and n.sketch is not None
            )
            if applied == len(news):
                return done + decisions
            # another writer changed what entry `applied` read: keep what was added before it
            # and decide the rest again
            self._uncount(counted, turns, applied)
            stuck = 0 if applied else stuck + 1
            if stuck >= _MOST_TRIES:
                raise StoreError(
                    f"store {self.store.url}: document {items[origin[applied]].id!r} was decided "
                    f"{stuck} times, and each time another writer had changed what it was "
                    "decided from before it could be added; the documents before it were "
                    "added. If no other process writes to this store, this is a bug in "
                    "neardup: please report it"
                )
            stop = origin[applied]
            done += decisions[: stop - start]
            start = stop
            attempt += 1
            self.retries += 1
            time.sleep(min(0.05, 0.001 * attempt) * random.random())

    def _uncount(self, counted: list[tuple[int, U32]], turns: int, since: int = 0) -> None:
        """Take back the stories ``counted`` from entry number ``since`` on; when the guard
        has turned since they were counted (it was at ``turns``), read it from the store
        again instead (a turn cannot be undone)."""
        if self._common.turns != turns:
            self._loaded = False
            return
        for number, codes in counted:
            if number >= since:
                self._common.remove(codes)

    def _to_verify(self, sk: Sketch, cands: dict[str, int], pool: dict[str, Stored]) -> list[str]:
        """The candidates (with their sequence numbers) a document is verified against,
        earliest first: those the prefilter passes on the light signatures, at most
        ``max_verify``, the most alike (:func:`~neardup.engine.to_verify`), as the batch
        run picks them. A compact candidate has no signature: how alike the two are is read
        from their sampled codes (:func:`~neardup.engine.compact.alike`)."""
        keys = sorted(cands, key=cands.__getitem__)
        if not keys:
            return keys
        others = [pool[k] for k in keys]
        n = len(keys)
        likeness = np.zeros(n, dtype=np.float64)
        whole = [j for j, o in enumerate(others) if isinstance(o, Sketch)]
        if whole:
            signatures = np.stack([cast(Sketch, others[j]).signature for j in whole])
            likeness[whole] = alike(light(sk.signature), light(signatures))
        sampled: dict[int, npt.NDArray[np.uint32]] = {}
        for j, o in enumerate(others):
            if isinstance(o, Compact):
                likeness[j] = compact_sketch.alike(sk, o, sampled)
        passed = may_verify_counts(
            likeness,
            np.full(n, len(sk.vocab), dtype=np.int64),
            np.full(n, sk.n_units, dtype=np.int64),
            np.array(
                [o.n_vocab if isinstance(o, Compact) else len(o.vocab) for o in others],
                dtype=np.int64,
            ),
            np.array([o.n_units for o in others], dtype=np.int64),
            self.config,
        )
        rows = np.flatnonzero(passed)
        chosen = to_verify(np.zeros(len(rows), dtype=np.int64), rows, likeness[rows], self.config)
        return [keys[r] for r in rows[chosen].tolist()]

    def _extends_hub(self, found: Match, extended: set[str], entries: dict[str, Entry]) -> bool:
        """:func:`~neardup.engine.hub` for a kept document extending ``found.key``: whether
        it starts a cluster of its own. ``extended``: what the batch's documents extend."""

        def extends_it(k: str) -> bool:
            e = entries.get(k)
            return e is not None and e.kept and e.extends == found.key

        was = found.key in extended or bool(self.store.extended([found.key]))
        return hub(found, was, extends_it)

    def _in_window(self, a: float, b: float) -> bool:
        return self.window is None or abs(a - b) <= self.window

    def _decide(
        self,
        items: list[_Item],
        times: list[float],
        sketches: dict[int, Sketch],
        forms: dict[int, Forms],
        add: bool,
        counted: list[tuple[int, U32]],
        start: int,
        buckets_of: dict[int, list[BandKey]],
        asked: tuple[set[str], set[int], set[BandKey]],
    ) -> tuple[list[Decision], list[NewEntry], list[int]]:
        """Decide ``items[start:]`` in order inside the atomic section: their decisions, the
        entries to add, and the item each entry comes from. ``buckets_of``: the buckets of
        each sketch from ``start`` on; ``asked``: what the section reads first (the ids,
        exact texts and those buckets); ``forms``: what is written of each sketch, where
        made already (those made here join them)."""
        cfg, store, cap = self.config, self.store, self.config.bucket_cap
        known, exact, stored = store.lookup(*asked)
        for members in stored.values():
            del members[cap:]
        # entries and sketches of everything a document of this batch may be compared with
        wanted = {(doc_id, seq) for members in stored.values() for seq, doc_id, _ in members}
        entries = store.entries({m[0] for m in wanted} | set(exact.values()))
        pool = self._sketches(wanted)
        local: dict[BandKey, list[tuple[int, str, float]]] = {}
        extended: set[str] = set()  # documents a kept document of this batch extends
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
                ev: tuple[Passage, ...] = ()
                if self.explain:
                    src = fe.copy_of or first
                    held = pool.get(src) or self._sketches([(src, -1)]).get(src)
                    if held is not None and held.text:
                        ev = evidence(held, held)
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
            order = self._to_verify(sk, cands, pool)
            found = best_match(sk, ((k, self._view(pool[k], sk)) for k in order), cfg, self._common)
            story = counts_as_story(found)
            if found is None:
                d = Decision(it.id, False, None, it.id, 0.0, None)
            else:
                cluster = entries[found.key].cluster
                if not found.is_copy:
                    if story and self._extends_hub(found, extended, entries):
                        cluster = it.id
                    if add:
                        extended.add(found.key)
                ev, chrome = cast(tuple[Passage, ...], ()), cast(tuple[Passage, ...], ())
                theirs = pool[found.key]  # only its text is read: a compact one's text tier
                if self.explain and (isinstance(theirs, Sketch) or theirs.text):
                    ev, chrome = shared_text(sk, theirs, cfg, self._common)
                copy_of = found.key if found.is_copy else None
                extends = None if found.is_copy else found.key
                d = Decision(
                    it.id, found.is_copy, copy_of, cluster, found.score, found.verdict.measure,
                    ev, extends, chrome,
                )  # fmt: skip
            made = forms.get(i)
            if made is None or made.sketch is not sk:
                made = forms[i] = Forms(sk)
            if add and story:
                codes = made.codes
                self._common.add(codes)
                counted.append((len(news), codes))
            decisions.append(d)
            if not add:
                continue
            entry = Entry(
                it.id, 0, t, d.duplicate_of, d.cluster, d.score, d.measure, it.title,
                extends=d.extends,
            )  # fmt: skip
            # a compact store indexes no near-verbatim copy: later ones find its story's kept
            joined = [
                bk
                for bk in (buckets_of[i] if store.indexes(entry) else ())
                if len(stored.get(bk, ())) + len(local.get(bk, ())) < cap
            ]
            seq = (1 << 62) + i  # after everything stored
            for bk in joined:
                local.setdefault(bk, []).append((seq, it.id, t))
            pool[it.id] = sk
            entries[it.id] = entry
            local_exact.setdefault(it.key, it.id)
            decided[it.id] = d
            news.append(NewEntry(entry, it.key, sk, joined, story, made))
            origin.append(i)
        return decisions, news, origin
