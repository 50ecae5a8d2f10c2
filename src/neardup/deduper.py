"""The Deduper: decide, document by document or for a whole corpus, which texts are
near-duplicates of which, keep one per story, and say why.

Streaming: ``check`` (decide without remembering), ``add`` (remember), ``check_and_add``.
Batch: :func:`dedup_batch` sketches the whole corpus at once, finds every candidate pair with
one join on the LSH band keys, verifies them, and links each document to its best earlier
match, exactly as streaming the documents in the same order would.

>>> dd = Deduper()
>>> dd.check_and_add("a", "北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。").is_duplicate
False
>>> d = dd.check_and_add("b", "转载：北京地铁十九号线今天开通运营，全长二十二公里，设车站十座！")
>>> d.is_duplicate, d.duplicate_of, d.cluster, d.measure
(True, 'a', 'a', 'coverage')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import xxhash

from .engine import CommonShingles, DedupConfig, Sketch, make_sketches, verify
from .errors import ConfigError, InputError
from .hashing import SEED
from .index.lsh import MinHashLSH, lsh_join
from .passages import Passage, shared_passages

__all__ = ["BatchResult", "Decision", "Deduper", "dedup_batch"]

KeepPolicy = Literal["first", "longest", "earliest"]


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict on one document.

    ``duplicate_of`` is the earlier document it matched best (None when it is kept);
    ``cluster`` is the id of the document kept for its story; ``score`` and ``measure`` say
    how close the match was; ``evidence`` holds the passages the two share.
    """

    id: str
    is_duplicate: bool
    duplicate_of: str | None
    cluster: str
    score: float
    measure: str | None
    evidence: tuple[Passage, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (evidence as its passages' texts)."""
        return {
            "id": self.id,
            "is_duplicate": self.is_duplicate,
            "duplicate_of": self.duplicate_of,
            "cluster": self.cluster,
            "score": round(self.score, 4),
            "measure": self.measure,
            "evidence": [p.text for p in self.evidence],
        }


def _best(
    sketch: Sketch,
    candidates: Iterable[tuple[str, Sketch]],
    cfg: DedupConfig,
    common: CommonShingles,
) -> tuple[str, float, str] | None:
    """The candidate that verifies with the highest score (the earliest on ties)."""
    best: tuple[str, float, str] | None = None
    for key, other in candidates:
        v = verify(sketch, other, cfg, common)
        if v.is_duplicate and (best is None or v.score > best[1]):
            best = (key, v.score, v.measure)
            if v.score >= 1.0:
                break  # nothing scores higher, and candidates come earliest first
    return best


def _evidence(a: Sketch, b: Sketch) -> tuple[Passage, ...]:
    return tuple(shared_passages(a.text, b.text, min_len=6, limit=10))


def _text_key(text: str) -> int:
    """A stable hash of a text exactly as given, to spot byte-identical copies."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"), SEED)


def _identical(doc_id: str, first: str, cluster: str, sketch: Sketch, explain: bool) -> Decision:
    """The decision for an exact copy of an earlier document: a duplicate of the first copy."""
    evidence = _evidence(sketch, sketch) if explain else ()
    return Decision(doc_id, True, first, cluster, 1.0, "identical", evidence)


class Deduper:
    """Near-duplicate detection over a stream of documents, in memory.

    Every document added is indexed, kept or not, so a later reprint can match any earlier
    copy of its story; its cluster is the id of the first document of that story. A
    byte-identical copy of an earlier text is a duplicate of its first copy at once (score
    1.0, measure "identical") and is not indexed again.
    """

    def __init__(self, config: DedupConfig | None = None, *, explain: bool = True) -> None:
        self.config = config if config is not None else DedupConfig()
        self.explain = explain
        b, r = self.config.bands_rows
        self._lsh = MinHashLSH(
            num_perm=self.config.num_perm, params=(b, r), bucket_cap=self.config.bucket_cap
        )
        self._sketches: dict[str, Sketch] = {}
        self._decisions: dict[str, Decision] = {}
        self._common = CommonShingles(limit=self.config.common_after)
        self._exact: dict[int, str] = {}  # hash of a text as given -> the first id with it

    def __len__(self) -> int:
        return len(self._sketches)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._sketches

    def sketch(self, text: str) -> Sketch:
        """The sketch of one text under this Deduper's configuration."""
        if not isinstance(text, str):
            raise InputError(f"text must be a str, not {type(text).__name__}")
        return make_sketches([text], self.config)[0]

    def _decide(self, doc_id: str, sketch: Sketch, copy_of: str | None = None) -> Decision:
        if doc_id in self._decisions:
            return self._decisions[doc_id]
        if copy_of is not None:
            return _identical(
                doc_id, copy_of, self._decisions[copy_of].cluster, sketch, self.explain
            )
        cands = [] if sketch.is_empty else self._lsh.query_keys([int(k) for k in sketch.bands])
        best = _best(sketch, ((k, self._sketches[k]) for k in cands), self.config, self._common)
        if best is None:
            return Decision(doc_id, False, None, doc_id, 0.0, None)
        key, score, measure = best
        cluster = self._decisions[key].cluster
        evidence = _evidence(sketch, self._sketches[key]) if self.explain else ()
        return Decision(doc_id, True, key, cluster, score, measure, evidence)

    def check(self, doc_id: str, text: str) -> Decision:
        """Decide whether ``text`` duplicates a document already added, without adding it.

        An id already added returns its earlier decision.
        """
        if doc_id in self._decisions:
            return self._decisions[doc_id]
        copy_of = self._exact.get(_text_key(text)) if isinstance(text, str) else None
        if copy_of is not None:
            return self._decide(doc_id, self._sketches[copy_of], copy_of)
        return self._decide(doc_id, self.sketch(text))

    def add(self, doc_id: str, text: str) -> Decision:
        """Remember a document (deciding it first); an id already added changes nothing."""
        return self.check_and_add(doc_id, text)

    def check_and_add(self, doc_id: str, text: str) -> Decision:
        """Decide, then remember the document so later ones are compared with it."""
        if doc_id in self._decisions:
            return self._decisions[doc_id]
        if not isinstance(text, str):
            raise InputError(f"text must be a str, not {type(text).__name__}")
        key = _text_key(text)
        copy_of = self._exact.get(key)
        if copy_of is not None:
            # an exact copy: same sketch, nothing new for the index to learn
            sketch = self._sketches[copy_of]
            decision = self._decide(doc_id, sketch, copy_of)
            self._decisions[doc_id] = decision
            self._sketches[doc_id] = sketch
            return decision
        sketch = self.sketch(text)
        decision = self._decide(doc_id, sketch)
        self._exact[key] = doc_id
        self._decisions[doc_id] = decision
        self._sketches[doc_id] = sketch
        if not sketch.is_empty:
            self._lsh.add(doc_id, sketch.signature)
        if not decision.is_duplicate:
            self._common.add(sketch.vocab)
        return decision

    def decision(self, doc_id: str) -> Decision:
        """The decision made for ``doc_id`` when it was added."""
        try:
            return self._decisions[doc_id]
        except KeyError:
            raise KeyError(f"document {doc_id!r} has not been added") from None


@dataclass(frozen=True)
class BatchResult:
    """Decisions for a whole corpus, in input order, and what the run found."""

    decisions: list[Decision]
    candidate_pairs: int
    verified_pairs: int
    timings: dict[str, float] = field(default_factory=dict)


def dedup_batch(
    ids: Sequence[str],
    texts: Sequence[str],
    *,
    config: DedupConfig | None = None,
    keep: KeepPolicy = "first",
    timestamps: Sequence[float | None] | None = None,
    explain: bool = False,
    chunk: int = 2000,
    workers: int | None = None,
) -> BatchResult:
    """Deduplicate a corpus at once: the same decisions as streaming it through a Deduper.

    ``keep`` chooses which document of each cluster is kept and names the cluster: the
    first seen (the streaming rule), the longest text, or the earliest timestamp.
    ``workers`` processes sketch the documents (default: one per CPU, up to 4, once the texts
    hold two million characters or more); the decisions do not depend on it.
    """
    import time

    cfg = config if config is not None else DedupConfig()
    if len(ids) != len(texts):
        raise ConfigError(f"{len(ids)} ids for {len(texts)} texts")
    if keep not in ("first", "longest", "earliest"):
        raise ConfigError(f"keep must be 'first', 'longest' or 'earliest', got {keep!r}")
    if len(set(ids)) != len(ids):
        raise InputError("ids must be unique within a batch")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    # byte-identical copies share the first copy's sketch and are matched to it directly
    first_copy: dict[int, int] = {}
    copy_of = np.full(len(texts), -1, dtype=np.int64)
    for i, text in enumerate(texts):
        j = first_copy.setdefault(_text_key(text), i)
        if j != i:
            copy_of[i] = j
    originals = np.flatnonzero(copy_of < 0)
    made = _sketch_all([texts[i] for i in originals.tolist()], cfg, chunk, workers)
    sketches: list[Sketch] = [made[0]] * len(texts) if made else []
    for i, sk in zip(originals.tolist(), made, strict=True):
        sketches[i] = sk
    for i in np.flatnonzero(copy_of >= 0).tolist():
        sketches[i] = sketches[copy_of[i]]
    timings["sketch"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    live = np.array([i for i in originals.tolist() if not sketches[i].is_empty], dtype=np.int64)
    b, r = cfg.bands_rows
    if len(live):
        sigs = np.stack([sketches[i].signature for i in live])
        local = lsh_join(sigs, bands=b, rows=r, bucket_cap=cfg.bucket_cap)
        pairs = live[local]
    else:
        pairs = np.zeros((0, 2), dtype=np.int64)
    timings["candidates"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    # earlier partners of each document, in index order (pairs are sorted by (i, j))
    order = np.lexsort((pairs[:, 0], pairs[:, 1]))
    later, earlier = pairs[order, 1], pairs[order, 0]
    bounds = np.searchsorted(later, np.arange(len(ids) + 1))
    parent = np.full(len(ids), -1, dtype=np.int64)
    score = np.zeros(len(ids))
    measure: list[str | None] = [None] * len(ids)
    common = CommonShingles(limit=cfg.common_after)
    for i in range(len(ids)):
        if copy_of[i] >= 0:
            parent[i], score[i], measure[i] = copy_of[i], 1.0, "identical"
            continue
        lo, hi = bounds[i], bounds[i + 1]
        best = None
        if lo < hi:
            pool = ((str(j), sketches[j]) for j in earlier[lo:hi].tolist())
            best = _best(sketches[i], pool, cfg, common)
        if best is None:
            common.add(sketches[i].vocab)
        else:
            parent[i], score[i], measure[i] = int(best[0]), best[1], best[2]
    timings["verify"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    root = np.arange(len(ids))
    for i in range(len(ids)):  # parents come earlier, so one pass resolves every root
        if parent[i] >= 0:
            root[i] = root[parent[i]]
    label = _labels(root, keep, texts, timestamps)
    decisions = []
    for i, doc_id in enumerate(ids):
        kept = label[root[i]]
        if kept == i:
            decisions.append(Decision(doc_id, False, None, doc_id, 0.0, None))
            continue
        if parent[i] >= 0:
            dup_of, s, m = int(parent[i]), float(score[i]), measure[i]
        else:  # the first of a cluster whose "longest"/"earliest" document is kept instead
            v = verify(sketches[i], sketches[kept], cfg)
            dup_of, s, m = kept, v.score, v.measure
        ev = _evidence(sketches[i], sketches[dup_of]) if explain else ()
        decisions.append(Decision(doc_id, True, ids[dup_of], ids[kept], s, m, ev))
    timings["clusters"] = time.perf_counter() - t0
    return BatchResult(decisions, len(pairs), int((parent >= 0).sum()), timings)


def _sketch_all(
    texts: list[str], cfg: DedupConfig, chunk: int, workers: int | None
) -> list[Sketch]:
    """Sketch every text, in chunks, on several processes when it pays."""
    import os

    if workers is None:  # processes pay off from a few million characters on
        big = sum(map(len, texts)) >= 2_000_000
        workers = min(4, os.cpu_count() or 1) if big else 1
    n = workers
    if n < 1:
        raise ConfigError(f"workers must be at least 1, got {n}")
    if n > 1:  # smaller chunks keep every process busy to the end
        chunk = max(100, min(chunk, len(texts) // (n * 8) + 1))
    chunks = [texts[i : i + chunk] for i in range(0, len(texts), chunk)]
    if n == 1 or len(chunks) < 2:
        return [sk for part in chunks for sk in make_sketches(part, cfg)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(max_workers=n, mp_context=context) as pool:
        return [sk for part in pool.map(partial(make_sketches, cfg=cfg), chunks) for sk in part]


def _labels(
    root: np.ndarray,
    keep: KeepPolicy,
    texts: Sequence[str],
    timestamps: Sequence[float | None] | None,
) -> dict[int, int]:
    """For each cluster root, the index of the document kept for it."""
    if keep == "first":
        return {int(r): int(r) for r in np.unique(root)}
    best: dict[int, int] = {}
    for i, r in enumerate(root.tolist()):
        j = best.get(r)
        if j is None:
            best[r] = i
            continue
        if keep == "longest":
            if len(texts[i]) > len(texts[j]):
                best[r] = i
        else:
            ti = timestamps[i] if timestamps is not None else None
            tj = timestamps[j] if timestamps is not None else None
            if ti is not None and (tj is None or ti < tj):
                best[r] = i
    return best
