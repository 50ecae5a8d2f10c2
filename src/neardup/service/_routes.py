"""The endpoints, in groups, each registered on the application by one function."""

from __future__ import annotations

import functools
import math
import secrets
from importlib.resources import files
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import Depends, FastAPI, Query
from fastapi.responses import PlainTextResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from . import _models as m
from . import _work as work
from ._errors import UNAUTHORIZED, ServiceError, errors
from ._service import Service

__all__ = ["add_routes"]


class _AnyText(Convertor[str]):
    """A path parameter of any characters, slashes and newlines included (Starlette's
    ``path`` stops at a newline): ids are any string, percent-encoded in the path."""

    regex = r"[\s\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("neardup_any", _AnyText())

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


class _Writes:
    """What the endpoints that add or delete declare: the key check and its 401."""

    def __init__(self, api_key: str | None) -> None:
        self.dependencies: list[Any] = []
        self.errors = errors(422, 503)
        if api_key is not None:
            self.dependencies = [Depends(_KeyCheck(api_key))]
            self.errors = {**UNAUTHORIZED, **self.errors}


def _store_kind(url: str) -> str:
    """The kind of a store URL, without its path, host or password."""
    scheme = urlsplit(url).scheme.lower()
    return {"rediss": "redis", "unix": "redis"}.get(scheme, scheme or "unknown")


def add_routes(app: FastAPI, service: Service) -> None:
    """Every endpoint of the service, in the order the OpenAPI document lists them."""
    writes = _Writes(service.api_key)
    _compare_routes(app, service)
    _document_routes(app, service, writes)
    _cluster_routes(app, service)
    _service_routes(app, service)
    _page_routes(app)


def _compare_routes(app: FastAPI, service: Service) -> None:
    settings = service.settings
    chars, cells = settings.max_compare_chars, settings.max_compare_cells

    @app.post(
        "/v1/compare",
        response_model=m.CompareOut,
        responses=errors(422, 429),
        tags=["compare"],
        summary="Every measure for two texts, and the passages they share",
        description=f"""\
Each text may have up to {chars:,} characters, and the two together, after normalization,
up to {cells:,} for len(a) × len(b) (two texts of {math.isqrt(cells):,} characters): mcc
and contiguity compare every offset, so their work grows with that product. Larger pairs are
refused with 422 before any work, rather than scored without those measures: every score
of the answer is always there. At most {settings.max_concurrent_compare} comparisons run at
once; more are answered 429 with Retry-After.""",
    )
    async def compare_texts(body: m.CompareIn) -> m.CompareOut:
        for name, text in (("a", body.a), ("b", body.b)):
            if len(text) > chars:
                raise ServiceError(
                    422,
                    "invalid",
                    f"{name}: {len(text):,} characters is over this service's limit of "
                    f"{chars:,} a text for /v1/compare; send a shorter text, or start the "
                    "service with a larger --max-compare-chars",
                    field=name,
                )
        async with service.comparing():
            return await run_in_threadpool(work.compare_texts, body, cells)


def _document_routes(app: FastAPI, service: Service, writes: _Writes) -> None:
    @app.post(
        "/v1/check",
        response_model=m.DecisionOut,
        responses=errors(422, 503),
        tags=["documents"],
        summary="Decide whether a document duplicates one already added, without adding it",
    )
    async def check(body: m.DocumentIn) -> dict[str, object]:
        [d] = await service.decide(work.check, [body.as_mapping()])
        return d.to_dict()

    @app.post(
        "/v1/documents",
        response_model=m.DecisionOut,
        responses=writes.errors,
        dependencies=writes.dependencies,
        tags=["documents"],
        summary="Decide and add a document (atomic; an id added before returns its decision)",
    )
    async def add(body: m.DocumentIn) -> dict[str, object]:
        [d] = await service.decide(work.add, [body.as_mapping()])
        service.metrics.decided(int(not d.is_duplicate), int(d.is_duplicate))
        return d.to_dict()

    @app.post(
        "/v1/documents:batch",
        response_model=m.BatchOut,
        responses=writes.errors,
        dependencies=writes.dependencies,
        tags=["documents"],
        summary=f"Decide and add up to {m.MAX_BATCH:,} documents in order, atomically",
    )
    async def add_batch(body: m.BatchIn) -> m.BatchOut:
        decisions = await service.decide(work.add, [d.as_mapping() for d in body.documents])
        dups = sum(d.is_duplicate for d in decisions)
        service.metrics.decided(len(decisions) - dups, dups)
        return m.BatchOut(
            decisions=[m.DecisionOut.model_validate(d.to_dict()) for d in decisions],
            kept=len(decisions) - dups,
            duplicates=dups,
        )

    @app.get(
        "/v1/documents/{doc_id:neardup_any}",
        response_model=m.DocumentOut,
        responses=errors(404, 503),
        tags=["documents"],
        summary="A document's decision, its stored text and its cluster's size",
    )
    async def get_document(doc_id: str) -> m.DocumentOut:
        found = await service.call(work.document, doc_id)
        if found is None:
            raise StarletteHTTPException(404, f"document {doc_id!r} has not been added")
        return found

    @app.delete(
        "/v1/documents/{doc_id:neardup_any}",
        response_model=m.Deleted,
        responses={**writes.errors, **errors(404)},
        dependencies=writes.dependencies,
        tags=["documents"],
        summary="Forget a document (documents that matched it keep their decisions)",
    )
    async def delete_document(doc_id: str) -> m.Deleted:
        if not await service.call(work.delete, doc_id):
            raise StarletteHTTPException(404, f"document {doc_id!r} has not been added")
        return m.Deleted(id=doc_id, deleted=True)


def _cluster_routes(app: FastAPI, service: Service) -> None:
    @app.get(
        "/v1/clusters",
        response_model=m.ClusterList,
        responses=errors(422, 503),
        tags=["clusters"],
        summary="Clusters, largest first",
    )
    async def clusters(
        limit: Annotated[int, Query(ge=1, le=1000, description="How many to return.")] = 50,
        offset: Annotated[int, Query(ge=0, le=1_000_000_000, description="How many to skip.")] = 0,
    ) -> m.ClusterList:
        found = await service.call(work.clusters, limit, offset)
        return m.ClusterList(clusters=found, limit=limit, offset=offset)

    @app.get(
        "/v1/clusters/{cluster_id:neardup_any}",
        response_model=m.ClusterOut,
        responses=errors(404, 422, 503),
        tags=["clusters"],
        summary="The members of a cluster, earliest first, with their scores and texts",
    )
    async def cluster(
        cluster_id: str,
        limit: Annotated[int, Query(ge=1, le=1000, description="How many members.")] = 100,
        offset: Annotated[int, Query(ge=0, le=1_000_000_000, description="Members to skip.")] = 0,
    ) -> m.ClusterOut:
        found = await service.call(work.cluster, cluster_id, limit, offset)
        if found is None:
            raise StarletteHTTPException(404, f"no cluster {cluster_id!r}")
        return found


def _service_routes(app: FastAPI, service: Service) -> None:
    @app.get(
        "/healthz",
        response_model=m.Health,
        responses=errors(503),
        tags=["service"],
        summary="Whether the service is up and its store reachable",
    )
    async def healthz() -> m.Health:
        await service.health()
        kind = _store_kind(service.deduper.store.url)
        return m.Health(status="ok", version=__version__, store=kind)

    @app.get(
        "/metrics",
        response_class=PlainTextResponse,
        tags=["service"],
        summary="Requests, latency and decisions in the Prometheus text format",
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def metrics() -> PlainTextResponse:
        stats = await service.stats()  # nothing when the store does not answer at once
        return PlainTextResponse(
            service.metrics.render(stats), media_type="text/plain; version=0.0.4"
        )


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


def _page_routes(app: FastAPI) -> None:
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
