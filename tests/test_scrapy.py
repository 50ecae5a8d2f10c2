"""The Scrapy add-on: real ``scrapy crawl`` runs of the example project over a local news web
(tests/scrapy_site: three sites reprinting the same stories under their own URLs, menus and
footers), alone, as a fleet of two processes on one real Redis, in annotate mode, and
incrementally; settings validation; and the pipeline's parts without a crawler."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("scrapy")
pytest.importorskip("trafilatura")

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

import neardup.scrapy as scrapy_module
from neardup.engine.templates import CommonShingles
from neardup.errors import ConfigError, InputError
from neardup.scrapy import (
    Job,
    NearDupAddon,
    NearDupPipeline,
    Options,
    Worker,
    default_store,
    shown_id,
)
from neardup.times import timestamp_or_none

from .conftest import free_port, refusing_port
from .scrapy_site import build, serve
from .scrapy_site.stories import STORIES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "scrapy_project"
ARTICLES = len(STORIES) * 3  # every story on each of the three sites
KEYS = {s.key for s in STORIES}


@dataclass
class Site:
    url: str
    story_of: dict[str, str]  # article path -> story key ("" for the video page)

    def story(self, url: str) -> str:
        return self.story_of[url.removeprefix(self.url)]


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """The local news web, served on loopback for the module."""
    pages, story_of = build()
    with serve(pages) as url:
        yield Site(url, story_of)


@dataclass
class Crawl:
    returncode: int
    log: str
    items: list[dict[str, object]]

    @property
    def stats(self) -> dict[str, int]:
        return {k: int(v) for k, v in re.findall(r"'(neardup/[\w/]+)': (\d+)", self.log)}


def _command(start_url: str, out: Path, settings: dict[str, str]) -> list[str]:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={start_url}"]
    cmd += ["-O", str(out), "-s", "TELNETCONSOLE_ENABLED=False"]
    for key, value in {"LOG_LEVEL": "INFO", **settings}.items():
        cmd += ["-s", f"{key}={value}"]
    return cmd


def _finish(out: Path, returncode: int, log: str) -> Crawl:
    lines = out.read_text("utf-8").splitlines() if out.exists() else []
    return Crawl(returncode, log, [json.loads(line) for line in lines])


def crawl(start_url: str, out: Path, **settings: str) -> Crawl:
    """Run the example project's spider from ``start_url``; its feed goes to ``out``."""
    proc = subprocess.run(
        _command(start_url, out, settings),
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return _finish(out, proc.returncode, proc.stderr)


def assert_each_story_kept(site: Site, urls: list[str]) -> int:
    """Each story's kept pages (``urls``, in the order they were decided): one, or two when
    site c's cut reprint came first — the full page after it brings the paragraph the cut
    dropped, and is kept as extending it. Returns how many pages are kept."""
    by_story: dict[str, list[str]] = {}
    for u in urls:
        by_story.setdefault(site.story(u), []).append(u)
    assert set(by_story) == {*KEYS, ""}  # the video page keeps its menu
    for key, kept in by_story.items():
        assert len(kept) in (1, 2), (key, kept)
        if len(kept) == 2:
            assert "/c/" in kept[0] and "/c/" not in kept[1], (key, kept)
    return len(urls)


def test_crawl_keeps_each_story_once(site: Site, tmp_path: Path) -> None:
    """One crawl of three sites that reprint each other keeps every story once, by the
    main text of the page (menus, sidebars and footers differ), and says so — or twice,
    when a cut reprint came before the full story, which brings text of its own."""
    run = crawl(site.url + "/", tmp_path / "out.jsonl", LOG_LEVEL="DEBUG")
    assert run.returncode == 0, run.log[-3000:]
    kept = assert_each_story_kept(site, [str(item["url"]) for item in run.items])
    extended = kept - len(KEYS) - 1
    assert run.stats["neardup/kept"] == kept
    assert run.stats.get("neardup/extends", 0) == extended
    assert run.stats["neardup/duplicates"] == ARTICLES + 1 - kept
    assert run.stats.get("neardup/errors", 0) == 0
    hint = re.findall(r"INFO: neardup: dropped (\S+), a near-duplicate of (\S+) ", run.log)
    assert len(hint) == 1 and site.story(hint[0][0]) == site.story(hint[0][1])
    assert "LOG_LEVEL = 'DEBUG' shows them" in run.log
    rest = re.findall(r"DEBUG: neardup: (\S+) is a near-duplicate of (\S+) ", run.log)
    assert len(rest) == ARTICLES + 1 - kept - 1
    assert all(site.story(a) == site.story(b) for a, b in rest)
    extends = re.findall(r"DEBUG: neardup: kept (\S+), which extends (\S+) ", run.log)
    assert len(extends) == extended
    assert all(site.story(a) == site.story(b) for a, b in extends)
    assert f"INFO: neardup: kept {kept}, duplicates {ARTICLES + 1 - kept}, errors 0" in run.log


def test_fleet_on_redis_keeps_each_story_once(site: Site, tmp_path: Path, redis_url: str) -> None:
    """Two crawler processes at once, each crawling every site, share one Redis: between
    them each story is kept once (a page the other process kept is a copy too)."""
    procs = []
    for n in (1, 2):
        out = tmp_path / f"out{n}.jsonl"
        cmd = _command(site.url + "/", out, {"NEARDUP_STORE": redis_url})
        procs.append((out, subprocess.Popen(cmd, cwd=EXAMPLE, stderr=subprocess.PIPE, text=True)))
    runs = []
    for out, proc in procs:
        _, err = proc.communicate(timeout=600)
        runs.append(_finish(out, proc.returncode, err))
    for run in runs:
        assert run.returncode == 0, run.log[-3000:]
        assert run.stats.get("neardup/kept", 0) + run.stats["neardup/duplicates"] == ARTICLES + 1
    kept = Counter(site.story(str(item["url"])) for run in runs for item in run.items)
    assert set(kept) == {*KEYS, ""} and set(kept.values()) <= {1, 2}
    for key, n in kept.items():  # twice only when a cut reprint came first
        urls = [
            str(i["url"]) for run in runs for i in run.items if site.story(str(i["url"])) == key
        ]
        assert n == 1 or any("/c/" in u for u in urls), (key, urls)
    assert sum(run.stats.get("neardup/kept", 0) for run in runs) == sum(kept.values())


def test_annotate_mode_marks_copies_and_passes_textless_items(site: Site, tmp_path: Path) -> None:
    """annotate keeps every item, marking copies with the page they repeat and the score;
    here the text field is compared, on a worker thread, and the video page, with no text,
    passes through undecided and is counted."""
    run = crawl(
        site.url + "/",
        tmp_path / "out.jsonl",
        NEARDUP_MODE="annotate",
        NEARDUP_HTML_FIELD="",
        NEARDUP_WORKER="thread",
    )
    assert run.returncode == 0, run.log[-3000:]
    assert len(run.items) == ARTICLES + 1
    by_story: dict[str, list[dict[str, object]]] = {}
    for item in run.items:
        by_story.setdefault(site.story(str(item["url"])), []).append(item)
    (video,) = by_story.pop("")
    assert "neardup_duplicate_of" not in video
    kept = 0
    for key, items in by_story.items():
        originals = [it for it in items if it["neardup_duplicate_of"] is None]
        new = [it for it in originals if it["neardup_extends"] is None]
        assert len(new) == 1, key
        assert new[0]["neardup_score"] == 0.0
        kept += len(originals)
        for it in items:
            if it["neardup_duplicate_of"] is not None:
                assert site.story(str(it["neardup_duplicate_of"])) == key
                assert 0.6 <= float(str(it["neardup_score"])) <= 1.0
            if it["neardup_extends"] is not None:  # kept, with text of its own
                assert site.story(str(it["neardup_extends"])) == key
                assert 0.6 <= float(str(it["neardup_score"])) <= 1.0
    assert run.stats["neardup/kept"] == kept
    assert run.stats["neardup/duplicates"] == ARTICLES - kept
    assert run.stats["neardup/errors"] == run.stats["neardup/errors/no_text"] == 1
    assert "INFO: neardup: marked " in run.log
    assert "WARNING: neardup: item passed through undecided" in run.log
    assert "field 'text' holds no text" in run.log


def test_jobdir_store_remembers_the_stories_for_the_next_crawl(site: Site, tmp_path: Path) -> None:
    """With JOBDIR the store is a SQLite file in it; the next crawl of the same sites with
    that store finds only copies (every page is a copy of what it was yesterday)."""
    jobdir = tmp_path / "job"
    first = crawl(site.url + "/", tmp_path / "1.jsonl", JOBDIR=str(jobdir))
    assert first.returncode == 0, first.log[-3000:]
    kept = assert_each_story_kept(site, [str(item["url"]) for item in first.items])
    assert first.stats["neardup/kept"] == kept
    db = jobdir / "neardup.db"
    assert db.exists()
    second = crawl(site.url + "/", tmp_path / "2.jsonl", NEARDUP_STORE=f"sqlite:///{db}")
    assert second.returncode == 0, second.log[-3000:]
    assert second.items == []
    assert second.stats["neardup/duplicates"] == ARTICLES + 1


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"NEARDUP_STORE": "ftp://example/x"},
            "neardup.errors.ConfigError: NEARDUP_STORE = 'ftp://example/x': unknown store URL "
            "'ftp://example/x': use memory://, sqlite:///path/to/file.db or redis://host:port/db",
        ),
        (
            {"NEARDUP_THRESHOLD": "2"},
            "neardup.errors.ConfigError: NEARDUP_THRESHOLD must be in (0, 1], got '2'",
        ),
        (
            {"NEARDUP_SET": '{"common_after": "many"}'},
            "neardup.errors.ConfigError: NEARDUP_SET: common_after takes a whole number (int), "
            "not 'many'",
        ),
    ],
    ids=["store", "threshold", "set"],
)
def test_bad_setting_stops_the_crawl_with_one_line(
    site: Site, tmp_path: Path, settings: dict[str, str], message: str
) -> None:
    """A wrong NEARDUP_* setting ends `scrapy crawl` before any request, with one line that
    names it — not asyncio's "Task exception was never retrieved" and a traceback."""
    run = crawl(site.url + "/", tmp_path / "out.jsonl", **settings)
    assert run.returncode != 0
    last = run.log.strip().splitlines()[-1]
    assert last.endswith(f"[neardup.scrapy] ERROR: {message}")
    assert "Traceback" not in run.log and "Task exception" not in run.log
    assert run.log.count("ConfigError") == 1
    assert "Crawled" not in run.log and run.items == []


def test_example_demo_site(tmp_path: Path) -> None:
    """The example project, as its README runs it, keeps its demo web's two stories once."""
    for _ in range(5):  # a port another process took before the site bound it: another one
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "demo_site.py", "--port", str(port)],
            cwd=EXAMPLE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert server.stdout is not None
        if "serving" in server.stdout.readline():
            break
        server.wait(timeout=30)
    try:
        assert server.poll() is None, "the demo site did not start"
        run = crawl(f"http://127.0.0.1:{port}/", tmp_path / "out.jsonl")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert run.returncode == 0, run.log[-3000:]
    assert sorted(str(it["title"]) for it in run.items) == [
        "Electric ferry enters service on the bay",
        "古城元宵灯会吸引十万游客",
    ]
    assert run.stats == {"neardup/kept": 2, "neardup/duplicates": 2}


def test_example_demo_site_and_the_service_do_not_share_a_port() -> None:
    """The demo web listens on 8300 and the spider starts there; ``neardup serve`` on 8000."""
    from neardup.cli import build_parser

    demo = (EXAMPLE / "demo_site.py").read_text("utf-8")
    spider = (EXAMPLE / "newsdedup" / "spiders" / "news.py").read_text("utf-8")
    assert "default=8300" in demo and '"http://127.0.0.1:8300/"' in spider
    serve = build_parser().parse_args(["serve"])
    assert serve.port == 8000
    assert not (EXAMPLE / "crawl").exists()  # a profiler dump once committed by mistake


# -- settings, without a crawl ------------------------------------------------------------


def crawler_with(settings: dict[str, object]) -> Crawler:
    """A real crawler with these settings (Scrapy 2.13 wants a reactor installed first)."""
    from twisted.internet import reactor  # noqa: F401  (installs the default one if none is)

    return get_crawler(settings_dict=settings)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"NEARDUP_STORE": "ftp://x"}, "NEARDUP_STORE = 'ftp://x': unknown store URL"),
        ({"NEARDUP_STORE": "sqlite:///no/such/folder/x.db"}, "NEARDUP_STORE = 'sqlite:"),
        ({"NEARDUP_MODE": "delete"}, "NEARDUP_MODE must be 'drop' or 'annotate'"),
        ({"NEARDUP_WORKER": "fiber"}, "NEARDUP_WORKER must be 'process' or 'thread'"),
        ({"NEARDUP_WINDOW": "soon"}, "NEARDUP_WINDOW: window must be a number of seconds"),
        ({"NEARDUP_WINDOW": "-3d"}, "NEARDUP_WINDOW"),
        ({"NEARDUP_THRESHOLD": "1.5"}, "NEARDUP_THRESHOLD must be in (0, 1], got '1.5'"),
        ({"NEARDUP_THRESHOLD": "high"}, "NEARDUP_THRESHOLD must be a number"),
        ({"NEARDUP_TITLE_THRESHOLD": 0}, "NEARDUP_TITLE_THRESHOLD must be in (0, 1]"),
        ({"NEARDUP_TEXT_FIELD": ""}, "NEARDUP_TEXT_FIELD must name an item field"),
        ({"NEARDUP_ID_FIELD": 3}, "NEARDUP_ID_FIELD must be a field name"),
    ],
)
def test_bad_settings_are_clear_errors(settings: dict[str, object], message: str) -> None:
    """Each wrong NEARDUP_* setting is a ConfigError naming the setting and the value."""
    crawler = crawler_with(settings)
    with pytest.raises(ConfigError) as info:
        NearDupPipeline.from_crawler(crawler)
    assert message in str(info.value)


def test_unreachable_redis_is_a_clear_error() -> None:
    """A Redis nobody listens on is a ConfigError at start-up, naming the setting."""
    with refusing_port() as port:
        url = f"redis://127.0.0.1:{port}/0"
        with pytest.raises(ConfigError, match=f"NEARDUP_STORE = '{url}': cannot reach Redis"):
            NearDupPipeline.from_crawler(crawler_with({"NEARDUP_STORE": url}))


@pytest.mark.parametrize(
    ("secret", "shown"),
    [(":s3cret@", ":***@"), ("?ssl_password=s3cret", "?ssl_password=***")],
    ids=["password", "ssl_password"],
)
def test_an_unreachable_redis_is_named_without_its_secrets(secret: str, shown: str) -> None:
    """The error names the store as every part of neardup does (neardup.store.redacted)."""
    with refusing_port() as port:
        url = (  # (ssl_password: a TLS connection's option, given to redis-py)
            f"redis://{secret}127.0.0.1:{port}/0"
            if "@" in secret
            else f"rediss://127.0.0.1:{port}/0{secret}"
        )
        with pytest.raises(ConfigError) as info:
            NearDupPipeline.from_crawler(crawler_with({"NEARDUP_STORE": url}))
    assert "s3cret" not in str(info.value)
    assert f"NEARDUP_STORE = '{url.replace(secret, shown)}': cannot reach Redis" in str(info.value)


def test_settings_reach_the_pipeline(tmp_path: Path) -> None:
    """The NEARDUP_* settings become the pipeline's fields, thresholds, window and store."""
    crawler = crawler_with(
        {
            "NEARDUP_STORE": f"sqlite:///{tmp_path / 'x.db'}",
            "NEARDUP_TEXT_FIELD": "body",
            "NEARDUP_TITLE_FIELD": "headline",
            "NEARDUP_ID_FIELD": "link",
            "NEARDUP_TIMESTAMP_FIELD": "published",
            "NEARDUP_WINDOW": "90d",
            "NEARDUP_THRESHOLD": "0.7",
            "NEARDUP_TITLE_THRESHOLD": 0.8,
            "NEARDUP_MODE": "annotate",
            "NEARDUP_WORKER": "thread",
        }
    )
    p = NearDupPipeline.from_crawler(crawler)
    try:
        assert (p.text_field, p.title_field, p.id_field) == ("body", "headline", "link")
        assert p.timestamp_field == "published" and p.html_field is None
        assert p.mode == "annotate" and p.worker == "thread" and p.stats is crawler.stats
        assert p.options == Options(f"sqlite:///{tmp_path / 'x.db'}", False, 90 * 86400, 0.7, 0.8)
        assert (tmp_path / "x.db").exists()  # opened at start-up, to fail then if it must
    finally:
        p.close()


def test_disabled_and_default_store(tmp_path: Path) -> None:
    """NEARDUP_ENABLED = False switches the pipeline off; without NEARDUP_STORE the store
    is memory, or a SQLite file in JOBDIR (created if missing)."""
    with pytest.raises(NotConfigured):
        NearDupPipeline.from_crawler(crawler_with({"NEARDUP_ENABLED": "False"}))
    assert default_store(None) == "memory://"
    jobdir = tmp_path / "new" / "job"
    assert default_store(str(jobdir)) == f"sqlite:///{jobdir}/neardup.db"
    assert jobdir.is_dir()
    p = NearDupPipeline.from_crawler(crawler_with({"JOBDIR": str(jobdir)}))
    p.close()
    assert (jobdir / "neardup.db").exists()


def test_addon_installs_the_pipeline() -> None:
    """The add-on puts the pipeline in ITEM_PIPELINES, unless the project placed it."""
    settings = Settings()
    NearDupAddon().update_settings(settings)
    assert settings.getdict("ITEM_PIPELINES") == {"neardup.scrapy.NearDupPipeline": 200}
    placed = Settings({"ITEM_PIPELINES": {"neardup.scrapy.NearDupPipeline": 800}})
    NearDupAddon().update_settings(placed)
    assert placed.getdict("ITEM_PIPELINES") == {"neardup.scrapy.NearDupPipeline": 800}


# -- the pipeline's parts -----------------------------------------------------------------


def test_worker_decides_batches_like_one_by_one() -> None:
    """The worker's decisions on a batch are those of one by one; reprints are found in
    either language, and a page whose HTML has no main text is reported, not fatal."""
    zh = "青州市轨道交通五号线今天上午正式开通运营，这条线路全长28.6公里，共设车站21座，连接高新区和老城区。"
    en = (
        "The Old Mill Bridge over the Tamber River reopened to traffic on Saturday after a "
        "two-year reconstruction that replaced its rusting steel deck and widened it."
    )
    docs = [("a", zh), ("b", en), ("c", "转载：" + zh), ("d", "UPDATE: " + en)]
    jobs = [Job(f"{i} @0123456789-{n}", t, None, None, None) for n, (i, t) in enumerate(docs)]
    text = Options("memory://", False, None, 0.6, 0.75)
    batch, one = Worker(text), Worker(text)
    try:
        together = batch.decide(jobs)
        alone = [one.decide([job])[0] for job in jobs]
        assert together == alone
        dups = [getattr(d, "duplicate_of", None) for d in together]
        assert [None if d is None else shown_id(d) for d in dups] == [None, None, "a", "b"]
    finally:
        batch.close()
        one.close()
    html = Worker(Options("memory://", True, None, 0.6, 0.75))
    try:
        page = "<html><body><article><p>" + en + "</p></article></body></html>"
        out = html.decide(
            [
                Job("p1 @0123456789-1", None, page, None, None),
                Job("p2 @0123456789-2", None, "<html></html>", None, None),
                Job("p3 @0123456789-3", None, page.replace("Saturday", "Sunday"), None, None),
            ]
        )
        assert getattr(out[0], "is_duplicate", None) is False
        assert getattr(out[1], "reason", None) == "no_text"
        assert getattr(out[2], "duplicate_of", None) == "p1 @0123456789-1"
    finally:
        html.close()


def test_a_crowded_chrome_table_is_logged_when_the_crawl_ends(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A store whose chrome table counted two stories a slot on average (before its guard
    turned: a store of an earlier version) is named in a warning when the pipeline closes
    (a thread worker, and the worker process's own close, run here in this process),
    saying it is forgotten as the guard turns; a table of a few stories says nothing."""
    assert Worker(Options("memory://", False, None, 0.6, 0.75)).close() is None
    made = CommonShingles.__init__

    def crowded(self: CommonShingles, **kw: object) -> None:
        made(self, **kw)  # type: ignore[arg-type]
        self.counts[:] = 2

    monkeypatch.setattr(CommonShingles, "__init__", crowded)
    pipeline = NearDupPipeline(worker="thread")
    with caplog.at_level(logging.WARNING, logger="neardup.scrapy"):
        pipeline.close()
    (message,) = [r.getMessage() for r in caplog.records if "crowded" in r.getMessage()]
    assert message.startswith("neardup: the chrome table is crowded: 2.00 stories a slot")
    assert "until the guard has turned twice more (chrome_window=0.36" in message

    scrapy_module._worker = Worker(Options("memory://", False, None, 0.6, 0.75))
    note = scrapy_module._close_worker()
    assert note is not None and "2.00 stories a slot" in note and scrapy_module._worker is None


def test_item_fields_are_read_as_documented() -> None:
    """A list of strings is one text; a missing or empty text, or a timestamp that is not
    a time, makes the item unusable; items without an id get one."""
    p = NearDupPipeline(timestamp_field="ts", title_field="title")
    try:
        from itemadapter import ItemAdapter

        job = p._job(ItemAdapter({"url": "u1", "text": ["第一段", "second"], "title": "T"}))
        assert isinstance(job, Job) and job.text == "第一段\nsecond" and job.title == "T"
        assert shown_id(job.id) == "u1"
        nameless = p._job(ItemAdapter({"text": "x"}))
        assert isinstance(nameless, Job) and shown_id(nameless.id).startswith("item-")
        assert getattr(p._job(ItemAdapter({"url": "u"})), "reason", None) == "no_text"
        assert getattr(p._job(ItemAdapter({"text": "  "})), "reason", None) == "no_text"
        assert getattr(p._job(ItemAdapter({"text": 5})), "reason", None) == "no_text"
        raw = p._job(ItemAdapter({"url": "u", "text": b"<html>...</html>"}))
        assert "u: field 'text' holds bytes, not a string" in getattr(raw, "message", "")
        assert getattr(p._job(ItemAdapter({"text": "<p></p>&nbsp;"})), "reason", None) == "no_text"
        bad = p._job(ItemAdapter({"text": "x", "ts": "yesterday"}))
        assert getattr(bad, "reason", None) == "bad_timestamp"
    finally:
        p.close()


def test_dotted_field_settings_read_nested_item_fields() -> None:
    """``NEARDUP_TEXT_FIELD = "article.body"`` reads a nested field, as ``--text-field``
    does for dedup (it read a field of that whole name, so every item was 'missing'); a
    field whose own name holds the dots wins."""
    from itemadapter import ItemAdapter

    p = NearDupPipeline(
        id_field="meta.url",
        text_field="article.body",
        title_field="article.title",
        timestamp_field="meta.fetched",
    )
    try:
        item = {
            "meta": {"url": "u1", "fetched": "2024-05-01"},
            "article": {"body": "第一段", "title": "T"},
        }
        job = p._job(ItemAdapter(item))
        assert isinstance(job, Job) and (job.text, job.title) == ("第一段", "T")
        assert shown_id(job.id) == "u1" and job.timestamp == 1714521600.0
        flat = p._job(ItemAdapter({"article.body": "flat", "article": {"body": "nested"}}))
        assert isinstance(flat, Job) and flat.text == "flat"
        missing = p._job(ItemAdapter({"meta": {"url": "u2"}, "article": "not an object"}))
        assert "u2: field 'article.body' is missing" in getattr(missing, "message", "")
    finally:
        p.close()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (1_700_000_000, 1_700_000_000.0),
        ("1700000000.5", 1_700_000_000.5),
        ("2024-05-01T08:00:00+08:00", 1714521600.0),
        ("2024-05-01", 1714521600.0),  # no zone: UTC
        (datetime(2024, 5, 1, tzinfo=UTC), 1714521600.0),
        (1_704_412_800_000, 1_704_412_800.0),  # milliseconds, as records and the service read them
        ("Fri, 05 Jan 2024 00:00:00 GMT", 1_704_412_800.0),
        ("20240105", 1_704_412_800.0),
        ("", None),
        (None, None),
    ],
)
def test_timestamps(value: object, seconds: float | None) -> None:
    """Timestamps are read as everywhere else: epoch seconds or milliseconds, ISO 8601 (UTC
    without a zone), compact and HTTP dates, datetimes; blank is none."""
    assert timestamp_or_none(value) == seconds


@pytest.mark.parametrize("value", ["yesterday", True, float("nan"), "nan", [2024]])
def test_bad_timestamps(value: object) -> None:
    """What is not a time is refused with a reason."""
    with pytest.raises(InputError):
        timestamp_or_none(value)
