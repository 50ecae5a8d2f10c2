"""The sketch workers' carrier: packed arrays sent back through shared memory, freed once
read, and the pipe where there is no room for them."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neardup import batch
from neardup.batch import BatchRun, dedup_batch
from neardup.engine import DedupConfig, codec, make_sketches
from neardup.engine.codec import Packed, Shared, free, pack, share, take, unpack
from neardup.engine.sketches import Sketch
from neardup.engine.verify import verify

from ..synth import corpus

ROOT = Path(__file__).resolve().parents[2]
linux_shm = pytest.mark.skipif(not Path(codec.SHM_DIR).is_dir(), reason="no /dev/shm here")


def blocks(pattern: str = "psm_*") -> set[str]:
    """The shared-memory blocks of that name (multiprocessing names its own psm_…; a batch
    run names its nd<pid>_…)."""
    return {p.name for p in Path(codec.SHM_DIR).glob(pattern)}


def packed() -> Packed:
    return pack(make_sketches([text for _, text, _ in corpus(3, 12, 2)], DedupConfig()))


def test_sketches_packed_without_shingles_give_them_back_and_verify_alike() -> None:
    """What a batch run keeps of each document: no shingle codes, rebuilt from the
    vocabulary and its index when read, with the same verdicts."""
    cfg = DedupConfig()
    sketches = make_sketches([text for _, text, _ in corpus(4, 20, 3)], cfg)
    light = unpack(pack(sketches, shingles=False), bands=False, shingles=False)
    assert len(pack(sketches, shingles=False).shingles) == 0
    for full, compact in zip(sketches, light, strict=True):
        assert compact._shingles is None
        assert compact.shingles.dtype == full.shingles.dtype
        assert np.array_equal(compact.shingles, full.shingles)
    for i in range(1, len(sketches)):
        for j in range(i):
            assert verify(light[i], light[j], cfg) == verify(sketches[i], sketches[j], cfg)
    with pytest.raises(ValueError, match="without their shingles"):
        unpack(pack(sketches, shingles=False))


def test_short_texts_unpacked_without_signatures_verify_alike() -> None:
    """A batch run keeps no signature of a text shorter than ``short_units``: verification
    compares such a text as a title and never reads one, so every verdict is the same."""
    cfg = DedupConfig()
    texts = [text for _, text, _ in corpus(4, 12, 3)]
    texts += [t[: 3 + i % 14] for i, t in enumerate(texts)]  # titles, counters, snippets
    texts += ["第 12 楼", "第 13 楼", "reply #12", "reply #12!", "good morning"]
    sketches = make_sketches(texts, cfg)
    kept = unpack(pack(sketches), signatures_from=cfg.short_units)
    short = [sk.n_units < cfg.short_units for sk in sketches]
    assert any(short) and not all(short)
    for full, light, is_short in zip(sketches, kept, short, strict=True):
        assert len(light.signature) == (0 if is_short else len(full.signature))
        if not is_short:
            assert np.array_equal(light.signature, full.signature)
    for i in range(1, len(sketches)):
        for j in range(i):
            assert verify(kept[i], kept[j], cfg) == verify(sketches[i], sketches[j], cfg)


def test_a_sketch_needs_its_shingles_or_their_index() -> None:
    sk = make_sketches(["北京地铁十九号线今天开通运营，全长二十二公里。"], DedupConfig())[0]
    with pytest.raises(ValueError, match="vocabulary index"):
        Sketch(sk.text, None, sk.n_units, sk.signature, sk.bands, sk.vocab, sk.numbers, None)


def _same(want: Packed, got: Packed) -> None:
    """Every field of ``got`` is ``want``'s."""
    for field in Packed._fields:
        a, b = getattr(want, field), getattr(got, field)
        if isinstance(a, np.ndarray):
            assert b.dtype == a.dtype and np.array_equal(b, a), field
        else:
            assert b == a, field


@linux_shm
def test_share_then_take_gives_the_same_arrays_and_frees_the_block() -> None:
    p = packed()
    s = share(p)
    assert isinstance(s, Shared) and s.name.lstrip("/") in blocks()
    _same(p, take(s))
    assert s.name.lstrip("/") not in blocks()
    named = share(p, "nd_test_block")
    assert isinstance(named, Shared) and "nd_test_block" in blocks("nd_*")
    free("nd_test_block")
    free("nd_test_block")  # freeing what is gone does nothing
    assert "nd_test_block" not in blocks("nd_*")


def _size(name: str) -> int:
    return os.stat(os.path.join(codec.SHM_DIR, name)).st_size


@linux_shm
def test_a_chunk_of_no_arrays_comes_back_too() -> None:
    """Arrays of no bytes at all still make a block (of the least size) and come back."""
    p = packed()
    empty = p._replace(
        texts=[], n_units=[], numbers=[],
        **{f: getattr(p, f)[:0] for f in codec._ARRAYS},
    )  # fmt: skip
    s = share(empty, "nd_test_empty")
    try:
        assert isinstance(s, Shared)
        _same(empty, take(s, keep=True))
    finally:
        free("nd_test_empty")


@linux_shm
def test_a_block_kept_is_written_again_and_grows_when_too_small() -> None:
    """A batch run takes each chunk back with ``keep`` and has the next chunk written in the
    same block (its pages are the system's already): what comes back is always the chunk
    written last, a block too small for a chunk is made again larger, and ``free`` frees it
    in the end."""
    large = pack(make_sketches([text for _, text, _ in corpus(8, 60, 3)], DedupConfig()))
    tiny = pack(make_sketches([text for _, text, _ in corpus(2, 2, 1)], DedupConfig()))
    small = packed()
    name = "nd_test_again"
    try:
        first = share(small, name)
        assert isinstance(first, Shared) and first.name == name
        size = _size(name)
        _same(small, take(first, keep=True))
        assert name in blocks("nd_*") and _size(name) == size  # kept, as it was
        again = share(tiny, name)
        assert isinstance(again, Shared) and _size(name) == size  # written in the same one
        _same(tiny, take(again, keep=True))
        bigger = share(large, name)
        assert isinstance(bigger, Shared) and _size(name) > size  # made again, larger
        _same(large, take(bigger, keep=True))
        _same(small, take(share(small, name), keep=True))  # and the small one fits it
    finally:
        free(name)
    assert name not in blocks("nd_*")


def test_without_room_the_arrays_go_through_the_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """A container's /dev/shm is often 64 MB: a block that may not fit is not made (a full
    one would kill the worker with SIGBUS); the packed arrays are returned to be pickled."""
    monkeypatch.setattr(codec, "SHM_ROOM", 10**15)
    p = packed()
    assert share(p) is p and take(p) is p
    monkeypatch.setattr(codec, "SHM_DIR", "/no/such/dir")
    monkeypatch.setattr(codec, "SHM_ROOM", 1)
    assert share(p) is p


SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from synth import corpus
from neardup.batch import BatchRun
from neardup.engine import DedupConfig
rows = corpus(11, 60, 3)
run = BatchRun(DedupConfig(), workers=2, chunk=8, chars=None)
run.MIN_CHUNK = 8
with run:
    for doc_id, text, _ in rows:
        run.add(doc_id, text)
    result = run.finish()
print(sum(d.is_duplicate for d in result.decisions))
try:
    with BatchRun(DedupConfig(), workers=2, chunk=8, chars=None) as run:
        run.MIN_CHUNK = 8
        for doc_id, text, _ in rows:
            run.add(doc_id, text)
        for _, flying in run._sent:
            flying.future.result()  # every chunk sent back, none read
        raise KeyboardInterrupt
except KeyboardInterrupt:
    print("interrupted")
"""


@linux_shm
def test_a_run_and_an_interrupted_run_leave_no_block_and_no_warning() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(tests=str(ROOT / "tests"))],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert out.split()[-1] == "interrupted" and int(out.split()[0]) > 0
    assert err == ""  # no "leaked shared_memory objects" from the resource tracker
    assert not blocks(f"nd{proc.pid}_*")


@linux_shm
def test_a_run_writes_its_chunks_again_in_the_blocks_it_took_back() -> None:
    """A batch run has each chunk sent back in a block an earlier chunk came back in, once
    one is free, and frees them all once every document is decided: the same decisions as
    a run in one process."""
    rows = corpus(12, 40, 3)
    names: list[str] = []
    run = BatchRun(DedupConfig(), workers=2, chunk=8, chars=None)
    run.MIN_CHUNK = 8
    submit = run._submit

    def spy(executor: Any, job: Any) -> Any:
        if isinstance(job, functools.partial) and job.func is batch._sketch_packed:
            names.append(job.args[2])
        return submit(executor, job)

    run._submit = spy  # type: ignore[method-assign]
    run.POLL_EVERY = 1
    with run:
        for doc_id, text, _ in rows:
            run.add(doc_id, text)
            if len(run._sent) > 1:  # as in a longer run: the oldest chunk back meanwhile
                run._sent[0][1].future.result()
        result = run.finish()
        assert not blocks(f"nd{os.getpid()}_*")  # freed once every document is decided
    alone = dedup_batch([r[0] for r in rows], [r[1] for r in rows], workers=1)  # no pool
    assert [d.cluster for d in result.decisions] == [d.cluster for d in alone.decisions]
    assert [d.is_duplicate for d in result.decisions] == [d.is_duplicate for d in alone.decisions]
    assert len(names) > 10 and len(set(names)) < len(names) / 2


def _dead_pid() -> int:
    """The process id of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_sweep_frees_only_what_killed_runs_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block named as a run names them, by a process that is gone, written an hour ago or
    more, is freed; one of a live process, a recent one, and any other file stay."""
    monkeypatch.setattr(codec, "SHM_DIR", str(tmp_path))
    dead, now = _dead_pid(), 1_000_000.0
    old = now - codec.STALE_AFTER
    files = {
        codec.block_name(dead, 0xABC, 12): old,  # left by a killed run: freed
        codec.block_name(dead, 0xABD, 0): old - 86400,  # freed
        codec.block_name(dead, 0xABE, 7): now - 60,  # a minute old: stays
        codec.block_name(os.getpid(), 0xABF, 3): old,  # a live process's: stays
        f"psm_{dead}": old,  # not a run's block: stays
        f"nd{dead}_zz_1": old,  # not a run's name: stays
    }
    for name, mtime in files.items():
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (mtime, mtime))
    assert codec.sweep_stale(now) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(list(files)[2:])
    assert codec.sweep_stale(now) == 0


def test_a_run_with_workers_sweeps_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch run that starts its sketch workers frees what killed runs left first."""
    from neardup.batch import dedup_batch

    monkeypatch.setattr(codec, "SHM_DIR", str(tmp_path))
    stale = tmp_path / codec.block_name(_dead_pid(), 1, 0)
    stale.write_bytes(b"x")
    os.utime(stale, (0, 0))
    ids, texts = zip(*[(i, t) for i, t, _ in corpus(3, 4, 1)], strict=True)
    dedup_batch(list(ids), list(texts), workers=1)
    assert stale.exists()  # no workers, no sweep
    dedup_batch(list(ids), list(texts), workers=2)
    assert not stale.exists()
