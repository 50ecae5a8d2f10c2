"""Real redis-servers of a test's own, with the options the test needs (a password, an
append-only file that survives a kill, a port to come back on), and real small file systems
(a tmpfs mounted for the test)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``1m``, ``16m``) mounted on the empty ``folder`` for the block,
    then unmounted; the test skips when it cannot be mounted (it needs root)."""
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                       capture_output=True, text=True, check=False)  # fmt: skip
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
