"""The LSH buckets of a compact store, packed: records of (bucket key, sequence number), 8
bytes each, kept in **shards** by linear hashing.

One Redis key or SQLite row per bucket costs about 70 bytes of overhead for each of a
document's 64 entries (most buckets hold one document). Here a bucket is the records with
its key (the key's low 40 bits), and a shard holds the records whose keys end in the same
bits. The table grows by linear hashing (Litwin): it has ``2^level + split`` shards, never
fewer than 2^8; a key's shard is its low ``level`` bits, or ``level + 1`` bits for the
shards already split at this level; when the records outgrow ``cap`` a shard, shard
``split`` is split in two (its records with bit ``level`` set move to shard
``split + 2^level``), so shards stay at about ``cap`` records however many documents the
store holds, and growing touches one shard at a time.

A record is bits 8 to 39 of its key (the shard says bits 0 to 7) and the document's
sequence number, 4 bytes each, little-endian. 40 bits of key put a false member in a bucket
with odds of about 2^-40 a record: a candidate that verification then checks.

Records are appended in the order documents are added (so a shard's sequence numbers
ascend); a shard being written drops the records of documents below the store's lowest live
sequence number (expired or pruned), and a reader skips records whose document is gone.

>>> t = Layout(8, 0, 0, 128)
>>> keys = np.array([0x1234_5605, 0x9999_9905], dtype=np.uint64)
>>> t.shards(keys).tolist()
[5, 5]
>>> blob = pack(keys, np.array([1, 2], dtype=np.int64))
>>> back, seqs = unpack(blob, 5)
>>> [hex(k) for k in back.tolist()], seqs.tolist(), len(blob)
(['0x12345605', '0x99999905'], [1, 2], 16)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = [
    "KEY_MASK",
    "LEVEL",
    "LOG_RECORD",
    "RECORD",
    "Layout",
    "keys40",
    "pack",
    "pack_log",
    "sized",
    "split",
    "unpack",
    "unpack_log",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

RECORD = 8
KEY_MASK = np.uint64((1 << 40) - 1)
#: The lowest level: 2^8 shards at least, so that a shard's id says a key's low 8 bits.
LEVEL = 8
_LOW = np.uint64(0xFF)

_DTYPE = np.dtype([("key", "<u4"), ("seq", "<u4")])
#: A record of the log of records not yet in their shards: the whole 40-bit key (no shard
#: says its low bits) and the sequence number, 9 bytes, little-endian.
_LOG_DTYPE = np.dtype([("low", "<u4"), ("high", "u1"), ("seq", "<u4")])
LOG_RECORD = _LOG_DTYPE.itemsize


def keys40(bucket_keys: list[int]) -> U64:
    """The 40-bit record keys of LSH bucket keys (signed 64-bit integers)."""
    out: U64 = np.array(bucket_keys, dtype=np.int64).view(np.uint64) & KEY_MASK
    return out


def pack(keys: U64, seqs: I64) -> bytes:
    """Records for ``keys`` (40-bit) and ``seqs``."""
    rec = np.empty(len(keys), dtype=_DTYPE)
    rec["key"] = (keys >> np.uint64(8)).astype(np.uint32)
    rec["seq"] = seqs.astype(np.uint32)
    return rec.tobytes()


def unpack(blob: bytes, shard: int | npt.NDArray[np.int64]) -> tuple[U64, I64]:
    """The keys and sequence numbers of the records of ``shard`` (or of the shards, one a
    record)."""
    if len(blob) % RECORD:
        raise ValueError(f"a shard of {len(blob)} bytes is not whole records of {RECORD}")
    rec = np.frombuffer(blob, dtype=_DTYPE)
    low = np.asarray(shard).astype(np.uint64) & _LOW
    keys: U64 = (rec["key"].astype(np.uint64) << np.uint64(8)) | low
    return keys, rec["seq"].astype(np.int64)


def pack_log(keys: U64, seqs: I64) -> bytes:
    """Log records for ``keys`` (40-bit) and ``seqs``.

    >>> keys, seqs = unpack_log(pack_log(np.array([0xAB_1234_5678], dtype=np.uint64),
    ...                                  np.array([7], dtype=np.int64)))
    >>> hex(int(keys[0])), seqs.tolist()
    ('0xab12345678', [7])
    """
    rec = np.empty(len(keys), dtype=_LOG_DTYPE)
    rec["low"] = (keys & np.uint64(0xFFFF_FFFF)).astype(np.uint32)
    rec["high"] = (keys >> np.uint64(32)).astype(np.uint8)
    rec["seq"] = seqs.astype(np.uint32)
    return rec.tobytes()


def unpack_log(blob: bytes) -> tuple[U64, I64]:
    """The keys and sequence numbers of log records (ValueError if not whole records)."""
    if len(blob) % LOG_RECORD:
        raise ValueError(f"a log row of {len(blob)} bytes is not whole records of {LOG_RECORD}")
    rec = np.frombuffer(blob, dtype=_LOG_DTYPE)
    keys: U64 = rec["low"].astype(np.uint64) | (rec["high"].astype(np.uint64) << np.uint64(32))
    return keys, rec["seq"].astype(np.int64)


class Layout(NamedTuple):
    """The table's shape: ``2^level + split`` shards, ``count`` records in them, and ``cap``
    records a shard holds on average before the table grows by one shard (a SQLite row is
    best a small part of a page; a Redis key costs about 70 bytes whatever its size)."""

    level: int
    split: int
    count: int  # type: ignore[assignment]  # (tuple.count, shadowed on purpose)
    cap: int = 128

    @property
    def size(self) -> int:
        """How many shards there are."""
        return (1 << self.level) + self.split

    def shards(self, keys: U64) -> I64:
        """The shard of each key."""
        low = keys & np.uint64((1 << self.level) - 1)
        wide = keys & np.uint64((1 << (self.level + 1)) - 1)
        out: I64 = np.where(low < np.uint64(self.split), wide, low).astype(np.int64)
        return out

    def due(self) -> bool:
        """Whether the records have outgrown the shards (split one more)."""
        return self.count > self.cap * self.size


def split(
    layout: Layout,
    read: Callable[[list[int]], Mapping[int, bytes]],
    write: Callable[[dict[int, bytes]], None],
    floor: int = 0,
    most: int | None = None,
) -> Layout:
    """Split shards while the records have outgrown them (``most`` shards at most); ``read``
    gives shards' blobs, ``write`` stores new ones. Records below ``floor`` are dropped on
    the way."""
    done = 0
    while layout.due() and (most is None or done < most):
        done += 1
        s = layout.split
        keys, seqs = unpack(read([s]).get(s, b""), s)
        live = seqs >= floor
        keys, seqs = keys[live], seqs[live]
        moves = (keys >> np.uint64(layout.level)) & np.uint64(1) == np.uint64(1)
        write(
            {
                s: pack(keys[~moves], seqs[~moves]),
                s + (1 << layout.level): pack(keys[moves], seqs[moves]),
            }
        )
        level, nxt = layout.level, s + 1
        if nxt == 1 << level:
            level, nxt = level + 1, 0
        layout = Layout(level, nxt, layout.count - int((~live).sum()), layout.cap)
    return layout


def sized(count: int, cap: int) -> Layout:
    """The smallest layout for ``count`` records (a table rebuilt after many went)."""
    want = max(1 << LEVEL, -(-count // cap))
    level = want.bit_length() - 1
    return Layout(level, want - (1 << level), count, cap)
