"""What the Deduper computes for each document and how it verifies a candidate pair.

A document becomes a :class:`Sketch`: its text normalized and stripped of site boilerplate,
its shingle hashes in text order (32-bit, the lowest bit telling a CJK-started shingle from a
Latin one), its MinHash signature and its LSH band keys. A candidate pair is verified by
**coverage**: the share of the shorter text's units (letters, digits, CJK characters) that
lie inside shingles the other text also has. A reprint that was cut short, excerpted or
lightly edited covers nearly all of itself (a typo uncovers one character, not a shingle),
while two different stories that share a dateline, a template phrase or a footer cover only
that stretch. Three guards keep templates apart: shingles already seen in ``common_after``
different stories count on neither side; when the shorter text has two or more figures, at
least half must appear in the other (earnings, weather and meeting items share words, not
figures); and a fragment much shorter than the other text needs more coverage. Short texts
(titles, fewer than ``short_units`` units) are verified with the character measures the
source documents advise for titles instead.

>>> cfg = DedupConfig()
>>> a = make_sketch("北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。", cfg)
>>> b = make_sketch("来源：某某日报\\n北京地铁十九号线今天开通运营，全长二十二公里。", cfg)
>>> v = verify(a, b, cfg)
>>> round(v.score, 2), v.measure, v.is_duplicate
(0.96, 'lcsubstr', True)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .boilerplate import strip_boilerplate
from .errors import ConfigError
from .index.lsh import band_keys, optimal_params
from .measures import lcsubstr, levenshtein
from .normalize import Normalizer
from .shingling import shingle_hashes
from .sketch.minhash import minhash_batch

__all__ = [
    "CommonShingles",
    "DedupConfig",
    "Sketch",
    "Verdict",
    "distinct",
    "distinct_with_index",
    "make_sketch",
    "make_sketches",
    "may_verify",
    "required",
    "verify",
]

U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_YEAR_OR_DATE = re.compile(r"(?:19|20)\d\d(?:[-/.]\d{1,2}){0,2}")  # what site headers add

#: Longest prepared text a sketch keeps for evidence and the title measures; the shingles,
#: and so coverage, always cover the whole document.
MAX_VERIFY_CHARS = 200_000


@dataclass(frozen=True)
class DedupConfig:
    """The knobs of near-duplicate detection, with defaults chosen on news in both languages.

    ``threshold``: coverage a candidate needs to be called a duplicate.
    ``title_threshold``: the character-measure score short texts need.
    ``short_units``: texts with fewer units than this are compared as titles.
    ``fragment_ratio``: below this length ratio (shorter / longer) the coverage needed rises
    towards 1.0, so a short template sentence does not absorb every story that quotes it.
    ``prefilter``: candidates whose MinHash-estimated containment is below this skip the exact
    check (they could not reach ``threshold``).
    ``common_after``: a shingle seen in this many stories is boilerplate or template and does
    not count towards coverage (0 turns this off).
    ``lsh_threshold``: the Jaccard level the LSH bands are tuned to catch (low, because the
    verification, not the index, decides; excerpts have a low Jaccard but a high coverage).
    """

    threshold: float = 0.6
    fragment_ratio: float = 0.3
    prefilter: float = 0.3
    common_after: int = 5
    title_threshold: float = 0.75
    short_units: int = 24
    lsh_threshold: float = 0.15
    num_perm: int = 128
    lsh_params: tuple[int, int] | None = None
    bucket_cap: int = 100
    cjk_width: int = 5
    word_width: int = 9
    normalize: bool = True
    strip_boilerplate: bool = True
    normalizer: Normalizer = field(default_factory=Normalizer)

    def __post_init__(self) -> None:
        for name in ("threshold", "title_threshold"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ConfigError(f"{name} must be in (0, 1], got {value}")
        if self.short_units < 0:
            raise ConfigError(f"short_units must be >= 0, got {self.short_units}")
        if not (1 <= self.cjk_width <= 255 and 1 <= self.word_width <= 255):
            raise ConfigError(
                f"shingle widths must be between 1 and 255, got cjk_width={self.cjk_width}, "
                f"word_width={self.word_width}"
            )
        n = self.num_perm
        if n < 1 or n & (n - 1) or n > 4096:
            raise ConfigError(f"num_perm must be a power of two between 1 and 4096, got {n}")
        if self.bucket_cap < 1:
            raise ConfigError(f"bucket_cap must be at least 1, got {self.bucket_cap}")
        _ = self.bands_rows  # validates the LSH parameters

    @property
    def bands_rows(self) -> tuple[int, int]:
        """(bands, rows) of the LSH index."""
        if self.lsh_params is not None:
            b, r = self.lsh_params
            if b < 1 or r < 1 or b * r > self.num_perm:
                raise ConfigError(
                    f"b * r = {b} * {r} = {b * r} must not exceed num_perm {self.num_perm}"
                )
            return b, r
        return optimal_params(self.lsh_threshold, self.num_perm, 0.2, 0.8)


@dataclass(frozen=True, slots=True)
class Sketch:
    """Everything the engine keeps of one document to find and verify its near-duplicates."""

    text: str
    shingles: U32
    n_units: int
    signature: U64
    bands: U64
    vocab: U32
    numbers: frozenset[str] = frozenset()
    #: where each of ``shingles`` is in ``vocab`` (None: not computed; verification then
    #: looks the shingles up one by one, a few times slower)
    vocab_index: npt.NDArray[np.integer[Any]] | None = None

    @property
    def is_empty(self) -> bool:
        """A document with no letters, digits or CJK characters has nothing to compare."""
        return self.n_units == 0


def _prepare(text: str, cfg: DedupConfig) -> str:
    if cfg.normalize:
        text = cfg.normalizer(text)
    if cfg.strip_boilerplate:
        text = strip_boilerplate(text)
    return text


def _pack(hashes: U64, cjk_width: int, widths: npt.NDArray[np.uint8]) -> U32:
    """32-bit shingle codes: the high half of the hash, lowest bit set for CJK-width shingles."""
    top = (hashes >> np.uint64(32)).astype(np.uint32)
    packed: U32 = (top & np.uint32(0xFFFFFFFE)) | (widths == cjk_width).astype(np.uint32)
    return packed


def distinct(codes: U32) -> U32:
    """The sorted distinct values (np.sort and a neighbour mask; faster than np.unique here)."""
    out = np.sort(codes)
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


def distinct_with_index(codes: U32) -> tuple[U32, npt.NDArray[np.integer[Any]]]:
    """``distinct(codes)``, and where each code is in it: ``vocab[index] == codes``. The
    index is uint16 (2 bytes a shingle) unless the text has more than 65,536 shingles.

    >>> vocab, index = distinct_with_index(np.array([7, 3, 7, 5], dtype=np.uint32))
    >>> vocab.tolist(), index.tolist(), index.dtype.name
    ([3, 5, 7], [2, 0, 2, 1], 'uint16')
    """
    order = np.argsort(codes)
    ordered = codes[order]
    new = np.ones(len(codes), dtype=np.bool_)
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    index: npt.NDArray[np.integer[Any]] = np.empty(
        len(codes), dtype=np.uint16 if len(codes) <= 1 << 16 else np.int32
    )
    index[order] = np.cumsum(new, dtype=np.int32) - 1
    return ordered[new], index


def _numbers(text: str) -> frozenset[str]:
    """The figures of a text (two or more characters), leaving out years and dates."""
    return frozenset(
        n for n in _NUMBER.findall(text) if len(n) >= 2 and not _YEAR_OR_DATE.fullmatch(n)
    )


def make_sketches(texts: Sequence[str], cfg: DedupConfig) -> list[Sketch]:
    """Sketch many documents at once (MinHash and band keys vectorized over the batch)."""
    prepared = [_prepare(t, cfg) for t in texts]
    feats = [
        shingle_hashes(t, cjk_width=cfg.cjk_width, word_width=cfg.word_width) for t in prepared
    ]
    signatures = minhash_batch([f.hashes for f in feats], num_perm=cfg.num_perm)
    b, r = cfg.bands_rows
    keys = band_keys(signatures, b, r)
    packed = [_pack(f.hashes, cfg.cjk_width, f.widths) for f in feats]
    vocabs = [distinct_with_index(codes) for codes in packed]
    return [
        Sketch(
            text=p[:MAX_VERIFY_CHARS],
            shingles=packed[i],
            vocab=vocabs[i][0],
            n_units=f.n_units,
            signature=signatures[i],
            bands=keys[i],
            numbers=_numbers(p),
            vocab_index=vocabs[i][1],
        )
        for i, (p, f) in enumerate(zip(prepared, feats, strict=True))
    ]


def make_sketch(text: str, cfg: DedupConfig) -> Sketch:
    """Sketch one document."""
    return make_sketches([text], cfg)[0]


def _estimated_containment(short: Sketch, other: Sketch) -> float:
    """The share of the shorter text's shingles in the other, as MinHash estimates it."""
    j = float(np.count_nonzero(short.signature == other.signature)) / len(short.signature)
    a, b = len(short.vocab), len(other.vocab)
    if a == 0:
        return 0.0
    return min(1.0, j * (a + b) / ((1.0 + j) * min(a, b)))


def may_verify(
    later: tuple[U64, npt.NDArray[np.int64], npt.NDArray[np.int64]],
    earlier: tuple[U64, npt.NDArray[np.int64], npt.NDArray[np.int64]],
    cfg: DedupConfig,
) -> npt.NDArray[np.bool_]:
    """For many candidate pairs at once, given each side's (signatures, vocabulary sizes,
    units): False where :func:`verify` (later, earlier) rejects the pair on the MinHash
    estimate alone, True otherwise. The same floating-point steps as
    :func:`_estimated_containment`, so the same answers."""
    sig_a, vocab_a, units_a = later
    sig_b, vocab_b, units_b = earlier
    title = np.minimum(units_a, units_b) < cfg.short_units
    empty = (units_a == 0) | (units_b == 0)
    j = np.count_nonzero(sig_a == sig_b, axis=1) / sig_a.shape[1]
    a = np.where(units_a <= units_b, vocab_a, vocab_b)  # the shorter text's
    b = np.where(units_a <= units_b, vocab_b, vocab_a)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.minimum(1.0, j * (a + b) / ((1.0 + j) * np.minimum(a, b)))
    est = np.where(a == 0, 0.0, est)
    out: npt.NDArray[np.bool_] = title | empty | ~(est < cfg.prefilter)
    return out


class CommonShingles:
    """How many distinct stories (kept documents) each shingle has appeared in, so far.

    A shingle found in ``limit`` or more stories is a site's boilerplate or a template phrase,
    whatever its wording; coverage ignores it. Counts live in a fixed table of 2^bits
    saturating bytes indexed by the shingle code (a few collisions only make a rare shingle
    look common a little sooner).

    >>> import numpy as np
    >>> common = CommonShingles(limit=2)
    >>> a, b = np.array([1 << 20, 2 << 20], dtype=np.uint32), np.array([2 << 20], dtype=np.uint32)
    >>> common.add(a); common.add(b)
    >>> common.is_common(np.array([1 << 20, 2 << 20, 3 << 20], dtype=np.uint32)).tolist()
    [False, True, False]
    """

    def __init__(self, *, limit: int, bits: int = 26) -> None:
        self.limit = limit
        self._shift = np.uint32(32 - bits)
        self.counts = np.zeros(1 << bits, dtype=np.uint8)

    def _slots(self, codes: U32) -> npt.NDArray[np.intp]:
        return (codes >> self._shift).astype(np.intp)

    def add(self, vocab: U32) -> None:
        """Count one more story for each (distinct) shingle code in ``vocab``."""
        if self.limit <= 0 or len(vocab) == 0:
            return
        slots = self._slots(vocab)  # a fancy-index assignment counts a repeated slot once
        counts = self.counts[slots]
        counts += counts < 255  # saturating
        self.counts[slots] = counts

    def remove(self, vocab: U32) -> None:
        """Undo one :meth:`add` of ``vocab`` (a saturated count stays at or above the limit)."""
        if self.limit <= 0 or len(vocab) == 0:
            return
        slots = self._slots(vocab)
        self.counts[slots] = np.maximum(self.counts[slots].astype(np.int16) - 1, 0).astype(np.uint8)

    def to_bytes(self) -> bytes:
        """The count table, compressed, for a store to keep (see :meth:`load`)."""
        import zlib

        return zlib.compress(self.counts.tobytes(), 1)

    def load(self, blob: bytes) -> None:
        """Replace the counts with those :meth:`to_bytes` saved (a table of the same size)."""
        import zlib

        counts = np.frombuffer(zlib.decompress(blob), dtype=np.uint8)
        if len(counts) != len(self.counts):
            raise ValueError(f"saved table has {len(counts)} slots, expected {len(self.counts)}")
        self.counts = counts.copy()

    def is_common(self, codes: U32) -> npt.NDArray[np.bool_]:
        """Which of ``codes`` have been seen in ``limit`` stories or more."""
        if self.limit <= 0:
            return np.zeros(len(codes), dtype=np.bool_)
        return self.counts[self._slots(codes)] >= self.limit


def _covered_units(n: int, idx: npt.NDArray[np.intp], codes: U32, cfg: DedupConfig) -> int:
    """Units covered by the shingles at positions ``idx`` (ascending): the length of the
    union of their intervals [i, i + width)."""
    if len(idx) == 0:
        return 0
    widths = np.where(codes[idx] & np.uint32(1), cfg.cjk_width, cfg.word_width)
    ends = np.minimum(idx + widths, n)
    reach = np.maximum.accumulate(ends)  # the furthest any earlier interval reaches
    starts = np.maximum(idx[1:], reach[:-1])
    return int(ends[0] - idx[0]) + int(np.maximum(ends[1:] - starts, 0).sum())


def _coverage(
    short: Sketch, other: Sketch, cfg: DedupConfig, common: CommonShingles | None
) -> float:
    """Share of ``short``'s distinctive units inside shingles that ``other`` also has.

    Units only common shingles cover (boilerplate, templates) count on neither side.
    """
    codes = short.shingles
    if len(codes) == 0 or short.n_units == 0:
        return 0.0
    vocab = other.vocab
    if short.vocab_index is None:
        pos = np.searchsorted(vocab, codes)
        shared = vocab[np.minimum(pos, len(vocab) - 1)] == codes
    else:  # look up the sorted distinct codes (fast), then spread to every position
        mine = short.vocab
        pos = np.searchsorted(vocab, mine)
        shared = (vocab[np.minimum(pos, len(vocab) - 1)] == mine)[short.vocab_index]
    if not shared.any():
        return 0.0
    n = short.n_units
    if common is None:
        return _covered_units(n, np.flatnonzero(shared), codes, cfg) / n
    rare = ~common.is_common(codes)
    coverable = _covered_units(n, np.flatnonzero(rare), codes, cfg)
    if coverable < cfg.short_units:
        return 0.0  # nothing distinctive left to compare
    return _covered_units(n, np.flatnonzero(shared & rare), codes, cfg) / coverable


@dataclass(frozen=True, slots=True)
class Verdict:
    """The verification of one candidate pair: its score, the measure, and the verdict."""

    score: float
    measure: str
    is_duplicate: bool


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


def verify(a: Sketch, b: Sketch, cfg: DedupConfig, common: CommonShingles | None = None) -> Verdict:
    """Score a candidate pair and decide whether it is a near-duplicate.

    ``common`` (the stories seen so far) lets coverage ignore boilerplate and templates.
    """
    if a.is_empty or b.is_empty:
        same = a.text == b.text
        return Verdict(1.0 if same else 0.0, "identical" if same else "coverage", same)
    short, other = (a, b) if a.n_units <= b.n_units else (b, a)
    if short.n_units < cfg.short_units:
        # titles: the best of the two character measures, as the source documents advise
        s1 = lcsubstr.normalized_similarity(short.text, other.text, processor=None)
        s2 = levenshtein.normalized_similarity(short.text, other.text, processor=None)
        score, measure = (s1, "lcsubstr") if s1 >= s2 else (s2, "levenshtein")
        ratio = len(short.text) / max(1, len(other.text))
        return Verdict(score, measure, score >= required(cfg, ratio, cfg.title_threshold))
    if _estimated_containment(short, other) < cfg.prefilter:
        return Verdict(0.0, "coverage", False)
    score = _coverage(short, other, cfg, common)
    if len(short.numbers) >= 2:
        agree = len(short.numbers & other.numbers) / len(short.numbers)
        if agree < 0.5:
            score = min(score, agree)
    return Verdict(score, "coverage", score >= required(cfg, short.n_units / other.n_units))
