"""Two small ASGI layers around the service: a body-size limit (413 before the body is
parsed) and the request counter and latency histogram behind ``/metrics``."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ._metrics import Metrics

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_CONVERTOR = re.compile(r"\{(\w+):\w+\}")  # {doc_id:path} -> {doc_id}


async def send_json(send: Send, status: int, body: dict[str, object]) -> None:
    """Answer with a JSON body (for errors found before the application runs)."""
    data = json.dumps(body, ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _too_large(limit: int) -> dict[str, object]:
    return {
        "error": "too_large",
        "message": f"the request body is larger than the limit of {limit:,} bytes; "
        "send fewer or shorter documents, or start the service with a larger --max-body",
        "field": None,
        "problems": [],
    }


class BodyLimit:
    """Answer 413 to a request whose body is over ``limit`` bytes, by its Content-Length
    or, when it has none (chunked), once that many bytes have arrived."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.limit:
                    await send_json(send, 413, _too_large(self.limit))
                    return
        # read the whole body first: the endpoints need all of it anyway
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await send_json(send, 413, _too_large(self.limit))
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class Measure:
    """Count each request by method, route template and status, and time it."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def counting(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, counting)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) if route is not None else None
            label = _CONVERTOR.sub(r"{\1}", str(path)) if path else _route_of(scope)
            self.metrics.observe(scope["method"], label, status, time.perf_counter() - start)


def _route_of(scope: Scope) -> str:
    """The route a request the router never saw (a 413) was for, or "other"."""
    app = scope.get("app")
    for route in getattr(app, "routes", ()):
        try:
            match, _ = route.matches(scope)
        except Exception:  # a route that cannot judge this scope is not it
            continue
        if match.name != "NONE":
            return _CONVERTOR.sub(r"{\1}", str(getattr(route, "path", "other")))
    return "other"
