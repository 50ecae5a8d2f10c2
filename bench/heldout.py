"""Defaults for the world: the default settings on reprints made from other corpora, with
other sites' boilerplate than the dev sets'.

    python bench/heldout.py                # 1,500 stories per language, seed 11
    python bench/heldout.py --rows built.json   # build once, save; later runs score the same set

The set is built with the engine being measured (it drops base stories that overlap), so two
versions build sets that differ by a few dozen documents; ``--rows FILE`` saves the first
build there and scores every later run (another version, another ``PYTHONPATH``) on it.

Base stories come from ../shared/corpus (hkcnews-zh-hans for Chinese, 20newsgroups-en for
English — sources the dev benchmarks do not use). Stories that overlap each other are
dropped first (as the dev sets' bases were). Half of them get 1-3 reprints built the dev
sets' way (light: a header and a footer; medium: cut to 70-95 %, a sentence dropped, 1 %
typos; heavy: cut to 45-70 %, three sentences dropped, 2-5 % typos) but with headers and
footers of other kinds ("导读：…", "免责声明：…", "文 | 作者", "Posted by …", "Comments (12)",
"Share on Facebook", "Tags: …"). Scored by ../shared/bench/score.py.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import environment, read_jsonl, shared_path

from neardup import DedupConfig, dedup_batch

HEADERS = {
    "zh": [
        "【来源：{s}】",
        "（本文来自{s}，作者：{n}）",
        "{s}客户端{d}讯 ",
        "导读：本文约1200字，阅读需要4分钟",
        "文 | {n}  图 | 网络",
    ],
    "en": [
        "Posted by {n} on {d}",
        "{s} staff report",
        "UPDATED {d}",
        "From the {s} newsroom:",
        "Listen to this article · 4 min",
    ],
}
FOOTERS = {
    "zh": [
        "（责任编辑：{n}）",
        "免责声明：本文仅代表作者观点，不代表本站立场。",
        "更多精彩内容，请下载{s}APP。",
        "本文为{s}原创，转载请注明出处。",
        "（完）\n相关阅读：{s}专题",
    ],
    "en": [
        "Share on Facebook Share on Twitter",
        "Comments (12)",
        "© {y} {s}. Terms apply.",
        "Want more stories like this? Get our daily briefing.",
        "Tags: news, world, {s}",
    ],
}
SITES = {
    "zh": ["南方网", "大众网", "东方财富网", "凤凰网", "腾讯新闻"],
    "en": ["The Daily Ledger", "Metro Wire", "Globe Report", "Pacific Times"],
}
NAMES = {"zh": ["刘洋", "陈静", "王磊"], "en": ["Alex Kim", "Maria Lopez", "Sam Patel"]}
CORPUS = {
    "zh": ("corpus/hkcnews-zh-hans.jsonl.gz", 300),
    "en": ("corpus/20newsgroups-en.jsonl.gz", 400),
}


def typos(rng: random.Random, text: str, rate: float) -> str:
    """Replace or drop a share ``rate`` of the characters."""
    chars = list(text)
    for _ in range(int(len(chars) * rate)):
        i = rng.randrange(len(chars))
        chars[i] = (
            rng.choice("的是在了有和人这中大abcdefghijklmnopqrstuvwxyz")
            if rng.random() < 0.8
            else ""
        )
    return "".join(chars)


def reprint(rng: random.Random, text: str, lang: str, level: str) -> str:
    """A copy of ``text`` as another site would publish it."""
    fill = {
        "s": rng.choice(SITES[lang]),
        "n": rng.choice(NAMES[lang]),
        "d": f"2024-05-0{rng.randint(1, 9)}",
        "y": 2024,
    }
    split = r"(?<=[。！？])" if lang == "zh" else r"(?<=[.!?])\s+"
    sentences = [s for s in re.split(split, text) if s.strip()]
    if level != "light":
        keep = rng.uniform(0.7, 0.95) if level == "medium" else rng.uniform(0.45, 0.7)
        sentences = sentences[: max(1, int(len(sentences) * keep))]
        for _ in range(1 if level == "medium" else 3):
            if len(sentences) > 3:
                sentences.pop(rng.randrange(1, len(sentences) - 1))
    body = ("" if lang == "zh" else " ").join(sentences)
    if level != "light":
        body = typos(rng, body, 0.01 if level == "medium" else rng.uniform(0.02, 0.05))
    return (
        rng.choice(HEADERS[lang]).format(**fill)
        + "\n"
        + body
        + "\n"
        + rng.choice(FOOTERS[lang]).format(**fill)
    )


def build(lang: str, n: int, seed: int) -> list[dict[str, Any]]:
    """The benchmark for one language: stories that do not overlap, and their reprints."""
    rng = random.Random(seed)
    path, min_len = CORPUS[lang]
    pool = [r for r in read_jsonl(path, n * 3) if len(r["text"]) >= min_len]
    # drop stories that overlap an earlier one (a lenient run: coverage 0.3, no template guard)
    loose = DedupConfig(threshold=0.3, title_threshold=0.5, common_after=0)
    found = dedup_batch([str(i) for i in range(len(pool))], [r["text"] for r in pool], config=loose)
    # a story that is a copy of an earlier one, or extends it, overlaps it
    base = [
        r
        for r, d in zip(pool, found.decisions, strict=True)
        if not d.is_duplicate and getattr(d, "extends", None) is None
    ][:n]
    rows: list[dict[str, Any]] = []
    for i, r in enumerate(base):
        cluster = f"{lang}{i}"
        rows.append({"id": f"{cluster}-o", "text": r["text"], "cluster": cluster, "level": "orig"})
        if rng.random() < 0.5:
            for k in range(rng.randint(1, 3)):
                level = rng.choice(["light", "medium", "heavy"])
                rows.append(
                    {
                        "id": f"{cluster}-r{k}",
                        "text": reprint(rng, r["text"], lang, level),
                        "cluster": cluster,
                        "level": level,
                    }
                )
    rng.shuffle(rows)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--stories", type=int, default=1500, help="base stories per language")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument(
        "--rows", type=Path, help="JSON file of the built sets: written if missing, else read"
    )
    args = ap.parse_args()
    built: dict[str, list[dict[str, Any]]] = {}
    if args.rows is not None and args.rows.exists():
        built = json.loads(args.rows.read_text(encoding="utf-8"))
    spec = importlib.util.spec_from_file_location("score", shared_path("bench/score.py"))
    assert spec is not None and spec.loader is not None
    scorer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scorer)
    env = environment()
    print(f"neardup {env['neardup']}, python {env['python']}, {env['date']}; default settings\n")
    print("| built from | docs | precision | recall | F1 | ARI | recall light / medium / heavy |")
    print("|---|---|---|---|---|---|---|")
    for lang in ("zh", "en"):
        rows = built.get(lang) or build(lang, args.stories, args.seed)
        built[lang] = rows
        result = dedup_batch([r["id"] for r in rows], [r["text"] for r in rows])
        s = scorer.score(rows, {d.id: d.cluster for d in result.decisions})
        lv = s["recall_by_level"]
        levels = " / ".join(f"{lv.get(k, 0):.2f}" for k in ("light", "medium", "heavy"))
        print(
            f"| {CORPUS[lang][0]} | {len(rows):,} | {s['precision']:.3f} | {s['recall']:.3f} | **{s['f1']:.3f}** | {s['ari']:.3f} | {levels} |"
        )
    if args.rows is not None and not args.rows.exists():
        args.rows.write_text(json.dumps(built, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
