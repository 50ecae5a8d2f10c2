"""The HTTP service in process (httpx over ASGI): every endpoint, every error, every store."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
import httpx

from neardup import METHODS, Deduper
from neardup.cli import main
from neardup.service import create_app
from tests.conftest import start_redis_server
from tests.synth import hanzi

pytestmark = pytest.mark.anyio

KEY = "test-key-1234"
AUTH = {"Authorization": f"Bearer {KEY}"}
SITES = ("新华网", "人民网", "澎湃新闻", "央视网", "环球网", "中新网")


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio."""
    return "asyncio"


def story(rng: random.Random, sentences: int = 10) -> str:
    """An invented Chinese story: random characters (no numerals) in sentences, so stories
    share nothing."""
    return "".join(
        "".join(hanzi(rng) for _ in range(rng.randint(18, 40))) + "。" for _ in range(sentences)
    )


def reprint(rng: random.Random, text: str) -> str:
    """A copy of ``text`` on another site: a source line, a footer and two typos."""
    body = list(text)
    for _ in range(2):
        body[rng.randrange(len(body))] = hanzi(rng)
    return f"来源：{rng.choice(SITES)}\n{''.join(body)}\n责任编辑：{rng.choice('王李张刘陈')}某"


@asynccontextmanager
async def served(**options: object) -> AsyncIterator[httpx.AsyncClient]:
    """A client of a fresh service built with ``create_app(**options)``."""
    app = create_app(**options)  # type: ignore[arg-type]
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            yield c
    finally:
        app.state.service.close()


def assert_error(r: httpx.Response, status: int, error: str, field: str | None = None) -> dict:
    """The response is the service's JSON error with this status, code and field."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["error"] == error
    assert body["message"]
    assert "Traceback" not in r.text
    if field is not None:
        assert body["field"] == field, body
        assert field in body["message"] or field == "body"
    return body


# -- compare --------------------------------------------------------------------------------


async def test_compare_gives_the_cli_measures_and_the_passages(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """/v1/compare returns exactly what `neardup compare --json` prints, plus passages."""
    a = "央视网消息：黑龙江深挖冰雪资源，推动冰雪经济高质量发展。"
    b = "转载｜央視網消息：黑龍江深挖冰雪資源，推動冰雪經濟高質量發展！"
    assert main(["compare", "--json", a, b]) == 0
    cli = json.loads(capsys.readouterr().out)
    async with served() as c:
        r = await c.post("/v1/compare", json={"a": a, "b": b})
    assert r.status_code == 200
    body = r.json()
    assert body["scores"] == cli
    assert list(body["scores"]) == list(METHODS)
    [p] = body["passages"]
    assert p["text"] == "央视网消息:黑龙江深挖冰雪资源,推动冰雪经济高质量发展"
    assert body["a"][p["a_start"] : p["a_start"] + p["length"]] == p["text"]
    assert body["b"][p["b_start"] : p["b_start"] + p["length"]] == p["text"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("北京今天天气晴朗，适合出游。", "今天北京天气晴朗，适合出游！"),
        ("The quick brown fox jumps over the lazy dog.", "A quick brown fox jumped over the dog."),
        ("新华社电 Apple Inc 发布 iPhone 17 手机", "Apple Inc 发布 iPhone 17 手机（记者 王某）"),
    ],
)
async def test_compare_raw_compares_the_texts_as_given(a: str, b: str) -> None:
    """raw: true leaves the texts as sent, and every passage is found in both."""
    async with served() as c:
        r = await c.post("/v1/compare", json={"a": a, "b": b, "raw": True})
    body = r.json()
    assert (body["a"], body["b"]) == (a, b)
    for p in body["passages"]:
        assert a[p["a_start"] :].startswith(p["text"]) and b[p["b_start"] :].startswith(p["text"])
    assert all(0.0 <= s <= 1.0 for s in body["scores"].values())


async def test_compare_too_long_for_a_quadratic_measure_is_422() -> None:
    """Texts too long for mcc answer 422 naming the sizes, not 500."""
    rng = random.Random(1)
    a, b = story(rng, 300), story(rng, 300)
    async with served() as c:
        r = await c.post("/v1/compare", json={"a": a, "b": b})
    assert "characters" in assert_error(r, 422, "invalid")["message"] or r.status_code == 422


async def test_compare_past_a_measure_s_own_limit_is_422() -> None:
    """With --max-compare-cells raised past mcc's own limit, texts too long for mcc answer
    422 with mcc's reason (compare() now leaves such a measure out: not a 500 of a score
    missing from the schema)."""
    rng = random.Random(1)
    a = "".join(story(rng, 40) for _ in range(10))
    b = a[: len(a) // 2] + story(rng, 5) + a[len(a) // 2 :]
    assert len(a) * len(b) > 50_000_000
    async with served(max_compare_cells=10**9, max_compare_chars=10**6) as c:
        r = await c.post("/v1/compare", json={"a": a, "b": b})
    assert "mcc compares every offset" in assert_error(r, 422, "invalid")["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [({"a": "x"}, "b"), ({"a": 1, "b": "x"}, "a"), ({"a": "x", "b": "y", "raw": "yes"}, "raw")],
)
async def test_compare_wrong_fields_are_422_naming_the_field(body: dict, field: str) -> None:
    """A missing or mistyped field is named in the 422."""
    async with served() as c:
        r = await c.post("/v1/compare", json=body)
    assert_error(r, 422, "invalid", field)


# -- check and add --------------------------------------------------------------------------


async def test_check_decides_without_adding(store_url: str) -> None:
    """/v1/check says what adding would decide, and adds nothing."""
    rng = random.Random(2)
    text = story(rng)
    async with served(store=store_url) as c:
        r = await c.post("/v1/check", json={"id": "a", "text": text})
        assert r.json() == {
            "id": "a",
            "is_duplicate": False,
            "duplicate_of": None,
            "extends": None,
            "cluster": "a",
            "score": 0.0,
            "measure": None,
            "evidence": [],
            "chrome": [],
        }
        assert (await c.get("/v1/documents/a")).status_code == 404
        assert (await c.post("/v1/documents", json={"id": "a", "text": text})).status_code == 200
        r = await c.post("/v1/check", json={"id": "b", "text": reprint(rng, text)})
        d = r.json()
        assert d["is_duplicate"] and d["duplicate_of"] == "a" and d["cluster"] == "a"
        assert d["score"] >= 0.6 and d["measure"] == "coverage" and d["evidence"]
        assert_error(await c.get("/v1/documents/b"), 404, "not_found")


async def test_add_keeps_the_first_copy_and_is_idempotent(store_url: str) -> None:
    """POST /v1/documents keeps a story once; an id sent again returns its first decision."""
    rng = random.Random(3)
    text = story(rng)
    copy = reprint(rng, text)
    async with served(store=store_url) as c:
        first = (await c.post("/v1/documents", json={"id": "a", "text": text})).json()
        second = (await c.post("/v1/documents", json={"id": "b", "text": copy})).json()
        again = (await c.post("/v1/documents", json={"id": "b", "text": story(rng)})).json()
        exact = (await c.post("/v1/documents", json={"id": "c", "text": copy})).json()
    assert not first["is_duplicate"]
    assert second["is_duplicate"] and second["duplicate_of"] == "a" and second["cluster"] == "a"
    assert again == second
    assert exact["measure"] == "identical" and exact["duplicate_of"] == "b"
    assert exact["cluster"] == "a" and exact["score"] == 1.0


async def test_batch_decides_like_one_by_one(store_url: str, tmp_path: Path) -> None:
    """/v1/documents:batch gives the same decisions, in order, as adding one by one."""
    rng = random.Random(4)
    docs = []
    for s in range(5):
        text = story(rng)
        docs += [{"id": f"s{s}-{k}", "text": reprint(rng, text)} for k in range(3)]
    rng.shuffle(docs)
    docs.append(dict(docs[0]))  # an id repeated inside the batch
    expected = Deduper().check_and_add_many(docs)
    async with served(store=store_url) as c:
        r = await c.post("/v1/documents:batch", json={"documents": docs})
    assert r.status_code == 200
    body = r.json()
    assert body["decisions"] == [d.to_dict() for d in expected]
    assert body["kept"] == 6 and body["duplicates"] == len(docs) - 6


@pytest.mark.parametrize(
    ("documents", "field"),
    [
        ([], "documents"),
        ([{"id": str(i), "text": "x"} for i in range(1001)], "documents"),
        ([{"id": "a", "text": "x"}, {"id": "b"}], "documents[1].text"),
        ([{"id": "a", "text": "x"}, {"id": 7, "text": "y"}], "documents[1].id"),
    ],
)
async def test_batch_errors_name_the_document_and_field(documents: list, field: str) -> None:
    """An empty batch, one over 1,000, or one bad document is a 422 that names it."""
    async with served() as c:
        r = await c.post("/v1/documents:batch", json={"documents": documents})
        assert_error(r, 422, "invalid", field)
        assert (await c.get("/v1/clusters")).json()["clusters"] == []


async def test_a_full_batch_of_1000_is_accepted() -> None:
    """1,000 documents are one batch."""
    rng = random.Random(9)
    docs = [{"id": f"d{i}", "text": story(rng, 2)} for i in range(1000)]
    async with served() as c:
        r = await c.post("/v1/documents:batch", json={"documents": docs})
    assert r.status_code == 200 and len(r.json()["decisions"]) == 1000


@pytest.mark.parametrize(
    ("timestamp", "seconds"),
    [
        (1704412800, 1704412800.0),
        (1704412800000, 1704412800.0),
        ("2024-01-05T08:00:00+08:00", 1704412800.0),
        ("2024-01-05", 1704412800.0),
        ("Fri, 05 Jan 2024 00:00:00 GMT", 1704412800.0),
    ],
)
async def test_timestamps_in_every_form(timestamp: object, seconds: float) -> None:
    """Epoch seconds or milliseconds, ISO 8601 and HTTP dates are all stored as seconds."""
    async with served() as c:
        body = {"id": "a", "text": "正文。", "title": "标题", "timestamp": timestamp}
        assert (await c.post("/v1/documents", json=body)).status_code == 200
        doc = (await c.get("/v1/documents/a")).json()
    assert doc["timestamp"] == seconds and doc["title"] == "标题"


@pytest.mark.parametrize("timestamp", ["", "  ", None])
@pytest.mark.parametrize("endpoint", ["/v1/check", "/v1/documents"])
async def test_an_empty_timestamp_is_no_timestamp(endpoint: str, timestamp: str | None) -> None:
    """An empty (or blank) timestamp is absent, as in `neardup dedup`: the time it is added."""
    import time

    async with served() as c:
        body = {"id": "a", "text": "正文。", "timestamp": timestamp}
        r = await c.post(endpoint, json=body)
        assert r.status_code == 200, r.text
        if endpoint == "/v1/documents":
            doc = (await c.get("/v1/documents/a")).json()
            assert abs(doc["timestamp"] - time.time()) < 60


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": "x"}, "id"),
        ({"id": "", "text": "x"}, "id"),
        ({"id": "a" * 1025, "text": "x"}, "id"),
        ({"id": 5, "text": "x"}, "id"),
        ({"id": "a\ud800", "text": "x"}, "id"),
        ({"id": "a"}, "text"),
        ({"id": "a", "text": ""}, "text"),
        ({"id": "a", "text": " \n "}, "text"),
        ({"id": "a", "text": "<p></p>&nbsp;\u200b"}, "text"),
        ({"id": "a", "text": "\x00" * 50}, "text"),
        ({"id": "a", "text": ["x"]}, "text"),
        ({"id": "a", "text": "x", "title": 3}, "title"),
        ({"id": "a", "text": "x", "timestamp": "yesterday"}, "timestamp"),
        ({"id": "a", "text": "x", "timestamp": True}, "timestamp"),
        ({"id": "a", "text": "x", "timestamp": 1e300}, "timestamp"),
        ({"id": "a", "text": "x", "timestamp": [1]}, "timestamp"),
    ],
)
@pytest.mark.parametrize("endpoint", ["/v1/check", "/v1/documents"])
async def test_bad_documents_are_422_naming_the_field(
    endpoint: str, body: dict, field: str
) -> None:
    """Every wrong or missing field of a document is a 422 that names it."""
    content = json.dumps(body).encode()  # escapes the lone surrogate as JSON allows
    async with served() as c:
        r = await c.post(endpoint, content=content, headers={"content-type": "application/json"})
    assert_error(r, 422, "invalid", field)


@pytest.mark.parametrize(
    ("content", "headers", "message"),
    [
        (b'{"id": "a", "text": ', {"content-type": "application/json"}, "not valid JSON"),
        (b'{"id": "a", "text": NaN', {"content-type": "application/json"}, "not valid JSON"),
        (b'["a", "b"]', {"content-type": "application/json"}, "valid dictionary"),
        (b"", {"content-type": "application/json"}, "JSON object is required"),
        (b'{"id": "a", "text": "x"}', {"content-type": "text/plain"}, "Content-Type"),
        (b"id=a&text=x", {"content-type": "application/x-www-form-urlencoded"}, "Content-Type"),
        (b"\xff\xfe{", {"content-type": "application/json"}, "UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, {"content-type": "application/json"}, "too deeply"),
        (
            b'{"id": "a", "text": ' + b'{"x": ' * 50_000 + b"1" + b"}" * 50_001,
            {"content-type": "application/json"},
            "nested too deeply",
        ),
    ],
)
async def test_bodies_that_are_not_a_json_object_are_422(
    content: bytes, headers: dict, message: str
) -> None:
    """Malformed JSON, a JSON array, no body or another content type: 422 about the body."""
    async with served() as c:
        r = await c.post("/v1/documents", content=content, headers=headers)
    body = assert_error(r, 422, "invalid", "body")
    assert message in body["message"]


async def test_json_nan_timestamp_is_422() -> None:
    """NaN, which Python's JSON reader accepts, is no timestamp."""
    async with served() as c:
        r = await c.post(
            "/v1/documents",
            content=b'{"id": "a", "text": "x", "timestamp": NaN}',
            headers={"content-type": "application/json"},
        )
    assert_error(r, 422, "invalid", "timestamp")


# -- documents ------------------------------------------------------------------------------


async def test_get_document_gives_decision_text_and_cluster(store_url: str) -> None:
    """GET /v1/documents/{id} has the decision, the stored text, the title and cluster size."""
    rng = random.Random(5)
    text = story(rng)
    copy = reprint(rng, text)
    async with served(store=store_url) as c:
        await c.post("/v1/documents", json={"id": "a", "text": text, "title": "原文"})
        added = (await c.post("/v1/documents", json={"id": "b", "text": copy})).json()
        doc = (await c.get("/v1/documents/b")).json()
        kept = (await c.get("/v1/documents/a")).json()
    assert {k: doc[k] for k in added} == added
    assert doc["cluster_size"] == 2 and doc["title"] is None
    prepared = Deduper().sketch  # the text as compared: normalized, boilerplate stripped
    assert doc["text"] == prepared(copy).text and "来源" not in doc["text"]
    assert kept["text"] == prepared(text).text
    assert kept["title"] == "原文" and not kept["is_duplicate"]


@pytest.mark.parametrize(
    "doc_id",
    [
        "https://news.example.cn/2026/01/18/a.html?x=1",
        "https://新闻.例子.中国/国内/2026/01/18/a.html#top",
        "带空格 和/斜杠",
        "a%2Fb",
        "#hash",
        " ",
        "a\nb",
        "\n",
        "line\r\nbreak/",
        "tab\there\u2028",
    ],
)
async def test_any_id_round_trips_through_the_path(doc_id: str) -> None:
    """URLs and other ids with slashes, spaces, percent signs and newlines work once
    percent-encoded."""
    from urllib.parse import quote

    async with served(api_key=KEY) as c:
        r = await c.post("/v1/documents", json={"id": doc_id, "text": "一段正文。"}, headers=AUTH)
        assert r.json()["cluster"] == doc_id
        path = f"/v1/documents/{quote(doc_id, safe='')}"
        assert (await c.get(path)).json()["id"] == doc_id
        assert (await c.get(f"/v1/clusters/{quote(doc_id, safe='')}")).json()["id"] == doc_id
        assert (await c.delete(path, headers=AUTH)).json() == {"id": doc_id, "deleted": True}
        assert (await c.get(path)).status_code == 404


async def test_delete_forgets_a_document(store_url: str) -> None:
    """DELETE removes a document: then 404, and a later copy of it is kept."""
    rng = random.Random(6)
    text = story(rng)
    async with served(store=store_url) as c:
        await c.post("/v1/documents", json={"id": "a", "text": text})
        r = await c.delete("/v1/documents/a")
        assert r.status_code == 200 and r.json() == {"id": "a", "deleted": True}
        assert_error(await c.get("/v1/documents/a"), 404, "not_found")
        assert_error(await c.delete("/v1/documents/a"), 404, "not_found")
        again = await c.post("/v1/documents", json={"id": "b", "text": reprint(rng, text)})
        assert not again.json()["is_duplicate"]


# -- clusters -------------------------------------------------------------------------------


async def test_clusters_largest_first_and_their_members(store_url: str) -> None:
    """Clusters come largest first; a cluster's members earliest first, with scores and the
    passages they share with the kept document."""
    rng = random.Random(7)
    docs = []
    for s, copies in enumerate((2, 4, 1, 3)):
        text = story(rng)
        docs.append({"id": f"s{s}", "text": text, "title": f"第{s}个故事"})
        docs += [{"id": f"s{s}-r{k}", "text": reprint(rng, text)} for k in range(copies)]
    async with served(store=store_url) as c:
        await c.post("/v1/documents:batch", json={"documents": docs})
        listed = (await c.get("/v1/clusters")).json()
        page = (await c.get("/v1/clusters", params={"limit": 2, "offset": 1})).json()
        cluster = (await c.get("/v1/clusters/s1")).json()
        part = (await c.get("/v1/clusters/s1", params={"limit": 2, "offset": 3})).json()
        assert_error(await c.get("/v1/clusters/nope"), 404, "not_found")
    assert [(x["id"], x["size"]) for x in listed["clusters"]] == [
        ("s1", 5),
        ("s3", 4),
        ("s0", 3),
        ("s2", 2),
    ]
    assert listed["clusters"][0]["title"] == "第1个故事"
    prepared = " ".join(Deduper().sketch(docs[3]["text"]).text.split())
    assert listed["clusters"][0]["excerpt"] == prepared[:160] + "…"
    assert [x["id"] for x in page["clusters"]] == ["s3", "s0"]
    assert (page["limit"], page["offset"]) == (2, 1)
    members = cluster["members"]
    assert cluster["size"] == 5 and [m["id"] for m in members] == ["s1"] + [
        f"s1-r{k}" for k in range(4)
    ]
    assert not members[0]["is_duplicate"] and members[0]["shared"] == []
    for m in members[1:]:
        assert m["is_duplicate"] and m["duplicate_of"] == "s1" and m["score"] >= 0.6
        assert m["measure"] == "coverage"
        covered = sum(s["length"] for s in m["shared"])
        assert covered > 0.8 * len(docs[3]["text"])
        for s in m["shared"]:
            assert m["text"][s["start"] : s["start"] + s["length"]] in members[0]["text"]
    assert [m["id"] for m in part["members"]] == ["s1-r2", "s1-r3"] and part["size"] == 5


@pytest.mark.parametrize(
    ("params", "field"),
    [({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"offset": -1}, "offset"),
     ({"limit": "ten"}, "limit"), ({"offset": 10**12}, "offset")],
)  # fmt: skip
@pytest.mark.parametrize("path", ["/v1/clusters", "/v1/clusters/x"])
async def test_cluster_paging_errors_are_422(path: str, params: dict, field: str) -> None:
    """limit and offset out of range or not numbers: 422 naming them."""
    async with served() as c:
        r = await c.get(path, params=params)
    assert_error(r, 422, "invalid", field)


# -- service --------------------------------------------------------------------------------


async def test_healthz(store_url: str) -> None:
    """/healthz answers ok and names the kind of store, not its address."""
    async with served(store=store_url) as c:
        r = await c.get("/healthz")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["store"] == store_url.split(":")[0]
    assert "127.0.0.1" not in r.text and "crawl.db" not in r.text


async def test_metrics_count_requests_latency_and_decisions() -> None:
    """/metrics is Prometheus text with requests by route and status, latency, decisions."""
    rng = random.Random(8)
    text = story(rng)
    async with served() as c:
        await c.post("/v1/documents", json={"id": "a", "text": text})
        await c.post("/v1/documents", json={"id": "b", "text": reprint(rng, text)})
        await c.get("/v1/documents/nope")
        await c.post("/v1/documents", content=b"x" * 20, headers={"content-length": "99999999"})
        r = await c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    lines = r.text.splitlines()
    assert (
        'neardup_http_requests_total{method="POST",route="/v1/documents",status="200"} 2' in lines
    )
    assert (
        'neardup_http_requests_total{method="GET",route="/v1/documents/{doc_id}",status="404"} 1'
        in lines
    )
    assert (
        'neardup_http_requests_total{method="POST",route="/v1/documents",status="413"} 1' in lines
    )
    assert 'neardup_http_request_duration_seconds_count{route="/v1/documents"} 3' in lines
    assert (
        'neardup_http_request_duration_seconds_bucket{route="/v1/documents",le="+Inf"} 3' in lines
    )
    assert 'neardup_decisions_total{result="kept"} 1' in lines
    assert 'neardup_decisions_total{result="duplicate"} 1' in lines
    assert "neardup_store_documents 2" in lines and "neardup_store_kept 1" in lines
    for line in lines:  # every sample is "name{labels} number"
        if not line.startswith("#"):
            float(line.rsplit(" ", 1)[1])
    assert not any("neardup_decider_" in line for line in lines)  # one process: no decider


def test_metrics_add_up_what_the_decider_decided(tmp_path: Path) -> None:
    """The deciding process of ``--workers`` counts its batches, their documents and the
    seconds it spent deciding them in the folder the workers share; a worker's /metrics adds
    them to its own."""
    from neardup.service._metrics import Metrics

    worker = Metrics()
    worker.share(str(tmp_path))
    deciding = (  # another process, as the decider is
        "import sys\nfrom neardup.service._metrics import Metrics\n"
        "m = Metrics()\nm.share(sys.argv[1])\nm.batch(3, 0.004)\nm.batch(2, 0.002)\nm.write()\n"
    )
    subprocess.run([sys.executable, "-c", deciding, str(tmp_path)], check=True)
    lines = worker.render().splitlines()
    assert "neardup_decider_batches_total 2" in lines
    assert "neardup_decider_documents_total 5" in lines
    [busy] = [ln for ln in lines if ln.startswith("neardup_decider_busy_seconds_total ")]
    assert float(busy.split()[1]) == pytest.approx(0.006)


async def test_unknown_paths_and_methods_are_json_errors() -> None:
    """404 for an unknown path and 405 for a wrong method, both as JSON."""
    async with served() as c:
        assert_error(await c.get("/v1/nothing"), 404, "not_found")
        assert_error(await c.put("/v1/documents/a", json={}), 405, "method_not_allowed")
        assert_error(await c.get("/static/../app.py"), 404, "not_found")


# -- security -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}, {"Authorization": "Basic x"}],
)
async def test_writes_need_the_key(headers: dict) -> None:
    """With a key, adding, batch adding and deleting without it (or with a wrong one) is 401."""
    doc = {"id": "a", "text": "一段正文。"}
    async with served(api_key=KEY) as c:
        for r in (
            await c.post("/v1/documents", json=doc, headers=headers),
            await c.post("/v1/documents:batch", json={"documents": [doc]}, headers=headers),
            await c.delete("/v1/documents/a", headers=headers),
        ):
            assert_error(r, 401, "unauthorized")
            assert r.headers["www-authenticate"] == "Bearer"
        assert (await c.get("/v1/documents/a")).status_code == 404  # nothing was added


async def test_with_the_key_writes_work_and_reads_need_none() -> None:
    """The right key lets writes through; check, compare, reads and the page need no key."""
    doc = {"id": "a", "text": "一段正文。"}
    async with served(api_key=KEY) as c:
        assert (await c.post("/v1/documents", json=doc, headers=AUTH)).status_code == 200
        r = await c.post("/v1/documents:batch", json={"documents": [doc]}, headers=AUTH)
        assert r.status_code == 200
        assert (await c.post("/v1/check", json=doc)).status_code == 200
        assert (await c.post("/v1/compare", json={"a": "x", "b": "y"})).status_code == 200
        assert (await c.get("/v1/documents/a")).status_code == 200
        assert (await c.get("/v1/clusters")).status_code == 200
        assert (await c.get("/v1/clusters/a")).status_code == 200
        assert (await c.get("/")).status_code == 200
        assert (await c.delete("/v1/documents/a", headers=AUTH)).status_code == 200


async def test_the_key_is_checked_before_the_body() -> None:
    """Without the key, even a malformed body is 401 (nothing about the body leaks)."""
    async with served(api_key=KEY) as c:
        r = await c.post("/v1/documents", json={"id": 1})
    assert_error(r, 401, "unauthorized")


@pytest.mark.parametrize(
    ("allowed", "host", "status"),
    [
        ((), "neardup", 400),
        ((), "localhost:8000", 200),
        (("neardup",), "neardup", 200),
        (("neardup",), "neardup.evil.example", 400),
        (("*",), "anything.example", 200),
        (("0.0.0.0",), "192.168.1.20:8000", 200),
        (("0.0.0.0",), "nas.local", 400),
    ],
)
async def test_create_app_answers_only_the_allowed_hosts(
    allowed: tuple[str, ...], host: str, status: int
) -> None:
    """create_app(allowed_hosts=) adds Host names to the loopback ones; others are a 400."""
    async with served(allowed_hosts=allowed) as c:
        r = await c.get("/v1/clusters", headers={"Host": host})
    assert r.status_code == status, r.text
    if status == 400:
        assert_error(r, 400, "bad_host")


@pytest.mark.parametrize("bad", ["a b", "http://x/", "", "x:y"])
def test_create_app_refuses_a_malformed_allowed_host(bad: str) -> None:
    """An allowed host that is no host name or address is a ValueError at once."""
    with pytest.raises(ValueError, match="is not a host name"):
        create_app(allowed_hosts=[bad])


async def test_every_response_says_nosniff(tmp_path: Path) -> None:
    """X-Content-Type-Options: nosniff on every answer, errors of every layer included (a
    browser never runs a stored text as a script or a page); the page keeps its CSP."""
    async with served(max_body=100) as c:
        answers = [
            await c.get("/v1/clusters"),
            await c.get("/"),
            await c.get("/static/page.js"),
            await c.get("/openapi.json"),
            await c.get("/docs"),
            await c.get("/metrics"),
            await c.get("/healthz"),
            await c.get("/v1/nothing"),
            await c.put("/v1/documents/a"),
            await c.post("/v1/compare", json={"a": "x" * 100, "b": "y"}),
            await c.post("/v1/compare", json={"a": "x"}),
            await c.get("/healthz", headers={"Host": "attacker.example"}),
        ]
        assert [r.status_code for r in answers] == [*[200] * 7, 404, 405, 413, 422, 400]
        assert "default-src 'self'" in answers[1].headers["content-security-policy"]
    dd = Deduper(store=f"sqlite:///{tmp_path / 'x.db'}")
    app = create_app(dd)
    dd.close()
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        answers.append(await c.get("/v1/clusters"))
    assert answers[-1].status_code == 500
    for r in answers:
        assert r.headers.get("x-content-type-options") == "nosniff", (r.request.url, r.headers)


async def test_openapi_declares_the_key_on_writes_only() -> None:
    """With a key the OpenAPI document puts Bearer security and 401 on writes, not reads."""
    app = create_app(api_key=KEY)
    doc = app.openapi()
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    secured = {
        (path, method)
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
        if op.get("security")
    }
    assert secured == {
        ("/v1/documents", "post"),
        ("/v1/documents:batch", "post"),
        ("/v1/documents/{doc_id}", "delete"),
    }
    for path, method in secured:
        assert "401" in doc["paths"][path][method]["responses"]
    assert "securitySchemes" not in create_app().openapi().get("components", {})


# -- limits and failures --------------------------------------------------------------------


async def test_bodies_over_the_limit_are_413() -> None:
    """Over max_body: 413 by Content-Length, and for a chunked body once too much arrives."""
    async with served(max_body=1000) as c:
        ok = await c.post("/v1/compare", json={"a": "x" * 400, "b": "y" * 400})
        assert ok.status_code == 200
        r = await c.post("/v1/compare", json={"a": "x" * 600, "b": "y" * 600})
        assert "1,000 bytes" in assert_error(r, 413, "too_large")["message"]

        async def chunks() -> AsyncIterator[bytes]:
            yield b'{"a": "'
            for _ in range(20):
                yield b"x" * 100
            yield b'", "b": "y"}'

        r = await c.post(
            "/v1/compare", content=chunks(), headers={"content-type": "application/json"}
        )
        assert_error(r, 413, "too_large")


async def test_the_default_limit_is_10_mb() -> None:
    """The default limit takes a 9 MB document and refuses an 11 MB one."""
    async with served() as c:
        ok = await c.post("/v1/check", json={"id": "a", "text": "新闻" * 1_500_000})
        assert ok.status_code == 200
        r = await c.post("/v1/check", json={"id": "a", "text": "新闻" * 1_900_000})
    assert_error(r, 413, "too_large")


async def test_an_internal_error_is_json_without_a_traceback(tmp_path: Path) -> None:
    """A failure inside (here a store closed under the service) is a JSON 500, no traceback."""
    dd = Deduper(store=f"sqlite:///{tmp_path / 'x.db'}")
    app = create_app(dd)
    dd.close()
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        r = await c.post("/v1/documents", json={"id": "a", "text": "正文。"})
    assert_error(r, 500, "internal")
    assert "sqlite" not in r.text.lower() and "closed" not in r.text


@pytest.fixture
def lone_redis(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A redis-server of the test's own, to be stopped by the test."""
    proc, url = start_redis_server(tmp_path)
    yield url, proc
    proc.kill()
    proc.wait()


async def test_a_store_that_went_away_is_503(
    lone_redis: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """When Redis stops, writes, reads and /healthz answer 503 as JSON; /metrics still works."""
    url, proc = lone_redis
    async with served(store=url) as c:
        assert (await c.get("/healthz")).status_code == 200
        proc.kill()
        proc.wait()
        assert_error(
            await c.post("/v1/documents", json={"id": "a", "text": "正文。"}), 503, "unavailable"
        )
        assert_error(await c.get("/v1/clusters"), 503, "unavailable")
        assert_error(await c.get("/healthz"), 503, "unavailable")
        assert (await c.get("/metrics")).status_code == 200


# -- the page's files -----------------------------------------------------------------------


async def test_the_page_and_its_files_are_served_locally() -> None:
    """/ is the page, with a strict CSP; its script and style come from this service only."""
    async with served() as c:
        page = await c.get("/")
        js = await c.get("/static/page.js")
        css = await c.get("/static/page.css")
        assert_error(await c.get("/static/nothing.js"), 404, "not_found")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert js.headers["content-type"].startswith("text/javascript")
    assert css.headers["content-type"].startswith("text/css")
    for r in (page, js, css):  # no CDN, no fonts or scripts from elsewhere
        assert "http://" not in r.text and "https://" not in r.text and "//cdn" not in r.text
    assert "innerHTML" not in js.text  # crawled texts are inserted as text, never as HTML


@pytest.mark.anyio
@pytest.mark.parametrize("decider", [None, "decider.sock"])
async def test_a_service_reads_its_stores_chrome_as_it_starts_where_it_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decider: str | None
) -> None:
    """The process that decides reads the chrome its store has learned as it starts, not in
    its first request (which waited up to some 0.6 s for it); a worker of `serve --workers`,
    which sends what it is asked to its decider, reads none (the decider does)."""
    url = f"sqlite:///{tmp_path / 'crawl.db'}"
    rng = random.Random(7)
    with Deduper(store=url) as dd:
        dd.check_and_add_many([(f"d{i}", story(rng)) for i in range(20)])
    where = str(tmp_path / decider) if decider else None
    app = create_app(store=url, decider=where)
    store = app.state.service.deduper.store
    loads: list[object] = []
    load_common = store.load_common

    def counted() -> object:
        loads.append(1)
        return load_common()

    monkeypatch.setattr(store, "load_common", counted)
    async with app.router.lifespan_context(app):  # the service starts, and stops after
        assert loads == ([] if decider else [1])
        if decider is None:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
                r = await c.post("/v1/documents", json={"id": "new", "text": story(rng)})
            assert r.status_code == 200 and loads == [1]
