"""The elements of a file that is one JSON array — Scrapy's ``-o items.json``, ``json.dump``
of a list, an API's dump — read one at a time, so a file of any size takes the memory of
its largest element, each named by the line it starts on.

>>> import io
>>> data = b'[\\n  {"id": 1,\\n   "text": "a"},\\n  {"id": 2, "text": "b"}\\n]\\n'
>>> [(e.line, e.value) for e in array_elements(io.BytesIO(data), 1000, chunk=7)]
[(2, {'id': 1, 'text': 'a'}), (4, {'id': 2, 'text': 'b'})]
>>> list(array_elements(io.BytesIO(b'[{"id": 1}, {"id": 2'), 1000))[-1]
Broken(line=1, reason='the array ends before its element is whole')
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from .document import SCAN_JSON, json_line
from .streams import BrokenOff, format_size

__all__ = ["Broken", "Element", "array_elements", "starts_an_array"]

_SPACE = " \t\r\n"


@dataclass(frozen=True, slots=True)
class Element:
    """One element of the array, and the line it starts on."""

    line: int
    value: object
    raw: str  # its JSON text (on one line: the text itself, else the value written again)


@dataclass(frozen=True, slots=True)
class Broken:
    """Why the array cannot be read past ``line``."""

    line: int
    reason: str


def starts_an_array(head: bytes) -> bool:
    """Whether a file whose first bytes are ``head`` is one JSON array (not JSON Lines): it
    starts with ``[``, and its first line is not a whole JSON value with more lines after it
    (JSON Lines whose first line is an array: an error record).

    >>> starts_an_array(b'\\xef\\xbb\\xbf [\\n{"id": 1}'), starts_an_array(b'[{"id": 1}, {"id": 2}]')
    (True, True)
    >>> starts_an_array(b'{"id": [1]}'), starts_an_array(b'["x", 1]\\n{"id": 2}\\n')
    (False, False)
    """
    head = head.removeprefix(codecs.BOM_UTF8).lstrip()
    if not head.startswith(b"["):
        return False
    first, _, rest = head.partition(b"\n")
    if not rest.strip():
        return True  # one line (or more than was looked at)
    try:
        json.loads(first)
    except ValueError:
        return True  # the array goes on past its first line
    return False


def array_elements(
    stream: IO[bytes], cap: int, *, chunk: int = 1 << 20
) -> Iterator[Element | Broken]:
    """Each element of the JSON array ``stream`` holds, then nothing; or, where it cannot be
    read on (malformed JSON, an element of more than ``cap`` bytes, bytes that are not
    UTF-8, the file cut short), a :class:`Broken` last."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    buf, pos, line, eof = "", 0, 1, False

    def fill(want: int) -> str | None:
        """Read on (at least ``want`` bytes, or to the end): None, or what went wrong."""
        nonlocal buf, pos, eof
        if eof:
            return None
        try:
            data = stream.read(max(chunk, want))
            text = decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            return f"not valid UTF-8 (byte 0x{e.object[e.start]:02X})"
        except BrokenOff as e:
            return str(e) or type(e).__name__
        buf, pos = buf[pos:] + text, 0
        eof = not data
        return None

    def space() -> str | None:
        """Skip whitespace (counting lines), reading on as needed: the next character, or
        "" at the end."""
        nonlocal pos, line
        while True:
            n = len(buf)
            while pos < n and buf[pos] in _SPACE:
                if buf[pos] == "\n":
                    line += 1
                pos += 1
            if pos < n:
                return buf[pos]
            if eof:
                return ""
            problem = fill(chunk)
            if problem is not None:
                return None

    first = space()
    if first is not None and buf.startswith("\ufeff", pos):
        pos += 1
        first = space()
    if first != "[":
        yield Broken(line, "not a JSON array")
        return
    pos += 1
    count = 0
    while True:
        c = space()
        if c is None:
            yield Broken(line, "the file could not be read on")
            return
        if c == "":
            yield Broken(line, "the array ends before its ']'")
            return
        if c == "]":
            pos += 1
            if space() not in ("", None):
                yield Broken(line, "more text after the array's end")
            return
        if count:
            if c != ",":
                yield Broken(line, f"expected ',' or ']' between elements, found {c!r}")
                return
            pos += 1
            if space() == "":
                yield Broken(line, "the array ends before its ']'")
                return
        start = pos
        while True:
            error: BaseException | None = None
            try:
                value, end = SCAN_JSON(buf, start)
            except (ValueError, StopIteration, RecursionError) as e:
                value, end, error = None, -1, e
            if (end >= 0 and end < len(buf)) or eof or len(buf) - start > cap:
                break  # a whole value (a number may go on past the buffer), or all there is
            problem = fill(len(buf) - start)
            if problem is not None:
                yield Broken(line, problem)
                return
            start = pos  # what was left is now at the buffer's start
        if (end if end >= 0 else len(buf)) - start > cap:
            yield Broken(
                line,
                f"an element of more than the {format_size(cap)} a record may hold "
                "(--max-record-size)",
            )
            return
        if error is not None:
            if isinstance(error, RecursionError):
                reason = "malformed JSON: nested too deeply to read"
            elif isinstance(error, StopIteration):
                reason = f"malformed JSON: expected a value, found {buf[start : start + 1]!r}"
            elif isinstance(error, json.JSONDecodeError) and (
                error.pos >= len(buf) or error.msg.startswith("Unterminated")
            ):
                reason = "the array ends before its element is whole"
            else:
                reason = f"malformed JSON: {getattr(error, 'msg', error)}"
            yield Broken(line, reason)
            return
        raw = buf[start:end]
        if "\n" in raw or "\r" in raw:
            raw = json_line(value)  # on one line (escaped where UTF-8 cannot carry it)
        yield Element(line, value, raw)
        line += buf.count("\n", start, end)
        pos = end
        count += 1
