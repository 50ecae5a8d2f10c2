"""``neardup dedup --engine spark`` as a user runs it, in processes of its own: on a real
Spark standalone cluster (a master and two workers started here, loopback only), from an
install whose Python is not the first ``python3`` on PATH (pipx, cron), and against
executors that cannot import neardup (one line saying how to ship it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from neardup.cli import main

from ..conftest import free_ports
from .test_spark import write_jsonl

SRC = str(Path(__file__).resolve().parents[2] / "src")


def java_missing() -> bool:
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java") is None and not (home and Path(home, "bin", "java").exists())


pytestmark = pytest.mark.skipif(java_missing(), reason="Spark needs Java (none on PATH)")


def spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a process run here: neardup importable (as if installed), no
    PYSPARK_PYTHON, the JVM on loopback."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    }
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.update(extra)
    return env


def dedup_command(tmp: Path, source: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "neardup",
        "dedup",
        str(source),
        "-o",
        str(tmp / "unique.jsonl"),
        "--clusters",
        str(tmp / "clusters.jsonl"),
        "--errors",
        str(tmp / "errors.jsonl"),
        "-q",
        "--engine",
        "spark",
        *extra,
    ]


def outputs(tmp: Path) -> dict[str, str]:
    return {
        name: (tmp / f"{name}.jsonl").read_text(encoding="utf-8")
        for name in ("unique", "clusters", "errors")
    }


def spark_run(tmp: Path, source: Path, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``neardup dedup --engine spark`` (``extra`` its Spark options) as a process of its own,
    writing into ``tmp``; ``env`` added to its environment."""
    return subprocess.run(
        dedup_command(tmp, source, *extra),
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=600,
    )


def local_run(tmp: Path, source: Path) -> dict[str, str]:
    """What the local engine writes for ``source``."""
    tmp.mkdir()
    args = ["-o", str(tmp / "unique.jsonl"), "--clusters", str(tmp / "clusters.jsonl")]
    status = main(["dedup", str(source), *args, "--errors", str(tmp / "errors.jsonl"), "-q"])
    assert status == 0
    return outputs(tmp)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark standalone master and two workers (one core, 1 GiB each) on 127.0.0.1,
    started from PySpark's own spark-class and stopped afterwards: the master's URL."""
    work = tmp_path_factory.mktemp("standalone")
    port, ui, *worker_ports = free_ports(6)
    env = child_env(SPARK_WORKER_DIR=str(work / "work"), SPARK_LOG_DIR=str(work / "logs"))
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        log = open(work / f"{name}.log", "wb")  # noqa: SIM115 (closed with the process)
        procs.append(
            subprocess.Popen(
                [str(spark_class()), *args],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        log.close()

    url = f"spark://127.0.0.1:{port}"
    try:
        start(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)),
        )
        for k in range(2):
            start(
                f"worker{k}",
                "org.apache.spark.deploy.worker.Worker",
                *("--host", "127.0.0.1", "--cores", "1", "--memory", "1g"),
                *("--port", str(worker_ports[2 * k]), "--webui-port", str(worker_ports[2 * k + 1])),
                *("--work-dir", str(work / f"w{k}"), url),
            )
        deadline = time.monotonic() + 120
        alive = 0
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as r:
                    state = json.load(r)
                alive = sum(w.get("state") == "ALIVE" for w in state.get("workers", []))
            except (OSError, ValueError):  # not up yet, or not yet the master's answer
                alive = 0
            if alive == 2:
                break
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(1)
        if alive != 2:
            logs = "\n".join(
                f"--- {f.name}\n{f.read_text(errors='replace')[-2000:]}"
                for f in sorted(work.glob("*.log"))
            )
            pytest.fail(f"the standalone cluster did not start ({alive} workers alive)\n{logs}")
        yield url
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def test_standalone_cluster_writes_what_the_local_engine_writes(
    standalone: str, tmp_path: Path
) -> None:
    """On a master and two workers (separate JVMs, each with its own Python workers),
    UNIQUE, CLUSTERS and ERRORS are the local engine's, byte for byte."""
    source = tmp_path / "in.jsonl"
    write_jsonl(source)
    want = local_run(tmp_path / "local", source)
    got_dir = tmp_path / "spark"
    got_dir.mkdir()
    done = spark_run(got_dir, source, "--spark-master", standalone)
    assert done.returncode == 0, done.stderr[-3000:]
    assert outputs(got_dir) == want
    assert any(json.loads(line)["duplicate_of"] for line in want["clusters"].splitlines())


def test_runs_when_python3_on_path_is_another_python(tmp_path: Path) -> None:
    """A pipx- or cron-style run: this interpreter is not the ``python3`` PATH finds (here
    a PATH with a ``python3`` that exits at once); the executors still run this one."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python3", "python"):
        fake = bin_dir / name
        fake.write_text("#!/bin/sh\necho 'not this python' >&2\nexit 3\n", encoding="utf-8")
        fake.chmod(0o755)
    java = shutil.which("java")
    path = os.pathsep.join([str(bin_dir), *([str(Path(java).parent)] if java else []), "/bin"])
    source = tmp_path / "in.jsonl"
    write_jsonl(source)
    want = local_run(tmp_path / "local", source)
    got_dir = tmp_path / "spark"
    got_dir.mkdir()
    done = spark_run(got_dir, source, "--spark-master", "local[2]", PATH=path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert outputs(got_dir) == want
    assert "FutureWarning" not in done.stderr


def test_executors_without_neardup_fail_at_once_in_one_line(tmp_path: Path) -> None:
    """Executors whose Python cannot import neardup: exit 2 before any stage, one line on
    standard error naming the Python and how to ship neardup."""
    # neardup may be installed in this Python (CI installs it): put a neardup that cannot be
    # imported before it, as an executor without neardup would find none
    shadow = tmp_path / "shadow" / "neardup"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("not here")\n', encoding="utf-8")
    python = tmp_path / "python-without-neardup"
    python.write_text(
        f'#!/bin/sh\nPYTHONPATH="{shadow.parent}" exec "{sys.executable}" "$@"\n', encoding="utf-8"
    )
    python.chmod(0o755)
    source = tmp_path / "in.jsonl"
    write_jsonl(source)
    conf = f"spark.pyspark.python={python}"
    # no web UI: another Spark on this machine may hold its port (a warning line of its own)
    done = spark_run(
        tmp_path, source, "--spark-master", "local[1]", "--spark-conf", conf,
        "--spark-conf", "spark.ui.enabled=false",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr[-3000:]
    assert "cannot import neardup" in lines[0]
    assert "spark.submit.pyFiles" in lines[0]
