"""Columns between Spark and the engine: Arrow schemas, sketches as columns (the engine's
codec), small frames as numpy arrays, and whole partitions as sorted arrays."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..engine import LIGHT_BITS as ENGINE_LIGHT_BITS
from ..engine import DedupConfig, light, make_sketches, text_key
from ..engine.codec import COLUMNS, to_columns
from ..hashing import signed64
from ..index.lsh import bucket_ids

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

__all__ = [
    "LIGHT_BITS",
    "SKETCH_SCHEMA",
    "BatchFn",
    "Batches",
    "arrow_schema",
    "blank",
    "column",
    "groups",
    "sketch_batches",
    "sorted_rows",
]

I64 = npt.NDArray[np.int64]
Batches = Iterable["pa.RecordBatch"]
BatchFn = Callable[[Batches], Iterator["pa.RecordBatch"]]

#: Bits of each MinHash value kept for the cheap prefilter pass (a superset of its passes)
#: and the ranking of candidates: the engine's (:func:`~neardup.engine.light`).
LIGHT_BITS = ENGINE_LIGHT_BITS

#: A sketched document: its position, the hash of its exact text, its length in characters,
#: the engine's sketch columns (prefixed ``_``), its bucket ids and the light signature.
SKETCH_SCHEMA = (
    "_pos long, _tkey long, _chars int, "
    + ", ".join("_" + part.strip() for part in COLUMNS.split(","))
    + ", _bids array<long>, _light binary"
)


def sketch_batches(cfg: DedupConfig) -> BatchFn:
    """The ``mapInArrow`` function that sketches ``_pos, _text`` batches with the engine."""

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = arrow_schema(SKETCH_SCHEMA)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            texts: list[str] = batch.column("_text").to_pylist()
            made = make_sketches(texts, cfg)
            out: dict[str, list[Any]] = {
                "_pos": batch.column("_pos").to_pylist(),
                "_tkey": [signed64(text_key(t)) for t in texts],
                "_chars": [len(t) for t in texts],
            }
            for row in to_columns(made):
                for key, value in row.items():
                    out.setdefault("_" + key, []).append(value)
            out["_bids"] = [
                [] if s.is_empty else bucket_ids(s.bands).ravel().view(np.int64).tolist()
                for s in made
            ]
            out["_light"] = [light(s.signature).astype("<u2").tobytes() for s in made]
            yield pa.RecordBatch.from_pydict(out, schema=schema)

    return run


def arrow_schema(ddl: str) -> pa.Schema:
    """The Arrow schema of a simple Spark DDL string (the types this package uses)."""
    import pyarrow as pa

    kinds = {
        "long": pa.int64(),
        "int": pa.int32(),
        "double": pa.float64(),
        "string": pa.string(),
        "binary": pa.binary(),
        "boolean": pa.bool_(),
        "array<long>": pa.list_(pa.int64()),
        "array<int>": pa.list_(pa.int32()),
        "array<string>": pa.list_(pa.string()),
    }
    fields = []
    for part in ddl.split(","):
        name, kind = part.split()
        fields.append(pa.field(name, kinds[kind]))
    return pa.schema(fields)


def blank(text: Column) -> Column:
    """Whether a string holds only whitespace (Unicode whitespace, as ``str.strip`` sees it)."""
    from pyspark.sql import functions as F

    return F.length(F.regexp_replace(text, r"(?U)\s+", "")) == 0


def column(df: DataFrame, name: str) -> I64:
    """One integer column of a (small) frame as a numpy array, through Arrow."""
    frame: Any = df  # Spark 4 has toArrow; 3.5 a private equivalent
    table: Any = frame.toArrow() if hasattr(frame, "toArrow") else frame._collect_as_arrow()
    if isinstance(table, list):  # Spark 3.5 returns record batches
        import pyarrow as pa

        table = pa.Table.from_batches(table) if table else None
    if table is None or table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(table.column(name).to_numpy(), dtype=np.int64)


def sorted_rows(batches: Batches, names: Sequence[str]) -> list[npt.NDArray[Any]]:
    """The columns ``names`` of a whole partition, sorted by the first two; empty when it
    has no rows."""
    cols: list[list[npt.NDArray[Any]]] = [[] for _ in names]
    for batch in batches:
        for k, name in enumerate(names):
            cols[k].append(batch.column(name).to_numpy(zero_copy_only=False))
    if not cols[0] or sum(len(c) for c in cols[0]) == 0:
        return []
    out = [np.concatenate(c) for c in cols]
    order = np.lexsort((out[1], out[0]))
    return [c[order] for c in out]


def groups(key: I64) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """For a sorted key: each group's start and size, and each row's group."""
    edge = np.ones(len(key), dtype=np.bool_)
    edge[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(edge)
    sizes = np.diff(np.append(starts, len(key)))
    return starts, sizes, np.cumsum(edge) - 1
