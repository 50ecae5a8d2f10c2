"""Test-wide settings and services.

Hypothesis never fails a test for being slow (timing is for bench/). ``redis_server`` starts
a real redis-server (Debian's package, which ``scripts/check.sh`` installs) on a free
loopback port for the whole session; ``redis_url`` gives each test its own namespace on it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("neardup", deadline=None)
settings.load_profile("neardup")


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports nothing listens on now: bound together, so that none is
    handed out twice (a Spark worker's web UI once took the master's before the master bound
    it, and the test read the worker's page for the master's JSON)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    """A TCP port nothing listens on now."""
    return free_ports(1)[0]


@contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback TCP port that refuses every connection for as long as the block runs: it
    is bound and never listened on, so no other process can take it meanwhile (a test of
    an unreachable server would otherwise reach one that a neighbour started there)."""
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])
    finally:
        s.close()


def redis_on(
    folder: Path, port: int, *more: str, password: str | None = None
) -> subprocess.Popen[bytes] | None:
    """A real redis-server started on ``port`` (``more``: its options; ``password``: it asks
    for this one), once it answers; None when it did not start as this server (it could not
    bind the port, or another process answers there: one another test started)."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server is not installed: run scripts/check.sh, which installs it")
    pytest.importorskip("redis")
    import redis

    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", "",
         *(["--requirepass", password] if password else []), *more],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = redis.Redis(port=port, password=password)
    try:
        for _ in range(200):
            if proc.poll() is not None:
                break  # it could not bind the port
            try:
                # this server, not one another test started on the same port
                if client.info("server")["process_id"] != proc.pid:
                    break
                client.ping()  # answers once a dump it loads is in
                return proc
            except redis.ConnectionError:  # BusyLoadingError among them
                time.sleep(0.05)
            except redis.RedisError:  # another server, asking for another password
                break
    finally:
        client.close()
    proc.kill()
    proc.wait()
    return None


def redis_on_free_port(
    folder: Path, *more: str, password: str | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """:func:`redis_on` a free loopback port: the process and its port (another port when
    a process took the one chosen before the server bound it)."""
    for _ in range(5):
        port = free_port()
        proc = redis_on(folder, port, *more, password=password)
        if proc is not None:
            return proc, port
    pytest.fail("redis-server did not start")


def start_redis_server(
    folder: Path, *, dbfilename: str | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """A real redis-server on a free loopback port, answering: the process and its URL
    (``dbfilename``: load that dump in ``folder`` at start)."""
    more = ("--appendonly", "no", *(["--dbfilename", dbfilename] if dbfilename else []))
    proc, port = redis_on_free_port(folder, *more)
    return proc, f"redis://127.0.0.1:{port}/0"


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on loopback for the session; yields its base URL."""
    proc, url = start_redis_server(tmp_path_factory.mktemp("redis"))
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """A store URL with a namespace of its own on the session's redis-server."""
    return f"{redis_server}?namespace=t{uuid.uuid4().hex[:12]}"


def _store_url(request: pytest.FixtureRequest, tmp_path: Path, kind: str) -> str:
    """A fresh store of ``kind``: memory, sqlite or redis (compact), or sqlite-full and
    redis-full (the layout of whole sketches, as neardup wrote before compact stores)."""
    if kind == "memory":
        return "memory://"
    backend, _, layout = kind.partition("-")
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.db'}"
        return url + "?format=full" if layout else url
    url = request.getfixturevalue("redis_url")
    return f"{url}&format=full" if layout else str(url)


@pytest.fixture(params=["memory", "sqlite", "sqlite-full", "redis", "redis-full"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store in turn: memory, a SQLite file, a Redis namespace (compact, and in the
    layout of whole sketches)."""
    return _store_url(request, tmp_path, request.param)


@pytest.fixture(params=["sqlite", "sqlite-full", "redis", "redis-full"])
def persistent_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The stores that outlive their Deduper."""
    return _store_url(request, tmp_path, request.param)


# -- the quick loop: `pytest -m "not slow"` leaves out what starts real services -----------

#: Tests that start a real service or a real crawl (Spark, Chromium, uvicorn servers,
#: `scrapy crawl`, wget, several processes): marked slow, by where they live.
_SLOW_FILES = (
    "tests/spark/",
    "tests/service/test_service_page.py",
    "tests/service/test_service_serve.py",
    "tests/service/test_service_workers.py",
    "tests/service/test_service_failures.py",
    "tests/service/test_service_security.py",
    "tests/service/test_service_decider.py::test_a_decider_that_dies",
    "tests/service/test_service_decider.py::test_a_long_tmpdir",
    "tests/test_scrapy.py",
    "tests/records/test_warc.py::test_wget",
)
#: Tests that are slow on their own (processes racing, kill -9, whole-corpus runs).
_SLOW_NAMES = ("race", "concurrent", "kill_9", "processes", "ten_megabyte", "opening_a_new")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark as slow every test that needs a real service (a redis-server too)."""
    slow = pytest.mark.slow
    for item in items:
        node = item.nodeid
        names = getattr(item, "fixturenames", ())
        uses_redis = "redis_server" in names or "redis_url" in names
        if (
            any(node.startswith(prefix) for prefix in _SLOW_FILES)
            or uses_redis
            or "[redis" in node
            or any(name in item.name for name in _SLOW_NAMES)
        ):
            item.add_marker(slow)
