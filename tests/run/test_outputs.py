"""The CLUSTERS line of a decision: its quick path writes what the JSON encoder writes."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from neardup.engine import Decision
from neardup.records import json_line
from neardup.run.outputs import cluster_line

_ids = st.text(max_size=8) | st.sampled_from(["a1", "新闻", 'q"\\', "\ud800x", "\x00\n"])
_scores = (
    st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(0.0, 1.0)
    | st.integers(-3, 3)
    | st.just(0.0)
)


@given(_ids, _ids, st.none() | _ids, st.none() | _ids, _scores, st.booleans())
def test_cluster_line_is_the_encoders_line(
    doc_id: str, cluster: str, copied: str | None, extended: str | None, score: float, numeric: bool
) -> None:
    """Every decision's line, ids with quotes, control characters, non-ASCII and lone
    surrogates, scores of every kind, with and without ids the input held as numbers:
    the characters json_line writes for the same object (the reference)."""
    d = Decision(doc_id, copied is not None, copied, cluster, score, None, (), extended)
    ids: dict[str, object] = {doc_id: 7} if numeric else {}
    members = {
        "id": ids.get(doc_id, doc_id),
        "cluster": ids.get(cluster, cluster),
        "duplicate_of": None if copied is None else ids.get(copied, copied),
        "extends": None if extended is None else ids.get(extended, extended),
        "score": round(score, 4),
    }
    line = cluster_line(d, ids)
    assert line == json_line(members)
    if line.isascii() and "\\ud8" not in line:
        assert json.loads(line) == json.loads(json.dumps(members))


def test_cluster_line_of_plain_decisions() -> None:
    """The lines a run writes most: a kept document, a copy, one extending another."""
    assert cluster_line(Decision("b", True, "a", "a", 0.987654, "coverage")) == (
        '{"id": "b", "cluster": "a", "duplicate_of": "a", "extends": null, "score": 0.9877}'
    )
    assert cluster_line(Decision("a", False, None, "a", 0.0, None)) == (
        '{"id": "a", "cluster": "a", "duplicate_of": null, "extends": null, "score": 0.0}'
    )
    assert cluster_line(Decision("c", False, None, "a", 0.61, "coverage", (), "a")) == (
        '{"id": "c", "cluster": "a", "duplicate_of": null, "extends": "a", "score": 0.61}'
    )
    assert cluster_line(Decision("文", False, None, "文", 0.0, None)) == (
        '{"id": "文", "cluster": "文", "duplicate_of": null, "extends": null, "score": 0.0}'
    )
