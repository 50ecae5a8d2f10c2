"""The stores every store test runs on: the three backends, or the two that outlive their
Deduper (``redis_url`` is a real redis-server of the session, from tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store: memory, a SQLite file, a Redis namespace."""
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    url: str = request.getfixturevalue("redis_url")
    return url


@pytest.fixture(params=["sqlite", "redis"])
def persistent_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The stores that outlive their Deduper."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    url: str = request.getfixturevalue("redis_url")
    return url
