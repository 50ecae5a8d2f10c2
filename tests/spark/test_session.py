"""The session's sizing and the one-line errors of a Spark run that cannot finish: the
driver's heap on a local master, what may come to the driver, and a JVM out of memory or
gone."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark")
import itertools

from py4j.protocol import Py4JNetworkError

from neardup.spark import session, templates
from neardup.spark.session import jvm_failure, local_driver_memory, machine_memory

GIB = 1 << 30


@pytest.fixture
def no_user_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SPARK_DRIVER_MEMORY", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "SPARK_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_user_settings")
def test_a_local_master_gets_a_quarter_of_the_memory_within_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(session, "machine_memory", lambda: 24 * GIB)
    assert local_driver_memory("local[2]") == "6144m"
    assert local_driver_memory("local[*]", {"spark.ui.enabled": "false"}) == "6144m"
    monkeypatch.setattr(session, "machine_memory", lambda: 2 * GIB)
    assert local_driver_memory("local") == "1024m"  # never below Spark's own default
    monkeypatch.setattr(session, "machine_memory", lambda: 0)  # not known
    assert local_driver_memory("local") == "1024m"
    monkeypatch.setattr(session, "machine_memory", lambda: 1024 * GIB)
    assert local_driver_memory("local") == "32768m"


@pytest.mark.usefixtures("no_user_settings")
def test_what_the_user_set_is_left_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert local_driver_memory("spark://127.0.0.1:7077") is None  # a cluster's driver
    assert local_driver_memory("yarn") is None
    assert local_driver_memory("local[2]", {"spark.driver.memory": "3g"}) is None
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "3g")
    assert local_driver_memory("local[2]") is None
    monkeypatch.delenv("SPARK_DRIVER_MEMORY")
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 3g pyspark-shell")
    assert local_driver_memory("local[2]") is None
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS")
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        "# spark.driver.memory 1g\nspark.executor.memory 2g\n", encoding="utf-8"
    )
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert local_driver_memory("local[2]") is not None  # a comment, and another key
    (conf / "spark-defaults.conf").write_text("spark.driver.memory   3g\n", encoding="utf-8")
    assert local_driver_memory("local[2]") is None
    monkeypatch.delenv("SPARK_HOME")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    assert local_driver_memory("local[2]") is None


def test_the_machine_memory_is_known_here() -> None:
    assert machine_memory() > 256 << 20


def test_what_comes_to_the_driver_is_bounded_by_its_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(templates, "driver_heap", lambda spark: GIB)
    assert templates.driver_memberships(None, 4) == GIB // templates.HEAP_PER_MEMBERSHIP // 4
    monkeypatch.setattr(templates, "driver_heap", lambda spark: 64 * GIB)
    assert templates.driver_memberships(None, 4) == templates.DRIVER_MEMBERSHIPS // 4


def _chained(*errors: BaseException) -> BaseException:
    """``errors[0]`` raised while handling ``errors[1]``, raised while handling ..."""
    for later, earlier in itertools.pairwise(errors):
        later.__context__ = earlier
    return errors[0]


class _JavaError(Exception):
    """Like py4j's Py4JJavaError once the JVM is gone: its text cannot be had."""

    errmsg = "An error occurred while calling o91.collectAsArrowToPython.\n"

    def __str__(self) -> str:
        raise ConnectionRefusedError(111, "Connection refused")


_JavaError.__module__ = "py4j.protocol"


def test_a_jvm_out_of_memory_is_one_line_saying_what_to_set() -> None:
    error = _chained(
        RuntimeError("job aborted"),
        Exception("Job aborted due to stage failure: java.lang.OutOfMemoryError: Java heap space"),
    )
    line = jvm_failure(error)
    assert line is not None and "\n" not in line
    assert "out of memory" in line and "spark.driver.memory" in line


def test_a_jvm_gone_is_one_line() -> None:
    # the run's last calls find the JVM gone: the error the user would see is the last one
    error = _chained(
        ConnectionRefusedError(111, "Connection refused"),
        Py4JNetworkError("Answer from Java side is empty"),
        _JavaError(),
    )
    line = jvm_failure(error)
    assert line is not None and "\n" not in line
    assert "JVM stopped" in line and "spark.driver.memory" in line


def test_other_errors_are_not_taken_for_the_jvm() -> None:
    assert jvm_failure(ValueError("bad value")) is None
    assert jvm_failure(ConnectionRefusedError(111, "a store, not Spark")) is None
