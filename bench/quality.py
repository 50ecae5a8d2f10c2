"""Detection quality on the shared near-duplicate benchmarks, scored by ../shared/bench/score.py.

    python bench/quality.py                       # both dev sets, default settings
    python bench/quality.py --bench zh-news-dev --set threshold=0.65
    python bench/quality.py --field title          # a corpus of titles alone

Prints precision, recall, F1, ARI and recall per reprint level as a markdown table.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import environment, read_jsonl, shared_path

from neardup.deduper import dedup_batch
from neardup.engine import DedupConfig


def load_scorer() -> Any:
    """The benchmark's own scorer, ../shared/bench/score.py."""
    spec = importlib.util.spec_from_file_location("score", shared_path("bench/score.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_settings(pairs: list[str]) -> dict[str, Any]:
    """``name=value`` options of DedupConfig, values parsed as JSON where they can be."""
    out: dict[str, Any] = {}
    for item in pairs:
        name, _, value = item.partition("=")
        try:
            out[name] = json.loads(value)
        except json.JSONDecodeError:
            out[name] = value
        if isinstance(out[name], list):
            out[name] = tuple(out[name])
    return out


def run(bench: str, field: str, cfg: DedupConfig) -> dict[str, Any]:
    """Deduplicate one benchmark and score it."""
    rows = list(read_jsonl(f"bench/{bench}.jsonl.gz"))
    t0 = time.perf_counter()
    result = dedup_batch([r["id"] for r in rows], [r[field] or "" for r in rows], config=cfg)
    seconds = time.perf_counter() - t0
    pred = {d.id: d.cluster for d in result.decisions}
    score = load_scorer().score(rows, pred)
    score["seconds"] = round(seconds, 2)
    score["candidates"] = result.candidate_pairs
    score["timings"] = {k: round(v, 2) for k, v in result.timings.items()}
    return score


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--bench", action="append", help="zh-news-dev, en-news-dev (default both)")
    ap.add_argument("--field", default="text", help="the field to deduplicate on (text or title)")
    ap.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a DedupConfig option"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cfg = DedupConfig(**parse_settings(args.set))
    benches = args.bench or ["zh-news-dev", "en-news-dev"]
    results = {b: run(b, args.field, cfg) for b in benches}
    if args.json:
        print(json.dumps(results))
        return 0
    env = environment()
    print(f"neardup {env['neardup']}, python {env['python']}, {env['date']}")
    changed = {
        f.name: getattr(cfg, f.name)
        for f in dataclasses.fields(cfg)
        if getattr(cfg, f.name) != f.default and f.name != "normalizer"
    }
    print(
        f"field: {args.field}; settings: {changed or 'defaults'}; LSH bands x rows: {cfg.bands_rows}\n"
    )
    print(
        "| benchmark | precision | recall | F1 | ARI | recall light / medium / heavy | candidates | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for b, s in results.items():
        lv = s["recall_by_level"]
        levels = " / ".join(f"{lv.get(k, 0):.2f}" for k in ("light", "medium", "heavy"))
        print(
            f"| {b} | {s['precision']:.3f} | {s['recall']:.3f} | **{s['f1']:.3f}** | {s['ari']:.3f} "
            f"| {levels} | {s['candidates']:,} | {s['seconds']} |"
        )
    print("\ntimings:", {b: s["timings"] for b, s in results.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
