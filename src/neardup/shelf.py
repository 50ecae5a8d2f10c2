"""The sketches a batch run keeps, by document position: the newest in memory, the rest in
a file of its own once they pass a budget.

Any earlier document can be a later one's candidate, so a batch run keeps every sketch to
the end; verification reads what a sketch holds (its prepared text, vocabulary and its
index, signature and figures), about 11 KB a long Chinese article. Past ``budget`` bytes of
them in memory, the oldest decided ones are written to an unnamed temporary file (in
``TMPDIR``; gone when the run ends, or when its process does) and read back, whole, when a
candidate names one; the last ones read back stay in a small cache (a story's kept document
is read by each of its copies). A sketch read back holds the same arrays, of the same
types, as the one written: the decisions are the same.

>>> from neardup.engine import DedupConfig, make_sketch
>>> texts = ["北京地铁十九号线今天开通运营。" * 20, "The new line opens today. " * 20, "短评"]
>>> shelf = Shelf(budget=0)
>>> shelf.extend([make_sketch(t, DedupConfig()) for t in texts])
>>> shelf.settle(3)  # all decided, the budget 0 bytes: all but the small one go to the file
>>> shelf.on_file, shelf[0].text[:8], shelf[1].text[:12], shelf[2].text
(2, '北京地铁十九号线', 'the new line', '短评')
>>> shelf.close()
"""

from __future__ import annotations

import errno
import os
import struct
import tempfile
import threading
from array import array
from collections import OrderedDict, deque
from collections.abc import Iterable
from typing import Any, TypeVar

import numpy as np

from .engine.sketches import Sketch
from .errors import OutputError, shielded
from .machine import machine_memory

__all__ = ["Shelf", "default_budget", "memory_backed", "sketch_bytes"]

#: the sketches of decided documents a batch run keeps in memory by default: this share of
#: the memory the process may use (:func:`~neardup.machine.machine_memory`) ...
BUDGET_SHARE = 4
#: ... or this much where that is not known
BUDGET_UNKNOWN = 2 << 30


def default_budget() -> int:
    """The bytes of decided documents' sketches a batch run keeps in memory unless told: a
    quarter of the machine's memory, or of its control groups' limit (a container's)."""
    return machine_memory() // BUDGET_SHARE or BUDGET_UNKNOWN


#: a record's head: n_units; the lengths in bytes of the text (UTF-8 if ASCII, else UTF-16,
#: 2 bytes a CJK character and the quickest to write and read; negative: UTF-16) and of the
#: figures (UTF-8, joined by NUL); then the length in elements (-1: none) and the dtype
#: (``dtype.str``: the same types read back, which the compiled kernels are compiled for)
#: of the signature, band keys, shingle codes, vocabulary and vocabulary index
_HEAD = struct.Struct("<qqq5q5s5s5s5s5s")
_WIDE = "utf-16-le"


def sketch_bytes(sketch: Sketch) -> int:
    """About what a sketch holds in memory: its arrays and its text (at 2 bytes a
    character, as Python keeps CJK text)."""
    size = sketch.signature.nbytes + sketch.bands.nbytes + sketch.vocab.nbytes
    if sketch._shingles is not None:
        size += sketch._shingles.nbytes
    if sketch.vocab_index is not None:
        size += sketch.vocab_index.nbytes
    return size + 2 * len(sketch.text) + 200


def _encode(sketch: Sketch, out: bytearray) -> None:
    """Append ``sketch`` to ``out`` as one record: its head, its arrays (each at a multiple
    of its item size from the record's start, which is a multiple of 8), its text and its
    figures."""
    arrays = (
        sketch.signature,
        sketch.bands,
        sketch._shingles,
        sketch.vocab,
        sketch.vocab_index,
    )
    wide = not sketch.text.isascii()
    text = sketch.text.encode(_WIDE if wide else "utf-8", "surrogatepass")
    numbers = "\0".join(sketch.numbers).encode("utf-8", "surrogatepass")
    start = len(out)
    out += _HEAD.pack(
        sketch.n_units,
        -len(text) - 1 if wide else len(text),
        len(numbers),
        *[-1 if a is None else len(a) for a in arrays],
        *[b"" if a is None else _kind(a.dtype) for a in arrays],
    )
    for a in arrays:
        if a is not None and len(a):
            pad = (start - len(out)) % a.itemsize
            if pad:
                out += bytes(pad)
            out += a.data if a.flags.c_contiguous else a.tobytes()
    out += text
    out += numbers
    pad = (start - len(out)) % 8
    if pad:
        out += bytes(pad)


def _detached(sketch: Sketch) -> Sketch:
    """``sketch`` with arrays of its own: a sketch of a worker's chunk is views into the
    chunk's arrays, which stay in memory while any of them does."""
    return Sketch(
        sketch.text,
        _own(sketch._shingles),
        sketch.n_units,
        _own(sketch.signature),
        _own(sketch.bands),
        _own(sketch.vocab),
        sketch.numbers,
        _own(sketch.vocab_index),
    )


_A = TypeVar("_A", bound="np.ndarray[Any, Any] | None")


def _own(a: _A) -> _A:
    """``a``, or a copy of it if it is a view into another array."""
    if a is None or a.base is None:
        return a
    return a.copy()


def memory_backed(folder: str, mounts: str = "/proc/self/mounts") -> bool:
    """Whether ``folder`` is on a file system held in memory (tmpfs, ramfs: a container's
    ``/tmp`` often is), where a file saves no memory; False where that cannot be told."""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as f:
            table = [line.split() for line in f]
    except OSError:
        return False
    path = os.path.realpath(folder)
    best, kind = "", ""
    for fields in table:
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind in ("tmpfs", "ramfs")


_KINDS: dict[np.dtype[Any], bytes] = {}
_DTYPES: dict[bytes, np.dtype[Any]] = {}


def _kind(dtype: np.dtype[Any]) -> bytes:
    """``dtype.str`` as bytes (remembered: a few dtypes, asked for every array)."""
    kind = _KINDS.get(dtype)
    if kind is None:
        kind = _KINDS[dtype] = dtype.str.encode()
    return kind


def _dtype(kind: bytes) -> np.dtype[Any]:
    """The dtype of :func:`_kind` (the head's field, padded with NULs)."""
    dtype = _DTYPES.get(kind)
    if dtype is None:
        dtype = _DTYPES[kind] = np.dtype(kind.rstrip(b"\0").decode())
    return dtype


def _decode(record: bytearray) -> Sketch:
    """The sketch :func:`_encode` wrote: its arrays views into ``record`` (writable)."""
    n_units, n_text, n_numbers, *rest = _HEAD.unpack_from(record)
    at = _HEAD.size
    arrays: list[np.ndarray | None] = []
    for count, kind in zip(rest[:5], rest[5:], strict=True):
        if count < 0:
            arrays.append(None)
            continue
        dtype = _dtype(kind)
        if count:
            at += -at % dtype.itemsize
        arrays.append(np.frombuffer(record, dtype=dtype, count=count, offset=at))
        at += count * dtype.itemsize
    wide = n_text < 0
    if wide:
        n_text = -n_text - 1
    text = record[at : at + n_text].decode(_WIDE if wide else "utf-8", "surrogatepass")
    at += n_text
    joined = record[at : at + n_numbers].decode("utf-8", "surrogatepass")
    signature, bands, shingles, vocab, index = arrays
    assert signature is not None and bands is not None and vocab is not None
    return Sketch(
        text,
        shingles,
        n_units,
        signature,
        bands,
        vocab,
        frozenset(joined.split("\0")) if joined else frozenset(),
        index,
    )


class _Writer:
    """Writes a shelf's buffers to its file, in order, in a thread of its own, while the run
    goes on deciding (a 4x hkcnews run with ``--sketch-memory 0`` spent some 8 s of its main
    thread in the writes, filling the page cache). A buffer waits, readable (:meth:`find`),
    until it is written; past :attr:`MOST` bytes waiting, the next :meth:`put` waits for the
    writes, so memory stays bounded (a settle puts a chunk's sketches at once, some 16 MB of
    long articles: about two such wait at most). A write that fails stops the writing; its
    error is :attr:`error`, and the buffers stay readable."""

    #: the most bytes waiting to be written
    MOST = 16 << 20

    def __init__(self, fd: int) -> None:
        self._fd = fd
        # a plain lock (entered in C: no signal cuts a ``with`` of it half-way), and the
        # condition the main thread waits on, in shielded sections only
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._pending: deque[tuple[int, bytearray]] = deque()  # (offset, bytes), file order
        self._waiting = 0
        self._closing = False
        self.error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name="neardup-shelf", daemon=True)
        self._thread.start()

    def put(self, at: int, buffer: bytearray) -> None:
        """Write ``buffer`` at offset ``at``, after those put before (waiting first while
        more than :attr:`MOST` bytes put before wait)."""
        with shielded(), self._changed:
            self._pending.append((at, buffer))
            self._waiting += len(buffer)
            self._changed.notify_all()
            while self._waiting - len(buffer) > self.MOST and self.error is None:
                self._changed.wait()

    def flush(self) -> None:
        """Wait until every buffer put is written (or a write failed)."""
        with shielded(), self._changed:
            while self._pending and self.error is None:
                self._changed.wait()

    def find(self, at: int, size: int) -> bytearray | None:
        """A copy of the ``size`` bytes at ``at``, if they wait to be written."""
        with self._lock:
            if not self._pending or at < self._pending[0][0]:
                return None
            for start, buffer in self._pending:
                if at < start + len(buffer):
                    return bytearray(memoryview(buffer)[at - start : at - start + size])
        return None

    def _run(self) -> None:
        fd = self._fd
        while True:
            with self._changed:
                while not self._pending and not self._closing:
                    self._changed.wait()
                if self._closing:
                    return
                at, buffer = self._pending[0]
            try:
                view, done = memoryview(buffer), 0
                while done < len(view):
                    done += os.pwrite(fd, view[done:], at + done)
            except OSError as e:
                with self._changed:
                    self.error = e
                    self._changed.notify_all()
                return
            with self._changed:
                self._pending.popleft()
                self._waiting -= len(buffer)
                self._changed.notify_all()

    def close(self) -> None:
        """Stop writing (after the write under way, if any: the file is let go next)."""
        with shielded(), self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join()


class Shelf:
    """Sketches by document position (as a list's ``[i]``, ``[i] = sketch``, ``extend`` and
    ``len``; :meth:`grow` adds positions to set later), of which those of decided documents
    go to a file, oldest first, while more than ``budget`` bytes of sketches are in memory
    (:meth:`settle`; but for sketches under :attr:`LEAST_ON_FILE` bytes); ``budget=None``:
    all in memory. :meth:`alias` makes a position read
    another's sketch (a byte-identical copy's), which is then written once. A write or a
    read that fails ends the run (:class:`~neardup.errors.OutputError`, saying what to do)."""

    #: sketches read back kept in memory, at most this share of the budget (and at least
    #: CACHE_LEAST bytes)
    CACHE_SHARE = 8
    CACHE_LEAST = 4 << 20
    #: a sketch smaller than this stays in memory, with arrays of its own (not views that
    #: keep its chunk's arrays): on the file it would save little (its Python objects stay)
    #: and cost a read each time it is a candidate (a million tiny records all on the
    #: file: 66 → 86 CPU s, and no less memory)
    LEAST_ON_FILE = 2048

    def __init__(self, budget: int | None, directory: str | None = None) -> None:
        self.budget = budget
        self._directory = directory
        self._slots: list[Sketch | int | None] = []  # a sketch, an alias's position, or None
        self._held = array("q")  # bytes counted for each slot's sketch in memory (else 0)
        self._held_total = 0
        self._at = array("q")  # where each sketch on the file starts (or -1), and its size
        self._size = array("q")
        # the file: an unbuffered FileIO (a wrapper of one where TemporaryFile is not it)
        self._file: Any = None
        self._writer: _Writer | None = None  # what writes to it
        self._end = 0
        self._next = 0  # the first position not yet looked at for the file
        self._cache: OrderedDict[int, Sketch] = OrderedDict()
        self._cached = 0
        self._cache_most = max(self.CACHE_LEAST, (budget or 0) // self.CACHE_SHARE)
        self.on_file = 0
        self.read_back = 0
        #: the file's folder is held in memory (:func:`memory_backed`): it saves no memory
        self.in_memory = False

    @property
    def folder(self) -> str:
        """Where the file is (or would be)."""
        return self._directory or tempfile.gettempdir()

    def __len__(self) -> int:
        return len(self._slots)

    def __bool__(self) -> bool:
        return bool(self._slots)

    def extend(self, sketches: Iterable[Sketch]) -> None:
        """Add positions holding ``sketches``."""
        for sketch in sketches:
            self.grow(len(self._slots) + 1, sketch)
            self[len(self._slots) - 1] = sketch

    def grow(self, size: int, filler: Sketch) -> None:
        """Add positions up to ``size``, holding ``filler`` (not counted: a sketch of another
        position) until each is set."""
        more = size - len(self._slots)
        if more > 0:
            self._slots.extend([filler] * more)
            self._held.extend([0] * more)
            self._at.extend([-1] * more)
            self._size.extend([0] * more)

    def __setitem__(self, i: int, sketch: Sketch) -> None:
        """Position ``i`` holds ``sketch`` (counted toward the budget)."""
        if self._at[i] >= 0:
            raise ValueError(f"sketch {i} is on the file already")
        self._slots[i] = sketch
        size = sketch_bytes(sketch)
        self._held_total += size - self._held[i]
        self._held[i] = size

    def alias(self, i: int, first: int) -> None:
        """Position ``i`` reads ``first``'s sketch (whether in memory or on the file)."""
        self._held_total -= self._held[i]
        self._held[i] = 0
        self._slots[i] = first

    def __getitem__(self, i: int) -> Sketch:
        slot = self._slots[i]
        if isinstance(slot, Sketch):
            return slot
        if isinstance(slot, int):
            return self[slot]
        return self._read(i)

    def settle(self, decided: int) -> None:
        """The documents before ``decided`` are decided: while more than the budget is in
        memory, the oldest of their sketches go to the file (in one write)."""
        if self.budget is None or self._held_total <= self.budget:
            return
        out = bytearray()
        i, slots, held, at, size = self._next, self._slots, self._held, self._at, self._size
        least = self.LEAST_ON_FILE
        while self._held_total > self.budget and i < decided:
            slot = slots[i]
            if 0 < held[i] < least and isinstance(slot, Sketch):
                slots[i] = _detached(slot)  # not holding its chunk's arrays in memory
            elif held[i] and isinstance(slot, Sketch):
                start = len(out)
                _encode(slot, out)
                at[i], size[i] = self._end + start, len(out) - start
                self._held_total -= held[i]
                held[i] = 0
                slots[i] = None
                self.on_file += 1
            i += 1
        self._next = i
        if out:
            try:
                if self._file is None:
                    self._file = tempfile.TemporaryFile(  # noqa: SIM115 (closed by close)
                        prefix="neardup-sketches-", dir=self._directory, buffering=0
                    )
                    self._writer = _Writer(self._file.fileno())
                    self.in_memory = memory_backed(self.folder)
            except OSError as e:
                raise self._unwritten(e) from None
            assert self._writer is not None
            self._writer.put(self._end, out)
            self._end += len(out)
            if self._writer.error is not None:  # (found by this write, or an earlier one)
                raise self._unwritten(self._writer.error) from None

    def _unwritten(self, e: OSError) -> OutputError:
        room = " (no room left there)" if e.errno == errno.ENOSPC else ""
        return OutputError(
            f"cannot write the sketches past the memory budget to a temporary file in "
            f"{self.folder}{room}: {e.strerror or e}; set TMPDIR to a folder with room, or "
            f"give them more memory (--sketch-memory)"
        )

    def _read(self, i: int) -> Sketch:
        cached = self._cache.get(i)
        if cached is not None:
            self._cache.move_to_end(i)
            return cached
        if self._file is None or self._at[i] < 0:
            raise IndexError(f"no sketch at {i}")
        at, size = self._at[i], self._size[i]
        assert self._writer is not None
        found = self._writer.find(at, size)
        if found is not None:  # not yet written
            record = found
        else:
            record = bytearray(size)
            view = memoryview(record)
            try:
                fd, done = self._file.fileno(), 0
                while done < size:
                    got = os.preadv(fd, [view[done:]], at + done)
                    if not got:
                        raise OSError(errno.EIO, "the file ended early")
                    done += got
            except OSError as e:
                raise OutputError(
                    f"cannot read back sketch {i} from the run's temporary file: {e.strerror or e}"
                ) from None
        sketch = _decode(record)
        self.read_back += 1
        self._cache[i] = sketch
        self._cached += len(record)
        while self._cached > self._cache_most and len(self._cache) > 1:
            old, _ = self._cache.popitem(last=False)
            self._cached -= self._size[old]
        return sketch

    def close(self) -> None:
        """Let go of every sketch and of the file."""
        self._slots = []
        self._cache.clear()
        self._held_total = self._cached = 0
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        file, self._file = self._file, None
        if file is not None:
            file.close()
