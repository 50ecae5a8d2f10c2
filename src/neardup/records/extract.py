"""The main text of an HTML page, as the Scrapy add-on and WARC input extract it: trafilatura,
without its fallback extractors (40 % faster, and the same text on news pages), so menus,
sidebars and footers — which differ from site to site — do not count."""

from __future__ import annotations

import inspect
import logging
from typing import Any, Protocol

from ..errors import MissingDependencyError
from .charsets import decode_html

__all__ = ["Extractor", "main_text_extractor"]


class Extractor(Protocol):
    """A page's main text (None when it has none): HTML as text, or as bytes in the charset
    ``charset`` (an HTTP header's) or the page declares (:mod:`neardup.records.charsets`),
    else in the one trafilatura guesses."""

    def __call__(self, html: str | bytes, charset: str | None = None) -> str | None: ...


def main_text_extractor(needed_for: str) -> Extractor:
    """trafilatura's main-text extraction, or MissingDependencyError that starts with
    ``needed_for``."""
    try:
        import trafilatura
    except ImportError as exc:
        raise MissingDependencyError(needed_for) from exc

    # trafilatura logs several DEBUG lines a page; Scrapy's default LOG_LEVEL shows them all
    quiet = logging.getLogger("trafilatura")
    if quiet.level == logging.NOTSET:
        quiet.setLevel(logging.INFO)

    fast = "fast" if "fast" in inspect.signature(trafilatura.extract).parameters else "no_fallback"
    options: dict[str, Any] = {"include_comments": False, "include_tables": True, fast: True}

    def extract(html: str | bytes, charset: str | None = None) -> str | None:
        if isinstance(html, bytes):
            html = decode_html(html, charset) or html
        return trafilatura.extract(html, **options)

    return extract
