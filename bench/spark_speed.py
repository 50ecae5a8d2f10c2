"""The Spark engine against the local engine: agreement on the dev benchmarks, then time and
shuffle size on the hkcnews corpus at 1x, 2x and 4x (copies concatenated with new ids).

    python bench/spark_speed.py                       # local[2], 1x 2x 4x, agreement
    python bench/spark_speed.py --scale 1 --repeat 3  # medians of three runs

Agreement: both engines' duplicate pairs (documents in one cluster) on zh-news-dev and
en-news-dev, and the documents whose decision (cluster, duplicate_of) differs. Speed: the
whole corpus through ``dedup_batch`` and through ``neardup.spark.dedup`` in the same run;
shuffle bytes from Spark's REST API (every stage of the run), stage seconds from the run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from itertools import combinations
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import die, header, read_jsonl

from neardup.deduper import dedup_batch


def pairs_of(clusters: dict[str, str]) -> set[tuple[str, str]]:
    """Every pair of documents placed in one cluster."""
    groups: dict[str, list[str]] = {}
    for doc, cluster in clusters.items():
        groups.setdefault(cluster, []).append(doc)
    return {tuple(sorted(p)) for g in groups.values() for p in combinations(g, 2)}  # type: ignore[misc]


def shuffle_bytes(spark: Any) -> tuple[int, int]:
    """Shuffle bytes written and read so far by the application, from the REST API."""
    url = spark.sparkContext.uiWebUrl
    app = spark.sparkContext.applicationId
    with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/stages?status=complete") as r:
        stages = json.load(r)
    written = sum(s.get("shuffleWriteBytes", 0) for s in stages)
    read = sum(s.get("shuffleReadBytes", 0) for s in stages)
    return written, read


def agreement(spark: Any, bench: str) -> dict[str, Any]:
    """Pairs in common between the two engines on one dev benchmark."""
    from neardup.spark import dedup

    rows = list(read_jsonl(f"bench/{bench}.jsonl.gz"))
    ids, texts = [r["id"] for r in rows], [r["text"] or "" for r in rows]
    local = dedup_batch(ids, texts)
    frame = spark.createDataFrame(list(zip(ids, texts, strict=True)), "id string, text string")
    t0 = time.perf_counter()
    result = dedup(frame)
    got = {r["id"]: (r["cluster"], r["duplicate_of"]) for r in result.clusters.collect()}
    seconds = time.perf_counter() - t0
    want = {d.id: (d.cluster, d.duplicate_of) for d in local.decisions}
    a = pairs_of({k: v[0] for k, v in want.items()})
    b = pairs_of({k: v[0] for k, v in got.items()})
    return {
        "bench": bench,
        "local_pairs": len(a),
        "spark_pairs": len(b),
        "common": len(a & b),
        "only_local": len(a - b),
        "only_spark": len(b - a),
        "decisions_differ": sum(1 for k in want if got.get(k) != want[k]),
        "rounds": result.stats["rounds"],
        "seconds": round(seconds, 1),
    }


def corpus(scale: int, rows: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The corpus ``scale`` times over, each copy with new ids."""
    ids = [f"{k}:{r['id']}" for k in range(scale) for r in rows]
    texts = [r["text"] or "" for _ in range(scale) for r in rows]
    return ids, texts


def speed(spark: Any, scale: int, rows: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    """One run of each engine on the corpus at ``scale``; Spark reads it from ``path``."""
    from neardup.spark import dedup

    ids, texts = corpus(scale, rows)
    t0 = time.perf_counter()
    local = dedup_batch(ids, texts)
    local_s = time.perf_counter() - t0
    if not path.exists():
        with open(path, "w", encoding="utf-8") as f:
            for i, t in zip(ids, texts, strict=True):
                f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")
    w0, r0 = shuffle_bytes(spark)
    t0 = time.perf_counter()
    frame = spark.read.json(str(path), schema="id string, text string")
    result = dedup(frame)
    kept = result.stats["kept"]
    spark_s = time.perf_counter() - t0
    w1, r1 = shuffle_bytes(spark)
    result.clusters.unpersist()
    result.errors.unpersist()
    local_kept = sum(1 for d in local.decisions if not d.is_duplicate)
    return {
        "scale": scale,
        "docs": len(ids),
        "local_s": local_s,
        "spark_s": spark_s,
        "shuffle_write_mb": (w1 - w0) / 1e6,
        "shuffle_read_mb": (r1 - r0) / 1e6,
        "kept_local": local_kept,
        "kept_spark": kept,
        "candidate_pairs": result.stats["candidate_pairs"],
        "verified_pairs": result.stats["prefiltered_pairs"],
        "rounds": result.stats["rounds"],
        "stages": result.stats["timings"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--scale", type=int, action="append", help="corpus multiples (default 1 2 4)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per scale; medians are shown")
    ap.add_argument("--no-agreement", action="store_true")
    ap.add_argument("--memory", default="8g", help="spark.driver.memory (local mode)")
    ap.add_argument("--work", default="/tmp/neardup-spark-bench", help="scratch folder")
    args = ap.parse_args()
    from neardup.spark import spark_session

    try:
        rows = list(read_jsonl("corpus/hkcnews-zh-hans.jsonl.gz"))
    except FileNotFoundError as e:
        die(e)
    spark = spark_session(
        args.master,
        conf={
            "spark.driver.memory": args.memory,
            "spark.sql.shuffle.partitions": "8",
            "spark.ui.enabled": "true",
            "spark.ui.showConsoleProgress": "false",
            # shuffle bytes are summed over the completed stages the UI still holds: keep
            # every stage of the session, or later runs would lose earlier ones from the sum
            "spark.ui.retainedStages": "1000000",
            "spark.ui.retainedJobs": "1000000",
            "spark.sql.ui.retainedExecutions": "100000",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(header("Spark engine vs local engine", {"spark": f"{spark.version} {args.master}"}))
    if not args.no_agreement:
        print(
            "| benchmark | local pairs | spark pairs | in common | only local | only spark "
            "| decisions differing | rounds | spark s |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for bench in ("zh-news-dev", "en-news-dev"):
            a = agreement(spark, bench)
            print(
                f"| {bench} | {a['local_pairs']:,} | {a['spark_pairs']:,} | {a['common']:,} "
                f"| {a['only_local']} | {a['only_spark']} | {a['decisions_differ']} "
                f"| {a['rounds']} | {a['seconds']} |",
                flush=True,
            )
        print()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    print(
        "| corpus | docs | local s | spark s | ratio | shuffle write MB | shuffle read MB "
        "| candidate pairs | verified | rounds | kept local / spark |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    stage_rows = []
    for scale in args.scale or [1, 2, 4]:
        runs = [
            speed(spark, scale, rows, work / f"hkcnews-x{scale}.jsonl") for _ in range(args.repeat)
        ]
        med = {
            k: statistics.median(r[k] for r in runs)
            for k in ("local_s", "spark_s", "shuffle_write_mb", "shuffle_read_mb")
        }
        r = runs[0]
        print(
            f"| hkcnews x{scale} | {r['docs']:,} | {med['local_s']:.1f} | {med['spark_s']:.1f} "
            f"| {med['spark_s'] / med['local_s']:.1f}x | {med['shuffle_write_mb']:,.0f} "
            f"| {med['shuffle_read_mb']:,.0f} | {r['candidate_pairs']:,} | {r['verified_pairs']:,} "
            f"| {r['rounds']} | {r['kept_local']:,} / {r['kept_spark']:,} |",
            flush=True,
        )
        stages = {k: statistics.median(run["stages"][k] for run in runs) for k in r["stages"]}
        stage_rows.append((scale, stages))
    names = list(stage_rows[0][1])
    print("\nwhere the Spark time goes (seconds, medians):\n")
    print("| corpus | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for scale, stages in stage_rows:
        print(f"| hkcnews x{scale} | " + " | ".join(f"{stages[n]:.1f}" for n in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
