"""The template guard: text seen in many stories is chrome, whatever its wording.

A shingle found in ``limit`` or more distinct stories (kept documents) is a site's footer, a
sign-off or a template phrase; and a *passage* — ``passage`` or more shingles in a row of
one text — every shingle of which has been seen in :data:`PASSAGE_STORIES` (two) different
stories is chrome too: a bio, a signature, a series' blurb or a subscription block that two
different stories carry is not a phrase they share by chance (a story's own text is counted
once however often it is reprinted: copies never count). Coverage ignores chrome on both
sides. Counts live in a fixed table of ``2^SLOT_BITS`` saturating bytes indexed by the top
bits of the shingle code (:func:`slots`); a few collisions only make a rare shingle look
common a little sooner — until the table holds so many stories that they do more (its
*load*, :data:`NOISE`), which a guard with a window (``chrome_window``) never reaches: it
counts in turns and forgets the stories before its last full turn (:meth:`CommonShingles.add`).

:class:`CommonShingles` is the guard the local runners update as they keep documents;
:class:`TemplateTable` is the same guard as the document at one input position sees it,
summarized by the positions at which each slot became seen and common (the Spark engine's
form). Verification takes either (:class:`TemplateGuard`), asking about a text's shingle
codes in text order.

>>> import numpy as np
>>> common = CommonShingles(limit=2)
>>> a, b = np.array([1 << 20, 2 << 20], dtype=np.uint32), np.array([2 << 20], dtype=np.uint32)
>>> common.add(a); common.add(b)
>>> common.is_common(np.array([1 << 20, 2 << 20, 3 << 20], dtype=np.uint32)).tolist()
[False, True, False]
>>> passages(np.array([1, 1, 0, 1, 1, 1, 0, 0], dtype=bool), 3).astype(int).tolist()
[0, 0, 0, 1, 1, 1, 0, 0]
>>> passages(np.array([0, 1, 1, 1, 1, 1, 1, 1], dtype=bool), 3).astype(int).tolist()
[0, 0, 0, 0, 0, 0, 0, 0]
"""

from __future__ import annotations

import math
import zlib
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..memory import table_copy, table_zeros, touch
from ..shingling import distinct

if TYPE_CHECKING:
    from .config import DedupConfig

__all__ = [
    "MAX_COUNT",
    "NOISE",
    "PASSAGE_REST",
    "PASSAGE_STORIES",
    "SLOT_BITS",
    "CommonShingles",
    "TemplateGuard",
    "TemplateTable",
    "chrome_passage_for",
    "common_after_for",
    "crowding",
    "holds",
    "passages",
    "slot_buckets",
    "slots",
    "turn_size",
    "window_for",
]

U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]

#: The count table has 2^SLOT_BITS slots; a shingle code's slot is its top SLOT_BITS bits.
SLOT_BITS = 26
_SHIFT = np.uint32(32 - SLOT_BITS)


#: The stories every shingle of a chrome passage has been seen in.
PASSAGE_STORIES = 2

#: A :class:`TemplateTable`'s bucket index (:func:`slot_buckets`) has a bucket for every
#: 2^BUCKET_SHIFT slots (2^20 buckets, 8 MB).
BUCKET_SHIFT = 6


#: A slot's count stops at this many stories (a byte, saturating).
MAX_COUNT = 255

#: The table's *load* is the stories each slot has counted, on average (every story's
#: distinct shingles over the 2^SLOT_BITS slots). The slots of unrelated shingles hold
#: about a Poisson number of stories of that mean, so a shingle never seen before starts
#: with a count: at a load of 1, 0.4 % of the slots hold five stories; at 2, 5 %; at 4,
#: 37 %. And a reprint's text, counted once by its story, is seen in two stories wherever
#: anything else shares its slot (at 4, 98 % of it), so long runs of it read as a passage
#: of chrome. Shingles of a story's own text then look like chrome, and its reprints are
#: missed: on the dev benchmarks, loaded at random to 1 / 2 / 4 / 8, F1 (zh, en) 0.9959 /
#: 0.9949 / 0.9775 / 0.7871 and 0.9799 / 0.9739 / 0.9276 / 0.7194, against 0.9966 and
#: 0.9827 (``bench/guard_load.py``); after real stories of other corpora (a load of 0.93),
#: en-dev 0.9754, since real English texts share more phrases than random ones. A long
#: Chinese news story adds about 1.84e-5 to the load (hkcnews: 27,463 stories, 0.505), so a
#: table holds some 54,000 of them before it reaches 1; shorter texts add less (20
#: Newsgroups 1.39e-5 a post, Reuters 8.8e-6 an item). :func:`common_after_for` and
#: :func:`chrome_passage_for` give the settings that keep chance below :data:`NOISE` at a
#: load, and :func:`crowding` tells a run whose settings are below them (with the defaults,
#: from a load of about 0.74).
#:
#: :func:`common_after_for` picks the smallest ``common_after`` that a slot holding only
#: unrelated shingles reaches at most this often.
NOISE = 1e-3


def common_after_for(load: float, limit: int) -> int:
    """The ``common_after`` (at least ``limit``) that a slot of a table at ``load`` reaches
    by chance at most :data:`NOISE` of the time (the Poisson tail of the load).

    >>> [common_after_for(x, 5) for x in (0.5, 1.0, 2.0, 4.0, 8.0)]
    [5, 6, 9, 12, 19]
    """
    if load <= 0:
        return limit
    term = tail = np.exp(-load)  # P(0), then the sum P(0..k)
    k = 0
    while 1.0 - tail > NOISE or k + 1 < limit:
        k += 1
        term *= load / k
        tail += term
    return max(limit, k + 1)


def chrome_passage_for(load: float, passage: int) -> int:
    """The ``chrome_passage`` (at least ``passage``; 0 stays 0) that a story's own text
    fills by chance at most :data:`NOISE` of the time in a table at ``load``: a reprint's
    shingles were counted once, by its story, so each is seen in two stories as soon as an
    unrelated shingle shares its slot (1 - e^-load of them), and a long run of them reads as
    a passage of chrome.

    >>> [chrome_passage_for(x, 96) for x in (1.0, 2.0, 3.0, 4.0)]
    [96, 96, 136, 374]
    """
    if passage <= 0 or load <= 0:
        return passage
    shared = -float(np.expm1(-load))  # 1 - e^-load
    if shared >= 1.0:
        return max(passage, 1 << 30)
    return max(passage, int(np.ceil(np.log(NOISE) / np.log(shared))))


def holds(limit: int, passage: int) -> float:
    """The highest load at which ``common_after`` at ``limit`` and ``chrome_passage`` at
    ``passage`` are what :func:`common_after_for` and :func:`chrome_passage_for` ask (to two
    decimals; the defaults: 0.73).

    >>> holds(5, 96), holds(9, 96)
    (0.73, 2.45)
    """
    if limit <= 0:
        return float(MAX_COUNT)
    low, high = 0, 100 * MAX_COUNT  # hundredths of a load: low holds, high does not
    while high - low > 1:
        mid = (low + high) // 2
        x = mid / 100
        ok = common_after_for(x, limit) <= limit and chrome_passage_for(x, passage) <= passage
        low, high = (mid, high) if ok else (low, mid)
    return low / 100


def window_for(limit: int, passage: int) -> float:
    """The ``chrome_window`` that keeps a guard with these settings below the load they hold
    (:func:`holds`): half of it, since the guard answers from two turns.

    >>> window_for(5, 96)
    0.36
    """
    return math.floor(holds(limit, passage) * 50) / 100


def crowding(load: float, limit: int, passage: int, window: float = 0.0) -> str | None:
    """What to tell a user whose run or store counted ``load`` stories a slot with
    ``common_after`` at ``limit``, ``chrome_passage`` at ``passage`` and ``chrome_window``
    at ``window``: None while both settings are at least what :func:`common_after_for` and
    :func:`chrome_passage_for` ask at that load (or the guard is off)."""
    if limit <= 0:
        return None
    wanted = {
        "common_after": (limit, common_after_for(load, limit)),
        "chrome_passage": (passage, chrome_passage_for(load, passage)),
    }
    raise_ = [f"{name}={new}" for name, (old, new) in wanted.items() if new > old]
    if not raise_:
        return None
    turn = window_for(limit, passage)
    if 0 < window <= turn:  # counted before the guard turned (a store's older table)
        return (
            f"the chrome table is crowded: {load:.2f} stories a slot on average (counted before "
            f"its guard turned), so a story's own text may be taken for chrome and reprints "
            f"missed until the guard has turned twice more (chrome_window={window:g}: a load "
            f"of {window:g} a turn) (README: How many stories the chrome guard holds)"
        )
    if window <= 0:
        forget = f"set chrome_window={turn:g} (--set chrome_window={turn:g}) so that it forgets"
    else:
        forget = f"lower chrome_window to {turn:g} (--set chrome_window={turn:g})"
    if wanted["common_after"][1] > MAX_COUNT:  # no count tells chrome from chance
        advice = f"{forget}, or set common_after=0 (--set common_after=0: no guard)"
    else:
        raising = " ".join(f"--set {x}" for x in raise_)
        advice = f"{forget}, or raise {' and '.join(raise_)} ({raising})"
    return (
        f"the chrome table is crowded: {load:.2f} stories a slot on average, so shingles of "
        f"unrelated stories share its slots, a story's own text may be taken for chrome and "
        f"reprints missed; {advice} (README: How many stories the chrome guard holds)"
    )


def turn_size(window: float) -> int:
    """The counts a turn of a guard with ``window`` adds before it ends: ``window`` (a load)
    times the table's size."""
    return int(window * (1 << SLOT_BITS))


def _cleared(table: npt.NDArray[np.uint8] | None, size: int) -> npt.NDArray[np.uint8]:
    """A count table of ``size`` slots set to zero: ``table`` itself when it is one of its
    own that can be written, else a new one."""
    if (
        table is None
        or len(table) != size
        or table.dtype != np.uint8
        or not table.flags.writeable
        or not table.flags.owndata
    ):
        return table_zeros(size)
    table.fill(0)
    return table


def slots(codes: U32) -> npt.NDArray[np.intp]:
    """The count-table slot of each shingle code."""
    return (codes >> _SHIFT).astype(np.intp)


#: A text's passages are chrome only when at least this share of it lies outside them: a
#: text that is all passage is a story seen again (after its window, or missed once), not
#: chrome around a story of its own.
PASSAGE_REST = 0.25


def passages(seen: npt.NDArray[np.bool_], length: int) -> npt.NDArray[np.bool_]:
    """Which of a text's shingles (``seen``: in two stories, in text order) lie in a passage
    of chrome: a run of at least ``length`` seen ones, when at least :data:`PASSAGE_REST`
    of the text lies outside such runs. None when ``length`` is 0."""
    out = np.zeros(len(seen), dtype=np.bool_)
    if length <= 0 or len(seen) < length:
        return out
    edges = np.diff(np.concatenate(([0], seen.view(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    long = ends - starts >= length
    if not long.any():
        return out
    rest = len(seen) - int((ends[long] - starts[long]).sum())
    if rest < PASSAGE_REST * len(seen):
        return out
    delta = np.zeros(len(seen) + 1, dtype=np.int32)
    delta[starts[long]] += 1  # runs are disjoint: no start repeats
    delta[ends[long]] -= 1
    out[:] = np.cumsum(delta[:-1]) > 0
    return out


class TemplateGuard(Protocol):
    """What verification asks of a template guard."""

    #: how many shingles in a row a passage of chrome holds at least (0: none): whether a
    #: shingle is chrome may depend on as many after it
    passage: int

    def is_common(self, codes: U32) -> npt.NDArray[np.bool_]:
        """Which of a text's shingle ``codes`` (in text order) are chrome: seen in
        ``limit`` stories or more, or inside a passage seen in :data:`PASSAGE_STORIES`."""
        ...


class CommonShingles:
    """How many distinct stories (kept documents) each shingle has appeared in, so far (or,
    with a ``window``, in the last full turn and the current one); ``passage``: the
    shortest run of shingles seen in :data:`PASSAGE_STORIES` stories that is chrome (0:
    none)."""

    def __init__(self, *, limit: int, passage: int = 0, window: float = 0.0) -> None:
        self.limit = limit
        self.passage = passage
        #: what the guard answers from: every story counted (``window`` 0), or the stories
        #: of this turn and the one before (saturating at :data:`MAX_COUNT`)
        self.counts = table_zeros(1 << SLOT_BITS)
        #: the load at which a turn ends (0: the guard never forgets; see :meth:`add`)
        self.window = float(window)
        #: this turn's counts once the first turn has ended (until then they are
        #: :attr:`counts`, and no second table is held); None without a window
        self.fresh: npt.NDArray[np.uint8] | None = None
        #: the counts this turn has added (its load times the table's size), and the turns
        #: ended so far
        self.filled = 0
        self.turns = 0

    @classmethod
    def of(cls, cfg: DedupConfig) -> CommonShingles:
        """An empty guard with a configuration's ``common_after``, ``chrome_passage`` and
        ``chrome_window``."""
        return cls(limit=cfg.common_after, passage=cfg.chrome_passage, window=cfg.chrome_window)

    @property
    def turn_size(self) -> int:
        """The counts a turn adds before it ends (:func:`turn_size`)."""
        return turn_size(self.window)

    def this_turn(self) -> npt.NDArray[np.uint8]:
        """This turn's counts (:attr:`counts` while the first turn runs, or without a
        window)."""
        return self.counts if self.fresh is None else self.fresh

    def add(self, vocab: U32) -> None:
        """Count one more story for each (distinct) shingle code in ``vocab``.

        With a ``window``, the guard *turns*: the stories are counted in this turn's table
        (:meth:`this_turn`) as well, and once the counts this turn has added reach
        ``window`` times the table's size (its load reaches ``window``), what the guard
        answers from becomes that turn's table alone and a new turn starts empty. The guard
        then always answers from the last full turn and the current one — between
        ``window`` and twice that load — and forgets the stories before them. Turns end
        where the stories counted, in the order they are counted, fill them, so every
        runner (and every process reading a store's log) turns at the same story. Until
        the first turn ends the two tables are one: nothing is forgotten and no second
        table is held."""
        if self.limit <= 0 or len(vocab) == 0:
            return
        if self.window <= 0:
            if kernels.wanted(len(vocab)):  # the same counts, without numpy's temporaries
                codes = np.ascontiguousarray(vocab, dtype=np.uint32)  # one compiled version
                kernels.load("_pairs").count_story(self.counts, codes)
                return
            kernels.work_done(len(vocab))
            at = slots(vocab)  # a fancy-index assignment counts a repeated slot once
            counts = self.counts[at]
            counts += counts < MAX_COUNT  # saturating
            self.counts[at] = counts
            return
        fresh = self.this_turn()
        if kernels.wanted(len(vocab)):
            codes = np.ascontiguousarray(vocab, dtype=np.uint32)
            added = int(kernels.load("_pairs").count_story_turning(self.counts, fresh, codes))
        else:
            kernels.work_done(len(vocab))
            at = distinct(slots(vocab))
            old = fresh[at]
            up = old < MAX_COUNT
            if fresh is not self.counts:
                counts = self.counts[at]
                self.counts[at] = counts + (up & (counts < MAX_COUNT))
            fresh[at] = old + up
            added = int(np.count_nonzero(up))
        self.filled += added
        if self.filled >= self.turn_size:  # the turn that ended is all the guard remembers
            if self.fresh is None:  # the first: what the guard answers from is that turn's
                self.fresh = table_zeros(len(self.counts))
            else:
                self.counts[:] = self.fresh
                self.fresh.fill(0)
            self.filled = 0
            self.turns += 1

    def load_factor(self) -> float:
        """The stories each slot has counted, on average, in what the guard answers from
        (see :data:`NOISE`)."""
        return float(self.counts.sum(dtype=np.int64)) / len(self.counts)

    def own_pages(self) -> None:
        """Copy the count table into memory of this process's own, with the same counts.
        A process calls it once it has forked children that never write to the table (the
        batch run's sketch workers): until one side writes, a fork leaves the table's pages
        shared, and the parent's first write to a shared huge page (2 MiB: the table asks
        for them, :func:`~neardup.memory.table_zeros`) makes the kernel split it into 4 KiB
        pages, copied one at a time.
        The table then spans 16,384 small pages, and almost every one of its random
        lookups misses the TLB: on hkcnews 10k, a story counted took 44-100 ns a shingle
        where the table of its own takes 23, and the verify stage 1.01 s instead of 0.72."""
        self.counts = table_copy(self.counts)
        if self.fresh is not None:
            self.fresh = table_copy(self.fresh)

    def touch(self) -> None:
        """Give the count tables their memory now (:func:`~neardup.memory.touch`), rather
        than at the first story counted, which would wait while the system clears some
        thirty huge pages (up to some 0.6 s on a virtual machine); the counts are unchanged."""
        touch(self.counts)
        if self.fresh is not None:
            touch(self.fresh)

    def remove(self, vocab: U32) -> None:
        """Undo one :meth:`add` of ``vocab`` (a saturated count stays at or above the limit).
        It cannot undo a story counted before the guard last turned (:attr:`turns`): a
        caller that sees the turns change between its adds and removes loads the guard
        again instead."""
        if self.limit <= 0 or len(vocab) == 0:
            return
        if self.window > 0:
            fresh = self.this_turn()
            at = distinct(slots(vocab))
            old = fresh[at]
            down = old > 0
            if fresh is not self.counts:
                counts = self.counts[at]
                self.counts[at] = counts - (down & (counts > 0))
            fresh[at] = old - down
            self.filled -= int(np.count_nonzero(down))
            return
        at = slots(vocab)
        self.counts[at] = np.maximum(self.counts[at].astype(np.int16) - 1, 0).astype(np.uint8)

    def last_turn(self) -> npt.NDArray[np.uint8]:
        """What the guard answers from less this turn's counts: the last full turn's (all
        zero while the first turn runs)."""
        if self.fresh is None:
            return np.zeros_like(self.counts)
        return self.counts - self.fresh  # never below: counts >= fresh

    def to_bytes(self) -> bytes:
        """The count table, compressed, for a store to keep (see :meth:`load`); with a
        window, the turns as :func:`~neardup.engine.compact.encode_guard` keeps them."""
        if self.window <= 0:
            return zlib.compress(self.counts.tobytes(), 1)
        from .compact import encode_guard

        return encode_guard(self)

    def load(self, blob: bytes) -> None:
        """Replace the counts with those :meth:`to_bytes` saved (a table of the same size)."""
        from .compact import is_guard, load_guard

        if is_guard(blob):
            load_guard(self, blob)
            return
        self.set_counts(np.frombuffer(zlib.decompress(blob), dtype=np.uint8))

    def restore(
        self,
        table: tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint8]],
        fresh: tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint8]] | None = None,
        filled: int = 0,
        turns: int = 0,
    ) -> None:
        """Replace the counts with those a store saved, each table given as its slots that
        are not zero (ascending) and their counts: a table saved without a window (``fresh``
        None: as :meth:`set_counts`), or a guard with a window's last full turn and this
        turn's, the counts this turn has added and the turns ended (a guard without a window
        answers from the two turns' counts, and counts on from them). Written over the
        tables the guard holds: a process that reads a saved table again (another process
        saved a newer one) touches no fresh memory and makes no temporary of a table's size."""
        where, counts = table
        out = _cleared(self.counts, len(self.counts))
        out[where] = counts
        if fresh is None:
            self._first_turn(out)
            return
        at, added = fresh
        out[at] = np.minimum(out[at] + added.astype(np.uint16), MAX_COUNT)
        self.counts = out
        if self.window <= 0:
            return
        self.filled, self.turns = int(filled), int(turns)
        if turns > 0:  # before the first turn ends, this turn's counts are the counts
            this = _cleared(self.fresh, len(out))
            this[at] = added
            self.fresh = this
        else:
            self.fresh = None

    def set_counts(self, counts: npt.NDArray[np.uint8]) -> None:
        """Replace the counts with a table saved without a window. A guard with a window
        takes it as its first turn (it turns at its next story once that holds ``window``
        or more)."""
        if len(counts) != len(self.counts):
            raise ValueError(f"saved table has {len(counts)} slots, expected {len(self.counts)}")
        self._first_turn(table_copy(counts))

    def _first_turn(self, counts: npt.NDArray[np.uint8]) -> None:
        """Answer from ``counts`` (a table of the guard's own), a table saved without a
        window: a guard with a window takes it as its first turn."""
        self.counts = counts
        self.fresh, self.turns = None, 0
        self.filled = int(counts.sum(dtype=np.int64)) if self.window > 0 else 0

    def is_common(self, codes: U32) -> npt.NDArray[np.bool_]:
        """Which of a text's ``codes`` (in text order) have been seen in ``limit`` stories
        or more, or lie in a passage of ``passage`` shingles seen in two stories or more."""
        if self.limit <= 0:
            return np.zeros(len(codes), dtype=np.bool_)
        counts = self.counts[slots(codes)]
        out: npt.NDArray[np.bool_] = counts >= self.limit
        if self.passage > 0:
            out |= passages(counts >= PASSAGE_STORIES, self.passage)
        return out


def slot_buckets(slot_ids: I64) -> I64:
    """Where each bucket of 2^:data:`BUCKET_SHIFT` slots starts in the sorted ``slot_ids``
    (and, last, their end): a slot ``s`` is among ``slot_ids[b[s >> BUCKET_SHIFT] :
    b[(s >> BUCKET_SHIFT) + 1]]``.

    >>> slot_buckets(np.array([3, 64, 65, 200], dtype=np.int64))[:5].tolist()
    [0, 1, 3, 3, 4]
    """
    edges = np.arange(0, (1 << SLOT_BITS) + 1, 1 << BUCKET_SHIFT, dtype=np.int64)
    out: I64 = np.searchsorted(slot_ids, edges).astype(np.int64)
    return out


class TemplateTable:
    """The guard as the document at input position ``at`` sees it, from a summary of the
    whole run: the sorted slots that are ever counted in :data:`PASSAGE_STORIES` kept
    stories (``slot_ids``; only those that become common when ``passage`` is 0), the input
    position of the ``limit``-th kept story holding each (``firsts``; the largest int64 for
    never) and of the second (``seconds``, when ``passage`` is set). A slot is common for
    ``at`` when that story came before it, and seen when the second did — what
    :class:`CommonShingles` says at that point of a run in input order."""

    def __init__(
        self,
        slot_ids: I64,
        firsts: I64,
        *,
        at: int,
        limit: int,
        seconds: I64 | None = None,
        passage: int = 0,
        buckets: I64 | None = None,
    ) -> None:
        self.slot_ids, self.firsts, self.at, self.limit = slot_ids, firsts, at, limit
        self.seconds = firsts if seconds is None else seconds
        self.passage = passage if seconds is not None else 0
        #: :func:`slot_buckets` of ``slot_ids`` (made once for many tables of one run), for
        #: the compiled kernels to find a slot in its bucket; None: a binary search
        self.buckets = buckets

    def is_common(self, codes: U32) -> npt.NDArray[np.bool_]:
        if self.limit <= 0 or len(self.slot_ids) == 0:
            return np.zeros(len(codes), dtype=np.bool_)
        s = slots(codes).astype(np.int64)
        pos = np.minimum(np.searchsorted(self.slot_ids, s), len(self.slot_ids) - 1)
        held = self.slot_ids[pos] == s
        hit: npt.NDArray[np.bool_] = held & (self.firsts[pos] < self.at)
        if self.passage > 0:
            hit |= passages(held & (self.seconds[pos] < self.at), self.passage)
        return hit
