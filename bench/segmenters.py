"""Throughput of the Chinese word segmenters, the full tokenizer and normalization.

On the articles of ``../shared/corpus/hkcnews-zh-hans.jsonl.gz`` (long zh-Hans news):
rjieba (jieba-rs, neardup's default) against jieba (pure Python, HMM on, the peer), then
:func:`neardup.words` (the mixed-text tokenizer with rjieba) and :func:`neardup.normalize`.
The segmenters and ``words`` get normalized text, as in neardup's pipeline; ``normalize``
gets the raw text. Each figure is the median of ``--runs`` runs over all the articles, the
tokenizers taken round-robin.

The last columns check that rjieba is a faithful port: the share of articles whose token
list is exactly jieba's, on the whole text and inside :func:`neardup.words` (which hands the
segmenter only the Chinese runs), and the share of jieba's tokens (as character spans) on
the whole text that rjieba also produces.

    python3 bench/segmenters.py [--limit 5000 | --all] [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import _data

import neardup
from neardup.tokenize import get_segmenter

SOURCE = "corpus/hkcnews-zh-hans.jsonl.gz"


@dataclass(frozen=True)
class Row:
    """One line of the table: a tokenizer's median throughput."""

    name: str
    seconds: float
    chars: int
    utf8_bytes: int

    @property
    def chars_per_s(self) -> float:
        return self.chars / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.utf8_bytes / self.seconds / 1e6


@dataclass(frozen=True)
class Agreement:
    """How close rjieba's tokens are to jieba's."""

    identical_docs: float
    identical_words: float
    shared_tokens: float


def timed(
    tokenizers: dict[str, tuple[Callable[[str], object], Sequence[str]]], runs: int
) -> dict[str, float]:
    """Median seconds of applying each tokenizer to its texts, over ``runs`` rounds that
    each run every tokenizer once, so a burst of load on a shared machine hits them alike."""
    for fn, texts in tokenizers.values():
        fn(texts[0])  # warm up: load the dictionary
    times: dict[str, list[float]] = {name: [] for name in tokenizers}
    for _ in range(runs):
        for name, (fn, texts) in tokenizers.items():
            gc.disable()
            try:
                t0 = time.perf_counter()
                for t in texts:
                    fn(t)
                times[name].append(time.perf_counter() - t0)
            finally:
                gc.enable()
    return {name: statistics.median(ts) for name, ts in times.items()}


def _spans(tokens: list[str]) -> set[tuple[int, int]]:
    ends = list(itertools.accumulate(len(t) for t in tokens))
    return {(end - len(t), end) for t, end in zip(tokens, ends, strict=True)}


def agreement(texts: Sequence[str]) -> Agreement:
    """Compare rjieba's and jieba's token lists on every text."""
    rjieba, jieba = get_segmenter("rjieba"), get_segmenter("jieba")
    identical, identical_words, shared, total = 0, 0, 0, 0
    for t in texts:
        r, j = rjieba.cut(t), jieba.cut(t)
        identical += r == j
        identical_words += neardup.words(t, segmenter=rjieba) == neardup.words(t, segmenter=jieba)
        js = _spans(j)
        shared += len(js & _spans(r))
        total += len(js)
    n = len(texts)
    return Agreement(identical / n, identical_words / n, shared / total if total else 1.0)


def run(texts_raw: Sequence[str], runs: int) -> tuple[list[Row], Agreement]:
    """Time every tokenizer over the texts."""
    texts = [neardup.normalize(t) for t in texts_raw]
    chars = sum(map(len, texts))
    utf8 = sum(len(t.encode("utf-8")) for t in texts)
    raw_chars = sum(map(len, texts_raw))
    raw_utf8 = sum(len(t.encode("utf-8")) for t in texts_raw)
    rjieba, jieba = get_segmenter("rjieba"), get_segmenter("jieba")
    seconds = timed(
        {
            "jieba (HMM)": (jieba.cut, texts),
            "rjieba (HMM)": (rjieba.cut, texts),
            "neardup.words (rjieba)": (neardup.words, texts),
            "neardup.normalize": (neardup.normalize, texts_raw),
        },
        runs,
    )
    rows = [
        Row(name, secs, raw_chars, raw_utf8)
        if name == "neardup.normalize"
        else Row(name, secs, chars, utf8)
        for name, secs in seconds.items()
    ]
    return rows, agreement(texts)


def table(rows: Sequence[Row], agree: Agreement, docs: int, runs: int) -> str:
    """The markdown report."""
    base = rows[0].chars_per_s
    lines = [
        _data.header("neardup segmenters: throughput"),
        f"{docs:,} articles from {SOURCE} ({rows[0].chars:,} chars, "
        f"{rows[0].utf8_bytes / 1e6:,.1f} MB UTF-8 after normalize); median of {runs} runs.",
        "",
        "| tokenizer | chars/s | MB/s | × jieba | docs as jieba: whole text "
        "| docs as jieba: in words() | jieba's tokens kept |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        if r.name.startswith("jieba"):
            same = "100% | 100% | 100%"
        elif r.name.startswith("rjieba"):
            same = (
                f"{agree.identical_docs:.1%} | {agree.identical_words:.1%} "
                f"| {agree.shared_tokens:.2%}"
            )
        else:
            same = "— | — | —"
        lines.append(
            f"| {r.name} | {r.chars_per_s:,.0f} | {r.mb_per_s:,.2f} "
            f"| {r.chars_per_s / base:,.1f}× | {same} |"
        )
    return "\n".join(lines)


def as_json(rows: Sequence[Row], agree: Agreement, docs: int, runs: int) -> str:
    """The machine-readable report."""
    base = rows[0].chars_per_s
    out = {
        "environment": _data.environment(),
        "setup": {"source": SOURCE, "docs": docs, "runs": runs},
        "rows": [
            {
                **asdict(r),
                "chars_per_s": r.chars_per_s,
                "mb_per_s": r.mb_per_s,
                "vs_jieba": r.chars_per_s / base,
            }
            for r in rows
        ],
        "rjieba_vs_jieba": asdict(agree),
    }
    return json.dumps(out, ensure_ascii=False, indent=2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--limit", type=int, default=5000, help="the first N articles (5000)")
    size.add_argument("--all", action="store_true", help="every article (about 48,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs to take the median of (3)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if args.limit < 1 or args.runs < 1:
        parser.error("--limit and --runs must be at least 1")
    try:
        texts = [
            row["text"]
            for row in _data.read_jsonl(SOURCE, None if args.all else args.limit)
            if row.get("text")
        ]
    except _data.BenchDataMissing as e:
        _data.die(e)
    rows, agree = run(texts, args.runs)
    report = as_json if args.json else table
    print(report(rows, agree, len(texts), args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
