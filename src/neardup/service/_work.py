"""The work each endpoint hands to a worker thread: what it asks of the Deduper (run one call
at a time, see :class:`~neardup.service._service.Service`) and the comparison of two texts."""

from __future__ import annotations

from collections.abc import Sequence

from ..compare import compare
from ..deduper import Decision, Deduper
from ..errors import InputError
from ..normalize import normalize
from ..passages import Passage, shared_passages
from . import _models as m

__all__ = [
    "add",
    "check",
    "cluster",
    "clusters",
    "compare_texts",
    "delete",
    "document",
]


def add(dd: Deduper, docs: list[dict[str, object]]) -> list[Decision]:
    """Decide and add documents, atomically."""
    return dd.check_and_add_many(docs)


def check(dd: Deduper, docs: list[dict[str, object]]) -> list[Decision]:
    """Decide documents without adding them, each against the store only."""
    return dd.check_many(docs)


def document(dd: Deduper, doc_id: str) -> m.DocumentOut | None:
    """A stored document, or None."""
    entry = dd.entry(doc_id)
    if entry is None:
        return None
    try:
        decision = dd.decision(doc_id)
    except KeyError:  # deleted in between
        return None
    size = len(dd.store.members(entry.cluster))
    return m.DocumentOut(
        id=decision.id,
        is_duplicate=decision.is_duplicate,
        duplicate_of=decision.duplicate_of,
        extends=decision.extends,
        cluster=decision.cluster,
        score=round(decision.score, 4),
        measure=decision.measure,
        evidence=[p.text for p in decision.evidence],
        chrome=[p.text for p in decision.chrome],
        title=entry.title,
        timestamp=entry.timestamp,
        text=dd.stored_text(doc_id),
        cluster_size=size,
    )


def delete(dd: Deduper, doc_id: str) -> bool:
    """Forget a document; False when it was not there."""
    return dd.remove(doc_id)


def _texts(dd: Deduper, ids: list[str]) -> dict[str, str]:
    """The stored (compared) texts of these documents, by id."""
    entries = dd.store.entries(ids)
    source = {i: (e.copy_of or i) for i, e in entries.items()}
    texts = dd.store.texts(set(source.values()))
    return {i: texts[s] for i, s in source.items() if s in texts}


def _excerpt(text: str | None, limit: int = 160) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def clusters(dd: Deduper, limit: int, offset: int) -> list[m.ClusterSummary]:
    """A page of clusters, largest first."""
    found = dd.clusters(limit, offset)
    labels = [label for label, _ in found]
    entries = dd.store.entries(labels)
    texts = _texts(dd, labels)
    return [
        m.ClusterSummary(
            id=label,
            size=size,
            title=entries[label].title if label in entries else None,
            excerpt=_excerpt(texts.get(label)),
        )
        for label, size in found
    ]


def cluster(dd: Deduper, label: str, limit: int, offset: int) -> m.ClusterOut | None:
    """A page of a cluster's members with the passages they share with the kept one."""
    members = dd.store.members(label)
    if not members:
        return None
    page = members[offset : offset + limit]
    texts = _texts(dd, [label, *(e.id for e in page)])
    kept = texts.get(label)
    out = []
    for e in page:
        text = texts.get(e.id)
        shared: list[m.Span] = []
        if text is not None and kept is not None and e.id != label:
            shared = [
                m.Span(start=p.a_start, length=p.length)
                for p in shared_passages(text, kept, min_len=6, limit=50)
            ]
        out.append(
            m.Member(
                id=e.id,
                is_duplicate=not e.kept,
                duplicate_of=e.duplicate_of,
                extends=e.extends,
                score=round(e.score, 4),
                measure=e.measure,
                title=e.title,
                timestamp=e.timestamp,
                text=text,
                shared=shared,
            )
        )
    return m.ClusterOut(id=label, size=len(members), members=out, limit=limit, offset=offset)


def compare_texts(body: m.CompareIn, max_cells: int) -> m.CompareOut:
    """Every measure for two texts and the passages they share; an InputError when
    len(a) * len(b), after normalization, is over ``max_cells`` (before any measure)."""
    a, b = (body.a, body.b) if body.raw else (normalize(body.a), normalize(body.b))
    if len(a) * len(b) > max_cells:
        raise InputError(
            f"a and b are too long to compare together: {len(a):,} x {len(b):,} characters "
            f"(after normalization) is over this service's limit of {max_cells:,} for "
            "len(a) x len(b), because mcc and contiguity compare every offset; send shorter "
            "texts (such as the parts to compare), or start the service with a larger "
            "--max-compare-cells"
        )
    c = compare(body.a, body.b, processor=None if body.raw else normalize)
    if c.skipped:  # (a limit raised past the measures' own): every score or none, as before
        raise InputError(next(iter(c.skipped.values())))

    def passages(found: Sequence[Passage]) -> list[m.Passage]:
        return [
            m.Passage(text=p.text, a_start=p.a_start, b_start=p.b_start, length=p.length)
            for p in found
        ]

    view = c.dedup
    assert view is not None
    v = view.verdict
    return m.CompareOut(
        scores=m.Scores(**c.scores),
        passages=passages(c.passages),
        a=c.a,
        b=c.b,
        dedup=m.DedupOut(
            summary=view.summary,
            same_story=v.is_duplicate,
            is_copy=v.is_copy,
            score=round(v.score, 4),
            copy_score=round(v.copy_score, 4),
            measure=v.measure,
            edges=v.edges,
            a=view.a,
            b=view.b,
            counted=passages(view.counted),
            chrome=passages(view.chrome),
        ),
    )
