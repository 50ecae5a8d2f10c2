"""Batch dedup speed against the peers a user would reach for, measured in the same run.

    python bench/dedup_speed.py                  # hkcnews first 10,000 articles, 3 runs each
    python bench/dedup_speed.py --runs 5 --limit 5000
    python bench/dedup_speed.py --full           # also the whole corpus (neardup only, once)
    python bench/dedup_speed.py --skip-peers     # neardup alone
    python bench/dedup_speed.py --ng             # also every contender on 20 Newsgroups
    python bench/dedup_speed.py --datatrove .venv-datatrove/bin/python   # and datatrove

(a) Each contender deduplicates the first ``--limit`` articles of
``../shared/corpus/hkcnews-zh-hans.jsonl.gz`` as a process of its own, end to end (start-up,
reading the gzipped file, writing its clusters), timed from outside: wall seconds and the
child's peak RSS (``os.wait4``). Contenders run one after another, never at once, in a rotated
order each round, after an untimed round of each (``--warmup``: their files in the page
cache); the speed-up over datasketch is the median of the per-round ratios, so a machine
that drifts during the run moves both sides. The contenders:

- ``neardup``: the ``neardup dedup`` command when it exists (``-o`` unique, ``--clusters``),
  else ``neardup.deduper.dedup_batch`` in ``bench/peers_dedup.py``;
- ``datasketch``: MinHash(128) over 5-character shingles, MinHashLSH(0.5), union-find;
- ``gaoya``: the Rust gaoya package's MinHashStringIndex (25 bands of 5), its parallel bulk
  insert and query, union-find;
- ``rensa``: the Rust rensa package's R-MinHash (128) and its LSH (32 bands), union-find;
- ``simhash``: the simhash package's Simhash and SimhashIndex(k=3), union-find;
- ``datatrove`` (``--datatrove PYTHON``, slower, in an environment of its own): Hugging
  Face datatrove's four-stage MinHash deduplication as its example runs it on one machine
  (word 5-grams, 14 buckets of 8 hashes, 2 workers for the buckets stage).

A peer whose package is not installed is left out (``pip install -e '.[bench]'``). Each
process's CPU seconds (user + system, its waited-for children included) are measured too.

hkcnews has no ground truth, so each contender (the same commands) also runs once on the
dev benchmarks ``../shared/bench/{zh,en}-news-dev.jsonl.gz``, scored by their ``score.py``.

(a') ``--ng``: the same contenders, the same way, on all of
``../shared/corpus/20newsgroups-en.jsonl.gz`` (18,847 posts, English settings): quoting
replies, signatures and header lines, and many more candidate pairs than news.

(b) ``--full``: neardup alone on the whole corpus (48,005 articles), one run: seconds,
documents and MB of UTF-8 text per second, peak RSS and the duplicates found.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import ROOT, BenchDataMissing, die, header, shared_path
from quality import load_scorer

CORPUS = "corpus/hkcnews-zh-hans.jsonl.gz"
NG_CORPUS = "corpus/20newsgroups-en.jsonl.gz"
DEV_SETS = {"zh-news-dev": "zh", "en-news-dev": "en"}
PEERS_SCRIPT = ROOT / "bench" / "peers_dedup.py"
#: the peers timed when their package is installed (the bench extra installs them all)
PEERS = ("datasketch", "gaoya", "rensa", "simhash")
MB = 1_000_000
MIB = 1 << 20
SUMMARY = "neardup-summary.json"


@dataclass(frozen=True)
class Contender:
    """A named way to deduplicate a corpus, as one command."""

    name: str
    #: the command for (corpus, clusters output, scratch folder, language)
    command: Callable[[Path, Path, Path, str], list[str]]
    #: reads the clusters output: document id -> cluster label
    read: Callable[[Path], dict[str, str]]
    shown: str  # how the command reads in the table's notes


@dataclass
class Run:
    """One timed process."""

    seconds: float
    peak_rss: int  # bytes
    cpu: float = 0.0  # user + system seconds, the child and the processes it waited for


@dataclass
class Tally:
    """What a contender did on the timed corpus."""

    runs: list[Run] = field(default_factory=list)
    clusters: dict[str, str] | None = None


def read_pred_lines(path: Path) -> dict[str, str]:
    """``{"id", "cluster", ...}`` lines, as ``bench/peers_dedup.py`` and ``neardup dedup
    --clusters`` write them."""
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                out[str(row["id"])] = str(row["cluster"])
    return out


def peer(name: str, python: str = sys.executable, shown_python: str = "python") -> Contender:
    """A contender run by ``bench/peers_dedup.py`` (by the interpreter ``python``)."""

    def command(corpus: Path, out: Path, scratch: Path, lang: str) -> list[str]:
        return [
            python,
            str(PEERS_SCRIPT),
            name,
            str(corpus),
            "--out",
            str(out),
            "--lang",
            lang,
        ]

    return Contender(
        name,
        command,
        read_pred_lines,
        f"{shown_python} bench/peers_dedup.py {name} INPUT --out CLUSTERS --lang zh|en",
    )


#: what ``--datatrove`` asks of its interpreter
DATATROVE_PROBE = "import datatrove.pipeline.dedup, orjson, spacy, jieba"
DATATROVE_INSTALL = (
    "python -m venv .venv-datatrove && .venv-datatrove/bin/pip install "
    "'datatrove[io,processing]' spacy jieba"
)


def datatrove_contender(python: str) -> Contender:
    """datatrove's MinHash deduplication, run by the interpreter ``python`` (one with
    datatrove's ``io`` and ``processing`` extras, spaCy and jieba: its ``processing`` extra
    holds xxhash below 4 and trafilatura below 1.12, so it gets an environment of its own);
    a clear error when that interpreter lacks them."""
    probe = subprocess.run([python, "-c", DATATROVE_PROBE], capture_output=True, text=True)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["it did not start"])[-1]
        raise SystemExit(
            f"--datatrove: {python} cannot run datatrove's MinHash pipeline ({last}); "
            f"make an environment for it: {DATATROVE_INSTALL}, then pass "
            "--datatrove .venv-datatrove/bin/python"
        )
    return peer("datatrove", python, "DATATROVE_PYTHON")


def neardup_cli_available() -> bool:
    """Whether the installed neardup has the ``dedup`` command."""
    probe = subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", "--help"], capture_output=True, text=True
    )
    return probe.returncode == 0


def neardup_contender() -> Contender:
    """The real ``neardup dedup`` command when it exists, else the library call."""
    if not neardup_cli_available():
        c = peer("neardup")
        return Contender(
            "neardup", c.command, c.read, c.shown + "  (library dedup_batch; no dedup command yet)"
        )

    def command(corpus: Path, out: Path, scratch: Path, lang: str) -> list[str]:
        unique, summary = scratch / "unique.jsonl", scratch / SUMMARY
        dedup = ["dedup", str(corpus), "-o", str(unique), "--clusters", str(out)]
        return [sys.executable, "-m", "neardup", *dedup, "-q", "--json-summary", str(summary)]

    shown = "python -m neardup dedup INPUT -o UNIQUE --clusters CLUSTERS -q --json-summary SUMMARY"
    return Contender("neardup", command, read_pred_lines, shown)


def stages(scratch: Path) -> str:
    """neardup's own stage times from its last summary (empty without the dedup command)."""
    path = scratch / SUMMARY
    if not path.is_file():
        return ""
    summary = json.loads(path.read_text(encoding="utf-8"))
    path.unlink()  # so a later run cannot show a stale one
    times = " · ".join(f"{k} {v:.2f} s" for k, v in summary.get("stages", {}).items())
    return f"{times} ({summary.get('candidate_pairs', 0):,} candidate pairs)"


def timed(cmd: list[str], log: Path) -> Run:
    """Run ``cmd`` to its end; its wall seconds and its own peak RSS."""
    with open(log, "ab") as f:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)  # reaped here, so the usage is this child's
        seconds = time.perf_counter() - t0
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise RuntimeError(f"{shlex.join(cmd)} exited with {code}:\n{tail}")
    cpu = usage.ru_utime + usage.ru_stime
    return Run(seconds, usage.ru_maxrss * 1024, cpu)  # Linux reports kilobytes


def slice_corpus(limit: int, folder: Path) -> tuple[Path, int, int]:
    """The first ``limit`` articles of the corpus as a gzipped file of their own, so every
    contender (and a command without a limit option) reads the same input; with its
    documents and UTF-8 text bytes."""
    src = shared_path(CORPUS)
    dst = folder / f"hkcnews-first{limit}.jsonl.gz"
    docs = nbytes = 0
    with gzip.open(src, "rb") as fin, gzip.open(dst, "wb") as fout:
        for line in fin:
            if not line.strip():
                continue
            if docs >= limit:
                break
            fout.write(line)
            docs += 1
            nbytes += len((json.loads(line).get("text") or "").encode("utf-8"))
    return dst, docs, nbytes


def corpus_size(path: Path) -> tuple[int, int]:
    """Documents and UTF-8 text bytes of a gzipped JSONL corpus."""
    docs = nbytes = 0
    with gzip.open(path, "rb") as f:
        for line in f:
            if line.strip():
                docs += 1
                nbytes += len((json.loads(line).get("text") or "").encode("utf-8"))
    return docs, nbytes


def duplicates(clusters: dict[str, str]) -> int:
    """Documents beyond the first of their cluster (a missing document is its own cluster)."""
    return len(clusters) - len(set(clusters.values()))


def speed(
    contenders: list[Contender],
    corpus: Path,
    runs: int,
    scratch: Path,
    lang: str = "zh",
    warmup: int = 1,
) -> dict[str, Tally]:
    """Time every contender ``runs`` times on ``corpus`` (in ``lang``), one at a time, in
    rotated order, after ``warmup`` untimed rounds: a process started on files the page
    cache no longer holds (its interpreter's, its libraries', the input) waits for the
    disk — 0.7-1.3 s more for neardup on hkcnews 10k after ``drop_caches`` — and the first
    timed round would charge that to whichever contender ran first after another's."""
    tallies = {c.name: Tally() for c in contenders}

    def once(c: Contender) -> tuple[Run, Path]:
        out = scratch / f"{c.name}-clusters.jsonl"
        return timed(c.command(corpus, out, scratch, lang), scratch / f"{c.name}.log"), out

    for w in range(warmup):
        for c in contenders:
            run, _ = once(c)
            print(f"  warm-up {w + 1}/{warmup}: {c.name:<10} {run.seconds:7.2f} s", file=sys.stderr)
    for r in range(runs):
        order = contenders[r % len(contenders) :] + contenders[: r % len(contenders)]
        for c in order:
            run, out = once(c)
            tallies[c.name].runs.append(run)
            print(
                f"  round {r + 1}/{runs}: {c.name:<10} {run.seconds:7.2f} s  CPU {run.cpu:7.2f} s"
                f"  {run.peak_rss / MIB:6.0f} MiB",
                file=sys.stderr,
            )
            if r == 0:
                tallies[c.name].clusters = c.read(out)
    return tallies


def quality(contenders: list[Contender], scratch: Path) -> dict[str, dict[str, dict[str, float]]]:
    """Each contender's score on each dev set (one run)."""
    scorer = load_scorer()
    scores: dict[str, dict[str, dict[str, float]]] = {c.name: {} for c in contenders}
    for bench, lang in DEV_SETS.items():
        path = shared_path(f"bench/{bench}.jsonl.gz")
        truth = scorer.read_jsonl(str(path))
        for c in contenders:
            out = scratch / f"{c.name}-{bench}.jsonl"
            run = timed(c.command(path, out, scratch, lang), scratch / f"{c.name}-{bench}.log")
            s = scorer.score(truth, c.read(out))
            scores[c.name][bench] = {
                "f1": s["f1"],
                "precision": s["precision"],
                "recall": s["recall"],
                "seconds": run.seconds,
            }
            print(
                f"  {bench}: {c.name:<10} F1 {s['f1']:.3f}  {run.seconds:6.2f} s", file=sys.stderr
            )
    return scores


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def print_speed_table(
    contenders: list[Contender],
    tallies: dict[str, Tally],
    scores: dict[str, dict[str, dict[str, float]]],
    docs: int,
    nbytes: int,
    label: str = "",
) -> None:
    base = tallies.get("datasketch")
    label = label or f"hkcnews-{docs:,}"
    print(
        f"| contender | {label} seconds, median (min–max) | CPU s | docs/s | MB/s "
        "| peak RSS MiB | × faster than datasketch | CPU vs datasketch | time vs neardup "
        "| duplicates found | zh-news-dev F1 | en-news-dev F1 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    mine = tallies.get("neardup")
    for c in contenders:
        t = tallies[c.name]
        secs = [r.seconds for r in t.runs]
        med = statistics.median(secs)
        rss = statistics.median(r.peak_rss for r in t.runs) / MIB
        if base is not None:
            ratio = statistics.median(
                b.seconds / r.seconds for b, r in zip(base.runs, t.runs, strict=True)
            )
            ratio_s = f"{ratio:.2f}×"
            cpu_ratio = statistics.median(
                r.cpu / b.cpu for b, r in zip(base.runs, t.runs, strict=True)
            )
            cpu_s = f"{cpu_ratio:.2f}"
        else:
            ratio_s = cpu_s = "–"
        if mine is not None:
            vs = statistics.median(
                r.seconds / m.seconds for m, r in zip(mine.runs, t.runs, strict=True)
            )
            vs_s = f"{vs:.2f}×"
        else:
            vs_s = "–"
        cpu_med = statistics.median(r.cpu for r in t.runs)
        dups = duplicates(t.clusters or {})
        f1 = [
            f"{scores[c.name][b]['f1']:.3f}" if b in scores.get(c.name, {}) else "–"
            for b in DEV_SETS
        ]
        print(
            f"| {c.name} | {spread(secs)} | {cpu_med:.2f} | {docs / med:,.0f} "
            f"| {nbytes / MB / med:.2f} | {rss:,.0f} | {ratio_s} | {cpu_s} | {vs_s} "
            f"| {dups:,} | {f1[0]} | {f1[1]} |"
        )


def print_quality_detail(
    contenders: list[Contender], scores: dict[str, dict[str, dict[str, float]]]
) -> None:
    print("| dev set | contender | precision | recall | F1 | seconds (1 run) |")
    print("|---|---|---|---|---|---|")
    for b in DEV_SETS:
        for c in contenders:
            s = scores[c.name][b]
            print(
                f"| {b} | {c.name} | {s['precision']:.3f} | {s['recall']:.3f} | **{s['f1']:.3f}** | {s['seconds']:.2f} |"
            )


def full_corpus(nd: Contender, scratch: Path) -> None:
    """(b): neardup alone on the whole corpus, once."""
    path = shared_path(CORPUS)
    docs, nbytes = corpus_size(path)
    out = scratch / "neardup-full-clusters.jsonl"
    print(f"  full corpus: neardup on {docs:,} articles ...", file=sys.stderr)
    run = timed(nd.command(path, out, scratch, "zh"), scratch / "neardup-full.log")
    dups = duplicates(nd.read(out))
    nd_stages = stages(scratch)
    print(f"\n### (b) The whole corpus: neardup alone, 1 run\n\n{nd.shown}\n")
    print(
        "| corpus | articles | text MB (UTF-8) | seconds | docs/s | MB/s | peak RSS MiB | duplicates found |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| hkcnews-zh-hans | {docs:,} | {nbytes / MB:,.1f} | {run.seconds:.1f} | {docs / run.seconds:,.0f} "
        f"| {nbytes / MB / run.seconds:.2f} | {run.peak_rss / MIB:,.0f} | {dups:,} ({dups / docs:.1%}) |"
    )
    if nd_stages:
        print(f"\nneardup's own stage times: {nd_stages}")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--limit", type=int, default=10_000, help="articles of hkcnews to time (default 10,000)"
    )
    ap.add_argument(
        "--runs",
        type=int,
        default=3,
        help="timed runs of each contender (default 3; median quoted)",
    )
    ap.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="untimed rounds before them, so every contender starts with its files cached "
        "(default 1)",
    )
    ap.add_argument(
        "--datatrove",
        metavar="PYTHON",
        nargs="?",
        const=sys.executable,
        help="also time datatrove's four-stage MinHash deduplication (slow: about 45 s a run "
        "on hkcnews 10k), run by the interpreter PYTHON (default: this one), which needs "
        f"datatrove[io,processing], spaCy and jieba: {DATATROVE_INSTALL}",
    )
    ap.add_argument("--full", action="store_true", help="also run neardup once on the whole corpus")
    ap.add_argument("--skip-peers", action="store_true", help="time neardup alone")
    ap.add_argument(
        "--ng",
        action="store_true",
        help="also time every contender on all of 20 Newsgroups (18,847 posts, English)",
    )
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # keep tables and progress in order
    if args.runs < 1 or args.limit < 1 or args.warmup < 0:
        ap.error("--runs and --limit must be at least 1, --warmup at least 0")

    nd = neardup_contender()
    peers = [peer(name) for name in PEERS if importlib.util.find_spec(name) is not None]
    contenders = [nd] if args.skip_peers else [nd, *peers]
    if args.datatrove:
        contenders.append(datatrove_contender(args.datatrove))
    extra = {
        "runs": str(args.runs),
        "warm-up": str(args.warmup),
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    print(header("Batch dedup speed against the peers", extra))
    try:
        with tempfile.TemporaryDirectory(prefix="neardup-speed-") as tmp:
            scratch = Path(tmp)
            corpus, docs, nbytes = slice_corpus(args.limit, scratch)
            print(
                f"  timing {len(contenders)} contenders x {args.runs} runs on {docs:,} articles",
                file=sys.stderr,
            )
            tallies = speed(contenders, corpus, args.runs, scratch, warmup=args.warmup)
            nd_stages = stages(scratch)
            scores = quality(contenders, scratch)
            print(
                f"### (a) hkcnews-zh-hans, first {docs:,} articles ({nbytes / MB:.1f} MB of text): "
                f"whole processes, {args.runs} run{'s' if args.runs > 1 else ''} each, interleaved, "
                f"after {args.warmup} untimed\n"
            )
            print_speed_table(contenders, tallies, scores, docs, nbytes)
            if nd_stages:
                print(f"\nneardup's own stage times, last timed run: {nd_stages}")
            print("\ncommands (INPUT a gzipped JSONL file; each writes its clusters):\n")
            for c in contenders:
                print(f"- {c.name}: `{c.shown}`")
            print(
                "\nSeconds are wall time of the whole process (start-up, reading the gzipped file, writing);"
                " CPU: user and system seconds of the process and the processes it waited for;"
                " peak RSS the process's own; × faster, CPU vs datasketch and time vs neardup"
                " are medians of the per-round ratios."
                " F1: pairwise, by ../shared/bench/score.py, one run of the same command.\n"
            )
            print_quality_detail(contenders, scores)
            if args.ng:
                ng = shared_path(NG_CORPUS)
                ng_docs, ng_bytes = corpus_size(ng)
                print(f"  timing on 20 Newsgroups, {ng_docs:,} posts", file=sys.stderr)
                ng_tallies = speed(contenders, ng, args.runs, scratch, "en", args.warmup)
                ng_stages = stages(scratch)
                print(
                    f"\n### (a') 20newsgroups-en, all {ng_docs:,} posts ({ng_bytes / MB:.1f} MB "
                    f"of text): the same commands with the English settings\n"
                )
                print_speed_table(
                    contenders, ng_tallies, scores, ng_docs, ng_bytes, f"20newsgroups-{ng_docs:,}"
                )
                if ng_stages:
                    print(f"\nneardup's own stage times, last timed run: {ng_stages}")
            if args.full:
                full_corpus(nd, scratch)
    except BenchDataMissing as e:
        die(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
