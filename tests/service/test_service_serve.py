"""A real ``neardup serve`` on loopback: crawlers posting copies of the same stories at the
same moment keep each story once, on SQLite and on Redis, with one server or two sharing the
store; and the command's refusals and errors."""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
import httpx

from tests.service.test_service_api import reprint, story

_STARTED = re.compile(r"neardup serve: (http://\S+/) ")


class Server:
    """A ``neardup serve`` process and what it printed."""

    def __init__(self, proc: subprocess.Popen[str], url: str, log: list[str]) -> None:
        self.proc = proc
        self.url = url
        self.log = log


def _start(*args: str, env: dict[str, str] | None = None, healthy: bool = True) -> Server:
    proc = subprocess.Popen(
        [sys.executable, "-m", "neardup", "serve", "--port", "0", "--no-access-log", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert proc.stderr is not None
    log: list[str] = []
    url = None
    for line in proc.stderr:
        log.append(line)
        found = _STARTED.search(line)
        if found:
            url = found.group(1)
            break
    if url is None:
        proc.wait(timeout=30)
        pytest.fail("neardup serve did not start:\n" + "".join(log))
    stream = proc.stderr
    threading.Thread(target=lambda: log.extend(stream), daemon=True).start()
    for _ in range(300):  # the socket is bound before the line; wait until it answers
        try:
            if httpx.get(url + "healthz", timeout=5).status_code == 200 or not healthy:
                break
        except httpx.TransportError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("neardup serve never answered /healthz:\n" + "".join(log))
    return Server(proc, url, log)


@contextmanager
def serving(
    *args: str, env: dict[str, str] | None = None, healthy: bool = True
) -> Iterator[Server]:
    """A running ``neardup serve ARGS``, stopped with SIGTERM afterwards (and checked to
    stop cleanly). It has answered /healthz with 200, or anything when not ``healthy``."""
    server = _start(*args, env=env, healthy=healthy)
    try:
        yield server
    finally:
        server.proc.terminate()
        code = server.proc.wait(timeout=30)
    # uvicorn shuts down, then ends with the signal it caught, as a server should
    assert code in (0, -signal.SIGTERM), "".join(server.log)
    assert "Finished server process" in "".join(server.log)


def _crawl(urls: list[str], stories: int, clients: int, seed: int) -> dict[str, dict]:
    """``clients`` threads, each posting its own reprint of every story (in its own order) to
    one of ``urls``, all at once; the decisions by id."""
    rng = random.Random(seed)
    texts = [story(rng) for _ in range(stories)]
    jobs = []
    for c in range(clients):
        docs = [(f"story{s}-client{c}", reprint(rng, texts[s])) for s in range(stories)]
        rng.shuffle(docs)
        jobs.append(docs + docs[:2])  # and two ids sent again: idempotent
    decisions: dict[str, dict] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(clients)

    def client(c: int) -> None:
        try:
            with httpx.Client(base_url=urls[c % len(urls)], timeout=60) as http:
                barrier.wait()
                for doc_id, text in jobs[c]:
                    r = http.post("/v1/documents", json={"id": doc_id, "text": text})
                    assert r.status_code == 200, r.text
                    d = r.json()
                    if doc_id in decisions:
                        assert decisions[doc_id] == d, "a repeated id got another decision"
                    decisions[doc_id] = d
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return decisions


def _assert_each_story_kept_once(decisions: dict[str, dict], url: str, stories: int) -> None:
    kept: dict[int, list[str]] = defaultdict(list)
    clusters: dict[int, set[str]] = defaultdict(set)
    for doc_id, d in decisions.items():
        s = int(doc_id.split("-")[0].removeprefix("story"))
        clusters[s].add(d["cluster"])
        if not d["is_duplicate"]:
            kept[s].append(doc_id)
    assert sorted(len(v) for v in kept.values()) == [1] * stories, dict(kept)
    for s in range(stories):
        assert clusters[s] == set(kept[s]), f"story {s}: clusters {clusters[s]}"
    listed = httpx.get(url + "v1/clusters").json()["clusters"]
    sizes = {c["id"]: c["size"] for c in listed}
    assert sizes == {kept[s][0]: len(decisions) // stories for s in range(stories)}


@pytest.mark.parametrize("servers", [1, 2])
def test_concurrent_crawlers_keep_each_story_once_on_sqlite(tmp_path: Path, servers: int) -> None:
    """8 clients posting reprints of the same 6 stories at once (to one server, or to two
    sharing the SQLite file): each story is kept exactly once, every copy in its cluster."""
    db = tmp_path / "crawl.db"
    with serving("--db", str(db)) as first:
        if servers == 1:
            decisions = _crawl([first.url], stories=6, clients=8, seed=servers)
        else:
            with serving("--store", f"sqlite:///{db}") as second:
                decisions = _crawl([first.url, second.url], stories=6, clients=8, seed=servers)
        assert len(decisions) == 48
        _assert_each_story_kept_once(decisions, first.url, 6)
        stats = httpx.get(first.url + "metrics").text
        assert "neardup_store_documents 48" in stats and "neardup_store_kept 6" in stats


@pytest.mark.parametrize("servers", [1, 2])
def test_concurrent_crawlers_keep_each_story_once_on_redis(redis_url: str, servers: int) -> None:
    """The same on a Redis store, one server or two sharing it."""
    with serving("--store", redis_url) as first:
        if servers == 1:
            decisions = _crawl([first.url], stories=6, clients=8, seed=10 + servers)
        else:
            with serving("--store", redis_url) as second:
                urls = [first.url, second.url]
                decisions = _crawl(urls, stories=6, clients=8, seed=10 + servers)
        _assert_each_story_kept_once(decisions, first.url, 6)


def test_the_store_outlives_the_server(tmp_path: Path) -> None:
    """What one server added to a SQLite file, the next one started on it knows."""
    db = str(tmp_path / "crawl.db")
    rng = random.Random(20)
    text = story(rng)
    with serving("--db", db) as s:
        httpx.post(s.url + "v1/documents", json={"id": "a", "text": text}).raise_for_status()
    with serving("--db", db) as s:
        d = httpx.post(s.url + "v1/documents", json={"id": "b", "text": reprint(rng, text)})
        assert d.json()["duplicate_of"] == "a"


def test_ids_with_newlines_and_urls_round_trip_through_uvicorn(tmp_path: Path) -> None:
    """Ids with newlines (which some crawls have) and URLs, percent-encoded in the path, are
    found, listed as clusters and deleted through a real server."""
    from urllib.parse import quote

    ids = ["a\nb", "title\r\n", "https://news.example.cn/a/b.html?x=1&y=%2F#c"]
    with serving("--db", str(tmp_path / "ids.db")) as s, httpx.Client(base_url=s.url) as c:
        rng = random.Random(70)
        for doc_id in ids:  # three stories: each is its own cluster
            r = c.post("v1/documents", json={"id": doc_id, "text": story(rng)})
            assert r.status_code == 200, r.text
        for doc_id in ids:
            path = quote(doc_id, safe="")
            assert c.get(f"v1/documents/{path}").json()["id"] == doc_id
            assert c.get(f"v1/clusters/{path}").json()["id"] == doc_id
            assert c.delete(f"v1/documents/{path}").json() == {"id": doc_id, "deleted": True}
            assert c.get(f"v1/documents/{path}").status_code == 404


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NEARDUP_API_KEY": "", **(env or {})},
    )


def test_refuses_a_public_address_without_a_key() -> None:
    """Without a key, listening beyond loopback is refused with one line and status 2."""
    r = _run("--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2
    assert r.stderr.startswith("neardup: error: refusing to listen on 0.0.0.0 without an API key")
    assert "NEARDUP_API_KEY" in r.stderr and "Traceback" not in r.stderr


def test_a_key_from_the_environment_guards_writes() -> None:
    """NEARDUP_API_KEY allows a public address and makes writes need the key."""
    key = "k3y-of-sixteen-chars"
    with serving("--host", "0.0.0.0", env={"NEARDUP_API_KEY": key}) as s:
        port = s.url.rsplit(":", 1)[1].rstrip("/")
        url = f"http://127.0.0.1:{port}/"
        doc = {"id": "a", "text": "一段正文。"}
        assert httpx.post(url + "v1/documents", json=doc).status_code == 401
        r = httpx.post(url + "v1/documents", json=doc, headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 200
        assert "writes need the API key" in "".join(s.log)


@pytest.mark.parametrize("where", ["env", "option"])
def test_a_short_key_is_refused_on_a_public_address(where: str) -> None:
    """A key under 16 characters is guessable by anyone who can reach a public address:
    status 2 and one line; on loopback a short key is still taken."""
    key = "k3y-fifteen-chr"
    assert len(key) == 15
    args = ("--api-key", key) if where == "option" else ()
    env = {"NEARDUP_API_KEY": key} if where == "env" else {}
    r = _run("--host", "0.0.0.0", "--port", "0", *args, env=env)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("neardup: error: the API key has 15 characters")
    assert "at least 16" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert key not in r.stderr
    with serving(*args, env={"NEARDUP_API_KEY": key} if where == "env" else None) as s:
        assert "writes need the API key" in "".join(s.log)


def test_a_port_in_use_is_one_line_and_status_2() -> None:
    """A port something else listens on: status 2 and a line naming it."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = _run("--port", str(port))
    assert r.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--store", "ftp://x"), "unknown store URL"),
        (("--store", "redis://127.0.0.1:1/0"), "cannot reach Redis"),
        (("--window", "soon"), "window must be"),
        (("--db", "/nonexistent/dir/x.db"), "x.db"),
        (("--db", "/proc/x.db"), "cannot open store sqlite:////proc/x.db: unable to open"),
        (("--db", "/proc/x.db", "--workers", "2"), "cannot open store sqlite:////proc/x.db"),
    ],
)
def test_a_store_that_cannot_be_opened_is_one_line(args: tuple[str, ...], message: str) -> None:
    """A wrong store URL, an unreachable Redis, a bad window or file: status 2, one line,
    naming the store once."""
    r = _run(*args, "--port", "0")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("neardup: error: ") and message in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.count("sqlite:///") <= 1, r.stderr


def test_help_lists_the_options() -> None:
    """`neardup serve --help` names every option."""
    r = _run("--help")
    assert r.returncode == 0
    for option in ("--store", "--db", "--host", "--port", "--api-key", "--window", "--max-body"):
        assert option in r.stdout
