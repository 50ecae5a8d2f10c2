"""Speed of the HTTP service: POST /v1/documents on a loopback server, measured from clients.

    python bench/service_speed.py                 # 600 articles, 1 and 8 clients, SQLite and Redis, 3 runs
    python bench/service_speed.py --docs 300 --runs 1 --stores sqlite

Each run starts ``neardup serve`` (access log off) on a fresh store — a SQLite file in a
temporary folder, or a namespace on a redis-server this script starts on a free loopback port
— and posts ``--docs`` Chinese articles of 1 to 5 KB (UTF-8) from
``../shared/corpus/hkcnews-zh-hans.jsonl.gz``, read at run time, each once, split between the
clients. A client is a thread with one keep-alive connection (``http.client``) that posts its
share one request after another; the clients share the machine's two cores with the server.
Requests per second is documents / wall time from the first request to the last answer; p50
and p99 are over every request's latency. The figures are the medians over ``--runs`` runs.

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


class Server:
    """``neardup serve`` on a free loopback port."""

    def __init__(self, store: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "neardup", "serve", "--store", store, "--port", "0",
             "--no-access-log"],
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
        for _ in range(300):
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
        """One check (which adds nothing), so the dictionaries load outside the timing."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=60)
        body = json.dumps({"id": "warm-up", "text": text}).encode()
        c.request("POST", "/v1/check", body, {"Content-Type": "application/json"})
        assert c.getresponse().status == 200
        c.close()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


@dataclass
class Result:
    rps: float
    p50: float  # milliseconds
    p99: float
    kept: int


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
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if failures:
        raise SystemExit(f"error: a request failed: {failures[0]}")
    every = sorted(x for lat in latencies for x in lat)
    p99 = every[min(len(every) - 1, int(0.99 * len(every)))]
    return Result(len(docs) / wall, statistics.median(every) * 1000, p99 * 1000, sum(kept))


def library(store: str, docs: list[dict[str, str]]) -> float:
    """Documents per second of Deduper.check_and_add in this process, on ``store``."""
    from neardup import Deduper

    with Deduper(store=store) as dd:
        dd.check("warm-up", docs[0]["text"])  # load the dictionaries outside the timing
        t0 = time.perf_counter()
        for d in docs:
            dd.check_and_add(d["id"], d["text"], title=d["title"])
        return len(docs) / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=600, help="articles per run (default 600)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each setting (default 3)")
    parser.add_argument("--clients", default="1,8", help="client counts (default 1,8)")
    parser.add_argument("--stores", default="sqlite,redis", help="stores (default sqlite,redis)")
    args = parser.parse_args()
    try:
        docs = articles(args.docs)
    except BenchDataMissing as e:
        die(e)
    kb = sum(len(d["text"].encode()) for d in docs) / len(docs) / 1024
    clients = [int(c) for c in args.clients.split(",")]
    stores = args.stores.split(",")
    print(header("POST /v1/documents on a loopback server", {"runs": str(args.runs)}))
    print(f"{len(docs)} hkcnews articles of 1–5 KB (mean {kb:.1f} KB), each posted once per run\n")
    print("| store | clients | requests/s | p50 ms | p99 ms | library docs/s | HTTP / library |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        redis = Redis(tmp) if "redis" in stores else None
        try:
            for kind in stores:

                def fresh(tag: str, kind: str = kind) -> str:
                    if kind == "redis":
                        assert redis is not None
                        return redis.url()
                    return f"sqlite:///{Path(tmp) / (tag + uuid.uuid4().hex[:8])}.db"

                peer = statistics.median(library(fresh("lib"), docs) for _ in range(args.runs))
                for n in clients:
                    runs = []
                    for _ in range(args.runs):
                        server = Server(fresh("svc"))
                        try:
                            server.warm_up(docs[0]["text"])
                            runs.append(post_all(server, docs, n))
                        finally:
                            server.stop()
                    rps = statistics.median(r.rps for r in runs)
                    p50 = statistics.median(r.p50 for r in runs)
                    p99 = statistics.median(r.p99 for r in runs)
                    print(
                        f"| {kind} | {n} | {rps:,.0f} | {p50:.1f} | {p99:.1f} | {peer:,.0f} | "
                        f"{rps / peer:.2f} |",
                        flush=True,
                    )
        finally:
            if redis is not None:
                redis.stop()
    print(f"\n(cpus: {os.cpu_count()}; kept per run: {runs[-1].kept} of {len(docs)})")


if __name__ == "__main__":
    main()
