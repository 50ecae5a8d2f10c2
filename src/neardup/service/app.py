"""The ASGI application: the Deduper and its store behind JSON endpoints, and the page.

>>> from neardup.service import create_app
>>> app = create_app()                      # a memory store; see create_app for the options
>>> sorted(p for p in app.openapi()["paths"] if p.startswith("/v1/documents"))
['/v1/documents', '/v1/documents/{doc_id}', '/v1/documents:batch']
"""

from __future__ import annotations

import functools
import logging
import secrets
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from importlib.resources import files
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..compare import compare
from ..deduper import Decision, Deduper
from ..errors import InputError, NeardupError
from ..measures._base import DEFAULT_PROCESSOR
from ..passages import shared_passages
from . import _models as m
from ._metrics import Metrics
from ._middleware import BodyLimit, Measure

__all__ = ["DEFAULT_MAX_BODY", "Service", "create_app"]

log = logging.getLogger("neardup.service")

#: The largest request body accepted by default: 10 MB.
DEFAULT_MAX_BODY = 10 * 1024 * 1024

T = TypeVar("T")

_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": m.ErrorOut, "description": "No such document or cluster."},
    413: {"model": m.ErrorOut, "description": "The body is larger than the service accepts."},
    422: {"model": m.ErrorOut, "description": "Malformed JSON, or a field is wrong or missing."},
    503: {"model": m.ErrorOut, "description": "The store cannot be reached."},
}
_UNAUTHORIZED: dict[int | str, dict[str, Any]] = {
    401: {
        "model": m.ErrorOut,
        "description": "The Authorization: Bearer key is missing or wrong.",
    }
}


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {c: _ERRORS[c] for c in codes}


def _error(
    status: int,
    code: str,
    message: str,
    field: str | None = None,
    problems: Sequence[m.FieldProblem] = (),
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = m.ErrorOut(error=code, message=message, field=field, problems=list(problems))
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


def _store_kind(url: str) -> str:
    """The kind of a store URL, without its path, host or password."""
    scheme = urlsplit(url).scheme.lower()
    return {"rediss": "redis", "unix": "redis"}.get(scheme, scheme or "unknown")


class Service:
    """The state behind the endpoints: one Deduper, used by one thread at a time."""

    def __init__(self, deduper: Deduper, *, api_key: str | None, owned: bool) -> None:
        self.deduper = deduper
        self.api_key = api_key
        self.owned = owned
        self.metrics = Metrics()
        self._lock = threading.Lock()

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(deduper, *args)`` on a worker thread, one call at a time (a Deduper is
        not safe to share between threads), so the event loop keeps serving."""
        return await run_in_threadpool(self._locked, functools.partial(fn, self.deduper, *args))

    def _locked(self, fn: Callable[[], T]) -> T:
        with self._lock:
            return fn()

    def close(self) -> None:
        """Close the store when the service opened it."""
        if self.owned:
            with self._lock:
                self.deduper.close()


# -- the work each endpoint hands to the Deduper's thread -----------------------------------


def _add(dd: Deduper, docs: list[dict[str, object]]) -> list[Decision]:
    return dd.check_and_add_many(docs)


def _check(dd: Deduper, doc: dict[str, object]) -> Decision:
    return dd.check_many([doc])[0]


def _document(dd: Deduper, doc_id: str) -> m.DocumentOut | None:
    entry = dd.entry(doc_id)
    if entry is None:
        return None
    try:
        decision = dd.decision(doc_id)
    except KeyError:  # deleted in between
        return None
    size = len(dd.store.members(entry.cluster))
    return m.DocumentOut(
        id=decision.id,
        is_duplicate=decision.is_duplicate,
        duplicate_of=decision.duplicate_of,
        cluster=decision.cluster,
        score=round(decision.score, 4),
        measure=decision.measure,
        evidence=[p.text for p in decision.evidence],
        title=entry.title,
        timestamp=entry.timestamp,
        text=dd.stored_text(doc_id),
        cluster_size=size,
    )


def _delete(dd: Deduper, doc_id: str) -> bool:
    return dd.remove(doc_id)


def _texts(dd: Deduper, ids: list[str]) -> dict[str, str]:
    """The stored (compared) texts of these documents, by id."""
    entries = dd.store.entries(ids)
    source = {i: (e.copy_of or i) for i, e in entries.items()}
    sketches = dd.store.sketches(set(source.values()))
    return {i: sketches[s].text for i, s in source.items() if s in sketches}


def _excerpt(text: str | None, limit: int = 160) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _clusters(dd: Deduper, limit: int, offset: int) -> list[m.ClusterSummary]:
    found = dd.clusters(limit, offset)
    labels = [label for label, _ in found]
    entries = dd.store.entries(labels)
    texts = _texts(dd, labels)
    return [
        m.ClusterSummary(
            id=label,
            size=size,
            title=entries[label].title if label in entries else None,
            excerpt=_excerpt(texts.get(label)),
        )
        for label, size in found
    ]


def _cluster(dd: Deduper, label: str, limit: int, offset: int) -> m.ClusterOut | None:
    members = dd.store.members(label)
    if not members:
        return None
    page = members[offset : offset + limit]
    texts = _texts(dd, [label, *(e.id for e in page)])
    kept = texts.get(label)
    out = []
    for e in page:
        text = texts.get(e.id)
        shared: list[m.Span] = []
        if text is not None and kept is not None and e.id != label:
            shared = [
                m.Span(start=p.a_start, length=p.length)
                for p in shared_passages(text, kept, min_len=6, limit=50)
            ]
        out.append(
            m.Member(
                id=e.id,
                is_duplicate=not e.kept,
                duplicate_of=e.duplicate_of,
                score=round(e.score, 4),
                measure=e.measure,
                title=e.title,
                timestamp=e.timestamp,
                text=text,
                shared=shared,
            )
        )
    return m.ClusterOut(id=label, size=len(members), members=out, limit=limit, offset=offset)


def _healthy(dd: Deduper) -> None:
    dd.entry("\x00neardup-health")  # one read from the store


def _stats(dd: Deduper) -> dict[str, object]:
    return dd.stats()


def _compare(body: m.CompareIn) -> m.CompareOut:
    c = compare(body.a, body.b, processor=None if body.raw else DEFAULT_PROCESSOR)
    return m.CompareOut(
        scores=m.Scores(**c.scores),
        passages=[
            m.Passage(text=p.text, a_start=p.a_start, b_start=p.b_start, length=p.length)
            for p in c.passages
        ],
        a=c.a,
        b=c.b,
    )


# -- turning what goes wrong into JSON --------------------------------------------------------


def _field(loc: Sequence[object]) -> str:
    """``("body", "documents", 3, "text")`` -> ``documents[3].text``."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out or "body"


def _problem(err: dict[str, Any]) -> m.FieldProblem:
    field = _field(err.get("loc", ()))
    kind = err.get("type", "")
    if kind == "json_invalid":
        detail = err.get("ctx", {}).get("error", "not valid JSON")
        return m.FieldProblem(field="body", message=f"the body is not valid JSON: {detail}")
    if field == "body" and isinstance(err.get("input"), bytes | bytearray):
        return m.FieldProblem(
            field="body",
            message="the body must be a JSON object sent with Content-Type: application/json",
        )
    if kind == "missing" and field == "body":
        return m.FieldProblem(field="body", message="a JSON object is required as the body")
    message = str(err.get("msg", "is not valid"))
    message = message.removeprefix("Value error, ")
    return m.FieldProblem(field=field, message=f"{field}: {message}")


def _install_error_handlers(app: FastAPI) -> None:
    async def invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = [_problem(e) for e in exc.errors()]
        first = problems[0] if problems else m.FieldProblem(field="body", message="invalid")
        extra = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return _error(422, "invalid", first.message + extra, first.field, problems)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        codes = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}
        code = codes.get(exc.status_code, "error")
        message = str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.url.path} (see /docs)"
        if exc.status_code == 400 and message == "There was an error parsing the body":
            # FastAPI's answer to a body that is not UTF-8: a malformed body like any other
            return _error(422, "invalid", "the body is not valid JSON: it must be UTF-8", "body")
        headers = dict(exc.headers) if exc.headers else None
        if exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
            # Starlette names the methods of the first route only; list every route's
            headers = {**(headers or {}), "Allow": ", ".join(_allowed(request))}
        return _error(exc.status_code, code, message, headers=headers)

    async def neardup_error(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, InputError):
            return _error(422, "invalid", str(exc))
        if _unreachable(exc) or _unreachable(exc.__cause__):
            return await unavailable(request, exc)
        return await internal(request, exc)

    async def unavailable(request: Request, exc: Exception) -> JSONResponse:
        log.error("store error on %s %s: %s", request.method, request.url.path, exc)
        return _error(
            503, "unavailable", "the store cannot be reached now; the server's log has the details"
        )

    async def internal(request: Request, exc: Exception) -> JSONResponse:
        # the traceback goes to the server's log, never to the client
        log.error("error on %s %s", request.method, request.url.path, exc_info=exc)
        return _error(500, "internal", "internal error; the server's log has the details")

    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(NeardupError, neardup_error)
    app.add_exception_handler(sqlite3.OperationalError, unavailable)
    for kind in _redis_unreachable():
        app.add_exception_handler(kind, unavailable)
    app.add_exception_handler(Exception, internal)


def _allowed(request: Request) -> list[str]:
    """The methods the routes matching this request's path take."""
    methods: set[str] = set()
    for route in request.app.routes:
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(request.url.path):
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


def _redis_unreachable() -> tuple[type[Exception], ...]:
    try:
        import redis
    except ImportError:  # the redis extra is not installed
        return ()
    return (redis.ConnectionError, redis.TimeoutError)


def _unreachable(exc: BaseException | None) -> bool:
    """Whether an error means the store cannot be reached (rather than a bug)."""
    return isinstance(exc, (sqlite3.OperationalError, OSError, *_redis_unreachable()))


_BEARER = HTTPBearer(
    auto_error=False,
    description="The key the service was started with (--api-key or NEARDUP_API_KEY).",
)


class _KeyCheck:
    """The dependency of the endpoints that add or delete: the right Bearer key."""

    def __init__(self, key: str) -> None:
        self.key = key.encode()

    async def __call__(
        self, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]
    ) -> None:
        if creds is None:
            message = (
                "this endpoint needs the header Authorization: Bearer <key>, with the key the "
                "service was started with"
            )
        elif not secrets.compare_digest(creds.credentials.encode(), self.key):
            message = "the key in Authorization: Bearer is wrong"
        else:
            return
        raise StarletteHTTPException(401, message, headers={"WWW-Authenticate": "Bearer"})


# -- the page ---------------------------------------------------------------------------------

_STATIC = {"page.js": "text/javascript", "page.css": "text/css"}
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@functools.cache
def _static(name: str) -> bytes:
    return files("neardup.service").joinpath("static", name).read_bytes()


# -- the application --------------------------------------------------------------------------

_DESCRIPTION = """\
Near-duplicate detection for crawlers in any language: check a document against everything
added before, add it atomically (one copy of each story is kept, even when several crawlers
send copies at once), compare two texts by every measure, and browse the clusters.

Writes and deletes need `Authorization: Bearer <key>` when the service was started with a key
(`--api-key` or `NEARDUP_API_KEY`). Every error is a JSON object with `error`, `message` and,
for a 422, the `field` at fault. The page at `/` compares texts and shows the clusters."""


def create_app(
    deduper: Deduper | None = None,
    *,
    store: str = "memory://",
    window: str | float | None = None,
    api_key: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> FastAPI:
    """The service as an ASGI application.

    ``deduper`` is used as it is (and left open); otherwise one is opened on ``store`` with
    ``window`` and closed when the application shuts down. With ``api_key``, the endpoints
    that add or delete need ``Authorization: Bearer <api_key>``. Bodies over ``max_body``
    bytes are refused with 413.
    """
    if max_body < 1:
        raise ValueError(f"max_body must be at least 1 byte, got {max_body}")
    owned = deduper is None
    dd = deduper if deduper is not None else Deduper(store=store, window=window)
    service = Service(dd, api_key=api_key or None, owned=owned)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        service.close()

    app = FastAPI(
        title="neardup",
        version=__version__,
        description=_DESCRIPTION,
        lifespan=lifespan,
        responses={413: _ERRORS[413]},
    )
    app.state.service = service
    _install_error_handlers(app)
    app.add_middleware(BodyLimit, limit=max_body)
    app.add_middleware(Measure, metrics=service.metrics)

    write_deps: list[Any] = []
    write_errors = _errors(422, 503)
    if service.api_key is not None:
        write_deps = [Depends(_KeyCheck(service.api_key))]
        write_errors = {**_UNAUTHORIZED, **write_errors}

    @app.post(
        "/v1/compare",
        response_model=m.CompareOut,
        responses=_errors(422),
        tags=["compare"],
        summary="Every measure for two texts, and the passages they share",
    )
    async def compare_texts(body: m.CompareIn) -> m.CompareOut:
        return await run_in_threadpool(_compare, body)

    @app.post(
        "/v1/check",
        response_model=m.DecisionOut,
        responses=_errors(422, 503),
        tags=["documents"],
        summary="Decide whether a document duplicates one already added, without adding it",
    )
    async def check(body: m.DocumentIn) -> dict[str, object]:
        d = await service.call(_check, body.as_mapping())
        return d.to_dict()

    @app.post(
        "/v1/documents",
        response_model=m.DecisionOut,
        responses=write_errors,
        dependencies=write_deps,
        tags=["documents"],
        summary="Decide and add a document (atomic; an id added before returns its decision)",
    )
    async def add(body: m.DocumentIn) -> dict[str, object]:
        [d] = await service.call(_add, [body.as_mapping()])
        service.metrics.decided(int(not d.is_duplicate), int(d.is_duplicate))
        return d.to_dict()

    @app.post(
        "/v1/documents:batch",
        response_model=m.BatchOut,
        responses=write_errors,
        dependencies=write_deps,
        tags=["documents"],
        summary=f"Decide and add up to {m.MAX_BATCH:,} documents in order, atomically",
    )
    async def add_batch(body: m.BatchIn) -> m.BatchOut:
        decisions = await service.call(_add, [d.as_mapping() for d in body.documents])
        dups = sum(d.is_duplicate for d in decisions)
        service.metrics.decided(len(decisions) - dups, dups)
        return m.BatchOut(
            decisions=[m.DecisionOut.model_validate(d.to_dict()) for d in decisions],
            kept=len(decisions) - dups,
            duplicates=dups,
        )

    @app.get(
        "/v1/documents/{doc_id:path}",
        response_model=m.DocumentOut,
        responses=_errors(404, 503),
        tags=["documents"],
        summary="A document's decision, its stored text and its cluster's size",
    )
    async def get_document(doc_id: str) -> m.DocumentOut:
        found = await service.call(_document, doc_id)
        if found is None:
            raise StarletteHTTPException(404, f"document {doc_id!r} has not been added")
        return found

    @app.delete(
        "/v1/documents/{doc_id:path}",
        response_model=m.Deleted,
        responses={**write_errors, **_errors(404)},
        dependencies=write_deps,
        tags=["documents"],
        summary="Forget a document (documents that matched it keep their decisions)",
    )
    async def delete_document(doc_id: str) -> m.Deleted:
        if not await service.call(_delete, doc_id):
            raise StarletteHTTPException(404, f"document {doc_id!r} has not been added")
        return m.Deleted(id=doc_id, deleted=True)

    @app.get(
        "/v1/clusters",
        response_model=m.ClusterList,
        responses=_errors(422, 503),
        tags=["clusters"],
        summary="Clusters, largest first",
    )
    async def clusters(
        limit: Annotated[int, Query(ge=1, le=1000, description="How many to return.")] = 50,
        offset: Annotated[int, Query(ge=0, le=1_000_000_000, description="How many to skip.")] = 0,
    ) -> m.ClusterList:
        found = await service.call(_clusters, limit, offset)
        return m.ClusterList(clusters=found, limit=limit, offset=offset)

    @app.get(
        "/v1/clusters/{cluster_id:path}",
        response_model=m.ClusterOut,
        responses=_errors(404, 422, 503),
        tags=["clusters"],
        summary="The members of a cluster, earliest first, with their scores and texts",
    )
    async def cluster(
        cluster_id: str,
        limit: Annotated[int, Query(ge=1, le=1000, description="How many members.")] = 100,
        offset: Annotated[int, Query(ge=0, le=1_000_000_000, description="Members to skip.")] = 0,
    ) -> m.ClusterOut:
        found = await service.call(_cluster, cluster_id, limit, offset)
        if found is None:
            raise StarletteHTTPException(404, f"no cluster {cluster_id!r}")
        return found

    @app.get(
        "/healthz",
        response_model=m.Health,
        responses=_errors(503),
        tags=["service"],
        summary="Whether the service is up and its store reachable",
    )
    async def healthz() -> m.Health:
        await service.call(_healthy)
        return m.Health(status="ok", version=__version__, store=_store_kind(dd.store.url))

    @app.get(
        "/metrics",
        response_class=PlainTextResponse,
        tags=["service"],
        summary="Requests, latency and decisions in the Prometheus text format",
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def metrics() -> PlainTextResponse:
        try:
            stats = await service.call(_stats)
        except Exception:  # the counters are still worth serving when the store is down
            stats = {}
        return PlainTextResponse(
            service.metrics.render(stats), media_type="text/plain; version=0.0.4"
        )

    @app.get("/", include_in_schema=False)
    async def page() -> Response:
        return Response(_static("index.html"), media_type="text/html", headers=_PAGE_HEADERS)

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        if name not in _STATIC:
            raise StarletteHTTPException(404, f"no such file: {name}")
        return Response(
            _static(name), media_type=_STATIC[name], headers={"Cache-Control": "no-cache"}
        )

    return app
