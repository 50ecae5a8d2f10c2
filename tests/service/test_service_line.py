"""The line of requests for the Deduper, in process: documents that wait together are
decided together, with the decisions of one by one in the order they came; one request's
fault stays its own; a store that fails answers a whole batch at once."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable
from typing import Any

import pytest

pytest.importorskip("fastapi")
import anyio
import httpx

from neardup import Deduper
from neardup.errors import StoreError
from neardup.service import create_app
from tests.service.test_service_api import reprint, story

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio."""
    return "asyncio"


class _Gated(Deduper):
    """A Deduper whose first batch waits until ``waiting`` more requests are in line (so the
    test knows they wait together), and which records every batch it is given."""

    def __init__(
        self, waiting: int, fail: Any = None, gate: threading.Event | None = None, **options: Any
    ) -> None:
        super().__init__(**options)
        self.waiting = waiting
        self.gate = gate  # instead of waiting for the line: wait for this
        self.fail = fail  # called with a batch's ids: raise to fail it
        self.batches: list[list[str]] = []
        self.line: Any = None  # the service's line, once the app is built

    def check_and_add_many(self, docs: Iterable[Any]) -> list[Any]:
        docs = list(docs)
        ids = [d["id"] for d in docs]
        first = not self.batches
        self.batches.append(ids)
        if first and self.gate is not None:
            self.gate.wait(20)
        elif first:
            for _ in range(2000):  # at most 20 s
                if len(self.line) >= self.waiting:
                    break
                time.sleep(0.01)
        if self.fail is not None:
            self.fail(ids)
        return super().check_and_add_many(docs)


async def _post_all(dd: _Gated, docs: list[dict[str, str]]) -> list[httpx.Response]:
    """Post every document at once, each on a request of its own; the responses in order."""
    app = create_app(dd)
    dd.line = app.state.service._line
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    out: list[Any] = [None] * len(docs)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:

        async def post(k: int) -> None:
            if k:
                await anyio.sleep(0.01 * k)  # in this order
            out[k] = await c.post("/v1/documents", json=docs[k])

        async with anyio.create_task_group() as tg:
            for k in range(len(docs)):
                tg.start_soon(post, k)
    return out


async def test_waiting_documents_are_decided_together_as_one_by_one() -> None:
    """8 requests for reprints of 3 stories, 7 of them waiting while the first is decided:
    the 7 are decided in one batch, in the order they came, and every decision is the one
    that adding the documents one by one in that order makes."""
    rng = random.Random(60)
    texts = [story(rng) for _ in range(3)]
    docs = [{"id": f"d{k}", "text": reprint(rng, texts[k % 3])} for k in range(8)]
    dd = _Gated(waiting=7)
    responses = await _post_all(dd, docs)
    assert [r.status_code for r in responses] == [200] * 8
    assert dd.batches == [["d0"], [f"d{k}" for k in range(1, 8)]]
    alone = Deduper()
    expected = [alone.check_and_add(d["id"], d["text"]).to_dict() for d in docs]
    assert [r.json() for r in responses] == expected
    assert [r.json()["is_duplicate"] for r in responses] == [False] * 3 + [True] * 5


async def test_a_batch_that_fails_for_one_request_fails_that_request_alone() -> None:
    """A document the Deduper fails on (a bug, not the store): decided again one by one,
    that request is a 500 and the others are answered."""

    def fail(ids: list[str]) -> None:
        if "d3" in ids:
            raise RuntimeError("a bug on d3")

    rng = random.Random(61)
    docs = [{"id": f"d{k}", "text": story(rng)} for k in range(6)]
    dd = _Gated(waiting=5, fail=fail)
    responses = await _post_all(dd, docs)
    assert [r.status_code for r in responses] == [200, 200, 200, 500, 200, 200]
    assert ["d1", "d2", "d3", "d4", "d5"] in dd.batches and ["d4"] in dd.batches


async def test_a_store_failure_answers_the_whole_batch_at_once() -> None:
    """The store fails a batch: every request in it is a 503 at once (the batch is not
    tried again one by one, which would wait out the store's timeout once a document)."""
    failing = threading.Event()
    failing.set()

    def fail(ids: list[str]) -> None:
        if failing.is_set() and ids != ["d0"]:
            failing.clear()
            raise StoreError("Redis store: Timeout reading from socket")

    rng = random.Random(62)
    docs = [{"id": f"d{k}", "text": story(rng)} for k in range(5)]
    dd = _Gated(waiting=4, fail=fail)
    responses = await _post_all(dd, docs)
    assert [r.status_code for r in responses] == [200, 503, 503, 503, 503]
    assert all(r.json()["error"] == "unavailable" for r in responses[1:])
    assert len(dd.batches) == 2  # the failed batch was not tried again


async def test_a_request_that_goes_away_leaves_the_line() -> None:
    """A request cancelled while it waits (its client went away) leaves the line, and the
    one behind it is decided in its turn."""
    gate = threading.Event()
    dd = _Gated(waiting=0, gate=gate)
    app = create_app(dd)
    line = app.state.service._line
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    rng = random.Random(63)
    docs = [{"id": f"d{k}", "text": story(rng)} for k in range(3)]
    answers: dict[str, int] = {}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:

        async def post(k: int) -> None:
            answers[docs[k]["id"]] = (await c.post("/v1/documents", json=docs[k])).status_code

        async with anyio.create_task_group() as tg:
            tg.start_soon(post, 0)
            while not dd.batches:  # d0 is being decided, held at the gate
                await anyio.sleep(0.01)
            gone = anyio.CancelScope()

            async def post_and_go_away() -> None:
                with gone:
                    await post(1)

            tg.start_soon(post_and_go_away)
            while len(line) < 1:
                await anyio.sleep(0.01)
            tg.start_soon(post, 2)
            while len(line) < 2:
                await anyio.sleep(0.01)
            gone.cancel()
            while len(line) > 1:
                await anyio.sleep(0.01)
            gate.set()
    assert answers == {"d0": 200, "d2": 200}
    assert dd.batches == [["d0"], ["d2"]]
