"""Deduplicate a DataFrame where it is: pandas, polars, or a pyarrow Table (and so a Hugging
Face ``datasets.Dataset``, whose data is an Arrow table: ``ds.data.table``).

>>> import pandas as pd
>>> df = pd.DataFrame({"id": [1, 2, 3], "text": [
...     "北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。",
...     "转载：北京地铁十九号线今天开通运营，全长二十二公里，设车站十座！",
...     "上海今天发布暴雨蓝色预警，预计局地雨量超过五十毫米。"]})
>>> out = dedup_frame(df)
>>> out[["id", "cluster", "duplicate_of"]].to_dict("list")
{'id': [1, 2, 3], 'cluster': [1, 1, 3], 'duplicate_of': [None, 1, None]}
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, TypeVar, cast

from .batch import dedup_batch
from .engine import DedupConfig, KeepPolicy
from .errors import ConfigError, InputError
from .messages import json_type
from .records import joined_text, no_text, read_id
from .times import missing, read_times

__all__ = ["OUTPUT_COLUMNS", "dedup_frame"]

#: The columns :func:`dedup_frame` adds.
OUTPUT_COLUMNS = ("cluster", "duplicate_of", "extends", "score")

F = TypeVar("F")
_DEFAULT_ID = "id"


class _Default(str):
    """The default id column: when the frame has none, rows are named by position."""


_ID = _Default(_DEFAULT_ID)


#: A column of texts alone, by library: how to make it a frame of one column.
_ONE_COLUMN = {
    "pandas": 'series.to_frame("text")',
    "polars": 'series.to_frame("text")',
    "arrow": 'pyarrow.table({"text": array})',
}


def _kind(frame: object) -> str:
    library = type(frame).__module__.split(".")[0]
    kind = {"pandas": "pandas", "polars": "polars", "pyarrow": "arrow"}.get(library)
    name = type(frame).__name__
    if kind is not None and name in ("DataFrame", "Table", "RecordBatch"):
        return kind
    what = f"{type(frame).__module__}.{name}"
    if kind is not None:  # a Series, an Array: one column
        raise ConfigError(
            f"dedup_frame takes a DataFrame or a Table, not a {what}; a column of texts "
            f"alone is a frame of one column: dedup_frame({_ONE_COLUMN[kind]})"
        )
    hint = ": a Hugging Face Dataset's table is ds.data.table" if library == "datasets" else ""
    raise ConfigError(
        f"dedup_frame takes a pandas or polars DataFrame or a pyarrow Table, not {what}{hint}"
    )


def _columns(frame: Any, kind: str) -> list[str]:
    if kind == "arrow":
        return list(frame.column_names)
    return [str(c) for c in frame.columns]


def _values(frame: Any, kind: str, name: str) -> list[Any]:
    if kind == "pandas":
        return list(frame[name].tolist())
    if kind == "polars":
        return list(frame[name].to_list())
    return list(frame.column(name).to_pylist())


def dedup_frame(
    frame: F,
    *,
    text: str = "text",
    id: str | None = _ID,
    title: str | None = None,
    timestamp: str | None = None,
    keep: KeepPolicy = "first",
    config: DedupConfig | None = None,
    workers: int | None = None,
    sketch_memory: int | None = None,
) -> F:
    """``frame`` with three columns more, rows in their order: ``cluster`` (the id of the row
    kept for its story), ``duplicate_of`` (the row it matched best; null when kept) and
    ``score`` (that match's similarity; 0.0 when kept) — the decisions of
    :func:`neardup.dedup_batch` on the same rows, ``keep`` and ``config``.

    Returns the same type: a pandas DataFrame (same index), a polars DataFrame (a LazyFrame
    is collected, and its result given back lazy) or a pyarrow Table or RecordBatch.
    ``text`` names the column to compare; ``id`` the one naming the rows (ids keep
    their type: integer ids give integer clusters) — without an ``id`` column, or with
    ``id=None``, rows are named by their position (0, 1, …); ``timestamp`` is read for
    ``keep="earliest"``. A row whose text is null, not a string or holds no text (blank,
    or only markup, invisible or control characters: what the command line reports as an
    error record) is not decided: its three columns are null, and texts that are not
    strings (bytes, numbers) are named in a warning. A repeated or null id is an InputError
    naming the rows.
    ``workers`` and ``sketch_memory`` are :func:`neardup.dedup_batch`'s.
    """
    # a polars LazyFrame: every row is needed at once, so the query is run, and the result
    # given back lazy
    lazy = type(frame).__module__.startswith("polars") and type(frame).__name__ == "LazyFrame"
    if lazy:
        frame = cast(Any, frame).collect()
    kind = _kind(frame)
    columns = _columns(frame, kind)
    taken = [c for c in OUTPUT_COLUMNS if c in columns]
    if taken:
        raise ConfigError(
            f"the frame already has {', '.join(map(repr, taken))}; rename "
            f"{'it' if len(taken) == 1 else 'them'}: dedup_frame adds {', '.join(OUTPUT_COLUMNS)}"
        )
    for what, name in (("text", text), ("title", title), ("timestamp", timestamp)):
        if name is not None and name not in columns:
            raise ConfigError(
                f"the frame has no {what} column {name!r}; its columns are {', '.join(map(repr, columns))}"
            )
    texts = [joined_text(v) for v in _values(frame, kind, text)]  # lists of paragraphs too
    n = len(texts)
    if id is None or (isinstance(id, _Default) and id not in columns):
        id_values: list[Any] = list(range(n))
    elif id not in columns:
        raise ConfigError(
            f"the frame has no id column {id!r}; its columns are {', '.join(map(repr, columns))} "
            "(id=None names rows by position)"
        )
    else:
        id_values = _values(frame, kind, id)
    stamps = _values(frame, kind, timestamp) if timestamp is not None else [None] * n

    rows: list[int] = []
    ids: list[str] = []
    first_row: dict[str, int] = {}
    not_strings: list[int] = []
    for i, (value, body) in enumerate(zip(id_values, texts, strict=True)):
        if not isinstance(body, str):
            if not missing(body):
                not_strings.append(i)
            continue
        if no_text(body):
            continue
        if missing(value):
            raise InputError(f"row {i} has no id (the {id!r} column is null there)")
        try:
            key = read_id(value.item() if hasattr(value, "item") else value, str(id))
        except InputError as e:
            raise InputError(f"row {i}: {e}") from None
        if key in first_row:
            raise InputError(f"row {i} repeats the id {key!r} of row {first_row[key]}")
        first_row[key] = i
        rows.append(i)
        ids.append(key)
    if not_strings:
        first = not_strings[0]
        warnings.warn(
            f"dedup_frame: the {text!r} of {len(not_strings):,} row(s) is not a string (row "
            f"{first}: {json_type(texts[first])}); they are not decided (null columns): "
            "convert the column to strings first",
            stacklevel=2,
        )
    times = read_times([stamps[i] for i in rows], lambda k: f"row {rows[k]}: bad {timestamp!r}")
    result = dedup_batch(
        ids,
        [cast(str, texts[i]) for i in rows],
        config=config,
        keep=keep,
        timestamps=times if timestamp is not None else None,
        workers=workers,
        sketch_memory=sketch_memory,
    )
    value_of = {key: id_values[i] for key, i in zip(ids, rows, strict=True)}
    cluster: list[Any] = [None] * n
    duplicate_of: list[Any] = [None] * n
    extends: list[Any] = [None] * n
    score: list[float | None] = [None] * n
    for i, d in zip(rows, result.decisions, strict=True):
        cluster[i] = value_of[d.cluster]
        duplicate_of[i] = None if d.duplicate_of is None else value_of[d.duplicate_of]
        extends[i] = None if d.extends is None else value_of[d.extends]
        score[i] = round(d.score, 4)
    new = {"cluster": cluster, "duplicate_of": duplicate_of, "extends": extends, "score": score}
    out = _with_columns(frame, kind, new)
    return cast(F, out.lazy() if lazy else out)


def _uniform(values: Sequence[Any]) -> str:
    """'int', 'float', 'str' or 'mixed': the type of the values that are not null."""
    kinds = set()
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            kinds.add("mixed")
        elif isinstance(v, int) or type(v).__name__.startswith(("int", "uint")):
            kinds.add("int")
        elif isinstance(v, float) and math.isfinite(v):
            kinds.add("float")
        elif isinstance(v, str):
            kinds.add("str")
        else:
            kinds.add("mixed")
    return kinds.pop() if len(kinds) == 1 else ("str" if not kinds else "mixed")


def _as_strings(values: Sequence[Any]) -> list[str | None]:
    return [None if v is None else str(v) for v in values]


def _with_columns(frame: Any, kind: str, new: dict[str, list[Any]]) -> Any:
    if kind == "pandas":
        import pandas as pd

        out = frame.copy()
        for name, values in new.items():
            if name == "score":
                out[name] = pd.Series(
                    [math.nan if v is None else v for v in values],
                    index=frame.index,
                    dtype="float64",
                )
                continue
            u = _uniform(values)
            if u == "int":
                dtype = "int64" if None not in values else "Int64"
                out[name] = pd.Series(pd.array(values, dtype=dtype), index=frame.index)
            else:
                data = _as_strings(values) if u == "mixed" else values
                out[name] = pd.Series(data, index=frame.index, dtype=object)
        return out
    if kind == "polars":
        import polars as pl

        series = []
        for name, values in new.items():
            if name == "score":
                series.append(pl.Series(name, values, dtype=pl.Float64))
            elif _uniform(values) == "mixed":
                series.append(pl.Series(name, _as_strings(values), dtype=pl.Utf8))
            else:
                series.append(pl.Series(name, values))
        return frame.with_columns(series)
    import pyarrow as pa

    out = frame
    for name, values in new.items():
        if name == "score":
            array = pa.array(values, pa.float64())
        elif _uniform(values) == "mixed":
            array = pa.array(_as_strings(values), pa.string())
        else:
            array = pa.array(values)
        out = out.append_column(name, array)
    return out
