"""How many stories the chrome guard holds: the dev benchmarks' F1 with the count table loaded.

    python bench/guard_load.py                       # loads 0, 1, 2, 3, 4, 8; both dev sets
    python bench/guard_load.py --loads 0,2 --bench en-news-dev
    python bench/guard_load.py --real                # the loads real corpora reach, too

The template guard counts every kept story's distinct shingles in a fixed table of 2^26
saturating bytes (``neardup.engine.templates``); with ``chrome_window=0`` it never forgets,
and a crawl of many stories fills it: the slots of shingles that no two stories share then hold counts anyway, and a
story's own text looks like chrome. This bench stands for the stories counted before a run
by starting each run's table with a Poisson number of stories of mean LOAD in every slot
(seeded; what unrelated stories leave there), deduplicates a dev benchmark in one batch
(``dedup_batch``, the defaults) and scores it with ../shared/bench/score.py: once with the
defaults and once with the ``common_after`` and ``chrome_passage`` that
``engine.templates.common_after_for`` and ``chrome_passage_for`` call for at that load (what
a crowded run's note tells the user to set). ``--real`` prints the load
(``BatchResult.chrome_load``) that whole real corpora in ../shared/corpus reach by
themselves, and the stories a slot of the table adds per kept story. ``--after-real`` loads
the table with real stories instead: the real corpora (all but the dev set's own source,
which holds its originals) and then the dev set go through one batch run, and the dev set's
clusters are scored, with the defaults and with each ``--after-real-common`` value; with
``--windows`` for each ``chrome_window`` (0: a guard that never forgets) and
``--after-real-load`` for each load the table starts from (a long history before: a guard
that turns forgets it within two turns).

    python bench/guard_load.py --after-real --after-real-common "" --windows 0,0.36 --after-real-load 0,4
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BenchDataMissing, die, header, read_jsonl
from loaded.sitecustomize import loading
from quality import load_scorer

from neardup.deduper import dedup_batch
from neardup.engine import DedupConfig
from neardup.engine.templates import chrome_passage_for, common_after_for

#: The corpus each dev set was built from (left out of the stories before it).
SOURCE = {
    "zh-news-dev": "corpus/xinwenlianbo-zh.jsonl.gz",
    "en-news-dev": "corpus/reuters21578-en.jsonl.gz",
}

REAL = {
    "hkcnews (48,005)": "corpus/hkcnews-zh-hans.jsonl.gz",
    "20 Newsgroups (18,847)": "corpus/20newsgroups-en.jsonl.gz",
    "Reuters-21578 (19,043)": "corpus/reuters21578-en.jsonl.gz",
    "xinwenlianbo (19,540)": "corpus/xinwenlianbo-zh.jsonl.gz",
}


@contextmanager
def loaded(load: float) -> Iterator[None]:
    """Every CommonShingles made inside starts with Poisson(``load``) stories in each slot."""
    if load <= 0:
        yield
        return
    undo = loading(load)
    try:
        yield
    finally:
        undo()


def scored(bench: str, load: float, cfg: DedupConfig) -> dict[str, float]:
    rows = list(read_jsonl(f"bench/{bench}.jsonl.gz"))
    with loaded(load):
        result = dedup_batch([r["id"] for r in rows], [r["text"] or "" for r in rows], config=cfg)
    pred = {d.id: d.cluster for d in result.decisions}
    out: dict[str, float] = load_scorer().score(rows, pred)
    out["load"] = result.chrome_load
    return out


def after_real(
    bench: str, common_after: int, window: float = 0.0, load: float = 0.0
) -> tuple[float, dict[str, float]]:
    """The dev set ``bench`` deduplicated after the real corpora but its source, in one
    batch run (the guard turning at ``window``, its table started at ``load``): the load at
    the end and the dev set's scores."""
    ids: list[str] = []
    texts: list[str] = []
    for relative in REAL.values():
        if relative != SOURCE[bench]:
            for r in read_jsonl(relative):
                ids.append(f"{relative}:{r['id']}")
                texts.append(r.get("text") or "")
    before = len(ids)
    rows = list(read_jsonl(f"bench/{bench}.jsonl.gz"))
    ids += [r["id"] for r in rows]
    texts += [r["text"] or "" for r in rows]
    cfg = DedupConfig(common_after=common_after, chrome_window=window)
    with loaded(load):
        result = dedup_batch(ids, texts, config=cfg)
    pred = {d.id: d.cluster for d in result.decisions[before:]}
    return result.chrome_load, load_scorer().score(rows, pred)


def real() -> None:
    print("| corpus | documents | kept (stories) | load at the end | load a story |")
    print("|---|---:|---:|---:|---:|")
    for name, relative in REAL.items():
        rows = list(read_jsonl(relative))
        result = dedup_batch([str(r["id"]) for r in rows], [r.get("text") or "" for r in rows])
        kept = sum(1 for d in result.decisions if not d.is_duplicate)
        print(
            f"| {name} | {len(rows):,} | {kept:,} | {result.chrome_load:.3f} "
            f"| {result.chrome_load / kept:.2e} |",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--loads", default="0,1,2,3,4,8", help="comma-separated loads to start from")
    ap.add_argument("--bench", action="append", help="zh-news-dev, en-news-dev (default both)")
    ap.add_argument("--real", action="store_true", help="also the loads of the real corpora")
    ap.add_argument(
        "--after-real", action="store_true", help="only the dev sets after the real corpora"
    )
    ap.add_argument(
        "--after-real-common", default="6,9", help="common_after values to try after them"
    )
    ap.add_argument(
        "--windows",
        default="0",
        help="with --after-real: comma-separated chrome_window values to run each with",
    )
    ap.add_argument(
        "--after-real-load",
        default="0",
        help="with --after-real: comma-separated loads to start the table from",
    )
    args = ap.parse_args()
    benches = args.bench or ["zh-news-dev", "en-news-dev"]
    loads = [float(x) for x in args.loads.split(",") if x.strip()]
    print(header("The chrome guard's load and the dev benchmarks' F1"))
    try:
        if args.after_real:
            print(
                "| benchmark | load at the start | chrome_window | common_after "
                "| load at the end | F1 | P / R |"
            )
            print("|---|---:|---:|---:|---:|---:|---|")
            default = DedupConfig().common_after
            values = [default] + [int(x) for x in args.after_real_common.split(",") if x]
            windows = [float(x) for x in args.windows.split(",") if x.strip()]
            starts = [float(x) for x in args.after_real_load.split(",") if x.strip()]
            for bench in benches:
                for start in starts:
                    for window in windows:
                        for common_after in values:
                            load, sc = after_real(bench, common_after, window, start)
                            print(
                                f"| {bench} | {start:g} | {window:g} | {common_after} "
                                f"| {load:.3f} | {sc['f1']:.4f} | "
                                f"{sc['precision']:.4f} / {sc['recall']:.4f} |",
                                flush=True,
                            )
            return 0
        if args.real:
            real()
            print()
        base_cfg = DedupConfig()
        print(
            "| load at the start | benchmark | F1, defaults | P / R "
            "| common_after, chrome_passage for the load | F1 | P / R |"
        )
        print("|---:|---|---:|---|---|---:|---|")
        for load in loads:
            for bench in benches:
                base = scored(bench, load, base_cfg)
                limit = common_after_for(load, base_cfg.common_after)
                passage = chrome_passage_for(load, base_cfg.chrome_passage)
                row = f"| {load:g} | {bench} | {base['f1']:.4f} | {base['precision']:.4f} / "
                row += f"{base['recall']:.4f} | {limit}, {passage} | "
                if (limit, passage) == (base_cfg.common_after, base_cfg.chrome_passage):
                    row += "(the defaults) | |"
                else:
                    cfg = DedupConfig(common_after=limit, chrome_passage=passage)
                    other = scored(bench, load, cfg)
                    row += f"{other['f1']:.4f} | {other['precision']:.4f} / {other['recall']:.4f} |"
                print(row, flush=True)
    except BenchDataMissing as e:
        die(e)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
