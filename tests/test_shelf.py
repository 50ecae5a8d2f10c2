"""The batch run's sketches past its memory budget: written to a temporary file, read back
the same, and the same decisions as a run that keeps them all in memory."""

from __future__ import annotations

import errno
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import dedup_batch
from neardup import shelf as shelf_module
from neardup.engine import DedupConfig, make_sketch, make_sketches
from neardup.engine.codec import pack, unpack
from neardup.engine.sketches import Sketch
from neardup.errors import ConfigError, OutputError
from neardup.shelf import (
    Shelf,
    _decode,
    _encode,
    default_budget,
    memory_backed,
    sketch_bytes,
)

from .run.test_cli_dedup import refused, run, write_lines
from .test_deduper import corpus, fields

CFG = DedupConfig()
_PARTS = ("signature", "bands", "_shingles", "vocab", "vocab_index")


def assert_same(a: Sketch, b: Sketch) -> None:
    """Every part of two sketches equal, the arrays of the same types."""
    assert (a.text, a.n_units, a.numbers) == (b.text, b.n_units, b.numbers)
    for part in _PARTS:
        x, y = getattr(a, part), getattr(b, part)
        assert (x is None) == (y is None), part
        if x is not None:
            assert x.dtype == y.dtype, part
            assert x.tolist() == y.tolist(), part


def round_trip(sketch: Sketch) -> Sketch:
    out = bytearray()
    _encode(sketch, out)
    assert len(out) % 8 == 0
    return _decode(bytearray(out))


TEXTS = st.text(
    alphabet=st.sampled_from(
        list("北京地铁今天开通运营全长二十公里。，") + list("The quick fox 2024-05-01 42.5% ,.\n>")
        + ["\U00020000", "é", "\u3000"]
    ),
    max_size=300,
)  # fmt: skip


@given(st.lists(TEXTS, min_size=1, max_size=6))
@settings(max_examples=60, deadline=None)
def test_a_sketch_read_back_is_the_sketch_written(texts: list[str]) -> None:
    """Made whole (shingles and band keys) or as a batch run keeps them (vocabulary index
    only, no band keys, short texts without a signature), every part comes back equal, the
    arrays of the same dtype, writable and aligned (as the compiled kernels take them)."""
    whole = make_sketches(texts, CFG)
    kept = unpack(
        pack(whole, shingles=False), bands=False, shingles=False, signatures_from=CFG.short_units
    )
    for sketch in [*whole, *kept]:
        back = round_trip(sketch)
        assert_same(sketch, back)
        for part in _PARTS:
            a = getattr(back, part)
            if a is not None and len(a):
                assert a.flags.writeable and a.flags.aligned


def test_a_text_with_a_lone_surrogate_comes_back() -> None:
    sketch = make_sketch("北京地铁\ud800今天开通运营，全长二十公里。", CFG)
    assert_same(sketch, round_trip(sketch))


def sketches(n: int) -> list[Sketch]:
    """``n`` sketches large enough to go to the file."""
    made = make_sketches(
        [f"第{k}篇：北京地铁{k}号线今天开通运营，全长{k}公里。" * 12 for k in range(n)], CFG
    )
    assert all(sketch_bytes(s) >= Shelf.LEAST_ON_FILE for s in made)
    return made


def test_a_small_sketch_stays_in_memory_with_arrays_of_its_own() -> None:
    """Not views into a worker's chunk, which would keep the chunk's arrays in memory."""
    chunk = make_sketches(["第1楼", "第2楼：北京地铁今天开通运营。" * 20], CFG)
    small, large = unpack(pack(chunk, shingles=False), bands=False, shingles=False)
    assert sketch_bytes(small) < Shelf.LEAST_ON_FILE <= sketch_bytes(large)
    assert small.vocab.base is not None  # a view into the chunk's vocabularies
    shelf = Shelf(budget=0)
    shelf.extend([small, large])
    shelf.settle(2)
    assert shelf.on_file == 1 and shelf.read_back == 0
    kept = shelf[0]
    assert_same(kept, small)
    assert all(getattr(kept, p) is None or getattr(kept, p).base is None for p in _PARTS)


def test_the_oldest_decided_sketches_go_to_the_file_past_the_budget(tmp_path: Path) -> None:
    made = sketches(10)
    each = sketch_bytes(made[0])
    shelf = Shelf(budget=3 * each + each // 2, directory=str(tmp_path))
    shelf.extend(made)
    shelf.settle(4)  # only decided documents go, oldest first
    assert shelf.on_file == 4
    shelf.settle(10)  # until what stays in memory is within the budget
    assert shelf.on_file == 7
    assert [s.text for s in (shelf[i] for i in range(10))] == [s.text for s in made]
    assert shelf.read_back == 7
    assert_same(shelf[0], made[0])
    assert shelf.read_back == 7  # from the cache
    assert os.listdir(tmp_path) == []  # the file has no name: nothing is left behind
    with pytest.raises(ValueError, match="on the file"):
        shelf[0] = made[1]
    shelf.close()


def test_sketches_waiting_to_be_written_are_read_from_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The file is written in a thread of its own: a sketch whose write has not happened yet
    is read from what waits to be written, and from the file once written; past MOST bytes
    waiting, a settle waits for the writes."""
    real, go = os.pwrite, threading.Event()
    started = threading.Event()

    def slow(fd: int, data: Any, at: int) -> int:
        started.set()
        go.wait(10)
        return real(fd, data, at)

    monkeypatch.setattr(shelf_module.os, "pwrite", slow)
    made = sketches(6)
    shelf = Shelf(budget=0)
    shelf.extend(made)
    shelf.settle(3)  # put, not yet written: the writer waits on go
    assert started.wait(10)
    writer = shelf._writer
    assert writer is not None and writer._waiting > 0
    for i in range(3):
        assert_same(shelf[i], made[i])
    assert shelf.read_back == 3
    monkeypatch.setattr(shelf_module._Writer, "MOST", 0)
    threading.Timer(0.2, go.set).start()
    shelf.settle(6)  # waits for the first write (past MOST), not for its own
    assert len(writer._pending) <= 1 and go.is_set()
    writer.flush()
    assert writer._waiting == 0
    shelf._cache.clear()
    for i in range(6):
        assert_same(shelf[i], made[i])
    shelf.close()
    assert not writer._thread.is_alive()


def test_an_alias_reads_its_first_and_is_not_written() -> None:
    made = sketches(3)
    shelf = Shelf(budget=0)
    shelf.grow(4, made[0])  # fillers: not counted, never written
    shelf[0], shelf[1], shelf[3] = made
    shelf.alias(2, 0)  # a byte-identical copy of the first
    shelf.settle(4)
    assert shelf.on_file == 3
    assert shelf[2] is shelf[0]
    assert_same(shelf[2], made[0])
    shelf.close()


def test_no_budget_keeps_everything_in_memory() -> None:
    made = sketches(5)
    shelf = Shelf(budget=None)
    shelf.extend(made)
    shelf.settle(5)
    assert shelf.on_file == 0 and all(shelf[i] is made[i] for i in range(5))


def test_the_cache_of_sketches_read_back_is_bounded() -> None:
    made = sketches(50)
    shelf = Shelf(budget=0)
    shelf.CACHE_LEAST = 4 * sketch_bytes(made[0])
    shelf._cache_most = shelf.CACHE_LEAST
    shelf.extend(made)
    shelf.settle(50)
    for i in range(50):
        assert shelf[i].text == made[i].text
    assert 1 <= len(shelf._cache) <= 8
    shelf.close()


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(ConfigError, match="sketch_memory must be 0 bytes or more"):
        dedup_batch(["a"], ["text"], sketch_memory=-1)


def test_the_default_budget_is_a_share_of_the_memory() -> None:
    assert 64 << 20 <= default_budget() < 1 << 50


def test_a_folder_it_cannot_write_is_an_error_that_says_what_to_do(tmp_path: Path) -> None:
    shelf = Shelf(budget=0, directory=str(tmp_path / "missing"))
    shelf.extend(sketches(2))
    with pytest.raises(OutputError, match=r"TMPDIR.*--sketch-memory"):
        shelf.settle(2)


def test_a_full_disk_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails (in the writer's thread) ends the run at the next settle."""
    shelf = Shelf(budget=0)
    shelf.extend(sketches(3))
    shelf.settle(1)  # the file is made, and its first sketch written
    first = shelf[0]

    def full(*args: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shelf_module.os, "pwrite", full)
    shelf.settle(2)  # put: the writer's thread finds the disk full
    assert shelf._writer is not None
    shelf._writer.flush()
    assert shelf[1].text == sketches(3)[1].text  # what was not written is read all the same
    assert shelf[0].text == first.text
    with pytest.raises(OutputError, match="no room left there"):
        shelf.settle(3)
    shelf.close()


def test_a_folder_held_in_memory_is_told_from_one_on_disk(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "/dev/vda / ext4 rw 0 0\n"
        "tmpfs /tmp tmpfs rw 0 0\n"
        "/dev/vdb /tmp/disk ext4 rw 0 0\n"
        "tmpfs /my\\040files tmpfs rw 0 0\n"
    )
    assert memory_backed("/tmp/x", str(mounts))
    assert not memory_backed("/tmp/disk/x", str(mounts))  # the longest mount point wins
    assert not memory_backed("/tmpx", str(mounts))
    assert not memory_backed("/var/tmp", str(mounts))
    assert memory_backed("/my files/a", str(mounts))
    assert not memory_backed("/tmp/x", str(tmp_path / "none"))  # cannot tell: no


SHM = "/dev/shm"


@pytest.mark.skipif(not memory_backed(SHM), reason="no tmpfs at /dev/shm (not Linux)")
def test_the_cli_says_when_the_file_saved_no_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", SHM)  # TMPDIR=/dev/shm
    lines = [json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(corpus(1, "all")[1])]
    src = write_lines(tmp_path / "in.jsonl", lines)
    argv = ["dedup", str(src), "-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c")]
    status, _, err = run([*argv, "--sketch-memory", "0"], capsys)
    assert status == 0, err
    assert "/dev/shm is held in memory (tmpfs), so the file saved none" in " ".join(err.split())


def decide(ids: list[str], texts: list[str], **kw: Any) -> list[tuple[object, ...]]:
    return [(*fields(d), d.extends, d.evidence) for d in dedup_batch(ids, texts, **kw).decisions]


@pytest.mark.parametrize("keep", ["first", "longest"])
def test_a_batch_run_past_its_budget_decides_as_one_within_it(keep: str) -> None:
    """Every sketch written to the file and read back (a budget of 0, chunks of 7): the same
    decisions, evidence and kept documents as with every sketch in memory."""
    ids: list[str] = []
    texts: list[str] = []
    for seed in range(4):
        more_ids, more_texts = corpus(seed, "all")
        ids += more_ids
        texts += more_texts
    ids += ["again-0", "again-1"]
    texts += [texts[0], texts[3]]  # byte-identical copies: aliases of their first
    kw: dict[str, Any] = {"keep": keep, "explain": True, "chunk": 7}
    assert decide(ids, texts, sketch_memory=0, **kw) == decide(
        ids, texts, sketch_memory=1 << 40, **kw
    )
    assert dedup_batch(ids, texts, sketch_memory=0, **kw).sketches_on_file > len(ids) // 2


def test_the_cli_says_how_many_sketches_went_to_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(corpus(1, "all")[1])]
    src = write_lines(tmp_path / "in.jsonl", lines)
    outs = {}
    for memory in ("0", "1G"):
        out, clusters = tmp_path / f"u-{memory}.jsonl", tmp_path / f"c-{memory}.jsonl"
        argv = ["dedup", str(src), "-o", str(out), "--clusters", str(clusters)]
        status, _, err = run([*argv, "--sketch-memory", memory], capsys)
        assert status == 0, err
        assert ("kept in a temporary file" in err) == (memory == "0")
        outs[memory] = (out.read_bytes(), clusters.read_bytes())
    assert outs["0"] == outs["1G"]


@pytest.mark.parametrize(
    ("more", "says"),
    [
        (["--sketch-memory", "lots"], "not a size"),
        (["--sketch-memory", "1G", "--stream"], "drop it with --stream"),
    ],
)
def test_the_cli_refuses_a_sketch_memory_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], more: list[str], says: str
) -> None:
    assert says in refused(tmp_path, capsys, *more)


def test_np_is_numpy() -> None:  # (the arrays read back are numpy's own type)
    sketch = round_trip(sketches(1)[0])
    assert type(sketch.vocab) is np.ndarray
