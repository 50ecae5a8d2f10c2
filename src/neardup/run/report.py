"""The ``neardup dedup --sample`` report: each story with the copy kept and its duplicates."""

from __future__ import annotations

import json
import unicodedata

from ..engine import Decision
from ..records import Document
from .summary import plural

__all__ = ["format_sample_report"]


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal (CJK and other wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _fit(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` columns (with …) and padded to exactly that."""
    text = " ".join(text.split())
    text = text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate cannot be shown
    if _width(text) > width:
        out, used = [], 0
        for c in text:
            w = _width(c)
            if used + w > width - 1:
                break
            out.append(c)
            used += w
        text = "".join(out) + "…"
    return text + " " * (width - _width(text))


def _headline(doc: Document) -> str:
    return doc.title or doc.text


def format_sample_report(decided: list[tuple[Document, Decision]], *, width: int = 60) -> str:
    """Each story with the copy kept and every duplicate merged into it, by title and score.

    Stories are in the order their kept copy came in; stories with no duplicate are listed
    together at the end. A later document of a story that brings text of its own is kept
    too, and marked ``+ kept``. When the records carry the sample's own labels
    (``cluster``), a last line says how the result agrees with them.
    """
    members: dict[str, list[tuple[Document, Decision]]] = {}
    for doc, decision in decided:
        members.setdefault(decision.cluster, []).append((doc, decision))
    by_id = {doc.id: doc for doc, _ in decided}
    groups = [(by_id[c], m) for c, m in members.items() if len(m) > 1]
    alone = [by_id[c] for c, m in members.items() if len(m) == 1]
    n_dup = sum(1 for _, d in decided if d.is_duplicate)
    n_ext = sum(1 for _, d in decided if d.extends is not None)

    more = (
        f", {plural(n_ext, 'document')} of a story seen before kept with text of its own"
        if n_ext
        else ""
    )
    lines = [
        f"{plural(len(decided), 'document')} → {plural(len(members), 'story', 'stories')} kept, "
        f"{plural(n_dup, 'duplicate')} merged into them{more}.",
        "score: how much of the shorter text the other one covers (1 = all of it).",
        "",
    ]
    for k, (kept, group) in enumerate(groups, 1):
        dups = sum(1 for _, d in group if d.is_duplicate)
        lines.append(f"story {k}: {plural(dups, 'duplicate')}")
        lines.append(f"  kept    {_fit(_headline(kept), width)}  {kept.id}")
        for doc, decision in group:
            if doc.id == kept.id:
                continue
            match = decision.match
            via = "" if match == kept.id else f"  (matched {match})"
            mark = f"{decision.score:.4f}" if decision.is_duplicate else "+ kept"
            lines.append(f"  {mark:<6}  {_fit(_headline(doc), width)}  {doc.id}{via}")
        lines.append("")
    if alone:
        lines.append(f"kept alone, no duplicate found ({len(alone)}):")
        lines.extend(f"  kept    {_fit(_headline(doc), width)}  {doc.id}" for doc in alone)
        lines.append("")
    check = _label_check(decided)
    if check:
        lines.append(check)
        lines.append("")
    return "\n".join(lines)


def _label_check(decided: list[tuple[Document, Decision]]) -> str:
    """How the decisions agree with the records' own ``cluster`` labels ("" without labels)."""
    truth: dict[str, str] = {}
    for doc, _ in decided:
        try:
            label = json.loads(doc.raw or "").get("cluster")
        except (ValueError, AttributeError):
            return ""
        if not isinstance(label, str):
            return ""
        truth[doc.id] = label
    cluster_of = {doc.id: d.cluster for doc, d in decided}
    first_of: dict[str, str] = {}
    for doc, _ in decided:
        first_of.setdefault(truth[doc.id], doc.id)
    copies = [doc.id for doc, _ in decided if first_of[truth[doc.id]] != doc.id]
    missed = [i for i in copies if cluster_of[i] != cluster_of[first_of[truth[i]]]]
    merged_wrongly = [doc.id for doc, d in decided if truth[d.cluster] != truth[doc.id]]
    lines = [
        f"Against the sample's own labels: {len(copies) - len(missed)} of {len(copies)} "
        "reprints joined their story"
        + ("" if merged_wrongly else ", and no two stories were merged.")
    ]
    if missed:
        lines.append(f"  missed: {', '.join(missed)}")
    if merged_wrongly:
        lines.append(f"  merged into another story: {', '.join(merged_wrongly)}")
    return "\n".join(lines)
