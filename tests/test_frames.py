"""``neardup.dedup_frame``: pandas, polars and pyarrow tables get ``cluster``,
``duplicate_of`` and ``score`` columns, in row order, with the decisions of ``dedup_batch``."""

from __future__ import annotations

import math
from typing import Any

import pytest

import neardup
from neardup import dedup_batch, dedup_frame
from neardup.errors import ConfigError, InputError

from .run.test_cli_dedup import CORPUS, STORY

pd = pytest.importorskip(
    "pandas", reason="dedup_frame on pandas needs pandas: pip install 'neardup[frames]'"
)
pa = pytest.importorskip(
    "pyarrow", reason="dedup_frame needs pyarrow: pip install 'neardup[frames]'"
)

pl = pytest.importorskip("polars")

ROWS = [
    {"doc": k * 10, "body": str(r["text"]), "ts": str(r.get("timestamp") or "")}
    for k, r in enumerate(CORPUS)
]
NAME = {k * 10: str(r["id"]) for k, r in enumerate(CORPUS)}
NAME_IDS = [str(r["doc"]) for r in ROWS]


def frames() -> dict[str, Any]:
    return {
        "pandas": pd.DataFrame(ROWS, index=[f"r{k}" for k in range(len(ROWS))]),
        "polars": pl.DataFrame(ROWS),
        "arrow": pa.Table.from_pylist(ROWS),
    }


def columns(out: Any) -> dict[str, list[Any]]:
    if isinstance(out, pd.DataFrame):
        return {c: [None if v is pd.NA else v for v in out[c].tolist()] for c in out.columns}
    if isinstance(out, pa.Table):
        return out.to_pydict()
    return {c: out[c].to_list() for c in out.columns}


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_same_decisions_as_dedup_batch(kind: str) -> None:
    frame = frames()[kind]
    out = dedup_frame(frame, text="body", id="doc")
    assert type(out) is type(frame)
    got = columns(out)
    assert got["doc"] == [r["doc"] for r in ROWS]  # input order, the frame's own columns kept
    batch = dedup_batch([str(r["doc"]) for r in ROWS], [r["body"] for r in ROWS])
    assert got["cluster"] == [int(d.cluster) for d in batch.decisions]
    assert got["duplicate_of"] == [
        None if d.duplicate_of is None else int(d.duplicate_of) for d in batch.decisions
    ]
    assert got["score"] == [round(d.score, 4) for d in batch.decisions]
    assert {NAME[r["doc"]]: NAME[c] for r, c in zip(ROWS, got["cluster"], strict=True)} == STORY
    if kind == "pandas":
        assert list(out.index) == list(frame.index)
        assert str(out["cluster"].dtype) == "int64" and str(out["duplicate_of"].dtype) == "Int64"


def test_sketch_memory_changes_no_decision() -> None:
    """Every decided row's sketch to the run's temporary file and back: the same frame."""
    frame = frames()["pandas"]
    out = dedup_frame(frame, text="body", id="doc", sketch_memory=0)
    assert out.equals(dedup_frame(frame, text="body", id="doc"))
    assert dedup_batch(NAME_IDS, [r["body"] for r in ROWS], sketch_memory=0).sketches_on_file


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_keep_earliest_and_unusable_rows(kind: str) -> None:
    """keep='earliest' reads the timestamp column; a row with a null or blank text is not
    decided (its three columns are null); without an id column rows are named by position."""
    rows = [{"body": r["body"], "ts": r["ts"]} for r in ROWS] + [
        {"body": None, "ts": ""},
        {"body": "  ", "ts": ""},
        {"body": "<p>&nbsp;</p>", "ts": ""},
        {"body": "\x00" * 9, "ts": ""},
    ]
    frame = {"pandas": pd.DataFrame, "polars": pl.DataFrame, "arrow": pa.Table.from_pylist}[kind](
        rows
    )
    got = columns(dedup_frame(frame, text="body", timestamp="ts", keep="earliest"))
    assert got["cluster"][:6] == [2, 1, 2, 3, 1, 5]  # zh1r (row 2) is dated before zh1
    assert got["duplicate_of"][2] is None  # and kept, though it is a copy of zh1
    assert got["cluster"][6:] == [None] * 4 and got["duplicate_of"][6:] == [None] * 4
    score = got["score"][6:]
    assert all(s is None or (isinstance(s, float) and math.isnan(s)) for s in score)


def test_string_ids_and_a_hugging_face_style_table() -> None:
    table = pa.table(
        {"id": [str(r["id"]) for r in CORPUS], "text": [str(r["text"]) for r in CORPUS]}
    )
    out = neardup.dedup_frame(table)
    assert (
        dict(zip(out.column("id").to_pylist(), out.column("cluster").to_pylist(), strict=True))
        == STORY
    )
    assert "dedup_frame" in neardup.__all__


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"text": "nope"}, ConfigError, "the frame has no text column 'nope'"),
        ({"text": "body", "id": "nope"}, ConfigError, "the frame has no id column 'nope'"),
    ],
)
def test_bad_arguments(kwargs: dict[str, str], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        dedup_frame(frames()["pandas"], **kwargs)


def test_repeated_id_and_existing_output_column() -> None:
    df = pd.DataFrame({"id": [1, 1], "text": ["北京地铁今天开通", "上海今天下雨"]})
    with pytest.raises(InputError, match="row 1 repeats the id '1' of row 0"):
        dedup_frame(df)
    with pytest.raises(ConfigError, match="already has 'score'"):
        dedup_frame(df.assign(score=1.0), id=None)
    with pytest.raises(ConfigError, match="takes a pandas or polars DataFrame"):
        dedup_frame([{"id": 1, "text": "x"}])


def test_a_lazy_frame_is_collected_and_a_column_alone_is_refused_with_how_to_frame_it() -> None:
    """A polars LazyFrame is run and its result given back lazy (a TypeError before: 'not
    subscriptable'); a Series or an Arrow array — a column of texts alone — is a ConfigError
    saying how to make it a frame (an AttributeError before)."""
    lazy = pl.LazyFrame(ROWS)
    out = dedup_frame(lazy, text="body", id="doc")
    assert isinstance(out, pl.LazyFrame)
    assert columns(out.collect()) == columns(dedup_frame(pl.DataFrame(ROWS), text="body", id="doc"))
    texts = [r["body"] for r in ROWS]
    for column, how in [
        (pd.Series(texts), 'series.to_frame("text")'),
        (pl.Series(texts), 'series.to_frame("text")'),
        (pa.array(texts), 'pyarrow.table({"text": array})'),
        (pa.chunked_array([texts]), 'pyarrow.table({"text": array})'),
    ]:
        with pytest.raises(ConfigError, match="a column of texts alone") as e:
            dedup_frame(column)
        assert str(e.value).endswith(f"dedup_frame({how})")
    batch = dedup_frame(pa.RecordBatch.from_pylist(ROWS), text="body", id="doc")
    assert isinstance(batch, pa.RecordBatch)
    table = dedup_frame(pa.Table.from_pylist(ROWS), text="body", id="doc")
    assert columns(pa.Table.from_batches([batch])) == columns(table)
