"""Small helpers for the messages neardup writes about values it was given.

>>> shown("x" * 70)[-2:], json_type([1])
("…'", 'an array')
"""

from __future__ import annotations

__all__ = ["json_type", "shown"]


def shown(value: str, limit: int = 60) -> str:
    """``value`` quoted for a message, cut short so one huge value cannot flood the report."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type, with its article ("an array")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
