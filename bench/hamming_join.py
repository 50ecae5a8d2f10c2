"""Benchmark: the all-pairs Hamming join and the Hamming index, against the `simhash` package.

    python3 bench/hamming_join.py            # 1,000,000 fingerprints, peer on 20,000
    python3 bench/hamming_join.py --quick    # 100,000 and 5,000, for a smoke run

The target: the join of 1,000,000 random 64-bit fingerprints at k = 3; seomoz/simhash-py's
C++ reports 1.6 s on one core (not run here). The peer measured in the same run is the
`simhash` package (pure Python): SimhashIndex.add for every fingerprint, then get_near_dups
for every fingerprint, which is the same all-pairs join done through its index.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from neardup.index import HammingIndex, hamming_join
from neardup.index.hamming import join_blocks

K = 3
SEED = 20070508  # WWW 2007


def fingerprints(n: int, planted: int, rng: np.random.Generator) -> np.ndarray:
    """n random 64-bit fingerprints, the last ``planted`` of them copies of earlier ones with
    1 to 3 bits flipped, so that the join has pairs to find."""
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    planted = min(planted, n // 2)
    if planted:
        source = rng.choice(n - planted, planted, replace=False)
        flips = np.zeros(planted, dtype=np.uint64)
        count = rng.integers(1, K + 1, planted)
        for round_ in range(K):
            bit = rng.integers(0, 64, planted).astype(np.uint64)
            flips |= np.where(count > round_, np.uint64(1) << bit, np.uint64(0))
        fps[n - planted :] = fps[source] ^ flips
    return fps


def timed(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """Median seconds of ``runs`` calls, and the last result."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def index_pairs(fps: np.ndarray, blocks: int | None = None) -> set[tuple[int, int]]:
    """The all-pairs join done through our index: add every fingerprint, query every one."""
    index = HammingIndex(k=K, blocks=blocks)
    ints = [int(f) for f in fps]
    for i, fp in enumerate(ints):
        index.add(str(i), fp)
    pairs = set()
    for i, fp in enumerate(ints):
        for key, _ in index.query(fp):
            j = int(key)
            if i < j:
                pairs.add((i, j))
    return pairs


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def bench_join(n: int, runs: int, rng: np.random.Generator) -> None:
    fps = fingerprints(n, max(1, n // 500), rng)
    chosen = join_blocks(64, K, n)
    rows = []
    for blocks in sorted({K + 1, chosen, K + 3}):
        given = None if blocks == chosen else blocks  # the default row runs the default path
        seconds, pairs = timed(functools.partial(hamming_join, fps, k=K, blocks=given), runs)
        label = f"{blocks}" + (" (default)" if blocks == chosen else "")
        rows.append([label, f"{math.comb(blocks, K)}", f"{seconds:.3f}", f"{len(pairs):,}"])
    print(f"\n## Join: {n:,} random 64-bit fingerprints, k = {K}, median of {runs}\n")
    print(table(["blocks", "tables", "seconds", "pairs found"], rows))
    print("\nseomoz/simhash-py's C++ reports 1.6 s for 1,000,000 on one core (not run here).")


def bench_index(n: int, runs: int, rng: np.random.Generator) -> None:
    fps = [int(f) for f in fingerprints(n, 0, rng)]
    # Queries near the stored fingerprints (0 to 3 bits flipped), so each finds something.
    picks = rng.integers(0, n, n)
    flips = rng.integers(0, 64, (n, K))
    counts = rng.integers(0, K + 1, n)
    queries = []
    for pick, bits, count in zip(picks.tolist(), flips.tolist(), counts.tolist(), strict=True):
        q = fps[pick]
        for bit in bits[:count]:
            q ^= 1 << bit
        queries.append(q)
    rows = []
    for blocks in (K + 1, None):
        index = HammingIndex(k=K, blocks=blocks)

        def build(index: HammingIndex = index) -> None:
            for i, fp in enumerate(fps):
                index.add(str(i), fp)

        def query(index: HammingIndex = index) -> int:
            return sum(len(index.query(q)) for q in queries)

        add_seconds, _ = timed(build, 1)
        query_seconds, found = timed(query, runs)
        label = f"{index.blocks}" + (" (default)" if blocks is None else "")
        rows.append(
            [
                label,
                f"{index.tables}",
                f"{n / add_seconds:,.0f}",
                f"{len(queries) / query_seconds:,.0f}",
                f"{found / len(queries):.2f}",
            ]
        )
    print(f"\n## Index: {n:,} fingerprints stored, {n:,} queries within 0-3 bits, k = {K}\n")
    print(table(["blocks", "tables", "adds/s", "queries/s", "found per query"], rows))


def bench_peer(n: int, runs: int, rng: np.random.Generator) -> None:
    print(f"\n## Peer: the `simhash` package's SimhashIndex, {n:,} fingerprints, k = {K}\n")
    try:
        from simhash import Simhash, SimhashIndex
    except ImportError:
        print("Peer `simhash` is not installed (pip install 'neardup[bench]'): peer skipped.")
        return
    fps = fingerprints(n, max(1, n // 50), rng)
    ints = [int(f) for f in fps]
    objects = [Simhash(v, f=64) for v in ints]  # built outside the timing

    def peer() -> set[tuple[int, int]]:
        index = SimhashIndex([], f=64, k=K)
        for i, obj in enumerate(objects):
            index.add(str(i), obj)
        pairs = set()
        for i, obj in enumerate(objects):
            for key in index.get_near_dups(obj):
                if i < int(key):
                    pairs.add((i, int(key)))
        return pairs

    peer_seconds, peer_found = timed(peer, 1 if n > 50_000 else runs)
    join_seconds, joined = timed(lambda: hamming_join(fps, k=K), runs)
    index_seconds, indexed = timed(lambda: index_pairs(fps), runs)
    ours = {tuple(p) for p in joined.tolist()}
    same = ours == peer_found == indexed
    rows = [
        [
            "hamming_join",
            f"{join_seconds:.4g}",
            f"{peer_seconds:.4g}",
            f"{peer_seconds / join_seconds:,.0f}x",
        ],
        [
            "HammingIndex add + query all",
            f"{index_seconds:.4g}",
            f"{peer_seconds:.4g}",
            f"{peer_seconds / index_seconds:,.1f}x",
        ],
    ]
    print(table(["neardup", "neardup s", "simhash s", "simhash / neardup"], rows))
    print(f"\npairs found: {len(ours):,}; the same pairs as the peer: {'yes' if same else 'NO'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="fingerprints to join")
    parser.add_argument("--index-n", type=int, default=100_000, help="fingerprints indexed")
    parser.add_argument("--peer-n", type=int, default=20_000, help="fingerprints for the peer")
    parser.add_argument("--runs", type=int, default=3, help="runs per timing (the median)")
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.n, args.index_n, args.peer_n = 100_000, 20_000, 5_000
    print(
        f"# neardup Hamming join and index — Python {platform.python_version()}, "
        f"numpy {np.__version__}, {platform.machine()}, {os.cpu_count()} CPUs (one used)"
    )
    rng = np.random.default_rng(SEED)
    bench_join(args.n, args.runs, rng)
    bench_index(args.index_n, args.runs, rng)
    bench_peer(args.peer_n, args.runs, rng)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
