"""Real redis-servers of a test's own, with the options the test needs (a password, an
append-only file that survives a kill, a port to come back on), and real small file systems
(a tmpfs mounted for the test)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ..conftest import redis_on


def redis_server(
    folder: Path, port: int, *more: str, password: str | None = None
) -> subprocess.Popen[bytes]:
    """A real redis-server on ``port``, answering (``password``: it asks for this one): for
    a test that starts one again on the port it had (:func:`~tests.conftest.redis_on_free_port`
    for a first start)."""
    proc = redis_on(folder, port, *more, password=password)
    if proc is None:
        pytest.fail(f"redis-server did not start on port {port}")
    return proc


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
