"""The ASGI application: the Deduper and its store behind JSON endpoints, and the page.

>>> from neardup.service import create_app
>>> app = create_app()                      # a memory store; see create_app for the options
>>> sorted(p for p in app.openapi()["paths"] if p.startswith("/v1/documents"))
['/v1/documents', '/v1/documents/{doc_id}', '/v1/documents:batch']
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from fastapi import FastAPI

from .. import __version__
from ..deduper import Deduper
from ..engine.warm import load_kernels
from ._errors import ERRORS, install_error_handlers
from ._middleware import BodyLimit, HostCheck, Measure, SecurityHeaders
from ._routes import add_routes
from ._service import Service
from ._settings import (
    DEFAULT_HEALTH_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_COMPARE_CELLS,
    DEFAULT_MAX_COMPARE_CHARS,
    DEFAULT_MAX_CONCURRENT_COMPARE,
    DEFAULT_MAX_QUEUE,
    DEFAULT_QUEUE_TIMEOUT,
    Settings,
)

__all__ = ["DEFAULT_MAX_BODY", "Service", "Settings", "create_app"]

_DESCRIPTION = """\
Near-duplicate detection for crawlers in any language: check a document against everything
added before, add it atomically (one copy of each story is kept, even when several crawlers
send copies at once), compare two texts by every measure, and browse the clusters.

Writes and deletes need `Authorization: Bearer <key>` when the service was started with a key
(`--api-key` or `NEARDUP_API_KEY`). Every error is a JSON object with `error`, `message` and,
for a 422, the `field` at fault. The page at `/` compares texts and shows the clusters.

The service answers only requests whose `Host` names it (`localhost`, `127.0.0.1`, `[::1]`,
the address it listens on, or a name it was started with): others get 400 `bad_host`, so a
web page cannot reach it through DNS rebinding. `/v1/compare` takes bounded texts and runs a
few comparisons at once (429 `busy` with `Retry-After` beyond). A request waits only so long
for the store (503 `busy`); `/healthz` answers within a second, 503 when the store does not."""


def create_app(
    deduper: Deduper | None = None,
    *,
    store: str = "memory://",
    window: str | float | None = None,
    api_key: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    allowed_hosts: Iterable[str] = (),
    health_timeout: float = DEFAULT_HEALTH_TIMEOUT,
    queue_timeout: float = DEFAULT_QUEUE_TIMEOUT,
    max_queue: int = DEFAULT_MAX_QUEUE,
    max_compare_chars: int = DEFAULT_MAX_COMPARE_CHARS,
    max_compare_cells: int = DEFAULT_MAX_COMPARE_CELLS,
    max_concurrent_compare: int = DEFAULT_MAX_CONCURRENT_COMPARE,
    decider: str | None = None,
) -> FastAPI:
    """The service as an ASGI application.

    ``deduper`` is used as it is (and left open); otherwise one is opened on ``store`` with
    ``window`` and closed when the application shuts down. With ``api_key``, the endpoints
    that add or delete need ``Authorization: Bearer <api_key>``. Bodies over ``max_body``
    bytes are refused with 413.

    Requests are answered only when their Host header names ``localhost``, ``127.0.0.1``,
    ``[::1]`` or one of ``allowed_hosts`` (with or without a port), against DNS rebinding;
    ``"*"`` allows any, and a wildcard address (``"0.0.0.0"``, ``"::"``) any IP address.
    Others get 400. Put here the names clients use to reach the service, e.g.
    ``allowed_hosts=["dedup.internal"]`` behind a proxy that keeps the Host.

    The Deduper serves one request at a time; a request waits for its turn at most
    ``queue_timeout`` seconds, behind at most ``max_queue`` others, else it is answered 503
    with Retry-After. ``/healthz`` and ``/metrics`` never wait for the Deduper: they read the
    store on their own threads and wait ``health_timeout`` seconds for it (``/healthz`` then
    answers 503, ``/metrics`` leaves out the store's counts).

    ``/v1/compare`` takes texts of up to ``max_compare_chars`` characters each, whose
    lengths after normalization multiply to at most ``max_compare_cells`` (the work of mcc
    and contiguity), else 422; it runs at most ``max_concurrent_compare`` comparisons at
    once, else 429 with Retry-After.

    ``decider``: the Unix socket of the process that decides the documents to add or check
    (``neardup serve --workers N`` starts one for its workers:
    :mod:`~neardup.service._decider`); without it, this application decides them itself.
    """
    settings = Settings(
        api_key=api_key or None,
        max_body=max_body,
        allowed_hosts=(allowed_hosts,) if isinstance(allowed_hosts, str) else tuple(allowed_hosts),
        health_timeout=health_timeout,
        queue_timeout=queue_timeout,
        max_queue=max_queue,
        max_compare_chars=max_compare_chars,
        max_compare_cells=max_compare_cells,
        max_concurrent_compare=max_concurrent_compare,
    )
    owned = deduper is None
    dd = deduper if deduper is not None else Deduper(store=store, window=window)
    service = Service(dd, settings, owned=owned, decider=decider)
    app = _application(service)
    add_routes(app, service)
    return app


def _application(service: Service) -> FastAPI:
    """The FastAPI application around a service: its lifespan, errors and middleware."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # a service runs long: under NEARDUP_KERNELS=auto it loads the compiled kernels as it
        # starts, rather than in the request that crosses their threshold (a stall of ~1 s),
        # and readies the learned chrome rather than in its first document added (up to 0.6 s)
        load_kernels(service.deduper.config)
        service.warm()
        yield
        service.close()

    app = FastAPI(
        title="neardup",
        version=__version__,
        description=_DESCRIPTION,
        lifespan=lifespan,
        responses={413: ERRORS[413]},
    )
    app.state.service = service
    install_error_handlers(app)
    # the last added runs first: headers on every answer, count every request, then check
    # its Host, then its size (a 500 is answered outside these: its handler adds the headers)
    app.add_middleware(BodyLimit, limit=service.settings.max_body)
    app.add_middleware(HostCheck, allowed=service.settings.allowed_hosts)
    app.add_middleware(Measure, metrics=service.metrics)
    app.add_middleware(SecurityHeaders)
    return app
