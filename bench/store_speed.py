"""Check-and-add throughput of each store, with 1, 2 and 4 processes sharing it, beside
datasketch's own Redis-backed MinHash LSH, in the same run.

    python bench/store_speed.py [--limit 10000] [--procs 1 2 4] [--rounds 3] [--batch 64]
    python bench/store_speed.py --limit 10000 --procs 1 --rounds 1 --breakdown   # sizes only
    python bench/store_speed.py --limit 48005 --growth 8000 --backends sqlite   # as it fills

``--backends`` picks the stores: ``memory``, ``sqlite`` and ``redis`` (compact, the default for
a new store), ``sqlite-full`` and ``redis-full`` (``format=full``: whole sketches, one key or
row per bucket entry), ``datasketch``. ``--breakdown`` also prints where each store's bytes
go (SQLite: each table and index, from ``dbstat``; Redis: each kind of key, from ``MEMORY
USAGE``). ``--growth N`` measures instead how a store's cost changes as it fills: one process
feeds all ``--limit`` articles into a fresh store of each backend, and every N documents the
table gets a row of the documents a second, the KiB written to disk a document (SQLite) and
the store's size, over the last N.

The first ``--limit`` articles of ../shared/corpus/hkcnews-zh-hans.jsonl.gz are dealt out to
the processes in turn; every process opens its own Deduper on the shared store, waits at a
barrier, then feeds its share through ``check_and_add_many`` in batches, end to end
(normalization, sketches, candidates, verification, the store's round trips). The figure is
the whole run's documents per second of wall time and its share per process, median of the
rounds. A fresh store each round: a SQLite file in a temporary folder, a namespace on a
redis-server this script starts on loopback (Debian's package). ``memory://`` is one
process's own, so it runs with one process only.

The peer is datasketch's ``MinHashLSH(threshold=0.5, num_perm=128)`` with its Redis storage:
for each document a ``MinHash`` of its 5-character shingles, ``query`` then ``insert`` (its
check-and-add; it has no atomicity across processes), on the same redis-server.
"""

from __future__ import annotations

import argparse
import multiprocessing
import queue
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _data import die, header, read_jsonl

CORPUS = "corpus/hkcnews-zh-hans.jsonl.gz"

Docs = list[tuple[str, str]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    exe = shutil.which("redis-server")
    if exe is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    port = _free_port()
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
         "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    import redis

    for _ in range(200):
        try:
            redis.Redis(port=port).ping()
            return proc, port
        except redis.ConnectionError:
            time.sleep(0.05)
    raise SystemExit("redis-server did not start")


def neardup_worker(url: str, docs: Docs, batch: int, start: Any, out: Any) -> None:
    from neardup import Deduper

    with Deduper(store=url, explain=False) as dd:
        start.wait()
        t0 = time.perf_counter()
        written = _written()
        dups = 0
        for i in range(0, len(docs), batch):
            dups += sum(d.is_duplicate for d in dd.check_and_add_many(docs[i : i + batch]))
        out.put((len(docs), time.perf_counter() - t0, dups, dd.retries, _written() - written))


def growth_worker(url: str, db: Path, docs: Docs, batch: int, every: int, out: Any) -> None:
    """Fill a fresh store, a row every ``every`` documents: (documents so far, docs/s and
    bytes written over the last ``every``, the file's bytes after a checkpoint)."""
    from neardup import Deduper

    rows = []
    with Deduper(store=url, explain=False) as dd:
        t0, w0, last = time.perf_counter(), _written(), 0
        for i in range(0, len(docs), batch):
            dd.check_and_add_many(docs[i : i + batch])
            n = min(i + batch, len(docs))
            if n - last >= every or (n == len(docs) and n - last >= every // 2):
                t1, w1 = time.perf_counter(), _written()
                size = db.stat().st_size if db.exists() else 0
                rows.append((n, (n - last) / (t1 - t0), (w1 - w0) / (n - last), size))
                t0, w0, last = time.perf_counter(), _written(), n
    out.put(rows)


def growth(args: argparse.Namespace, docs: Docs, scratch: Path, port: int) -> None:
    """``--growth``: a table a backend, a row each ``args.growth`` documents."""
    ctx = multiprocessing.get_context("fork")
    for backend in args.backends:
        if backend in ("memory", "datasketch"):
            continue
        tag = uuid.uuid4().hex[:8]
        db = scratch / f"{tag}.db"
        url = {
            "sqlite": f"sqlite:///{db}",
            "sqlite-full": f"sqlite:///{db}?format=full",
            "redis": f"redis://127.0.0.1:{port}/0?namespace=b{tag}",
            "redis-full": f"redis://127.0.0.1:{port}/0?namespace=b{tag}&format=full",
        }[backend]
        out = ctx.Queue()
        proc = ctx.Process(target=growth_worker, args=(url, db, docs, args.batch, args.growth, out))
        proc.start()
        (rows,) = results_of(out, [proc])
        proc.join()
        print(header(f"neardup {backend}: as it fills, one process, batch {args.batch}"))
        print("| documents | docs/s | KiB written to disk per document | file MiB |")
        print("|---:|---:|---:|---:|")
        for n, rate, written, size in rows:
            disk = f"{written / 1024:,.1f}" if backend.startswith("sqlite") else "—"
            file = f"{size / 2**20:,.1f}" if backend.startswith("sqlite") else "—"
            print(f"| {n:,} | {rate:,.0f} | {disk} | {file} |")
        print(
            f"\nEach row: the {args.growth:,} documents before it (the file: its size then, "
            "before a checkpoint). Command: python bench/store_speed.py --growth "
            f"{args.growth} --limit {args.limit} --batch {args.batch} --backends {backend}\n"
        )


def _written() -> int:
    """The bytes this process has caused to be written to disk (Linux: /proc/self/io's
    write_bytes; 0 elsewhere)."""
    try:
        with open("/proc/self/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("write_bytes"))
    except (OSError, StopIteration):
        return 0


def datasketch_worker(
    port: int, basename: str, docs: Docs, batch: int, start: Any, out: Any
) -> None:
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(
        threshold=0.5,
        num_perm=128,
        storage_config={
            "type": "redis",
            "basename": basename.encode(),
            "redis": {"host": "127.0.0.1", "port": port},
        },
    )
    start.wait()
    t0 = time.perf_counter()
    dups = 0
    for doc_id, text in docs:
        s = "".join(text.split())
        grams = {s[i : i + 5] for i in range(max(1, len(s) - 4))}
        m = MinHash(num_perm=128)
        m.update_batch([g.encode("utf-8") for g in grams])
        dups += bool(lsh.query(m))
        lsh.insert(doc_id, m, check_duplication=False)
    out.put((len(docs), time.perf_counter() - t0, dups, 0, 0))


def results_of(out: Any, workers: list[Any]) -> list[Any]:
    """What each of ``workers`` puts in ``out``; when one of them ends without it (it
    failed, or was killed), the others are stopped and the bench ends saying so, instead of
    waiting for it forever."""
    results: list[Any] = []
    wait = 1.0
    while len(results) < len(workers):
        try:
            results.append(out.get(timeout=wait))
        except queue.Empty:
            ended = [w for w in workers if w.exitcode is not None]
            failed = [w.exitcode for w in ended if w.exitcode != 0]
            if len(ended) == len(workers) and not failed and wait < 5.0:
                wait = 5.0  # all ended well: what they put may still be on its way
                continue
            if failed or len(ended) == len(workers):
                for w in workers:
                    w.terminate()
                raise SystemExit(
                    f"error: a bench process ended without its result (exit status "
                    f"{failed[0] if failed else 0}); the others were stopped"
                ) from None
    return results


def run(
    target: Callable[..., None], args: tuple[Any, ...], docs: Docs, procs: int, batch: int
) -> tuple[float, float, int, int, int]:
    """(docs/s of the whole run, docs/s per process, duplicates found, retries, bytes the
    processes wrote to disk)."""
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(procs)
    out = ctx.Queue()
    shares = [docs[p::procs] for p in range(procs)]
    workers = [ctx.Process(target=target, args=(*args, s, batch, start, out)) for s in shares]
    for w in workers:
        w.start()
    results = results_of(out, workers)
    for w in workers:
        w.join()
        if w.exitcode != 0:
            raise SystemExit(f"a worker failed ({w.exitcode})")
    n = sum(r[0] for r in results)
    wall = max(r[1] for r in results)
    per = statistics.median(r[0] / r[1] for r in results)
    written = sum(r[4] for r in results)
    return n / wall, per, sum(r[2] for r in results), sum(r[3] for r in results), written


def _redis_memory(port: int) -> int:
    import redis

    return int(redis.Redis(port=port).info("memory")["used_memory"])


def _store_bytes(backend: str, db: Path, port: int, used_before: int) -> int | None:
    """What the run left in its store: the SQLite file once its WAL is checkpointed, or the
    growth of the redis-server's memory."""
    if backend.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(db) as con:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        wal = Path(f"{db}-wal")
        return db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    if backend.startswith("redis") or backend == "datasketch":
        return _redis_memory(port) - used_before
    return None


def _breakdown(backend: str, db: Path, port: int, namespace: str, docs: int) -> list[str]:
    """Where a store's bytes go, a line each: bytes per document of each table or kind of key."""
    parts: dict[str, int] = {}
    if backend.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(db) as con:
            for name, size in con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
                parts[name] = int(size)
    elif backend.startswith("redis"):
        import redis

        client = redis.Redis(port=port)
        for key in client.scan_iter(f"{namespace}:*", count=1000):
            rest = key.decode()[len(namespace) + 1 :]
            kind = rest.split(":", 1)[0] + (":*" if ":" in rest else "")
            parts[kind] = parts.get(kind, 0) + int(client.memory_usage(key, samples=0) or 0)
        client.close()
    total = sum(parts.values()) or 1
    return [
        f"  {name:<24} {size / docs:9,.0f} bytes/doc  {100 * size / total:5.1f} %"
        for name, size in sorted(parts.items(), key=lambda x: -x[1])
        if size / docs >= 0.5
    ]


def _written_cell(backend: str, runs: list[tuple[float, float, int, int, int]], n: int) -> str:
    if not backend.startswith("sqlite"):
        return "—"
    return f"{statistics.median(x[4] for x in runs) / n / 1024:,.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=10_000)
    parser.add_argument("--procs", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument(
        "--backends",
        nargs="+",
        default=["memory", "sqlite", "sqlite-full", "redis", "redis-full", "datasketch"],
    )
    parser.add_argument("--breakdown", action="store_true", help="where each store's bytes go")
    parser.add_argument(
        "--growth", type=int, default=0, help="a row every N documents as one process fills a store"
    )
    args = parser.parse_args()
    try:
        docs = [(str(d["id"]), str(d.get("text") or "")) for d in read_jsonl(CORPUS, args.limit)]
    except FileNotFoundError as e:
        die(e)
    docs = [(i, t) for i, t in docs if t.strip()]
    scratch = Path(tempfile.mkdtemp(prefix="neardup-store-bench-"))
    redis_proc, port = start_redis(scratch)
    if args.growth:
        try:
            growth(args, docs, scratch, port)
        finally:
            redis_proc.terminate()
            redis_proc.wait()
            shutil.rmtree(scratch, ignore_errors=True)
        return 0
    table: dict[tuple[str, int], list[tuple[float, float, int, int, int]]] = {}
    sizes: dict[str, list[float]] = {}
    breakdowns: dict[str, list[str]] = {}
    try:
        for r in range(args.rounds):
            for procs in args.procs:
                for backend in args.backends:
                    if backend == "memory" and procs > 1:
                        continue
                    tag = uuid.uuid4().hex[:8]
                    used = _redis_memory(port)
                    if backend == "datasketch":
                        res = run(datasketch_worker, (port, f"ds{tag}"), docs, procs, args.batch)
                    else:
                        url = {
                            "memory": "memory://",
                            "sqlite": f"sqlite:///{scratch / f'{tag}.db'}",
                            "sqlite-full": f"sqlite:///{scratch / f'{tag}.db'}?format=full",
                            "redis": f"redis://127.0.0.1:{port}/0?namespace=b{tag}",
                            "redis-full": f"redis://127.0.0.1:{port}/0?namespace=b{tag}"
                            "&format=full",
                        }[backend]
                        res = run(neardup_worker, (url,), docs, procs, args.batch)
                    size = _store_bytes(backend, scratch / f"{tag}.db", port, used)
                    if args.breakdown and r == 0 and backend != "memory":
                        where = _breakdown(
                            backend, scratch / f"{tag}.db", port, f"b{tag}", len(docs)
                        )
                        breakdowns.setdefault(f"{backend}, {procs} proc", where)
                    if size is not None:
                        sizes.setdefault(backend, []).append(size / len(docs))
                    table.setdefault((backend, procs), []).append(res)
                    print(
                        f"round {r + 1} {backend:<10} {procs} proc: {res[0]:8.0f} docs/s, "
                        f"{res[1]:6.0f} per process, {res[2]} duplicates, {res[3]} retries",
                        file=sys.stderr,
                    )
    finally:
        redis_proc.terminate()
        redis_proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)

    print(header(f"Check-and-add throughput, {len(docs):,} hkcnews articles, batch {args.batch}"))
    print(
        "| store | processes | docs/s (all) | docs/s per process | duplicates | retries "
        "| bytes per document | KiB written to disk per document |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for (backend, procs), runs in table.items():
        name = "datasketch MinHashLSH (Redis)" if backend == "datasketch" else f"neardup {backend}"
        if backend in ("sqlite", "redis"):
            name += " (compact)"
        per_doc = statistics.median(sizes[backend]) if backend in sizes else None
        print(
            f"| {name} | {procs} | {statistics.median(x[0] for x in runs):,.0f} "
            f"| {statistics.median(x[1] for x in runs):,.0f} "
            f"| {statistics.median(x[2] for x in runs):,.0f} "
            f"| {statistics.median(x[3] for x in runs):,.0f} "
            f"| {'—' if per_doc is None else f'{per_doc:,.0f}'} "
            f"| {_written_cell(backend, runs, len(docs))} |"
        )
    print(
        "\nBytes per document: the SQLite file after a checkpoint, Redis's `used_memory` "
        "(INFO memory) after the run less before it; memory:// is not measured. Written to "
        "disk: what the deciding processes caused to be written (/proc/self/io write_bytes: "
        "SQLite's WAL and its checkpoints), SQLite only (redis-server writes its own)."
    )
    for name, lines in breakdowns.items():
        print(f"\nWhere the bytes go, {name}:")
        print("\n".join(lines))
    print(f"\nMedians of {args.rounds} rounds. Command: python bench/store_speed.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
