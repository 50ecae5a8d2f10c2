"""The local batch run: deduplicate a whole corpus at once, with the same decisions as
streaming it through a :class:`~neardup.deduper.Deduper` in the same order.

:func:`dedup_batch` takes the corpus as lists; :class:`BatchRun` takes it one document at a
time, so that reading, sketching (on worker processes) and deciding overlap — the command
line feeds it as it reads. The rules are the engine's (:mod:`neardup.engine`).

>>> r = dedup_batch(["a", "b", "c"], ["北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。",
...                                    "转载：北京地铁十九号线今天开通运营，全长二十二公里，设车站十座！",
...                                    "上海今天发布暴雨蓝色预警，预计局地雨量超过五十毫米。"])
>>> [(d.id, d.duplicate_of, d.cluster) for d in r.decisions]
[('a', None, 'a'), ('b', 'a', 'a'), ('c', None, 'c')]
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import threading
import time
import warnings
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import CancelledError, Executor, Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .engine import (
    IDENTICAL,
    CommonShingles,
    Decision,
    DedupConfig,
    KeepPolicy,
    Sketch,
    alike_rows,
    best_match,
    check_keep,
    choose_kept,
    counts_as_story,
    evidence,
    hub,
    light,
    make_sketches,
    may_verify_counts,
    story_codes,
    text_key,
    to_verify,
    verify,
)
from .engine.codec import (
    Packed,
    Shared,
    block_name,
    free,
    pack,
    share,
    sweep_stale,
    take,
    unpack,
)
from .engine.warm import load_kernels
from .errors import ConfigError, InputError, WorkersLost, shielded
from .index.lsh import LSHJoin, Pos, _merge
from .machine import machine_cpus, workers_within_memory
from .memory import grown, keep_freed, set_huge_pages, trim
from .passages import Passage
from .shelf import Shelf, default_budget
from .times import missing, read_times
from .timing import Stages

__all__ = ["BatchResult", "BatchRun", "dedup_batch"]

I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]


@dataclass(frozen=True)
class BatchResult:
    """Decisions for a whole corpus, in input order, and what the run found."""

    decisions: list[Decision]
    candidate_pairs: int
    verified_pairs: int
    timings: dict[str, float] = field(default_factory=dict)
    #: the stories each slot of the chrome count table counted, on average, at the end
    #: (:meth:`~neardup.engine.templates.CommonShingles.load_factor`; from about 1 it costs recall)
    chrome_load: float = 0.0
    #: the documents whose sketches went to the run's temporary file (past ``sketch_memory``)
    sketches_on_file: int = 0
    #: the folder of that file, if it is held in memory (tmpfs: it saved no memory), else ""
    sketches_in_memory: str = ""
    #: the worker processes that sketched (0: none, every document sketched in the run's
    #: own process)
    sketch_workers: int = 0


def _check_ids(ids: list[str]) -> None:
    """Every id there and unique, or InputError naming the first that is not (by its place)."""
    seen: dict[object, int] = {}
    for i, doc_id in enumerate(ids):
        if missing(doc_id):
            raise InputError(f"document {i} has no id ({doc_id!r})")
        try:
            first = seen.setdefault(doc_id, i)
        except TypeError:
            raise InputError(
                f"document {i}'s id is {type(doc_id).__name__}, which cannot name a document "
                "(not hashable); give strings"
            ) from None
        if first != i:
            raise InputError(
                f"ids must be unique within a batch: {doc_id!r} names documents {first} and {i}"
            )


def dedup_batch(
    ids: Iterable[str],
    texts: Iterable[str],
    *,
    config: DedupConfig | None = None,
    keep: KeepPolicy = "first",
    timestamps: Iterable[object] | None = None,
    explain: bool = False,
    chunk: int = 2000,
    workers: int | None = None,
    sketch_memory: int | None = None,
) -> BatchResult:
    """Deduplicate a corpus at once: the same decisions as streaming it through a Deduper.

    ``ids`` name the documents, one each, unique: strings, or other labels (a DataFrame's
    integer index) given back as they came; a missing one (None, NaN) is an InputError.

    ``keep`` chooses which document of each cluster is kept and names the cluster: the
    first seen (the streaming rule), the longest text, or the earliest of ``timestamps``
    (one for each document, read as a record's: epoch seconds or milliseconds, ISO 8601,
    HTTP dates, datetimes; None for none).
    ``workers`` processes sketch the documents (default: one per CPU this process may use —
    :func:`~neardup.machine.machine_cpus`, a container's quota included —, up to 4, once the
    texts hold two million characters or more; 1: none, the documents are sketched in this
    process); the decisions do not depend on it. ``chunk`` is
    the most documents a worker sketches at a time. ``sketch_memory``: the most bytes the
    sketches of decided documents hold in memory (default: a quarter of the machine's, or
    its container's, memory); past it the oldest go to a temporary file and are read back
    when a later document's candidates name them (:class:`~neardup.shelf.Shelf`): the same
    decisions in less memory.
    """
    cfg = config if config is not None else DedupConfig()
    ids, texts = list(ids), list(texts)  # (any iterables)
    if len(ids) != len(texts):
        raise ConfigError(f"{len(ids)} ids for {len(texts)} texts")
    check_keep(keep)
    _check_ids(ids)
    for doc_id, text in zip(ids, texts, strict=True):
        if not isinstance(text, str):
            raise InputError(f"document {doc_id!r}: text must be a str, not {type(text).__name__}")
    if timestamps is not None:
        timestamps = _read_times(ids, timestamps)
    with BatchRun(
        cfg,
        chunk=chunk,
        workers=workers,
        chars=sum(map(len, texts)),
        sketch_memory=sketch_memory,
    ) as run:
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
        return run.finish(keep=keep, timestamps=timestamps, explain=explain)


def _read_times(ids: Sequence[str], timestamps: Iterable[object]) -> list[float | None]:
    """Each document's timestamp in epoch seconds, read as a record's is (numbers, ISO 8601,
    HTTP dates, datetimes; None, NaN, NaT or blank: none), or an error naming the document."""
    given = list(timestamps)
    if len(given) != len(ids):
        raise ConfigError(f"{len(ids)} ids for {len(given)} timestamps")
    return read_times(given, lambda k: f"document {ids[k]!r}")


class BatchRun:
    """:func:`dedup_batch` fed one document at a time, so that reading, sketching and
    deciding overlap (the CLI feeds it as it reads).

    Byte-identical copies of an earlier text take its sketch and are matched to it (found
    when their chunk is made).
    The other documents (originals) are sketched in chunks, by worker processes when it
    pays; each chunk that comes back is joined on its band keys with every earlier document
    (:class:`~neardup.index.lsh.LSHJoin`: lsh_join block by block; beside worker processes,
    in a thread of its own while this one verifies the chunks before), and once a chunk's
    join is in, every document before the first original not yet sketched is decided, in
    input order, as streaming would. A decision depends only on earlier documents, so the
    timing changes nothing.
    With ``hand_out`` (keeping the first of each story) each decision is final once made and
    :meth:`take` hands it out at once. The sketches of decided documents stay in memory up
    to ``sketch_memory`` bytes (None: :func:`~neardup.shelf.default_budget`), the oldest
    past it in a temporary file (:class:`~neardup.shelf.Shelf`).
    """

    #: the first chunks are this small, so that the workers start soon
    MIN_CHUNK = 100
    #: a chunk holds as many documents as hold this many characters, at the mean length of
    #: the texts sent so far (and at most ``chunk``): a worker sketches one in about a fifth
    #: of a second, so when the input ends the last chunks keep both workers busy for no
    #: longer (chunks of 2,000 long articles, a fifth of a 10,000-article run each, left
    #: one worker idle while the other finished its last)
    CHUNK_CHARS = 1 << 20
    #: without the total size, worker processes start once this many characters came in
    STREAM_POOL_AT = 300_000
    #: an input this large on disk (``input_bytes``) holds enough text for the worker
    #: processes: they start with the first chunk, forked while this process holds little
    #: (forked later, each would hold a copy of everything read and sketched so far)
    POOL_BYTES = 2 << 20
    #: the workers' results are looked for every this many documents (a look costs a lock)
    POLL_EVERY = 64
    #: chunks that come back are joined once their keys are at least this share of those
    #: joined before (or no chunk is on its way): many small chunks (tiny records) would
    #: each search runs of millions of keys
    JOIN_SHARE = 32
    #: ... but at most this many keys (what a join holds while it runs, about 80 bytes a
    #: key, is what the run's memory peaks at: a million tiny records joined 1.6 million
    #: keys at a time near their end)
    JOIN_MOST = 1 << 19
    #: freed memory is given back to the system (:func:`~neardup.memory.trim`) before a
    #: join once this many band keys were joined since the last time
    TRIM_EVERY = 4_000_000
    #: joined chunks waiting to be decided: past this many, reading waits for the oldest
    #: (when the join or the decisions are slower than reading, the documents read ahead
    #: would otherwise wait in memory, with their band keys and the arrays their joins hold)
    MAX_JOINED = 4
    #: seconds a wait for a chunk lasts before it checks that no worker has ended
    WORKER_CHECK = 1.0

    def __init__(
        self,
        cfg: DedupConfig,
        *,
        chunk: int = 2000,
        workers: int | None,
        chars: int | None,
        input_bytes: int | None = None,
        hand_out: bool = False,
        sketch_memory: int | None = None,
    ) -> None:
        if workers is not None and workers < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        if chunk < 1:
            raise ConfigError(f"chunk must be at least 1, got {chunk}")
        if sketch_memory is not None and sketch_memory < 0:
            raise ConfigError(f"sketch_memory must be 0 bytes or more, got {sketch_memory}")
        self.cfg, self.chunk = cfg, chunk
        self.ids: list[str] = []
        # a document's numbers in arrays, not lists of Python numbers (a million tiny
        # records: 40 MB less)
        self.lengths = array("q")  # of the texts as given
        self._texts: dict[int, str] = {}  # the texts of the documents not yet sent
        self.copy_of = array("q")  # the first copy of the same text, or -1
        self.sketches = Shelf(default_budget() if sketch_memory is None else sketch_memory)
        self.parent = array("q")  # the earlier document each one matched, or -1
        self.copy = bytearray()  # whether it is a copy of it (dropped), or extends it
        self.score = array("d")
        self.measure: list[str | None] = []
        self._first_copy = _FirstTexts()
        # documents not yet sent to be sketched (exact copies among them are found, and
        # not sent, when they are: _send)
        self._pending: list[int] = []
        # (originals, their sketches or the chunk on its way to a worker: _Flying)
        self._sent: deque[tuple[list[int], Any]] = deque()
        self._sent_docs = 0
        # the size of the chunk being gathered: _chunk_size, asked once a chunk is sent
        self._chunk_now = 0
        self._workers = workers
        self._cpu_count: int | None = None  # _cpus
        self._pool_size = 0  # the workers started (0: none)
        self._chars_seen = 0
        # workers=None: processes when the texts hold two million characters (they pay from
        # there) and ``chars``, the total, says so; without a total, at once when the input
        # is POOL_BYTES on disk (``input_bytes``), else once STREAM_POOL_AT characters came
        # in (the input goes on, likely: it is being read)
        if chars is not None:
            self._auto_at = 0 if chars >= 2_000_000 else -1
        elif input_bytes is not None and input_bytes >= self.POOL_BYTES:
            self._auto_at = 0
        else:
            self._auto_at = self.STREAM_POOL_AT
        self._pool: Any = None
        self._pool_lost = False  # a worker ended under the run: it sketches alone (_lose_pool)
        self._workers_seen: dict[int, Any] = {}  # the pool's worker processes, by pid
        self._huge_before: bool | None = None  # numpy's huge pages before the run (__enter__)
        # the shared-memory blocks this run named that may be in /dev/shm (freed at its
        # end): of chunks not yet read, and those read, to be written again (_spare_blocks)
        self._blocks: set[str] = set()
        self._spare_blocks: list[str] = []
        self._common = CommonShingles.of(cfg)
        # the thread making the count table this process's own once the workers fork
        # (_send), until the run first reads or counts a story (_guard)
        self._owning: threading.Thread | None = None
        self._join = LSHJoin(bucket_cap=cfg.bucket_cap)
        # the join's thread (beside worker processes), and the joined chunks not yet
        # decided, oldest first: (their frontier, their pairs or the join on its way)
        self._joiner: ThreadPoolExecutor | None = None
        self._joined: deque[tuple[int, Any]] = deque()
        # one item each time a future of the workers or the join is done (_submit, _result)
        self._arrived: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._waiting: list[tuple[npt.NDArray[np.uint64], list[int]]] = []  # not yet joined
        self._waiting_keys = 0
        self._joined_keys = 0
        self._untrimmed = 0  # band keys joined since freed memory was last given back
        self._next = 0  # the next document to decide
        self._pairs = 0
        # the live documents sketched so far (positions increasing), for the prefilter
        self._known = 0
        self._row = np.zeros(0, dtype=np.int32)  # each live document's row, by its position
        self._light = np.zeros((0, cfg.num_perm), dtype=np.uint16)
        self._vocab_sizes = np.zeros(0, dtype=np.int64)
        self._units = np.zeros(0, dtype=np.int64)
        self._extended: set[int] = set()  # documents a kept document extends
        # what the documents sketched by workers and not yet decided would add to the guard
        # as stories (None: their vocabulary), made by the workers (_sketch_packed)
        self._owns: dict[int, U32 | None] = {}
        # hand_out: each document's decision is made as it is decided (keep="first": a
        # document's story and what it matched never change once decided) and waits in
        # _made until take() hands it out, so a caller can write it and let the document go
        self._hand_out = hand_out
        self._made: list[Decision] = []
        self._root = array("q")  # each decided document's story: its first document
        self._hubbed: set[int] = set()  # documents that extend a hub: a cluster of their own
        self.timings = Stages()
        for name in ("sketch", "candidates", "verify"):
            self.timings.add(name, 0.0)

    def __enter__(self) -> BatchRun:
        # no huge pages for the arrays of a few MiB each chunk makes and frees (the count
        # table asks for them itself): neardup.memory
        self._huge_before = set_huge_pages(False)
        return self

    def __exit__(self, kind: object = None, *rest: object) -> None:
        """Shut the workers down: once their work is done, or, when an error or an interrupt
        (SIGINT, SIGTERM) ends the run, at once — none outlives the run. The join's thread
        ends with the join it is in, if any (a few seconds at most)."""
        self._guard()
        before, self._huge_before = self._huge_before, None
        if before is not None:
            set_huge_pages(before)
        joiner, self._joiner = self._joiner, None
        if joiner is not None:
            with shielded():  # it cancels futures: their locks (see _result)
                joiner.shutdown(wait=False, cancel_futures=True)
            if kind is None:
                joiner.shutdown()  # its thread joined: Thread.join is safe to interrupt
        self._joined.clear()
        pool, self._pool = self._pool, None
        if pool is not None and kind is None:
            pool.shutdown(cancel_futures=True)
        elif pool is not None:
            with shielded():  # bounded; a signal now waits for the workers to be stopped
                _stop_now(pool)
        # the shared-memory blocks of chunks not read (sent back, on their way, or half
        # made when the workers were stopped): freed, so none is left and none reported
        self._sent.clear()
        for name in self._blocks:
            free(name)
        self._blocks.clear()
        if kind is not None:  # (a run that ends well reads its sketches until it finishes)
            self.sketches.close()

    def add(self, doc_id: str, text: str) -> None:
        """Take the next document; decide those whose sketches are all in."""
        i = len(self.ids)
        self.ids.append(doc_id)
        self.lengths.append(len(text))
        self.parent.append(-1)
        self.copy.append(False)
        self.score.append(0.0)
        self.measure.append(None)
        self.copy_of.append(-1)  # until its chunk is made (_send)
        self._pending.append(i)
        self._texts[i] = text
        if not self._chunk_now:  # the first chunk's size, as the run is set up
            self._chunk_now = self._chunk_size()
        if len(self._pending) >= self._chunk_now:
            self._send()
            self._chunk_now = self._chunk_size()  # the next, from what was sent
        if i % self.POLL_EVERY == 0:
            while self._sent and self._ready(self._sent[0][1]):
                self._receive()
            self._decide_joined(wait=False)

    def take(self) -> list[Decision]:
        """With ``hand_out``: the decisions made since the last call, in input order (those
        of the documents from the first not yet handed out up to :attr:`decided`), each
        what :meth:`finish` with ``keep="first"`` gives for it; empty without."""
        made, self._made = self._made, []
        return made

    @property
    def decided(self) -> int:
        """How many documents, from the first, are decided: a document among them with
        ``copy[i]`` set is a duplicate in the result, whatever ``keep`` is."""
        return self._next

    def finish(
        self,
        *,
        keep: KeepPolicy = "first",
        timestamps: Sequence[float | None] | None = None,
        explain: bool = False,
    ) -> BatchResult:
        """Decide the rest, form the clusters, and shut the workers down."""
        check_keep(keep)
        if self._hand_out and (keep != "first" or explain):
            raise ConfigError("a run that hands decisions out keeps the first, without evidence")
        if self._pending:
            self._send()
        while self._sent:
            self._receive()
        self._decide_joined(wait=True)
        self._decide(len(self.ids))
        self.__exit__()
        load = self._guard().load_factor()
        self._let_go()
        verified = sum(1 for p in self.parent if p >= 0)
        if self._hand_out:
            return self._finished(self.take(), verified, load)
        t0 = time.perf_counter()
        ids, sketches, parent = self.ids, self.sketches, self.parent
        kept_of = choose_kept(
            np.array(self._root, dtype=np.int64),
            np.arange(len(ids), dtype=np.int64),
            keep,
            lengths=np.array(self.lengths, dtype=np.int64),
            timestamps=None
            if timestamps is None
            else np.array([np.nan if t is None else t for t in timestamps], dtype=np.float64),
        ).tolist()
        decisions = []
        for i, doc_id in enumerate(ids):
            kept, p = kept_of[i], parent[i]
            cluster = ids[kept]
            if keep != "first" and kept == i:
                # the document a story keeps names it, and extends nothing — kept even when
                # it is a copy of the story's first (a reprint dated before its original)
                decisions.append(Decision(doc_id, False, None, cluster, 0.0, None))
                continue
            if not self.copy[i] and keep != "first":
                # a story keeps its longest or earliest document: a document it covers
                # (the first of the story, or one extending it) is a copy of that one
                v = verify(sketches[i], sketches[kept], self.cfg)
                if v.is_copy:
                    ev = evidence(sketches[i], sketches[kept]) if explain else ()
                    decisions.append(
                        Decision(doc_id, True, ids[kept], cluster, v.copy_score, v.measure, ev)
                    )
                    continue
                if p < 0 and v.is_duplicate:
                    p = kept
                    self.score[i], self.measure[i] = v.score, v.measure
            ev = evidence(sketches[i], sketches[p]) if explain and p >= 0 else ()
            decisions.append(self._decision(i, p, cluster, ev))
        self.timings.add("clusters", time.perf_counter() - t0)
        return self._finished(decisions, verified, load)

    def _finished(self, decisions: list[Decision], verified: int, load: float) -> BatchResult:
        """The run's result, its sketches let go (read until now only: a million tiny
        records hold 330 MB in them)."""
        self.sketches.close()
        shelf = self.sketches
        return BatchResult(
            decisions,
            self._pairs,
            verified,
            dict(self.timings.seconds),
            load,
            shelf.on_file,
            shelf.folder if shelf.in_memory else "",
            self._pool_size,
        )

    def _let_go(self) -> None:
        """Once every document is decided, let go of what only deciding reads: the LSH
        join's runs, the prefilter's arrays, the learned chrome and the exact texts seen (a
        million tiny records hold about 1 GB in them), before the decisions are made."""
        self._join = LSHJoin(bucket_cap=self.cfg.bucket_cap)
        self._light = np.zeros((0, self.cfg.num_perm), dtype=np.uint16)
        self._row = np.zeros(0, dtype=np.int32)
        self._vocab_sizes = np.zeros(0, dtype=np.int64)
        self._units = np.zeros(0, dtype=np.int64)
        self._first_copy = _FirstTexts()
        self._common = CommonShingles.of(self.cfg)
        for name in self._spare_blocks:  # every chunk is back
            free(name)
            self._blocks.discard(name)
        self._spare_blocks.clear()

    def _guard(self) -> CommonShingles:
        """The template guard, once its count table is this process's own (see _send)."""
        owning, self._owning = self._owning, None
        if owning is not None:
            owning.join()
        return self._common

    def _settle(self, i: int) -> None:
        """Document ``i`` is decided: note its story's first document (its match's, or
        itself when it matched nothing or extends a hub: a story of its own), and with
        ``hand_out`` make its decision as :meth:`finish` makes it with ``keep="first"``."""
        p = self.parent[i]
        self._root.append(i if p < 0 or i in self._hubbed else self._root[p])
        if self._hand_out:
            self._made.append(self._decision(i, p, self.ids[self._root[i]]))

    def _decision(self, i: int, p: int, cluster: str, ev: tuple[Passage, ...] = ()) -> Decision:
        """Document ``i``'s decision in the story ``cluster``, given the document it matched
        (``p``, or -1): dropped as a copy of it, kept extending it, or kept."""
        ids = self.ids
        if self.copy[i]:
            return Decision(ids[i], True, ids[p], cluster, self.score[i], self.measure[i], ev)
        if p < 0:
            return Decision(ids[i], False, None, cluster, 0.0, None)
        score, measure = self.score[i], self.measure[i]
        return Decision(ids[i], False, None, cluster, score, measure, ev, ids[p])

    def _extends(self, m: int, k: str) -> bool:
        """Whether document ``k`` (decided; its position as a string) is kept and extends
        document ``m``."""
        j = int(k)
        return self.parent[j] == m and not self.copy[j]

    def _chunk_size(self) -> int:
        """A quarter of what was sent so far, from MIN_CHUNK up to ``chunk``: the workers
        start soon, and the chunks stay few; and no more documents than hold CHUNK_CHARS
        characters at the length of those sent so far."""
        size = min(self.chunk, max(self.MIN_CHUNK, self._sent_docs // 4))
        if self._chars_seen:
            size = min(size, self.CHUNK_CHARS * self._sent_docs // self._chars_seen)
        return max(1, size)

    def _send(self) -> None:
        """Sketch the pending originals: on the workers, or here. A byte-identical copy of
        an earlier text (or of one in the same chunk) is not sketched: it takes the first's
        sketch once decided."""
        block, self._pending = self._pending, []
        texts = [self._texts.pop(i) for i in block]
        at = np.array(block, dtype=np.int64)
        first = self._first_copy.first(np.array([text_key(t) for t in texts], np.uint64), at)
        if not np.array_equal(first, at):
            originals = first == at
            for r in np.flatnonzero(~originals).tolist():
                self.copy_of[block[r]] = int(first[r])
            block = at[originals].tolist()
            texts = [t for t, o in zip(texts, originals.tolist(), strict=True) if o]
            if not block:
                return
        self._sent_docs += len(block)
        self._chars_seen += sum(map(len, texts))
        forking = False  # whether workers are forked by this call
        if self._pool is None and self._wants_pool():
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor
            from multiprocessing import resource_tracker

            n = self._workers or min(4, self._cpus())
            n = workers_within_memory(n, f"{n} sketch workers asked for")
            self._pool_size = n
            forking = "fork" in multiprocessing.get_all_start_methods()
            if forking:
                load_kernels(self.cfg, store=False)  # once here: the forked workers inherit them
            # the workers' shared-memory blocks are tracked by this process's tracker (a
            # forked worker would start its own, which never hears that the block was freed)
            resource_tracker.ensure_running()
            sweep_stale()  # what runs killed outright left in /dev/shm
            context = multiprocessing.get_context("fork" if forking else "spawn")
            with shielded():
                self._pool = ProcessPoolExecutor(
                    max_workers=n,
                    mp_context=context,
                    initializer=_worker_start,
                    initargs=(os.getpid(),),
                )
        if self._pool is not None:
            # the block the chunk comes back in is named here, so that this run can free it
            # whatever happens to the worker: one an earlier chunk came back in, if one is
            # free (its memory is the system's already: a new one's is fresh memory to
            # clear and fault in, then to free again, for each chunk)
            if self._spare_blocks:
                name = self._spare_blocks.pop()
            else:
                name = block_name(os.getpid(), id(self) & 0xFFFFFF, self._sent_docs)
                self._blocks.add(name)
            try:
                future = self._submit(self._pool, partial(_sketch_packed, texts, self.cfg, name))
            except BrokenProcessPool:  # a worker ended since the last chunk came back
                self._lose_pool()  # (the block, if there, is freed at the end with the rest)
            else:
                # its workers, to say how one ended (the pool forgets them as it breaks)
                self._workers_seen.update(getattr(self._pool, "_processes", None) or {})
                if forking:  # forked just now: a pool that forks starts every worker at once
                    # in a thread: its 64 MiB are fresh memory to fault in (0.02-0.4 s on a
                    # virtual machine), while this one reads on and sends the next chunks
                    self._owning = threading.Thread(
                        target=_own_pages,
                        args=(self._common,),
                        name="neardup-own-table",
                        daemon=True,
                    )
                    self._owning.start()
                # the texts stay until the chunk is back: sketched here if its worker ends
                self._sent.append((block, _Flying(future, texts, name)))
                return
        t0 = time.perf_counter()
        self._sent.append((block, make_sketches(texts, self.cfg)))
        self.timings.add("sketch", time.perf_counter() - t0)

    def _wants_pool(self) -> bool:
        if self._pool_lost:
            return False
        if self._workers is not None:
            return self._workers > 1
        return 0 <= self._auto_at <= self._chars_seen and self._cpus() > 1

    def _cpus(self) -> int:
        """The CPUs this process may use (:func:`~neardup.machine.machine_cpus`), read once
        a run."""
        if self._cpu_count is None:
            self._cpu_count = machine_cpus()
        return self._cpu_count

    def _ready(self, item: Any) -> bool:
        return isinstance(item, list) or self._done(item.future)

    def _lose_pool(self, how: str | None = None) -> None:
        """A worker ended under the run (the pool is broken: every chunk on its way fails),
        or ran out of memory (``how`` says so): the run goes on without workers, sketching
        each chunk here — the same sketches, so the same decisions — and says so once (a
        :class:`~neardup.errors.WorkersLost` warning, which the command line prints as one
        line). The chunks still on their way come back, or fail and are sketched here."""
        pool, self._pool = self._pool, None
        self._pool_lost = True
        if how is None:
            ended = [p.exitcode for p in self._workers_seen.values()]
            killed = [-c for c in ended if c is not None and c < 0 and -c != signal.SIGTERM]
            how = (
                f"was killed by {signal.Signals(killed[0]).name}"
                + (" (out of memory, most likely)" if killed[0] == signal.SIGKILL else "")
                if killed
                else "ended"
            )
        if pool is not None:
            # a broken pool stops its other workers as it breaks; one that ran out of
            # memory lets its workers end their chunks, and begins no other. They are gone
            # before the run frees the blocks of the chunks that failed: one still at work
            # could make its chunk's block after that, and leave it in /dev/shm
            with shielded():
                pool.shutdown(wait=False, cancel_futures=True)
                for worker in self._workers_seen.values():
                    worker.join(10)
        warnings.warn(
            WorkersLost(
                f"a sketch worker process {how}; the run goes on sketching in its main "
                "process alone, with the same decisions, more slowly"
            ),
            stacklevel=2,
        )

    # The main thread touches the futures of the workers and of the join only through
    # _submit, _done and _result. A SIGINT or SIGTERM raises Interrupted wherever the main thread
    # is (run/local.py); a future's lock is a Condition, whose __enter__ is Python code, so
    # a signal can cut it after the lock is taken and before the ``with`` holds it: the
    # lock stays taken for ever, the pool's thread waits for it as it sets the next result,
    # and the interpreter, as it exits, for that thread. So each touch is in a section no
    # signal cuts (errors.shielded; submitting, too, takes such locks), and a wait, which
    # may be long, is on a queue the futures' callbacks fill, which a signal cuts cleanly.

    def _submit(self, executor: Executor, job: Callable[[], Any]) -> Future[Any]:
        with shielded():
            future = executor.submit(job)
            arrived = self._arrived
            future.add_done_callback(lambda _: arrived.put(None))
        return future

    @staticmethod
    def _done(future: Future[Any]) -> bool:
        with shielded():
            return future.done()

    def _result(self, future: Future[Any]) -> Any:
        while not self._done(future):
            try:
                self._arrived.get(timeout=self.WORKER_CHECK)
            except queue.Empty:
                self._check_workers()
        with shielded():
            return future.result()

    def _check_workers(self) -> None:
        """Break the pool if a worker has ended and nothing came back since.

        A worker the kernel kills (its out-of-memory killer) as it sends a chunk back leaves
        half a message in the results' pipe, and the pool's thread waits for the rest for
        ever, never seeing the worker gone (and the other workers wait for the pipe). So
        the others are stopped and this process's end of the pipe closed: the pool's thread
        reads the pipe's end and breaks the pool, as it does when it sees a worker end, and
        each chunk on its way fails with BrokenProcessPool (see _receive)."""
        pool = self._pool
        workers = list((getattr(pool, "_processes", None) or {}).values())
        if not any(w.exitcode is not None for w in workers):
            return
        with shielded():
            for w in workers:
                w.kill()
            for w in workers:
                w.join(5)
            writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
            if writer is not None:
                writer.close()

    def _receive(self) -> None:
        """Take the oldest sketched chunk, join it, and decide what it lets us decide."""
        block, item = self._sent.popleft()
        t0 = time.perf_counter()
        packed = None
        if not isinstance(item, list):
            try:
                shipped, owns = self._result(item.future)
            except (BrokenProcessPool, MemoryError, CancelledError) as lost:
                # its worker, or another, ended or ran out of memory (or the chunk was not
                # begun when the workers were let go): sketched here
                if not self._pool_lost:
                    self._lose_pool("ran out of memory" if isinstance(lost, MemoryError) else None)
                free(item.name)  # if the worker had begun to fill it
                self._blocks.discard(item.name)
                item = make_sketches(item.texts, self.cfg)
            else:
                packed = take(shipped, keep=True)
                if isinstance(shipped, Shared):  # for the next chunk (freed at the run's end)
                    self._spare_blocks.append(shipped.name)
                if owns is not None:
                    self._owns.update(zip(block, owns, strict=True))
        # the band keys are joined once, here: the sketches kept need not hold them; nor
        # their shingle codes, which their vocabulary and its index give back when read;
        # nor the signatures of texts too short to be verified other than as titles
        part: list[Sketch] = (
            item
            if packed is None
            else unpack(packed, bands=False, shingles=False, signatures_from=self.cfg.short_units)
        )
        t1 = time.perf_counter()
        self.timings.add("sketch", t1 - t0)
        frontier = self._frontier()
        self._grow(frontier, part[0])
        for i, sk in zip(block, part, strict=True):
            self.sketches[i] = sk
        rows = [r for r, sk in enumerate(part) if not sk.is_empty]
        live = [block[r] for r in rows]
        if packed is not None:
            keys, signatures = packed.bands[rows], packed.signatures[rows]
            vocab_sizes = packed.vocab_counts[rows]
            units = np.asarray(packed.n_units, dtype=np.int64)[rows]
        elif rows:
            keys = np.stack([part[r].bands for r in rows])
            signatures = np.stack([part[r].signature for r in rows])
            vocab_sizes = np.array([len(part[r].vocab) for r in rows], dtype=np.int64)
            units = np.array([part[r].n_units for r in rows], dtype=np.int64)
        else:
            keys = np.zeros((0, self.cfg.bands_rows[0]), np.uint64)
            signatures = np.zeros((0, self.cfg.num_perm), np.uint64)
            vocab_sizes = units = np.zeros(0, dtype=np.int64)
        self._remember(live, signatures, vocab_sizes, units)
        del packed  # the chunk's arrays are let go: the sketches kept hold what they need
        self._waiting.append((keys, live))
        self._waiting_keys += keys.size
        if (
            self._sent
            and self._waiting_keys * self.JOIN_SHARE < self._joined_keys
            and self._waiting_keys < self.JOIN_MOST
        ):
            # more chunks are on their way: join them together, since what a join costs
            # grows with the keys joined so far, however few come in
            self.timings.add("candidates", time.perf_counter() - t1)
            return
        keys = np.concatenate([k for k, _ in self._waiting])
        live_at = np.array([i for _, group in self._waiting for i in group], dtype=np.int64)
        self._joined_keys += self._waiting_keys
        self._waiting, self._waiting_keys = [], 0
        self.timings.add("candidates", time.perf_counter() - t1)
        # the arrays as they are now hold every row the pairs can name (a later chunk
        # writes rows past them, or grows a copy): the join reads them, not the attributes
        job = partial(
            self._candidates, keys, live_at, self._light, self._row, self._vocab_sizes, self._units
        )
        if self._pool is None and self._joiner is None:
            self._joined.append((frontier, job()))
        else:  # (a run whose workers were lost keeps its join's thread: joins stay in order)
            # beside worker processes, the join runs in a thread of its own while this one
            # decides the chunks before (its kernels and numpy's sorts let go of the GIL)
            if self._joiner is None:
                self._joiner = ThreadPoolExecutor(1, thread_name_prefix="neardup-join")
            self._joined.append((frontier, self._submit(self._joiner, job)))
        self._decide_joined(wait=False)

    def _candidates(
        self,
        keys: npt.NDArray[np.uint64],
        live: I64,
        light_rows: npt.NDArray[np.uint16],
        row: npt.NDArray[np.int32],
        vocab_sizes: I64,
        units: I64,
    ) -> tuple[I64, int, float, float]:
        """Join band keys (of the documents at ``live``) with every earlier document's and
        keep the pairs to verify: those the MinHash prefilter passes (on the light
        signatures of every pair at once; verify repeats it on the full ones), each later
        document's most alike. Returns them, sorted by (later, earlier), with the number of
        candidate pairs and the seconds the join and the prefilter took. Runs in the join's
        thread (one call at a time, in order) or in this one."""
        self._untrimmed += keys.size
        if self._untrimmed >= self.TRIM_EVERY:  # what the chunks before let go
            self._untrimmed = 0
            trim()
        t0 = time.perf_counter()
        pairs = self._join.extend(keys, live)
        candidates = len(pairs)
        t1 = time.perf_counter()
        if len(pairs):
            later, earlier = row[pairs[:, 1]], row[pairs[:, 0]]
            likeness = alike_rows(light_rows, later, earlier)
            passed = may_verify_counts(
                likeness,
                vocab_sizes[later],
                units[later],
                vocab_sizes[earlier],
                units[earlier],
                self.cfg,
            )
            pairs, likeness = pairs[passed], likeness[passed]
            pairs = pairs[to_verify(pairs[:, 1], pairs[:, 0], likeness, self.cfg)]
        return pairs, candidates, t1 - t0, time.perf_counter() - t1

    def _decide_joined(self, *, wait: bool) -> None:
        """Decide the documents of each joined chunk in turn, from the oldest: those whose
        join is done, or (``wait``) all of them, waiting for their joins."""
        while self._joined:
            frontier, item = self._joined[0]
            if isinstance(item, Future):
                if not (wait or self._done(item) or len(self._joined) > self.MAX_JOINED):
                    return
                pairs, candidates, join_s, prefilter_s = self._result(item)
            else:
                pairs, candidates, join_s, prefilter_s = item
            self._joined.popleft()
            self._pairs += candidates
            self.timings.add("candidates", join_s)
            self.timings.add("verify", prefilter_s)
            self._decide(frontier, pairs)

    def _grow(self, frontier: int, filler: Sketch | None) -> None:
        """Make room in ``sketches`` for every document before ``frontier``: the slots are
        filled with ``filler`` until the chunk's sketches, or a copy's original, are set."""
        if filler is not None:
            self.sketches.grow(frontier, filler)

    def _remember(
        self, live: list[int], signatures: npt.NDArray[np.uint64], vocab_sizes: I64, units: I64
    ) -> None:
        """Keep the light signatures (of ``signatures``, one a row), vocabulary sizes and
        units of new documents (at positions ``live``) in arrays, for the prefilter and the
        verification bound over all of a chunk's pairs at once."""
        n, more = self._known, len(live)
        if n + more > len(self._units):
            size = max(2 * len(self._units), n + more, 1024)
            self._light = grown(self._light, size)
            self._vocab_sizes = grown(self._vocab_sizes, size)
            self._units = grown(self._units, size)
        if more and live[-1] >= len(self._row):
            self._row = grown(self._row, max(2 * len(self._row), live[-1] + 1, 1024))
        self._row[live] = np.arange(n, n + more, dtype=np.int32)
        if more:
            self._light[n : n + more] = light(signatures)
        self._vocab_sizes[n : n + more] = vocab_sizes
        self._units[n : n + more] = units
        self._known = n + more

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
        nxt, cfg, common, sketches = self._next, self.cfg, self._guard(), self.sketches
        self._grow(frontier, sketches[0] if sketches else None)
        if pairs is None:
            pairs = np.zeros((0, 2), dtype=np.int64)
        # earlier partners of each document, in index order
        bounds = np.searchsorted(pairs[:, 1], np.arange(nxt, frontier + 1)).tolist()
        earlier = pairs[:, 0]
        for i in range(nxt, frontier):
            c = self.copy_of[i]
            if c >= 0:
                sketches.alias(i, c)
                self.parent[i], self.copy[i] = c, True
                self.score[i], self.measure[i] = IDENTICAL.copy_score, IDENTICAL.measure
                self._settle(i)
                continue
            lo, hi = bounds[i - nxt], bounds[i - nxt + 1]
            found = None
            if lo < hi:
                pool = ((str(j), sketches[j]) for j in earlier[lo:hi].tolist())
                found = best_match(sketches[i], pool, cfg, common)
            own = self._owns.pop(i, _NOT_MADE)
            if counts_as_story(found):
                sketch = sketches[i]
                if own is _NOT_MADE:
                    own = story_codes(sketch)
                common.add(sketch.vocab if own is None else own)
            if found is not None:
                m = int(found.key)
                self.parent[i], self.copy[i] = m, found.is_copy
                self.score[i], self.measure[i] = found.score, found.verdict.measure
                if not found.is_copy:
                    if hub(found, m in self._extended, partial(self._extends, m)):
                        self._hubbed.add(i)
                    self._extended.add(m)
            self._settle(i)
            if self._hand_out and sketches[i].n_units < cfg.short_units:
                sketches[i] = _as_title(sketches[i])
        self._next = max(nxt, frontier)
        sketches.settle(self._next)
        self.timings.add("verify", time.perf_counter() - t0)


#: a document whose story codes no worker made (see BatchRun._owns)
_NOT_MADE: Any = object()


class _Flying(NamedTuple):
    """A chunk on its way to be sketched by a worker: its future, its texts and the name of
    the shared-memory block it is to come back in."""

    future: Future[Any]
    texts: list[str]
    name: str


class _FirstTexts:
    """The first document of each exact text (by :func:`text_key`): sorted runs of (key,
    position), merged as a binary counter merges (as the LSH join's runs), 16 bytes a text (a dict of Python ints
    held about 110: 90 MB for a million tiny records)."""

    def __init__(self) -> None:
        self._runs: list[tuple[npt.NDArray[np.uint64], Pos]] = []

    def first(self, keys: npt.NDArray[np.uint64], at: I64) -> I64:
        """For texts with ``keys`` at positions ``at`` (increasing, after those of every
        earlier call): the position of the first text with each one's key, an earlier
        call's or this one's (its own where it is the first); the new keys are kept."""
        if not len(at):
            return np.zeros(0, dtype=np.int64)
        order = np.argsort(keys, kind="stable")  # equal keys in position order
        sorted_keys = keys[order]
        starts = np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1]))
        group = np.cumsum(starts) - 1  # each sorted key's distinct key
        new_keys, own = sorted_keys[starts], at[order[starts]]
        firsts = own.copy()
        for run_keys, run_pos in self._runs:  # a key is in one run at most; none is empty
            k = np.minimum(np.searchsorted(run_keys, new_keys), len(run_keys) - 1)
            seen = run_keys[k] == new_keys
            firsts[seen] = run_pos[k[seen]]
        out = np.empty(len(at), dtype=np.int64)
        out[order] = firsts[group]
        fresh = firsts == own
        if fresh.any():
            self._runs.append((new_keys[fresh], own[fresh]))
            while len(self._runs) > 1 and 2 * len(self._runs[-1][0]) >= len(self._runs[-2][0]):
                newer = self._runs.pop()
                self._runs[-1] = _merge(self._runs[-1], newer)
        return out


_NONE_U64 = np.zeros(0, dtype=np.uint64)
_NONE_U32 = np.zeros(0, dtype=np.uint32)
_NONE_INDEX = np.zeros(0, dtype=np.uint16)
_NO_FIGURES: frozenset[str] = frozenset()


def _as_title(sketch: Sketch) -> Sketch:
    """What a decided text shorter than ``short_units`` is compared by from then on: every
    pair it is in is verified as titles (:func:`~neardup.engine.verify`), by the texts and
    their units alone. Its vocabulary and index were read to decide it and to count it in
    the template guard, its figures are read by coverage only (never for titles); a run that
    hands decisions out (so never explains them from the sketches later) keeps the rest only
    (about 270 bytes a tiny record less, and its figures: 216 bytes and their strings for
    the third of tiny records that hold any)."""
    return Sketch(
        sketch.text, None, sketch.n_units, _NONE_U64, _NONE_U64, _NONE_U32, _NO_FIGURES,
        _NONE_INDEX,
    )  # fmt: skip


def _stop_now(pool: Any) -> None:
    """Stop a process pool's workers at once, the pool's own threads with them.

    A worker stopped while it sends a result back leaves half a message in the pipe, and
    the pool's manager thread waits for the rest for ever (the interpreter with it, as it
    exits). So the results' write lock is taken first: no worker is halfway through a
    message while they are stopped; then the manager thread sees them gone and winds up.
    """
    workers = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    lock = getattr(getattr(pool, "_result_queue", None), "_wlock", None)
    held = lock is not None and lock.acquire(timeout=10)
    try:
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join(5)
            if worker.is_alive():
                worker.kill()
                worker.join(5)
    finally:
        if held and lock is not None:
            lock.release()
    if manager is not None:
        manager.join(10)


def _own_pages(common: CommonShingles) -> None:
    """``common.own_pages()`` in the thread a run starts at its workers' fork. Where it
    fails (out of memory), the table stays the one shared with the workers: the same
    counts, only slower to read — and the run itself meets the shortage next, and says so."""
    with contextlib.suppress(Exception):  # nothing lost, and no traceback from a thread
        common.own_pages()


def _worker_start(parent: int) -> None:
    """In each sketch worker: the run that started it decides when it stops. Ctrl-C (which a
    terminal sends to every process of the job) and SIGTERM are the parent's to handle, the
    handlers it had are not the worker's, and on Linux the worker ends if the parent dies
    even by SIGKILL."""
    import signal
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    set_huge_pages(False)  # a chunk's arrays are made and freed: neardup.memory
    keep_freed()  # and the heap they come from kept for the next chunk's: neardup.memory
    if sys.platform.startswith("linux"):
        import ctypes
        import os

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no prctl: nothing to ask
            return
        if os.getppid() != parent:  # the parent died before prctl: stop now
            os._exit(0)


def _sketch_packed(
    texts: list[str], cfg: DedupConfig, name: str
) -> tuple[Shared | Packed, list[U32 | None] | None]:
    """Sketch a chunk (in a worker) and pack the sketches for the way back, without their
    shingle codes (the run keeps none: :meth:`BatchRun._receive`): their arrays in the
    shared-memory block ``name`` where there is room (the pipe would copy them three
    times). With them, what each would add to the template guard as a story
    (:func:`~neardup.engine.story_codes`; None where that is its vocabulary, and no list
    without a guard): made here, beside the other workers, rather than by the run's
    process, which decides one document after another (on 20 Newsgroups, whose replies
    quote, some 0.3 s of its time)."""
    sketches = make_sketches(texts, cfg)
    owns: list[U32 | None] | None = None
    if cfg.common_after > 0:
        owns = []
        for sketch in sketches:
            own = story_codes(sketch)
            owns.append(None if own is sketch.vocab else own)
    return share(pack(sketches, shingles=False), name), owns
