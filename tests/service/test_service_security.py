"""The guards of a real ``neardup serve`` (uvicorn on loopback): the Host header against DNS
rebinding, and the limits on what one client can make the service compute."""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
import httpx

from tests.service.test_service_serve import serving

KEY = "a-key-of-twenty-chars"


def raw(url: str, request: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` (a request line and headers, no blank line) as it is to the server at
    ``url``; its status, headers and body."""
    parts = urlsplit(url)
    data = request.replace("\n", "\r\n").encode() + b"\r\n"
    data += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as s:
        s.sendall(data)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    head, _, payload = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, payload


def _timed(
    fn: Callable[..., httpx.Response], *args: object, **kwargs: object
) -> tuple[httpx.Response, float]:
    start = time.monotonic()
    r = fn(*args, **kwargs)
    return r, time.monotonic() - start


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def _refused(status: int, headers: dict[str, str], body: bytes) -> dict:
    assert status == 400, body
    assert headers["content-type"].startswith("application/json")
    error = json.loads(body)
    assert error["error"] == "bad_host" and "DNS rebinding" in error["message"]
    return error


# -- the Host header --------------------------------------------------------------------------


def test_a_forged_host_is_refused_and_writes_nothing() -> None:
    """A page on attacker.example whose name resolves to 127.0.0.1 reaches the service with
    Host: attacker.example: reads and writes are refused, nothing is added."""
    with serving() as s:
        port = _port(s.url)
        for host in ("attacker.example", f"attacker.example:{port}", "127.0.0.1.nip.io"):
            _refused(*raw(s.url, f"GET /v1/clusters HTTP/1.1\nHost: {host}"))
        doc = json.dumps({"id": "planted", "text": "一段正文。"}).encode()
        post = "POST /v1/documents HTTP/1.1\nHost: attacker.example\nContent-Type: application/json"
        error = _refused(*raw(s.url, post, doc))
        assert "attacker.example" in error["message"]
        assert httpx.get(s.url + "v1/documents/planted").status_code == 404
        assert httpx.get(s.url + "v1/clusters").json()["clusters"] == []


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST:{port}", "127.0.0.1", "127.0.0.1:{port}", "[::1]:{port}"]
)
def test_the_loopback_names_are_answered(host: str) -> None:
    """localhost, 127.0.0.1 and [::1], with or without the port, are what a local client sends."""
    with serving() as s:
        request = f"GET /v1/clusters HTTP/1.1\nHost: {host.format(port=_port(s.url))}"
        status, _, body = raw(s.url, request)
        assert status == 200, body


def test_allowed_host_adds_names_and_star_allows_any() -> None:
    """--allowed-host NAME (repeatable) adds names; --allowed-host '*' answers any Host."""
    with serving("--allowed-host", "crawl.internal", "--allowed-host", "Dedup.LAN.") as s:
        for host in ("crawl.internal", f"crawl.internal:{_port(s.url)}", "dedup.lan"):
            status, _, body = raw(s.url, f"GET /healthz HTTP/1.1\nHost: {host}")
            assert status == 200, (host, body)
        _refused(*raw(s.url, "GET /healthz HTTP/1.1\nHost: other.internal"))
    with serving("--allowed-host", "*") as s:
        assert raw(s.url, "GET /healthz HTTP/1.1\nHost: anything.example")[0] == 200


def test_a_public_address_answers_its_name_and_addresses_only() -> None:
    """Bound to 0.0.0.0 (with a key): the loopback names, the machine's addresses (a DNS
    rebinding page can only send a name) and --allowed-host names; other names are refused."""
    env = {"NEARDUP_API_KEY": KEY}
    with serving("--host", "0.0.0.0", "--allowed-host", "dedup.lan", env=env) as s:
        url = f"http://127.0.0.1:{_port(s.url)}/"
        for host in ("127.0.0.1", "10.1.2.3:8000", "[fd00::1]:8000", "dedup.lan"):
            status, _, body = raw(url, f"GET /healthz HTTP/1.1\nHost: {host}")
            assert status == 200, (host, body)
        _refused(*raw(url, "GET /healthz HTTP/1.1\nHost: attacker.example"))


# -- the work one request can cause ---------------------------------------------------------


def _text(rng: random.Random, n: int) -> str:
    """n characters of two letters (normalization keeps them all): slow for mcc and
    contiguity, whose runs of agreeing characters are many."""
    return "".join(rng.choice("ab") for _ in range(n))


def test_a_huge_pair_is_refused_at_once() -> None:
    """Texts over --max-compare-chars (100,000 by default) and pairs whose lengths multiply to
    more than --max-compare-cells (25,000,000) are refused with 422 before any measure runs:
    in well under a second, where the measures would take seconds."""
    rng = random.Random(60)
    with serving() as s, httpx.Client(base_url=s.url, timeout=60) as c:
        huge = _text(rng, 200_000)
        r, seconds = _timed(c.post, "v1/compare", json={"a": huge, "b": huge[::-1]})
        assert r.status_code == 422, (r.text, seconds)  # refused before any measure ran
        error = r.json()
        assert error["field"] == "a" and "200,000 characters" in error["message"]
        assert "100,000" in error["message"] and "--max-compare-chars" in error["message"]
        long = _text(rng, 6_000)
        r, seconds = _timed(c.post, "v1/compare", json={"a": long, "b": long[::-1]})
        assert r.status_code == 422, (r.text, seconds)  # refused before any measure ran
        assert "6,000 x 6,000" in r.json()["message"] and "25,000,000" in r.json()["message"]
        ok = _text(rng, 4_000)
        assert c.post("v1/compare", json={"a": ok, "b": ok[::-1]}).status_code == 200


def test_the_compare_limits_are_options() -> None:
    """--max-compare-chars and --max-compare-cells set the limits."""
    with serving("--max-compare-chars", "50", "--max-compare-cells", "100") as s:
        r = httpx.post(s.url + "v1/compare", json={"a": "x" * 51, "b": "y"})
        assert r.status_code == 422 and r.json()["field"] == "a"
        r = httpx.post(s.url + "v1/compare", json={"a": "x" * 20, "b": "y" * 20})
        assert r.status_code == 422 and "limit of 100 " in r.json()["message"]
        assert httpx.post(s.url + "v1/compare", json={"a": "x" * 10, "b": "y" * 10}).is_success


def test_one_compare_too_many_at_once_is_429() -> None:
    """--max-concurrent-compare 2: of three slow comparisons sent at once, two are computed
    and one is answered 429 with Retry-After; other requests go on meanwhile."""
    rng = random.Random(61)
    pair = {"a": _text(rng, 4_900), "b": _text(rng, 4_900)}  # about half a second each
    with serving("--max-concurrent-compare", "2") as s:
        barrier = threading.Barrier(3)
        answers: list[httpx.Response] = []

        def client() -> None:
            with httpx.Client(base_url=s.url, timeout=60) as c:
                barrier.wait()
                answers.append(c.post("v1/compare", json=pair))

        threads = [threading.Thread(target=client) for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        assert httpx.get(s.url + "healthz", timeout=5).status_code == 200
        for t in threads:
            t.join(60)
        statuses = sorted(r.status_code for r in answers)
        assert statuses == [200, 200, 429], [r.text[:200] for r in answers]
        [refused] = [r for r in answers if r.status_code == 429]
        assert refused.json()["error"] == "busy" and refused.headers["retry-after"] == "1"
        assert "--max-concurrent-compare" in refused.json()["message"]
        # and the places are given back
        assert httpx.post(s.url + "v1/compare", json=pair, timeout=60).status_code == 200
