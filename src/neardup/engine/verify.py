"""Verification of a candidate pair by **coverage**, and the guards that keep templates apart.

Coverage is the share of the shorter text's units (letters, digits, CJK characters) that
lie inside shingles the other text also has. A reprint that was cut short, excerpted or
lightly edited covers nearly all of itself (a typo uncovers one character, not a shingle),
while two different stories that share a dateline, a template phrase or a footer cover only
that stretch. Three guards keep templates apart: shingles the template guard calls common
(seen in ``common_after`` different stories) count on neither side; when the shorter text
has two or more figures, at least half must appear in the other (earnings, weather and
meeting items share words, not figures); and a fragment much shorter than the other text
needs more coverage. A later text is a copy only when it holds every figure of what it
repeats and changes none of its numbers (:func:`numbers_kept`). Short texts (titles, fewer
than ``short_units`` units) are verified with the character measures the source documents
advise for titles instead.

>>> from neardup.engine import DedupConfig, make_sketch
>>> cfg = DedupConfig()
>>> a = make_sketch("北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。", cfg)
>>> b = make_sketch("来源：某某日报\\n北京地铁十九号线今天开通运营，全长二十二公里。", cfg)
>>> v = verify(a, b, cfg)
>>> round(v.score, 2), v.measure, v.is_duplicate
(0.96, 'lcsubstr', True)
"""

from __future__ import annotations

import difflib
import functools
import re
import threading
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..frozen import quick_init
from ..kernels.tables import code_points
from ..measures import lcsubstr, levenshtein
from ..shingling import astral_words, distinct, unit_classes, unit_offsets
from .config import DedupConfig
from .prefilter import estimated_containment
from .sketches import Sketch, figures_within
from .templates import CommonShingles, TemplateGuard, TemplateTable

__all__ = [
    "NUMERALS",
    "QUOTE_START",
    "Placement",
    "Verdict",
    "at_edges",
    "copy_share",
    "coverage",
    "numbers_kept",
    "placement",
    "quoted_chars",
    "required",
    "units_in",
    "unquoted_codes",
    "verify",
]

U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]


def _shared(doc: Sketch, other: Sketch) -> npt.NDArray[np.bool_]:
    """Which of ``doc``'s shingles (in text order) ``other`` also has."""
    vocab = other.vocab
    if doc.vocab_index is None:
        codes = doc.shingles
        each: npt.NDArray[np.bool_] = (
            vocab[np.minimum(np.searchsorted(vocab, codes), len(vocab) - 1)] == codes
        )
        return each
    # look up the sorted distinct codes (fast), then spread to every position
    mine = doc.vocab
    found: npt.NDArray[np.bool_] = (
        vocab[np.minimum(np.searchsorted(vocab, mine), len(vocab) - 1)] == mine
    )[doc.vocab_index]
    return found


def coverage(short: Sketch, other: Sketch, cfg: DedupConfig, common: TemplateGuard | None) -> float:
    """Share of ``short``'s distinctive units inside shingles that ``other`` also has.

    Units only common shingles cover (boilerplate, templates) count on neither side.
    """
    return _score(placement(short, other, cfg, common), short, cfg, common)


@quick_init
@dataclass(frozen=True, slots=True)
class Verdict:
    """The verification of one candidate pair (a later document against an earlier one).

    ``score`` is how much of the shorter text the other covers, chrome aside, and
    ``is_duplicate`` whether that makes the two **the same story**. ``copy_score`` is how
    much of the *later* document's own text the earlier one covers, and ``is_copy`` whether
    the later document is mostly found in the earlier one — brings nothing new, and so is
    dropped. A same-story pair that is not a copy (a reply quoting its parent, a full article
    after an excerpt of it) keeps the later document, which *extends* the earlier one.
    """

    score: float
    measure: str
    is_duplicate: bool
    copy_score: float = 0.0
    is_copy: bool = False
    #: the shared text lies only at the edges of both (see :func:`at_edges`): chrome
    edges: bool = False
    #: the share of the later document's own units (not chrome) found in the other
    repeated: float = 0.0


def required(cfg: DedupConfig, ratio: float, base: float | None = None) -> float:
    """The coverage a pair needs when the shorter text is ``ratio`` times the longer.

    Below ``fragment_ratio`` the bar rises linearly towards 1.0: a fragment a fifth the length
    of a story is more often a shared template sentence than a reprint.
    """
    t = cfg.threshold if base is None else base
    r0 = cfg.fragment_ratio
    if r0 <= 0 or ratio >= r0:
        return t
    return t + (1.0 - t) * (r0 - ratio) / r0


def verify(
    a: Sketch,
    b: Sketch,
    cfg: DedupConfig,
    common: TemplateGuard | None = None,
    *,
    scored: bool = True,
) -> Verdict:
    """Verify the later document ``a`` against the earlier ``b``: the same story, and a copy?

    ``common`` (the stories seen so far) lets coverage ignore boilerplate and templates.
    ``scored=False`` is for a caller that reads a score only where it decides (a document's
    candidates, :func:`~neardup.engine.decide.best_match`: the coverage of the same story,
    the copy share of a copy): the figure rule, which can only lower a score, is not
    applied to a coverage below the bar nor to a copy share below ``copy_threshold``, and
    those come back uncapped.
    """
    if a.is_empty or b.is_empty:
        same = a.text == b.text
        score = 1.0 if same else 0.0
        measure = "identical" if same else "coverage"
        return Verdict(score, measure, same, score, same, repeated=score)
    short, other = (a, b) if a.n_units <= b.n_units else (b, a)
    if short.n_units < cfg.short_units:
        return _titles(a, short, other, cfg)
    if estimated_containment(short, other) < cfg.prefilter:
        return Verdict(0.0, "coverage", False)
    work = short.n_units + other.n_units
    fast = kernels.wanted(work)
    if not fast:
        kernels.work_done(work)
    mine, mine_span, mine_holes = _placed(short, other, cfg, common, fast)
    score = _score(mine, short, cfg, common)
    bar = required(cfg, short.n_units / other.n_units)
    if score < bar and not scored:
        return Verdict(score, "coverage", False)
    score = _agreeing(score, short, other, cfg, common, mine_span)
    if score < bar:
        return Verdict(score, "coverage", False)
    if short is a and not _may_be_edges(mine, other, short, cfg, common, fast):
        # not needed: the later text is the shorter, and no edge rule can hold
        theirs, theirs_span, theirs_holes = mine, mine_span, mine_holes
    else:
        theirs, theirs_span, theirs_holes = _placed(other, short, cfg, common, fast)
        if _edges(mine, theirs, cfg):
            return Verdict(score, "coverage", False, edges=True)
    later, span, holes = (
        (mine, mine_span, mine_holes) if short is a else (theirs, theirs_span, theirs_holes)
    )
    own = copy_share(later, cfg)
    if scored or own >= cfg.copy_threshold:
        own = _agreeing(own, a, b, cfg, common, span, copy=True)
        if scored or own >= cfg.copy_threshold:
            own = min(own, numbers_kept(a, b, cfg, holes))
    # when every unit of the later text's own is shared, so is every one off its quoted
    # lines (the same shingles, the same chrome): their placement would cap nothing (but
    # where none is off them and ``short_units`` is 0, which makes that a share of 0)
    all_shared = later.shared == later.total and cfg.short_units > 0
    if own >= cfg.copy_threshold and not all_shared and has_quotes(a.text):
        unquoted = _unquoted(a, b, cfg, common, fast)
        if unquoted is not None:
            own = min(own, copy_share(unquoted, cfg))
    repeated = later.shared / later.total if later.total else 0.0
    return Verdict(score, "coverage", True, own, own >= cfg.copy_threshold, repeated=repeated)


def _score(place: Placement, short: Sketch, cfg: DedupConfig, guard: TemplateGuard | None) -> float:
    """:func:`coverage` from the placement of ``short``: its shared units over its units
    that are not chrome (over all its units without a guard); 0 when fewer than
    ``short_units`` are not chrome."""
    if short.n_units == 0 or place.shared == 0:
        return 0.0
    if guard is None:
        return place.shared / short.n_units
    if place.total < cfg.short_units:
        return 0.0  # nothing distinctive left to compare
    return place.shared / place.total


class Placement(NamedTuple):
    """Where a text's own units (not chrome) lie around what it shares with another: before
    the first shared unit, after the last, the longest run between shared ones, all of them
    (``total``) and the shared ones (``shared``)."""

    head: int
    tail: int
    gap: int
    total: int
    shared: int


def _merged(starts: I64, ends: I64) -> tuple[I64, I64]:
    """The union of the intervals [starts[k], ends[k]) (starts ascending) as disjoint
    intervals, in order."""
    reach = np.maximum.accumulate(ends)
    first = np.flatnonzero(np.concatenate(([True], starts[1:] > reach[:-1])))
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = len(starts) - 1
    return starts[first], reach[last]


def placement(
    doc: Sketch, other: Sketch, cfg: DedupConfig, guard: TemplateGuard | None
) -> Placement:
    """Where ``doc``'s own units lie around what it shares with ``other`` (see
    :class:`Placement`), counted in units that are not chrome, from the unions of shingle
    intervals (no array of the text's length). Against an ``other`` without shingles (never
    placed against in verification, which compares such texts whole) every unit counts, the
    chrome not looked up."""
    fast = kernels.wanted(doc.n_units)
    if not fast:
        kernels.work_done(doc.n_units)
    return _placed(doc, other, cfg, guard, fast)[0]


def _placed(
    doc: Sketch, other: Sketch, cfg: DedupConfig, guard: TemplateGuard | None, fast: bool
) -> tuple[Placement, tuple[int, int] | None, bool | None]:
    """:func:`placement`, with the compiled kernel when ``fast``, and then also
    :func:`_shared_span` and whether ``doc`` has units outside every shingle it shares with
    ``other``, chrome or not, between units inside one (both None from numpy, which works
    them out only when they are needed): without them, no number changed
    (:func:`numbers_kept`)."""
    if not fast:
        return _numpy_placement(doc, other, cfg, guard), None, None
    index, codes = doc.vocab_index, _kernel_codes(doc, guard)
    head, tail, gap, total, shared, first, last, holes = kernels.load("_pairs").placement(
        codes, doc.n_units, _NO_INDEX if index is None else index, doc.vocab,
        other.vocab, cfg.cjk_width, cfg.word_width, *guard_arrays(guard, codes),
        _SPARE.codes, _SPARE.flags,
    )  # fmt: skip
    return Placement(head, tail, gap, total, shared), (first, last), holes


class _Spare(threading.local):
    """Arrays a thread's pair kernels work in, kept from one call to the next: allocating
    them for each call cost the placement kernel an eighth of its time in ``malloc`` in a
    run holding gigabytes. A text too long for them (over 65,536 shingles) gets arrays of
    its own from the kernel."""

    def __init__(self) -> None:
        self.codes = np.zeros(_SPARE_CODES, dtype=np.uint32)
        self.flags = np.zeros(3 * _SPARE_CODES, dtype=np.bool_)


_SPARE_CODES = 1 << 16
_SPARE = _Spare()


_NO_INDEX = np.zeros(0, dtype=np.uint16)
_NO_CODES = np.zeros(0, dtype=np.uint32)


def _kernel_codes(doc: Sketch, guard: TemplateGuard | None) -> U32:
    """A document's shingle codes as the kernels take them: none (the kernel reads them as
    ``vocab[vocab_index]``) when the sketch keeps its index instead of its codes and the
    guard is one the kernels read themselves; else the codes."""
    if doc.vocab_index is not None and not doc.keeps_shingles and _kernel_guard(guard):
        return _NO_CODES
    return doc.shingles


def _kernel_guard(guard: TemplateGuard | None) -> bool:
    """Whether the kernels read the guard's own arrays (else :func:`guard_arrays` asks it
    about the codes beforehand)."""
    return guard is None or type(guard) is CommonShingles or type(guard) is TemplateTable


_NO_COUNTS = np.zeros(1, dtype=np.uint8)
_NO_SLOTS = np.zeros(1, dtype=np.int64)
_NO_MASK = np.zeros(1, dtype=np.bool_)
_NO_GUARD = (0, _NO_COUNTS, 0, _NO_SLOTS, _NO_SLOTS, _NO_SLOTS, 0, 0, _NO_MASK)


def guard_arrays(guard: TemplateGuard | None, codes: U32) -> tuple[Any, ...]:
    """A template guard as the compiled kernels take it (see :mod:`neardup.kernels._pairs`):
    (kind, counts, limit, slot_ids, firsts, seconds, at, passage, mask); ``codes`` are the
    shingles (in text order) a guard of another type is asked about beforehand."""
    if guard is None:
        return _NO_GUARD
    if type(guard) is CommonShingles:
        if guard.limit <= 0:
            return _NO_GUARD
        return (
            1,
            guard.counts,
            guard.limit,
            _NO_SLOTS,
            _NO_SLOTS,
            _NO_SLOTS,
            0,
            guard.passage,
            _NO_MASK,
        )
    if type(guard) is TemplateTable:
        if guard.limit <= 0 or len(guard.slot_ids) == 0:
            return _NO_GUARD
        slot_ids = np.ascontiguousarray(guard.slot_ids, dtype=np.int64)
        firsts = np.ascontiguousarray(guard.firsts, dtype=np.int64)
        seconds = np.ascontiguousarray(guard.seconds, dtype=np.int64)
        buckets = guard.buckets
        return (
            2,
            _NO_COUNTS if buckets is None else buckets,
            guard.limit,
            slot_ids,
            firsts,
            seconds,
            guard.at,
            guard.passage,
            _NO_MASK,
        )
    mask = np.ascontiguousarray(guard.is_common(codes), dtype=np.bool_)
    return 3, _NO_COUNTS, 0, _NO_SLOTS, _NO_SLOTS, _NO_SLOTS, 0, 0, mask


def _numpy_placement(
    doc: Sketch, other: Sketch, cfg: DedupConfig, guard: TemplateGuard | None
) -> Placement:
    """:func:`placement` with numpy: the reference."""
    codes, n = doc.shingles, doc.n_units
    if len(codes) == 0 or len(other.vocab) == 0:
        return Placement(n, 0, 0, n, 0)
    shared = _shared(doc, other)
    positions = np.arange(len(codes), dtype=np.int64)
    ends = np.minimum(positions + np.where(codes & 1, cfg.cjk_width, cfg.word_width), n)
    if guard is not None:
        rare = ~guard.is_common(codes)
        own, idx = positions[rare], positions[shared & rare]
    else:
        own, idx = positions, positions[shared]
    if len(own) == 0:
        return Placement(0, 0, 0, 0, 0)
    c_start, c_end = _merged(own, ends[own])  # every unit that is not chrome
    lengths = c_end - c_start
    total = int(lengths.sum())
    if len(idx) == 0:
        return Placement(total, 0, 0, total, 0)
    s_start, s_end = _merged(idx, ends[idx])  # every such unit the other has too
    before = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=before[1:])
    # how many units that are not chrome lie before each start and each end of a shared run
    # (each lies inside one of the runs of units that are not chrome)
    at = np.concatenate((s_start, s_end))
    k = np.searchsorted(c_start, at, side="right") - 1
    counted = before[k] + np.minimum(at, c_end[k]) - c_start[k]
    starts, stops = counted[: len(s_start)], counted[len(s_start) :]
    gap = int((starts[1:] - stops[:-1]).max()) if len(starts) > 1 else 0
    return Placement(
        int(starts[0]), total - int(stops[-1]), max(gap, 0), total, int((s_end - s_start).sum())
    )


#: The most of a text that a run of its own at its top or bottom left out of its copy share
#: may be (see :func:`copy_share`).
ASIDE_SHARE = 0.2


def copy_share(place: Placement, cfg: DedupConfig) -> float:
    """How much of a later document its match covers, for the copy decision: its shared
    units over its own, leaving out a short run of its own at its top or bottom (fewer than
    ``short_units`` units and at most :data:`ASIDE_SHARE` of the text: a site's header or
    footer line, what any reprint adds — not the first line of a short item that differs,
    such as a dividend notice's amount above the dates it shares with another's)."""
    short_edge = min(cfg.short_units, ASIDE_SHARE * place.total + 1)
    aside = (place.head if place.head < short_edge else 0) + (
        place.tail if place.tail < short_edge else 0
    )
    own = place.total - aside
    return place.shared / own if own > 0 else 0.0


#: A quoted line: its first character (after spaces) is ``>`` — the plain-text quoting of
#: mail, Usenet, forums and Markdown, whatever the site.
QUOTE_START = r"^[ \t]*>"
_QUOTED = re.compile(QUOTE_START + r"[^\n]*", re.MULTILINE)


def has_quotes(text: str) -> bool:
    """Whether a prepared text has a quoted line (see :func:`quoted_units`): a line that
    starts with ``>`` right after a line end (or the text's start) is found by a substring
    search; only a text without one is searched with the expression (a ``>`` after spaces
    or tabs, or none at all)."""
    if ">" not in text:
        return False
    if "\n>" in text or text.startswith(">"):
        return True
    return _QUOTED.search(text) is not None


def quoted_chars(text: str) -> int:
    """How many characters of a prepared text lie on its quoted lines."""
    return sum(m.end() - m.start() for m in _QUOTED.finditer(text)) if ">" in text else 0


def quoted_units(text: str, n_units: int) -> npt.NDArray[np.bool_]:
    """Which of a text's ``n_units`` units lie on quoted lines (lines starting with ``>``):
    text the document quotes from another, not its own. Units past a kept text's end (a
    text longer than the sketch keeps) count as not quoted. With the compiled kernel when
    the kernels are wanted (the same mask as :func:`_numpy_quoted_units`).

    >>> quoted_units("x wrote:\\n> old line\\nnew", 16).astype(int).tolist()
    [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0]
    """
    if kernels.wanted(len(text)):
        cp = code_points(text)
        mask: npt.NDArray[np.bool_] = kernels.load("_pairs").quoted_units(
            cp, unit_classes(), astral_words(cp), n_units
        )
        return mask
    kernels.work_done(len(text))
    return _numpy_quoted_units(text, n_units)


def _numpy_quoted_units(text: str, n_units: int) -> npt.NDArray[np.bool_]:
    """:func:`quoted_units` with numpy and the regular expression: the reference."""
    mask = np.zeros(n_units, dtype=np.bool_)
    where = unit_offsets(text)[:n_units]
    if len(where) == 0:
        return mask
    spans = np.array([m.span() for m in _QUOTED.finditer(text)], dtype=np.int64).reshape(-1, 2)
    if len(spans) == 0:
        return mask
    # a unit is quoted when the last quoted line starting at or before it has not ended
    k = np.searchsorted(spans[:, 0], where, side="right") - 1
    mask[: len(where)] = (k >= 0) & (where < spans[np.maximum(k, 0), 1])
    return mask


def unquoted_codes(codes: U32, text: str, n_units: int) -> U32 | None:
    """The distinct shingle ``codes`` (a text's, in text order) that do not start on a
    quoted line of its prepared ``text``; None when it has no quoted line (all of them)."""
    if not has_quotes(text):
        return None
    quoted = quoted_units(text, n_units)
    own: U32 = distinct(codes[~quoted[: len(codes)]])
    return own


def _unquoted(
    doc: Sketch,
    other: Sketch,
    cfg: DedupConfig,
    guard: TemplateGuard | None,
    fast: bool = False,
) -> Placement | None:
    """:func:`placement` of ``doc`` against ``other`` over its own units that are not
    quoted (see :func:`quoted_units`): what the document itself says. None when fewer than
    ``short_units`` such units are left (a forwarded text, all quoted: the whole text is
    what it brings). With the compiled kernels when ``fast`` (the same placement)."""
    n = doc.n_units
    size = len(doc.shingles) if doc.keeps_shingles else len(doc.vocab_index)  # type: ignore[arg-type]
    if size == 0 or len(other.vocab) == 0:
        return None
    if fast:
        codes = _kernel_codes(doc, guard)
        index = doc.vocab_index
        pairs = kernels.load("_pairs")
        cp = code_points(doc.text)
        quoted = pairs.quoted_units(cp, unit_classes(), astral_words(cp), n)
        head, tail, gap, total, shared = pairs.unquoted_placement(
            codes, n, _NO_INDEX if index is None else index, doc.vocab, quoted, other.vocab,
            cfg.short_units, cfg.cjk_width, cfg.word_width, *guard_arrays(guard, codes),
            _SPARE.codes, _SPARE.flags,
        )  # fmt: skip
        return None if total < 0 else Placement(head, tail, gap, total, shared)
    codes = doc.shingles
    rare = np.ones(len(codes), dtype=np.bool_) if guard is None else ~guard.is_common(codes)
    own = ~_numpy_quoted_units(doc.text, n) & units_in(codes, rare, n, cfg)
    if int(own.sum()) < cfg.short_units:
        return None
    found = units_in(codes, _shared(doc, other) & rare, n, cfg)[own]
    total, hits = len(found), np.flatnonzero(found)
    if len(hits) == 0:
        return Placement(total, 0, 0, total, 0)
    gaps = np.diff(hits) - 1
    gap = int(gaps.max()) if len(gaps) else 0
    return Placement(int(hits[0]), total - 1 - int(hits[-1]), gap, total, len(hits))


def units_in(
    codes: U32, chosen: npt.NDArray[np.bool_], n_units: int, cfg: DedupConfig
) -> npt.NDArray[np.bool_]:
    """Which of a text's ``n_units`` units lie inside the shingles (``codes``, in text
    order) that ``chosen`` marks."""
    starts = np.flatnonzero(chosen)
    widths = np.where(codes[starts] & np.uint32(1), cfg.cjk_width, cfg.word_width)
    ends = np.minimum(starts + widths, n_units)
    delta = np.bincount(starts, minlength=n_units + 1) - np.bincount(ends, minlength=n_units + 1)
    inside: npt.NDArray[np.bool_] = np.cumsum(delta[:n_units]) > 0
    return inside


#: Shares of a text's own units (not chrome) that make an edge of it its own: what a
#: different opening, ending or middle must hold for the shared rest to be chrome.
EDGE_ENDS = 0.25  # different openings around the same ending (a sign-off, a bio)
EDGE_STARTS = 0.35  # the same opening (header lines) before different endings
EDGE_MIDDLE = 0.45  # the same opening and ending around a different middle
#: ... or around different middles in both texts, each at least this share of its text and
#: MIDDLE_UNITS long: one author's posts between his header lines and his signature, each
#: with a body of its own (a reprint's edits leave no such middle on both sides)
EDGE_MIDDLES = 0.2
MIDDLE_UNITS = 100
#: ... or around one middle of the longer that is at least this share of it and holds at
#: least FRAMED_OWN of its own text, while the shorter has a middle of its own (EDGE_MIDDLES
#: of it): the same header lines and signature, or a series' blurb, around a short post and
#: a long one (a fuller version of an article adds its paragraphs in several places, and
#: an excerpt has no middle of its own)
FRAMED_MIDDLE = 0.45
FRAMED_OWN = 0.8
SIGN_OFF = 0.5  # the shorter, to its end, found only in the second half of the longer


def at_edges(short: Sketch, other: Sketch, cfg: DedupConfig, guard: TemplateGuard | None) -> bool:
    """Whether what two texts share lies only at their edges — the same closing lines (a
    sign-off, a bio, a series footer), the same opening lines (headers), or both — around
    different texts of their own: chrome, not one story. Also when the shorter, up to its
    end, is found only in the second half of the longer, after text of the longer's own (a
    post that is little more than the bio every column ends with). Each part of a text's
    own must hold at least ``short_units`` units and the share above of its units that are
    not chrome."""
    return _edges(placement(short, other, cfg, guard), placement(other, short, cfg, guard), cfg)


def _may_be_edges(
    mine: Placement,
    other: Sketch,
    short: Sketch,
    cfg: DedupConfig,
    guard: TemplateGuard | None,
    fast: bool = False,
) -> bool:
    """False when no rule of :func:`_edges` can hold whatever the longer text's placement:
    the shorter's own opening, ending and middle are too small for the first three, and the
    longer text shares a shingle with it within its first ``short_units`` units (so no
    sign-off). Spares working out the longer text's placement for most reprints."""
    edge = cfg.short_units
    n = mine.total
    if mine.head >= max(edge, EDGE_ENDS * n) or mine.tail >= max(edge, EDGE_STARTS * n):
        return True
    if mine.gap >= max(edge, EDGE_MIDDLES * n):  # the smallest middle any rule takes
        return True
    if mine.tail >= edge:
        return False  # the sign-off rule needs the shorter to be shared up to its end
    # the longer's units before its first shared one, at least (whether one is chrome may
    # depend on the whole text: a passage of chrome, and how much of the text lies outside)
    vocab = short.vocab
    if fast:
        codes = _kernel_codes(other, guard)
        index = _NO_INDEX if len(codes) or other.vocab_index is None else other.vocab_index
        found = kernels.load("_pairs").any_shared(
            codes, index, other.vocab, edge, vocab, *guard_arrays(guard, codes)
        )
        return not found
    codes = other.shingles if guard is not None and guard.passage > 0 else other.shingles[:edge]
    head = codes[:edge]
    hit = vocab[np.minimum(np.searchsorted(vocab, head), len(vocab) - 1)] == head
    if guard is not None:
        hit &= ~guard.is_common(codes)[:edge]
    return not hit.any()


def _edges(mine: Placement, theirs: Placement, cfg: DedupConfig) -> bool:
    sh, st, sg, sn = mine.head, mine.tail, mine.gap, mine.total
    oh, ot, og, on = theirs.head, theirs.tail, theirs.gap, theirs.total

    def own(units: int, total: int, share: float) -> bool:
        return units >= max(cfg.short_units, share * total)

    edge = cfg.short_units  # what is left at the other end is no more than this
    return (
        (own(sh, sn, EDGE_ENDS) and own(oh, on, EDGE_ENDS) and st < edge and ot < edge)
        or (own(st, sn, EDGE_STARTS) and own(ot, on, EDGE_STARTS) and sh < edge and oh < edge)
        or own(sg, sn, EDGE_MIDDLE)
        or (min(sg, og) >= MIDDLE_UNITS and own(sg, sn, EDGE_MIDDLES) and own(og, on, EDGE_MIDDLES))
        or (
            own(sg, sn, EDGE_MIDDLES)
            and own(og, on, FRAMED_MIDDLE)
            and og >= FRAMED_OWN * (on - theirs.shared)
        )
        or (st < edge and own(oh, on, SIGN_OFF))
    )


def unit_chars(text: str, first: int, last: int) -> tuple[int, int] | None:
    """Where a prepared text's units ``first`` and ``last`` are: the index of each one's
    character (a unit past the text's last is taken as its last); None when the text has
    no units. With the compiled kernel when the kernels are wanted (one pass that stops at
    ``last``), else from :func:`~neardup.shingling.unit_offsets`.

    >>> unit_chars("ab, 中d", 1, 9), unit_chars(", ;", 0, 0)
    ((1, 5), None)
    """
    if kernels.wanted(len(text)):
        cp = code_points(text)
        lo, hi = kernels.load("_pairs").unit_chars(
            cp, unit_classes(), astral_words(cp), first, last
        )
        return None if lo < 0 else (int(lo), int(hi))
    kernels.work_done(len(text))
    where = unit_offsets(text)
    if len(where) == 0:
        return None
    return int(where[min(first, len(where) - 1)]), int(where[min(last, len(where) - 1)])


#: The same story: at least this share of the shorter text's figures (when it has two or
#: more) are in the other.
SAME_FIGURES = 0.5


def _agreeing(
    score: float,
    short: Sketch,
    other: Sketch,
    cfg: DedupConfig,
    guard: TemplateGuard | None,
    span: tuple[int, int] | None = None,
    *,
    copy: bool = False,
) -> float:
    """``score``, capped by the share of ``short``'s figures that are in ``other``.

    For the same story (``copy`` False), when fewer than :data:`SAME_FIGURES` of them (two
    or more) are: earnings, weather and meeting items share words, not figures. For a copy
    (``short`` is then the later text, and ``score`` its copy share), whenever one is not: a
    figure the earlier text does not have — another dividend, the day's prices, a new
    death toll — is news of its own, so the later text is at most as much a copy as the
    share of its figures found (kept, and extending the earlier, when under
    ``copy_threshold``). Figures outside the span ``short`` shares with ``other`` — before
    the first shared unit or after the last, where a site adds its view counter or its
    own date — are not compared."""
    least, bar = (1, 1.0) if copy else (2, SAME_FIGURES)
    if len(short.numbers) < least:
        return score
    agree = len(short.numbers & other.numbers) / len(short.numbers)
    if agree >= bar:
        return score
    first, last = _shared_span(short, other, cfg, guard) if span is None else span
    read = _remembered_figures if len(short.text) <= _REMEMBERED_CHARS else _figures_inside
    inside = read(short.text, first, last, copy)
    if inside is None:
        return min(score, agree)
    if len(inside) < least:
        return score
    agree = len(inside & other.numbers) / len(inside)
    return min(score, agree) if agree < bar else score


def _figures_inside(text: str, first: int, last: int, news: bool) -> frozenset[str] | None:
    """The figures of ``text`` that start inside its units ``first`` to ``last`` (in its
    news alone when ``news``: :func:`_news`); None when it has no such units."""
    chars = None if first > last else unit_chars(text, first, last)
    if chars is None:
        return None
    return frozenset(figures_within(_news(text) if news else text, *chars))


#: :func:`_figures_inside` of a text of up to _REMEMBERED_CHARS characters is remembered
#: (the latest _REMEMBERED_FIGURES): a title is compared whole with each of its candidates,
#: the same span of the same text each time (in a flood of a million short records, this
#: was half of the titles' verification).
_REMEMBERED_CHARS = 256
_REMEMBERED_FIGURES = 4096
_remembered_figures = functools.lru_cache(maxsize=_REMEMBERED_FIGURES)(_figures_inside)


#: A line that labels a value — a header field, a byline, a counter ("lines: 15", "posted by:
#: …", "阅读：1234"; at most 80 characters, a colon after a label of at most 24, and no "。":
#: a sentence after a source's name, "某台消息：…。", is news; nor is a colon between two
#: digits, a time or a ratio: "soybean report 11:00 EDT") — or what
#: follows ("… writes:", "以下为转载："; at most 160, a colon at its end); and an address
#: (a URL, with a web archive's capture time in it; read from where a word starts, so that a
#: long run of text without spaces is read once).
_LABELLED = (
    r"^(?:(?=[^\n]{0,80}$)[^\n:]{1,24}:(?!//)(?!(?<=\d:)\d)[^\n。]*"
    r"|(?=[^\n]{0,160}$)[^\n]*:[ \t]*)$"
)
_ADDRESS = r"(?:^|(?<=[\s(\[]))[^\s()\[\]]*://[^\s)\]]*|\bwww\.[^\s)\]]+"
_NOT_NEWS = re.compile(f"{_LABELLED}|{_ADDRESS}", re.MULTILINE)
_ADDRESSES = re.compile(_ADDRESS, re.MULTILINE)


def _news(text: str) -> str:
    r"""``text`` with its labelled lines and addresses blanked (the same length, so offsets
    hold): their figures are the site's or the mailer's — a post's line count, a page's
    views, a message id, a capture time —, not the text's own news, and a copy may differ
    in them. A text of one line (a title, "专栏：第二集") is its own news: its addresses
    alone are blanked.

    >>> _news("lines: 15\n12 hurt (http://a.b/web/2021/x)\nx wrote:\n")
    '         \n12 hurt (                     )\n        \n'
    >>> _news("Soybean report 11:00 EDT")  # a time (a digit each side of the colon) is news
    'Soybean report 11:00 EDT'
    >>> _news("Update: 12 hurt")
    'Update: 12 hurt'

    What ``_NOT_NEWS`` blanks (or ``_ADDRESSES``, in a text of one line), worked out line by
    line: each of its matches lies within a line, and a labelled line is one whole; only a
    line holding a ":" or "www." can hold either (an hkcnews article, most of which have
    some, 106 -> 8 µs; a 20 Newsgroups post 131 -> 9 µs).
    """
    if "\n" not in text.strip():
        return _without_addresses(text)
    if ":" not in text and "www." not in text:
        return text
    lines = text.split("\n")
    for k, line in enumerate(lines):
        if ":" in line or "www." in line:
            lines[k] = " " * len(line) if _labelled(line) else _without_addresses(line)
    return "\n".join(lines)


def _labelled(line: str) -> bool:
    """Whether a line (no line break in it) is one ``_LABELLED`` matches whole: at most 80
    characters, its first colon after 1 to 24 of them, not before "//", not between two
    digits, and no "。" after it; or at most 160, and a colon at its end (spaces and tabs
    after it)."""
    n = len(line)
    if n <= 80:
        i = line.find(":")
        if (
            1 <= i <= 24
            and not line.startswith("//", i + 1)
            and not (line[i - 1].isdecimal() and line[i + 1 : i + 2].isdecimal())
            and "。" not in line[i + 1 :]
        ):
            return True
    return n <= 160 and line.rstrip(" \t").endswith(":")


def _without_addresses(text: str) -> str:
    """``text`` with what ``_ADDRESSES`` matches blanked (each match holds "://" or "www.")."""
    if "://" not in text and "www." not in text:
        return text
    return _ADDRESSES.sub(lambda m: " " * len(m.group()), text)


#: A numeral: a digit, or a Chinese numeral from 〇 to 十 (as a prepared text spells them).
NUMERALS = "0123456789〇零一二三四五六七八九十"
_IS_NUMERAL = np.zeros(0x10000, dtype=np.bool_)  # by code point, below U+10000
_IS_NUMERAL[[ord(c) for c in NUMERALS]] = True
_NUMERAL_SET = frozenset(NUMERALS)
_NUMERAL_SHAPE = str.maketrans(dict.fromkeys(NUMERALS, "0"))  # every numeral as one


#: Two texts both shorter than this many units are compared for their numbers by their
#: characters (:func:`numbers_kept`); a compact store keeps such a text whole.
CHARACTER_UNITS = 100


def numbers_kept(
    later: Sketch, earlier: Sketch, cfg: DedupConfig, holes: bool | None = None
) -> float:
    """The share of the numbers of ``later`` it repeats from ``earlier`` unchanged: of two
    texts under :data:`CHARACTER_UNITS` units, read from their characters
    (:func:`_numbers_by_characters`: a change near either end too; 0 or 1, one changed
    number being enough); else from their shingles
    (:func:`_numbers_by_shingles`), all of them when ``holes`` is False (the placement of
    ``later`` found none of its units outside the shingles it shares, between units inside
    them: no number changed there).

    >>> cfg = DedupConfig()
    >>> from .sketches import make_sketch
    >>> a = make_sketch("神舟十六号船箭组合体转运至发射区 计划近日择机实施发射", cfg)
    >>> b = make_sketch("神舟十七号船箭组合体转运至发射区 计划近日择机实施发射", cfg)
    >>> numbers_kept(b, a, cfg), _numbers_by_shingles(b, a, cfg)
    (0.0, 1.0)
    """
    if later.n_units < CHARACTER_UNITS and earlier.n_units < CHARACTER_UNITS:
        return _numbers_by_characters(later.text, earlier.text)
    if holes is False:
        return 1.0
    return _numbers_by_shingles(later, earlier, cfg)


def _numbers_by_shingles(later: Sketch, earlier: Sketch, cfg: DedupConfig) -> float:
    """The share of the numbers within what ``later`` shares with ``earlier`` that it
    repeats: a *number* is a run of numerals (:data:`NUMERALS`, on lines that are news:
    :func:`_news`), and it is not repeated when it holds a changed number — a run of units
    that the earlier text does not cover, between units it does, all of them numerals (a
    typo or an edit next to a number uncovers other units too). A copy that changed a
    number — the session of an annual congress ("十四届三次会议" for "二次会议"), a date,
    the part of a series ("之二" for "之一"), a toll — is not a copy, however little of it
    changed: the copy share is capped by this.
    The figure rule (:func:`_agreeing`) compares figures of two characters or more as sets;
    this one reads where they changed, numeral by numeral.

    The span is read without the template guard: the shingles of a phrase many stories
    repeat — the name of this year's session — are chrome to the guard, and the number in
    them is still the news. 1.0 when ``later`` has no number there or nothing is shared.

    >>> from .sketches import make_sketch
    >>> cfg = DedupConfig()
    >>> a = make_sketch("十四届全国人大三次会议将于3月5日上午9时在北京开幕，会期七天。", cfg)
    >>> b = make_sketch("十四届全国人大二次会议将于3月5日上午9时在北京开幕，会期七天。", cfg)
    >>> round(_numbers_by_shingles(b, a, cfg), 3), _numbers_by_shingles(a, a, cfg)
    (0.833, 1.0)
    """
    n = later.n_units
    if n == 0 or len(earlier.vocab) == 0:
        return 1.0
    cp = code_points(later.text)
    if kernels.wanted(n):  # whether a number changed, in one pass; else no need to see which
        index, codes = later.vocab_index, _kernel_codes(later, None)
        if not kernels.load("_pairs").changed_number(
            codes, n, _NO_INDEX if index is None else index, later.vocab, earlier.vocab,
            cfg.cjk_width, cfg.word_width, cp, unit_classes(), astral_words(cp), _IS_NUMERAL,
            _SPARE.codes, _SPARE.flags,
        ):  # fmt: skip
            return 1.0
    else:
        kernels.work_done(n)
    codes = later.shingles
    if len(codes) == 0:
        return 1.0
    where = unit_offsets(later.text)[:n]  # a text kept short of its units: its first ones
    covered = units_in(codes, _shared(later, earlier), n, cfg)[: len(where)]
    inside = np.flatnonzero(covered)
    if len(inside) == 0 or len(inside) == inside[-1] - inside[0] + 1:
        return 1.0  # nothing shared, or nothing changed between the first and last shared
    where, covered = where[inside[0] : inside[-1] + 1], covered[inside[0] : inside[-1] + 1]
    num = _IS_NUMERAL[np.minimum(cp[where], 0xFFFF)]
    if not num.any():
        return 1.0
    hit = _changed_numbers(~covered, num)
    if not hit.any():
        return 1.0
    # the numerals on lines that are news (not a labelled line, not an address), and the
    # numbers they make: runs of numerals next to each other in the text, in order
    num &= code_points(_news(later.text))[where] != ord(" ")
    hit &= num
    if not hit.any():
        return 1.0
    number = np.cumsum(num & ~np.r_[False, num[:-1] & (np.diff(where) == 1)]) - 1
    return 1.0 - len(np.unique(number[hit])) / (int(number[-1]) + 1)


def _numbers_by_characters(later: str, earlier: str) -> float:
    """:func:`numbers_kept` of two short texts (titles, short items), from their characters:
    what ``later`` changed is what an alignment of the two (``difflib``'s, after the prefix
    and suffix they share, every numeral alike) puts in place of the earlier's characters or
    between them, and the numerals it pairs with others, and a number (a run of numerals on
    a line that is news) is changed when one such stretch is all numerals and in it
    ("天网2026" after "天网2025", "第五、六集" after "第三、四集", "十四届三中" after "十三届六中",
    which an alignment of the characters themselves would pair by their "三").
    One changed number is enough (0.0): a short item's numbers say which item it is — the
    part of a series whose title holds three numbers more, the report of another minute.
    A number spelt another way is the same number: where all that changed is numerals, and
    the runs of numerals they lie in have one value ("第1集" after "第一集", "25" after
    "二十五": :func:`_numeral_value`), nothing changed.

    >>> _numbers_by_characters("天网2026行动启动", "天网2025行动启动"), _numbers_by_characters("a 5 b", "a 5 c")
    (0.0, 1.0)
    >>> _numbers_by_characters("2024年第3季度十大新闻回顾之二", "2024年第3季度十大新闻回顾之一")
    0.0
    """
    if _NUMERAL_SET.isdisjoint(later):
        return 1.0
    head = _shared_length(later, earlier, min(len(later), len(earlier)))
    tail = _shared_length(later, earlier, min(len(later), len(earlier)) - head, suffix=True)
    stop = len(later) - tail
    middle = later[head:stop]
    if not _NUMERAL_SET.intersection(middle):
        return 1.0
    changed: range | set[int]
    if _NUMERAL_SET.issuperset(middle):
        if _same_value(later, head, stop, earlier, head, len(earlier) - tail):
            return 1.0  # one number spelt another way: "第1集" after "第一集"
        changed = range(head, stop)
    else:  # several changes: align what lies between, every numeral alike
        before = earlier[head : len(earlier) - tail]
        shapes = before.translate(_NUMERAL_SHAPE), middle.translate(_NUMERAL_SHAPE)
        ops = difflib.SequenceMatcher(None, *shapes, autojunk=False).get_opcodes()
        changed = set()
        for op, i1, _, j1, j2 in ops:
            if op == "equal":  # the same but for numerals: those that differ changed
                changed.update(j for j in range(j1, j2) if middle[j] != before[i1 + j - j1])
            elif j2 > j1 and _NUMERAL_SET.issuperset(middle[j1:j2]):
                changed.update(range(j1, j2))
        if not changed:
            return 1.0
        changed = {head + j for j in changed}
    news = _news(later)
    if not any(news[i] in _NUMERAL_SET for i in changed):
        return 1.0  # on a labelled line ("views: 72009"), in an address
    return 0.0


_DIGIT_OF = {c: i for i, c in enumerate("〇一二三四五六七八九")} | {"零": 0}


def _numeral_value(run: str) -> int | None:
    """The value of a run of numerals written one way: digits ("25"), Chinese digits one
    by one ("二〇二五") or tens with 十 ("二十五", "十"); None for any other run.

    >>> [_numeral_value(r) for r in ("25", "二十五", "十", "二〇二五", "1一", "十十")]
    [25, 25, 10, 2025, None, None]
    """
    if run.isascii():
        return int(run) if run.isdigit() else None
    if any(c.isascii() for c in run):
        return None  # digits of both kinds in one run
    tens, ten, ones = run.partition("十")
    if not ten:
        return int("".join(str(_DIGIT_OF[c]) for c in run)) if run else None
    digits = [_DIGIT_OF.get(c, 0) for c in tens + ones]  # (another 十, a nought: 0)
    if len(tens) > 1 or len(ones) > 1 or 0 in digits:
        return None
    return (_DIGIT_OF[tens] if tens else 1) * 10 + (_DIGIT_OF[ones] if ones else 0)


def _same_value(a: str, a_lo: int, a_hi: int, b: str, b_lo: int, b_hi: int) -> bool:
    """Whether ``a[a_lo:a_hi]`` and ``b[b_lo:b_hi]``, both numerals, lie in runs of numerals
    (widened to the numerals around them) of the same value spelt differently."""
    if b_hi <= b_lo or not _NUMERAL_SET.issuperset(b[b_lo:b_hi]):
        return False
    x, y = _numeral_value(_run_around(a, a_lo, a_hi)), _numeral_value(_run_around(b, b_lo, b_hi))
    return x is not None and x == y


def _run_around(text: str, lo: int, hi: int) -> str:
    """``text[lo:hi]`` widened to the numerals on either side of it."""
    while lo > 0 and text[lo - 1] in _NUMERAL_SET:
        lo -= 1
    while hi < len(text) and text[hi] in _NUMERAL_SET:
        hi += 1
    return text[lo:hi]


def _shared_length(a: str, b: str, most: int, *, suffix: bool = False) -> int:
    """How long a prefix (a ``suffix``) ``a`` and ``b`` share, at most ``most`` characters:
    by halving, each step one comparison of two slices.

    >>> _shared_length("abcx", "abdx", 4), _shared_length("abcx", "abdx", 2, suffix=True)
    (2, 1)
    """
    lo, hi = 0, max(most, 0)
    while lo < hi:  # the longest shared is in [lo, hi]
        mid = (lo + hi + 1) // 2
        same = a[len(a) - mid :] == b[len(b) - mid :] if suffix else a[:mid] == b[:mid]
        lo, hi = (mid, hi) if same else (lo, mid - 1)
    return lo


def _changed_numbers(
    own: npt.NDArray[np.bool_], num: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """The units inside runs of ``own`` (units not covered) that are all ``num``.

    >>> _changed_numbers(np.array([0, 1, 1, 0, 1, 1, 0], bool), np.array([1, 1, 1, 0, 0, 1, 1], bool))
    array([False,  True,  True, False, False, False, False])
    """
    starts = np.flatnonzero(own & ~np.r_[False, own[:-1]])
    ends = np.flatnonzero(own & ~np.r_[own[1:], False]) + 1
    if len(starts) == 0:
        return np.zeros(len(own), dtype=np.bool_)
    # a run is all numerals when it holds as many as it is long
    total = np.r_[0, np.cumsum(num & own)]
    whole = total[ends] - total[starts] == ends - starts
    edges = np.bincount(starts[whole], minlength=len(own) + 1) - np.bincount(
        ends[whole], minlength=len(own) + 1
    )
    changed: npt.NDArray[np.bool_] = np.cumsum(edges[:-1]) > 0
    return changed


def _shared_span(
    doc: Sketch, other: Sketch, cfg: DedupConfig, guard: TemplateGuard | None
) -> tuple[int, int]:
    """The first and last unit of ``doc`` inside a shingle ``other`` also has (not chrome);
    (1, 0) when there is none."""
    codes = doc.shingles
    if len(codes) == 0 or len(other.vocab) == 0:
        return 1, 0
    shared = _shared(doc, other)
    if guard is not None:
        shared &= ~guard.is_common(codes)
    idx = np.flatnonzero(shared)
    if len(idx) == 0:
        return 1, 0
    widths = np.where(codes[idx] & np.uint32(1), cfg.cjk_width, cfg.word_width)
    return int(idx[0]), int(min(doc.n_units, int((idx + widths).max())) - 1)


def _titles(a: Sketch, short: Sketch, other: Sketch, cfg: DedupConfig) -> Verdict:
    """Short texts: the best of the two character measures, as the source documents advise
    for titles. A longer later text is a copy when little of it is new: its edit similarity,
    or the longest common substring over its own length."""
    s1 = lcsubstr.normalized(short.text, other.text)
    s2 = levenshtein.normalized(short.text, other.text)
    score, measure = (s1, "lcsubstr") if s1 >= s2 else (s2, "levenshtein")
    ratio = len(short.text) / max(1, len(other.text))
    bar = required(cfg, ratio, cfg.title_threshold)
    if score < bar:
        return Verdict(score, measure, False)
    own = score if short is a else max(s2, s1 * len(short.text) / max(1, len(a.text)))
    repeated = own
    if own >= bar:  # a figure of the later text that the earlier lacks is news of its own,
        earlier = other if short is a else short  # and so is a number it changed
        own = _agreeing(own, a, earlier, cfg, None, (0, a.n_units), copy=True)
        if own >= bar:  # (a number it changed can only lower a copy share under the bar)
            own = min(own, numbers_kept(a, earlier, cfg))
    return Verdict(score, measure, True, own, own >= bar, repeated=repeated)
