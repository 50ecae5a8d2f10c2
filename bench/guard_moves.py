"""Could verification run ahead, in parallel, against the template guard as it was a few
documents before? Only where nothing it reads has moved since: this counts how often.

    python bench/guard_moves.py                     # the first 10,000 hkcnews articles
    python bench/guard_moves.py --limit 5000 --windows 4,8,32
    python bench/guard_moves.py --blocks 64,256     # and what a guard in blocks would cost

It runs ``dedup_batch`` (one process) and records, for each story counted in the template
guard (``CommonShingles.add``), the slots whose *level* moved — the guard reads a slot as
seen in fewer than 2 stories, in 2 or more (a passage), or in ``common_after`` or more
(chrome) — and, for each document verified against candidates (``best_match``), the slots of
its and its candidates' shingles. A document's verdicts computed ahead against the guard as
it was ``W`` documents before would hold only if none of those slots moved in between (a
moved slot can change which units are chrome, and so a score); the table gives the share of
verified documents for which one did. The decisions are the run's own: the recording reads,
it does not change anything.

``--blocks B,...``: what a rule that verification ahead could rely on would cost — the guard
taking the stories of each block of B documents only once the block is decided (so every
document of a block is verified against the same guard): the dev sets' scores
(../shared/bench/score.py) and the documents of the hkcnews articles whose cluster changes,
against the guard as it is (a block of 1). Only measured here, in the batch run: no runner
works that way.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BenchDataMissing, die, header, read_jsonl
from quality import load_scorer

CORPUS = "corpus/hkcnews-zh-hans.jsonl.gz"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--limit", type=int, default=10_000, help="hkcnews articles (default 10,000)")
    ap.add_argument("--windows", default="8,32,128,512", help="documents verified ahead")
    ap.add_argument("--blocks", default="", help="guards in blocks of this many documents")
    args = ap.parse_args()
    windows = [int(w) for w in args.windows.split(",") if w.strip()]
    blocks = [int(b) for b in args.blocks.split(",") if b.strip()]

    from neardup.engine.config import DedupConfig
    from neardup.engine.templates import SLOT_BITS, CommonShingles

    batch: Any = importlib.import_module("neardup.batch")
    try:
        rows = list(read_jsonl(CORPUS, args.limit))
    except BenchDataMissing as exc:
        die(exc)
    ids = [str(r.get("id", i)) for i, r in enumerate(rows)]
    texts = [str(r["text"]) for r in rows]
    del rows
    shift = np.uint32(32 - SLOT_BITS)
    # ("add" or "verify", the document being decided, the slots moved or read)
    log: list[tuple[str, int, Any]] = []
    decided = [0]  # documents decided so far

    def level(counts: Any, limit: int) -> Any:
        return (counts >= 2).astype(np.int8) + (counts >= limit).astype(np.int8)

    add = CommonShingles.add

    def counted(self: CommonShingles, vocab: Any) -> None:
        slots = np.unique(np.asarray(vocab, dtype=np.uint32) >> shift)
        before = level(self.counts[slots], self.limit)
        add(self, vocab)
        log.append(("add", decided[0], slots[level(self.counts[slots], self.limit) != before]))

    best_match = batch.best_match

    def matched(sketch: Any, pool: Any, cfg: Any, guard: Any) -> Any:
        pool = list(pool)
        read = [sketch.vocab >> shift] + [other.vocab >> shift for _, other in pool]
        log.append(("verify", decided[0], np.unique(np.concatenate(read))))
        return best_match(sketch, pool, cfg, guard)

    settle = batch.BatchRun._settle

    def settled(self: Any, i: int) -> None:
        settle(self, i)
        decided[0] += 1

    CommonShingles.add = counted  # type: ignore[method-assign]
    batch.best_match = matched
    batch.BatchRun._settle = settled
    try:
        batch.dedup_batch(ids, texts, config=DedupConfig(), workers=1)
    finally:
        CommonShingles.add = add  # type: ignore[method-assign]
        batch.best_match = best_match
        batch.BatchRun._settle = settle
    moves = [len(x) for kind, _, x in log if kind == "add"]
    adds = [(d, x) for kind, d, x in log if kind == "add"]
    at = np.array([d for d, _ in adds], dtype=np.int64)
    verified = [(d, x) for kind, d, x in log if kind == "verify"]
    print(header("Verifying ahead: does the template guard move under it?", {}))
    print(
        f"\n{len(texts):,} hkcnews articles: {len(moves):,} stories counted, each moving "
        f"{np.mean(moves):.0f} slots' level on average; {len(verified):,} documents verified\n"
    )
    print(
        "| verified this many documents ahead | verified documents reading a slot moved meanwhile |"
    )
    print("|--:|--:|")
    for w in windows:
        stale = 0
        for d, read in verified:  # the stories counted by the w documents before document d
            lo, hi = np.searchsorted(at, d - w), np.searchsorted(at, d)
            moved = [x for _, x in adds[lo:hi]]
            if moved and np.isin(read, np.concatenate(moved)).any():
                stale += 1
        print(f"| {w} | {stale / max(1, len(verified)):.1%} |")
    if blocks:
        in_blocks(ids, texts, blocks)


def clusters(ids: list[str], texts: list[str], block: int) -> dict[str, str]:
    """Each document's cluster from ``dedup_batch`` (one process) with the template guard
    taking stories in blocks of ``block`` decided documents."""
    from neardup.engine.config import DedupConfig
    from neardup.engine.templates import CommonShingles

    batch: Any = importlib.import_module("neardup.batch")
    add, settle = CommonShingles.add, batch.BatchRun._settle
    waiting: list[tuple[CommonShingles, Any]] = []
    decided = [0]

    def held(self: CommonShingles, vocab: Any) -> None:
        waiting.append((self, vocab))

    def settled(self: Any, i: int) -> None:
        settle(self, i)
        decided[0] += 1
        if decided[0] % block == 0:
            for guard, vocab in waiting:
                add(guard, vocab)
            waiting.clear()

    if block > 1:
        CommonShingles.add = held  # type: ignore[method-assign]
        batch.BatchRun._settle = settled
    try:
        result = batch.dedup_batch(ids, texts, config=DedupConfig(), workers=1)
    finally:
        CommonShingles.add = add  # type: ignore[method-assign]
        batch.BatchRun._settle = settle
    return {d.id: d.cluster for d in result.decisions}


def in_blocks(ids: list[str], texts: list[str], blocks: list[int]) -> None:
    """The dev sets' scores and the hkcnews documents that change cluster, for each block."""
    scorer = load_scorer()
    dev = {}
    for bench in ("zh-news-dev", "en-news-dev"):
        rows = list(read_jsonl(f"bench/{bench}.jsonl.gz"))
        dev[bench] = (rows, [str(r["id"]) for r in rows], [str(r["text"] or "") for r in rows])
    base = clusters(ids, texts, 1)
    print(
        "\n| guard takes stories every | zh-dev F1 | en-dev F1 | hkcnews documents in another cluster |"
    )
    print("|--:|--:|--:|--:|")
    for block in [1, *blocks]:
        f1 = []
        for rows, dev_ids, dev_texts in dev.values():
            f1.append(scorer.score(rows, clusters(dev_ids, dev_texts, block))["f1"])
        moved = (
            sum(1 for k, c in clusters(ids, texts, block).items() if base[k] != c)
            if block > 1
            else 0
        )
        print(
            f"| {block} document{'s' if block > 1 else ''} | {f1[0]:.4f} | {f1[1]:.4f} | {moved:,} |"
        )


if __name__ == "__main__":
    main()
