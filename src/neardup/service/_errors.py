"""Everything the service answers when something goes wrong, as one JSON shape
(:class:`~neardup.service._models.ErrorOut`): the documented error responses, the exception
handlers, and which store failures are a 503 rather than a bug."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..engine.compact import DamagedGuard
from ..errors import InputError, NeardupError
from ..store import StoreLost
from . import _models as m
from ._middleware import SECURITY_HEADERS

__all__ = [
    "ERRORS",
    "UNAUTHORIZED",
    "ServiceError",
    "StoreDamaged",
    "busy",
    "error_response",
    "errors",
    "install_error_handlers",
    "store_failure",
]

log = logging.getLogger("neardup.service")

#: The error responses the OpenAPI document lists, by status.
ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": m.ErrorOut, "description": "No such document or cluster."},
    413: {"model": m.ErrorOut, "description": "The body is larger than the service accepts."},
    422: {"model": m.ErrorOut, "description": "Malformed JSON, or a field is wrong or missing."},
    429: {
        "model": m.ErrorOut,
        "description": "As many comparisons are running as the service runs at once: try "
        "again after the Retry-After seconds.",
    },
    503: {
        "model": m.ErrorOut,
        "description": "The store cannot be reached or did not answer in time (unavailable), "
        "its file is damaged (damaged), or too many requests wait for it (busy); Retry-After "
        "says when to try again, where trying again may help.",
    },
}
UNAUTHORIZED: dict[int | str, dict[str, Any]] = {
    401: {
        "model": m.ErrorOut,
        "description": "The Authorization: Bearer key is missing or wrong.",
    }
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The documented error responses of these statuses."""
    return {c: ERRORS[c] for c in codes}


def error_response(
    status: int,
    code: str,
    message: str,
    field: str | None = None,
    problems: Sequence[m.FieldProblem] = (),
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The service's JSON error."""
    body = m.ErrorOut(error=code, message=message, field=field, problems=list(problems))
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


class ServiceError(Exception):
    """An answer other than the endpoint's own, raised from anywhere in it: a status, the
    error's code and its one-line message (and headers, such as Retry-After)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers

    def response(self) -> JSONResponse:
        """The JSON error."""
        return error_response(
            self.status, self.code, self.message, self.field, headers=self.headers
        )


class StoreDamaged(ServiceError):
    """The 503 of a store whose file (or saved chrome table) is damaged: it will not mend
    by itself."""

    def __init__(self, detail: str, what: str = "SQLite file") -> None:
        detail = " ".join(detail.split())
        if len(detail) > 200:
            detail = detail[:200] + "…"
        super().__init__(
            503,
            "damaged",
            f"the store's {what} is damaged ({detail}): restore it from a backup, or "
            "rebuild it by adding the documents again to a new store, then restart the "
            "service; the server's log has the file's path",
        )

    @classmethod
    def saying(cls, message: str) -> StoreDamaged:
        """A StoreDamaged with a message of its own (a store gone other than by damage)."""
        damaged = cls.__new__(cls)
        ServiceError.__init__(damaged, 503, "damaged", message)
        return damaged


def busy(status: int, message: str, retry_after: int = 1) -> ServiceError:
    """Too much at once: 429 (this client's kind of work) or 503 (the store), with
    Retry-After."""
    return ServiceError(status, "busy", message, headers={"Retry-After": str(retry_after)})


# -- request validation -----------------------------------------------------------------------


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


# -- which failures are the store's -----------------------------------------------------------


def _redis_unreachable() -> tuple[type[Exception], ...]:
    try:
        import redis
    except ImportError:  # the redis extra is not installed
        return ()
    return (redis.ConnectionError, redis.TimeoutError)


def _unreachable(exc: BaseException | None) -> bool:
    """Whether an error means the store cannot be reached (rather than a bug)."""
    return isinstance(exc, (sqlite3.OperationalError, OSError, *_redis_unreachable()))


def _chain(exc: BaseException) -> list[BaseException]:
    """An exception and those it was raised from or during, nearest first."""
    seen: list[BaseException] = []
    at: BaseException | None = exc
    while at is not None and len(seen) < 8 and all(at is not s for s in seen):
        seen.append(at)
        at = at.__cause__ or at.__context__
    return seen


_DAMAGE = ("malformed", "not a database", "file is encrypted")


def _damaged(exc: BaseException) -> bool:
    """Whether an error says a SQLite file is damaged (SQLITE_CORRUPT, SQLITE_NOTADB)."""
    if not isinstance(exc, sqlite3.DatabaseError | NeardupError):
        return False
    if isinstance(exc, sqlite3.DatabaseError):
        name = str(getattr(exc, "sqlite_errorname", ""))
        if name.startswith("SQLITE_CORRUPT") or name == "SQLITE_NOTADB":
            return True
        if type(exc) is sqlite3.DatabaseError:  # what SQLite's corruption codes map to
            return True
    return any(words in str(exc) for words in _DAMAGE)


def store_failure(exc: BaseException) -> ServiceError | None:
    """The 503 for an error a call to the store raised, or None when it is no store failure
    (a wrong input, or a bug: the 422 or 500 handlers answer those).

    A store failure is a damaged SQLite file or saved chrome table (:class:`StoreDamaged`;
    :class:`~neardup.engine.compact.DamagedGuard`), a SQLite or Redis
    error that says the store cannot be used now (locked, unreachable, timed out), an
    OSError, or a NeardupError other than an InputError
    (:class:`~neardup.errors.StoreError` included), raised itself or as the cause."""
    if isinstance(exc, ServiceError):  # answered already (the decider of serve --workers)
        return exc
    chain = _chain(exc)
    if isinstance(exc, InputError):
        return None
    lost = [e for e in chain if isinstance(e, StoreLost)]
    if lost:  # what the service knew of the store will not come back by itself
        return StoreDamaged.saying(
            f"the store's {lost[0].what} {lost[0].reason} while the service used it: restart "
            "the service to go on with the store as it is now; the server's log has the "
            "details"
        )
    guard = [e for e in chain if isinstance(e, DamagedGuard)]
    if guard:  # the learned chrome's saved table: it will not mend by itself either
        return StoreDamaged(guard[0].reason, "saved chrome table")
    if any(_damaged(e) for e in chain):
        # SQLite's own words, without the file's path that the store's errors add
        sqlite = [e for e in chain if isinstance(e, sqlite3.DatabaseError)]
        detail = str(sqlite[0]) if sqlite else str(exc).rsplit(": ", 1)[-1]
        return StoreDamaged(detail)
    if any(_unreachable(e) for e in chain) or isinstance(exc, NeardupError):
        return ServiceError(
            503,
            "unavailable",
            "the store cannot be reached now; the server's log has the details",
            headers={"Retry-After": "5"},
        )
    return None


def _allowed(request: Request) -> list[str]:
    """The methods the routes matching this request's path take."""
    methods: set[str] = set()
    for route in request.app.routes:
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(request.url.path):
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


# -- the handlers -----------------------------------------------------------------------------


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = [_problem(e) for e in exc.errors()]
    first = problems[0] if problems else m.FieldProblem(field="body", message="invalid")
    extra = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return error_response(422, "invalid", first.message + extra, first.field, problems)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    codes = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}
    code = codes.get(exc.status_code, "error")
    message = str(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        message = f"no such endpoint: {request.url.path} (see /docs)"
    if exc.status_code == 400 and message == "There was an error parsing the body":
        # FastAPI's answer to a body it could not read: a malformed body like any other
        if isinstance(exc.__cause__, RecursionError):
            message = (
                "the body's JSON is nested too deeply to read (arrays or objects hundreds of "
                "levels within one another); send an object of strings and numbers"
            )
        else:
            message = "the body is not valid JSON: it must be UTF-8"
        return error_response(422, "invalid", message, "body")
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
        # Starlette names the methods of the first route only; list every route's
        headers = {**(headers or {}), "Allow": ", ".join(_allowed(request))}
    return error_response(exc.status_code, code, message, headers=headers)


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    log.error("store error on %s %s: %s", request.method, request.url.path, exc)
    return error_response(
        503, "unavailable", "the store cannot be reached now; the server's log has the details"
    )


async def _service_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    return exc.response()


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    # the traceback goes to the server's log, never to the client
    log.error("error on %s %s", request.method, request.url.path, exc_info=exc)
    # Starlette answers a 500 outside every middleware: the headers they add go here too
    headers = {name.decode(): value.decode() for name, value in SECURITY_HEADERS}
    return error_response(
        500, "internal", "internal error; the server's log has the details", headers=headers
    )


async def _neardup_error(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, InputError):
        return error_response(422, "invalid", str(exc))
    if _unreachable(exc) or _unreachable(exc.__cause__):
        return await _unavailable(request, exc)
    return await _internal(request, exc)


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error as the service's JSON error, never with a traceback."""
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(NeardupError, _neardup_error)
    app.add_exception_handler(sqlite3.OperationalError, _unavailable)
    for kind in _redis_unreachable():
        app.add_exception_handler(kind, _unavailable)
    app.add_exception_handler(Exception, _internal)
