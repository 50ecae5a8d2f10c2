"""Times and time windows, read one way everywhere: records, the Deduper, the Scrapy add-on,
the service and the command line.

>>> parse_timestamp("2024-01-05T08:00:00+08:00"), parse_timestamp(1704412800000)
(1704412800.0, 1704412800.0)
>>> timestamp_or_none(""), parse_window("90d")
(None, 7776000.0)
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from email.utils import parsedate_to_datetime
from typing import Any

from .errors import ConfigError, InputError
from .messages import json_type, shown

__all__ = ["missing", "parse_timestamp", "parse_window", "read_times", "timestamp_or_none"]

#: Numbers above this are taken as milliseconds: 1e11 seconds is the year 5138.
MILLISECONDS_ABOVE = 1e11
#: The epoch seconds a calendar can show (the years 1 to 9999): from the first, before the
#: last (the Spark engine's check of a numeric column; here ``datetime`` checks).
FIRST_SECOND, END_SECOND = -62135596800.0, 253402300800.0
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_COMPACT_DATE = re.compile(r"\d{8}")


def missing(value: object) -> bool:
    """Whether a value is a table's null: None, NaN, pandas' NA and NaT (a frame's column,
    a list a DataFrame gave)."""
    if value is None:
        return True
    try:
        return bool(value != value)
    except (TypeError, ValueError):
        return False


def read_times(values: Sequence[object], where: Callable[[int], str]) -> list[float | None]:
    """Each value's epoch seconds by :func:`timestamp_or_none`, a table's null
    (:func:`missing`) none too; an error is an InputError beginning with ``where(k)`` for
    the k-th value (``dedup_batch``'s timestamps, a frame's column)."""
    out: list[float | None] = []
    for k, value in enumerate(values):
        if missing(value):
            out.append(None)
            continue
        try:
            out.append(timestamp_or_none(value))
        except InputError as e:
            raise InputError(f"{where(k)}: {e}") from None
    return out


def timestamp_or_none(value: object) -> float | None:
    """:func:`parse_timestamp`, with None and a blank string read as no timestamp at all."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return parse_timestamp(value)


def parse_timestamp(value: object) -> float:
    """Seconds since the epoch (UTC) of a record's timestamp, or InputError saying why not.

    Numbers are epoch seconds, or milliseconds when above 1e11. Strings are ISO 8601 dates or
    date-times (``Z`` and offsets understood; no offset means UTC), numeric strings as for
    numbers, but eight digits as a compact date (``20240105``), or HTTP dates
    (``Fri, 05 Jan 2024 00:00:00 GMT``). A ``datetime`` (UTC when it names no zone) or a
    ``date`` is read as it is.

    >>> parse_timestamp("2024-01-05T08:00:00+08:00"), parse_timestamp(1704412800000)
    (1704412800.0, 1704412800.0)
    >>> parse_timestamp("yesterday")
    Traceback (most recent call last):
    ...
    neardup.errors.InputError: cannot read 'yesterday' as a time: use ISO 8601 (2024-01-05 or 2024-01-05T10:30:00Z), epoch seconds or milliseconds, or an HTTP date
    """
    if type(value).__module__ == "numpy":  # a number or a time of a numpy array
        value = _python_scalar(value)
    if isinstance(value, datetime):
        return _seconds(value)
    if isinstance(value, date):
        return _seconds(datetime(value.year, value.month, value.day))
    if isinstance(value, Decimal):  # a Parquet or Arrow decimal column
        return _epoch(value, value)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InputError(f"a timestamp must be a number or a string, not {json_type(value)}")
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise InputError("the timestamp is an empty string")
        if _COMPACT_DATE.fullmatch(text):  # eight digits of epoch seconds would be 1970-73
            try:
                return _seconds(datetime.fromisoformat(text))
            except ValueError:
                raise InputError(
                    f"{shown(value)} is not a valid compact date (eight digits: YYYYMMDD)"
                ) from None
        if _NUMBER.fullmatch(text):
            return _epoch(text, value)
        try:
            return _seconds(datetime.fromisoformat(text))
        except ValueError:
            pass
        try:
            return _seconds(parsedate_to_datetime(text))
        except (TypeError, ValueError, IndexError):
            pass
        raise InputError(
            f"cannot read {shown(value)} as a time: use ISO 8601 (2024-01-05 or "
            "2024-01-05T10:30:00Z), epoch seconds or milliseconds, or an HTTP date"
        )
    return _epoch(value, value)


def _python_scalar(value: Any) -> object:
    """A numpy scalar as Python's: an integer or float as itself, a ``datetime64`` as a
    ``datetime`` (to the microsecond)."""
    import numpy as np

    if isinstance(value, np.datetime64):
        return value.astype("datetime64[us]").item()
    return value.item() if isinstance(value, np.generic) else value


def _seconds(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _epoch(number: float | str | Decimal, given: object) -> float:
    """``number`` as epoch seconds, checked to be a time a calendar can show."""
    try:
        seconds = float(number)
        if abs(seconds) > MILLISECONDS_ABOVE:
            seconds /= 1000
        datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise InputError(f"the timestamp {shown(str(given))} {NOT_A_TIME}") from None
    return seconds


#: Why a number is no timestamp.
NOT_A_TIME = "is not a time between the years 1 and 9999"

_WINDOW = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hours?|d|days?|w|weeks?|)\s*$",
    re.IGNORECASE,
)
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_window(window: str | float | int | timedelta | None) -> float | None:
    """A time window in seconds: ``"90d"``, ``"12h"``, ``"30m"``, ``"2w"`` (or the units in
    words: ``"90 days"``), a number of seconds or a ``timedelta``; None for no window.

    >>> parse_window("90d"), parse_window(3600), parse_window(None)
    (7776000.0, 3600.0, None)
    >>> parse_window("soon")
    Traceback (most recent call last):
    ...
    neardup.errors.ConfigError: window must be a number of seconds or like 90d, 12h, 30m, 2w; got 'soon'
    """
    if window is None:
        return None
    if isinstance(window, bool):
        raise ConfigError(f"window must be a number of seconds or like 90d, got {window!r}")
    if isinstance(window, timedelta):
        seconds = window.total_seconds()
    elif isinstance(window, numbers.Real):  # numpy's numbers too
        seconds = float(window)
    else:
        m = _WINDOW.match(str(window))
        if not m:
            raise ConfigError(
                f"window must be a number of seconds or like 90d, 12h, 30m, 2w; got {window!r}"
            )
        seconds = float(m.group(1)) * _UNIT[m.group(2)[:1].lower()]
    if not seconds > 0:
        raise ConfigError(f"window must be positive, got {window!r}")
    if not math.isfinite(seconds):
        raise ConfigError(f"window must be a finite span (None: no window), got {window!r}")
    return seconds
