"""Write every document's decision, one JSON line each, to diff two versions of the engine.

When a change is meant to keep the decisions, run this with the old code and the new (the
``neardup`` that ``PYTHONPATH`` finds) and compare the files document by document:

    PYTHONPATH=/path/to/old/src python bench/decisions.py --corpus zh-dev -o old.jsonl
    python bench/decisions.py --corpus zh-dev -o new.jsonl
    python bench/decisions.py --diff old.jsonl new.jsonl

``--corpus``: ``zh-dev`` and ``en-dev`` (the dev benchmarks), ``hk10k`` (the first 10,000
hkcnews articles; ``hk20k`` 20,000), ``ng`` (20 Newsgroups), ``reuters`` (Reuters-21578:
many short items) and ``xwlb`` (《新闻联播》). ``--runner``: ``batch`` (``dedup_batch``),
``stream`` (a memory Deduper fed batches of 256), ``sqlite`` (the same on a new SQLite store:
compact), ``sqlite-full`` (``format=full``), ``redis`` and ``redis-full`` (a namespace on a
redis-server this script starts) or ``spark`` (``neardup.spark.dedup`` on local[2]). Only
public names are used, so any version runs it (``format=`` needs a version with compact
stores). Scores are rounded to 6 places. ``--diff`` prints the first differences and counts
them by kind: kept in one and dropped in the other, dropped as a duplicate of another
document, in another cluster, extending another, or the score alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _data import BenchDataMissing, die, read_jsonl

CORPORA = {
    "zh-dev": ("bench/zh-news-dev.jsonl.gz", None),
    "en-dev": ("bench/en-news-dev.jsonl.gz", None),
    "hk10k": ("corpus/hkcnews-zh-hans.jsonl.gz", 10_000),
    "hk20k": ("corpus/hkcnews-zh-hans.jsonl.gz", 20_000),
    "ng": ("corpus/20newsgroups-en.jsonl.gz", None),
    "reuters": ("corpus/reuters21578-en.jsonl.gz", None),
    "xwlb": ("corpus/xinwenlianbo-zh.jsonl.gz", None),
}


def _row(d: Any) -> dict[str, Any]:
    out = {
        "id": d.id,
        "is_duplicate": d.is_duplicate,
        "duplicate_of": d.duplicate_of,
        "cluster": d.cluster,
        "score": round(float(d.score), 6),
        "measure": d.measure,
    }
    extends = getattr(d, "extends", None)
    if extends is not None:
        out["extends"] = extends
    return out


def decide(
    corpus: str, runner: str, keep: str, sketch_memory: int | None = None
) -> list[dict[str, Any]]:
    relative, limit = CORPORA[corpus]
    docs = list(read_jsonl(relative, limit))
    ids = [str(d["id"]) for d in docs]
    texts = [d["text"] for d in docs]
    if runner == "batch":
        from neardup import dedup_batch

        found = dedup_batch(ids, texts, keep=keep, sketch_memory=sketch_memory)
        return [_row(d) for d in found.decisions]
    if runner in ("stream", "sqlite", "sqlite-full", "redis", "redis-full"):
        from neardup import Deduper

        with tempfile.TemporaryDirectory() as folder:
            full = "format=full" if runner.endswith("-full") else ""
            redis_proc = None
            if runner == "stream":
                store = "memory://"
            elif runner.startswith("sqlite"):
                store = f"sqlite:///{folder}/s.db" + (f"?{full}" if full else "")
            else:
                from store_speed import start_redis

                redis_proc, port = start_redis(Path(folder))
                store = f"redis://127.0.0.1:{port}/0?namespace=d" + (f"&{full}" if full else "")
            out: list[dict[str, Any]] = []
            try:
                with Deduper(store=store, explain=False) as dd:
                    pairs = list(zip(ids, texts, strict=True))
                    for lo in range(0, len(pairs), 256):
                        out.extend(_row(d) for d in dd.check_and_add_many(pairs[lo : lo + 256]))
            finally:
                if redis_proc is not None:
                    redis_proc.terminate()
                    redis_proc.wait()
            return out
    if runner == "spark":
        from neardup.spark import dedup
        from neardup.spark.session import spark_session

        # the session a user's `neardup spark` gets (its heap sized to the machine: Spark's
        # default of 1 GiB runs out on 20 Newsgroups' longest posts)
        spark = spark_session("local[2]", conf={"spark.sql.shuffle.partitions": "8"})
        frame = spark.createDataFrame(
            [(i, t, n) for n, (i, t) in enumerate(zip(ids, texts, strict=True))],
            "id string, text string, n long",
        )
        result = dedup(frame, order_col="n", keep=keep)
        rows = {r["id"]: r for r in result.clusters.collect()}
        return [
            {
                "id": i,
                "is_duplicate": rows[i]["duplicate_of"] is not None,
                "duplicate_of": rows[i]["duplicate_of"],
                "cluster": rows[i]["cluster"],
                "score": round(float(rows[i]["score"]), 6),
                "measure": rows[i]["measure"],
                **({"extends": rows[i]["extends"]} if rows[i]["extends"] is not None else {}),
            }
            for i in ids
        ]
    raise SystemExit(f"unknown runner {runner!r}")


def diff(a: Path, b: Path) -> int:
    left = [json.loads(x) for x in a.read_text(encoding="utf-8").splitlines()]
    right = [json.loads(x) for x in b.read_text(encoding="utf-8").splitlines()]
    if len(left) != len(right):
        print(f"{a}: {len(left)} documents, {b}: {len(right)}")
        return 1
    differ = [(x, y) for x, y in zip(left, right, strict=True) if x != y]
    for x, y in differ[:20]:
        print(f"- {json.dumps(x, ensure_ascii=False)}\n+ {json.dumps(y, ensure_ascii=False)}")
    kinds: dict[str, int] = {}
    for x, y in differ:
        kind = _kind(x, y)
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"{len(differ)} of {len(left)} decisions differ")
    for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {n:6,}  {kind}")
    return 1 if differ else 0


def _kind(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What differs between two decisions of one document, the weightiest first."""
    if old["is_duplicate"] != new["is_duplicate"]:
        return (
            "dropped in NEW, kept in OLD" if new["is_duplicate"] else "kept in NEW, dropped in OLD"
        )
    if old["duplicate_of"] != new["duplicate_of"]:
        return "dropped in both, as a copy of different documents"
    if old.get("extends") != new.get("extends"):
        return "kept in both, extends differs"
    if old["cluster"] != new["cluster"]:
        return "another cluster (label or members)"
    if old["measure"] != new["measure"]:
        return "the measure alone"
    return "the score alone"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--corpus", choices=sorted(CORPORA), default="zh-dev")
    p.add_argument(
        "--runner",
        choices=["batch", "stream", "sqlite", "sqlite-full", "redis", "redis-full", "spark"],
        default="batch",
    )
    p.add_argument("--keep", choices=["first", "longest", "earliest"], default="first")
    p.add_argument(
        "--sketch-memory",
        type=int,
        metavar="BYTES",
        help="batch: the sketches' memory (0: every decided sketch to the file and back)",
    )
    p.add_argument("-o", "--output", type=Path)
    p.add_argument("--diff", nargs=2, type=Path, metavar=("OLD", "NEW"))
    args = p.parse_args()
    if args.diff:
        return diff(*args.diff)
    t0 = time.perf_counter()
    try:
        rows = decide(args.corpus, args.runner, args.keep, args.sketch_memory)
    except BenchDataMissing as e:
        die(e)
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if args.output is None:
        sys.stdout.write(lines)
    else:
        args.output.write_text(lines, encoding="utf-8")
    dups = sum(r["is_duplicate"] for r in rows)
    print(
        f"{args.corpus} {args.runner} keep={args.keep}: {len(rows):,} documents, "
        f"{dups:,} duplicates, {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
