"""What the benchmarks share: where ``../shared`` is, reading its gzipped JSON Lines, running
``neardup dedup`` as a user does, and the header every benchmark prints (so a table always
says which machine and versions made it)."""

from __future__ import annotations

import datetime
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

#: The repository's root (this file is ``bench/_data.py``).
ROOT = Path(__file__).resolve().parent.parent
#: The shared corpora live beside the checkout, never inside it (NEARDUP_BENCH_SHARED names
#: another folder: the tests point it at an empty one).
SHARED = Path(os.environ.get("NEARDUP_BENCH_SHARED") or ROOT.parent / "shared")


class BenchDataMissing(FileNotFoundError):
    """A shared corpus the benchmark reads is not where it should be."""


def shared_path(relative: str) -> Path:
    """The path of ``../shared/<relative>``, or a clear error when it is absent."""
    path = SHARED / relative
    if not path.is_file():
        raise BenchDataMissing(
            f"bench data not found: ../shared/{relative} (looked for {path}; "
            "the benchmarks read the shared corpora beside the checkout)"
        )
    return path


def read_jsonl(relative: str, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """The JSON objects of ``../shared/<relative>`` (gzipped JSON Lines), at most ``limit``."""
    path = shared_path(relative)

    def rows() -> Iterator[dict[str, Any]]:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)

    return islice(rows(), limit)


def dedup_clusters(records: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """The rows of ``--clusters`` of ``python -m neardup dedup`` (``sys.executable``, so
    ``PYTHONPATH`` decides which checkout runs) on a JSONL of the (id, text) ``records``."""
    with tempfile.TemporaryDirectory() as tmp:
        src, clusters = Path(tmp, "in.jsonl"), Path(tmp, "clusters.jsonl")
        with src.open("w", encoding="utf-8") as f:
            for i, text in records:
                f.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")
        cmd = [sys.executable, "-m", "neardup", "dedup", str(src), "-o", str(Path(tmp, "u")),
               "--clusters", str(clusters), "-q"]  # fmt: skip
        subprocess.run(cmd, check=True)
        return [json.loads(line) for line in clusters.open(encoding="utf-8")]


def environment() -> dict[str, str]:
    """Versions and date for a benchmark's header."""
    import numpy

    import neardup

    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "neardup": neardup.__version__,
        "machine": f"{platform.machine()}, {_cpus()} CPUs",
    }


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def header(title: str, extra: dict[str, str] | None = None) -> str:
    """A markdown header: the title, then one line of versions and date."""
    env = {**environment(), **(extra or {})}
    return f"## {title}\n\n" + " · ".join(f"{k} {v}" for k, v in env.items()) + "\n"


#: What the bench extra installs, by the name a script imports.
_BENCH_EXTRA = {"datasketch", "gaoya", "rensa", "simhash", "Levenshtein"}


def _say_what_is_missing(
    kind: type[BaseException], error: BaseException, tb: TracebackType | None
) -> None:
    """Every benchmark's last word on missing data or a missing bench package: one line, not
    a traceback (the scripts that catch these themselves say the same)."""
    if isinstance(error, BenchDataMissing):
        print(f"error: {error}", file=sys.stderr)
    elif isinstance(error, ModuleNotFoundError) and error.name in _BENCH_EXTRA:
        print(f"error: {error.name} is not installed: pip install -e '.[bench]'", file=sys.stderr)
    else:
        sys.__excepthook__(kind, error, tb)


sys.excepthook = _say_what_is_missing


def die(error: Exception) -> NoReturn:
    """Exit with the error's message, without a traceback (for missing data)."""
    print(f"error: {error}", file=sys.stderr)
    raise SystemExit(2)
