"""Connected components of a graph as Spark frames: the clusters of a run.

Each duplicate links to its match, which came earlier; the components of those links are
the stories, labelled by their smallest node — :func:`~neardup.engine.roots` for a corpus
that does not fit one machine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InputError
from .session import require_pyspark

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["connected_components"]


def connected_components(
    edges: DataFrame, *, src: str = "src", dst: str = "dst", max_iterations: int = 100
) -> DataFrame:
    """The connected components of an undirected graph given as a frame of edges.

    ``src`` and ``dst`` hold integer node ids. Returns ``node, component`` for every node on
    an edge, ``component`` being the smallest node of its component. This is the large-star
    / small-star iteration of Kiveris et al., "Connected Components in MapReduce and Beyond"
    (2014), in Spark joins and aggregations: nothing is collected on the driver, and each
    round's edges are checkpointed so the plan stays short. Isolated nodes are not listed.
    """
    require_pyspark()
    from pyspark.sql import functions as F

    u, v, m = F.col("u"), F.col("v"), F.col("m")
    e = (
        edges.select(F.col(src).cast("long").alias("a"), F.col(dst).cast("long").alias("b"))
        .filter(F.col("a").isNotNull() & F.col("b").isNotNull() & (F.col("a") != F.col("b")))
        .select(F.greatest("a", "b").alias("u"), F.least("a", "b").alias("v"))
        .distinct()
        .localCheckpoint()
    )
    size = e.count()
    for _ in range(max_iterations):
        # large star: every neighbour larger than u attaches to the smallest node u sees
        both = e.unionByName(e.select(v.alias("u"), u.alias("v")))
        low = both.groupBy("u").agg(F.min("v").alias("m")).withColumn("m", F.least(m, u))
        large = both.join(low, "u").filter(v > u).select(v.alias("u"), m.alias("v")).distinct()
        # small star: u and its smaller neighbours attach to the smallest of them
        joined = large.join(large.groupBy("u").agg(F.min("v").alias("m")), "u")
        small = (
            joined.select(v.alias("u"), m.alias("v"))
            .filter(u != v)
            .unionByName(joined.select(u, m.alias("v")))
            .distinct()
            .localCheckpoint()
        )
        new_size = small.count()
        done = new_size == size and small.join(e, ["u", "v"], "left_anti").isEmpty()
        e, size = small, new_size
        if done:
            break
    else:
        raise InputError(f"connected components did not settle in {max_iterations} rounds")
    roots = e.select(v.alias("node"), v.alias("component")).distinct()
    return e.select(u.alias("node"), v.alias("component")).unionByName(roots)
