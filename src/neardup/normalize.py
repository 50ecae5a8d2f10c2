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
import numpy.typing as npt
import xxhash

from . import kernels
from .errors import ConfigError, InputError

__all__ = [
    "Normalizer",
    "fold_whitespace",
    "html_to_text",
    "looks_like_html",
    "nfkc",
    "nfkc_casefold",
    "normalize",
]

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


def _inert(c: str) -> bool:
    """Whether a character of the compiled NFKC-and-case-fold table may become ``c``: of no
    combining class, outside the blocks that hold the characters of combining class 0 that
    compose with the one before them (Indic vowel signs, Tibetan, Myanmar, Hangul jamo,
    Balinese: 0x0900-0x1DFF), in the BMP (a test checks the rule against the Unicode
    data)."""
    return unicodedata.combining(c) == 0 and not 0x0900 <= ord(c) < 0x1E00 and c <= "\uffff"


#: The blocks whose characters the table holds one by one, where their NFKC is inert
#: (ASCII, Latin, Greek and Cyrillic; punctuation, letterlike and number forms, arrows,
#: enclosed alphanumerics, box drawing, shapes and symbols; CJK symbols and punctuation,
#: kana, compatibility jamo, enclosed CJK and compatibility; CJK compatibility, small and
#: vertical forms; half- and full-width forms) ...
_FOLD_BLOCKS = (
    (0x0000, 0x04FF), (0x2000, 0x27BF), (0x3000, 0x33FF), (0xFE10, 0xFE6F), (0xFF00, 0xFFEF),
)  # fmt: skip
#: ... and the ranges of characters that are themselves, checked as the table is made (no
#: decomposition, no case): CJK Unified Ideographs and Extension A, Hangul syllables
_SAME_BMP = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3))
#: and beyond the BMP: CJK Extensions B to G, emoji and pictographs
_SAME_FAR = (
    (0x20000, 0x2A6DF), (0x2A700, 0x2EBEF), (0x30000, 0x3134F),
    (0x1F300, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F900, 0x1FAFF),
)  # fmt: skip
#: the most characters a character of the table becomes (a longer one stays out of it)
_FOLD_MOST = 4

_U32 = npt.NDArray[np.uint32]


def _same(lo: int, hi: int) -> bool:
    """Whether every character from ``lo`` to ``hi`` is its own NFKC and case fold: NFD,
    NFKC and case folding leave them as they are, together (that they are of no combining
    class, a test checks against the Unicode data)."""
    chars = np.arange(lo, hi + 1, dtype="<u4").tobytes().decode("utf-32-le")
    return (
        unicodedata.is_normalized("NFKC", chars)
        and unicodedata.is_normalized("NFD", chars)
        and chars.casefold() == chars
    )


@functools.cache
def _fold_table() -> tuple[_U32, npt.NDArray[np.int32], _U32, _U32]:
    """The table of the compiled :func:`nfkc_casefold` (``kernels._text.nfkc_casefold``
    reads it): for each BMP code point ``c``, ``casefold(NFKC(c))`` if it is one character,
    else ``_MORE + k`` with the characters in ``more[more_at[k]:more_at[k + 1]]``, or
    ``_NONE`` where the table does not hold ``c``; and ``far``, the ranges beyond the BMP
    held as themselves. It holds the characters of :data:`_FOLD_BLOCKS` whose NFKC is
    :func:`_inert` characters (at most :data:`_FOLD_MOST`) and the ranges of
    :data:`_SAME_BMP` and :data:`_SAME_FAR` that :func:`_same` confirms.

    For a text of those characters only, NFKC is character by character: NFKC of a text is
    NFKC of its characters' NFKC one after another, and that string is already in NFKC —
    no character in it is reordered (all of combining class 0) or composed with the one
    before it (none is the second of a composition) — so NFKC leaves it as it is; case
    folding is character by character anyway."""
    compiled = kernels.load("_text")  # (its marks: the table is the kernel's)
    none, more_mark = compiled._NONE, compiled._MORE
    table = np.full(0x10000, none, dtype=np.uint32)
    for lo, hi in _SAME_BMP:
        if _same(lo, hi):
            table[lo : hi + 1] = np.arange(lo, hi + 1, dtype=np.uint32)
    more: list[str] = []
    table[0] = 0  # (NUL is its own, and the separator below)
    codes = [
        c
        for lo, hi in _FOLD_BLOCKS
        for c in range(lo, hi + 1)
        if c > 0 and not 0xD800 <= c <= 0xDFFF
    ]
    # NFKC and case folding of all of them at once: NUL composes with nothing and is no
    # character's NFKC or case fold, so the pieces between NULs are the characters' own
    nfkc = unicodedata.normalize("NFKC", "\0".join(map(chr, codes)))
    inert = [all(map(_inert, piece)) for piece in nfkc.split("\0")]
    for c, ok, folded in zip(codes, inert, nfkc.casefold().split("\0"), strict=True):
        if not ok:
            continue
        if len(folded) == 1:
            table[c] = ord(folded)
        elif len(folded) <= _FOLD_MOST:
            table[c] = more_mark + len(more)
            more.append(folded)
    more_at = np.zeros(len(more) + 1, dtype=np.int32)
    np.cumsum([len(m) for m in more], out=more_at[1:])
    chars = np.array([ord(x) for m in more for x in m], dtype=np.uint32)
    far = np.array([r for r in _SAME_FAR if _same(*r)], dtype=np.uint32).reshape(-1, 2)
    return table, more_at, chars, far


def _nfkc_casefold_codes(text: str) -> npt.NDArray[np.uint32] | None:
    """The code points of ``nfkc(text).casefold()`` of a text that is not ASCII, made by
    the compiled pass from :func:`_fold_table` where the kernels are loaded and the table
    holds every character of the text; else None. The array may be written to."""
    if text.isascii() or not kernels.wanted(0):  # (wanted: loaded, a long run; or on)
        return None
    from .kernels import tables

    fold = kernels.load("_text").nfkc_casefold
    cp = tables.code_points(text)
    out = np.empty(len(cp) + 64, dtype=np.uint32)
    n = fold(cp, *_fold_table(), out)
    if n == -2:  # more than 64 characters more than it had
        out = np.empty(len(cp) * _FOLD_MOST, dtype=np.uint32)
        n = fold(cp, *_fold_table(), out)
    return out[:n] if n >= 0 else None


def _text_of(codes: npt.NDArray[np.uint32]) -> str:
    return str(memoryview(codes), "utf-32-le")  # type: ignore[arg-type]


def _nfkc_casefold(text: str, codes: npt.NDArray[np.uint32] | None) -> str:
    """:func:`nfkc_casefold` of ``text``, whose :func:`_nfkc_casefold_codes` are ``codes``."""
    if codes is not None:
        return _text_of(codes)
    return text.casefold() if text.isascii() else nfkc(text).casefold()


def nfkc_casefold(text: str) -> str:
    """``nfkc(text).casefold()``: where the kernels are loaded, in one compiled pass over
    the text's code points from a table (:func:`_fold_table`), if the table holds every
    character of the text (ASCII, Latin, Greek, Cyrillic, CJK, kana, hangul, emoji, the
    usual punctuation, symbols and full-width forms); else, and without the kernels, as
    written.

    >>> nfkc_casefold("ＮＥＷＳ，天氣（晴）…")
    'news,天氣(晴)...'
    """
    return _nfkc_casefold(text, _nfkc_casefold_codes(text))


def _folded(codes: npt.NDArray[np.uint32]) -> str:
    """``fold_whitespace`` of the text of ``codes`` (:func:`_nfkc_casefold_codes`), folded
    in place by the compiled fold (it writes no further than it has read), for
    :class:`Normalizer` to convert to Simplified after it: the order of the last two steps
    swapped, which gives the same text where no key or value of OpenCC's dictionaries holds
    whitespace or a control character (each then converts the runs between whitespace as
    they are, and folding touches only whitespace and control characters) — true of the
    installed dictionaries where they are those ``scripts/t2s_triggers.py`` read, which
    checks it (:func:`_t2s_triggers` is not None)."""
    from .kernels import tables

    n = kernels.load("_text").fold_whitespace(codes, tables.props_table(), codes)
    return _text_of(codes[:n])


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


def setting_flag(name: str, value: object) -> bool:
    """A setting that is True or False (numpy's booleans too, as Python's), or a
    ConfigError naming it."""
    numpy_bool = type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")
    if not (isinstance(value, bool) or numpy_bool):
        raise ConfigError(f"{name} must be True or False, got {value!r}")
    return bool(value)


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

    def __post_init__(self) -> None:
        for name in ("html", "width", "case", "whitespace", "script"):
            object.__setattr__(self, name, setting_flag(f"normalizer.{name}", getattr(self, name)))

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
        if self.width and self.case:
            codes = _nfkc_casefold_codes(text)
            if (
                codes is not None
                and self.whitespace
                and self.script
                and _t2s_triggers() is not None
            ):  # folded before it is converted: the same text, one copy less each way
                return to_simplified(_folded(codes))
            text = _nfkc_casefold(text, codes)
        elif self.width:
            text = nfkc(text)
        elif self.case:
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
