"""Does the cost of ``neardup dedup`` grow with the corpus, never faster? CPU, wall time and
peak memory on growing copies of one corpus and on a flood of tiny records, in one run.

    nice python bench/scale.py                         # hkcnews 1x, 2x, 4x and 1,000,000 tiny records
    nice python bench/scale.py --sizes 1,2 --tiny 0    # the corpus once and twice, no tiny records
    nice python bench/scale.py --sizes 1,4 --same 4 --tiny 0 --runs 3   # and 4x keeping identical reprints
    PYTHONPATH=/path/to/old/src nice python bench/scale.py --label before --out before.json
    nice python bench/scale.py --sizes 1,4 --tiny 0 --sketch-memory default,0   # and in least memory

The inputs are made at run time, deterministically (``--seed``), in a scratch folder
(``--workdir DIR`` keeps them for the next run), and never committed:

- **hkcnews k x**: ``../shared/corpus/hkcnews-zh-hans.jsonl.gz`` (48,005 articles) and then
  k - 1 more copies of it, record by record, each copy of an article with one random
  sentence dropped (a random character, when it has a single sentence), so that no copy is
  byte-identical to another and each must be verified: a story reprinted 4, 8, ... times
  (the corpus's own byte-identical reprints become different copies too). Ids ``ID~1``,
  ``ID~2``, ...; only ``id`` and ``text`` are written.
- **hkcnews k x (identical reprints kept)** (``--same k``): the same, except that within a
  copy the articles whose texts are byte-identical (the corpus's own identical reprints,
  13,588 of its 48,005 articles) get the same perturbation, so they stay identical to each
  other, as they are in the corpus — and the input holds k times the corpus's distinct
  texts instead of about 5 times as many at 4x.
- **tiny**: ``--tiny`` records of a few characters to a few words — snippets of 2 to 16
  characters cut from random hkcnews articles, a few dozen short phrases with a number
  ("第 123 楼", "reply #123"), and one to four words of a list of 200 common English
  words — the flood of comments, counters and navigation items a crawl collects, where
  many texts share most of their few shingles.

Each input is deduplicated by ``python -m neardup dedup INPUT -o UNIQUE --clusters CLUSTERS
-q --json-summary SUMMARY`` (``sys.executable``, so ``PYTHONPATH`` decides which checkout
is measured), one run after another, never two at once. **CPU** is the user and system
seconds of the command and every process it started (``os.wait4``: its sketch workers
are waited for); **wall** its elapsed seconds; **peak RSS** the largest sum, over the
command and its descendants, of their resident sets, sampled every 20 ms from
``/proc/PID/statm`` (pages a worker shares with its parent after ``fork`` are counted in
each); **PSS** the same with shared pages split between the processes that map them,
sampled every 0.5 s (``smaps_rollup`` walks a process's pages under its memory map's lock,
which slows the process measured). Bytes per character are
peak RSS over the characters of input text. **New characters** are those of the texts that
are not byte-identical to an earlier text of the input: the command matches a byte-identical
copy at once and sketches and may verify only the others, so "CPU × 1x per new char" (the CPU
ratio over the ratio of new characters) is what an input costs beyond the work it adds. ``--runs N`` runs each input N times, in rounds
(every input once, in order, then again), and shows medians, and "× 1x, by round" the median
of each round's CPU ratio to hkcnews 1x (what a drift of the machine's speed moves least: the
ratio of the medians takes the 1x's runs and the 4x's from different minutes of a noisy
machine). The machine is shared: run it with ``nice``, alone.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BenchDataMissing, die, header, shared_path

CORPUS = "corpus/hkcnews-zh-hans.jsonl.gz"
MIB = 1 << 20
_SENTENCE = re.compile(r"(?<=[。！？!?；\n])")

#: Short phrases that recur with a number in them: floor numbers, replies, counters.
PHRASES = [
    "第 {} 楼",
    "回覆 #{}",
    "讚好 {}",
    "分享 {} 次",
    "閱讀 {}",
    "留言 {} 則",
    "第{}頁",
    "共 {} 條評論",
    "{} 人讚好",
    "上一篇 {}",
    "下一篇 {}",
    "更新於 {} 分鐘前",
    "reply #{}",
    "page {}",
    "{} comments",
    "{} likes",
    "views: {}",
    "share ({})",
    "posted {} hours ago",
    "item {} of 50",
    "Chapter {}",
    "photo {}",
    "score {}",
    "{} replies",
]
#: Common English words (not corpus text) for the one-to-four-word records.
WORDS = (  # noqa: SIM905 - a list of 200 words reads better as one string
    "the of and to in is you that it he was for on are as with his they at be this have "
    "from or one had by word but not what all were we when your can said there use an each "
    "which she do how their if will up other about out many then them these so some her "
    "would make like him into time has look two more write go see number no way could "
    "people my than first water been call who oil its now find long down day did get come "
    "made may part over new sound take only little work know place year live me back give "
    "most very after thing our just name good sentence man think say great where help "
    "through much before line right too mean old any same tell boy follow came want show "
    "also around form three small set put end does another well large must big even such "
    "because turn here why ask went men read need land different home us move try kind "
    "hand picture again change off play spell air away animal house point page letter "
    "mother answer found study still learn should world high every near add food between "
    "own below country plant last school father keep tree never start city earth eye"
).split()


@dataclass
class Input:
    """One generated input: its name, file, documents and characters of text, and the
    characters of the texts that are not byte-identical to an earlier one (``new``: what the
    command sketches and may verify; a byte-identical copy is matched at once)."""

    name: str
    path: Path
    docs: int
    chars: int
    utf8: int
    new: int = 0


@dataclass
class Run:
    """One measured run of the command."""

    cpu: float
    wall: float
    rss: int
    pss: int
    pairs: int
    stages: dict[str, float]
    #: the CPU s of each run, round by round (a median run's: its runs')
    rounds: tuple[float, ...] = ()


def _articles() -> list[tuple[str, str]]:
    path = shared_path(CORPUS)
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                out.append((str(d["id"]), d["text"]))
    return out


def perturbed(text: str, rng: random.Random) -> str:
    """``text`` with one random sentence dropped (a random character when it has one)."""
    parts = [p for p in _SENTENCE.split(text) if p]
    if len(parts) >= 2:
        del parts[rng.randrange(len(parts))]
        return "".join(parts)
    if len(text) >= 2:
        k = rng.randrange(len(text))
        return text[:k] + text[k + 1 :]
    return text + "。"


def _write(path: Path, rows: Any) -> tuple[int, int, int, int]:
    docs = chars = utf8 = new = 0
    seen: set[bytes] = set()
    with open(path, "w", encoding="utf-8") as f:
        for doc_id, text in rows:
            f.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
            docs += 1
            chars += len(text)
            raw = text.encode("utf-8", "surrogatepass")
            utf8 += len(raw)
            digest = hashlib.blake2b(raw, digest_size=16).digest()
            if digest not in seen:
                seen.add(digest)
                new += len(text)
    return docs, chars, utf8, new


def _cached(meta: Path, path: Path) -> Input | None:
    """The input written before (its figures beside it), or None: none, or figures from
    before ``new`` was counted."""
    if not (path.is_file() and meta.is_file()):
        return None
    found = json.loads(meta.read_text())
    return Input(**{**found, "path": path}) if found.get("new") else None


def make_copies(
    articles: list[tuple[str, str]], k: int, seed: int, folder: Path, same: bool = False
) -> Input:
    """The corpus, then k - 1 perturbed copies of it (see the module's documentation).
    ``same``: within a copy, the articles whose texts are byte-identical get the same
    perturbation (the corpus's own identical reprints stay identical in each copy)."""
    tag = "same" if same else "seed"
    path = folder / f"hkcnews-{k}x-{tag}{seed}.jsonl"
    meta = path.with_suffix(".json")
    if (cached := _cached(meta, path)) is not None:
        return cached

    def rows() -> Any:
        yield from articles
        for copy in range(1, k):
            rng = random.Random(f"{seed}-{copy}")
            made: dict[str, str] = {}
            for doc_id, text in articles:
                if same:
                    if text not in made:
                        made[text] = perturbed(text, rng)
                    yield f"{doc_id}~{copy}", made[text]
                else:
                    yield f"{doc_id}~{copy}", perturbed(text, rng)

    docs, chars, utf8, new = _write(path, rows())
    name = f"hkcnews {k}x" + (" (identical reprints kept)" if same else "")
    found = Input(name, path, docs, chars, utf8, new)
    meta.write_text(json.dumps({k: v for k, v in asdict(found).items() if k != "path"}))
    return found


def make_tiny(articles: list[tuple[str, str]], n: int, seed: int, folder: Path) -> Input:
    """``n`` tiny records (see the module's documentation)."""
    path = folder / f"tiny-{n}-seed{seed}.jsonl"
    meta = path.with_suffix(".json")
    if (cached := _cached(meta, path)) is not None:
        return cached
    rng = random.Random(f"{seed}-tiny")
    texts = [t for _, t in articles if len(t) > 40]

    def rows() -> Any:
        for i in range(n):
            kind = rng.random()
            if kind < 0.4:
                t = rng.choice(texts)
                width = rng.randint(2, 16)
                at = rng.randrange(len(t) - width)
                text = t[at : at + width].strip() or "空"
            elif kind < 0.7:
                text = rng.choice(PHRASES).format(rng.randint(1, 99_999))
            else:
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
            yield f"t{i:07d}", text

    docs, chars, utf8, new = _write(path, rows())
    found = Input(f"tiny {n:,}", path, docs, chars, utf8, new)
    meta.write_text(json.dumps({k: v for k, v in asdict(found).items() if k != "path"}))
    return found


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
    except OSError:
        pass
    return out


_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss(pid: int) -> int:
    """Resident set size of one process, in bytes (0 when it is gone): from ``statm``, a
    few counters the kernel keeps (``smaps_rollup`` walks every page of the process, and
    holds its memory map's lock meanwhile: read 50 times a second, it slowed the process
    it measured, the more the larger the process)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss(pid: int) -> int:
    """Proportional set size of one process, in bytes (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreeMemory(threading.Thread):
    """Samples the memory of a process and its descendants until told to stop: the peak
    of their summed RSS (every ``every`` seconds) and of their summed PSS (every
    ``pss_every``: reading it costs the processes measured)."""

    def __init__(self, pid: int, every: float = 0.02, pss_every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.pss_ticks = max(1, round(pss_every / every))
        self.rss = self.pss = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        tick = 0
        while not self._stop_event.is_set():
            todo, tree = [self.pid], []
            while todo:
                p = todo.pop()
                tree.append(p)
                todo.extend(_children(p))
            self.rss = max(self.rss, sum(_rss(p) for p in tree))
            if tick % self.pss_ticks == 0:
                self.pss = max(self.pss, sum(_pss(p) for p in tree))
            tick += 1
            self._stop_event.wait(self.every)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def measure(item: Input, scratch: Path, memory: str = "default") -> Run:
    """Deduplicate one input with the command (given ``--sketch-memory memory`` unless
    ``default``); what it cost."""
    summary = scratch / "summary.json"
    cmd = [
        sys.executable, "-m", "neardup", "dedup", str(item.path),
        "-o", str(scratch / "unique.jsonl"), "--clusters", str(scratch / "clusters.jsonl"),
        "-q", "--json-summary", str(summary),
    ]  # fmt: skip
    if memory != "default":
        cmd += ["--sketch-memory", memory]
    log = scratch / "log.txt"
    with open(log, "wb") as f:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        sampler = TreeMemory(proc.pid)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        sampler.stop()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise RuntimeError(f"{shlex.join(cmd)} exited with {code}:\n{tail}")
    found = json.loads(summary.read_text(encoding="utf-8"))
    return Run(
        cpu=usage.ru_utime + usage.ru_stime,
        wall=wall,
        rss=sampler.rss,
        pss=sampler.pss,
        pairs=int(found.get("candidate_pairs", 0)),
        stages={k: float(v) for k, v in found.get("stages", {}).items()},
    )


def median_run(runs: list[Run]) -> Run:
    stages = {k: statistics.median(r.stages.get(k, 0.0) for r in runs) for k in runs[0].stages}
    return Run(
        statistics.median(r.cpu for r in runs),
        statistics.median(r.wall for r in runs),
        int(statistics.median(r.rss for r in runs)),
        int(statistics.median(r.pss for r in runs)),
        runs[0].pairs,
        stages,
        tuple(r.cpu for r in runs),
    )


def table(label: str, rows: list[tuple[Input, Run]]) -> str:
    """The figures of each input; ``× 1x`` the CPU over hkcnews 1x's (the medians'), ``×
    1x, by round`` the median of the same ratio round by round (each input's run over the
    1x's of the same round: what a drift of the machine's speed from one minute to the
    next moves least), and ``new chars × 1x`` the ratio of the characters not
    byte-identical to an earlier text (what is sketched): the CPU ratio over it is what
    the input's growth costs beyond the work it adds."""
    lines = [
        f"| {label}: input | docs | characters | new characters | CPU s | × 1x "
        "| × 1x, by round | new chars × 1x | CPU × 1x per new char | wall s | peak RSS MiB "
        "| bytes/char | PSS MiB | candidate pairs | stages (main process, s) |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for item, run in rows:
        # the 1x run with the same --sketch-memory (after " · " in the name, if any)
        suffix = item.name.partition(" · ")[2]
        want = "hkcnews 1x" + (f" · {suffix}" if suffix else "")
        base = next(((i, r) for i, r in rows if i.name == want), None)
        ratio = by_round = new_ratio = per_char = "—"
        if base is not None:
            ratio = f"{run.cpu / base[1].cpu:.2f}×"
            if run.rounds and len(run.rounds) == len(base[1].rounds):
                each = [a / b for a, b in zip(run.rounds, base[1].rounds, strict=True)]
                by_round = f"{statistics.median(each):.2f}×"
            if item.new and base[0].new:
                grown = item.new / base[0].new
                new_ratio = f"{grown:.2f}×"
                per_char = f"{run.cpu / base[1].cpu / grown:.2f}×"
        stages = " · ".join(f"{k} {v:.1f}" for k, v in run.stages.items() if v >= 0.05)
        lines.append(
            f"| {item.name} | {item.docs:,} | {item.chars:,} | {item.new:,} | {run.cpu:.1f} "
            f"| {ratio} | {by_round} | {new_ratio} | {per_char} | {run.wall:.1f} "
            f"| {run.rss / MIB:,.0f} "
            f"| {run.rss / item.chars:.2f} | {run.pss / MIB:,.0f} | {run.pairs:,} | {stages} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="1,2,4", help="copies of hkcnews, e.g. 1,2,4 (0: none)")
    ap.add_argument("--tiny", type=int, default=1_000_000, help="tiny records (0: none)")
    ap.add_argument(
        "--same",
        default="",
        help="copies of hkcnews (e.g. 4) also made with the corpus's identical reprints kept "
        "identical in each copy",
    )
    ap.add_argument(
        "--sketch-memory",
        default="default",
        help="the command's --sketch-memory, one or more (default,256M,0: each input with "
        "each, interleaved; default: the command's own)",
    )
    ap.add_argument("--runs", type=int, default=1, help="runs of each input (medians)")
    ap.add_argument("--seed", type=int, default=16, help="seed of the perturbations")
    ap.add_argument("--workdir", type=Path, help="keep the generated inputs here")
    ap.add_argument("--label", default="neardup", help="the run's name in the table")
    ap.add_argument("--out", type=Path, help="write the figures as JSON")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip() and int(s) > 0]
    with tempfile.TemporaryDirectory(prefix="neardup-scale-") as tmp:
        folder = args.workdir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        scratch = Path(tmp) / "scratch"
        scratch.mkdir()
        try:
            articles = _articles() if sizes or args.tiny else []
        except BenchDataMissing as exc:
            die(exc)
        inputs = [make_copies(articles, k, args.seed, folder) for k in sizes]
        same = [int(s) for s in args.same.split(",") if s.strip() and int(s) > 1]
        inputs += [make_copies(articles, k, args.seed, folder, same=True) for k in same]
        if args.tiny:
            inputs.append(make_tiny(articles, args.tiny, args.seed, folder))
        del articles
        memories = [m.strip() for m in args.sketch_memory.split(",") if m.strip()]
        rows = []
        # round by round, every input in each: a drift of the machine's speed moves each
        # input's runs alike, and the ratios of one round's runs least
        runs: dict[tuple[int, str], list[Run]] = {}
        for _ in range(args.runs):
            for k, item in enumerate(inputs):
                for m in memories:
                    runs.setdefault((k, m), []).append(measure(item, scratch, m))
                    print(
                        f"  {item.name} · {m}: {runs[k, m][-1].cpu:.1f} CPU-s",
                        file=sys.stderr,
                        flush=True,
                    )
        for k, item in enumerate(inputs):
            for m in memories:
                name = item.name if memories == ["default"] else f"{item.name} · {m}"
                rows.append((replace(item, name=name), median_run(runs[k, m])))
    print(header("neardup dedup: cost as the corpus grows", {"runs": str(args.runs)}))
    print(table(args.label, rows))
    if args.out:
        args.out.write_text(
            json.dumps(
                [
                    {**{k: v for k, v in asdict(i).items() if k != "path"}, **asdict(r)}
                    for i, r in rows
                ],
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
