"""One codec for sketches, for every carrier: bytes (the stores), flat arrays (the sketch
workers of a batch run) and Arrow columns (the Spark engine).

Every carrier keeps the same fields — the prepared text, the shingle codes, the MinHash
signature, the band keys, the units and the figures — and every decoder rebuilds the
vocabulary the same way (:func:`~neardup.shingling.distinct`, or
:func:`~neardup.engine.sketches.distinct_with_index` where the carrier holds the index).

Bytes: the shingle codes, signature and band keys raw and little-endian (they are
random-looking and do not compress), the prepared text zlib-compressed, so a blob written on
one machine reads the same on another.

>>> from neardup.engine import DedupConfig, make_sketch
>>> sk = make_sketch("北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。", DedupConfig())
>>> back = decode(encode(sk))
>>> back.text == sk.text and (back.shingles == sk.shingles).all() and back.numbers == sk.numbers
True
>>> [s.text for s in unpack(pack([sk, sk]))] == [sk.text, sk.text]
True
>>> from_row(to_columns([sk])[0]).text == sk.text
True
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from ..errors import NeardupError, shielded
from .sketches import Sketch, distinct, distinct_with_index

__all__ = [
    "COLUMNS",
    "Packed",
    "Shared",
    "decode",
    "encode",
    "free",
    "from_row",
    "pack",
    "share",
    "take",
    "to_columns",
    "unpack",
]

# -- bytes ----------------------------------------------------------------------------------

_MAGIC = b"ND1\x00"
_HEADER = struct.Struct("<4sIIIIII")


def encode(sketch: Sketch) -> bytes:
    """The bytes of one sketch (see :func:`decode`)."""
    text = zlib.compress(sketch.text.encode("utf-8", "surrogatepass"), 1)
    numbers = "\x1f".join(sorted(sketch.numbers)).encode("utf-8")
    shingles = sketch.shingles.astype("<u4", copy=False).tobytes()
    signature = sketch.signature.astype("<u8", copy=False).tobytes()
    bands = sketch.bands.astype("<u8", copy=False).tobytes()
    head = _HEADER.pack(
        _MAGIC,
        sketch.n_units,
        len(sketch.shingles),
        len(sketch.signature),
        len(sketch.bands),
        len(text),
        len(numbers),
    )
    return b"".join((head, shingles, signature, bands, text, numbers))


def decode(blob: bytes) -> Sketch:
    """The sketch that :func:`encode` turned into ``blob``."""
    try:
        magic, n_units, n_sh, n_sig, n_bands, n_text, n_num = _HEADER.unpack_from(blob)
    except struct.error as exc:
        raise NeardupError(f"stored sketch is damaged ({len(blob)} bytes)") from exc
    if magic != _MAGIC:
        raise NeardupError("stored sketch has an unknown format")
    at = _HEADER.size
    shingles = np.frombuffer(blob, dtype="<u4", count=n_sh, offset=at).astype(np.uint32)
    at += 4 * n_sh
    signature = np.frombuffer(blob, dtype="<u8", count=n_sig, offset=at).astype(np.uint64)
    at += 8 * n_sig
    bands = np.frombuffer(blob, dtype="<u8", count=n_bands, offset=at).astype(np.uint64)
    at += 8 * n_bands
    text = zlib.decompress(blob[at : at + n_text]).decode("utf-8", "surrogatepass")
    at += n_text
    raw_numbers = blob[at : at + n_num].decode("utf-8")
    numbers = frozenset(raw_numbers.split("\x1f")) if raw_numbers else frozenset()
    return Sketch(
        text=text,
        shingles=shingles,
        n_units=n_units,
        signature=signature,
        bands=bands,
        vocab=distinct(shingles),
        numbers=numbers,
    )


# -- flat arrays ------------------------------------------------------------------------------


class Packed(NamedTuple):
    """Many sketches as a few flat arrays: far quicker to pickle than Sketch objects."""

    texts: list[str]
    n_units: list[int]
    signatures: np.ndarray
    bands: np.ndarray
    shingle_counts: np.ndarray
    shingles: np.ndarray
    vocab_counts: np.ndarray
    vocabs: np.ndarray
    numbers: list[frozenset[str]]
    vocab_indexes: np.ndarray  # one per shingle, split like ``shingles``


def pack(sketches: Sequence[Sketch], *, shingles: bool = True) -> Packed:
    """Sketches (made by :func:`~neardup.engine.make_sketches`, so with their vocabulary
    index) as flat arrays; with ``shingles=False`` without their shingle codes (which the
    vocabularies and their indexes give back), for :func:`unpack` with ``shingles=False``."""
    return Packed(
        [s.text for s in sketches],
        [s.n_units for s in sketches],
        np.stack([s.signature for s in sketches]),
        np.stack([s.bands for s in sketches]),
        np.array([len(s.shingles) for s in sketches], dtype=np.int64),
        np.concatenate([s.shingles for s in sketches])
        if shingles
        else np.zeros(0, dtype=np.uint32),
        np.array([len(s.vocab) for s in sketches], dtype=np.int64),
        np.concatenate([s.vocab for s in sketches]),
        [s.numbers for s in sketches],
        np.concatenate([cast(np.ndarray, s.vocab_index) for s in sketches]),
    )


#: The array fields of a :class:`Packed`, the ones :func:`share` puts in shared memory.
_ARRAYS = (
    "signatures",
    "bands",
    "shingle_counts",
    "shingles",
    "vocab_counts",
    "vocabs",
    "vocab_indexes",
)


class Shared(NamedTuple):
    """A :class:`Packed` whose arrays wait in a shared-memory block (named ``name``; each
    array's field, dtype, shape and offset in ``layout``) and whose lists travel with it:
    what a sketch worker sends back instead of pickling the arrays through the pipe."""

    name: str
    layout: tuple[tuple[str, str, tuple[int, ...], int], ...]
    texts: list[str]
    n_units: list[int]
    numbers: list[frozenset[str]]


#: Where POSIX shared memory lives on Linux, and how many times a block's size must be free
#: there before one is made (a container's is often 64 MB; a full one would kill the
#: writer with SIGBUS instead of failing)
SHM_DIR = "/dev/shm"
SHM_ROOM = 8

#: How a batch run names the block a chunk comes back in (:func:`block_name`)
_BLOCK_NAME = re.compile(r"nd([0-9]+)_[0-9a-f]+_[0-9]+")
#: A block written this many seconds ago or more, by a process that is gone, was left by a
#: run killed outright (a run reads its blocks seconds after they are written)
STALE_AFTER = 3600.0


def block_name(pid: int, run: int, chunk: int) -> str:
    """The name of the block chunk ``chunk`` of run ``run`` of process ``pid`` comes back
    in: the run can free it whatever happens to its worker, and a later run can tell it
    from the blocks of live runs if a kill left it (:func:`sweep_stale`)."""
    return f"nd{pid}_{run:x}_{chunk}"


def sweep_stale(now: float | None = None) -> int:
    """Free the blocks that runs killed outright left in :data:`SHM_DIR` — named by
    :func:`block_name`, owned by this user, written :data:`STALE_AFTER` seconds ago or more,
    by a process that is no more — and say how many. A run stopped by a signal it can catch
    frees its own blocks, and when only its process is killed its resource tracker does;
    not when its whole process group is (a service manager's last SIGKILL), and /dev/shm is
    memory until the machine restarts."""
    import os
    import time

    try:
        names = os.listdir(SHM_DIR)
    except OSError:  # no /dev/shm: not Linux
        return 0
    now = time.time() if now is None else now
    freed = 0
    for name in names:
        found = _BLOCK_NAME.fullmatch(name)
        if found is None:
            continue
        try:
            os.kill(int(found.group(1)), 0)
        except ProcessLookupError:
            pass  # gone
        except (OSError, OverflowError):
            continue  # another user's process, or no process id at all
        else:
            continue  # alive
        path = os.path.join(SHM_DIR, name)
        try:
            info = os.stat(path)
            if info.st_uid != os.getuid() or now - info.st_mtime < STALE_AFTER:
                continue
            os.unlink(path)
        except OSError:  # freed meanwhile, or not ours to free
            continue
        freed += 1
    return freed


def share(packed: Packed, name: str | None = None) -> Shared | Packed:
    """Put ``packed``'s arrays in a shared-memory block (called ``name``, else a name of
    Python's choosing), for :func:`take` to read; each array starts on a 64-byte boundary.
    A block ``name`` that is there already, large enough, is written again (one a run
    took back with ``keep``: its pages are the system's already, where a new block's are
    fresh memory to clear and fault in, and to free again), else made anew with a quarter
    more room than asked. ``packed`` itself, to be pickled, where there is no room for the
    block (or no ``/dev/shm``: not Linux, or the name is taken by what is no block)."""
    import os

    layout, size = [], 0
    for field in _ARRAYS:
        a = getattr(packed, field)
        size = -(-size // 64) * 64
        layout.append((field, a.dtype.str, tuple(a.shape), size))
        size += a.nbytes
    from multiprocessing import shared_memory

    block = None if name is None else _reusable(name, size)
    if block is None:
        room_for = max(_ROOM_STEP, -(-(size + size // 4) // _ROOM_STEP) * _ROOM_STEP)
        try:
            room = os.statvfs(SHM_DIR)
        except (OSError, AttributeError):
            return packed
        if room.f_bavail * room.f_frsize < SHM_ROOM * room_for:
            return packed
        try:
            block = shared_memory.SharedMemory(name=name, create=True, size=room_for)
        except OSError:  # /dev/shm read-only, or the name taken: the pipe it is
            return packed
    try:
        for field, dtype, shape, at in layout:
            view = np.ndarray(shape, np.dtype(dtype), buffer=block.buf, offset=at)
            view[...] = getattr(packed, field)
            del view  # the block closes only once no array points into it
    except BaseException:
        block.close()
        block.unlink()
        raise
    block.close()
    return Shared(block.name, tuple(layout), packed.texts, packed.n_units, packed.numbers)


#: a block's size is a multiple of this (so that chunks of about one size fit one block)
_ROOM_STEP = 1 << 16


def _reusable(name: str, size: int) -> Any:
    """The block ``name``, open, if it is there and holds ``size`` bytes; None otherwise
    (one too small is freed: it is made again larger)."""
    from multiprocessing import shared_memory

    try:
        block = shared_memory.SharedMemory(name=name)
    except (OSError, ValueError):  # not there (the usual case), or nothing to map
        return None
    if block.size >= size:
        return block
    _unlink(block)
    return None


def free(name: str) -> None:
    """Free the shared-memory block ``name`` if it is there (made by :func:`share`: never
    taken, the run that was to read it was stopped; or taken and kept to be written again)."""
    from multiprocessing import shared_memory

    try:
        block = shared_memory.SharedMemory(name=name)
    except (OSError, ValueError):  # never made, or already freed
        return
    _unlink(block)


def _unlink(block: Any) -> None:
    """Close and unlink a shared-memory block in a section SIGINT and SIGTERM do not cut: a
    signal's Interrupted raised between the unlink and the resource tracker's unregister
    would leave the tracker a name to clean up that is gone (and a warning on stderr)."""
    with shielded():
        block.close()
        block.unlink()


def take(shared: Shared | Packed, *, keep: bool = False) -> Packed:
    """The :class:`Packed` that :func:`share` put in shared memory: its arrays copied out,
    and the block freed — or, with ``keep``, left for :func:`share` to write again under
    its name (the caller frees it in the end: :func:`free`). A Packed that came through
    the pipe comes as it is."""
    if isinstance(shared, Packed):
        return shared
    from multiprocessing import shared_memory

    block = shared_memory.SharedMemory(name=shared.name)
    try:
        arrays = {
            name: np.ndarray(shape, np.dtype(dtype), buffer=block.buf, offset=at).copy()
            for name, dtype, shape, at in shared.layout
        }
    finally:
        if keep:
            block.close()
        else:
            _unlink(block)
    return Packed(texts=shared.texts, n_units=shared.n_units, numbers=shared.numbers, **arrays)


def _pieces(values: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
    """``values`` cut into consecutive views of ``counts`` elements each (``np.split``'s
    views, without its per-piece overhead: a chunk of tiny records is thousands of them)."""
    ends = np.cumsum(counts).tolist()
    return [values[a:b] for a, b in zip([0, *ends][:-1], ends, strict=True)]


def unpack(
    p: Packed, *, bands: bool = True, shingles: bool = True, signatures_from: int = 0
) -> list[Sketch]:
    """The sketches of :func:`pack` (their arrays are views into the packed ones); with
    ``bands=False`` they share one empty array of band keys (a caller that joins
    ``p.bands`` once, and then keeps the sketches, does not keep the keys with them); with
    ``shingles=False`` they leave their shingle codes out (rebuilt from the vocabulary
    and its index when read: 4 bytes a shingle less for a caller that keeps them all).

    ``signatures_from`` (``DedupConfig.short_units``): documents of fewer units share one
    empty signature — verification compares a pair with such a text as titles and never
    reads a signature, so a caller that keeps every sketch keeps 1 KB a short document
    less — and the others' are copied out of the packed array, which is then let go."""
    no_bands = np.zeros(0, dtype=np.uint64)
    signatures: list[np.ndarray]
    if signatures_from <= 0:
        signatures = list(p.signatures)
    else:
        longer = np.flatnonzero(np.asarray(p.n_units) >= signatures_from)
        kept = p.signatures[longer].copy() if len(longer) < len(p.texts) else p.signatures
        no_signature = np.zeros(0, dtype=p.signatures.dtype)
        signatures = [no_signature] * len(p.texts)
        for row, i in enumerate(longer.tolist()):
            signatures[i] = kept[row]
    if shingles and len(p.shingles) != len(p.vocab_indexes):
        raise ValueError("these sketches were packed without their shingles")
    codes = _pieces(p.shingles, p.shingle_counts) if shingles else None
    indexes = _pieces(p.vocab_indexes, p.shingle_counts)
    vocabs = _pieces(p.vocabs, p.vocab_counts)
    return [  # by position (text, shingles, n_units, signature, bands, vocab, numbers, index)
        Sketch(
            p.texts[i],
            None if codes is None else codes[i],
            p.n_units[i],
            signatures[i],
            p.bands[i] if bands else no_bands,
            vocabs[i],
            p.numbers[i],
            indexes[i],
        )
        for i in range(len(p.texts))
    ]


# -- Arrow columns --------------------------------------------------------------------------

#: The columns of :func:`to_columns`, as a Spark DDL fragment: units, prepared text, shingle
#: codes, signature, band keys (signed), figures, and the vocabulary's size.
COLUMNS = (
    "n int, ptext string, sh binary, sig binary, bands array<long>, nums array<string>, nv int"
)


def to_columns(sketches: Sequence[Sketch]) -> list[dict[str, Any]]:
    """One row (a dict keyed as :data:`COLUMNS`) per sketch, for Arrow or Spark."""
    return [
        {
            "n": s.n_units,
            "ptext": s.text,
            "sh": s.shingles.astype("<u4", copy=False).tobytes(),
            "sig": s.signature.astype("<u8", copy=False).tobytes(),
            "bands": s.bands.view(np.int64).tolist(),
            "nums": sorted(s.numbers),
            "nv": len(s.vocab),
        }
        for s in sketches
    ]


def from_row(row: Mapping[str, Any], prefix: str = "") -> Sketch:
    """The sketch of one row of :func:`to_columns` (its keys prefixed by ``prefix``).
    Missing band keys (a row that carries only what verification reads) become none, and a
    missing text (null) an empty one: coverage reads codes, signatures and figures alone.
    The sketch has its vocabulary index (the compiled placement reads the text through it,
    a linear walk, instead of searching the other vocabulary for each shingle)."""
    shingles = np.frombuffer(row[prefix + "sh"], dtype="<u4").astype(np.uint32)
    vocab, index = distinct_with_index(shingles)
    bands = row.get(prefix + "bands")
    return Sketch(
        text=row.get(prefix + "ptext") or "",
        shingles=shingles,
        n_units=row[prefix + "n"],
        signature=np.frombuffer(row[prefix + "sig"], dtype="<u8").astype(np.uint64),
        bands=np.zeros(0, dtype=np.uint64)
        if bands is None
        else np.array(bands, dtype=np.int64).view(np.uint64),
        vocab=vocab,
        numbers=frozenset(row.get(prefix + "nums") or ()),
        vocab_index=index,
    )
