"""Where `neardup dedup`'s CPU goes: the profile split of a whole run, every process counted.

    python bench/profile_split.py                 # hkcnews first 10,000 and 20 Newsgroups, 3 runs
    python bench/profile_split.py --runs 1 --inputs ng
    python bench/profile_split.py --input crawl.jsonl.gz

Each run is ``neardup dedup INPUT -o UNIQUE --clusters CLUSTERS -q`` under ``py-spy record
--subprocesses --threads`` (in the ``bench`` extra, or ``pip install py-spy``), sampling
every thread of the command and of its sketch workers ``--rate`` times a second. A sample
is a thread found running (a thread waiting on a lock, a pipe or the GIL is not counted),
nor is one whose innermost frame is a wait py-spy took for running (a selector, a pipe's
read, a condition), so a part's seconds are its samples over the rate: CPU time, give or
take the sampler's own cost (it slows the command; the split, not the total, is the
figure). Each
sample goes to the first part, in the order below, one of whose functions is on its stack:

- main process: start-up (imports, and loading the compiled kernels), the guard's table
  copied after the workers fork, inflating compressed input (a thread of its own), reading
  the input (parsing and checking records), the exact-copy keys, sending texts to the
  workers (and the pool's feeder thread), the LSH join (its own thread), verification
  (placement — the compiled walk over a pair's shingles — and the rest of it: the prefilter,
  the figure rule, Python), counting stories into the template guard, a story's own codes,
  the rest of deciding, taking the sketches back from the workers, writing the outputs;
- sketch workers: normalization, boilerplate stripping, the sketch kernel (units, shingles,
  MinHash, vocabulary), the figures, packing into shared memory.

The table gives each part's share of a run's samples (the median over ``--runs``) and that
share of the CPU seconds the same command takes without the profiler (user and system, its
workers included: ``os.wait4``; the median of as many runs, interleaved with the profiled
ones), since the sampler itself slows the command and is not what it measures. The inputs are read from ``../shared/corpus`` (the first 10,000 hkcnews articles
are written to a gzipped file of their own first, as ``bench/dedup_speed.py`` does).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BenchDataMissing, die, header, shared_path
from dedup_speed import NG_CORPUS, slice_corpus

#: The parts, in the order a sample is given to them: (name, process, the functions any of
#: which on a sample's stack puts it in the part). "main" is the command's own process.
PARTS: list[tuple[str, str, tuple[str, ...]]] = [
    ("start-up: imports, loading the kernels", "main", ("load_kernels", "_find_and_load")),
    ("the guard's table copied after the fork", "main", ("_own_pages",)),
    ("inflate compressed input (its thread)", "main", ("_Ahead._run",)),
    ("read and check records", "main", ("RecordReader",)),
    ("exact-copy keys", "main", ("text_key",)),
    ("send texts to the workers", "main", ("BatchRun._send", "Queue._feed")),
    ("LSH join (join thread)", "main", ("BatchRun._candidates",)),
    ("verify: placement (compiled)", "main", ("_placed", "_unquoted", "_may_be_edges")),
    ("verify: the rest (prefilter, figures, Python)", "main", ("best_match",)),
    ("count stories into the template guard", "main", ("CommonShingles.add",)),
    ("a story's own codes", "main", ("story_codes",)),
    ("decide: the rest", "main", ("BatchRun._decide", "BatchRun._decide_joined")),
    ("take sketches back", "main", ("BatchRun._receive", "BatchRun._remember")),
    ("write the outputs", "main", ("_Outputs", "LineWriter")),
    ("main: other", "main", ()),
    ("workers: boilerplate stripping", "worker", ("strip_boilerplate_all",)),
    ("workers: normalization", "worker", ("prepare_all",)),
    ("workers: sketch kernel", "worker", ("_compiled_sketches",)),
    ("workers: figures", "worker", ("_compiled_figures",)),
    ("workers: pack into shared memory", "worker", ("share",)),
    ("workers: other", "worker", ()),
]


#: Where a thread found running is in fact waiting (py-spy does not always tell): a sample
#: whose innermost frame is one of these is left out.
WAITS = frozenset(
    {"_PollLikeSelector.select", "Connection._recv", "Connection._poll", "Condition.wait",
     "Event.wait", "wait", "_worker", "Queue.get", "_ConnectionBase.recv"}
)  # fmt: skip


def _function(frame: str) -> str:
    """A py-spy frame's function name (``name (file:line)`` → ``name``)."""
    return frame.split(" (", 1)[0]


def _has(functions: list[str], name: str) -> bool:
    """Whether ``name`` (a function, or a class's methods when it names a class) is among
    ``functions``, its nested functions included (``take.<locals>.<dictcomp>``)."""
    return any(f == name or f.startswith(name + ".") for f in functions)


def split(raw: Path) -> collections.Counter[str]:
    """Samples by part, from py-spy's raw output (one stack a line, then its count; each
    stack starts with its process and the processes it was started by)."""
    out: collections.Counter[str] = collections.Counter()
    for line in raw.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        depth = next((i for i, f in enumerate(frames) if not f.startswith("process ")), 0)
        functions = [_function(f) for f in frames[depth:]]
        if not functions or functions[-1] in WAITS:
            continue
        if depth > 1 and "_process_worker" not in functions:
            continue  # a helper process (the resource tracker), not a sketch worker
        where = "worker" if depth > 1 else "main"
        for name, process, needles in PARTS:
            if process == where and (not needles or any(_has(functions, n) for n in needles)):
                out[name] += int(count)
                break
    return out


def _command(src: Path, scratch: Path) -> list[str]:
    return [sys.executable, "-m", "neardup", "dedup", str(src), "-o", str(scratch / "unique.jsonl"),
            "--clusters", str(scratch / "clusters.jsonl"), "-q"]  # fmt: skip


def profiled(src: Path, rate: int, scratch: Path) -> collections.Counter[str]:
    """One profiled run of ``neardup dedup`` on ``src``: its samples by part."""
    raw = scratch / "profile.txt"
    spy = ["py-spy", "record", "--subprocesses", "--threads", "--rate", str(rate),
           "--format", "raw", "--output", str(raw), "--"]  # fmt: skip
    r = subprocess.run([*spy, *_command(src, scratch)], capture_output=True, text=True, check=False)
    if r.returncode != 0 or not raw.is_file():
        die(RuntimeError(f"py-spy failed ({r.returncode}): {r.stderr.strip()[-400:]}"))
    return split(raw)


def cpu_seconds(src: Path, scratch: Path) -> float:
    """The CPU seconds (user and system, its sketch workers included) of one run of
    ``neardup dedup`` on ``src`` without the profiler."""
    proc = subprocess.Popen(_command(src, scratch), stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        die(RuntimeError(f"neardup dedup {src} failed (status {status})"))
    return float(usage.ru_utime + usage.ru_stime)


def table(name: str, runs: list[collections.Counter[str]], cpu: float) -> str:
    """The markdown table of one input's profiled runs: each part's share of the samples
    (the median over the runs) and that share of ``cpu``, the run's CPU seconds without
    the profiler."""
    totals = [sum(r.values()) for r in runs]
    lines = [
        f"| {name}: part of the run | share of the samples | CPU s (of {cpu:.2f}) |",
        "|---|--:|--:|",
    ]
    for part, _, _ in PARTS:
        share = statistics.median(r.get(part, 0) / t for r, t in zip(runs, totals, strict=True))
        if share > 0:
            lines.append(f"| {part} | {100 * share:.1f} % | {share * cpu:.2f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=250, help="samples a second (py-spy)")
    ap.add_argument("--inputs", default="hk,ng", help="hk (hkcnews 10k), ng (20 Newsgroups)")
    ap.add_argument("--input", type=Path, help="profile this file instead")
    args = ap.parse_args()
    if shutil.which("py-spy") is None:
        die(RuntimeError("py-spy is not installed: pip install -e '.[bench]' (or py-spy)"))
    print(header("neardup dedup: where the CPU goes", {"runs": str(args.runs)}))
    with tempfile.TemporaryDirectory(prefix="neardup-profile-") as tmp:
        scratch = Path(tmp)
        inputs: list[tuple[str, Path]] = []
        try:
            if args.input is not None:
                inputs.append((args.input.name, args.input))
            else:
                chosen = args.inputs.split(",")
                if "hk" in chosen:
                    inputs.append(("hkcnews 10k", slice_corpus(10_000, scratch)[0]))
                if "ng" in chosen:
                    inputs.append(("20 Newsgroups", shared_path(NG_CORPUS)))
        except BenchDataMissing as e:
            die(e)
        for name, src in inputs:
            runs, cpus = [], []
            for _ in range(args.runs):  # interleaved, so an hour's pace weighs on both
                runs.append(profiled(src, args.rate, scratch))
                cpus.append(cpu_seconds(src, scratch))
            print()
            print(table(name, runs, statistics.median(cpus)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
