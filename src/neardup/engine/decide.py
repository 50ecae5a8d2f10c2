"""Decisions: which earlier document a document matches best, which document of each story
is kept, and the evidence a person reads.

- A document is verified against at most ``DedupConfig.max_verify`` of its candidates, the
  most alike on the MinHash values (:func:`to_verify`), so a story reprinted a thousand
  times costs a bounded number of verifications per copy.
- A document is a copy of the first of those candidates (earliest first) it is verified a
  copy of — verification stops there — else it extends the same-story candidate that
  scores highest, the earliest on ties (:func:`best_match` for one document,
  :func:`best_of` for many); a byte-identical copy is a duplicate of its first copy
  (:func:`identical`).
- Each duplicate links to its match, which came earlier, so following the links from any
  document ends at the first document of its story (:func:`roots`).
- ``keep`` chooses the document kept for each story (:func:`choose_kept`): the first (the
  streaming rule), the longest text or the earliest timestamp. Under "longest" and
  "earliest" the first of a story is itself a duplicate — of the kept document, scored by
  verifying the two.

>>> best_of(np.array([5, 5, 7]), np.array([1, 2, 3]), np.array([0.8, 0.9, 0.7])).tolist()
[1, 2]
>>> roots([-1, 0, 1, -1, 3])
[0, 0, 0, 3, 3]
>>> choose_kept(np.array([0, 0, 3]), np.array([0, 1, 3]), "longest", lengths=np.array([5, 9, 2])).tolist()
[1, 1, 3]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..frozen import quick_init
from ..kernels.tables import code_points
from ..passages import Passage, shared_passages
from ..shingling import astral_words, unit_classes, unit_offsets
from .config import DedupConfig, KeepPolicy, check_keep
from .sketches import Sketch
from .templates import TemplateGuard
from .verify import Verdict, has_quotes, quoted_units, units_in, unquoted_codes, verify

__all__ = [
    "IDENTICAL",
    "LIGHT_BITS",
    "MOSTLY_NEW",
    "Decision",
    "Match",
    "alike",
    "alike_rows",
    "best_match",
    "best_of",
    "choose_kept",
    "counts_as_story",
    "evidence",
    "hub",
    "identical",
    "light",
    "roots",
    "shared_text",
    "stories",
    "story_codes",
    "to_verify",
]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: The verdict on a byte-identical copy of an earlier text.
IDENTICAL = Verdict(1.0, "identical", True, 1.0, True, repeated=1.0)


def identical() -> Verdict:
    """The verdict on a byte-identical copy of an earlier text: a duplicate, score 1.0."""
    return IDENTICAL


@quick_init
@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict on one document.

    ``is_duplicate``: the document is a copy of an earlier one and is dropped;
    ``duplicate_of`` names that document (None when it is kept). ``extends``: a kept document
    of a story seen before — it repeats the earlier document it names and adds text of its
    own (a reply quoting its parent, a full article after an excerpt). ``cluster`` is the id
    of the document kept for its story; ``score`` and ``measure`` say how close the match
    was (for a copy, how much of this document the other covers; otherwise how much of the
    shorter text); ``evidence`` holds the passages the two share that counted, ``chrome``
    the shared passages set aside as chrome (text that recurs across different stories).
    """

    id: str
    is_duplicate: bool
    duplicate_of: str | None
    cluster: str
    score: float
    measure: str | None
    evidence: tuple[Passage, ...] = ()
    extends: str | None = None
    chrome: tuple[Passage, ...] = ()

    @property
    def match(self) -> str | None:
        """The earlier document this one matched: the one it copies or extends."""
        return self.duplicate_of if self.duplicate_of is not None else self.extends

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (evidence as its passages' texts)."""
        return {
            "id": self.id,
            "is_duplicate": self.is_duplicate,
            "duplicate_of": self.duplicate_of,
            "extends": self.extends,
            "cluster": self.cluster,
            "score": round(self.score, 4),
            "measure": self.measure,
            "evidence": [p.text for p in self.evidence],
            "chrome": [p.text for p in self.chrome],
        }


@quick_init
@dataclass(frozen=True, slots=True)
class Match:
    """What a document matched: the earlier document (``key``), the verdict, and whether it
    is a copy of it (dropped) rather than a new text of its story (kept, extending it)."""

    key: str
    verdict: Verdict
    #: every earlier document it was verified the same story as (the match among them)
    alike: frozenset[str] = frozenset()

    @property
    def is_copy(self) -> bool:
        return self.verdict.is_copy

    @property
    def score(self) -> float:
        """The score the decision used: how much of the document its match covers (a copy),
        or how much of the shorter text the other covers (the same story)."""
        return self.verdict.copy_score if self.verdict.is_copy else self.verdict.score


#: The low bits of each MinHash value that rank a document's candidates (:func:`light`);
#: Spark's light signatures hold exactly these bits.
LIGHT_BITS = 16
_LIGHT_MASK = np.uint64((1 << LIGHT_BITS) - 1)


def light(signatures: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint16]:
    """The low :data:`LIGHT_BITS` bits of MinHash values (a signature, or one a row)."""
    out: npt.NDArray[np.uint16] = (np.asarray(signatures) & _LIGHT_MASK).astype(np.uint16)
    return out


def alike(a: npt.NDArray[np.uint16], b: npt.NDArray[np.uint16]) -> F64:
    """How alike documents are, pair by pair (light signatures, one a row, or one signature
    against many): the share of their light values that are equal. At least the share of
    equal full values, so the prefilter on it passes every pair the full values pass."""
    a2, b2 = np.atleast_2d(a), np.atleast_2d(b)
    out: F64 = np.count_nonzero(a2 == b2, axis=1) / a2.shape[1]
    return out


def alike_rows(
    light_rows: npt.NDArray[np.uint16], a: npt.NDArray[np.integer], b: npt.NDArray[np.integer]
) -> F64:
    """:func:`alike` of rows ``a`` and ``b`` of a table of light signatures, pair by pair
    (compiled, without gathering the rows, when the kernels are loaded or on)."""
    if len(a) and kernels.wanted(0):  # when loaded (or on): the batch run's case
        return kernels.load("_pairs").alike_rows(light_rows, a, b)  # type: ignore[no-any-return]
    return alike(light_rows[a], light_rows[b])


def to_verify(later: I64, earlier: I64, likeness: F64, cfg: DedupConfig) -> npt.NDArray[np.bool_]:
    """Which candidate pairs (``later``, ``earlier``: input positions; the pairs the
    prefilter passes on ``likeness``, :func:`alike`) are verified: for each later document,
    its ``cfg.max_verify`` most alike candidates, the earliest on ties. A story reprinted
    a thousand times costs each copy a bounded number of verifications; they are then
    verified earliest first (:func:`best_match`, :func:`best_of`).

    >>> to_verify(np.array([9, 9, 9, 7]), np.array([1, 2, 3, 1]),
    ...           np.array([0.5, 0.9, 0.5, 0.1]), DedupConfig(max_verify=2)).tolist()
    [True, True, False, True]
    """
    later, earlier = np.asarray(later, dtype=np.int64), np.asarray(earlier, dtype=np.int64)
    out = np.zeros(len(later), dtype=np.bool_)
    if len(later) == 0:
        return out
    if kernels.wanted(0):  # pairs as the LSH join gives them: one pass, no sort
        rank = kernels.load("_pairs").top_per_later
        likes = np.asarray(likeness, dtype=np.float64)
        if rank(later, earlier, likes, int(cfg.max_verify), out):
            return out
    order = np.lexsort((earlier, -np.asarray(likeness, dtype=np.float64), later))
    js = later[order]
    starts = np.flatnonzero(np.concatenate(([True], js[1:] != js[:-1])))
    rank = np.arange(len(js)) - np.repeat(starts, np.diff(np.append(starts, len(js))))
    out[order] = rank < cfg.max_verify
    return out


def best_match(
    sketch: Sketch,
    candidates: Iterable[tuple[str, Sketch]],
    cfg: DedupConfig,
    guard: TemplateGuard | None,
) -> Match | None:
    """What a document matches among the earlier candidates it is verified against (given
    earliest first, :func:`to_verify`): the first it is a copy of — the rest are not
    verified, so each copy of a story reprinted many times costs few verifications, and
    its ``duplicate_of`` is the earliest copy found, most often the story's first document —
    else the same story with the highest score, the earliest on ties; None when it matches
    none."""
    copy: Match | None = None
    same: Match | None = None
    alike: list[str] = []
    for key, other in candidates:
        v = verify(sketch, other, cfg, guard, scored=False)
        if not v.is_duplicate:
            continue
        alike.append(key)
        if v.is_copy:
            copy = Match(key, v)
            break
        if same is None or v.score > same.verdict.score:
            same = Match(key, v)
    best = copy if copy is not None else same
    if best is None:
        return None
    return Match(best.key, best.verdict, frozenset(alike))


#: A kept document that repeats less than this share of its own text from what it matched
#: is a new story of its own for the template guard (see :func:`counts_as_story`).
MOSTLY_NEW = 0.5


def story_codes(sketch: Sketch) -> npt.NDArray[np.uint32]:
    """The distinct shingle codes a story adds to the template guard: its vocabulary, less
    the shingles that start on quoted lines (text it quotes from another, which is not its
    own: a passage two replies quote is not chrome).

    >>> from neardup.engine import make_sketch
    >>> sk = make_sketch("new words of mine here\\n> and some quoted words", DedupConfig())
    >>> len(story_codes(sk)) < len(sk.vocab)
    True
    """
    if not has_quotes(sketch.text):  # the codes in text order are rebuilt only if needed
        return sketch.vocab
    index = sketch.vocab_index
    if index is None:
        own = unquoted_codes(sketch.shingles, sketch.text, sketch.n_units)
        return sketch.vocab if own is None else own
    # the same codes, read through the vocabulary (sorted and distinct): no sort
    if kernels.wanted(len(sketch.text)):
        cp = code_points(sketch.text)
        mine: npt.NDArray[np.uint32] = kernels.load("_pairs").own_vocab(
            cp, unit_classes(), astral_words(cp), index, sketch.vocab
        )
        return mine
    quoted = quoted_units(sketch.text, sketch.n_units)[: len(index)]
    keep = np.zeros(len(sketch.vocab), dtype=np.bool_)
    keep[index[~quoted]] = True
    kept: npt.NDArray[np.uint32] = sketch.vocab[keep]
    return kept


def counts_as_story(match: Match | None) -> bool:
    """Whether a decided document counts as one more story for the template guard: a new
    story (it matched nothing), or a kept document that is mostly new text (less than
    :data:`MOSTLY_NEW` of it repeats what it extends). Copies never count, nor do kept
    documents that mostly repeat their story (a full article after an excerpt of it), so a
    story's own text is counted once however often it is reprinted — while text that
    recurs in documents whose other content differs (a bio, a signature, a footer) is
    counted once per document, and soon becomes chrome."""
    if match is None:
        return True
    return not match.is_copy and match.verdict.repeated < MOSTLY_NEW  # as stories() says


def hub(match: Match | None, extended: bool, extends_it: Callable[[str], bool]) -> bool:
    """Whether a kept document starts a cluster of its own although it extends what it
    matched: the earlier document is a **hub**, text that different stories share.

    A kept document that extends an earlier one joins its story, unless it is mostly new
    text (:func:`counts_as_story`), the earlier document was already extended by another
    one (``extended``), and it is the same story as none of those (``extends_it``: whether a
    document it was verified the same story as extends the same earlier document). A post
    that is little more than a bio, a sign-off or a signature is contained by every later
    post that carries them; without this rule each of them would extend it and join one
    cluster. The document still says what it extends.

    >>> m = Match("bio", Verdict(1.0, "coverage", True), frozenset({"bio"}))
    >>> hub(m, False, lambda k: False), hub(m, True, lambda k: False)
    (False, True)
    >>> hub(Match("bio", m.verdict, frozenset({"bio", "col-1"})), True, {"col-1"}.__contains__)
    False
    """
    if match is None or match.is_copy or not extended or not counts_as_story(match):
        return False
    return not any(extends_it(k) for k in match.alike if k != match.key)


def stories(is_copy: npt.NDArray[np.bool_], repeated: F64) -> npt.NDArray[np.bool_]:
    """:func:`counts_as_story` for many matched documents at once, from their match's
    ``is_copy`` and ``repeated``."""
    out: npt.NDArray[np.bool_] = ~is_copy & (repeated < MOSTLY_NEW)
    return out


def best_of(
    later: I64, earlier: I64, scores: F64, copies: npt.NDArray[np.bool_] | None = None
) -> I64:
    """:func:`best_match` over many verified same-story pairs at once: for each distinct
    ``later`` document (in increasing order), the row of its best pair — its earliest copy
    pair (``copies``) if it has one, else its highest score, the earliest ``earlier`` on
    ties."""
    if len(later) == 0:
        return np.zeros(0, dtype=np.int64)
    copy = np.zeros(len(later), dtype=np.bool_) if copies is None else copies
    order = np.lexsort((earlier, np.where(copy, 0.0, -scores), ~copy, later))
    first = np.concatenate(([True], later[order][1:] != later[order][:-1]))
    out: I64 = order[first].astype(np.int64)
    return out


class Readable(Protocol):
    """Anything with a prepared text: a sketch, or a compact store's stored form with the
    text its text tier keeps."""

    @property
    def text(self) -> str: ...


def evidence(a: Readable, b: Readable) -> tuple[Passage, ...]:
    """The passages two prepared texts share, longest first (what a person reads)."""
    return tuple(shared_passages(a.text, b.text, min_len=6, limit=10))


def shared_text(
    a: Sketch, b: Readable, cfg: DedupConfig, guard: TemplateGuard | None
) -> tuple[tuple[Passage, ...], tuple[Passage, ...]]:
    """The passages two prepared texts share, longest first, split into the parts that
    counted and those set aside as chrome: the units of ``a`` that lie only in shingles the
    template guard calls common (of ``b`` only the text is read)."""
    found = evidence(a, b)
    if guard is None or not found:
        return found, ()
    codes = a.shingles
    common = guard.is_common(codes)
    if not common.any():
        return found, ()
    n = a.n_units
    rare = units_in(codes, ~common, n, cfg)  # each unit of a: inside a shingle not chrome
    where = unit_offsets(a.text)
    counted: list[Passage] = []
    chrome: list[Passage] = []
    for p in found:
        lo, hi = (int(x) for x in np.searchsorted(where, [p.a_start, p.a_end]))
        hi = min(hi, n)
        if lo >= hi:
            counted.append(p)
            continue
        flags = rare[lo:hi]
        # cut the passage where its units go from counted to chrome and back
        cuts = np.flatnonzero(flags[1:] != flags[:-1]) + 1
        for u0, u1 in zip(np.r_[0, cuts], np.r_[cuts, len(flags)], strict=True):
            start = p.a_start if u0 == 0 else int(where[lo + u0])
            end = p.a_end if u1 == len(flags) else int(where[lo + u1])
            piece = Passage(
                start,
                p.b_start + start - p.a_start,
                end - start,
                p.text[start - p.a_start : end - p.a_start],
            )
            (counted if flags[u0] else chrome).append(piece)
    return tuple(counted), tuple(chrome)


def roots(parent: Sequence[int]) -> list[int]:
    """The first document of each document's story, given each one's match (-1: none).
    Matches come earlier, so one pass in input order resolves every root."""
    root = list(range(len(parent)))
    for i, p in enumerate(parent):
        if p >= 0:
            root[i] = root[p]
    return root


def choose_kept(
    root: I64,
    position: I64,
    keep: KeepPolicy,
    *,
    lengths: I64 | None = None,
    timestamps: F64 | None = None,
) -> I64:
    """For each document (its story's ``root`` and its own ``position``), the position of
    the document kept for its story: the first (``keep="first"``: the root), the longest
    (``lengths``; the first on ties) or the one with the earliest timestamp
    (``timestamps``, NaN for none; documents without one come last; the first on ties)."""
    check_keep(keep)
    root = np.asarray(root, dtype=np.int64)
    position = np.asarray(position, dtype=np.int64)
    if keep == "first" or len(root) == 0:
        return root.copy()
    if keep == "longest":
        if lengths is None:
            raise ValueError("keep='longest' needs the lengths")
        order = np.lexsort((position, -np.asarray(lengths, dtype=np.int64), root))
    else:
        ts = np.full(len(root), np.nan) if timestamps is None else np.asarray(timestamps, float)
        missing = np.isnan(ts)
        order = np.lexsort((position, np.where(missing, 0.0, ts), missing, root))
    ordered = root[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    starts = np.flatnonzero(first)
    kept_of_group = position[order][starts]
    group = np.cumsum(first) - 1  # the group of each row of ``order``
    out = np.empty(len(root), dtype=np.int64)
    out[order] = kept_of_group[group]
    return out
