"""The decider of ``neardup serve --workers N``: the workers prepare documents and one
process decides what they sent meanwhile together. Its loop, run in a thread here against a
real SQLite file and real Unix sockets: asks sent together make the decisions adding them one
after the other makes; an ask whose documents fail for anything but the store is answered
its own error while the others are decided; a store failure is the worker's 503; a decider
that is gone is a 503 too. And in a real service: a decider killed is replaced."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from multiprocessing import Pipe
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
import httpx

from neardup import Deduper
from neardup.deduper import Prepared
from neardup.errors import InputError, StoreError
from neardup.service import _decider
from neardup.service._decider import Decider, DeciderGone, _Loop
from neardup.service._errors import ServiceError, StoreDamaged
from tests.service.test_service_serve import serving
from tests.service.test_service_workers import _workers

_STORY = "港府今日公布新一轮防疫措施，食肆晚市堂食时间延长至晚上十时。"


def _docs(prefix: str, n: int) -> list[dict[str, object]]:
    """``n`` documents: a few stories, each reprinted with a line of its own."""
    return [
        {
            "id": f"{prefix}{k}",
            "text": f"第{k % 3}则。" + _STORY * (2 + k % 3) + f"（{prefix}{k}转载）",
        }
        for k in range(n)
    ]


@contextlib.contextmanager
def _running(dd: Deduper) -> Iterator[tuple[str, _Loop]]:
    """The decider's loop on ``dd`` in a thread, listening on a socket in a short path."""
    folder = tempfile.mkdtemp(prefix="nd-", dir="/tmp")
    address = os.path.join(folder, "d.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(8)
    loop = _Loop(dd, listener, 256)
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    try:
        yield address, loop
    finally:
        loop.stopping = True  # it ends once the clients (closed by the test) have gone
        thread.join(10)
        for conn in list(loop.conns):  # a client left open: the loop has stopped waiting
            with contextlib.suppress(OSError):
                conn.close()
        listener.close()
        shutil.rmtree(folder, ignore_errors=True)


def _fields(decisions: list[Any]) -> list[tuple[object, ...]]:
    return [
        (d.id, d.is_duplicate, d.duplicate_of, d.cluster, round(d.score, 9), d.extends)
        for d in decisions
    ]


def test_asks_sent_together_decide_as_one_batch(tmp_path: Path) -> None:
    """Two workers' batches waiting together are decided in one call, in the order they
    came: the decisions of adding them one after the other, and both are stored."""
    a, b = _docs("a", 5), _docs("b", 4)
    with Deduper(store=f"sqlite:///{tmp_path / 'one.db'}") as one:
        expected = one.check_and_add_many(a + b)
    url = f"sqlite:///{tmp_path / 'crawl.db'}"
    with (
        Deduper(store=url) as dd,
        _running(dd) as (addr, _),
        Deduper(store=url) as w1,
        Deduper(store=url) as w2,
    ):
        c1, c2 = Decider(addr, 30), Decider(addr, 30)
        seen_before = dd.retries
        first = c1.send(w1, "add", a)
        second = c2.send(w2, "add", b)
        got = c1.receive(first) + c2.receive(second)
        assert _fields(got) == _fields(expected)
        assert any(d.is_duplicate for d in got) and any(not d.is_duplicate for d in got)
        assert dd.retries == seen_before
        assert set(dd.store.entries([str(d["id"]) for d in a + b])) == {str(d["id"]) for d in a + b}
        # a check adds nothing
        [checked] = c1.ask(w1, "check", [{"id": "x", "text": str(a[0]["text"])}])
        assert checked.is_duplicate and not dd.store.entries(["x"])
        c1.close()
        c2.close()


def test_a_bad_document_is_refused_before_it_is_sent(tmp_path: Path) -> None:
    """A document that is not valid fails where it is prepared, with the InputError naming
    it; nothing reaches the decider."""
    url = f"sqlite:///{tmp_path / 'crawl.db'}"
    with Deduper(store=url) as dd, _running(dd) as (addr, _), Deduper(store=url) as w:
        c = Decider(addr, 30)
        with pytest.raises(InputError, match="document 'b1': text must be a str"):
            c.send(w, "add", [{"id": "b0", "text": "正文。"}, {"id": "b1", "text": 3}])
        assert not dd.store.entries(["b0"])
        c.close()


class _Faulty(Deduper):
    """A Deduper that fails on a document "boom": a bug (ValueError), or with "store" in
    its text a store failure."""

    def decide_prepared(self, prepared: Prepared, *, add: bool) -> Any:
        for it in prepared.items:
            if it.id == "boom":
                if "store" in it.text:
                    raise StoreError("store sqlite:///x: database is locked")
                raise ValueError("a bug")
        return super().decide_prepared(prepared, add=add)


def _group(loop: _Loop, w: Deduper, *asks: list[dict[str, object]]) -> list[Any]:
    """``asks`` decided by ``loop`` as one group (as if they had come together); what each
    got back (its decisions, or its error)."""
    pairs = [Pipe() for _ in asks]
    group = [
        (theirs, "add", w.prepare(docs)) for (theirs, _), docs in zip(pairs, asks, strict=True)
    ]
    loop._decide(group)  # type: ignore[arg-type]
    out: list[Any] = []
    for _, mine in pairs:
        reply = mine.recv()
        if reply[0] == "ok":
            out.append(reply[1])
        elif reply[0] == "answer":
            out.append(_decider._answer(*reply[1:]))
        else:
            out.append(reply[1])
    return out


def test_an_ask_that_fails_is_answered_alone(tmp_path: Path) -> None:
    """A group that fails for anything but the store is decided again ask by ask: the ask
    at fault gets its error, the others their decisions. A store failure is the 503 the
    worker answers, for every ask of the group."""
    url = f"sqlite:///{tmp_path / 'crawl.db'}"
    with _Faulty(store=url) as dd, Deduper(store=url) as w, socket.socket() as unused:
        loop = _Loop(dd, unused, 256)
        good, bad = _docs("g", 3), [{"id": "boom", "text": "一段正文。"}]
        got = _group(loop, w, good, bad, _docs("k", 1))
        assert isinstance(got[1], ValueError) and str(got[1]) == "a bug"
        assert [d.id for d in got[0]] == ["g0", "g1", "g2"] and [d.id for d in got[2]] == ["k0"]
        assert set(dd.store.entries(["g0", "g1", "g2", "k0", "boom"])) == {"g0", "g1", "g2", "k0"}
        got = _group(loop, w, _docs("h", 2), [{"id": "boom", "text": "store 正文。"}])
        for answer in got:
            assert isinstance(answer, ServiceError) and answer.status == 503
            assert answer.code == "unavailable" and answer.headers == {"Retry-After": "5"}
        assert not dd.store.entries(["h0", "h1"])
        # decided ask by ask, the store failing one of them: those after it get its 503
        got = _group(loop, w, bad, [{"id": "boom", "text": "store 正文。"}], _docs("n", 1))
        assert isinstance(got[0], ValueError)
        assert isinstance(got[1], ServiceError) and "before this one" not in got[1].message
        assert isinstance(got[2], ServiceError) and got[2].message.endswith("before this one)")
        assert not dd.store.entries(["n0"])
    # a damaged store's answer crosses as one: the worker then stops using the store
    damaged = _decider._answer(*_decider._answer_fields(StoreDamaged("file is not a database"))[1:])
    assert isinstance(damaged, StoreDamaged) and damaged.status == 503
    assert damaged.message == StoreDamaged("file is not a database").message


class _Slow(_Faulty):
    """A store failure that takes a moment (a store timing out)."""

    def decide_prepared(self, prepared: Prepared, *, add: bool) -> Any:
        if any(it.id == "boom" for it in prepared.items):
            time.sleep(0.5)
        return super().decide_prepared(prepared, add=add)


def test_the_asks_behind_a_store_failure_get_it_at_once(tmp_path: Path) -> None:
    """Asks that came while the store failed another are answered its 503 at once, not
    each after a failure of its own (a hung store costs one timeout a wave of requests, as
    in a worker's line); the asks after that wave are decided."""
    url = f"sqlite:///{tmp_path / 'crawl.db'}"
    with _Slow(store=url) as dd, _running(dd) as (addr, _), Deduper(store=url) as w:
        clients = [Decider(addr, 30) for _ in range(3)]
        first = clients[0].send(w, "add", [{"id": "boom", "text": "store 正文。"}])
        time.sleep(0.2)  # the decider is failing it
        later = [c.send(w, "add", _docs(f"l{k}", 2)) for k, c in enumerate(clients[1:])]
        with pytest.raises(ServiceError) as failed:
            clients[0].receive(first)
        assert failed.value.code == "unavailable" and "before this one" not in failed.value.message
        for c, conn in zip(clients[1:], later, strict=True):
            with pytest.raises(ServiceError) as behind:
                c.receive(conn)
            assert behind.value.status == 503
            assert behind.value.message.endswith("(it failed the request before this one)")
        assert not dd.store.entries(["l00", "l01", "l10", "l11"])
        [ok] = clients[1].ask(w, "add", _docs("m", 1))
        assert not ok.is_duplicate and dd.store.entries(["m0"])
        for c in clients:
            c.close()


class _NoRoom:
    """A listening socket whose accept fails as a process out of file descriptors does."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def fileno(self) -> int:
        return self.sock.fileno()

    def accept(self) -> Any:
        raise OSError(24, "Too many open files")


def test_a_connection_that_cannot_be_taken_waits_for_the_next_round(tmp_path: Path) -> None:
    """Out of file descriptors, a connection waiting to be taken leaves the listener
    readable: gathering what came meanwhile returns (the loop's next round tries again)
    instead of spinning on it."""
    address = tempfile.mktemp(prefix="nd-", suffix=".sock", dir="/tmp")
    with socket.socket(socket.AF_UNIX) as listener, socket.socket(socket.AF_UNIX) as client:
        listener.bind(address)
        listener.listen(1)
        client.connect(address)
        with Deduper(store=f"sqlite:///{tmp_path / 'crawl.db'}") as dd:
            loop = _Loop(dd, _NoRoom(listener), 256)  # type: ignore[arg-type]
            done: list[object] = []
            thread = threading.Thread(target=lambda: done.append(loop._waiting()), daemon=True)
            thread.start()
            thread.join(10)
            assert done == [[]] and not loop.conns
    os.unlink(address)


def test_a_decider_that_is_gone_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No decider listening: DeciderGone after the connection wait, not a hang."""
    monkeypatch.setattr(_decider, "_CONNECT_WAIT", 0.2)
    with Deduper(store=f"sqlite:///{tmp_path / 'crawl.db'}") as w:
        c = Decider(str(tmp_path / "none.sock"), 5)
        with pytest.raises(DeciderGone, match="did not take a connection"):
            c.ask(w, "add", _docs("a", 1))


def test_a_decider_that_dies_is_replaced(tmp_path: Path) -> None:
    """kill -9 of the decider: the service says so and starts another, and the workers,
    whose kept connections led to the one that died, send on new ones: the requests after
    are answered (never a 500), each story kept once."""
    with serving("--db", str(tmp_path / "crawl.db"), "--workers", "2") as s:
        workers = set(_workers(s.log, 2))
        for k in range(4):  # every worker keeps a connection to the decider
            r = httpx.post(s.url + "v1/documents", json={"id": f"d{k}", "text": _STORY})
            assert r.status_code == 200, r.text
        deciders = [p for p in _spawned(s.proc.pid) if p not in workers]
        assert len(deciders) == 1
        os.kill(deciders[0], signal.SIGKILL)
        for _ in range(200):
            if f"decider [{deciders[0]}] ended (killed by SIGKILL)" in "".join(s.log):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the decider's end was not said:\n" + "".join(s.log))
        for k in range(4, 10):
            r = httpx.post(s.url + "v1/documents", json={"id": f"d{k}", "text": _STORY})
            assert r.status_code == 200, r.text
            assert r.json()["is_duplicate"] and r.json()["duplicate_of"] == "d0"
        assert "Traceback" not in "".join(s.log)


def _spawned(parent: int) -> list[int]:
    """The pids of ``parent``'s children started by multiprocessing's spawn (its workers
    and its decider; not its resource tracker)."""
    with open(f"/proc/{parent}/task/{parent}/children") as f:
        children = [int(c) for c in f.read().split()]
    out = []
    for pid in children:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"spawn_main" in f.read():
                out.append(pid)
    return out


def test_a_long_tmpdir_still_gives_the_decider_a_socket(tmp_path: Path) -> None:
    """A Unix socket's path has at most 107 bytes: under a TMPDIR longer than that, the
    decider's socket is made under /tmp instead, in a folder only the service's user can
    open (what crosses it is pickled), and the service decides."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    with serving(
        "--db", str(tmp_path / "crawl.db"), "--workers", "2", env={"TMPDIR": str(deep)}
    ) as s:
        _workers(s.log, 2)
        for k in range(4):
            r = httpx.post(s.url + "v1/documents", json={"id": f"d{k}", "text": _STORY})
            assert r.status_code == 200, r.text
        assert [httpx.get(s.url + f"v1/documents/d{k}").json()["is_duplicate"] for k in range(4)] == [
            False, True, True, True,
        ]  # fmt: skip
        folders = [
            f
            for f in Path("/tmp").glob("neardup-serve-*")
            if (f / "decider.sock").exists() and f.stat().st_uid == os.getuid()
        ]
        assert folders and all(f.stat().st_mode & 0o077 == 0 for f in folders)
    assert "Traceback" not in "".join(s.log)
