"""Parquet and Arrow IPC inputs (pyarrow), read in record batches: only the columns that
make a record are read for deduplication; the kept rows are read again, whole, to write
UNIQUE (:class:`TableRows`).

Rows are numbered from 1, as lines are: row 1 is the file's first row. A row gives exactly
one Document or one BadRecord, with the same checks as a JSON object.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import InputError, MissingDependencyError
from .document import BadRecord, Document, Fields, RecordChecker, field_value
from .sources import Part
from .streams import format_size

__all__ = ["TableRows", "UnreadableTable", "inspect_table", "require_pyarrow", "table_records"]


class UnreadableTable(InputError):
    """A Parquet or Arrow file that cannot be read at all (corrupt, cut short)."""


_BATCH = 4096
_ARROW_MAGIC = b"ARROW1"


def require_pyarrow() -> Any:
    """The pyarrow module, or MissingDependencyError saying how to install it."""
    try:
        import pyarrow
    except ImportError as e:
        raise MissingDependencyError(
            "reading and writing Parquet and Arrow needs pyarrow: pip install 'neardup[parquet]'"
        ) from e
    return pyarrow


def _open_arrow(path: str) -> tuple[Any, bool]:
    """An Arrow IPC reader of ``path`` (the file format, or the stream format), and
    whether it is the file format (which knows its batches)."""
    pa = require_pyarrow()
    import pyarrow.ipc as ipc

    with open(path, "rb") as f:
        magic = f.read(6)
    source = pa.memory_map(path, "r")
    if magic == _ARROW_MAGIC:
        return ipc.open_file(source), True
    return ipc.open_stream(source), False


def _schema(part: Part) -> Any:
    """The part's Arrow schema; InputError when it is not a Parquet/Arrow file."""
    require_pyarrow()
    import pyarrow as pa

    try:
        if part.fmt == "parquet":
            import pyarrow.parquet as pq

            f = pq.ParquetFile(part.path)
            part.info["rows"] = f.metadata.num_rows
            return f.schema_arrow
        reader, is_file = _open_arrow(part.path)
        if is_file:
            part.info["rows"] = sum(
                reader.get_batch(i).num_rows for i in range(reader.num_record_batches)
            )
        return reader.schema
    except (OSError, pa.ArrowException) as e:
        what = "Parquet" if part.fmt == "parquet" else "Arrow IPC"
        raise UnreadableTable(f"cannot read {part.name} as {what}: {e}") from None


def inspect_table(part: Part, fields: Fields) -> int | None:
    """Check that ``part`` is a table with the text column; its row count if known."""
    schema = _schema(part)
    part.info["schema"] = schema
    if _column(schema, fields.text) is None:
        raise InputError(
            f"{part.name} has no {fields.text!r} column (it has "
            f"{', '.join(map(repr, schema.names))}); say which column to use"
        )
    rows = part.info.get("rows")
    return rows if isinstance(rows, int) else None


def _column(schema: Any, name: str) -> str | None:
    """The column of ``schema`` that holds the field ``name``: itself, or for a dotted path
    into struct columns (``content.text``) its first part; None when there is none."""
    if name in schema.names:
        return name
    if "." not in name:
        return None
    top, *rest = name.split(".")
    if top not in schema.names:
        return None
    kind = schema.field(top).type
    for part in rest:
        if not hasattr(kind, "get_field_index") or kind.get_field_index(part) < 0:
            return None
        kind = kind.field(part).type
    return top


def _batches(part: Part, columns: list[str] | None) -> Iterator[Any]:
    """The record batches of ``part`` (only ``columns`` when given)."""
    if part.fmt == "parquet":
        import pyarrow.parquet as pq

        f = pq.ParquetFile(part.path)
        yield from f.iter_batches(batch_size=_BATCH, columns=columns)
        return
    reader, is_file = _open_arrow(part.path)
    batches = (reader.get_batch(i) for i in range(reader.num_record_batches)) if is_file else reader
    for batch in batches:
        yield batch if columns is None else batch.select(columns)


def table_records(
    part: Part, checker: RecordChecker, cap: int
) -> Iterator[Document | BadRecord | tuple[int, int]]:
    """The records of a table, and now and then (rows read, rows in the file) for progress.

    A read error part-way (a truncated file) ends the records with one BadRecord and sets
    ``part.info["unread"]``.
    """
    import pyarrow as pa

    schema: Any = part.info.get("schema") or _schema(part)
    f = checker.fields
    named = (_column(schema, name) for name in (f.id, f.text, f.title, f.timestamp))
    columns = [c for c in dict.fromkeys(named) if c is not None]
    total = part.info.get("rows")
    total_rows = total if isinstance(total, int) and total > 0 else 0
    row = 0
    try:
        for batch in _batches(part, columns):
            values = {name: batch.column(name).to_pylist() for name in columns}
            for k in range(batch.num_rows):
                row += 1
                record = {name: values[name][k] for name in columns}
                text = field_value(record, f.text)[1]
                if isinstance(text, str) and len(text) > cap // 4:
                    size = len(text.encode("utf-8", "surrogatepass"))
                    if size > cap:
                        yield checker.bad(
                            row,
                            None,
                            f"{f.text!r} holds {size:,} bytes, more than the "
                            f"{format_size(cap)} a record may hold (--max-record-size)",
                        )
                        continue
                yield checker.check(record, row, None, origin=(part, row - 1))
            yield (row, total_rows or row)
    except (OSError, pa.ArrowException) as e:
        reason = f"the input breaks off after row {row} ({e}); nothing after it could be read"
        part.info["unread"] = reason
        yield checker.bad(row + 1, None, reason)


class TableRows:
    """The rows of a table read again, in order, to write the kept ones: ask for row
    positions (0-based) in increasing order."""

    def __init__(self, part: Part) -> None:
        self.part = part
        self.schema = part.info.get("schema") or _schema(part)
        self._batches = _batches(part, None)
        self._batch: Any = None
        self._start = 0  # position of the current batch's first row
        self._dicts: list[dict[str, object]] | None = None

    def _seek(self, position: int) -> tuple[Any, int]:
        while self._batch is None or position >= self._start + self._batch.num_rows:
            if self._batch is not None:
                self._start += self._batch.num_rows
            self._batch = next(self._batches, None)
            self._dicts = None
            if self._batch is None:
                raise InputError(f"{self.part.name} has fewer rows than when it was read")
        return self._batch, position - self._start

    def row(self, position: int) -> dict[str, object]:
        """The row at ``position`` as a dict of column: Python value."""
        batch, k = self._seek(position)
        if self._dicts is None:
            self._dicts = batch.to_pylist()
        return self._dicts[k]

    def take(self, positions: list[int]) -> Iterator[Any]:
        """The rows at ``positions`` (increasing) as record batches, in order."""
        i = 0
        while i < len(positions):
            batch, k = self._seek(positions[i])
            end = self._start + batch.num_rows
            j = i
            while j < len(positions) and positions[j] < end:
                j += 1
            import pyarrow as pa

            yield batch.take(pa.array([p - self._start for p in positions[i:j]], pa.int64()))
            del k
            i = j
