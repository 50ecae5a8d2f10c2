"""Verification of a candidate pair by **coverage**, and the guards that keep templates apart.

Coverage is the share of the shorter text's units (letters, digits, CJK characters) that
lie inside shingles the other text also has. A reprint that was cut short, excerpted or
lightly edited covers nearly all of itself (a typo uncovers one character, not a shingle),
while two different stories that share a dateline, a template phrase or a footer cover only
that stretch. Three guards keep templates apart: shingles the template guard calls common
(seen in ``common_after`` different stories) count on neither side; when the shorter text
has two or more figures, at least half must appear in the other (earnings, weather and
meeting items share words, not figures); and a fragment much shorter than the other text
needs more coverage. Short texts (titles, fewer than ``short_units`` units) are verified
with the character measures the source documents advise for titles instead.

>>> from neardup.engine import DedupConfig, make_sketch
>>> cfg = DedupConfig()
>>> a = make_sketch("北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。", cfg)
>>> b = make_sketch("来源：某某日报\\n北京地铁十九号线今天开通运营，全长二十二公里。", cfg)
>>> v = verify(a, b, cfg)
>>> round(v.score, 2), v.measure, v.is_duplicate
(0.96, 'lcsubstr', True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..measures import lcsubstr, levenshtein
from ..shingling import covered_units
from .config import DedupConfig
from .prefilter import estimated_containment
from .sketches import Sketch
from .templates import TemplateGuard

__all__ = ["Verdict", "coverage", "required", "verify"]

U32 = npt.NDArray[np.uint32]


def _covered(n: int, idx: npt.NDArray[np.intp], codes: U32, cfg: DedupConfig) -> int:
    """Units covered by the shingles at positions ``idx`` (ascending) of ``codes``, whose
    lowest bit tells their width."""
    widths = np.where(codes[idx] & np.uint32(1), cfg.cjk_width, cfg.word_width)
    return covered_units(n, idx, widths)


def coverage(short: Sketch, other: Sketch, cfg: DedupConfig, common: TemplateGuard | None) -> float:
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
        return _covered(n, np.flatnonzero(shared), codes, cfg) / n
    rare = ~common.is_common(codes)
    coverable = _covered(n, np.flatnonzero(rare), codes, cfg)
    if coverable < cfg.short_units:
        return 0.0  # nothing distinctive left to compare
    return _covered(n, np.flatnonzero(shared & rare), codes, cfg) / coverable


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


def verify(a: Sketch, b: Sketch, cfg: DedupConfig, common: TemplateGuard | None = None) -> Verdict:
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
    if estimated_containment(short, other) < cfg.prefilter:
        return Verdict(0.0, "coverage", False)
    score = coverage(short, other, cfg, common)
    if len(short.numbers) >= 2:
        agree = len(short.numbers & other.numbers) / len(short.numbers)
        if agree < 0.5:
            score = min(score, agree)
    return Verdict(score, "coverage", score >= required(cfg, short.n_units / other.n_units))
