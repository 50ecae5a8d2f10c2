"""The page in a real browser (Debian's Chromium driven by Playwright, offline): compare two
texts and see the shared passages highlighted; browse the clusters and open one.

Set NEARDUP_SCREENSHOT=docs/page.png to also save the screenshot the README shows.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("playwright.sync_api")
import httpx
from playwright import sync_api

from tests.service.test_service_api import reprint, story
from tests.service.test_service_serve import Server, serving

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """A service with clusters of 4, 3, 2 and 1 documents."""
    with serving() as s:
        rng = random.Random(30)
        docs = []
        for n, size in enumerate((2, 4, 1, 3)):
            text = story(rng)
            docs.append({"id": f"story-{n}", "text": text, "title": f"第{n}个故事"})
            docs += [
                {"id": f"story-{n}-copy-{k}", "text": reprint(rng, text)} for k in range(size - 1)
            ]
        r = httpx.post(s.url + "v1/documents:batch", json={"documents": docs}, timeout=60)
        assert r.status_code == 200
        yield s


@pytest.fixture
def page(tmp_path: Path, server: Server) -> Iterator[Any]:
    """A fresh headless Chromium page; fails the test on any console error or request to
    another origin."""
    if not os.path.exists(CHROMIUM) or shutil.which("chromium") is None:
        pytest.fail("Chromium is not installed: run scripts/check.sh (apt-get install chromium)")
    problems: list[str] = []
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            pg = context.new_page()
            # an API error (a 404 the page shows) is logged by Chromium; anything else is not
            pg.on(
                "console",
                lambda m: (
                    problems.append(m.text)
                    if m.type == "error" and not m.text.startswith("Failed to load resource")
                    else None
                ),
            )
            pg.on(
                "response",
                lambda r: (
                    problems.append(f"{r.status} for {r.url}")
                    if r.status >= 400 and "/v1/" not in r.url
                    else None
                ),
            )
            pg.on("pageerror", lambda e: problems.append(str(e)))
            pg.on(
                "request",
                lambda r: (
                    None
                    if r.url.startswith((server.url, "data:"))
                    else problems.append(f"request to {r.url}")
                ),
            )
            yield pg
        finally:
            context.close()
    assert problems == []


def _sample() -> dict[str, dict[str, str]]:
    lines = files("neardup").joinpath("data", "sample.jsonl").read_text("utf-8").splitlines()
    return {d["id"]: d for d in map(json.loads, lines)}


def test_compare_two_texts_shows_the_shared_passages(
    page: Any, server: Server, tmp_path: Path
) -> None:
    """Paste two texts, press Compare: every measure and the passages marked in both."""
    sample = _sample()
    a, b = sample["zh-01-orig"]["text"], sample["zh-01-r2"]["text"]
    page.goto(server.url)
    page.fill("#a", a)
    page.fill("#b", b)
    page.click("#compare-btn")
    page.wait_for_selector("#text-a mark")
    expected = httpx.post(server.url + "v1/compare", json={"a": a, "b": b}).json()
    rows = page.locator("#scores tbody tr")
    assert rows.count() == len(expected["scores"])
    assert rows.first.locator("td").first.text_content() == "cosine"
    shown = {
        r.locator("td").nth(0).text_content(): float(r.locator("td").nth(1).text_content())
        for r in rows.all()
    }
    assert shown == {k: round(v, 4) for k, v in expected["scores"].items()}
    passages = expected["passages"]
    assert page.locator("#text-a mark").count() == len(passages)
    assert page.locator("#text-b mark").count() == len(passages)
    first = page.locator('#text-a mark[data-p="0"]').text_content()
    assert first == passages[0]["text"] == page.locator('#text-b mark[data-p="0"]').text_content()
    assert page.locator("#text-a").text_content() == expected["a"]
    page.hover('#text-a mark[data-p="0"]')
    assert page.locator("mark.active").count() == 2  # the passage lights up in both texts
    page.mouse.move(0, 0)
    shot = os.environ.get("NEARDUP_SCREENSHOT") or str(tmp_path / "page.png")
    page.screenshot(path=shot, full_page=True)
    assert Path(shot).stat().st_size > 10_000


def test_a_file_can_be_opened_as_a_text(page: Any, server: Server, tmp_path: Path) -> None:
    """Open a file instead of pasting: its text goes into the box."""
    path = tmp_path / "a.txt"
    path.write_text("北京今天天气晴朗，适合出游。", encoding="utf-8")
    page.goto(server.url)
    page.set_input_files("#file-a", str(path))
    page.wait_for_function("document.getElementById('a').value.length > 0")
    assert page.input_value("#a") == "北京今天天气晴朗，适合出游。"


def test_errors_are_shown_not_thrown(page: Any, server: Server) -> None:
    """An empty comparison still answers; a cluster that does not exist says so."""
    page.goto(server.url + "#cluster/no-such-cluster")
    page.wait_for_selector("#cluster-error:not([hidden])")
    assert "no cluster 'no-such-cluster'" in page.locator("#cluster-error").text_content()


def test_a_malformed_cluster_address_is_shown_not_thrown(page: Any, server: Server) -> None:
    """#cluster/%E0%A4%A is no percent-encoding: the page says so (no uncaught URIError),
    and the next address works again."""
    page.goto(server.url + "#cluster/%E0%A4%A")
    page.wait_for_selector("#cluster-error:not([hidden])")
    shown = page.locator("#cluster-error").text_content()
    assert "%E0%A4%A" in shown and "percent-encod" in shown
    assert page.locator(".member").count() == 0
    page.evaluate("location.hash = '#cluster/story-1'")
    page.wait_for_selector(".member")
    assert page.locator("#cluster-error").is_hidden()


def test_browse_clusters_largest_first_and_open_one(page: Any, server: Server) -> None:
    """The clusters list comes largest first; opening one shows its members side by side,
    the kept one marked, each copy with its score and its shared passages highlighted."""
    page.goto(server.url)
    page.click("#nav-clusters")
    page.wait_for_selector("#cluster-list tbody tr")
    rows = page.locator("#cluster-list tbody tr")
    sizes = [int(r.locator("td").nth(1).text_content()) for r in rows.all()]
    assert sizes == [4, 3, 2, 1]
    assert rows.first.locator("td").nth(3).text_content() == "第1个故事"
    rows.first.click()
    page.wait_for_selector(".member")
    members = page.locator(".member")
    assert members.count() == 4
    assert members.first.get_attribute("data-id") == "story-1"
    assert members.first.locator(".badge.kept").count() == 1
    expected = httpx.get(server.url + "v1/clusters/story-1").json()["members"]
    for k in range(1, 4):
        card = members.nth(k)
        assert card.get_attribute("data-id") == expected[k]["id"]
        assert float(card.locator(".score").text_content()) == expected[k]["score"]
        assert card.locator("mark").count() == len(expected[k]["shared"]) > 0
    # side by side: the cards sit in one row
    boxes = [members.nth(k).bounding_box() for k in range(2)]
    assert boxes[0]["y"] == boxes[1]["y"] and boxes[1]["x"] > boxes[0]["x"]
    members.nth(1).locator("button").click()
    page.wait_for_selector("#text-b mark")
    assert page.url.endswith("#compare")
    assert page.input_value("#a") == expected[0]["text"]
