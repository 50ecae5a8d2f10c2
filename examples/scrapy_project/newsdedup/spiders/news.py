"""A spider that follows every link of one site and yields each article it finds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response


class NewsSpider(scrapy.Spider):
    """Crawl from ``start_url`` (``-a start_url=...``), staying on its host; every page with
    an ``<article>`` becomes an item: its URL, headline, the article's text and the page's
    HTML (from which neardup extracts the main text when ``NEARDUP_HTML_FIELD = "html"``)."""

    name = "news"

    def __init__(self, start_url: str = "http://127.0.0.1:8300/", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start_url]
        self.allowed_domains = [urlsplit(start_url).hostname or ""]

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        article = response.css("article")
        if article:
            yield {
                "url": response.url,
                "title": (article.css("h1::text").get() or "").strip(),
                "text": "\n".join(t.strip() for t in article.css("p::text").getall()),
                "html": response.text,
            }
        yield from response.follow_all(css="a")
