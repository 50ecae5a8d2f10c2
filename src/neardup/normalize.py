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
import json
import re
import unicodedata
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import xxhash

from . import kernels
from .errors import InputError

__all__ = ["Normalizer", "fold_whitespace", "html_to_text", "looks_like_html", "nfkc", "normalize"]

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
_NEWLINES = re.compile(r"\s*\n\s*")
# Lone surrogates cannot be encoded for the HTML parser or OpenCC; replacing them keeps the
# text usable and the length.
_SURROGATES = re.compile(r"[\ud800-\udfff]")
# C0/C1 control characters other than tab and newline act as whitespace.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _replace_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (UTF-8 refuses only those)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text)
    return text


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


@functools.cache
def _t2s_triggers() -> tuple[re.Pattern[str], frozenset[str]] | None:
    """A pattern that finds the characters without which OpenCC's ``t2s`` leaves a text as
    it is (``data/t2s_triggers.json``, written by ``scripts/t2s_triggers.py`` from OpenCC's
    dictionaries), and those of them past the BMP (the pattern finds every such character:
    a class of a few hundred of them would be searched one by one). None where the installed
    OpenCC's dictionaries are not the ones the file was written from (their xxh3 digests):
    then whole texts are converted."""
    try:
        import opencc

        found = json.loads(
            resources.files("neardup").joinpath("data/t2s_triggers.json").read_text("utf-8")
        )
        share = Path(opencc.__file__).resolve().parent / "clib" / "share" / "opencc"
        for name, digest in found["files"].items():
            if xxhash.xxh3_64_hexdigest((share / name).read_bytes()) != digest:
                return None
        chars = str(found["triggers"])
    except (OSError, ValueError, KeyError, TypeError, ImportError):
        return None
    runs: list[list[int]] = []  # of consecutive code points, for a shorter class
    for c in sorted({ord(c) for c in chars if c <= "\uffff"}):
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    bmp = "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in runs)
    return re.compile(f"[{bmp}\U00010000-\U0010ffff]"), frozenset(c for c in chars if c > "\uffff")


def to_simplified(text: str) -> str:
    """Traditional Chinese folded to Simplified (OpenCC ``t2s``).

    >>> to_simplified("漢語轉換")
    '汉语转换'

    An ASCII text is given back as it is, without OpenCC: its dictionaries hold Chinese
    only, so it cannot change one (most English posts and articles are ASCII). Of any
    other text, OpenCC converts only the lines that hold a character it may change
    (:func:`_t2s_triggers`: one it changes alone, or one a phrase changes, such as 瞭 of
    一目瞭然), all of them in one call: no key of its dictionaries holds a line break, so a
    line converts as it does within the text, and a line without such a character is
    matched only by keys that leave it as it is. A text already simplified has few such
    lines (hkcnews: 1 character in 20 is on one); where they hold half the text, or most of
    the lines read (a traditional text), the text is converted whole.

    >>> to_simplified("一目瞭然\\n北京\\n後來")
    '一目了然\\n北京\\n后来'
    """
    if text.isascii():
        return text
    converter = _opencc("t2s")
    found = _t2s_triggers()
    if found is None:
        return converter.convert(text)  # type: ignore[attr-defined,no-any-return]
    pattern, astral = found
    search, n = pattern.search, len(text)
    spans: list[tuple[int, int]] = []
    taken = 0
    m = search(text)
    while m is not None:
        at = m.start()
        if text[at] > "\uffff" and text[at] not in astral:
            m = search(text, at + 1)
            continue
        lo = text.rfind("\n", 0, at) + 1
        hi = text.find("\n", at)
        hi = n if hi < 0 else hi
        spans.append((lo, hi))
        taken += hi - lo
        if 2 * taken >= n or (len(spans) >= 2 and 4 * taken >= 3 * hi):
            # half the text, or most of what was read, is to convert: all of it at once
            return converter.convert(text)  # type: ignore[attr-defined,no-any-return]
        m = search(text, hi)
    if not spans:
        return text
    lines = converter.convert("\n".join([text[lo:hi] for lo, hi in spans])).split("\n")  # type: ignore[attr-defined]
    out: list[str] = []
    at = 0
    for (lo, hi), line in zip(spans, lines, strict=True):
        out += (text[at:lo], line)
        at = hi
    out.append(text[at:])
    return "".join(out)


# NFKC of one character at a time, for the characters in the blocks that hold nearly every
# compatibility character news text uses (Latin-1 signs, general punctuation, letterlike
# symbols and number forms, CJK symbols and compatibility characters, full-width and
# half-width forms): the ones NFKC changes, and a regex that finds them.
_NFKC_BLOCKS = ((0x00A0, 0x02FF), (0x2000, 0x24FF), (0x3000, 0x33FF), (0xF900, 0xFFEF))


@functools.cache
def _nfkc_chars() -> tuple[dict[str, str], re.Pattern[str]]:
    table = {
        c: n
        for lo, hi in _NFKC_BLOCKS
        for c in map(chr, range(lo, hi + 1))
        if (n := unicodedata.normalize("NFKC", c)) != c
    }
    return table, re.compile("[" + "".join(map(re.escape, sorted(table))) + "]")


# the commonest of them in Chinese and English news, replaced without a search
_NFKC_FREQUENT = tuple(
    (c, unicodedata.normalize("NFKC", c))
    for c in "\uff0c\uff1a\uff08\uff09\uff1b\uff1f\uff01\u00a0\u2026\u3000\uff0f\uff0d"
)


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, faster on text that needs little of it.

    NFKC of a text does not change when one of its characters is replaced by that
    character's own NFKC (both decompose to the same sequence). So the full-width and other
    compatibility characters are replaced one by one, with ``str.replace``, and when the
    result is in NFKC (``unicodedata.is_normalized``), it is the answer; otherwise the
    general algorithm finishes the job.

    >>> nfkc("ＮＥＷＳ，天气（晴）")
    'NEWS,天气(晴)'
    """
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    for c, n in _NFKC_FREQUENT:
        if c in text:
            text = text.replace(c, n)
    if unicodedata.is_normalized("NFKC", text):
        return text
    table, pattern = _nfkc_chars()
    for c in set(pattern.findall(text)):
        text = text.replace(c, table[c])
    if unicodedata.is_normalized("NFKC", text):
        return text
    return unicodedata.normalize("NFKC", text)


def fold_whitespace(text: str) -> str:
    r"""Control characters become spaces, runs of whitespace one space, runs holding a line
    break one line break, and the ends are stripped.

    >>> fold_whitespace("  a \t b\x00c \n\n d ")
    'a b c\nd'
    """
    # The usual case: no whitespace but single spaces inside lines, and line breaks; then only
    # empty lines go. isprintable() is False for controls and for every whitespace but " "
    # (and asked last: a text with a double space, the most common reason to fold, skips it).
    spaced = "  " in text or " \n" in text or "\n " in text or text[:1] == " " or text[-1:] == " "
    plain = not spaced and text.replace("\n", " ").isprintable()
    if plain:
        if "\n\n" not in text and text[:1] != "\n" and text[-1:] != "\n":
            return text
        return "\n".join([line for line in text.split("\n") if line])
    if kernels.wanted(0):  # loaded (a long run): one compiled pass over the characters
        from .kernels import tables

        fold = kernels.load("_text").fold_whitespace
        if text.isascii():  # a byte a character: four times less to copy in and out
            chars = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
            out8 = np.empty(len(chars), dtype=np.uint8)
            n = fold(chars, tables.props_table(), out8)
            return out8[:n].tobytes().decode("ascii")
        cp = tables.code_points(text)
        out = np.empty(len(cp), dtype=np.uint32)
        n = fold(cp, tables.props_table(), out)
        return out[:n].tobytes().decode("utf-32-le", "surrogatepass")
    # otherwise line by line: str.split() splits at the same whitespace as the regex \s
    if not spaced or not text.replace("\n", " ").isprintable():  # (unspaced: not, above)
        text = _CONTROLS.sub(" ", text)
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join([line for line in lines if line])


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
            text = _replace_surrogates(text)
        if self.html:
            if looks_like_html(text):
                text = html_to_text(text)
            elif _ENTITY.search(text):
                text = html.unescape(text)
        if self.width:
            text = nfkc(text)
        if self.case:
            text = text.casefold()
        if self.script:
            text = to_simplified(text)
        if self.whitespace:
            text = fold_whitespace(text)
        return text


DEFAULT_NORMALIZER = Normalizer()


def normalize(text: str) -> str:
    """Apply every normalization step to ``text`` (see :class:`Normalizer`)."""
    return DEFAULT_NORMALIZER(text)
