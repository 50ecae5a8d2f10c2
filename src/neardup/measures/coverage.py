"""coverage: the share of the shorter text's units that lie inside shingles the other has.

The measure every dedup decision uses (without the template guard and the boilerplate
stripping the engine adds; ``neardup compare`` shows the engine's score beside it). A typo
uncovers one character, not a whole shingle, so a cut and lightly edited reprint still covers
nearly all of itself, while two stories sharing a phrase cover only that stretch. Shorter
means fewer units (letters, digits and CJK characters).

>>> normalized_similarity("the cat sat on the mat", "yesterday the cat sat on the mat and slept")
1.0
>>> round(normalized_similarity("北京今天天气晴朗适合出游", "北京今天天气晴朗但有大风"), 3)
0.667
"""

from __future__ import annotations

import numpy as np

from ..shingling import Shingles, covered_units, pack_codes, shingle_hashes
from ._base import DEFAULT_PROCESSOR, Processor, cutoff, prepare

__all__ = ["distance", "normalized_similarity", "similarity"]


def _scored(a: str, b: str, cjk_width: int, word_width: int) -> tuple[int, int]:
    """(covered units, coverable units) of the shorter text; of the better covered one when
    the two are as long (so the measure is symmetric). Coverable: inside any of its own
    shingles (every unit, but for a few at the end of some mixed-script texts)."""
    sa = shingle_hashes(a, cjk_width=cjk_width, word_width=word_width)
    sb = shingle_hashes(b, cjk_width=cjk_width, word_width=word_width)
    if sa.n_units != sb.n_units:
        short, other = (sa, sb) if sa.n_units < sb.n_units else (sb, sa)
        return _covered(short, other, cjk_width), _coverable(short)
    one = (_covered(sa, sb, cjk_width), _coverable(sa))
    two = (_covered(sb, sa, cjk_width), _coverable(sb))
    return max(one, two, key=lambda p: p[0] / p[1] if p[1] else 0.0)


def _coverable(s: Shingles) -> int:
    return covered_units(s.n_units, np.arange(len(s.hashes)), s.widths)


def _covered(short: Shingles, other: Shingles, cjk_width: int) -> int:
    mine = pack_codes(short.hashes, cjk_width, short.widths)
    theirs = np.sort(pack_codes(other.hashes, cjk_width, other.widths))
    if len(mine) == 0 or len(theirs) == 0:
        return 0
    pos = np.minimum(np.searchsorted(theirs, mine), len(theirs) - 1)
    idx = np.flatnonzero(theirs[pos] == mine)
    return covered_units(short.n_units, idx, short.widths[idx])


def similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    cjk_width: int = 5,
    word_width: int = 9,
) -> int:
    """Units of the shorter text covered by shingles the other text also has."""
    a, b = prepare(a, b, processor)
    return _scored(a, b, cjk_width, word_width)[0]


def distance(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    cjk_width: int = 5,
    word_width: int = 9,
) -> int:
    """Units of the shorter text not covered by shingles the other text has."""
    a, b = prepare(a, b, processor)
    covered, units = _scored(a, b, cjk_width, word_width)
    return units - covered


def normalized_similarity(
    a: str,
    b: str,
    *,
    processor: Processor = DEFAULT_PROCESSOR,
    score_cutoff: float | None = None,
    cjk_width: int = 5,
    word_width: int = 9,
) -> float:
    """The share of the shorter text's units covered: 1.0 when it is all found in the other
    (two texts without units are identical when equal)."""
    a, b = prepare(a, b, processor)
    covered, units = _scored(a, b, cjk_width, word_width)
    if units == 0:
        return cutoff(1.0 if a == b else 0.0, score_cutoff)
    return cutoff(covered / units, score_cutoff)
