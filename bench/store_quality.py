"""Does a store change the answers? The dev benchmarks deduplicated three ways, scored by
../shared/bench/score.py: one batch run in memory; the same documents split into 5 runs one
after the other on one SQLite file (incremental); and 4 processes feeding their shares at the
same time into one store (SQLite, and Redis on a redis-server this script starts).

    python bench/store_quality.py [--bench zh-news-dev] [--procs 4] [--batch 64]

The incremental runs must reach exactly the batch run's clusters (the table says how many
documents differ: 0). Concurrent processes decide documents in another order, so a few
clusters may be labelled by another copy; the quality must stay the same.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import header, read_jsonl
from quality import load_scorer
from store_speed import start_redis

from neardup import Deduper, dedup_batch


def feed(url: str, docs: list[tuple[str, str]], batch: int, start: Any) -> None:
    with Deduper(store=url, explain=False) as dd:
        start.wait()
        for i in range(0, len(docs), batch):
            dd.check_and_add_many(docs[i : i + batch])


def concurrent(url: str, docs: list[tuple[str, str]], procs: int, batch: int) -> dict[str, str]:
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(procs)
    workers = [
        ctx.Process(target=feed, args=(url, docs[p::procs], batch, start)) for p in range(procs)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
        if w.exitcode != 0:
            raise SystemExit("a feeding process failed")
    with Deduper(store=url, explain=False) as dd:
        return {i: dd.decision(i).cluster for i, _ in docs}


def incremental(url: str, docs: list[tuple[str, str]], runs: int, batch: int) -> dict[str, str]:
    size = -(-len(docs) // runs)
    out: dict[str, str] = {}
    for lo in range(0, len(docs), size):
        with Deduper(store=url, explain=False) as dd:
            part = docs[lo : lo + size]
            for i in range(0, len(part), batch):
                out.update((d.id, d.cluster) for d in dd.check_and_add_many(part[i : i + batch]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", action="append")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    scorer = load_scorer()
    scratch = Path(tempfile.mkdtemp(prefix="neardup-store-quality-"))
    redis_proc, port = start_redis(scratch)
    print(header("Quality with stores: batch vs incremental vs concurrent processes"))
    print(
        "| benchmark | run | precision | recall | F1 | ARI | heavy recall | docs labelled unlike batch |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    try:
        for bench in args.bench or ["zh-news-dev", "en-news-dev"]:
            rows = list(read_jsonl(f"bench/{bench}.jsonl.gz"))
            docs = [(r["id"], r["text"] or "") for r in rows]
            ref = {
                d.id: d.cluster
                for d in dedup_batch([i for i, _ in docs], [t for _, t in docs]).decisions
            }
            tag = uuid.uuid4().hex[:8]
            runs = {
                "one batch run (memory)": ref,
                "5 incremental runs (SQLite)": incremental(
                    f"sqlite:///{scratch / f'{tag}-inc.db'}", docs, 5, args.batch
                ),
                f"{args.procs} processes at once (SQLite)": concurrent(
                    f"sqlite:///{scratch / f'{tag}-con.db'}", docs, args.procs, args.batch
                ),
                f"{args.procs} processes at once (Redis)": concurrent(
                    f"redis://127.0.0.1:{port}/0?namespace=q{tag}", docs, args.procs, args.batch
                ),
            }
            for name, pred in runs.items():
                s = scorer.score(rows, pred)
                heavy = s.get("recall_by_level", {}).get("heavy", float("nan"))
                differ = sum(pred[i] != ref[i] for i in ref)
                print(
                    f"| {bench} | {name} | {s['precision']:.3f} | {s['recall']:.3f} "
                    f"| {s['f1']:.3f} | {s['ari']:.3f} | {heavy:.2f} | {differ} |"
                )
    finally:
        redis_proc.terminate()
        redis_proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    print("\nCommand: python bench/store_quality.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
