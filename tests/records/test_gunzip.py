"""Gzip input inflated by the records' own reader (zlib-ng when installed) against
``gzip.GzipFile``, the reference: the same bytes, every byte before a break, the same
kind of error after them."""

from __future__ import annotations

import gc
import gzip
import io
import os
import random
import struct
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.records import streams
from neardup.records.readers import read_records
from neardup.records.streams import BrokenOff, open_bytes


def _reference(data: bytes) -> tuple[bytes, type[BaseException] | None]:
    """What ``gzip.GzipFile`` gives of ``data``, a line at a time, and the error it stops on."""
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            for line in f:
                out += line
    except BrokenOff as e:
        return bytes(out), type(e)
    return bytes(out), None


def _ours(data: bytes, path: str) -> tuple[bytes, type[BaseException] | None]:
    with open(path, "wb") as f:
        f.write(data)
    out = bytearray()
    with ExitStack() as stack:
        opened = open_bytes(path, stack, text=False)
        assert opened.compression == "gzip"
        try:
            for line in opened.stream:
                out += line
        except BrokenOff as e:
            return bytes(out), type(e)
    return bytes(out), None


def _kind(error: type[BaseException] | None) -> str | None:
    """The kind of a break: cut short, a bad header or check, corrupt data."""
    if error is None:
        return None
    if issubclass(error, EOFError):
        return "cut short"
    if issubclass(error, gzip.BadGzipFile):
        return "bad gzip"
    return "corrupt"


def _member(rng: random.Random, size: int, flags: int) -> bytes:
    """One gzip member of ``size`` bytes of lines, with the optional header fields of
    ``flags`` (FEXTRA 4, FNAME 8, FCOMMENT 16, FHCRC 2)."""
    words = [b"alpha", b"\xe5\x8c\x97\xe4\xba\xac", b"beta", b"\xe4\xb8\x8a\xe6\xb5\xb7"]
    body = bytearray()
    while len(body) < size:
        body += b" ".join(rng.choice(words) for _ in range(rng.randrange(1, 40))) + b"\n"
        if rng.random() < 0.2:
            body += rng.randbytes(rng.randrange(1, 300)) + b"\n"  # compresses badly
    body = body[:size]
    header = b"\x1f\x8b\x08" + bytes([flags]) + struct.pack("<I", 1234) + b"\x00\xff"
    if flags & 4:
        extra = rng.randbytes(rng.randrange(0, 40))
        header += struct.pack("<H", len(extra)) + extra
    if flags & 8:
        header += b"name.jsonl\x00"
    if flags & 16:
        header += b"a comment\x00"
    if flags & 2:
        header += struct.pack("<H", zlib.crc32(header) & 0xFFFF)
    packer = zlib.compressobj(rng.choice([1, 6, 9]), zlib.DEFLATED, -zlib.MAX_WBITS)
    deflated = packer.compress(bytes(body)) + packer.flush()
    trailer = struct.pack("<II", zlib.crc32(body), len(body) & 0xFFFFFFFF)
    return header + deflated + trailer


@st.composite
def _files(draw: st.DrawFn) -> bytes:
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    members = []
    for _ in range(draw(st.integers(1, 3))):
        size = draw(st.sampled_from([0, 1, 500, 40_000, 300_000]))
        members.append(_member(rng, size, draw(st.sampled_from([0, 4, 8, 16, 2, 30]))))
        members[-1] += b"\x00" * draw(st.sampled_from([0, 0, 1, 5000]))  # padding between
    data = bytearray(b"".join(members))
    change = draw(st.sampled_from(["none", "cut", "flip", "garbage"]))
    at = draw(st.integers(0, max(0, len(data) - 1)))
    if change == "cut":
        del data[max(at, 2) :]  # the magic bytes kept: the input is still found to be gzip
    elif change == "flip" and len(data) > 2:
        data[max(at, 2)] ^= draw(st.integers(1, 255))
    elif change == "garbage":
        data += rng.randbytes(draw(st.integers(1, 20)))
    return bytes(data)


@contextmanager
def _inflating(name: str) -> Iterator[None]:
    """The reader inflating with zlib-ng or with zlib (without the `fast` extra)."""
    module = zlib if name == "zlib" else pytest.importorskip("zlib_ng.zlib_ng")
    was = streams._zlib
    streams._zlib = module
    try:
        yield
    finally:
        streams._zlib = was


@pytest.mark.parametrize("inflater", ["zlib_ng", "zlib"])
@settings(max_examples=120)
@given(data=_files())
def test_gzip_input_reads_as_gzip_reads_it(
    inflater: str, data: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every byte ``GzipFile`` gives is given, in order, and the read stops with the same
    kind of error; a corrupt member may give more before its error (``GzipFile`` loses up
    to 8 KiB of input before it), never anything else."""
    path = str(tmp_path_factory.mktemp("gz") / "in.gz")
    want, want_error = _reference(data)
    with _inflating(inflater):
        got, got_error = _ours(data, path)
    assert _kind(got_error) == _kind(want_error)
    if _kind(want_error) == "corrupt":
        assert got.startswith(want)
        assert len(got) - len(want) <= 8192 * 1100  # what 8 KiB of deflate could hold
    else:
        assert got == want


def test_gzip_input_is_inflated_by_zlib_ng_when_installed() -> None:
    """The `fast` extra installs zlib-ng, and the reader takes it."""
    pytest.importorskip("zlib_ng")
    assert streams._zlib.__name__.endswith("zlib_ng")


@pytest.mark.parametrize("inflater", ["zlib_ng", "zlib"])
def test_a_corrupt_piece_gives_what_gzip_gives_before_its_corrupt_bytes(
    inflater: str, tmp_path: str
) -> None:
    """A corrupt byte far into a large piece of input: what ``GzipFile`` gives before it is
    given too (the piece is inflated again a little at a time, not lost), then the corrupt
    data's error."""
    rng = random.Random(7)
    lines = [b"%d %s\n" % (i, rng.randbytes(60).hex().encode()) for i in range(20_000)]
    whole = gzip.compress(b"".join(lines))
    for at in range(len(whole) // 2, len(whole), 997):  # a byte that makes the data corrupt
        packed = bytearray(whole)
        packed[at] ^= 0x55
        want, want_error = _reference(bytes(packed))
        if _kind(want_error) == "corrupt":
            break
    with _inflating(inflater):
        got, error = _ours(bytes(packed), f"{tmp_path}/in.gz")
    assert _kind(error) == _kind(want_error) == "corrupt"
    assert len(want) > 1_000_000 and got.startswith(want)


def _inflated_a_byte_at_a_time(member: bytes) -> tuple[bytes, bool]:
    """All that zlib gives of a gzip member with a 10-byte header fed one byte at a time —
    the most any reader can give — and whether it then stopped on corrupt data."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    out = bytearray()
    for i in range(10, len(member)):
        try:
            out += inflater.decompress(member[i : i + 1])
        except zlib.error:
            return bytes(out), True
    return bytes(out), False


@pytest.mark.parametrize("inflater", ["zlib_ng", "zlib"])
def test_corrupt_data_gives_every_line_inflated_before_it(inflater: str, tmp_path: str) -> None:
    """Whatever piece ``GzipFile`` and the reader happened to read a corrupt byte in, the
    reader gives every whole line zlib inflates before the corrupt bytes: the most a reader
    can (``GzipFile`` gave more than it did when the corrupt byte lay within the 256 it
    inflated again at a time, just past the end of ``GzipFile``'s 8 KiB)."""
    rng = random.Random(7)
    member = _member(rng, 40_000, 0)
    corrupt = 0
    for _ in range(60):
        packed = bytearray(member)
        packed[rng.randrange(10, len(member) - 8)] ^= rng.randrange(1, 256)
        most, broke = _inflated_a_byte_at_a_time(bytes(packed))
        if not broke:
            continue
        corrupt += 1
        want, _ = _reference(bytes(packed))
        with _inflating(inflater):
            got, error = _ours(bytes(packed), f"{tmp_path}/in.gz")
        assert _kind(error) == "corrupt"
        assert got == most[: most.rfind(b"\n") + 1]
        assert got.startswith(want)
    assert corrupt >= 10


def test_the_thread_inflating_ahead_ends_when_the_input_is_closed(tmp_path: Path) -> None:
    """A run that stops reading early (a stop, an error) closes its input: the thread that
    inflates it ahead ends, though the blocks it holds were never read; a caller that reads
    the file itself (the WARC reader) never starts one."""
    path = tmp_path / "big.gz"
    path.write_bytes(gzip.compress(b"".join(b"line %d\n" % i for i in range(1_500_000))))
    with ExitStack() as stack:
        opened = open_bytes(str(path), stack, text=False)
        assert opened.raw is not None and opened.raw.read(2) == b"\x1f\x8b"
        assert not _inflating_threads()
    with ExitStack() as stack:
        opened = open_bytes(str(path), stack, text=False)
        assert opened.stream.readline() == b"line 0\n"
        (thread,) = _inflating_threads()  # more blocks ahead than it holds: it waits
    thread.join(2)
    assert not thread.is_alive()


def _inflating_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "neardup-inflate" and t.is_alive()]


def test_zstd_input_inflated_ahead_reads_whole(tmp_path: Path) -> None:
    """zstd input is inflated ahead the same way: every byte of a file of more blocks than
    are held ahead, in order."""
    zstandard = pytest.importorskip("zstandard")
    data = b"".join(b"%d,\xe5\x8c\x97\xe4\xba\xac\n" % i for i in range(800_000))
    path = tmp_path / "big.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(data))
    with ExitStack() as stack:
        opened = open_bytes(str(path), stack, text=False)
        assert opened.compression == "zstd"
        assert b"".join(opened.stream) == data


#: a process that reads a gzip file, forks halfway (as a batch run forks its sketch workers)
#: and reads on: the threads it has before the fork and as it forks, and the bytes it read
_FORKING = """
import os, sys, threading
seen = []
os.register_at_fork(before=lambda: seen.append(threading.active_count()))  # runs last
from contextlib import ExitStack
from neardup.records.streams import open_bytes
with ExitStack() as stack:
    opened = open_bytes(sys.argv[1], stack, text=False)
    first = opened.stream.readline()
    before = threading.active_count()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    rest = b"".join(opened.stream)
print(before, seen[0], len(first + rest))
"""


def test_a_fork_pauses_the_thread_inflating_ahead(tmp_path: Path) -> None:
    """No thread inflates while the process forks (a child has none of its parent's
    threads, and a lock one held stays held there; Python 3.12 warns of threads at a fork,
    an error here), and the stream reads on whole after the fork."""
    data = b"".join(b"line %d\n" % i for i in range(1_500_000))
    path = tmp_path / "big.gz"
    path.write_bytes(gzip.compress(data))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", _FORKING, str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,  # a thread that never resumed would leave the read waiting
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "1", str(len(data))]


def test_a_reader_let_go_unclosed_stops_its_thread(tmp_path: Path) -> None:
    """A library caller that stops iterating ``read_records`` and drops it without closing
    it leaves no thread inflating behind (the buffer over the stream closes it as it goes)."""
    path = tmp_path / "big.jsonl.gz"
    path.write_bytes(
        gzip.compress(
            b"".join(b'{"id": "%d", "text": "line %d"}\n' % (i, i) for i in range(300_000))
        )
    )
    reader = read_records(str(path))
    assert next(iter(reader)).text == "line 0"
    (thread,) = _inflating_threads()
    del reader
    gc.collect()
    thread.join(2)
    assert not thread.is_alive()
