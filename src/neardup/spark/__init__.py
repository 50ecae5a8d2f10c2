"""Deduplicate a Spark DataFrame with the same decisions as :func:`~neardup.batch.dedup_batch`:
the batch pipeline as Spark stages, for corpora bigger than one machine.

======================  ===============================================================
:mod:`.pipeline`        :func:`dedup`: check, sketch, candidates, verify, clusters
:mod:`.verify`          the engine's prefilter, verify and best match on Arrow batches
:mod:`.templates`       the template guard's table, a round at a time
:mod:`.links`           verdicts, best matches and clusters on the driver, when few
:mod:`.graph`           connected components (the clusters)
:mod:`.columns`         sketches as columns, Arrow schemas
:mod:`.session`         the session, and the optional dependency
:mod:`.cli`             ``neardup dedup --engine spark``
======================  ===============================================================

PySpark is an optional dependency: ``pip install 'neardup[spark]'``.
"""

from __future__ import annotations

from .cli import run_cli
from .graph import connected_components
from .pipeline import SparkResult, dedup
from .session import INSTALL_HINT, require_pyspark, spark_session

__all__ = [
    "INSTALL_HINT",
    "SparkResult",
    "connected_components",
    "dedup",
    "require_pyspark",
    "run_cli",
    "spark_session",
]
