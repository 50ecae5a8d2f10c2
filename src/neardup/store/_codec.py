"""A sketch as bytes, for stores that keep it outside the process (SQLite, Redis).

The shingle codes, MinHash signature and band keys are stored raw (they are random-looking
and do not compress); the prepared text is zlib-compressed. Every number is little-endian,
so a blob written on one machine reads the same on another.

>>> from neardup.engine import DedupConfig, make_sketch
>>> sk = make_sketch("北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。", DedupConfig())
>>> back = decode(encode(sk))
>>> back.text == sk.text and (back.shingles == sk.shingles).all() and back.numbers == sk.numbers
True
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from ..engine import Sketch, distinct
from ..errors import NeardupError

__all__ = ["decode", "encode"]

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
