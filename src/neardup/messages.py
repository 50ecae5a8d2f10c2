"""Small helpers for the messages neardup writes about values it was given.

>>> shown("x" * 70)[-2:], json_type([1]), did_you_mean("namespce", ["namespace", "ttl"])
("…'", 'an array', ' (did you mean namespace?)')
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

__all__ = ["did_you_mean", "json_type", "shown"]


def shown(value: str, limit: int = 60) -> str:
    """``value`` quoted for a message, cut short so one huge value cannot flood the report."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type, with its article ("an array"); bytes, which a
    Parquet or Arrow column may hold, are "binary data"; a numpy scalar (a DataFrame's
    cell) is named as the Python value it holds.

    >>> import numpy as np
    >>> json_type(np.int64(3)), json_type(np.bool_(True)), json_type((1, 2)), json_type({})
    ('a number', 'a boolean', 'an array', 'an object')
    """
    item = getattr(value, "item", None)
    if item is not None and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        value = item()
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float | Decimal):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, bytes | bytearray | memoryview):
        return "binary data"  # a Parquet or Arrow binary column
    return "an object"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the one of ``known`` closest to a misspelt ``name``, or
    "" when none is close."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]}?)" if close else ""
