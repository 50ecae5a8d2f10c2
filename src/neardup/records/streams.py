"""The bytes of one input file: un-compressed when they are (gzip, zstd, bzip2, xz: found by
content), UTF-16 and UTF-32 text turned into UTF-8, and cut into lines no longer than a cap.

>>> import io
>>> lines = list(capped_lines(io.BytesIO(b"short\\n" + b"x" * 50 + b"\\nend"), 10))
>>> lines[0], lines[1].size, lines[2]
(b'short\\n', 51, b'end')
"""

from __future__ import annotations

import bz2
import codecs
import collections
import contextlib
import gzip
import io
import lzma
import os
import re
import struct
import sys
import threading
import weakref
import zlib
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import IO, Any, cast

from ..errors import InputError, MissingDependencyError

_zlib: Any  # what inflates gzip input: zlib-ng (the ``fast`` extra), or zlib
try:
    from zlib_ng import zlib_ng as _zlib
except ImportError:  # pragma: no cover - the fast extra is installed for the tests
    _zlib = zlib

__all__ = [
    "DEFAULT_MAX_RECORD",
    "BrokenOff",
    "Opened",
    "TooLong",
    "capped_lines",
    "format_size",
    "open_bytes",
    "parse_size",
    "peek",
    "text_encoding",
]

#: The most one record (a line, a CSV row, a file, a WARC record) may hold: 64 MiB.
DEFAULT_MAX_RECORD = 64 << 20

_GZIP = b"\x1f\x8b"
_ZSTD = b"\x28\xb5\x2f\xfd"
_BZIP2 = b"BZh"
_XZ = b"\xfd7zXZ\x00"
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", re.I)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _broken_off() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [OSError, EOFError, ValueError, zlib.error, _zlib.error]
    errors.append(lzma.LZMAError)
    try:
        import zstandard
    except ImportError:
        pass
    else:
        errors.append(zstandard.ZstdError)
    return tuple(errors)


#: What stops a stream before its end: truncated or corrupt compression, a read error,
#: text that is not valid in the encoding the file declares.
BrokenOff = _broken_off()


def parse_size(text: str) -> int:
    """A size in bytes from ``64M``, ``1.5G``, ``500k``, ``2MiB`` or a plain number.

    >>> parse_size("64M"), parse_size("1.5k"), parse_size("100")
    (67108864, 1536, 100)
    """
    m = _SIZE.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not a size (use bytes, or a number with K, M or G)")
    size = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if size < 1:
        raise ValueError(f"{text!r} is not a size of at least one byte")
    return size


def format_size(n: float) -> str:
    """``n`` bytes for people: 512 B, 3.4 KB, 41.2 MB, 1.1 GB (powers of 1,000).

    >>> format_size(999), format_size(41_234_567), format_size(67108864)
    ('999 B', '41.2 MB', '67.1 MB')
    """
    for unit, step in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= step:
            return f"{n / step:.1f} {unit}"
    return f"{int(n)} B"


@dataclass(frozen=True, slots=True)
class TooLong:
    """A line longer than the cap, skipped without keeping it: its size and how many
    double quotes it held (for a CSV reader to find where a quoted field ends)."""

    size: int
    quotes: int


def capped_lines(stream: IO[bytes], cap: int) -> Iterator[bytes | TooLong]:
    """The lines of ``stream`` (line end kept), a :class:`TooLong` for each longer than
    ``cap`` bytes — never holding more than ``cap`` + 1 MiB of one in memory."""
    readline = stream.readline
    limit = cap + 1
    while True:
        line = readline(limit)
        if not line:
            return
        if len(line) < limit or line.endswith(b"\n"):
            yield line
            continue
        size, quotes = len(line), line.count(b'"')
        while True:
            more = readline(1 << 20)
            size += len(more)
            quotes += more.count(b'"')
            if not more or more.endswith(b"\n"):
                break
        yield TooLong(size, quotes)


class _Utf8(io.RawIOBase):
    """Text decoded from another encoding, given out again as UTF-8 bytes."""

    def __init__(self, text: IO[str]) -> None:
        self._text = text
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            chunk = self._text.read(1 << 16)
            if not chunk:
                return 0
            self._pending = chunk.encode("utf-8", "surrogatepass")
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


class _CrLines(io.RawIOBase):
    """A stream whose lines end in CR alone (classic Mac OS, Excel for Mac's "CSV (Macintosh)"),
    given out with LF line ends."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        chunk = self._stream.read(len(buffer))
        if not chunk:
            return 0
        n = len(chunk)
        buffer[:n] = chunk.replace(b"\r", b"\n")
        return n


#: How far a text file is looked into for its line ends.
_LINE_END_PEEK = 1 << 16


def cr_line_ends(head: bytes) -> bool:
    r"""Whether a text file that starts with ``head`` ends its lines with CR alone: its first
    line does (a CSV cell's own line breaks may be LF).

    >>> cr_line_ends(b'id,text\r1,"a\nb"\r'), cr_line_ends(b"id,text\r\n1,a\r\n")
    (True, False)
    >>> cr_line_ends(b"id,text\n1,a\rb\n"), cr_line_ends(b"no line end yet")
    (False, False)
    """
    cr, lf = head.find(b"\r"), head.find(b"\n")
    if cr < 0 or 0 <= lf <= cr + 1:
        return False
    try:  # text up to it (binary data, a compression neardup does not know, is not)
        head[:cr].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in head[:cr]


def text_encoding(head: bytes) -> tuple[str, str] | None:
    """(codec, description) when ``head`` shows UTF-16 or UTF-32 text, else None."""
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        order = "little" if head.startswith(codecs.BOM_UTF32_LE) else "big"
        return "utf-32", f"UTF-32 ({order}-endian, with a byte order mark)"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        order = "little" if head.startswith(codecs.BOM_UTF16_LE) else "big"
        return "utf-16", f"UTF-16 ({order}-endian, with a byte order mark)"
    if len(head) >= 4:
        z = [b == 0 for b in head[:4]]
        if z == [False, True, True, True]:
            return "utf-32-le", "UTF-32 (little-endian, without a byte order mark)"
        if z == [True, True, True, False]:
            return "utf-32-be", "UTF-32 (big-endian, without a byte order mark)"
        if z == [False, True, False, True]:
            return "utf-16-le", "UTF-16 (little-endian, without a byte order mark)"
        if z == [True, False, True, False]:
            return "utf-16-be", "UTF-16 (big-endian, without a byte order mark)"
    return None


def peek(stream: IO[bytes], n: int) -> bytes:
    """The first ``n`` bytes of ``stream``, left unread (fewer if it cannot look ahead)."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        data = cast(bytes, peek(n))
        while len(data) < n:  # peek may give less than asked for at a buffer boundary
            more = cast(bytes, peek(n))
            if len(more) <= len(data):
                break
            data = more
        return data[:n]
    if stream.seekable():
        at = stream.tell()
        head = stream.read(n)
        stream.seek(at)
        return head
    return b""


@dataclass
class Opened:
    """The bytes of one input, ready to be read, and what was found out opening it."""

    stream: IO[bytes]
    #: the file as it lies on disk (for how far reading has got), or None
    raw: IO[bytes] | None
    compression: str | None
    #: how the text was encoded when it was not UTF-8 (e.g. "UTF-16 (little-endian, …)")
    encoding: str | None

    def position(self) -> int | None:
        """Bytes of the file read so far (compressed bytes for compressed input)."""
        if self.raw is None:
            return None
        try:
            return self.raw.tell()
        except (OSError, ValueError):
            return None


def _detach(wrapper: io.TextIOWrapper) -> None:
    with contextlib.suppress(ValueError):  # already detached or closed
        wrapper.detach()


#: bytes an input file is read ahead by (Python's default is 8 KiB)
READ_BUFFER = 1 << 20


#: compressed bytes a gzip file is inflated by at a time; once a piece is found corrupt, by
#: what is lost at most before the corrupt bytes (``GzipFile`` reads 8 KiB at a time)
_GZIP_PIECE = 1 << 17
_CORRUPT_STEP = 1 << 8
_ENDED = "Compressed file ended before the end-of-stream marker was reached"
_FEXTRA, _FNAME, _FCOMMENT, _FHCRC = 4, 8, 16, 2


class _Gunzip(io.RawIOBase):
    """The members of a gzip file, inflated as ``gzip.GzipFile`` inflates them: the same
    bytes, every byte before a break, then the same error (EOFError for a file cut short,
    ``gzip.BadGzipFile`` for a bad header, CRC or length, the inflater's error for corrupt
    data). Before corrupt data it gives every byte the inflater gives before the corrupt
    bytes (the piece that fails is inflated again 256 bytes at a time, and the 256 that
    fail a byte at a time), so no byte that ``GzipFile`` gives, inflating 8 KiB at a time,
    is missing. zlib-ng inflates when it is installed (the ``fast`` extra): its streams give
    out what zlib's give out, up to any break, 1.6x as fast (hkcnews 10k's 45.8 MB in 0.11 s
    against 0.17, on the main process's path, where ``GzipFile`` and the buffer over it
    took 0.20 s to give its lines and this takes 0.10)."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__()
        self._read = stream.read
        self._held = b""  # compressed bytes read and not yet inflated
        self._inflater: Any = None  # the member being inflated; None before its header
        self._crc = 0
        self._size = 0
        self._piece = _GZIP_PIECE

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = len(buffer)
        if not n:
            return 0
        while True:
            inflater = self._inflater
            if inflater is not None and inflater.eof:
                self._trailer()
                inflater = self._inflater = None
            if inflater is None:
                if not self._header():
                    return 0
                inflater = self._inflater = _zlib.decompressobj(-zlib.MAX_WBITS)
                self._crc = self._size = 0
            data = self._take(self._piece)
            before = inflater.copy() if self._piece > 1 else None
            try:
                out = inflater.decompress(data, n)
            except _zlib.error:
                if before is None:
                    raise
                # inflate the piece again a few bytes at a time (and the few that fail, a
                # byte at a time), up to the corrupt ones
                self._inflater, self._held = before, data + self._held
                self._piece = _CORRUPT_STEP if self._piece == _GZIP_PIECE else 1
                continue
            rest = inflater.unconsumed_tail or inflater.unused_data
            if rest:
                self._held = rest + self._held
            if out:
                self._crc = _zlib.crc32(out, self._crc)
                self._size += len(out)
                buffer[: len(out)] = out
                return len(out)
            if not data:
                raise EOFError(_ENDED)

    def _take(self, n: int) -> bytes:
        """Up to ``n`` compressed bytes (fewer only at a piece's end; none at the file's)."""
        held = self._held
        if held:
            self._held = held[n:]
            return held[:n]
        return self._read(n)

    def _exact(self, n: int) -> bytes:
        data = self._take(n)
        while len(data) < n:
            more = self._take(n - len(data))
            if not more:
                raise EOFError(_ENDED)
            data += more
        return data

    def _header(self) -> bool:
        """Read a member's header; False at the end of the file (as ``gzip`` reads one)."""
        magic = self._take(2)
        if len(magic) == 1:
            magic += self._take(1)
        if not magic:
            return False
        if magic != _GZIP:
            raise gzip.BadGzipFile(f"Not a gzipped file ({magic!r})")
        method, flags = self._exact(8)[:2]
        if method != 8:
            raise gzip.BadGzipFile("Unknown compression method")
        if flags & _FEXTRA:
            (size,) = struct.unpack("<H", self._exact(2))
            self._exact(size)
        for flag in (_FNAME, _FCOMMENT):
            if flags & flag:  # a string ended by a zero byte
                while data := self._take(_GZIP_PIECE):
                    end = data.find(b"\0")
                    if end >= 0:
                        self._held = data[end + 1 :] + self._held
                        break
        if flags & _FHCRC:
            self._exact(2)
        return True

    def _trailer(self) -> None:
        """Check a member's CRC and length, and pass the zero bytes that may follow it."""
        crc, size = struct.unpack("<II", self._exact(8))
        if crc != self._crc:
            raise gzip.BadGzipFile(f"CRC check failed {hex(crc)} != {hex(self._crc)}")
        if size != self._size & 0xFFFFFFFF:
            raise gzip.BadGzipFile("Incorrect length of data produced")
        while data := self._take(_GZIP_PIECE):
            data = data.lstrip(b"\0")
            if data:
                self._held = data + self._held
                return


class _Ahead(io.RawIOBase):
    """What a stream that inflates (``_Gunzip``, zstd's reader) gives, inflated ahead by a
    thread of its own, up to :data:`AHEAD_BLOCKS` blocks ahead of the reader: the same
    bytes, then the same error or end. Inflating lets go of the GIL, so it runs beside the
    process's own work instead of on its path (hkcnews 10k: 45.8 MB inflated in about
    0.07 s; 20 Newsgroups 0.18 s). The thread starts at the first read (a caller that reads
    the file itself, as the WARC reader does, never starts it) and stops when the stream
    is closed; it is paused while the process forks (a batch run's sketch workers), so
    that no thread is running then (a fork copies no thread, and Python 3.12 warns of one
    running: see :func:`_pause_all`)."""

    def __init__(self, inner: Any) -> None:  # a _Gunzip, or zstd's reader: ``readinto``
        super().__init__()
        self._inner = inner
        self._lock = threading.Condition()
        self._blocks: collections.deque[bytearray | BaseException | None] = collections.deque()
        self._stop = False  # the thread is to stop (pausing, or closed)
        self._closed = False
        self._held: bytearray | BaseException | None = None  # a block the thread stopped with
        self._holding = False
        self._finished = False  # the thread has given the end, or the error
        self._running = False  # a thread is inflating (set and cleared under the lock)
        self._thread: threading.Thread | None = None
        self._block: memoryview | None = None  # the block being read, from ``_at``
        self._at = 0
        self._end: BaseException | None = None  # the inner stream's error, once reached
        self._ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._thread is None:  # the first read
            _LIVE.add(self)
            self._start()
        block = self._block
        while block is None or self._at >= len(block):
            if self._end is not None:
                raise self._end
            if self._ended:
                return 0
            with self._lock:
                while not self._blocks:
                    self._lock.wait()
                item = self._blocks.popleft()
                self._lock.notify_all()
            if item is None:
                self._ended = True
                return 0
            if isinstance(item, BaseException):
                self._end = item
                raise item
            block, self._at = memoryview(item), 0
            self._block = block
        n = min(len(buffer), len(block) - self._at)
        buffer[:n] = block[self._at : self._at + n]
        self._at += n
        return n

    def _start(self) -> None:
        self._stop, self._running = False, True
        self._thread = threading.Thread(target=self._run, name="neardup-inflate", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        """The thread: each block the inner stream fills, then None at its end or the error
        it raised (given to the reader where it was raised), until told to stop."""
        item: bytearray | BaseException | None
        while True:
            if self._holding:
                item, self._held, self._holding = self._held, None, False
            else:
                try:
                    block = bytearray(AHEAD_BLOCK)
                    n = self._inner.readinto(block)
                except BaseException as e:
                    item = e
                else:
                    del block[n:]
                    item = block if n else None
            with self._lock:
                while len(self._blocks) >= AHEAD_BLOCKS and not self._stop:
                    self._lock.wait()
                if self._stop:  # kept for the thread that resumes
                    self._held, self._holding, self._running = item, True, False
                    return
                self._blocks.append(item)
                self._lock.notify_all()
                if not isinstance(item, bytearray):
                    self._finished, self._running = True, False
                    return

    def _halt(self) -> None:
        """Stop the thread, and wait for it (it ends once the block it is inflating is done;
        one waiting on a pipe that gives nothing more is let be: a daemon)."""
        thread = self._thread
        with self._lock:
            self._stop = True
            self._lock.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(_AHEAD_JOIN)

    def pause(self) -> None:
        """Stop the thread until :meth:`resume` (its block kept)."""
        if not self._closed and not self._finished:
            self._halt()

    def resume(self) -> None:
        """Let the thread go on after :meth:`pause`: a new one, or the one that was still
        finishing its block (a pipe that was slow to give it)."""
        with self._lock:
            if self._closed or self._finished or self._thread is None:
                return
            self._stop = False
            self._lock.notify_all()
            if self._running:
                return
        self._start()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _LIVE.discard(self)
            self._halt()
        super().close()


#: bytes of inflated input :class:`_Ahead` reads at a time, and how many such blocks it holds
AHEAD_BLOCK = 1 << 20
AHEAD_BLOCKS = 4
_AHEAD_JOIN = 1.0  # seconds a closed or pausing stream waits for its thread
#: the streams whose threads have started and that are not closed
_LIVE: weakref.WeakSet[_Ahead] = weakref.WeakSet()


def _pause_all() -> None:
    """Before this process forks: pause every stream's thread inflating ahead. A forked child
    has none of its threads, only their memory, and on Python 3.12 and later ``os.fork`` warns
    when the process has threads (a lock one held is held for ever in the child)."""
    for ahead in list(_LIVE):
        ahead.pause()


def _resume_all() -> None:
    """After this process forked (in the parent): their threads go on."""
    for ahead in list(_LIVE):
        ahead.resume()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(before=_pause_all, after_in_parent=_resume_all)


def _inflated_ahead(inner: Any, stack: ExitStack) -> IO[bytes]:
    """What ``inner`` inflates, read through :class:`_Ahead` (closed with ``stack``, before
    what was entered in it so far: the file, or the reader its thread may be reading)."""
    ahead = _Ahead(inner)
    stack.callback(ahead.close)
    return cast(IO[bytes], io.BufferedReader(ahead, buffer_size=READ_BUFFER))


def open_bytes(
    path: str, stack: ExitStack, *, text: bool = True, encoding: str | None = None
) -> Opened:
    """Open ``path`` (``-``: standard input, left open) for reading records from it.

    gzip, zstd, bzip2 and xz are found by their magic bytes and un-compressed; with ``text``,
    UTF-16 and UTF-32 (by their byte order mark, or the NUL bytes of ASCII in them), or else
    text in the codec ``encoding`` names (``--encoding``), become UTF-8. InputError when the
    file cannot be opened.
    """
    raw: IO[bytes] | None
    if path == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:  # a text-only stand-in for stdin
            buffer = io.BytesIO(sys.stdin.read().encode("utf-8", "surrogatepass"))
        stream = cast(IO[bytes], buffer)
        raw = None
    else:
        try:
            # a large buffer: lines of a few KB are found in it, not read 8 KB at a time
            stream = stack.enter_context(open(path, "rb", buffering=READ_BUFFER))  # noqa: SIM115
        except OSError as e:
            raise InputError(f"cannot read {path}: {e.strerror or e}") from None
        raw = stream
    head = peek(stream, 6)
    compression = None
    if head.startswith(_BZIP2) and head[3:4].isdigit() and head[3:4] != b"0":
        compression = "bzip2"
        stream = _inflated_ahead(stack.enter_context(bz2.BZ2File(stream)), stack)
    elif head.startswith(_XZ):
        compression = "xz"
        stream = _inflated_ahead(stack.enter_context(lzma.LZMAFile(stream)), stack)  # noqa: SIM115
    elif head.startswith(_GZIP):
        compression = "gzip"
        stream = _inflated_ahead(_Gunzip(stream), stack)
    elif head.startswith(_ZSTD):
        compression = "zstd"
        try:
            import zstandard
        except ImportError as e:
            raise MissingDependencyError(
                f"{path} is zstd-compressed; reading it needs zstandard: "
                "pip install 'neardup[zstd]'"
            ) from e
        reader = zstandard.ZstdDecompressor().stream_reader(
            stream, read_across_frames=True, closefd=False
        )
        stack.enter_context(reader)
        stream = _inflated_ahead(reader, stack)
    named, encoding = encoding, None
    if text:
        try:
            head = peek(stream, 4)
        except BrokenOff:  # corrupt from the start: reading says so, record by record
            head = b""
        found = text_encoding(head)
        if found is None and named is not None:  # a codec (not UTF-8) the user named
            found = named, f"in {named}, as --encoding says"
        if found is not None:
            codec, encoding = found
            wrapped = io.TextIOWrapper(stream, encoding=codec, errors="strict", newline="\n")
            stack.callback(_detach, wrapped)  # closing it would close what it wraps
            stream = cast(IO[bytes], io.BufferedReader(_Utf8(wrapped)))
        else:
            try:
                head = peek(stream, _LINE_END_PEEK)
            except BrokenOff:
                head = b""
            if cr_line_ends(head):
                encoding = "text whose lines end in CR alone (as classic Mac OS writes them)"
                stream = cast(IO[bytes], io.BufferedReader(_CrLines(stream)))
    return Opened(stream, raw, compression, encoding)
