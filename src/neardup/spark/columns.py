"""Columns between Spark and the engine: Arrow schemas, sketches as columns (the engine's
codec), small frames as numpy arrays, and whole partitions as sorted arrays."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..engine import LIGHT_BITS as ENGINE_LIGHT_BITS
from ..engine import DedupConfig, light, make_sketches, text_key
from ..engine.codec import COLUMNS, to_columns
from ..engine.templates import PASSAGE_STORIES, SLOT_BITS, slots
from ..index.lsh import bucket_ids

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "LIGHT_BITS",
    "SIDE_BUCKETS",
    "SIDE_SLOTS",
    "SKETCH_SCHEMA",
    "BatchFn",
    "Batches",
    "SlotCounts",
    "arrow_schema",
    "arrow_schema_of",
    "binary",
    "blank",
    "bucket_range",
    "column",
    "columns",
    "fewest",
    "frame_of",
    "groups",
    "partition_keys",
    "sketch_batches",
    "slot_range",
    "slot_range_starts",
    "sorted_rows",
    "split_by",
    "to_arrow",
    "unbinary",
]

I64 = npt.NDArray[np.int64]
Batches = Iterable["pa.RecordBatch"]
BatchFn = Callable[[Batches], Iterator["pa.RecordBatch"]]

#: Bits of each MinHash value kept for the cheap prefilter pass (a superset of its passes)
#: and the ranking of candidates: the engine's (:func:`~neardup.engine.light`).
LIGHT_BITS = ENGINE_LIGHT_BITS

#: A row of the sketch stage. A document's: its position, the position of the first
#: document with the same exact text (its own for a first copy), its length in characters,
#: its id, title and timestamp, and for a first copy the engine's sketch columns (prefixed
#: ``_``; the band keys left out, their bucket ids go to a side row) and the light
#: signature (null for the other copies, which are never sketched). A side row (``_side``
#: set: the key of its range, :func:`partition_keys`) carries what a partition found for a
#: range, as bytes: its first copies' slot counts (``_kind`` :data:`SIDE_SLOTS`) or their
#: (bucket id, position) memberships (:data:`SIDE_BUCKETS`).
SKETCH_SCHEMA = (
    "_pos long, _first long, _chars int, _id string, _title string, _ts double, "
    + ", ".join("_" + part.strip() for part in COLUMNS.split(","))
    + ", _light binary, _side int, _kind int, _b binary, _b2 binary"
)
SIDE_SLOTS, SIDE_BUCKETS = 1, 2


def sketch_batches(cfg: DedupConfig, ranges: int) -> BatchFn:
    """The ``mapInArrow`` function that sketches the first copies of
    ``_pos, _id, _text, _title, _ts`` batches with the engine.

    Every copy of a text must be in the same partition (hash-partitioned by the text), its
    rows in increasing ``_pos``: a text's first row is its first copy
    (:func:`~neardup.engine.text_key` tells copies apart, as the local engine does), the
    only one sketched; the others get its position in ``_first`` and no sketch. After the
    documents, the partition's side rows, one of each kind per range of ``ranges``: the
    count of each template slot over its first copies (a slot repeated in a document
    counts once, as :class:`~neardup.engine.CommonShingles` counts, up to :func:`fewest`)
    and the LSH buckets of the non-empty ones (:func:`~neardup.index.lsh.bucket_ids`), so
    that the next stages read neither the shingle codes nor a Spark row per bucket."""
    limit = fewest(cfg)
    keys = partition_keys(max(1, ranges))

    def run(batches: Batches) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = arrow_schema(SKETCH_SCHEMA)
        first_of: dict[int, int] = {}  # text key -> first position, in this partition
        counts = SlotCounts(limit)
        bids: list[npt.NDArray[np.uint64]] = []
        members: list[I64] = []
        for batch in batches:
            if batch.num_rows == 0:
                continue
            texts: list[str] = batch.column("_text").to_pylist()
            positions: list[int] = batch.column("_pos").to_pylist()
            firsts = [
                first_of.setdefault(text_key(t), p) for t, p in zip(texts, positions, strict=True)
            ]
            new = [k for k, (p, f) in enumerate(zip(positions, firsts, strict=True)) if p == f]
            made = make_sketches([texts[k] for k in new], cfg)
            out: dict[str, list[Any]] = {name: [None] * batch.num_rows for name in schema.names}
            out["_pos"], out["_first"] = positions, firsts
            out["_chars"] = [len(t) for t in texts]
            for name in ("_id", "_title", "_ts"):
                out[name] = batch.column(name).to_pylist()
            for k, s, row in zip(new, made, to_columns(made), strict=True):
                for key, value in row.items():
                    if key != "bands":
                        out["_" + key][k] = value
                out["_light"][k] = light(s.signature).astype("<u2").tobytes()
                if not s.is_empty:
                    counts.add(s.shingles)
                    found = bucket_ids(s.bands).ravel()
                    bids.append(found)
                    members.append(np.full(len(found), positions[k], dtype=np.int64))
            yield pa.RecordBatch.from_pydict(out, schema=schema)
        side: dict[str, list[Any]] = {"_side": [], "_kind": [], "_b": [], "_b2": []}
        for r, blob in counts.ranges(len(keys)):
            side["_side"].append(keys[r])
            side["_kind"].append(SIDE_SLOTS)
            side["_b"].append(blob)
            side["_b2"].append(None)
        if bids:
            every = np.concatenate(bids)
            held = np.concatenate(members)
            for r, take in enumerate(split_by(bucket_range(every, len(keys)), len(keys))):
                if len(take):
                    side["_side"].append(keys[r])
                    side["_kind"].append(SIDE_BUCKETS)
                    side["_b"].append(binary(every[take], "<u8"))
                    side["_b2"].append(binary(held[take], "<i8"))
        if side["_side"]:
            rows = len(side["_side"])
            cols = {name: side.get(name, [None] * rows) for name in schema.names}
            yield pa.RecordBatch.from_pydict(cols, schema=schema)

    return run


def fewest(cfg: DedupConfig) -> int:
    """The fewest kept stories a slot must be in for the template guard to read it: two
    with chrome passages (a passage's shingles are seen in two), else ``common_after``."""
    if cfg.common_after <= 0:
        return 0
    return min(PASSAGE_STORIES, cfg.common_after) if cfg.chrome_passage > 0 else cfg.common_after


def bucket_range(bids: npt.NDArray[np.uint64], ranges: int) -> I64:
    """The range (of ``ranges`` equal ones of the 64-bit space) each bucket id is in."""
    top = (np.asarray(bids, dtype=np.uint64) >> np.uint64(32)).astype(np.uint64)
    out: I64 = ((top * np.uint64(ranges)) >> np.uint64(32)).astype(np.int64)
    return out


class SlotCounts:
    """How many documents hold each template slot, counted as
    :class:`~neardup.engine.CommonShingles` counts (a slot repeated in a document counts
    once), up to ``limit`` (the sum over partitions only has to reach it), in a table of the
    whole slot space; :meth:`ranges` cuts it into rows of bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kind = np.uint8 if limit < 255 else np.uint16 if limit < 65535 else np.uint32
        self.table: npt.NDArray[Any] | None = None

    def add(self, codes: npt.NDArray[np.uint32]) -> None:
        if self.limit <= 0 or len(codes) == 0:
            return
        if self.table is None:
            self.table = np.zeros(1 << SLOT_BITS, dtype=self.kind)
        at = slots(codes)
        # a fancy-index assignment counts a repeated slot once
        self.table[at] = np.minimum(self.table[at] + 1, self.limit).astype(self.kind)

    def ranges(self, ranges: int) -> Iterator[tuple[int, bytes]]:
        """Each range of :func:`slot_range_starts` with counts: the slots (little-endian
        u4) then their counts (u4)."""
        if self.table is None:
            return
        found = np.flatnonzero(self.table)
        counts = self.table[found]
        cut = np.searchsorted(found, slot_range_starts(ranges))
        for r in range(ranges):
            lo, hi = cut[r], cut[r + 1]
            if hi > lo:
                yield r, binary(found[lo:hi], "<u4") + binary(counts[lo:hi], "<u4")


def slot_range_starts(ranges: int) -> I64:
    """The first slot of each of ``ranges`` equal ranges of the slot space, and its end
    (rounded up: the slots :func:`slot_range` puts in each)."""
    return -(-(np.arange(ranges + 1, dtype=np.int64) << SLOT_BITS) // ranges)


def slot_range(slot: I64, ranges: int) -> I64:
    """The range (of :func:`slot_range_starts`) each slot is in."""
    out: I64 = (np.asarray(slot, dtype=np.int64) * ranges) >> SLOT_BITS
    return out


def arrow_schema(ddl: str) -> pa.Schema:
    """The Arrow schema of a simple Spark DDL string (the types this package uses)."""
    import pyarrow as pa

    kinds = {
        "long": pa.int64(),
        "bigint": pa.int64(),
        "int": pa.int32(),
        "double": pa.float64(),
        "string": pa.string(),
        "binary": pa.binary(),
        "boolean": pa.bool_(),
        "array<long>": pa.list_(pa.int64()),
        "array<bigint>": pa.list_(pa.int64()),
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
    return ~text.rlike(r"(?U)\S")  # the first non-space character ends the search


#: What :func:`~neardup.records.document.no_text` can find empty, as Java's regex sees it,
#: a little wider: tags, character references (of anything up to the ``;``) and the
#: characters Python calls whitespace or that are invisible or control characters (NUL). A
#: text with anything else left once these are taken out holds text; only the others go to
#: Python to be sure.
_INVISIBLE = (
    r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200f\u2028-\u202f\u205f\u3000"
    r"\u00ad\u061c\u180e\u2060-\u2064\u2066-\u206f\ufeff"
)
_MAYBE_NOTHING = r"<[^<>]*>|&#?[^;\s]{1,32};|[" + _INVISIBLE + "]"
#: A text whose first visible character starts no tag or reference holds text (the test
#: looks at the text's head only, where the whole-text one reads all of it)
_STARTS_PLAIN = "^[" + _INVISIBLE + "]*[^<&" + _INVISIBLE + "]"


def holds_no_text(text: Column) -> Column:
    """Whether a string is nothing once normalized (``neardup.records.document.no_text``: only
    markup, character references or invisible characters), the local readers' rule.

    Only the texts that are nothing but such pieces by :data:`_MAYBE_NOTHING` (a few, if
    any) go to Python for the rule itself; the others send it a null."""
    import pandas as pd
    from pyspark.sql import functions as F

    from ..records.document import no_text

    def nothing(texts: pd.Series) -> pd.Series:
        return texts.map(lambda t: isinstance(t, str) and no_text(t)).astype(bool)

    # PySpark reads the kind of UDF from the hints, which this module's annotations leave as
    # strings: give it the types themselves
    nothing.__annotations__ = {"texts": pd.Series, "return": pd.Series}
    udf = F.pandas_udf(nothing, "boolean")  # type: ignore[attr-defined]
    maybe = ~text.rlike(_STARTS_PLAIN) & (F.regexp_replace(text, _MAYBE_NOTHING, "") == "")
    return udf(F.when(maybe, text))  # type: ignore[no-any-return]


def read_time_strings(values: Column, name: str) -> Column:
    """A string timestamp column read as the local readers read it
    (:func:`~neardup.times.parse_timestamp`): ``struct<t double, p string>``, the epoch
    seconds, or the record's problem (``bad 'ts': ...``); both null for a null or blank
    string."""
    import pandas as pd
    from pyspark.sql import functions as F

    from ..errors import InputError
    from ..times import timestamp_or_none

    def read(strings: pd.Series) -> pd.DataFrame:
        seconds: list[float | None] = []
        problems: list[str | None] = []
        for value in strings:
            try:
                seconds.append(timestamp_or_none(value))
                problems.append(None)
            except InputError as e:
                seconds.append(None)
                problems.append(f"bad {name!r}: {e}")
        return pd.DataFrame({"t": pd.Series(seconds, dtype="float64"), "p": problems})

    read.__annotations__ = {"strings": pd.Series, "return": pd.DataFrame}  # (see holds_no_text)
    udf = F.pandas_udf(read, "t double, p string")  # type: ignore[attr-defined]
    return udf(values)  # type: ignore[no-any-return]


def python_str(numbers: Column) -> Column:
    """Each double as Python's ``str`` writes it (``1e+300``; Spark's cast writes
    ``1.0E300``), for a message to say what the local readers say."""
    import pandas as pd
    from pyspark.sql import functions as F

    def write(values: pd.Series) -> pd.Series:
        return values.astype("float64").map(str)  # (a null is NaN here: call it where set)

    write.__annotations__ = {"values": pd.Series, "return": pd.Series}  # (see holds_no_text)
    udf = F.pandas_udf(write, "string")  # type: ignore[attr-defined]
    return udf(numbers)  # type: ignore[no-any-return]


def field_of(df: DataFrame, name: str) -> tuple[Column, Any] | None:
    """The column of ``df`` that holds the field ``name`` and its Spark type: a top-level
    column of that name, or else a dotted path into struct columns (``content.text``), as
    the local readers read a record's field (:func:`~neardup.records.field_value`); None
    when there is neither."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    def quoted(part: str) -> str:
        return "`" + part.replace("`", "``") + "`"

    if name in df.columns:
        return F.col(quoted(name)), df.schema[name].dataType
    if "." not in name:
        return None
    kind: Any = df.schema
    parts = name.split(".")
    for part in parts:
        if not isinstance(kind, StructType) or part not in kind.fieldNames():
            return None
        kind = kind[part].dataType
    return F.col(".".join(map(quoted, parts))), kind


def column(df: DataFrame, name: str) -> I64:
    """One integer column of a (small) frame as a numpy array, through Arrow."""
    return columns(df, [name])[0]


def columns(df: DataFrame, names: Sequence[str]) -> list[I64]:
    """Integer columns of a (small) frame as numpy arrays, through Arrow (one job)."""
    table = to_arrow(df)
    if table.num_rows == 0:
        return [np.zeros(0, dtype=np.int64) for _ in names]
    return [np.asarray(table.column(name).to_numpy(), dtype=np.int64) for name in names]


def to_arrow(df: DataFrame) -> pa.Table:
    """A (small) frame on the driver as an Arrow table (one job)."""
    import pyarrow as pa

    frame: Any = df  # Spark 4 has toArrow; 3.5 a private equivalent
    table: Any = frame.toArrow() if hasattr(frame, "toArrow") else frame._collect_as_arrow()
    if isinstance(table, list):  # Spark 3.5 returns record batches
        table = pa.Table.from_batches(table) if table else None
    if table is None:
        return arrow_schema_of(df).empty_table()
    return table


def arrow_schema_of(df: DataFrame) -> pa.Schema:
    """The Arrow schema of a frame whose columns are of the types this package uses."""
    return arrow_schema(", ".join(f"{f.name} {f.dataType.simpleString()}" for f in df.schema))


def binary(values: npt.NDArray[Any], dtype: str) -> bytes:
    """``values`` as little-endian bytes of ``dtype`` (a column of a blob row)."""
    return np.ascontiguousarray(values).astype(dtype, copy=False).tobytes()


def unbinary(blob: bytes | None, dtype: str, to: Any = np.int64) -> npt.NDArray[Any]:
    """The array :func:`binary` made (of ``to``, a copy that can be written)."""
    if not blob:
        return np.zeros(0, dtype=to)
    return np.frombuffer(blob, dtype=dtype).astype(to)


def partition_keys(n: int) -> list[int]:
    """For each partition ``0 .. n - 1`` of ``repartition(n, col)``, an int key that Spark's
    hash partitioning sends there (``pmod(hash(key), n)``, Murmur3 with seed 42, as
    :func:`pyspark.sql.functions.hash` computes it).

    A frame of a few rows keyed ``0 .. n - 1`` would be partitioned by hash, and two keys
    often share a partition (0 and 1 both go to partition 1 of 2): one task would do the
    work of two while a core waits. These keys put range ``r`` in partition ``r``.

    >>> partition_keys(2), partition_keys(4)
    ([2, 0], [12, 6, 2, 0])
    """
    return list(_partition_keys(n))


@lru_cache(maxsize=64)
def _partition_keys(n: int) -> tuple[int, ...]:
    keys: list[int | None] = [None] * n
    left, k = n, 0
    while left:
        r = _murmur3_int(k) % n
        if keys[r] is None:
            keys[r] = k
            left -= 1
        k += 1
    return tuple(int(key) for key in keys if key is not None)


def _murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``Murmur3_x86_32.hashInt(value, seed)`` (a signed 32-bit result)."""
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    k = (value & mask) * 0xCC9E2D51 & mask
    k = rotl(k, 15) * 0x1B873593 & mask
    h = rotl(seed ^ k, 13)
    h = (h * 5 + 0xE6546B64) & mask
    h ^= 4  # the length in bytes
    h ^= h >> 16
    h = h * 0x85EBCA6B & mask
    h ^= h >> 13
    h = h * 0xC2B2AE35 & mask
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def frame_of(spark: SparkSession, table: pa.Table) -> DataFrame:
    """A Spark frame of an Arrow table made on the driver."""
    import pyspark

    if int(pyspark.__version__.split(".")[0]) >= 4:
        return spark.createDataFrame(table)
    return spark.createDataFrame(table.to_pandas())  # Spark 3.5 takes pandas


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


def split_by(part: npt.NDArray[Any], n: int) -> list[npt.NDArray[np.intp]]:
    """The rows of each part ``0 .. n - 1`` (``part`` holds each row's), in their order: a
    stable radix sort of the part numbers, cut where they change.

    >>> [rows.tolist() for rows in split_by(np.array([1, 0, 1, 0]), 3)]
    [[1, 3], [0, 2], []]
    """
    small = np.asarray(part).astype(np.min_scalar_type(max(n - 1, 0)))
    order = np.argsort(small, kind="stable")
    cut = np.searchsorted(small[order], np.arange(n + 1))
    return [order[cut[k] : cut[k + 1]] for k in range(n)]


def groups(
    key: npt.NDArray[np.integer[Any]],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """For a sorted key: each group's start and size, and each row's group."""
    edge = np.ones(len(key), dtype=np.bool_)
    edge[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(edge)
    sizes = np.diff(np.append(starts, len(key)))
    return starts, sizes, np.cumsum(edge) - 1
