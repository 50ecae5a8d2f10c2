"""Speed of the HTTP service: POST /v1/documents on a loopback server, measured from clients.

    python bench/service_speed.py                 # 600 articles, 1 and 8 clients, 1 and N workers, SQLite and Redis, 3 runs
    python bench/service_speed.py --docs 300 --runs 1 --stores sqlite --workers 1,2,4
    python bench/service_speed.py --first --runs 5  # the first request of a server that starts

Each run starts ``neardup serve --workers W`` (access log off) on a fresh store — a SQLite file in a
temporary folder, or a namespace on a redis-server this script starts on a free loopback port
— and posts ``--docs`` Chinese articles of 1 to 5 KB (UTF-8) from
``../shared/corpus/hkcnews-zh-hans.jsonl.gz``, read at run time, each once, split between the
clients. A client is a thread with one keep-alive connection (``http.client``) that posts its
share one request after another; the clients share the machine's two cores with the server.
Requests per second is documents / wall time from the first request to the last answer; p50
and p99 are over every request's latency. The figures are the medians over ``--runs`` runs.
With workers, the deciding process's own counts from /metrics (``neardup_decider_*``): its
time a document (busy seconds over the documents it decided) and its share of the run's wall
time (near 1: the decider is what limits the service) — steadier from run to run than
requests per second on a noisy machine.

``--first``: instead, how long the first document added to a server waits, against the ones
after it, from one client. Each run starts ``neardup serve --workers W`` on a fresh store and
posts one article as soon as /healthz answers (the decider of ``--workers`` may still be
starting); starts another on a fresh store, waits ``PAUSE`` (2 s) after /healthz answers,
posts one article (its first request) and 20 more one after another (their median), stops it,
starts it again on that store (now with chrome learned and saved) and, after the same pause,
posts one more (the first request after a restart). Medians over ``--runs``.

The peer, measured in the same run: the library in process (``Deduper.check_and_add``, one
thread, the same store kind and articles), so the table shows what HTTP, JSON and the server
cost on top of deciding.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from _data import BenchDataMissing, die, header, read_jsonl

CORPUS = "corpus/hkcnews-zh-hans.jsonl.gz"
_STARTED = re.compile(r"neardup serve: http://([\d.]+):(\d+)/ ")
#: ``--first``: how long after /healthz answers a server's first request comes, "after a pause"
PAUSE = 2.0


def articles(n: int) -> list[dict[str, str]]:
    """The first ``n`` articles of 1 to 5 KB of UTF-8 text."""
    out = []
    for row in read_jsonl(CORPUS):
        text = row.get("text") or ""
        if 1024 <= len(text.encode("utf-8")) <= 5120:
            out.append({"id": str(row["id"]), "text": text, "title": row.get("title") or None})
            if len(out) == n:
                break
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Redis:
    """A redis-server of the benchmark's own on loopback."""

    def __init__(self, folder: str) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            raise SystemExit("error: redis-server is not installed (apt-get install redis-server)")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", folder,
             "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("error: redis-server did not start")

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0?namespace=b{uuid.uuid4().hex[:10]}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def cpu_seconds(pid: int) -> float:
    """CPU time of a process and every process under it, from /proc (0 where there is none)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except (OSError, ValueError, IndexError):
        return 0.0
    return total + sum(cpu_seconds(c) for c in children)


class Server:
    """``neardup serve --workers W`` on a free loopback port."""

    def __init__(self, store: str, workers: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "neardup", "serve", "--store", store, "--port", "0",
             "--no-access-log", *(["--workers", str(workers)] if workers else [])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            found = _STARTED.search(line)
            if found:
                self.host, self.port = found.group(1), int(found.group(2))
                break
        else:
            raise SystemExit(f"error: neardup serve did not start on {store}")
        stream = self.proc.stderr
        threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()
        self.workers = workers
        for _ in range(600):
            try:
                c = http.client.HTTPConnection(self.host, self.port, timeout=5)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    c.close()
                    break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("error: neardup serve never answered /healthz")

    def warm_up(self, text: str) -> None:
        """Checks (which add nothing) on several connections at once, so that every worker
        has loaded its dictionaries before the timing."""
        body = json.dumps({"id": "warm-up", "text": text}).encode()

        def check() -> None:
            c = http.client.HTTPConnection(self.host, self.port, timeout=120)
            for _ in range(3):
                c.request("POST", "/v1/check", body, {"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                assert r.status == 200
            c.close()

        threads = [threading.Thread(target=check) for _ in range(4 * max(1, self.workers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


@dataclass
class Result:
    rps: float
    p50: float  # milliseconds
    p99: float
    kept: int
    cpu: float = 0.0  # the server's CPU milliseconds per request
    decider_ms: float | None = None  # the decider's busy milliseconds a document
    decider_busy: float | None = None  # its busy seconds over the run's wall seconds


_DECIDER = re.compile(r"^neardup_decider_(\w+) (\S+)$", re.M)


def decider_counts(server: Server) -> dict[str, float]:
    """The deciding process's counts from /metrics (empty: no decider)."""
    c = http.client.HTTPConnection(server.host, server.port, timeout=30)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    return {name: float(value) for name, value in _DECIDER.findall(text)}


def post_all(server: Server, docs: list[dict[str, str]], clients: int) -> Result:
    """Post every document once, split between ``clients`` threads started together."""
    shares = [docs[c::clients] for c in range(clients)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    kept = [0] * clients
    failures: list[str] = []
    barrier = threading.Barrier(clients + 1)

    def client(c: int) -> None:
        conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
        bodies = [json.dumps(d, ensure_ascii=False).encode() for d in shares[c]]
        headers = {"Content-Type": "application/json"}
        barrier.wait()
        for body in bodies:
            t0 = time.perf_counter()
            conn.request("POST", "/v1/documents", body, headers)
            r = conn.getresponse()
            data = r.read()
            latencies[c].append(time.perf_counter() - t0)
            if r.status != 200:
                failures.append(f"{r.status} {data[:200]!r}")
                return
            kept[c] += not json.loads(data)["is_duplicate"]
        conn.close()

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    before = decider_counts(server)
    if before:  # the processes share their counts every second: the warm-up's in first
        time.sleep(1.3)
        before = decider_counts(server)
    for t in threads:
        t.start()
    cpu0 = cpu_seconds(server.proc.pid)
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    cpu = (cpu_seconds(server.proc.pid) - cpu0) / len(docs) * 1000
    if failures:
        raise SystemExit(f"error: a request failed: {failures[0]}")
    every = sorted(x for lat in latencies for x in lat)
    p99 = every[min(len(every) - 1, int(0.99 * len(every)))]
    result = Result(len(docs) / wall, statistics.median(every) * 1000, p99 * 1000, sum(kept), cpu)
    if before:
        for _ in range(60):  # until the decider has shared what it decided
            after = decider_counts(server)
            decided = after["documents_total"] - before["documents_total"]
            if decided >= len(docs):
                busy = after["busy_seconds_total"] - before["busy_seconds_total"]
                result.decider_ms, result.decider_busy = busy / decided * 1000, busy / wall
                break
            time.sleep(0.1)
    return result


def library(store: str, docs: list[dict[str, str]]) -> float:
    """Documents per second of Deduper.check_and_add in this process, on ``store``."""
    from neardup import Deduper

    with Deduper(store=store) as dd:
        dd.check("warm-up", docs[0]["text"])  # load the dictionaries outside the timing
        t0 = time.perf_counter()
        for d in docs:
            dd.check_and_add(d["id"], d["text"], title=d["title"])
        return len(docs) / (time.perf_counter() - t0)


def _post(conn: http.client.HTTPConnection, doc: dict[str, str]) -> float:
    """Milliseconds to add ``doc`` (one request, on ``conn``)."""
    body = json.dumps(doc).encode()
    t0 = time.perf_counter()
    conn.request("POST", "/v1/documents", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    ms = (time.perf_counter() - t0) * 1000
    if r.status != 200:
        raise SystemExit(f"error: POST /v1/documents answered {r.status}")
    return ms


def first_requests(
    docs: list[dict[str, str]],
    stores: list[str],
    workers: list[int],
    runs: int,
    layout: dict[str, str],
) -> None:
    """``--first``: the first document added to a server that has just started (at once,
    and after a pause), on a new store and on the same store after a restart, against the
    20 after the first."""
    print(
        header(
            "The first POST /v1/documents of a server that starts", {"runs": str(runs), **layout}
        )
    )
    print(
        "| store | workers | first request at once, new store (ms) | first request after "
        f"{PAUSE:g} s, new store (ms) | the next 20, median (ms) | first request after "
        f"{PAUSE:g} s, restarted (ms) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        redis = Redis(tmp) if "redis" in stores else None
        try:
            for kind in stores:

                def fresh(kind: str = kind) -> str:
                    if kind == "redis":
                        assert redis is not None
                        url = redis.url()
                    else:
                        url = f"sqlite:///{Path(tmp) / uuid.uuid4().hex[:8]}.db"
                    if layout:
                        url += ("&" if "?" in url else "?") + f"format={layout['format']}"
                    return url

                for w in workers:
                    at_once: list[float] = []
                    first: list[float] = []
                    after: list[float] = []
                    again: list[float] = []
                    for _ in range(runs):
                        url = fresh()
                        for step in ("at once", "paused", "restarted"):
                            server = Server(fresh() if step == "at once" else url, w)
                            conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
                            try:
                                if step != "at once":
                                    time.sleep(PAUSE)
                                if step == "restarted":
                                    again.append(_post(conn, docs[21]))
                                    continue
                                (at_once if step == "at once" else first).append(
                                    _post(conn, docs[0])
                                )
                                if step == "paused":
                                    after.append(
                                        statistics.median(_post(conn, d) for d in docs[1:21])
                                    )
                            finally:
                                conn.close()
                                server.stop()
                    print(
                        f"| {kind} | {w} | {statistics.median(at_once):.1f} | "
                        f"{statistics.median(first):.1f} | {statistics.median(after):.1f} | "
                        f"{statistics.median(again):.1f} |",
                        flush=True,
                    )
        finally:
            if redis is not None:
                redis.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=600, help="articles per run (default 600)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each setting (default 3)")
    parser.add_argument("--clients", default="1,8", help="client counts (default 1,8)")
    parser.add_argument("--stores", default="sqlite,redis", help="stores (default sqlite,redis)")
    parser.add_argument(
        "--format",
        choices=["compact", "full"],
        help="the layout of the stores made (default: the stores' default, compact since "
        "compact stores; full: the layout before them)",
    )
    parser.add_argument(
        "--workers",
        default=f"1,{os.cpu_count() or 1}",
        help="worker processes of the server (default: 1 and the CPUs, %(default)s; 0 leaves "
        "--workers out, for a neardup from before it)",
    )
    parser.add_argument(
        "--first",
        action="store_true",
        help="measure the first request of a server that starts, instead (see above)",
    )
    args = parser.parse_args()
    try:
        docs = articles(max(args.docs, 22) if args.first else args.docs)
    except BenchDataMissing as e:
        die(e)
    kb = sum(len(d["text"].encode()) for d in docs) / len(docs) / 1024
    clients = [int(c) for c in args.clients.split(",")]
    stores = args.stores.split(",")
    workers = list(dict.fromkeys(int(w) for w in args.workers.split(",")))
    layout = {"format": args.format} if args.format else {}
    if args.first:
        first_requests(docs, stores, workers, args.runs, layout)
        return
    print(header("POST /v1/documents on a loopback server", {"runs": str(args.runs), **layout}))
    print(f"{len(docs)} hkcnews articles of 1–5 KB (mean {kb:.1f} KB), each posted once per run\n")
    print(
        "| store | workers | clients | requests/s | vs 1 worker | p50 ms | p99 ms | CPU ms | "
        "library docs/s | HTTP / library | decider ms a document | decider busy |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    kept: set[int] = set()
    with tempfile.TemporaryDirectory() as tmp:
        redis = Redis(tmp) if "redis" in stores else None
        try:
            for kind in stores:

                def fresh(tag: str, kind: str = kind) -> str:
                    if kind == "redis":
                        assert redis is not None
                        url = redis.url()
                    else:
                        url = f"sqlite:///{Path(tmp) / (tag + uuid.uuid4().hex[:8])}.db"
                    if args.format:
                        url += ("&" if "?" in url else "?") + f"format={args.format}"
                    return url

                peer = statistics.median(library(fresh("lib"), docs) for _ in range(args.runs))
                settings = [(w, n) for n in clients for w in workers]
                runs: dict[tuple[int, int], list[Result]] = {s: [] for s in settings}
                for _ in range(args.runs):  # interleaved: a run of each setting, then again
                    for w, n in settings:
                        server = Server(fresh("svc"), w)
                        try:
                            server.warm_up(docs[0]["text"])
                            runs[(w, n)].append(post_all(server, docs, n))
                        finally:
                            server.stop()
                        kept.add(runs[(w, n)][-1].kept)
                rps = {s: statistics.median(r.rps for r in found) for s, found in runs.items()}
                for w, n in settings:
                    found = runs[(w, n)]
                    one = rps.get((1, n))
                    ratio = f"{rps[(w, n)] / one:.2f}" if one else "—"
                    p50 = statistics.median(r.p50 for r in found)
                    p99 = statistics.median(r.p99 for r in found)
                    cpu = statistics.median(r.cpu for r in found)
                    ms = [r.decider_ms for r in found if r.decider_ms is not None]
                    busy = [r.decider_busy for r in found if r.decider_busy is not None]
                    deciding = (
                        f"{statistics.median(ms):.2f} | {statistics.median(busy):.2f}"
                        if ms and busy
                        else "— | —"
                    )
                    print(
                        f"| {kind} | {w} | {n} | {rps[(w, n)]:,.0f} | {ratio} | {p50:.1f} | "
                        f"{p99:.1f} | {cpu:.2f} | {peer:,.0f} | {rps[(w, n)] / peer:.2f} | "
                        f"{deciding} |",
                        flush=True,
                    )
        finally:
            if redis is not None:
                redis.stop()
    shown = ", ".join(str(k) for k in sorted(kept))
    print(f"\n(cpus: {os.cpu_count()}; kept per run: {shown} of {len(docs)})")


if __name__ == "__main__":
    main()
