"""A real ``neardup serve`` whose store fails under it: a Redis that hangs (SIGSTOP), and a
SQLite file whose middle was overwritten. The service answers at once, and says what is
wrong, instead of stalling or answering 500."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
import httpx

from neardup import Deduper
from neardup.service import create_app
from tests.conftest import start_redis_server
from tests.service.test_service_api import reprint, story
from tests.service.test_service_serve import _run, serving

#: What "answers at once" means here: far below the 60 s a hung Redis used to cost, and
#: loose enough for a loaded CI machine (tests never assert a speed, only an absence of
#: waiting on the store)
BOUND = 15.0


@pytest.fixture
def lone_redis(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A redis-server of the test's own, to be stopped (SIGSTOP) by the test."""
    proc, url = start_redis_server(tmp_path)
    yield url, proc
    proc.send_signal(signal.SIGCONT)
    proc.kill()
    proc.wait()


def _timed(fn: object, *args: object, **kwargs: object) -> tuple[httpx.Response, float]:
    start = time.monotonic()
    r = fn(*args, **kwargs)  # type: ignore[operator]
    return r, time.monotonic() - start


class _Stuck(threading.Thread):
    """A request sent on a thread of its own: its response and how long it took."""

    def __init__(self, method: str, url: str, **kwargs: object) -> None:
        super().__init__(daemon=True)
        self.args_ = (method, url)
        self.kwargs = kwargs
        self.response: httpx.Response | None = None
        self.seconds = 0.0

    def run(self) -> None:
        self.response, self.seconds = _timed(httpx.request, *self.args_, timeout=120, **self.kwargs)


def test_a_hung_redis_does_not_stall_the_service(
    lone_redis: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """With redis-server stopped (SIGSTOP) under three writes: /healthz answers 503 within
    2 s, /metrics, /v1/compare and the page answer 200 at once, the writes fail with 503
    after the default socket timeout (5 s) once, not 60 s each; after SIGCONT all is well."""
    url, proc = lone_redis

    rng = random.Random(40)
    text = story(rng)
    with serving("--store", url) as s:
        httpx.post(s.url + "v1/documents", json={"id": "a", "text": text}).raise_for_status()
        proc.send_signal(signal.SIGSTOP)
        try:
            writes = [
                _Stuck("POST", s.url + "v1/documents", json={"id": f"w{k}", "text": story(rng)})
                for k in range(3)
            ]
            for w in writes:
                w.start()
            time.sleep(0.5)  # the first write is stuck in Redis, the others wait for it
            r, seconds = _timed(httpx.get, s.url + "healthz", timeout=30)
            assert r.status_code == 503 and seconds < BOUND, (r.text, seconds)
            assert r.json()["error"] == "unavailable" and "did not answer" in r.json()["message"]
            pair = {"a": text, "b": reprint(rng, text)}
            r, seconds = _timed(httpx.post, s.url + "v1/compare", json=pair, timeout=30)
            assert r.status_code == 200 and seconds < BOUND, (r.text, seconds)
            r, seconds = _timed(httpx.get, s.url + "metrics", timeout=30)
            assert r.status_code == 200 and seconds < BOUND, seconds
            assert "neardup_http_requests_total" in r.text
            for path in ("", "static/page.js", "openapi.json"):
                r, seconds = _timed(httpx.get, s.url + path, timeout=30)
                assert r.status_code == 200 and seconds < BOUND, (path, seconds)
            r, seconds = _timed(httpx.get, s.url + "healthz", timeout=30)
            assert r.status_code == 503 and seconds < BOUND, seconds  # and again, not queued
            for w in writes:  # the 5 s socket timeout, once: the others were waiting for it
                w.join(60)
                assert w.response is not None and w.response.status_code == 503
                assert w.response.json()["error"] == "unavailable"
                assert 4.0 < w.seconds < 4 * BOUND, w.seconds
        finally:
            proc.send_signal(signal.SIGCONT)
        for _ in range(50):
            if httpx.get(s.url + "healthz", timeout=30).status_code == 200:
                break
            time.sleep(0.1)
        else:
            pytest.fail("/healthz did not recover after SIGCONT")
        r = httpx.post(s.url + "v1/documents", json={"id": "b", "text": reprint(rng, text)})
        assert r.status_code == 200 and r.json()["duplicate_of"] == "a"


def test_the_redis_timeout_is_set_in_the_store_url(
    lone_redis: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """?socket_timeout=1 in the store URL: a write to a hung Redis fails after about 1 s."""
    url, proc = lone_redis
    with serving("--store", f"{url}?namespace=quick&socket_timeout=1") as s:
        proc.send_signal(signal.SIGSTOP)
        try:
            r, seconds = _timed(
                httpx.post, s.url + "v1/check", json={"id": "a", "text": "正文。"}, timeout=30
            )
        finally:
            proc.send_signal(signal.SIGCONT)
        assert r.status_code == 503 and 0.8 < seconds < BOUND, (r.text, seconds)


@pytest.mark.parametrize("query", ["socket_timeout=soon", "socket_connect_timeout=0"])
def test_a_wrong_redis_timeout_is_one_line(
    lone_redis: tuple[str, subprocess.Popen[bytes]], query: str
) -> None:
    """A timeout that is no positive number of seconds: status 2 and one line naming it."""
    url, _ = lone_redis
    r = _run("--store", f"{url}?{query}", "--port", "0")
    assert r.returncode == 2, r.stderr
    name = query.split("=")[0]
    assert f"{name} must be a positive number of seconds" in r.stderr
    assert "Traceback" not in r.stderr


def test_requests_wait_for_the_store_only_so_long(
    lone_redis: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """--queue-timeout: a request still waiting for its turn after that long is a 503 with
    Retry-After; --max-queue: one that would wait behind too many others is refused at once."""
    url, proc = lone_redis
    # one worker: the line and its limits are each process's own
    args = ("--store", url, "--queue-timeout", "1", "--max-queue", "2", "--workers", "1")
    with serving(*args) as s:
        proc.send_signal(signal.SIGSTOP)
        try:
            doc = {"id": "a", "text": "正文。"}
            first = _Stuck("POST", s.url + "v1/check", json=doc)
            first.start()
            time.sleep(0.3)  # stuck in Redis for 5 s
            queued = [_Stuck("POST", s.url + "v1/check", json=doc) for _ in range(2)]
            for q in queued:
                q.start()
            time.sleep(0.3)
            r, seconds = _timed(httpx.post, s.url + "v1/check", json=doc, timeout=30)
            assert r.status_code == 503 and seconds < BOUND, (r.text, seconds)
            assert r.json()["error"] == "busy" and "waiting" in r.json()["message"]
            assert r.headers["retry-after"]
            for q in queued:
                q.join(30)
                assert q.response is not None and q.response.status_code == 503
                assert q.response.json()["error"] == "busy" and q.response.headers["retry-after"]
                assert 0.9 < q.seconds < BOUND, q.seconds
            first.join(30)
        finally:
            proc.send_signal(signal.SIGCONT)


# -- a damaged SQLite file ----------------------------------------------------------------------


def _fill(db: Path, n: int = 300, layout: str = "") -> None:
    """A SQLite store of ``n`` documents (a few MB), closed (``layout``: the URL's query)."""
    rng = random.Random(50)
    dd = Deduper(store=f"sqlite:///{db}{layout}")
    dd.check_and_add_many(
        [{"id": f"d{i}", "text": story(rng), "title": f"第{i}篇"} for i in range(n)]
    )
    dd.close()
    assert not Path(f"{db}-wal").exists()  # all of it is in the file


def _damage(db: Path) -> None:
    """Overwrite 32 KiB in the middle of the file, as a failing disk or a bad copy would."""
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.seek(size // 2 - 16384)
        f.write(bytes(range(256)) * 128)


def _assert_damaged(r: httpx.Response) -> str:
    assert r.status_code == 503, (r.request.url, r.text)
    body = r.json()
    assert body["error"] == "damaged", body
    message: str = body["message"]
    assert "damaged" in message and "restore" in message and "rebuild" in message
    assert "\n" not in message and "Traceback" not in r.text
    return message


def _every_store_endpoint(client: httpx.Client) -> list[httpx.Response]:
    doc = {"id": "new", "text": "一段正文。"}
    return [
        client.get("healthz"),
        client.post("v1/check", json=doc),
        client.post("v1/documents", json=doc),
        client.post("v1/documents:batch", json={"documents": [doc]}),
        client.get("v1/documents/d5"),
        client.get("v1/documents/d150"),
        client.delete("v1/documents/d7"),
        client.get("v1/clusters"),
        client.get("v1/clusters/d3"),
    ]


def test_a_damaged_sqlite_file_is_503_naming_the_problem(tmp_path: Path) -> None:
    """`neardup serve --db` on a file whose middle was overwritten: /healthz and every
    endpoint that touches the store answer 503 with one line that says the file is damaged
    and to restore or rebuild it (never 200 "ok", never 500); comparing still works."""
    db = tmp_path / "crawl.db"
    _fill(db)
    _damage(db)
    with serving("--db", str(db), healthy=False) as s, httpx.Client(base_url=s.url) as c:
        for r in _every_store_endpoint(c):
            _assert_damaged(r)
        r = c.post("v1/compare", json={"a": "北京今天天气晴朗。", "b": "北京今天天气晴朗！"})
        assert r.status_code == 200
        assert c.get("metrics").status_code == 200 and c.get("").status_code == 200
    assert "damaged" in "".join(s.log)  # and the server's log says so


def test_a_damaged_chrome_table_is_503_naming_it(tmp_path: Path) -> None:
    """A store whose saved chrome table does not read (its SQLite file sound): deciding
    answers 503 "damaged" naming the table, to restore or rebuild the store (not a 503 to
    retry, which would never mend); comparing still works."""
    db = tmp_path / "crawl.db"
    _fill(db, n=40)
    with sqlite3.connect(db) as con:
        value = bytes(con.execute("SELECT value FROM meta WHERE key = 'common'").fetchone()[0])
        con.execute("UPDATE meta SET value = ? WHERE key = 'common'", (value[:-30],))
    with serving("--db", str(db)) as s, httpx.Client(base_url=s.url) as c:
        for r in (
            c.post("v1/documents", json={"id": "new", "text": "一段正文。"}),
            c.post("v1/check", json={"id": "other", "text": "另一段正文。"}),
        ):
            message = _assert_damaged(r)
            assert message.startswith("the store's saved chrome table is damaged (")
            assert "retry-after" not in r.headers
        r = c.post("v1/compare", json={"a": "北京今天天气晴朗。", "b": "北京今天天气晴朗！"})
        assert r.status_code == 200


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_damage_found_while_serving_is_503_from_then_on(
    tmp_path: Path, anyio_backend: str
) -> None:
    """A file damaged after the service opened it (its start-up check passed): the first read
    that meets the damage is a 503 that says so, and so is everything after it, /healthz too."""
    db = tmp_path / "crawl.db"
    # whole sketches: the file's middle, where the damage goes, holds d150's text
    _fill(db, layout="?format=full")
    app = create_app(store=f"sqlite:///{db}?format=full")
    service = app.state.service
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            assert (await c.get("/healthz")).status_code == 200  # the start-up check passed
            _damage(db)
            r = await c.get("/v1/documents/d150")  # its text lies in the damaged pages
            first = _assert_damaged(r)
            assert "malformed" in first
            _assert_damaged(await c.get("/healthz"))
            _assert_damaged(await c.get("/v1/documents/d5"))  # intact, but the file is not
            _assert_damaged(await c.post("/v1/documents", json={"id": "x", "text": "正文。"}))
    finally:
        service.close()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_redis_that_restarted_empty_is_503_until_the_service_restarts(
    tmp_path: Path, workers: str
) -> None:
    """redis-server restarted without persistence under the service: the writes after are
    a 503 "damaged" saying the namespace lost its keys and to restart the service (they
    went on into an empty namespace, a copy of an earlier story kept as new, without a
    word); the service started again goes on."""
    from tests.store.servers import redis_server, stop

    proc, url = start_redis_server(tmp_path)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    rng = random.Random(41)
    text = story(rng)
    try:
        with serving("--store", url, "--workers", workers) as s:
            r = httpx.post(s.url + "v1/documents", json={"id": "a", "text": text})
            assert r.status_code == 200, r.text
            stop(proc)
            proc = redis_server(tmp_path, port, "--appendonly", "no")  # back, empty
            for k in range(2):
                r = httpx.post(s.url + "v1/documents", json={"id": f"b{k}", "text": story(rng)})
                assert r.status_code == 503, r.text
                assert r.json()["error"] == "damaged"
                assert "lost its keys" in r.json()["message"]
                assert "restart the service" in r.json()["message"]
            assert "Traceback" not in "".join(s.log)
        with serving("--store", url, "--workers", workers) as s:
            r = httpx.post(s.url + "v1/documents", json={"id": "c", "text": reprint(rng, text)})
            assert r.status_code == 200 and not r.json()["is_duplicate"]  # "a" is gone
    finally:
        stop(proc)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_sqlite_file_deleted_under_the_service_is_503_until_it_restarts(
    tmp_path: Path, workers: str
) -> None:
    """``rm crawl.db`` under the service: its writes went on into the deleted file, lost
    when it stopped. Now they are a 503 "damaged" saying so; the service started again
    makes the file anew."""
    db = tmp_path / "crawl.db"
    rng = random.Random(42)
    with serving("--db", str(db), "--workers", workers) as s:
        r = httpx.post(s.url + "v1/documents", json={"id": "a", "text": story(rng)})
        assert r.status_code == 200, r.text
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        r = httpx.post(s.url + "v1/documents", json={"id": "b", "text": story(rng)})
        assert r.status_code == 503, r.text
        assert r.json()["error"] == "damaged"
        assert "SQLite file was deleted or moved away" in r.json()["message"]
        assert "restart the service" in r.json()["message"]
        assert "Traceback" not in "".join(s.log)
    with serving("--db", str(db), "--workers", workers) as s:
        r = httpx.post(s.url + "v1/documents", json={"id": "c", "text": story(rng)})
        assert r.status_code == 200, r.text
    assert db.exists()
