"""What a compact store keeps of a document for verification, and how verification reads it.

A stored document is only ever the *earlier* side of a pair: the later document is always
whole in memory. So a compact store keeps, instead of every shingle code of a document
(4 bytes a shingle), a **sample** of them with their positions — the codes whose bits 1 to
5 are below the document's *level* (3 in 32 of them; a text with fewer than
:data:`MIN_SAMPLES` of those samples as many more in 32 as it takes, up to every code), the
same codes in every document —
and, for each later document it is compared with, rebuilds a stand-in
:class:`~neardup.engine.sketches.Sketch` (:func:`stand_in`) from which the engine's own
:func:`~neardup.engine.verify.verify` estimates the same placement (head, tail, gap, own and
shared units) and applies the same rules, which stay in one place:

- **its own units**: whether a position holds a shingle the later document has is read at
  the sampled positions (exactly: a sampled code is looked up in the later document) and
  taken from the nearest sampled position in between, except that a lone sampled position
  the later document lacks between two it has stands for one changed unit (a typo: only
  the shingles over it differ) (:func:`statuses`);
- **the later document's units**: the same, from the later document's own codes that a
  sample would hold (*eligible* codes, looked up in the sample: exact, since the sample
  holds every eligible code of the stored document);
- each sampled code keeps its template-guard slot (its top 26 bits) and its width bit, so
  chrome is set aside on both sides as with the whole sketch; where the stored document is
  taken to share the later one's text, the stand-in holds the later document's codes at the
  offset of the nearest sampled code it shares (:func:`_align`), so chrome there — a common
  shingle, or a passage counted shingle by shingle in text order — is read from that text
  (on the first 10,000 hkcnews articles and the 4,638 pairs the batch run joins, the chrome
  of 0.2 % of the stored documents' shingles differs from the whole sketch's, against 7.3 %
  when every shingle took its nearest sample's code);
- the numbers of units and of distinct shingles, and the figures with the unit each starts
  at (the figure rule);
- texts shorter than :data:`WHOLE_UNITS` units keep their whole prepared text (titles are
  compared by their characters, and so are two short texts' numbers).

The prefilter and the ranking of candidates (:func:`alike`) read the samples too: the
Jaccard similarity of the two documents' sampled codes stands in for the share of equal
MinHash values, so no signature is kept. A sampled code is stored in 4 bytes (its slot and
width bit, with the distance from the sampled position before in bits 1 to 5, which a
sampled code does not need), so a document of n shingles costs about 3 n / 8 bytes (at
least 512 for a text of 128 shingles or more) against 4 n for the whole sketch, plus what the
figure rule needs.

>>> from neardup.engine import DedupConfig, make_sketch, verify
>>> cfg = DedupConfig()
>>> a = make_sketch("北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。" * 8, cfg)
>>> c = compact(a)
>>> back = decode(encode(c))
>>> back == c
True
>>> verify(a, stand_in(back, a, cfg), cfg).is_copy
True
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import NeardupError, StoreError
from ..shingling import difference, union
from . import rice
from .config import DedupConfig
from .decide import story_codes
from .sketches import Sketch, distinct, figures_at
from .templates import CommonShingles
from .verify import CHARACTER_UNITS

__all__ = [
    "MASK",
    "MIN_SAMPLES",
    "RATE",
    "WHOLE_UNITS",
    "Compact",
    "alike",
    "compact",
    "decode",
    "decode_counts",
    "decode_slots",
    "eligible",
    "encode",
    "encode_counts",
    "encode_slots",
    "stand_in",
    "statuses",
]

U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

#: The bits of a shingle code a sample keeps: the template guard's slot (bits 6 to 31)
#: and the width bit (bit 0, a CJK shingle). Bits 1 to 5 carry the distance instead.
MASK = np.uint32(0xFFFFFFC1)
#: A document samples the codes whose bits 1 to 5, read as a number, are below its
#: ``level``: RATE in 32 of them (about 1 in 11) ...
RATE = 3
#: ... or, when that gives fewer sampled positions than this, as many more in 32 as it
#: takes (up to every code), so a short text is estimated from enough of its shingles.
MIN_SAMPLES = 128
#: Texts with fewer units keep their whole prepared text (and every code).
WHOLE_UNITS = CHARACTER_UNITS  # (verify reads their numbers by their characters)

_GAP_BITS = 5
_GAP_MAX = (1 << _GAP_BITS) - 1  # a distance this long or longer continues in a varint


def eligible(codes: U32, level: int) -> Bools:
    """Which codes a sample at ``level`` holds (``level`` in 32 of them: those whose bits
    1 to 5 are below it; 32: every code)."""
    out: Bools = ((codes >> np.uint32(1)) & np.uint32(31)) < level
    return out


@dataclass(frozen=True, slots=True, eq=False)
class Compact:
    """What a compact store keeps of one document for verification (see the module)."""

    n_units: int
    n_shingles: int
    n_vocab: int
    #: the sample's level: it holds every code of the document that is :func:`eligible`
    level: int
    #: sampled positions (ascending) and their codes (masked by :data:`MASK`)
    positions: I64
    codes: U32
    #: figures (:func:`~neardup.engine.sketches.figures_at`) with the unit each starts at
    figures: tuple[tuple[str, int], ...]
    #: the whole prepared text, for texts under WHOLE_UNITS units (else None)
    short_text: str | None = None
    #: the prepared text from a store's text tier, for people (never read by verification)
    page_text: str | None = None
    #: the sampled codes, distinct and sorted (the ranking and the stand-in look them up)
    sorted_codes: U32 = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sorted_codes", distinct(self.codes))

    @property
    def is_empty(self) -> bool:
        return self.n_units == 0

    @property
    def text(self) -> str:
        """The prepared text as far as it is kept ("" when it is not)."""
        if self.short_text is not None:
            return self.short_text
        return self.page_text or ""

    @property
    def numbers(self) -> frozenset[str]:
        return frozenset(f for f, _ in self.figures)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Compact):
            return NotImplemented
        return (
            (self.n_units, self.n_shingles, self.n_vocab, self.level, self.figures,
             self.short_text)
            == (other.n_units, other.n_shingles, other.n_vocab, other.level, other.figures,
                other.short_text)
            and np.array_equal(self.positions, other.positions)
            and np.array_equal(self.codes, other.codes)
        )  # fmt: skip

    __hash__ = None  # type: ignore[assignment]


def _unit_figures(text: str, n_units: int) -> tuple[tuple[str, int], ...]:
    """The figures of a prepared text with the unit each starts at."""
    from ..shingling import unit_offsets

    found = figures_at(text)
    if not found:
        return ()
    where = unit_offsets(text)
    starts = np.searchsorted(where, [at for _, at in found]).tolist()
    top = max(n_units - 1, 0)
    return tuple((f, min(int(u), top)) for (f, _), u in zip(found, starts, strict=True))


def compact(sketch: Sketch) -> Compact:
    """The compact form of a (whole) sketch."""
    codes = sketch.shingles
    figures = _unit_figures(sketch.text, sketch.n_units)
    text = sketch.text if sketch.n_units < WHOLE_UNITS else None
    value = ((codes >> np.uint32(1)) & np.uint32(31)).astype(np.int64)
    # the fewest in 32 that give MIN_SAMPLES positions, and at least RATE (all: a short text)
    few = len(codes) <= MIN_SAMPLES
    level = 32 if few else max(RATE, int(np.sort(value)[MIN_SAMPLES - 1]) + 1)
    at = np.flatnonzero(value < level).astype(np.int64)
    return Compact(
        sketch.n_units, len(codes), len(sketch.vocab), level, at,
        (codes[at] & MASK).astype(np.uint32), figures, text,
    )  # fmt: skip


# -- the stand-in -----------------------------------------------------------------------------


def _nearest(known: I64, n: int) -> I64:
    """For each of positions 0..n-1, the index in ``known`` (ascending, not empty) of the
    nearest known position (the earlier on ties)."""
    if kernels.wanted(0):  # when loaded (or on): a stored document's stand-in, per pair
        found: I64 = kernels.load("_pairs").nearest_known(known, n)
        return found
    k = np.arange(n, dtype=np.int64)
    right = np.searchsorted(known, k)
    left = np.maximum(right - 1, 0)
    right = np.minimum(right, len(known) - 1)
    nearer_left = (k - known[left]) <= (known[right] - k)
    out: I64 = np.where(nearer_left, left, right)
    return out


def statuses(known: I64, found: Bools, n: int, widths: I64) -> Bools:
    """Which of positions 0..n-1 hold a shingle the other text has, from the positions
    ``known`` (ascending) where that is known (``found``): each takes the answer of the
    nearest known position, except that a lone known position the other text lacks, between
    two it has, stands for one changed unit — only the shingles over it (its ``widths``)
    differ, and its stretch takes its neighbours' answer.

    >>> statuses(np.array([0, 8, 16]), np.array([True, False, True]), 24, np.array([5, 5, 5])).astype(int).tolist()
    [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    """
    if kernels.wanted(0):
        compiled: Bools = kernels.load("_pairs").sampled_statuses(known, found, n, widths)
        return compiled
    if len(known) == 0:
        return np.zeros(n, dtype=np.bool_)
    near = _nearest(known, n)
    out: Bools = found[near]
    left = np.concatenate(([False], found[:-1]))
    right = np.concatenate((found[1:], [False]))
    lone = np.flatnonzero(~found & left & right)
    if len(lone):
        is_lone = np.zeros(len(known), dtype=np.bool_)
        is_lone[lone] = True
        out[is_lone[near]] = True
        for p, w in zip(known[lone].tolist(), widths[lone].tolist(), strict=True):
            lo = p - (w - 1) // 2
            out[max(lo, 0) : max(min(lo + w, n), 0)] = False
    return out


def _widths(codes: U32, cfg: DedupConfig) -> I64:
    """The width in units of each shingle (its code's lowest bit: CJK)."""
    out: I64 = np.where(codes & np.uint32(1), cfg.cjk_width, cfg.word_width).astype(np.int64)
    return out


def _lookup(sorted_keys: U32, keys: U32) -> I64:
    """Where each of ``keys`` is in ``sorted_keys`` (-1: not there)."""
    if len(sorted_keys) == 0:
        return np.full(len(keys), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    out: I64 = np.where(sorted_keys[at] == keys, at, -1)
    return out


def stand_in(c: Compact, later: Sketch, cfg: DedupConfig) -> Sketch:
    """The stored document ``c`` as the later document ``later`` sees it: a Sketch from
    which :func:`~neardup.engine.verify.verify` (later, stand-in) estimates what it would
    find with the whole sketch (see the module). Its text is the stored text of a short
    document; of a longer one, a placeholder of as many units holding its figures where
    they are (what the figure rule reads of it)."""
    shingles, known, taken = _rebuilt(c, later, cfg)
    # the prefilter has passed the pair already (on the samples: :func:`alike`), so the
    # stand-in carries the later document's own signature
    return Sketch(
        text=c.short_text if c.short_text is not None else _placeholder_text(c.n_units, c.figures),
        shingles=shingles, n_units=c.n_units, signature=later.signature, bands=_NO_BANDS,
        vocab=distinct(np.concatenate((known, taken))), numbers=c.numbers,
    )  # fmt: skip


def _rebuilt(c: Compact, later: Sketch, cfg: DedupConfig) -> tuple[U32, U32, U32]:
    """The stored document's codes in text order as ``later`` sees them (the later
    document's own code where it has the shingle, the sampled code where it lacks it), its
    sampled codes (as the later document spells those it has), and the later document's
    codes taken to be in it. The last two are the stand-in's vocabulary: the codes
    :func:`_align` reads from the later text only place the stored document's shingles
    (what is chrome), they are not known to be in it (an unsampled typo, an insertion
    between two sampled codes)."""
    a = later.shingles
    n = c.n_shingles
    masked_vocab, first = np.unique(later.vocab & MASK, return_index=True)
    where = _lookup(masked_vocab, c.codes)
    in_a = where >= 0
    # its codes that the later document has, as the later document spells them
    own = c.codes.copy()
    own[in_a] = later.vocab[first[where[in_a]]]
    if len(c.positions) == n:  # every code kept
        return own, own, np.zeros(0, dtype=np.uint32)
    status = statuses(c.positions, in_a, n, _widths(c.codes, cfg))
    out = np.empty(n, dtype=np.uint32)
    for want in (True, False):
        pick = np.flatnonzero(in_a == want)
        at = np.flatnonzero(status == want)
        if len(at) == 0:
            continue
        if len(pick):
            out[at] = own[pick[_nearest(c.positions[pick], n)[at]]]
        else:  # every sampled code is had (or none is): a code the later one has or lacks
            out[at] = a[0] if want and len(a) else _absent(later.vocab, c.codes, 1)[0]
    _align(out, status, c.positions[in_a], c.codes[in_a], a)
    # the later document's side: from its eligible codes, looked up in the sample
    mine = np.flatnonzero(eligible(a, c.level)).astype(np.int64)
    found = _lookup(c.sorted_codes, a[mine] & MASK) >= 0
    have = statuses(mine, found, len(a), _widths(a[mine], cfg))
    return out, own, a[have]


def _align(out: U32, status: Bools, positions: I64, codes: U32, a: U32) -> None:
    """Where the stored document is taken to share the later one's text (``status``), put
    the later document's codes in ``out``, read at the same offset as at the nearest sampled
    position it shares (``positions``, ``codes``): a shared stretch is the later document's
    own text, so whether each of its shingles is chrome — a common shingle, or one of a
    passage (:func:`~neardup.engine.templates.passages`, a run of shingles counted in text
    order) — is read from that text, not from the nearest sample's."""
    if kernels.wanted(0):
        kernels.load("_pairs").align_shared(out, status, positions, codes, a, MASK)
        return
    if len(positions) == 0 or len(a) == 0 or not status.any():
        return
    masked = a & MASK
    order = np.argsort(masked, kind="stable")
    keys = masked[order]
    lo = np.searchsorted(keys, codes, "left")
    hi = np.searchsorted(keys, codes, "right")
    once = hi - lo == 1
    if not once.any():
        return
    offsets = np.full(len(codes), np.iinfo(np.int64).min, dtype=np.int64)
    offsets[once] = order[lo[once]] - positions[once]
    guess = _median(offsets[once])
    for j in np.flatnonzero(~once & (hi > lo)).tolist():  # a repeated shingle: the nearest
        where = order[lo[j] : hi[j]].astype(np.int64)
        offsets[j] = int(where[np.argmin(np.abs(where - positions[j] - guess))]) - positions[j]
    ok = offsets != np.iinfo(np.int64).min
    anchors, offsets = positions[ok], offsets[ok]
    at = np.flatnonzero(status)
    there = at + offsets[_nearest(anchors, len(out))[at]]
    inside = (there >= 0) & (there < len(a))
    out[at[inside]] = a[there[inside]]


def _median(values: I64) -> int:
    """``int(np.median(values))`` (not empty) by a sort: the middle value, or the mean of
    the two middle ones truncated towards zero (np.median's checks cost 20 us a call)."""
    v = np.sort(values)
    half = len(v) // 2
    if len(v) % 2:
        return int(v[half])
    return int((int(v[half - 1]) + int(v[half])) / 2)


_NO_BANDS = np.zeros(0, dtype=np.uint64)


def _absent(avoid_a: U32, avoid_b: U32, n: int) -> U32:
    """``n`` distinct codes in neither array (placeholders that match nothing)."""
    avoid = union(avoid_a & MASK, avoid_b & MASK)
    out = np.zeros(0, dtype=np.uint32)
    start = 0x9E3779B9
    while len(out) < n:
        want = 2 * (n - len(out)) + 16
        with np.errstate(over="ignore"):
            cand = (np.arange(want, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                    + np.uint64(start)).astype(np.uint32) & MASK  # fmt: skip
        start += want
        cand = difference(cand, avoid)
        out = union(out, cand)
        avoid = union(avoid, cand)
    return out[:n]


def _placeholder_text(n_units: int, figures: tuple[tuple[str, int], ...]) -> str:
    """A text of ``n_units`` units whose figures start at their units."""
    parts: list[str] = []
    at = 0
    for f, u in sorted(figures, key=lambda x: x[1]):
        if u < at:
            continue
        parts.append("x" * (u - at))
        parts.append(f" {f} ")
        at = u + sum(ch.isdigit() for ch in f)
    parts.append("x" * max(0, n_units - at))
    return "".join(parts)


# -- bytes ------------------------------------------------------------------------------------

_MAGIC = b"NC"
#: magic, version, flags|level; then units, shingles, vocabulary and samples as varints
#: (version 2; version 1, written before 2026-12-04, had them as 4 bytes each: _HEAD_1)
_HEAD = struct.Struct("<2sBB")
_HEAD_1 = struct.Struct("<2sBBIIII")


def encode(c: Compact) -> bytes:
    """The bytes of a compact sketch: a header (its numbers as varints), the sampled codes (4
    bytes each, with the distance from the one before in bits 1 to 5; longer distances go
    on in a varint after them), the figures, and the text of a short document."""
    gaps = np.diff(c.positions, prepend=0) if len(c.positions) else c.positions
    near = np.minimum(gaps, _GAP_MAX).astype(np.uint32)
    words = c.codes | (near << np.uint32(1))
    long_gaps = (gaps[gaps >= _GAP_MAX] - _GAP_MAX).tolist()
    figs = "\x1f".join(f for f, _ in c.figures).encode("utf-8")
    short = c.short_text
    text = b"" if short is None else zlib.compress(short.encode("utf-8", "surrogatepass"), 9)
    flags = c.level | (0x40 if short is not None else 0)
    head = _HEAD.pack(_MAGIC, 2, flags) + rice.varints(
        [c.n_units, c.n_shingles, c.n_vocab, len(c.codes)]
    )
    return b"".join((
        head,
        words.astype("<u4").tobytes(),
        rice.varints(long_gaps),
        rice.varints([len(c.figures), *(u for _, u in c.figures), len(figs)]),
        figs,
        text,
    ))  # fmt: skip


def decode(blob: bytes) -> Compact:
    """The compact sketch :func:`encode` turned into ``blob``."""
    try:
        magic, version, flags = _HEAD.unpack_from(blob)
        if magic != _MAGIC or version not in (1, 2):
            raise NeardupError("stored sketch has an unknown format")
        if version == 2:
            (n_units, n_sh, n_vocab, n_samples), at = rice.read_varints(blob, _HEAD.size, 4)
        else:
            _, _, _, n_units, n_sh, n_vocab, n_samples = _HEAD_1.unpack_from(blob)
            at = _HEAD_1.size
        words = np.frombuffer(blob, dtype="<u4", count=n_samples, offset=at).astype(np.uint32)
        at += 4 * n_samples
        gaps = ((words >> np.uint32(1)) & np.uint32(_GAP_MAX)).astype(np.int64)
        far = np.flatnonzero(gaps == _GAP_MAX)
        more, at = rice.read_varints(blob, at, len(far))
        gaps[far] += np.array(more, dtype=np.int64)
        (n_figs,), at = rice.read_varints(blob, at, 1)
        units, at = rice.read_varints(blob, at, n_figs)
        (size,), at = rice.read_varints(blob, at, 1)
        names = blob[at : at + size].decode("utf-8").split("\x1f") if n_figs else []
        at += size
        if len(names) != n_figs:
            raise ValueError("figures do not match")
        text = zlib.decompress(blob[at:]).decode("utf-8", "surrogatepass") if flags & 0x40 else None
    except (struct.error, IndexError, ValueError, zlib.error) as exc:
        raise NeardupError(f"stored sketch is damaged ({len(blob)} bytes)") from exc
    return Compact(
        n_units, n_sh, n_vocab, flags & 0x3F, np.cumsum(gaps, dtype=np.int64),
        words & MASK, tuple(zip(names, units, strict=True)), text,
    )  # fmt: skip


# -- how alike: the prefilter and the ranking ------------------------------------------------


def alike(later: Sketch, c: Compact, sampled: dict[int, U32] | None = None) -> float:
    """How alike a later document and a stored one are, for the prefilter and the ranking
    (what the share of equal MinHash values estimates for whole sketches): the Jaccard
    similarity of their sampled codes (the later document's eligible codes at the stored
    one's level against its sample). ``sampled`` keeps the later document's sampled codes
    by level, for the next stored document."""
    a = sampled.get(c.level) if sampled is not None else None
    if a is None:
        mine = later.shingles
        a = distinct(mine[eligible(mine, c.level)] & MASK)
        if sampled is not None:
            sampled[c.level] = a
    b = c.sorted_codes
    if len(a) == 0 or len(b) == 0:
        return 0.0
    if kernels.wanted(0):  # when loaded (or on): every candidate of a compact store
        both = int(kernels.load("_pairs").sorted_overlap(a, b))
    else:
        both = int((_lookup(b, a) >= 0).sum())
    return both / (len(a) + len(b) - both)


# -- the learned chrome: one story's slots, and the whole count table ------------------------

#: a count table as :func:`encode_counts` writes it, and as it wrote it before 2026-12-04
_TABLE_MAGIC = b"NDT3"
_OLD_TABLE_MAGIC = b"NDT2"


#: the first byte of a story's slots as :func:`encode_slots` writes them (a Rice code); 3
#: or 4 there: the bytes of each gap, as stores wrote them before 2026-12-04
_RICE_SLOTS = 0x80


def encode_slots(vocab: U32, shift: int = 6) -> bytes:
    """The distinct template-guard slots of a story's codes (``vocab >> shift``), sorted and
    their gaps Rice-coded (:mod:`~neardup.engine.rice`: about 17 bits a slot for a story of
    1,300 in ``2^26``): what a compact store logs for every story, so other processes count
    it without its sketch."""
    slots = distinct((vocab >> np.uint32(shift)).astype(np.uint32)).astype(np.uint64)
    gaps = np.diff(slots, prepend=np.uint64(0))
    return bytes((_RICE_SLOTS,)) + rice.encode(gaps)


def decode_slots(blob: bytes, shift: int = 6) -> U32:
    """Codes with the slots :func:`encode_slots` logged (each slot's code with the other
    bits zero: what :meth:`~neardup.engine.templates.CommonShingles.add` counts), or that
    it logged before 2026-12-04 (3 or 4 bytes a gap); ValueError when ``blob`` is neither."""
    if blob[:1] == bytes((_RICE_SLOTS,)):
        gaps, end = rice.decode(blob, 1)
        if end != len(blob):
            raise ValueError(f"{len(blob) - end:,} bytes after a story's slots")
        return (np.cumsum(gaps, dtype=np.uint64) << np.uint64(shift)).astype(np.uint32)
    width = blob[0]
    if width not in (3, 4):
        raise ValueError(f"a story's slots of {width} bytes")
    raw = np.frombuffer(blob, dtype=np.uint8, offset=1).reshape(-1, width)
    wide = np.zeros((len(raw), 4), dtype=np.uint8)
    wide[:, :width] = raw
    slots = np.cumsum(wide.view("<u4").ravel(), dtype=np.uint64)
    return (slots << np.uint64(shift)).astype(np.uint32)


def encode_counts(counts: npt.NDArray[np.uint8]) -> bytes:
    """A count table (:class:`~neardup.engine.templates.CommonShingles`) for a store: the
    gaps between its non-zero slots, Rice-coded; which of them hold more than one (the gaps
    between those, Rice-coded too: nine in ten hold one), and what they hold, compressed
    (3.9 MB for the 5.5 million slots the first 10,000 hkcnews articles fill, where the
    bytes of each gap and every count compressed took 4.1 MB, and the whole table 9.7)."""
    nz = _nonzero(counts)
    return _encoded(len(counts), nz, counts[nz])


def _encoded(size: int, nz: npt.NDArray[np.int64], values: npt.NDArray[np.uint8]) -> bytes:
    """:func:`encode_counts` of a table of ``size`` slots whose non-zero ones are ``nz``,
    holding ``values``."""
    gaps, many = _gaps(nz), np.flatnonzero(values > 1)
    packer = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_HUFFMAN_ONLY)  # bytes, no runs
    held = packer.compress(values[many].tobytes()) + packer.flush()
    return b"".join((
        _TABLE_MAGIC,
        rice.varints([size, len(nz)]),
        rice.encode(gaps),
        rice.encode(_gaps(many)),
        held,
    ))  # fmt: skip


def _gaps(ascending: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """The gaps between ascending positions (the first's from -1): how many are skipped."""
    gaps = np.empty(len(ascending), dtype=np.int64)
    if len(ascending):
        gaps[0] = ascending[0]
        np.subtract(ascending[1:], ascending[:-1], out=gaps[1:])
        gaps[1:] -= 1
    return gaps.view(np.uint64)


def _positions(gaps: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The positions whose :func:`_gaps` are ``gaps`` (``gaps`` is changed)."""
    gaps += np.uint64(1)
    np.cumsum(gaps, out=gaps)
    gaps -= np.uint64(1)
    return gaps


def _nonzero(counts: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """``np.flatnonzero(counts)``: by the compiled kernel when the kernels are loaded (or
    on), 0.06 s instead of 0.2 on a table of 2^26 slots — a store saves its table inside its
    atomic section, where every other process waits."""
    if len(counts) and kernels.wanted(0):
        n = int(np.count_nonzero(counts))
        found: npt.NDArray[np.int64] = kernels.load("_pairs").nonzero_slots(counts, n)
        return found
    return np.flatnonzero(counts)


def decode_counts(blob: bytes, *, size: int | None = None) -> npt.NDArray[np.uint8] | None:
    """The count table of :func:`encode_counts`, or of what it wrote before 2026-12-04
    (None: ``blob`` is neither); ValueError when it is not a table of ``size`` slots (if
    given) or does not read as one."""
    found = count_slots(blob, size=size)
    if found is None:
        return None
    slots, where, counts = found
    out = np.zeros(slots, dtype=np.uint8)
    out[where] = counts
    return out


def count_slots(
    blob: bytes, *, size: int | None = None
) -> tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint8]] | None:
    """:func:`decode_counts` as the table's size, its slots that are not zero (ascending)
    and their counts — without a table of its size (None, ValueError: as it)."""
    if blob.startswith(_OLD_TABLE_MAGIC):
        table = _decode_old(blob, size)
        nonzero = np.flatnonzero(table).astype(np.uint64)
        return len(table), nonzero, table[nonzero]
    if not blob.startswith(_TABLE_MAGIC):
        return None
    (slots, n), at = rice.read_varints(blob, len(_TABLE_MAGIC), 2)
    if size is not None and slots != size:
        raise ValueError(f"a table of {slots:,} slots, not {size:,}")
    gaps, at = rice.decode(blob, at)
    between, at = rice.decode(blob, at)
    if len(gaps) != n or n > slots:
        raise ValueError(f"{len(gaps):,} gaps for {n:,} counts in a table of {slots:,} slots")
    where = _positions(gaps)
    if n and int(where[-1]) >= slots:
        raise ValueError(f"a slot past the table's {slots:,}")
    many = _positions(between)
    held = np.frombuffer(zlib.decompress(blob[at:]), dtype=np.uint8)
    if len(held) != len(many) or (len(many) and int(many[-1]) >= n):
        raise ValueError(f"{len(held):,} counts for {len(many):,} slots holding more than one")
    counts = np.ones(n, dtype=np.uint8)
    counts[many] = held
    return slots, where, counts


def _decode_old(blob: bytes, size: int | None) -> npt.NDArray[np.uint8]:
    """The count table of :func:`encode_counts` as it was before 2026-12-04 (the bytes of
    each gap, each byte as one run, and the counts, compressed together)."""
    body = zlib.decompress(blob[len(_OLD_TABLE_MAGIC) :])
    slots, n, width = struct.unpack_from("<QQB", body)
    if size is not None and slots != size:
        raise ValueError(f"a table of {slots:,} slots, not {size:,}")
    if not 1 <= width <= 4 or n > slots:
        raise ValueError(f"{n:,} counts of {width} bytes in a table of {slots:,} slots")
    at = struct.calcsize("<QQB")
    planes = np.frombuffer(body, dtype=np.uint8, count=n * width, offset=at).reshape(width, n)
    wide = np.zeros((n, 4), dtype=np.uint8)
    wide[:, :width] = planes.T
    gaps = wide.view("<u4").ravel().astype(np.int64)
    counts = np.frombuffer(body, dtype=np.uint8, count=n, offset=at + n * width)
    out = np.zeros(slots, dtype=np.uint8)
    out[np.cumsum(gaps + 1) - 1] = counts
    return out


#: A template guard with a window (:class:`~neardup.engine.templates.CommonShingles`) as a
#: store keeps it (:func:`encode_guard`): a mark, the window, the counts its turn has added,
#: the turns ended and the size of the first table's bytes; then the last full turn's
#: counts (what it answers from, less this turn's: nothing before the first turn ends) and
#: this turn's, so that the two take the bytes of about one table.
_GUARD_MAGIC = b"NDW2"
_NO_SLOTS = np.zeros(0, dtype=np.int64)
_NO_COUNTS = np.zeros(0, dtype=np.uint8)
_GUARD = struct.Struct("<4sdqqQ")


def encode_guard(common: CommonShingles) -> bytes:
    """A template guard's tables for a compact store (:func:`encode_counts` of each; a guard
    without a window: of its one table, as before windows)."""
    if common.window <= 0:
        return encode_counts(common.counts)
    first = (
        encode_counts(common.last_turn())
        if common.fresh is not None
        else _encoded(len(common.counts), _NO_SLOTS, _NO_COUNTS)  # the first turn: none
    )
    head = _GUARD.pack(_GUARD_MAGIC, common.window, common.filled, common.turns, len(first))
    return head + first + encode_counts(common.this_turn())


def is_guard(blob: bytes) -> bool:
    """Whether ``blob`` is a guard with a window that :func:`encode_guard` saved."""
    return blob.startswith(_GUARD_MAGIC)


def guard_window(blob: bytes) -> float:
    """The window of the guard a store saved (:func:`encode_guard`; 0.0: none); StoreError
    when ``blob`` starts as one and is cut short."""
    if not is_guard(blob):
        return 0.0
    try:
        return float(_GUARD.unpack_from(blob)[1])
    except struct.error as exc:
        raise _damaged(blob, exc) from exc


def load_guard(common: CommonShingles, blob: bytes) -> None:
    """Set ``common``'s counts to those a store saved: by :func:`encode_guard`, by
    :func:`encode_counts` or by :meth:`~neardup.engine.templates.CommonShingles.to_bytes`.
    A saved table that does not read as one (a store damaged, or written by something else)
    raises StoreError, saying so and how to mend it."""
    try:
        _load_guard(common, blob)
    except (zlib.error, struct.error, ValueError, IndexError) as exc:
        raise _damaged(blob, exc) from exc


def _load_guard(common: CommonShingles, blob: bytes) -> None:
    size = len(common.counts)
    if is_guard(blob):
        _, _, filled, turns, first = _GUARD.unpack_from(blob)
        last = count_slots(blob[_GUARD.size : _GUARD.size + first], size=size)
        fresh = count_slots(blob[_GUARD.size + first :], size=size)
        if last is None or fresh is None:
            raise ValueError("its two turns are not count tables")
        common.restore(last[1:], fresh[1:], filled, turns)
        return
    found = count_slots(blob, size=size)
    if found is None:
        common.load(blob)  # a table of every story, compressed whole
    else:
        common.restore(found[1:])


class DamagedGuard(StoreError):
    """A store's saved chrome table (``size`` bytes) that does not read as one: ``problem``
    says so and why (``reason``), the message also how to mend it."""

    def __init__(self, size: int, reason: str) -> None:
        self.reason = reason
        self.problem = f"the store's saved chrome table ({size:,} bytes) is damaged: {reason}"
        super().__init__(
            f"{self.problem}; restore the store from a backup, or rebuild it (move it away and "
            "run neardup dedup again over what it held)"
        )


def _damaged(blob: bytes, exc: BaseException) -> DamagedGuard:
    why = f"it does not read as the template guard's counts ({exc or type(exc).__name__})"
    return DamagedGuard(len(blob), why)


# -- what a store writes of a new document --------------------------------------------------


class Forms:
    """What a store writes of a sketched document, each made from its sketch alone, once,
    when first asked: its story's codes (what the template guard counts:
    :func:`~neardup.engine.decide.story_codes`), their logged slots (:func:`encode_slots`),
    its compact sketch (:func:`encode` of :func:`compact`) and its text compressed for the
    text tier. A service's workers make them (:meth:`made`) before the decider, which
    decides one batch after another, would (:meth:`~neardup.Deduper.prepare`)."""

    __slots__ = ("_blob", "_codes", "_slots", "_text", "sketch")

    def __init__(self, sketch: Sketch) -> None:
        self.sketch = sketch
        self._codes: U32 | None = None
        self._slots: bytes | None = None
        self._blob: bytes | None = None
        self._text: bytes | None = None

    @property
    def codes(self) -> U32:
        if self._codes is None:
            self._codes = story_codes(self.sketch)
        return self._codes

    @property
    def slots(self) -> bytes:
        if self._slots is None:
            self._slots = encode_slots(self.codes)
        return self._slots

    @property
    def blob(self) -> bytes:
        if self._blob is None:
            self._blob = encode(compact(self.sketch))
        return self._blob

    @property
    def text(self) -> bytes:
        if self._text is None:
            self._text = zlib.compress(self.sketch.text.encode("utf-8", "surrogatepass"), 6)
        return self._text

    def made(self, *, text: bool) -> Forms:
        """These forms with every one made (the compressed text only where ``text``)."""
        _ = self.slots, self.blob
        if text:
            _ = self.text
        return self
