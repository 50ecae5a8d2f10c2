"""``neardup serve``: the HTTP service and its page on one port.

Only the standard library is imported here, so ``neardup --help`` works without the
``service`` extra; :func:`run` imports FastAPI and uvicorn when the service starts.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError, MissingDependencyError
from ..machine import machine_cpus, workers_memory_holds, workers_within_memory
from ..options import store_options, store_url
from ..records.streams import parse_size as _parse_size
from ._middleware import allowed_name
from ._settings import (  # standard library only, as is everything this module imports
    DEFAULT_HEALTH_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_COMPARE_CELLS,
    DEFAULT_MAX_COMPARE_CHARS,
    DEFAULT_MAX_CONCURRENT_COMPARE,
    DEFAULT_MAX_QUEUE,
    DEFAULT_QUEUE_TIMEOUT,
)

__all__ = ["MIN_PUBLIC_KEY", "add_parser", "is_loopback", "parse_size", "run", "workers_for"]

_DESCRIPTION = """\
Serve the Deduper over HTTP: JSON endpoints under /v1 for crawlers in any language (check,
add, batch add, look up, delete, clusters, compare), /healthz, /metrics, the OpenAPI document
at /openapi.json (browsable at /docs), and a page at / to compare two texts and browse the
clusters of the store."""

_EPILOG = """\
security:
  With a key (--api-key, or the NEARDUP_API_KEY environment variable, which keeps it out of
  the process list), adding and deleting need the header Authorization: Bearer KEY. Reading
  and comparing need none. Without a key the service listens only on a loopback address;
  beyond loopback the key must have 16 characters or more. Requests are answered only when
  their Host header names localhost, 127.0.0.1, [::1], the --host address or an
  --allowed-host (against DNS rebinding); /v1/compare takes bounded texts, a few at once.

examples:
  neardup serve --db crawl.db
  export NEARDUP_API_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
  neardup serve --db crawl.db --host 0.0.0.0 --allowed-host dedup.internal
  neardup serve --store 'redis://127.0.0.1:6379/0?namespace=crawl' --window 90d"""

#: Connections the kernel keeps waiting for the workers to take them (uvicorn's default).
_BACKLOG = 2048

#: The shortest API key taken for a service others can reach (beyond loopback).
MIN_PUBLIC_KEY = 16


def parse_size(value: str) -> int:
    """A size in bytes: ``10000000``, ``512K``, ``10M``, ``1G`` (powers of 1024; the one
    rule of :func:`neardup.records.parse_size`), for argparse.

    >>> parse_size("10M"), parse_size("512k"), parse_size("1000")
    (10485760, 524288, 1000)
    """
    try:
        return _parse_size(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is between 0 and 65535, not {port}")
    return port


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 1e6:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return seconds


def _count(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return n


def _host(value: str) -> str:
    if value != "*" and allowed_name(value) is None:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a host name or address (or '*' for any)"
        )
    return value


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to the command line's subcommands."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="the HTTP API and a page to compare texts and browse clusters",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    store_options(p, default=" (the default: forgotten when the service stops)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: %(default)s; any other than a loopback "
        "address needs an API key)",
    )
    p.add_argument(
        "--port", type=_port, default=8000, help="the port (default: %(default)s; 0 picks one)"
    )
    p.add_argument(
        "--api-key",
        metavar="KEY",
        help="the key that adding and deleting need (default: $NEARDUP_API_KEY)",
    )
    p.add_argument(
        "--window",
        metavar="TIME",
        help="compare a document only with those published within this time of it (90d, 12h)",
    )
    p.add_argument(
        "--max-body",
        type=parse_size,
        metavar="SIZE",
        default=DEFAULT_MAX_BODY,
        help="refuse request bodies larger than this with 413 (default: 10M)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        type=_host,
        default=[],
        metavar="NAME",
        help="also answer requests whose Host header is NAME (repeatable; '*' answers any). "
        "Only localhost, 127.0.0.1, [::1] and the --host address are answered otherwise, "
        "against DNS rebinding",
    )
    p.add_argument(
        "--max-compare-chars",
        type=_count,
        metavar="N",
        default=DEFAULT_MAX_COMPARE_CHARS,
        help="refuse /v1/compare texts longer than N characters with 422 (default: %(default)s)",
    )
    p.add_argument(
        "--max-compare-cells",
        type=_count,
        metavar="N",
        default=DEFAULT_MAX_COMPARE_CELLS,
        help="refuse /v1/compare pairs whose lengths after normalization multiply to more "
        "than N with 422: mcc and contiguity cost len(a) x len(b) (default: %(default)s)",
    )
    p.add_argument(
        "--max-concurrent-compare",
        type=_count,
        metavar="N",
        default=DEFAULT_MAX_CONCURRENT_COMPARE,
        help="run at most N comparisons at once, answer more with 429 (default: %(default)s)",
    )
    p.add_argument(
        "--queue-timeout",
        type=_seconds,
        metavar="SECONDS",
        default=DEFAULT_QUEUE_TIMEOUT,
        help="answer 503 to a request that waited this long for its turn at the store "
        "(default: %(default)g)",
    )
    p.add_argument(
        "--max-queue",
        type=_count,
        metavar="N",
        default=DEFAULT_MAX_QUEUE,
        help="answer 503 at once to a request that would wait behind N others for the store "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--health-timeout",
        type=_seconds,
        metavar="SECONDS",
        default=DEFAULT_HEALTH_TIMEOUT,
        help="how long /healthz (503 after it) and /metrics wait for the store "
        "(default: %(default)g)",
    )
    p.add_argument(
        "--workers",
        type=_count,
        metavar="N",
        help="serve in N processes sharing the port and the store, deciding atomically "
        "across them (default: the CPUs this process may use, a container's CPU quota "
        "included, as many as half its memory holds at 256 MiB each: "
        f"{default_workers()} here; 1 for memory://, which "
        "one process alone can hold). Limits such as --max-queue and "
        "--max-concurrent-compare hold in each process",
    )
    p.add_argument(
        "--access-log",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="log every request on standard error (default: on)",
    )
    p.set_defaults(func=run)
    return p


def default_workers() -> int:
    """The workers ``neardup serve`` starts on a shared store without ``--workers``: one a
    CPU the process may use (:func:`~neardup.machine.machine_cpus`), and no more than half
    the memory it may use holds at :data:`~neardup.machine.WORKER_MEMORY` each (a 64-core
    host without a memory limit would otherwise start 64 processes of some 200 MiB); at
    least 1."""
    cpus = machine_cpus()
    held = workers_memory_holds()
    return cpus if held is None else min(cpus, held)  # (memory not known: the CPUs decide)


def workers_for(url: str, asked: int | None) -> int:
    """How many worker processes serve ``url``: ``asked`` (no more than half the memory the
    process may use holds: :func:`~neardup.machine.workers_memory_holds`, with a
    :class:`~neardup.errors.WorkersCapped` warning), or :func:`default_workers` for a store
    that processes can share and 1 for ``memory://``; a ConfigError for several on
    memory://.

    >>> workers_for("memory://", None), workers_for("sqlite:///crawl.db", 3)
    (1, 3)
    """
    shared = urlsplit(url).scheme.lower() != "memory"
    if asked is None:
        return default_workers() if shared else 1
    if asked > 1 and not shared:
        raise ConfigError(
            f"--workers {asked} needs a store the workers can share: a memory:// store lives "
            "in one process. Use --db crawl.db or --store redis://..., or --workers 1"
        )
    return workers_within_memory(asked, f"--workers {asked}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only loopback addresses (127.0.0.0/8, ::1, localhost).

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    name = host.strip("[]")
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(f[4][0]).is_loopback for f in found)


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (the port the system picks for 0)."""
    try:
        infos = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except OSError as e:
        raise ConfigError(f"cannot listen on {host}: {e.strerror or e}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    return sock


def run(args: argparse.Namespace) -> int:
    """Start the service; returns when it is stopped (Ctrl-C or SIGTERM)."""
    from ..store import opening_failure, redacted  # the one redaction of store URLs

    api_key = args.api_key if args.api_key is not None else os.environ.get("NEARDUP_API_KEY")
    api_key = api_key or None
    if api_key is None and not is_loopback(args.host):
        raise ConfigError(
            f"refusing to listen on {args.host} without an API key: anyone who can reach it "
            "could add and delete documents. Set NEARDUP_API_KEY (or --api-key), or listen "
            "on 127.0.0.1"
        )
    if api_key is not None and len(api_key) < MIN_PUBLIC_KEY and not is_loopback(args.host):
        raise ConfigError(
            f"the API key has {len(api_key)} characters; on {args.host}, which others can "
            f"reach, use one of at least {MIN_PUBLIC_KEY} (such as the output of python3 -c "
            "'import secrets; print(secrets.token_urlsafe(24))')"
        )
    url = store_url(args) or "memory://"
    workers = workers_for(url, args.workers)
    try:
        import uvicorn

        from .app import create_app
    except ImportError as e:
        raise MissingDependencyError(
            f"neardup serve needs {e.name or 'fastapi and uvicorn'}: pip install 'neardup[service]'"
        ) from e
    options: dict[str, Any] = {
        "store": url,
        "window": args.window,
        "api_key": api_key,
        "max_body": args.max_body,
        "allowed_hosts": [args.host, *args.allowed_host],
        "health_timeout": args.health_timeout,
        "queue_timeout": args.queue_timeout,
        "max_queue": args.max_queue,
        "max_compare_chars": args.max_compare_chars,
        "max_compare_cells": args.max_compare_cells,
        "max_concurrent_compare": args.max_concurrent_compare,
    }
    server = {
        "log_level": "info",
        "access_log": args.access_log,
        "lifespan": "on",
        "timeout_graceful_shutdown": 10,
    }
    sock = _listen(args.host, args.port)
    try:
        try:
            if workers == 1:
                app = create_app(**options)
            else:  # each worker opens its own; open it here once for the errors of one line
                from ..deduper import Deduper

                Deduper(store=url, window=args.window).close()
        except ConfigError:
            raise
        except Exception as e:  # a store that cannot be reached: one line, not a traceback
            raise ConfigError(opening_failure(url, e)) from None
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        keyed = "writes need the API key" if api_key else "no API key"
        where = "memory (forgotten when it stops)" if url == "memory://" else redacted(url)
        many = f"{workers} workers and a decider; " if workers > 1 else ""
        print(
            f"neardup serve: http://{shown}:{port}/ (store: {where}; {keyed}; {many}Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )
        if workers > 1:
            from ._workers import serve_workers

            sock.listen(_BACKLOG)  # connections wait here until a worker takes them
            return serve_workers(workers, options, server, sock)
        # the application's lifespan closes the store when the server stops
        uvicorn.Server(uvicorn.Config(app, **server)).run(sockets=[sock])
    finally:
        sock.close()
    return 0
