"""Character properties for the compiled text scans, worked out from Python's own ``str``
methods (which ``re`` uses too), so a kernel and the reference agree on every character:
a table for the BMP, and the few characters beyond it that a text holds.

>>> t = props_table()
>>> bool(t[ord(" ")] & SPACE), bool(t[ord("٣")] & DECIMAL), bool(t[ord("\\t")] & PRINTABLE)
(True, True, False)
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

from ..shingling import distinct

__all__ = ["DECIMAL", "PRINTABLE", "SPACE", "code_points", "keyed", "props_table"]

#: Property bits (the same as in :mod:`neardup.kernels._text`).
SPACE, PRINTABLE, DECIMAL = 1, 2, 4

U32 = npt.NDArray[np.uint32]
U8 = npt.NDArray[np.uint8]


def _props(c: str) -> int:
    return (
        (SPACE if c.isspace() else 0)
        | (PRINTABLE if c.isprintable() else 0)
        | (DECIMAL if c.isdecimal() else 0)
    )


@functools.cache
def props_table() -> U8:
    """SPACE, PRINTABLE and DECIMAL of every BMP code point (``str.isspace``,
    ``isprintable``, ``isdecimal``)."""
    chars = "".join(map(chr, range(0x10000)))
    table = np.zeros(0x10000, dtype=np.uint8)
    table[[i for i, c in enumerate(chars) if c.isspace()]] |= SPACE
    table[[i for i, c in enumerate(chars) if c.isprintable()]] |= PRINTABLE
    table[[i for i, c in enumerate(chars) if c.isdecimal()]] |= DECIMAL
    return table


def code_points(text: str) -> U32:
    """The code points of ``text`` (lone surrogates included), as the kernels take them."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def keyed(cp: U32) -> tuple[U32, U8]:
    """``cp`` as the kernels look characters up, and the table to look them up in: the BMP
    table itself when every character is in the BMP (the usual case); otherwise a copy in
    which each character beyond it is numbered 0x10000 + k, k its rank among the distinct
    ones, and the table extended with their properties — so a lookup never branches."""
    if len(cp) == 0 or int(cp.max()) < 0x10000:
        return cp, props_table()
    far = np.flatnonzero(cp >= 0x10000)  # few: no mask over the whole text indexes twice
    beyond = cp[far]
    astral = distinct(beyond)
    props = np.array([_props(chr(c)) for c in astral.tolist()], dtype=np.uint8)
    key = cp.copy()
    key[far] = 0x10000 + np.searchsorted(astral, beyond).astype(np.uint32)
    key.flags.writeable = False  # as code_points gives them: one compiled version, not two
    return key, np.concatenate((props_table(), props))
