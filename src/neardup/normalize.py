"""Normalization: the text neardup compares, whatever the page it came in.

HTML becomes text, Unicode is folded to NFKC (full-width letters, digits and punctuation
become half-width), case is folded, runs of whitespace become one space (line breaks are
kept as single newlines so that lines stay lines), and Traditional Chinese is folded to
Simplified.

>>> normalize("<p>ＮＥＷＳ&amp;天氣  預報</p>")
'news&天气 预报'
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from dataclasses import dataclass

from .errors import InputError

__all__ = ["Normalizer", "html_to_text", "looks_like_html", "normalize"]

# Markup, not a "<Company Inc>" mention: a closing tag, a comment or doctype, or a common tag.
_HTML_HINT = re.compile(
    r"</[a-zA-Z][a-zA-Z0-9]*\s*>|<!--|<!doctype|"
    r"<(?:p|br|hr|div|span|a|img|meta|link|article|section|html|body|head|li|ul|ol|table|tr|td|"
    r"h[1-6]|strong|em|b|i|script|style|nav|header|footer)(?:\s[^<>]*)?/?>",
    re.IGNORECASE,
)
_ENTITY = re.compile(r"&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);")
_BLOCK_TAGS = (
    "p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "article", "section",
    "header", "footer", "nav", "blockquote", "pre", "table", "ul", "ol", "dd", "dt", "aside",
)  # fmt: skip
_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "head", "iframe")
_SPACES = re.compile(r"[^\S\n]+")
_NEWLINES = re.compile(r"\s*\n\s*")
# Lone surrogates cannot be encoded for the HTML parser or OpenCC; replacing them keeps the
# text usable and the length.
_SURROGATES = re.compile(r"[\ud800-\udfff]")
# C0/C1 control characters other than tab and newline act as whitespace.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def looks_like_html(text: str) -> bool:
    """Whether ``text`` holds tags or character entities.

    >>> looks_like_html("a <b>bold</b> move"), looks_like_html("<Omnibus Inc> said 3 < 4")
    (True, False)
    """
    return _HTML_HINT.search(text) is not None


def html_to_text(html: str) -> str:
    """The visible text of an HTML page or fragment: tags removed, entities decoded.

    Scripts, styles and the head are dropped; block elements end a line.

    >>> html_to_text("<div>一<script>x()</script></div><p>A &amp; B</p>")
    '一\\nA & B'
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    tree.strip_tags(list(_DROP_TAGS))
    root = tree.body if tree.body is not None else tree.root
    if root is None:
        return ""
    for tag in _BLOCK_TAGS:
        for node in root.css(tag):
            node.insert_after("\n")
    text: str = root.text(separator="", deep=True)
    return _NEWLINES.sub("\n", text).strip()


@functools.lru_cache(maxsize=4)
def _opencc(config: str) -> object:
    import opencc

    return opencc.OpenCC(config)


def to_simplified(text: str) -> str:
    """Traditional Chinese folded to Simplified (OpenCC ``t2s``).

    >>> to_simplified("漢語轉換")
    '汉语转换'
    """
    converter = _opencc("t2s")
    return converter.convert(text)  # type: ignore[attr-defined,no-any-return]


@dataclass(frozen=True, slots=True)
class Normalizer:
    """Which normalization steps to apply; all on by default, ``Normalizer.raw()`` for none.

    >>> Normalizer(script=False)("漢字 ＡＢＣ")
    '漢字 abc'
    """

    html: bool = True
    width: bool = True
    case: bool = True
    whitespace: bool = True
    script: bool = True

    @classmethod
    def raw(cls) -> Normalizer:
        """A normalizer that returns the text unchanged."""
        return cls(html=False, width=False, case=False, whitespace=False, script=False)

    def __call__(self, text: str) -> str:
        if not isinstance(text, str):
            raise InputError(f"text must be a str, not {type(text).__name__}")
        if self.html or self.script:
            text = _SURROGATES.sub("\ufffd", text)
        if self.html:
            if looks_like_html(text):
                text = html_to_text(text)
            elif _ENTITY.search(text):
                text = html.unescape(text)
        if self.width:
            text = unicodedata.normalize("NFKC", text)
        if self.case:
            text = text.casefold()
        if self.script:
            text = to_simplified(text)
        if self.whitespace:
            text = _CONTROLS.sub(" ", text)
            text = _SPACES.sub(" ", text)
            text = _NEWLINES.sub("\n", text).strip()
        return text


DEFAULT_NORMALIZER = Normalizer()


def normalize(text: str) -> str:
    """Apply every normalization step to ``text`` (see :class:`Normalizer`)."""
    return DEFAULT_NORMALIZER(text)
