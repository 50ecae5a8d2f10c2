"""Microseconds per pair for every measure, beside the textbook versions and python-Levenshtein.

Two kinds of pair, both from real Chinese news in ``../shared``:

* 500-character texts: a 500-character slice of a 《新闻联播》 item and a lightly edited copy
  of it (one sentence dropped, three characters changed);
* titles: an original headline and a reprint's retitled headline of the same story.

Inputs are normalized once beforehand (``processor=None``), so the measure alone is timed;
the ``normalize`` row shows what normalizing both texts of a pair adds. Each figure is the
median over ``--repeat`` runs of a batch of pairs, the batches taken round-robin. The
quadratic textbook versions are timed on the first ``--naive-pairs`` 500-character pairs
only, and compared with neardup on those same pairs. "ratio" is reference / neardup: above
1, neardup is that many times faster.

    python3 bench/measures.py [--pairs 200] [--naive-pairs 10] [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib.util
import json
import math
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from types import ModuleType

import _data
import Levenshtein

import neardup
from neardup.measures import METHODS

Pair = tuple[str, str]
Scorer = Callable[[str, str], float]

LONG_SOURCE = "corpus/xinwenlianbo-zh.jsonl.gz"
TITLE_SOURCE = "bench/zh-news-dev.jsonl.gz"
LONG_CHARS = 500
CHANGED_CHARS = 3
_SENTENCE = re.compile(r"[^。！？!?]*[。！？!?]?")
_HAN = re.compile(r"[\u4e00-\u9fff]")

#: lcsubstr, mcc and contiguity must beat their textbook DP by this much on 500-char texts.
REQUIRED_SPEEDUP = 20.0


def load_naive() -> ModuleType:
    """tests/naive.py: the source documents' own pure-Python versions of the measures."""
    path = _data.ROOT / "tests" / "naive.py"
    spec = importlib.util.spec_from_file_location("naive", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the textbook measures from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def levenshtein_c(a: str, b: str) -> float:
    """python-Levenshtein's distance as neardup's score (``Levenshtein.ratio`` is another one)."""
    longest = max(len(a), len(b))
    return 1.0 if longest == 0 else 1.0 - Levenshtein.distance(a, b) / longest


@dataclass(frozen=True)
class Reference:
    """A peer implementation of one measure."""

    name: str
    score: Scorer
    quadratic: bool  # timed on fewer 500-character pairs


def references(naive: ModuleType) -> dict[str, list[Reference]]:
    """The peers of each measure that has one."""
    return {
        "common": [Reference("textbook Counter", naive.common, False)],
        "levenshtein": [
            Reference("textbook DP", naive.levenshtein, True),
            Reference("python-Levenshtein", levenshtein_c, False),
        ],
        "lcsubstr": [Reference("textbook DP", naive.lcsubstr, True)],
        "mcc": [Reference("textbook every offset", naive.mcc, True)],
        "contiguity": [Reference("textbook every offset", naive.contiguity, True)],
    }


# --- the pairs ---------------------------------------------------------------------------


def edited_copy(text: str, rng: random.Random) -> str:
    """``text`` with one inner sentence dropped and a few Han characters changed."""
    sentences = [s for s in _SENTENCE.findall(text) if s]
    inner = [i for i in range(1, len(sentences) - 1) if len(sentences[i]) < len(text) // 4]
    if inner:
        del sentences[rng.choice(inner)]
    chars = list("".join(sentences))
    han = [i for i, c in enumerate(chars) if _HAN.match(c)]
    pool = [chars[i] for i in han]
    for i in rng.sample(han, min(CHANGED_CHARS, len(han))):
        chars[i] = rng.choice([c for c in pool if c != chars[i]] or ["字"])
    return "".join(chars)


def long_pairs(n: int, seed: int) -> list[Pair]:
    """n raw (500-character slice, edited copy) pairs, one per long enough article."""
    rng = random.Random(seed)
    out: list[Pair] = []
    for row in _data.read_jsonl(LONG_SOURCE):
        text = row["text"]
        if len(text) < LONG_CHARS + 100:
            continue
        start = rng.randrange(0, len(text) - LONG_CHARS + 1)
        piece = text[start : start + LONG_CHARS]
        out.append((piece, edited_copy(piece, rng)))
        if len(out) == n:
            break
    return out


def title_pairs(n: int) -> list[Pair]:
    """n raw (original headline, reprint's changed headline) pairs of the same story."""
    clusters: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in _data.read_jsonl(TITLE_SOURCE):
        clusters[row["cluster"]].append(row)
    out: list[Pair] = []
    for docs in clusters.values():
        orig = next((d["title"] for d in docs if d["level"] == "orig"), None)
        if orig is None:
            continue
        out.extend((orig, d["title"]) for d in docs if d["level"] != "orig" and d["title"] != orig)
    return out[:n]


# --- timing ------------------------------------------------------------------------------


class Timings:
    """Batches of pairs timed round-robin: each round runs every batch once, so a burst of
    load on a shared machine lands on all the figures alike rather than on one measure."""

    def __init__(self) -> None:
        self._jobs: dict[str, tuple[Callable[[str, str], object], Sequence[Pair]]] = {}
        self._times: dict[str, list[float]] = defaultdict(list)

    def add(self, key: str, score: Callable[[str, str], object], pairs: Sequence[Pair]) -> str:
        """Schedule scoring every pair of ``pairs``; returns ``key``."""
        self._jobs[key] = (score, pairs)
        return key

    def run(self, repeat: int) -> None:
        """Time every batch ``repeat`` times (after one warm-up call each)."""
        for score, pairs in self._jobs.values():
            score(*pairs[0])  # load dictionaries, IDF tables, caches
        for _ in range(repeat):
            for key, (score, pairs) in self._jobs.items():
                gc.disable()
                try:
                    t0 = time.perf_counter()
                    for a, b in pairs:
                        score(a, b)
                    self._times[key].append(time.perf_counter() - t0)
                finally:
                    gc.enable()

    def us(self, key: str) -> float:
        """Median µs per pair of the batch ``key``."""
        return statistics.median(self._times[key]) / len(self._jobs[key][1]) * 1e6


def disagreements(ours: Scorer, ref: Scorer, pairs: Sequence[Pair]) -> int:
    """How many pairs the two score differently: a peer must compute the same measure."""
    return sum(not math.isclose(ours(a, b), ref(a, b), abs_tol=1e-9) for a, b in pairs)


@dataclass(frozen=True)
class Row:
    """One line of the table: a measure beside one reference (or none)."""

    measure: str
    reference: str | None
    long_us: float
    long_ref_us: float | None
    titles_us: float
    titles_ref_us: float | None
    disagreements: int = 0
    #: neardup on the reference's own 500-char pairs, when it was timed on fewer of them.
    long_us_same_pairs: float | None = None

    @property
    def long_ratio(self) -> float | None:
        if self.long_ref_us is None:
            return None
        return self.long_ref_us / (self.long_us_same_pairs or self.long_us)

    @property
    def titles_ratio(self) -> float | None:
        return None if self.titles_ref_us is None else self.titles_ref_us / self.titles_us


@dataclass(frozen=True)
class Setup:
    """What was timed: how many pairs of each kind, their mean lengths, how many runs."""

    long_pairs: int
    long_mean_chars: tuple[float, float]
    naive_long_pairs: int
    title_pairs: int
    title_mean_chars: tuple[float, float]
    repeat: int


def _mean_lengths(pairs: Sequence[Pair]) -> tuple[float, float]:
    return (
        round(statistics.mean(len(a) for a, _ in pairs), 1),
        round(statistics.mean(len(b) for _, b in pairs), 1),
    )


def run(args: argparse.Namespace) -> tuple[list[Row], Setup]:
    """Build the pairs and time everything: the rows, and what was timed."""
    naive = load_naive()
    raw_long, raw_titles = long_pairs(args.pairs, args.seed), title_pairs(args.pairs)
    if not raw_long or not raw_titles:
        raise SystemExit("error: no pairs could be built from ../shared")
    long_ = [(neardup.normalize(a), neardup.normalize(b)) for a, b in raw_long]
    titles = [(neardup.normalize(a), neardup.normalize(b)) for a, b in raw_titles]
    long_few = long_[: args.naive_pairs]
    repeat = args.repeat

    refs = references(naive)
    scorers: dict[str, Scorer] = {
        name: functools.partial(module.normalized_similarity, processor=None)
        for name, module in METHODS.items()
    }
    t = Timings()
    for name, ours in scorers.items():
        t.add(f"{name}/long", ours, long_)
        t.add(f"{name}/titles", ours, titles)
        if any(ref.quadratic for ref in refs.get(name, [])):
            t.add(f"{name}/long-few", ours, long_few)
        for ref in refs.get(name, []):
            t.add(f"{name}/{ref.name}/long", ref.score, long_few if ref.quadratic else long_)
            t.add(f"{name}/{ref.name}/titles", ref.score, titles)

    def normalize_both(a: str, b: str) -> None:
        neardup.normalize(a)
        neardup.normalize(b)

    t.add("normalize/long", normalize_both, raw_long)
    t.add("normalize/titles", normalize_both, raw_titles)
    t.run(repeat)

    rows: list[Row] = []
    for name, ours in scorers.items():
        long_us, titles_us = t.us(f"{name}/long"), t.us(f"{name}/titles")
        if name not in refs:
            rows.append(Row(name, None, long_us, None, titles_us, None))
        for ref in refs.get(name, []):
            long_ref_pairs = long_few if ref.quadratic else long_
            rows.append(
                Row(
                    name,
                    ref.name,
                    long_us,
                    t.us(f"{name}/{ref.name}/long"),
                    titles_us,
                    t.us(f"{name}/{ref.name}/titles"),
                    disagreements(ours, ref.score, long_ref_pairs)
                    + disagreements(ours, ref.score, titles),
                    t.us(f"{name}/long-few") if ref.quadratic else None,
                )
            )
    rows.append(
        Row(
            "normalize (both texts)",
            None,
            t.us("normalize/long"),
            None,
            t.us("normalize/titles"),
            None,
        )
    )
    setup = Setup(
        long_pairs=len(long_),
        long_mean_chars=_mean_lengths(long_),
        naive_long_pairs=len(long_few),
        title_pairs=len(titles),
        title_mean_chars=_mean_lengths(titles),
        repeat=repeat,
    )
    return rows, setup


# --- output ------------------------------------------------------------------------------


def _us(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def _ratio(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.2f}×" if x < 10 else f"{x:,.0f}×"


def requirement(rows: Sequence[Row]) -> dict[str, float]:
    """The 500-character speed-up over the textbook version of the measures it applies to."""
    return {
        r.measure: r.long_ratio
        for r in rows
        if r.measure in ("lcsubstr", "mcc", "contiguity") and r.long_ratio is not None
    }


def table(rows: Sequence[Row], setup: Setup) -> str:
    """The markdown report."""
    a_len, b_len = setup.long_mean_chars
    ta_len, tb_len = setup.title_mean_chars
    lines = [
        _data.header("neardup measures: µs per pair"),
        f"500-char: {setup.long_pairs} pairs from {LONG_SOURCE} (slice vs. edited copy, "
        f"mean {a_len} / {b_len} chars after normalize; quadratic textbook versions on the "
        f"first {setup.naive_long_pairs}). Titles: {setup.title_pairs} pairs from "
        f"{TITLE_SOURCE} (original vs. reprint headline, mean {ta_len} / {tb_len} chars). "
        f"Median of {setup.repeat} runs; ratio = reference / neardup (above 1: neardup "
        "is faster), against a textbook DP taken on the same pairs it was timed on.",
        "",
        "| measure | reference | neardup µs (500-char) | reference µs | ratio "
        "| neardup µs (titles) | reference µs (titles) | ratio |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.measure} | {r.reference or '—'} | {_us(r.long_us)} | {_us(r.long_ref_us)} "
            f"| {_ratio(r.long_ratio)} | {_us(r.titles_us)} | {_us(r.titles_ref_us)} "
            f"| {_ratio(r.titles_ratio)} |"
        )
    lines.append("")
    checks = requirement(rows)
    verdicts = ", ".join(
        f"{m} {v:,.1f}× {'ok' if v >= REQUIRED_SPEEDUP else 'TOO SLOW'}" for m, v in checks.items()
    )
    lines.append(
        f"Required: at least {REQUIRED_SPEEDUP:.0f}× the textbook version on 500-char texts: "
        f"{verdicts}."
    )
    bad = [r for r in rows if r.disagreements]
    for r in bad:
        lines.append(f"WARNING: {r.measure} and {r.reference} disagree on {r.disagreements} pairs.")
    return "\n".join(lines)


def as_json(rows: Sequence[Row], setup: Setup) -> str:
    """The machine-readable report."""
    out = {
        "environment": _data.environment(),
        "setup": {**asdict(setup), "long_source": LONG_SOURCE, "title_source": TITLE_SOURCE},
        "rows": [
            {**asdict(r), "long_ratio": r.long_ratio, "titles_ratio": r.titles_ratio} for r in rows
        ],
        "required_speedup": REQUIRED_SPEEDUP,
        "speedup_vs_textbook_500": requirement(rows),
    }
    return json.dumps(out, ensure_ascii=False, indent=2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200, help="pairs of each kind (200)")
    parser.add_argument(
        "--naive-pairs",
        type=int,
        default=10,
        help="500-char pairs for the quadratic textbook versions (10)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs to take the median of (5)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the edits (1)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.naive_pairs < 1 or args.repeat < 1:
        parser.error("--pairs, --naive-pairs and --repeat must be at least 1")
    try:
        rows, setup = run(args)
    except _data.BenchDataMissing as e:
        _data.die(e)
    print(as_json(rows, setup) if args.json else table(rows, setup))
    return 0


if __name__ == "__main__":
    sys.exit(main())
