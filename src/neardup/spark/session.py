"""The Spark session and the optional dependency: PySpark with pyarrow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import MissingDependencyError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["INSTALL_HINT", "require_pyspark", "spark_session"]

INSTALL_HINT = "the Spark engine needs PySpark: pip install 'neardup[spark]'"


def require_pyspark() -> None:
    """Raise :class:`MissingDependencyError` (saying what to install) without PySpark."""
    try:
        import pyarrow  # noqa: F401
        import pyspark
        import pyspark.sql  # noqa: F401
    except ImportError as e:
        raise MissingDependencyError(f"{INSTALL_HINT} ({e})") from None


def spark_session(
    master: str = "local[*]", *, app_name: str = "neardup", conf: dict[str, str] | None = None
) -> SparkSession:
    """A SparkSession for ``master`` (an existing session is reused, as Spark does)."""
    require_pyspark()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {"spark.ui.showConsoleProgress": "false", **(conf or {})}
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
