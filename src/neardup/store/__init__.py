"""Where a Deduper keeps what later documents are compared with: memory, SQLite or Redis.

A store is chosen by URL (:func:`open_store`):

- ``memory://`` — a dict in this process, gone when it ends (the default);
- ``sqlite:///path/to/file.db`` — one file, shared by every process on the machine (WAL,
  immediate transactions), crash-safe;
- ``redis://host:port/db?namespace=crawl`` — shared by a fleet of processes and machines
  (optimistic transactions on the band keys a batch touches); keys live under the namespace.

Every backend keeps the same things for each document added: an :class:`Entry` (its id, an
increasing sequence number, timestamp, decision, title), its sketch (the shingle codes,
MinHash signature, band keys and prepared text, for verification and evidence), its LSH
buckets, the hash of its exact text, and, for kept documents, a log entry from which every
process replays the common-shingle counts. Not the user's full records.

The :class:`~neardup.deduper.Deduper` drives a store through one atomic section per batch:
:meth:`Store.begin`, reads, :meth:`Store.put`, :meth:`Store.commit` (which applies the batch up to
the first document whose reads another process changed meanwhile; the Deduper decides the
rest again). A section's first reads — the log of stories, then :meth:`Store.lookup` of the
batch's ids, exact texts and buckets, said at the start by :meth:`Store.expect` — are one
round trip on a compact Redis namespace, and the write another.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import parse_qs, parse_qsl, urlsplit, urlunsplit

import numpy as np
import numpy.typing as npt

from ..engine import BandKey, Sketch, bucket_keys
from ..engine.compact import Compact, Forms
from ..errors import ConfigError, StoreError
from ..times import parse_window

__all__ = [
    "FORMAT",
    "LOG_BYTES",
    "LOG_SHARE",
    "NO_SLOTS",
    "RUN_AGAIN",
    "SAVE_CLAIM",
    "VERBATIM",
    "BandKey",
    "Compact",
    "Entry",
    "LogPage",
    "NewEntry",
    "Store",
    "StoreLost",
    "Stored",
    "bucket_keys",
    "format_found",
    "open_store",
    "opening_failure",
    "parse_window",
    "redacted",
]


#: What a store's failure message ends with: a batch is committed whole or not at all, and an
#: id already stored returns its decision, so running the same job again finishes it.
RUN_AGAIN = (
    "run again to finish: every batch committed before is intact, and the documents already "
    "stored return their decisions"
)


#: The newest store format this neardup writes, and the newest it reads. Every store it
#: opens for writing is marked with it (SQLite: meta ``version``; Redis: ``NS:version``); a
#: store marked with a newer one is refused (:func:`format_found`), so a process of an older
#: neardup never misreads what a newer one wrote (a count table, the log's slots, samples in
#: an encoding it does not know). 1: a store written before the mark (read as ever); 2: the
#: first marked (the Rice-coded slots, count table and sample heads of 2026-12-04). Raise it
#: with an encoding the previous version cannot read, and keep reading what came before.
FORMAT = 2


def format_found(value: object, store: str) -> int:
    """The format a store's mark ``value`` names (None: unmarked, format 1): a ConfigError
    for a store of a newer neardup, a StoreError for a mark that is not a format.

    >>> format_found(None, "x"), format_found(b"2", "x")
    (1, 2)
    """
    if value is None:
        return 1
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
    if not text.isdigit() or int(text) < 1:
        raise StoreError(
            f"store {store} is damaged: its format mark is {text[:40]!r}, not a version "
            "number; restore it from a backup, or rebuild it (move it aside and add the "
            "documents again)"
        )
    if int(text) > FORMAT:
        raise ConfigError(
            f"store {store} was written by a newer neardup (store format {text}; this one "
            f"reads formats 1 to {FORMAT}): upgrade neardup in every process that opens it "
            "(pip install -U neardup), or keep this version and rebuild the store with it "
            "(move it aside and add the documents again)"
        )
    return int(text)


@dataclass(frozen=True, slots=True)
class Entry:
    """What a store keeps of one document besides its sketch.

    ``seq`` orders documents by when they were added (earliest first); ``copy_of`` names the
    document whose exact text this one repeats (it then has no sketch of its own);
    ``extends``, for a kept document of a story seen before, the document it extends.
    """

    id: str
    seq: int
    timestamp: float
    duplicate_of: str | None
    cluster: str
    score: float
    measure: str | None
    title: str | None = None
    copy_of: str | None = None
    extends: str | None = None

    @property
    def kept(self) -> bool:
        return self.duplicate_of is None


@dataclass(frozen=True, slots=True)
class NewEntry:
    """A document to add: its entry (``seq`` is assigned by the store), the hash of its exact
    text, its sketch (None for an exact copy), the buckets it joins, and whether it counts as
    one more story for the template guard (``story``; by default when it is kept and has a
    sketch) — the log every process replays lists those."""

    entry: Entry
    text_key: int
    sketch: Sketch | None
    buckets: Sequence[BandKey] = field(default_factory=tuple)
    story: bool | None = None
    #: what is written of its sketch, made already (see :class:`~neardup.engine.compact.Forms`)
    made: Forms | None = None

    @property
    def forms(self) -> Forms | None:
        """What is written of its sketch (None: an exact copy, which has none)."""
        if self.made is not None or self.sketch is None:
            return self.made
        return Forms(self.sketch)

    @property
    def counts(self) -> bool:
        """Whether the document goes into the log of stories."""
        if self.story is not None:
            return self.story and self.sketch is not None
        return self.entry.kept and self.sketch is not None


#: A copy of at least this share of its own text (its score) is not indexed by a compact store.
VERBATIM = 0.98

#: What a store gives back of a document for verification: its whole sketch, or its compact
#: form (:mod:`neardup.engine.compact`), which the Deduper reads through a stand-in.
Stored = Sketch | Compact


#: A compact store folds its log of stories into its saved count table once the log holds
#: LOG_BYTES (some 500 stories of hkcnews articles) or a LOG_SHARE-th of the saved table's
#: bytes, whichever is more: the log holds half that on average, so the fewer, the smaller
#: the store, and the more often a fold rewrites the table.
LOG_BYTES = 1_400_000
LOG_SHARE = 3
#: seconds a process's claim to save the common-shingle table holds (see
#: :meth:`Store.claim_save`): a process that stopped while saving delays the next save by
#: as much at most
SAVE_CLAIM = 30
#: the slots :meth:`Store.log_stories` gives a story it was told to skip (none, unread)
NO_SLOTS = np.zeros(0, dtype=np.uint32)
NO_SLOTS.flags.writeable = False


class LogPage(NamedTuple):
    """A page of the log of stories (:meth:`Store.log_stories`)."""

    #: the log position after the page
    position: int
    #: each story's id and the codes of its template-guard slots (None: read them from its
    #: stored sketch, which holds them all)
    stories: Sequence[tuple[str, npt.NDArray[np.uint32] | None]]
    #: the end of the log was reached
    done: bool
    #: the log no longer holds what follows ``after`` (folded into the saved table): load
    #: the saved table again and read on from its position
    behind: bool = False


class Store(ABC):
    """The interface every backend implements (see the module's documentation)."""

    url: str
    #: True when the sketches live in this process's memory already (so a Deduper does not
    #: cache them again)
    in_process: bool = False
    #: False for a compact store: a document dropped as a copy of nearly all of its text
    #: (:data:`VERBATIM`) joins no LSH bucket (later documents find the documents of its
    #: story that were kept), and keeps no sketch
    indexes_copies: bool = True
    #: True when the store itself counts its log into its saved table (``reclaim``): it
    #: needs a saved table to know the template guard's window from
    folds_log: bool = False
    #: True when a Deduper preparing documents for another process to decide
    #: (:meth:`~neardup.Deduper.prepare`: a service's workers) makes there what the store
    #: writes of each sketch (:class:`~neardup.engine.compact.Forms`): a compact store on a
    #: server, whose decider waits on the server one batch after another while the workers
    #: have time (on a SQLite file the workers' extra work cost more than the decider saved)
    forms_ahead: bool = False
    #: True when the store keeps the texts of the documents added (a compact store's text
    #: tier, compressed: ``Forms.text``)
    keep_text: bool = False

    def indexes(self, entry: Entry) -> bool:
        """Whether a document with this decision joins its LSH buckets (and keeps a sketch
        for later documents to be verified against): every one, or (a compact store) every
        one but a copy of at least :data:`VERBATIM` of its text — what is left of a story
        a heavily edited copy is may be what a later, heavier edit has in common with it."""
        return self.indexes_copies or entry.duplicate_of is None or entry.score < VERBATIM

    # -- configuration ---------------------------------------------------------------------

    @abstractmethod
    def check_config(self, fingerprint: Mapping[str, object]) -> None:
        """Remember the sketch settings of the first Deduper; refuse different ones later
        (a store's band keys and shingles only mean something under the same settings)."""

    def expire_after(self, seconds: float | None) -> None:
        """Let documents expire ``seconds`` after they were added, for backends that expire
        keys by themselves (Redis); the others forget old documents on :meth:`prune`."""
        return None

    # -- the atomic section ---------------------------------------------------------------

    @abstractmethod
    def begin(self, *, write: bool = True) -> None:
        """Start an atomic section: what is read in it is checked or locked until
        :meth:`commit` (``write=False``: a consistent read only, ended by :meth:`rollback`)."""

    @abstractmethod
    def commit(self) -> int:
        """Apply what :meth:`put` buffered, in order, and end the section; returns how many
        entries were applied. Fewer than all when another writer changed what an entry's
        decision read (its buckets, its exact text, its id): nothing from that entry on is
        applied, and the caller decides the rest again."""

    @abstractmethod
    def rollback(self) -> None:
        """Leave the section without changing anything."""

    @abstractmethod
    def put(self, entries: Sequence[NewEntry]) -> None:
        """Buffer new documents, in order; they get increasing sequence numbers."""

    # -- reads (inside or outside a section) ---------------------------------------------

    @abstractmethod
    def entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        """The entries of those ids the store has."""

    @abstractmethod
    def exact(self, text_keys: Iterable[int]) -> dict[int, str]:
        """For each exact-text hash the store has, the first document with that text."""

    @abstractmethod
    def buckets(self, keys: Iterable[BandKey]) -> dict[BandKey, list[tuple[int, str, float]]]:
        """The members of each non-empty bucket: (seq, id, timestamp), earliest first."""

    def expect(self, ids: Iterable[str], text_keys: Iterable[int], keys: Iterable[BandKey]) -> None:
        """What this section's :meth:`lookup` will ask, said at its start (a store on a server
        may read it with the section's first read of the log); nothing changes if it asks
        something else."""
        return None

    def lookup(
        self, ids: Iterable[str], text_keys: Iterable[int], keys: Iterable[BandKey]
    ) -> tuple[dict[str, Entry], dict[int, str], dict[BandKey, list[tuple[int, str, float]]]]:
        """:meth:`entries`, :meth:`exact` and :meth:`buckets` at once, in that order (a store
        on a server reads them in one round trip)."""
        return self.entries(ids), self.exact(text_keys), self.buckets(keys)

    @abstractmethod
    def sketches(self, ids: Iterable[str]) -> dict[str, Stored]:
        """The sketches of those ids that have one (a compact store: their compact forms)."""

    def keep_texts(self) -> None:
        """Keep the prepared texts of the documents added from now on (a compact store keeps
        them only when asked: ``keep_text=1``, or a Deduper that explains, which reads them
        for the passages two documents share). The others keep them anyway."""
        return None

    def texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The prepared texts kept for those ids (a compact store keeps them only in its
        optional text tier, and the whole text of a short document)."""
        return {i: sk.text for i, sk in self.sketches(ids).items() if sk.text}

    @abstractmethod
    def extended(self, ids: Iterable[str]) -> set[str]:
        """Those of ``ids`` that a kept document extends (:attr:`Entry.extends`; a store may
        still count an extending document deleted since). Inside a section that may commit,
        the answer is part of what must be unchanged when it commits."""

    @abstractmethod
    def log(self, after: int, limit: int) -> tuple[int, list[str], bool]:
        """Up to ``limit`` log records after position ``after``: the new position, the ids of
        the documents that counted as stories (:attr:`NewEntry.counts`) they name, and
        whether the end of the log was reached."""

    def log_stories(self, after: int, limit: int, skip: Container[str] = ()) -> LogPage:
        """:meth:`log` with what each story adds to the template guard: a compact store logs
        the slots of each story's shingles (its compact sketch does not hold them all);
        the others say None, and their sketches hold them. The stories with an id in
        ``skip`` (a process's own, counted already) may come with no slots, unread."""
        pos, ids, done = self.log(after, limit)
        return LogPage(pos, [(i, None) for i in ids], done)

    def snapshot_due(self, position: int, saved: int) -> bool:
        """Whether a Deduper at log ``position`` should save the common-shingle table now
        (besides every ``_SNAPSHOT_EVERY`` stories), ``saved`` being where the last saved one
        is: a compact store saves it once its log holds about as many bytes, so the log
        stays short."""
        return False

    def claim_save(self, position: int) -> bool:
        """Whether this process should save the common-shingle table at log ``position``
        now that it is due: yes, unless the store's processes save it outside one lock
        (Redis) and another one is saving it — each would encode the same table (0.1 s or
        more a save, in every process that saw it due) for one of them to be kept. A claim
        lapses when the table is saved, or after :data:`SAVE_CLAIM` seconds."""
        return True

    @abstractmethod
    def load_common(self) -> tuple[int, bytes] | None:
        """The last saved common-shingle table and the log position it covers."""

    @abstractmethod
    def save_common(self, position: int, table: bytes) -> None:
        """Save a common-shingle table covering the log up to ``position``."""

    # -- management -----------------------------------------------------------------------

    @abstractmethod
    def delete(self, doc_id: str) -> bool:
        """Forget one document (False if it was not there). Documents that matched it keep
        their decisions."""

    @abstractmethod
    def prune(self, before: float) -> int:
        """Forget every document whose timestamp is before ``before``; how many went."""

    def reclaim(self, *, rewrite: bool = False) -> None:
        """Give back the space of forgotten documents (after :meth:`prune` or :meth:`delete`):
        a SQLite file returns its free pages to the file system, a Redis its freed memory to
        the machine. ``rewrite`` also rewrites the whole store compactly where that is the
        only way (SQLite ``VACUUM``: needed once for a file written before neardup reclaimed
        space as it went). A store with nothing to give back does nothing."""
        return None

    @abstractmethod
    def clusters(self, limit: int = 100, offset: int = 0) -> list[tuple[str, int]]:
        """(cluster label, number of members), largest first, then by label."""

    @abstractmethod
    def members(self, cluster: str) -> list[Entry]:
        """The entries of one cluster, earliest first."""

    @abstractmethod
    def stats(self, *, full: bool = False) -> dict[str, object]:
        """Counts and sizes, for ``neardup store stats``; ``full`` adds what needs a walk of
        the whole store (Redis: the bytes of the namespace's keys), which the service's
        ``/metrics`` and ``len(deduper)`` leave out."""

    def check(self) -> list[str]:
        """What is wrong with what the store holds, one line each (none: nothing found), for
        ``neardup store check``."""
        return []

    def close(self) -> None:
        """Release connections and files."""
        return None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SECRET_QUERY = re.compile(r"(?i)((?:^|&)[^=&]*(?:password|secret|token)[^=&]*=)[^&]*")


def redacted(url: str) -> str:
    """A store URL fit for messages, logs and summaries: its password (and any query value
    named like one) replaced by ``***``. Every message of neardup that names a store uses it.

    >>> redacted("redis://:s3cret@cache:6379/0?namespace=news")
    'redis://:***@cache:6379/0?namespace=news'
    >>> redacted("rediss://crawler:p@ss@10.0.0.5/0")
    'rediss://crawler:***@10.0.0.5/0'
    >>> redacted("redis://cache/0?ssl_password=x&namespace=n")
    'redis://cache/0?ssl_password=***&namespace=n'
    >>> redacted("sqlite:///crawl.db"), redacted("redis://user@cache/0")
    ('sqlite:///crawl.db', 'redis://user@cache/0')
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL urlsplit can take apart: hide whatever looks like one
        return _SECRET_QUERY.sub(r"\1***", re.sub(r":[^:@/]*@", ":***@", url))
    netloc = parts.netloc
    if password:
        host = netloc.rpartition("@")[2]
        netloc = f"{parts.username or ''}:***@{host}"
    query = _SECRET_QUERY.sub(r"\1***", parts.query)
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=query))


class StoreLost(StoreError):
    """A store lost what this process knew of it while it used it: a Redis namespace whose
    keys went (a Redis restarted without persistence, keys evicted or deleted, the namespace
    made again), a SQLite file deleted or replaced. ``what`` the store ("Redis namespace",
    "SQLite file"), ``reason`` what happened to it, for the service's answer (which names no
    path)."""

    def __init__(self, what: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.what, self.reason = what, reason

    def __reduce__(self) -> tuple[type[StoreLost], tuple[str, str, str]]:
        return StoreLost, (self.what, self.reason, str(self))  # pickled whole


def opening_failure(url: str, exc: BaseException) -> str:
    """What to say when the store at ``url`` does not open: ``exc``'s own message where it
    names a store URL already (the stores' messages do), else the URL (redacted) and it.

    >>> opening_failure("sqlite:///x.db", OSError("cannot open store sqlite:///x.db: busy"))
    'cannot open store sqlite:///x.db: busy'
    >>> opening_failure("redis://:pw@cache/0", ConnectionError("refused"))
    'cannot open the store redis://:***@cache/0: refused'
    """
    text = str(exc)
    scheme = url.partition(":")[0].lower()
    if isinstance(exc, ConfigError) or (scheme and f"{scheme}://" in text.lower()):
        return text
    return f"cannot open the store {redacted(url)}: {text}"


#: The options a SQLite store URL may carry (after its ``?``; a Redis URL's:
#: :data:`neardup.store.redis.OPTIONS`, and redis-py's own)
_SQLITE_OPTIONS = ("format", "keep_text")


def _known_options(url: str, query: str, known: Sequence[str]) -> None:
    """A ConfigError for an option ``query`` holds that the store does not read (a typo
    would otherwise be dropped, and ``namespace`` fall back to the default namespace)."""
    from ..messages import did_you_mean

    for name in parse_qs(query, keep_blank_values=True):
        if name in known:
            continue
        hint = did_you_mean(name, known)
        if not hint and "=" not in query and url.lower().startswith("sqlite:"):
            hint = " (a ? begins the options: in a file's name it is written %3F)"
        raise ConfigError(
            f"store URL {redacted(url)}: no option {name!r}{hint}; the options are "
            f"{', '.join(known)}"
        )


def _valued_options(url: str, query: str, known: Sequence[str]) -> None:
    """A ConfigError for an option ``query`` gives no value (``?namespace=``, as
    ``?namespace=$NS`` writes it with NS unset): it was dropped unseen, and the default
    taken — the default namespace filled, a window's TTL gone."""
    from ..messages import did_you_mean

    for name, value in parse_qsl(query, keep_blank_values=True):
        if not value.strip():
            hint = "" if name in known else did_you_mean(name, known)
            raise ConfigError(f"store URL {redacted(url)}: the option {name!r} has no value{hint}")


def open_store(
    url: str, *, namespace: str | None = None, readonly: bool = False, existing: bool = False
) -> Store:
    """The store a URL names (see the module's documentation). ``readonly`` opens a SQLite
    file for reading only (``neardup store stats`` and ``check``: a read-only file will do).
    ``existing``: the store must be there already (a StoreError, and nothing written, where
    the file or namespace holds none: ``neardup store stats``, ``prune``, ``delete`` and
    ``vacuum``). A SQLite database of another program is never written to.

    >>> open_store("memory://").url
    'memory://'
    >>> open_store("ftp://x")
    Traceback (most recent call last):
    ...
    neardup.errors.ConfigError: unknown store URL 'ftp://x': use memory://, sqlite:///path/to/file.db or redis://host:port/db
    """
    if not isinstance(url, str):
        raise ConfigError(f"store URL must be a str, not {type(url).__name__}")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "memory":
        from .memory import MemoryStore

        return MemoryStore()
    if scheme == "sqlite":
        from ..options import sqlite_path
        from .sqlite_compact import open_sqlite

        path, options = sqlite_path(url)
        if not path:
            raise ConfigError(f"store URL {url!r} names no file: use sqlite:///path/to/file.db")
        _known_options(url, options, _SQLITE_OPTIONS)
        _valued_options(url, options, _SQLITE_OPTIONS)
        return open_sqlite(path, parse_qs(options), readonly=readonly, existing=existing)
    if scheme in ("redis", "rediss", "unix"):
        from .redis import OPTIONS
        from .redis_compact import open_redis

        _valued_options(url, parts.query, OPTIONS)
        query = parse_qs(parts.query)
        ns = namespace or (query.get("namespace") or ["neardup"])[0]
        return open_redis(url, ns, query, existing=existing)
    raise ConfigError(
        f"unknown store URL {url!r}: use memory://, sqlite:///path/to/file.db or "
        "redis://host:port/db"
    )
