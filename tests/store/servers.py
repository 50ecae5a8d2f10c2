"""Real redis-servers of a test's own, with the options the test needs (a password, an
append-only file that survives a kill, a port to come back on)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest


def redis_server(
    folder: Path, port: int, *more: str, password: str | None = None
) -> subprocess.Popen[bytes]:
    """A real redis-server on ``port``, answering (``password``: it asks for this one)."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server is not installed: run scripts/check.sh, which installs it")
    redis = pytest.importorskip("redis")
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", "",
         *(["--requirepass", password] if password else []), *more],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = redis.Redis(port=port, password=password)
    try:
        for _ in range(200):
            try:
                client.ping()
                return proc
            except (redis.ConnectionError, redis.BusyLoadingError):
                time.sleep(0.05)
    finally:
        client.close()
    proc.kill()
    pytest.fail("redis-server did not start")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)
