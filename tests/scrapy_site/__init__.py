"""A small local news web: three sites with their own navigation, sidebars and footers,
each publishing its own edit of every story in :mod:`.stories`, served over HTTP on loopback
for the Scrapy tests (:func:`serve`)."""

from __future__ import annotations

import html
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from .stories import STORIES, reprint

SITES = {
    "a": {
        "name": "The Morning Ledger",
        "nav": ["Home", "World", "Business", "Science", "Sport", "Opinion", "Weather", "Video"],
        "footer": [
            "Copyright The Morning Ledger. All rights reserved. Reproduction without written "
            "permission is prohibited.",
            "Subscribe to our daily newsletter to get the morning's top stories in your inbox "
            "before breakfast. Contact the newsroom, advertise with us, read our privacy policy.",
        ],
    },
    "b": {
        "name": "环球快讯",
        "nav": ["首页", "国内", "国际", "财经", "科技", "体育", "图片", "视频", "评论"],
        "footer": [
            "版权所有 环球快讯网 未经授权禁止转载、摘编、复制或建立镜像，违者必究。",
            "关注我们的微信公众号，第一时间获取最新资讯。举报电话：12345678 广告合作 联系我们",
        ],
    },
    "c": {
        "name": "Coastal Wire 海岸通讯",
        "nav": ["Latest", "Local", "Harbor", "Tide tables", "Obituaries", "Classifieds"],
        "footer": [
            "Coastal Wire is an independent newsroom funded by readers like you. Donate today "
            "and keep local journalism alive on the coast.",
            "© Coastal Wire Media Group. Terms of use. Cookie settings. Site map.",
        ],
    },
}


def article_path(site: str, key: str) -> str:
    """Where ``site`` publishes story ``key``."""
    return f"/{site}/news/{key}.html"


def _page(site: str, title: str, body: str) -> str:
    s = SITES[site]
    nav = "".join(f'<li><a href="/{site}/">{html.escape(n)}</a></li>' for n in s["nav"])
    most_read = "".join(
        f'<li><a href="{article_path(site, st.key)}">{html.escape(st.title)}</a></li>'
        for st in STORIES[:5]
    )
    footer = "".join(f"<p>{html.escape(p)}</p>" for p in s["footer"])
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)} - "
        f"{html.escape(s['name'])}</title></head><body>"
        f"<header><div class='logo'>{html.escape(s['name'])}</div><nav><ul>{nav}</ul></nav></header>"
        f"<main>{body}</main>"
        f"<aside><h3>Most read</h3><ul>{most_read}</ul></aside>"
        f"<footer>{footer}</footer></body></html>"
    )


def build() -> tuple[dict[str, str], dict[str, str]]:
    """The pages by path, and the story key of each article path.

    Also a video page with no text at ``/c/news/video.html`` (its key is ``""``).
    """
    pages: ClassVar[dict[str, str]] = {}
    story_of: dict[str, str] = {}
    links = "".join(
        f'<li><a href="/{s}/">{html.escape(v["name"])}</a></li>' for s, v in SITES.items()
    )
    pages["/"] = f"<!DOCTYPE html><html><body><h1>News</h1><ul>{links}</ul></body></html>"
    for site in SITES:
        items = []
        for story in STORIES:
            title, paras = reprint(story, site)
            text = "".join(f"<p>{html.escape(p)}</p>" for p in paras)
            path = article_path(site, story.key)
            body = f"<article><h1>{html.escape(title)}</h1>{text}</article>"
            pages[path] = _page(site, title, body)
            story_of[path] = story.key
            items.append(f'<li><a href="{path}">{html.escape(title)}</a></li>')
        if site == "c":
            path = "/c/news/video.html"
            pages[path] = _page(site, "Video", "<article><h1>Harbor at dawn</h1></article>")
            story_of[path] = ""
            items.append(f'<li><a href="{path}">Video: harbor at dawn</a></li>')
        pages[f"/{site}/"] = _page(site, SITES[site]["name"], f"<ul>{''.join(items)}</ul>")
    return pages, story_of


class _Handler(BaseHTTPRequestHandler):
    pages: ClassVar[dict[str, str]] = {}

    def do_GET(self) -> None:
        page = self.pages.get(self.path.split("?", 1)[0])
        if page is None:
            self.send_error(404)
            return
        data = page.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def serve(pages: dict[str, str]) -> Iterator[str]:
    """Serve ``pages`` (path -> HTML) on a free loopback port; yields the base URL."""
    handler = type("Handler", (_Handler,), {"pages": pages})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
