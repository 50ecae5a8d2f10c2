"""``neardup dedup`` and ``neardup store`` with a Redis that asks for a password: the
password never shows, in the closing note, the JSON summary, stats, check or an error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import redis_on_free_port
from ..store.servers import stop
from ..synth import corpus

SECRET = "TopS3cretPW"


def _neardup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup", *args], capture_output=True, text=True, check=False
    )


@pytest.mark.slow
def test_a_redis_password_never_shows(tmp_path: Path) -> None:
    src = tmp_path / "crawl.jsonl"
    with src.open("w", encoding="utf-8") as f:
        for i, t, _ in corpus(53, 5, 2, cut=False):
            f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")
    proc, port = redis_on_free_port(tmp_path, "--appendonly", "no", password=SECRET)
    try:
        url = f"redis://:{SECRET}@127.0.0.1:{port}/0?namespace=news"
        shown = f"redis://:***@127.0.0.1:{port}/0?namespace=news"
        summary = tmp_path / "summary.json"
        r = _neardup("dedup", str(src), "--store", url, "-o", str(tmp_path / "u"),
                     "--clusters", str(tmp_path / "c"), "--json-summary", str(summary))  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert f"note: compared with, and added to, the store {shown}" in r.stderr
        seen = [r.stdout, r.stderr, summary.read_text()]
        for args in (("stats",), ("stats", "--json"), ("check",)):
            r = _neardup("store", *args, "--store", url)
            assert r.returncode == 0, r.stderr
            assert shown in r.stdout
            seen += [r.stdout, r.stderr]
        r = _neardup("store", "stats", "--store", url.replace(SECRET, SECRET + "x"))
        assert r.returncode == 2 and "redis://:***@127.0.0.1" in r.stderr
        seen += [r.stdout, r.stderr]
        assert not [text for text in seen if SECRET in text]
    finally:
        stop(proc)
