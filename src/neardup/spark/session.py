"""The Spark session, the optional dependency, and what every executor needs.

:func:`spark_session` starts Spark the way the command line needs it from any install: the
executors run the driver's own Python (``sys.executable``) unless ``PYSPARK_PYTHON`` or
``spark.pyspark.python`` says otherwise (Spark's own default is whatever ``python3`` comes
first on ``PATH``, which under pipx or cron is not the one that has neardup), and the JVM
logs at WARN without announcing it. :func:`check_executors` runs one tiny job to learn
whether an executor can import neardup, so that a cluster without it fails at once, in one
line, rather than after the first stage.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import MissingDependencyError
from ..machine import machine_memory

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "INSTALL_HINT",
    "SHIP_HINT",
    "check_executors",
    "driver_heap",
    "executor_python",
    "held_rdds",
    "is_set",
    "jvm_failure",
    "local_driver_memory",
    "release",
    "require_pyspark",
    "spark_session",
]

INSTALL_HINT = "the Spark engine needs PySpark: pip install 'neardup[spark]'"

#: What to do when the executors cannot import neardup (the README says more).
SHIP_HINT = (
    "install neardup on every node, or ship it: --spark-conf spark.submit.pyFiles=neardup.zip "
    "(pure Python; its dependencies installed), or a packed environment with "
    "--spark-conf spark.archives=env.tar.gz#env --spark-conf spark.pyspark.python=./env/bin/python"
)

#: The log4j2 configuration of a quiet session: WARN and above, and none of the notices
#: every local run prints (Spark's "Setting default log level", Hadoop's native library).
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = warn
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
logger.jetty2.name = org.sparkproject.jetty.util.component.AbstractLifeCycle
logger.jetty2.level = error
logger.parquet.name = org.apache.parquet.CorruptStatistics
logger.parquet.level = error
logger.parquet2.name = parquet.CorruptStatistics
logger.parquet2.level = error
"""

#: Lines the JVM writes at start-up whatever the log level: left out of standard error.
_JVM_NOISE = ("WARNING: Using incubator modules:",)


def require_pyspark() -> None:
    """Raise :class:`MissingDependencyError` (saying what to install) without PySpark."""
    try:
        import pyarrow  # noqa: F401
        import pyspark
        import pyspark.sql  # noqa: F401
    except ImportError as e:
        raise MissingDependencyError(f"{INSTALL_HINT} ({e})") from None


#: A local master runs every task in the driver's JVM. Unless the user set its heap
#: (``spark.driver.memory``, ``SPARK_DRIVER_MEMORY``, ``--driver-memory`` or
#: spark-defaults.conf), it is this share of the machine's memory, from Spark's default of
#: 1 GB (too little: 10,000 news articles ran out of it) to :data:`LOCAL_HEAP_MAX_MB`.
LOCAL_HEAP_SHARE = 4
LOCAL_HEAP_MAX_MB = 32 * 1024


def local_driver_memory(master: str, conf: Mapping[str, str] | None = None) -> str | None:
    """The ``spark.driver.memory`` a new session on ``master`` gets when the user set none:
    a quarter of the machine's memory (its cgroup's limit, in a container) for a local
    master, from 1 GB to 32 GB; None for a cluster, or when the user said."""
    if not master.startswith("local"):
        return None
    key = "spark.driver.memory"
    if key in (conf or {}) or os.environ.get("SPARK_DRIVER_MEMORY"):
        return None
    if "--driver-memory" in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return None
    if _in_spark_defaults(key):
        return None
    mb = machine_memory() // LOCAL_HEAP_SHARE >> 20
    return f"{min(max(mb, 1024), LOCAL_HEAP_MAX_MB)}m"


def _in_spark_defaults(key: str) -> bool:
    """Whether spark-defaults.conf (in ``SPARK_CONF_DIR``, else ``SPARK_HOME/conf``) sets
    ``key``."""
    folder = os.environ.get("SPARK_CONF_DIR")
    if not folder and os.environ.get("SPARK_HOME"):
        folder = os.path.join(os.environ["SPARK_HOME"], "conf")
    if not folder:
        return False
    try:
        text = Path(folder, "spark-defaults.conf").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(line.split(None, 1)[:1] == [key] for line in text.splitlines())


def driver_heap(spark: SparkSession) -> int:
    """The most bytes the driver's JVM heap may grow to (what results brought to the
    driver must fit in); 1 GB, Spark's default, when the JVM cannot be asked."""
    try:
        jvm: Any = spark.sparkContext._jvm
        return int(jvm.java.lang.Runtime.getRuntime().maxMemory())
    except Exception:
        return 1 << 30


def jvm_failure(e: BaseException) -> str | None:
    """One line for a Spark failure a user can act on — the JVM out of memory, or gone —
    found in ``e`` or the exceptions it came from; None for any other exception."""
    seen: set[int] = set()
    chain: list[BaseException] = []
    at: BaseException | None = e
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        chain.append(at)
        at = at.__cause__ or at.__context__
    texts = []
    for x in chain:
        try:  # a Java exception's text is asked of the JVM, which may be gone
            texts.append(str(x))
        except Exception:
            texts.append(str(getattr(x, "errmsg", "")))
    if any("OutOfMemoryError" in t for t in texts):
        return f"Spark ran out of memory (java.lang.OutOfMemoryError): {_MORE_MEMORY}"
    if any(type(x).__module__.startswith("py4j") for x in chain) and any(
        isinstance(x, ConnectionError) or type(x).__name__ == "Py4JNetworkError" for x in chain
    ):
        return f"Spark's JVM stopped during the run (its log above says why; most often it ran out of memory): {_MORE_MEMORY}"
    return None


_MORE_MEMORY = (
    "give it more with --spark-conf spark.driver.memory=8g (a local master runs every task "
    "in the driver), or spark.executor.memory on a cluster"
)


def executor_python(conf: Mapping[str, str] | None = None) -> str:
    """The Python the executors run: ``PYSPARK_PYTHON``, else ``spark.pyspark.python`` of
    ``conf``, else this interpreter."""
    given = os.environ.get("PYSPARK_PYTHON") or (conf or {}).get("spark.pyspark.python")
    return given or sys.executable


def spark_session(
    master: str = "local[*]",
    *,
    app_name: str = "neardup",
    conf: Mapping[str, str] | None = None,
    quiet: bool = True,
) -> SparkSession:
    """A SparkSession for ``master`` (an existing session is reused, as Spark does).

    A new session's executors run :func:`executor_python`; on a local master its heap is
    :func:`local_driver_memory` unless the user set one. ``quiet``: the JVM logs WARN and
    above without saying so, its start-up notices are left out, and PySpark's warning about
    the pandas version (the engine does not use pandas) is not shown. A local master binds
    to the loopback address unless ``SPARK_LOCAL_IP`` says otherwise.
    """
    require_pyspark()
    if quiet:
        quiet_pandas_warning()
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    settings = {"spark.ui.showConsoleProgress": "false", **(conf or {})}
    if SparkContext._active_spark_context is not None:  # reuse it as it is
        builder = SparkSession.builder
        for key, value in settings.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    if quiet and "log4j" not in settings.get("spark.driver.extraJavaOptions", ""):
        options = settings.get("spark.driver.extraJavaOptions", "")
        settings["spark.driver.extraJavaOptions"] = (
            f"{options} -Dlog4j2.configurationFile={_log4j2_file().as_uri()}".strip()
        )
    memory = local_driver_memory(master, settings)
    if memory is not None:
        settings["spark.driver.memory"] = memory
    env = {"PYSPARK_PYTHON": executor_python(settings)}
    if master.startswith("local") and "SPARK_LOCAL_IP" not in os.environ:
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    spark_conf = SparkConf().setMaster(master).setAppName(app_name)
    for key, value in settings.items():
        spark_conf.set(key, value)
    with _environ(env):
        if quiet and "PYSPARK_GATEWAY_PORT" not in os.environ:
            # start the JVM ourselves, to leave its start-up notices out of standard error
            from subprocess import PIPE

            from pyspark.java_gateway import launch_gateway

            launch: Any = launch_gateway  # untyped
            gateway = launch(spark_conf, popen_kwargs={"stderr": PIPE})
            proc = getattr(gateway, "proc", None)
            if proc is not None and proc.stderr is not None:
                _forward(proc.stderr)
            SparkContext(conf=spark_conf, gateway=gateway)
        else:
            SparkContext(conf=spark_conf)
    session = SparkSession.builder.getOrCreate()
    sc = session.sparkContext
    configured = sc.getConf().get("spark.pyspark.python")
    if configured and "PYSPARK_PYTHON" not in os.environ:
        sc.pythonExec = configured  # from spark-defaults.conf: Spark reads only the variable
    return session


def held_rdds(spark: SparkSession) -> set[int]:
    """The ids of the RDDs the session keeps: checkpoints, and cached frames computed."""
    return {int(k) for k in spark.sparkContext._jsc.getPersistentRDDs().keySet()}


def release(spark: SparkSession, ids: set[int]) -> None:
    """Let go of the local checkpoints among the kept RDDs ``ids`` (:func:`held_rdds`) now,
    not when the JVM collects them. Cached frames are left alone: the run unpersists its
    own, and one the caller cached (and first computed during the run) is the caller's.
    A frame computed from a checkpoint let go cannot be computed again: what still needs
    one is cached or checkpointed first."""
    kept = spark.sparkContext._jsc.getPersistentRDDs()
    for rdd_id in sorted(ids):
        rdd = kept.get(rdd_id)
        if rdd is not None and rdd.rdd().isCheckpointed():
            rdd.unpersist(False)


def is_set(spark: SparkSession, key: str) -> bool:
    """Whether ``key`` was set for this session (by the user), rather than left to Spark's
    default."""
    try:
        explicit: Mapping[str, str] = spark.conf.getAll  # Spark 4
        if key in explicit:
            return True
    except AttributeError:
        pass
    return bool(spark.sparkContext.getConf().contains(key))


def check_executors(spark: SparkSession) -> str:
    """Run one tiny job: can an executor's Python import neardup and what the engine needs?
    Returns what it found (the executor's Python and neardup's version); raises
    :class:`MissingDependencyError` in one line (saying how to ship neardup) if it cannot,
    or if it has another version of neardup than this driver."""
    from .. import __version__

    python = spark.sparkContext.pythonExec

    def probe(_: Any) -> Iterator[tuple[str, str, str]]:
        import sys as worker_sys

        try:
            import numpy  # noqa: F401
            import pyarrow  # noqa: F401

            import neardup
            import neardup.engine

            yield ("ok", str(getattr(neardup, "__version__", "?")), worker_sys.executable)
        except Exception as e:  # the answer, not a failed task
            yield ("error", f"{type(e).__name__}: {e}", worker_sys.executable)

    try:
        with _jvm_log_level(spark, "OFF"):
            found = spark.sparkContext.parallelize([0], 1).mapPartitions(probe).collect()
    except Exception as e:  # the Python worker did not even start
        reason = _first_line(e)
        raise MissingDependencyError(
            f"the Spark executors cannot run {python} ({reason}); {SHIP_HINT}"
        ) from None
    status, detail, where = found[0]
    if status != "ok":
        raise MissingDependencyError(
            f"the Spark executors' Python ({where}) cannot import neardup ({detail}); {SHIP_HINT}"
        )
    if detail != __version__:
        raise MissingDependencyError(
            f"the Spark executors' Python ({where}) has neardup {detail}, this driver "
            f"{__version__}: install the same version on every node"
        )
    return f"{where}, neardup {detail}"


def quiet_pandas_warning() -> None:
    """Leave out PySpark's FutureWarning about pandas 3 (the engine uses Arrow, not pandas):
    the ``[spark]`` extra asks for pandas 2, but pandas 3 may be installed anyway."""
    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )


def _first_line(e: BaseException) -> str:
    """The telling line of a (Java) exception: the OS or Python error in it, if any."""
    import re

    text = str(e)
    for pattern in (r"Cannot run program [^\n]*", r"\w*(?:Error|Exception): [^\n]*"):
        for found in re.finditer(pattern, text):
            line = found.group(0).strip()
            if not line.startswith(("Py4J", "SparkException", "PythonException")):
                return line[:300]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else type(e).__name__


@contextlib.contextmanager
def _jvm_log_level(spark: SparkSession, level: str) -> Iterator[None]:
    """The JVM's root log level set to ``level`` for a while (a probe's failed task is
    not logged with its stack), then as it was."""
    sc = spark.sparkContext
    try:
        jvm: Any = sc._jvm
        before = str(jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel())
    except Exception:
        before = "WARN"
    sc.setLogLevel(level)
    try:
        yield
    finally:
        sc.setLogLevel(before)


def _log4j2_file() -> Path:
    """The quiet log4j2 configuration, written once where the driver's JVM can read it."""
    digest = hashlib.sha1(_LOG4J2.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"neardup-log4j2-{digest}.properties"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J2, encoding="utf-8")
        os.replace(tmp, path)
    return path


@contextlib.contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    """Environment variables set while the JVM and the context start, then as they were."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _forward(stream: IO[bytes]) -> None:
    """Copy the JVM's standard error to ours, all but its start-up notices (a daemon
    thread, for as long as the JVM runs)."""

    def run() -> None:
        with contextlib.suppress(Exception):
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", "replace")
                if line.startswith(_JVM_NOISE):
                    continue
                sys.stderr.write(line)
                sys.stderr.flush()

    threading.Thread(target=run, name="neardup-jvm-stderr", daemon=True).start()
