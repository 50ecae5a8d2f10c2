"""Small ASGI layers around the service: the headers every answer carries, the Host check
(against DNS rebinding), a body-size limit (413 before the body is parsed), and the request
counter and latency histogram behind ``/metrics``."""

from __future__ import annotations

import ipaddress
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
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


#: Headers on every answer: no browser guesses a type other than the one sent (a stored
#: text that looks like HTML or script is never run as such).
SECURITY_HEADERS = ((b"x-content-type-options", b"nosniff"),)


class SecurityHeaders:
    """Add :data:`SECURITY_HEADERS` to every answer that does not set them itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                headers += [(n, v) for n, v in SECURITY_HEADERS if n not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, sending)


#: The names of this machine's loopback addresses, always answered.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
_WILDCARDS = ("0.0.0.0", "::")
_HOST = re.compile(r"^[a-z0-9_.-]+$")


def host_name(value: str) -> str | None:
    """The name in a Host header (or an ``allowed_hosts`` entry), lower case, without its
    port, brackets or trailing dot; None when it is not a host name or address.

    >>> host_name("LocalHost:8000"), host_name("[::1]:8000"), host_name("example.com.")
    ('localhost', '::1', 'example.com')
    >>> host_name("a b"), host_name("::1"), host_name("x:y")
    (None, None, None)
    """
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[1:end], value[end + 1 :]
        if end < 0 or (rest and not (rest[:1] == ":" and rest[1:].isdigit())):
            return None
        try:
            return str(ipaddress.IPv6Address(name))
        except ValueError:
            return None
    name, colon, port = value.rpartition(":")
    if colon:
        if not port.isdigit():
            return None
        value = name
    value = value.rstrip(".")
    return value if value and _HOST.match(value) else None


def allowed_name(entry: str) -> str | None:
    """An ``allowed_hosts`` entry as :func:`host_name` gives it: a name, an address (IPv6
    with or without brackets), either with a port; None when it is neither.

    >>> allowed_name("::"), allowed_name("[::1]"), allowed_name("Dedup.LAN:8000")
    ('::', '::1', 'dedup.lan')
    """
    try:
        return str(ipaddress.ip_address(entry.strip()))
    except ValueError:
        return host_name(entry)


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _bad_host(shown: str) -> dict[str, object]:
    return {
        "error": "bad_host",
        "message": f"this service does not answer to the Host {shown[:100]!r} (a guard against "
        "DNS rebinding): it answers to localhost, 127.0.0.1, [::1], the address it listens on "
        "and the names it was started with (--allowed-host NAME, or allowed_hosts=)",
        "field": None,
        "problems": [],
    }


class HostCheck:
    """Answer 400 to a request whose Host header names none of the allowed hosts.

    A web page the user opens can make its own name resolve to 127.0.0.1 (DNS rebinding)
    and then read and write a service on loopback as if it were its own origin; its requests
    still carry its own name in Host, so they are refused here. The loopback names are always
    allowed; ``"*"`` allows any. When an allowed host is a wildcard address (the service
    listens on every address), any IP address is allowed too: a rebinding page can only send
    a name. A request without a Host header (HTTP/1.0; no browser sends one) is answered."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        wanted = list(allowed)
        self.any = "*" in wanted
        names = {allowed_name(a) for a in wanted if a != "*"}
        self.names = frozenset(n for n in names if n is not None) | set(LOOPBACK_HOSTS)
        self.addresses = any(n in _WILDCARDS for n in self.names)

    def allows(self, value: str) -> bool:
        """Whether a Host header's value names an allowed host."""
        if self.any:
            return True
        name = host_name(value)
        if name is None:
            return False
        return name in self.names or (self.addresses and _is_address(name))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.any:
            for key, value in scope["headers"]:
                if key == b"host":
                    shown = value.decode("latin-1")
                    if not self.allows(shown):
                        await send_json(send, 400, _bad_host(shown))
                        return
        await self.app(scope, receive, send)


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
