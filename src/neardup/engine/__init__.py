"""The engine: every rule of near-duplicate detection, written once, with no I/O.

The streaming :class:`~neardup.deduper.Deduper` (store-backed), the local batch run
(:func:`~neardup.batch.dedup_batch`) and the Spark engine (:mod:`neardup.spark`) all call
these functions, so they reach the same decisions. One document flows through:

======================  =================================================================
:mod:`.config`          the knobs (:class:`DedupConfig`), the keep policies, what a store's
                        sketches depend on
:mod:`.sketches`        normalize, strip boilerplate, shingle, MinHash, band keys:
                        a :class:`Sketch`
:mod:`.codec`           a sketch as bytes, flat arrays or Arrow columns, and back
:mod:`.candidates`      byte-identical copies, LSH buckets and the bucket cap
:mod:`.prefilter`       the MinHash estimate that skips hopeless candidates
:mod:`.templates`       the template guard: shingles seen in many stories do not count
:mod:`.verify`          coverage and its guards: a :class:`Verdict` on a pair
:mod:`.decide`          which candidates are verified, best match, roots, which document
                        each story keeps, evidence
======================  =================================================================

>>> cfg = DedupConfig()
>>> a = make_sketch("北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。", cfg)
>>> b = make_sketch("来源：某某日报\\n北京地铁十九号线今天开通运营，全长二十二公里。", cfg)
>>> v = verify(a, b, cfg)
>>> round(v.score, 2), v.measure, v.is_duplicate
(0.96, 'lcsubstr', True)
"""

from __future__ import annotations

from .candidates import BandKey, bucket_keys, text_key
from .config import KEEP_POLICIES, DedupConfig, KeepPolicy, check_keep, store_fingerprint
from .decide import (
    IDENTICAL,
    LIGHT_BITS,
    Decision,
    Match,
    alike,
    best_match,
    best_of,
    choose_kept,
    counts_as_story,
    evidence,
    hub,
    identical,
    light,
    roots,
    shared_text,
    story_codes,
    to_verify,
)
from .prefilter import estimated_containment, may_verify, may_verify_counts
from .sketches import (
    MAX_VERIFY_CHARS,
    Sketch,
    distinct,
    distinct_with_index,
    make_sketch,
    make_sketches,
    prepare,
)
from .templates import CommonShingles, TemplateGuard, TemplateTable
from .verify import Verdict, at_edges, coverage, required, verify

__all__ = [
    "IDENTICAL",
    "KEEP_POLICIES",
    "LIGHT_BITS",
    "MAX_VERIFY_CHARS",
    "BandKey",
    "CommonShingles",
    "Decision",
    "DedupConfig",
    "KeepPolicy",
    "Match",
    "Sketch",
    "TemplateGuard",
    "TemplateTable",
    "Verdict",
    "alike",
    "at_edges",
    "best_match",
    "best_of",
    "bucket_keys",
    "check_keep",
    "choose_kept",
    "counts_as_story",
    "coverage",
    "distinct",
    "distinct_with_index",
    "estimated_containment",
    "evidence",
    "hub",
    "identical",
    "light",
    "make_sketch",
    "make_sketches",
    "may_verify",
    "may_verify_counts",
    "prepare",
    "required",
    "roots",
    "shared_text",
    "store_fingerprint",
    "story_codes",
    "text_key",
    "to_verify",
    "verify",
]
