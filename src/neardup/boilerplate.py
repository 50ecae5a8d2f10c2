"""Site boilerplate: the lines a site adds around a story, kept out of its fingerprint.

Source and editor lines, bylines, "reprinted from" headers, subscription and follow-us
footers, copyright and disclaimer lines, navigation breadcrumbs, and dateline prefixes such
as "(Reuters) - " or "人民网2021-09-22消息，". They are the conventions of news sites in
general, not of one site, and they are removed only from what is compared; the output keeps
the document as it came. Works on normalized text (lower case, half-width punctuation).

>>> strip_boilerplate("来源:新华网 2026-03-02 编辑:张三\\n今天北京天气晴朗。\\n点击下方关注我们,获取更多资讯。")
'今天北京天气晴朗。'
>>> strip_boilerplate("by jane doe, example times\\nthe city opened a new line. click here to subscribe.")
'the city opened a new line.'
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from . import kernels
from .kernels import tables

__all__ = ["is_boilerplate", "strip_boilerplate", "strip_boilerplate_all"]

_MAX_LEN = 120  # a longer sentence is content, whatever it starts with

# Words that open a Chinese source, author or editor line when a colon follows.
_CREDIT_WORDS = (
    "转载自", "转自", "来源", "来源于", "文章来源", "消息来源", "稿件来源", "图片来源", "图源", "原标题",
    "原文标题", "原文链接", "作者", "记者", "编辑", "责任编辑", "责编", "实习编辑", "值班编辑", "审核",
    "审校", "校对", "监制", "策划", "通讯员", "摄影", "摄像", "出品", "编者按", "声明", "免责声明",
    "特别声明", "版权声明", "更新", "editor's note", "editors' note", "note to editors",
)  # fmt: skip
_BYLINE_WORDS = ("记者", "通讯员", "编辑", "责编", "摄影")
_LABEL_WORDS = (
    "source", "sources", "photo", "image", "file photo", "related", "editor", "editors", "credit",
    "credits",
)  # fmt: skip
_LEAD_WORDS = (
    "reporting by", "editing by", "writing by", "additional reporting", "compiled by",
    "originally published", "this story was", "this story first", "this article was",
    "this article first", "read more", "advertisement", "share this", "follow us", "sign up",
    "subscribe", "click here",
)  # fmt: skip

_STARTS = re.compile(
    r"^\s*[\[【(<]?\s*(?:"
    # Chinese source, author and editor lines
    rf"(?:本文)?(?:{'|'.join(_CREDIT_WORDS)})\s*[:|：]"
    r"|本文(?:转载自|来源|来自|有删节|仅代表|系)"
    # bylines without a colon: 本报记者 张三, 记者 李明 通讯员 王芳, 文/李明, 编辑 张三
    r"|(?:本报|特约)?(?:记者|通讯员|编辑|责编|摄影)\s+\S{2,4}(?:\s+(?:记者|通讯员|编辑|摄影)\s+\S{2,4})*\s*$"
    r"|文\s*/\s*\S{2,4}\s*$"
    # English bylines, credits and footers
    # bylines: "By Jane Doe, Example Times" (two or more name words), "Posted by admin | ..."
    r"|by\s+[a-z][\w.'-]*(?:\s+[a-z][\w.'-]*){1,3}\s*(?:,|\||-|$)"
    r"|posted by\b"
    rf"|(?:{'|'.join(_LABEL_WORDS)})\s*:"
    rf"|(?:{'|'.join(_LEAD_WORDS)})\b"
    r"|copyright\s*(?:©|\(c\)|\d{4})|copyright [\w .&'-]{1,40}\.?\s*$|©"
    r")"
)
# Phrases that make any sentence holding them boilerplate. Each starts with a literal
# character (so the regex engine can skip to the characters that start one).
_PHRASES = [
    r"点击.{0,12}关注", "关注我们", r"关注.{0,10}(?:公众号|微信|微博)", "获取更多", "扫码", "二维码",
    r"下载.{0,6}客户端", "阅读原文", "版权所有", "版权归", r"未经.{0,6}授权", "禁止转载", "谢绝转载",
    "如有侵权", "联系删除", "返回顶部", "分享到",
    # appeals to subscribe, donate or support the site
    "订户", "订阅", "支持我们", "赞助我们", "捐款", "捐助", "成为会员",
    r"support (?:our|independent) journalism", r"become a (?:member|subscriber|patron)", "donate",
    "all rights reserved", "click here", "subscribe to", "sign up for", "follow us on", "newsletter",
    r"copyright \d{4}", r"\(c\) \d{4}", r"© ?\d{4}", r"terms of (?:use|service)", "privacy policy",
    # stock notes that carry no story: "this story has been updated", "正在进一步核实"
    *(rf"{w} (?:has been|was) (?:updated|corrected)" for w in ("story", "article", "report")),
    *(rf"{w} details (?:were|are) not (?:immediately )?available" for w in ("more", "further")),
    "no further details were", "正在进一步核实",
]  # fmt: skip
_CONTAINS = re.compile("|".join(_PHRASES))
# whole sentences that are stock notes: "(完)", "(记者 张三)"
_WHOLE = re.compile(r"\(完\)$|\(记者.{0,6}\)$")
# a line made only of bracketed labels: 【纠错】【责任编辑:王敏】
_LABELS = re.compile(r"^(?:\s*[\[【][^\]】]{0,20}[\]】])+\s*$")
# a section label and a date: "科学探索 / 2026年3月13日", "local news | 2026-03-13"
_DATELINE = re.compile(
    r"^[^。.!?]{0,20}[/|·-]?\s*\d{4}\s*(?:年|-|/|\.)\s*\d{1,2}\s*(?:月|-|/|\.)\s*\d{1,2}\s*日?\s*$"
)
# navigation: "首页 > 新闻 > 正文", "home > news > article"
_BREADCRUMB = re.compile(r"^[^>]{0,20}(?:>[^>]{0,20}){2,}$")
# dateline prefixes removed from the start of a line, keeping the rest
_PREFIXES = re.compile(
    r"^(?:"
    r"[\[【(][^\]】)]{0,4}(?:转载自|转自|来源|来自|原载|原文载于)[^\]】)]{0,40}[\]】)]"  # (本文转载自《晨报》)
    r"|[\[【][^\]】]{1,16}讯[\]】]"  # 【新华网讯】
    r"|[^\s,。:]{2,12}\d{1,2}月\d{1,2}日(?:电|讯)(?:\([^)]{0,20}\))?"  # 新华社北京3月2日电(记者李明)
    r"|[^\s,。:]{2,12}\d{4}-\d{1,2}-\d{1,2}消息[,，]"  # 人民网2021-09-22消息,
    r"|[a-z][a-z .,'&-]{0,40}\((?:[a-z][a-z .&']{1,30})\)\s*[-–—]\s"  # london (reuters) -
    r"|\((?:[a-z][a-z .&']{1,30})\)\s*[-–—]\s"  # (business insider) -
    r")"
)
_SENTENCE_END = re.compile(r"(?<=[。!?！？])|(?<=[.!?])\s+(?=\S)")


def _literal_prefix(alternative: str) -> tuple[str, str]:
    """The fixed text an alternative starts with (unescaped), and the regex after it."""
    prefix: list[str] = []
    i = 0
    while i < len(alternative):
        ch, j = alternative[i], i + 1
        if ch == "\\" and j < len(alternative) and not alternative[j].isalnum():
            ch, j = alternative[j], j + 1
        elif ch in ".^$*+?{}[]|()\\":
            break
        if j < len(alternative) and alternative[j] in "*+?{":
            break  # a quantified character is not fixed
        prefix.append(ch)
        i = j
    return "".join(prefix), alternative[i:]


def _any_of(alternatives: list[str]) -> str:
    """One regex for "any of ``alternatives``" that the engine searches fast.

    Each alternative is entered at the rarest character of the fixed text it starts with (the
    characters before it checked by a lookbehind), and the alternatives are grouped by that
    character: the engine skips to characters that enter one, and tries only their
    alternatives. Good for finding *whether and where roughly* any alternative occurs (the
    match starts at that character, not where the alternative starts).
    """
    groups: dict[str, list[str]] = {}
    for alt in alternatives:
        prefix, rest = _literal_prefix(alt)
        assert prefix, alt
        k = max(range(len(prefix)), key=lambda i: _RARITY.get(prefix[i], len(_RARITY)))
        behind = f"(?<={re.escape(prefix[: k + 1])})" if k else ""
        groups.setdefault(prefix[k], []).append(behind + re.escape(prefix[k + 1 :]) + rest)
    # the groups of the commonest characters first: the engine tries them in order
    order = sorted(groups, key=lambda c: _RARITY.get(c, len(_RARITY)))
    return "|".join(
        re.escape(c) + ("" if "" in groups[c] else f"(?:{'|'.join(groups[c])})") for c in order
    )


# the characters of the words below, commonest first in Chinese and English news
_BY_FREQUENCY = (
    " etainosrldchumpfgbywvk一有在会新为出我作成到对来多持进员们公特表实自部关联经任文于系下者"
    "分代本通支制正所如消众j更户明息习订记点信权题二回接未取件原影步别击策完客源讯节标品责声博"
    "划转获片维核审助注值校章监号除班读编图款绝止按版像载免归享辑稿链赞端码谢摄微授返仅禁捐阅侵"
    "顶删扫©'"
)
_RARITY = {c: i for i, c in enumerate(_BY_FREQUENCY)}


# What a line holds somewhere when any of its sentences, or the line itself, can be
# boilerplate: a word a boilerplate start needs, a boilerplate phrase, a stock note, a bracket
# or a ">". Most lines of a story hold none and are kept whole without judging their
# sentences. Whitespace here never spans a line break, so a match lies within one line.
_S = r"[^\S\n]"
_HINT_ALTERNATIVES = [
    *(rf"{re.escape(w)}{_S}*[:|：]" for w in _CREDIT_WORDS),
    r"本文(?:转载自|来源|来自|有删节|仅代表|系)",
    *(rf"{w}{_S}" for w in _BYLINE_WORDS),
    rf"文{_S}*/",
    rf"by{_S}",
    "posted by",
    *(rf"{re.escape(w)}{_S}*:" for w in _LABEL_WORDS),
    *(re.escape(w) for w in _LEAD_WORDS),
    "copyright",
    "©",
    *_PHRASES,
    r"\(完\)",
    r"\(记者",
    r"\[",
    "【",
    ">",
]
_HINT = re.compile(_any_of(_HINT_ALTERNATIVES))
_HINT_NOT_GT = re.compile(_any_of([a for a in _HINT_ALTERNATIVES if a != ">"]))
# what a dateline prefix (see _PREFIXES) holds somewhere
_PREFIX_ALTERNATIVES = [
    "讯", "日电", "消息[,，]", "转载自", "转自", "来源", "来自", "原载", "原文载于",
    rf"\){_S}*[-–—]{_S}",
]  # fmt: skip
_PREFIX_HINT = re.compile("|".join(_PREFIX_ALTERNATIVES))
# The characters that end a sentence wherever they are (a "." ends one only before whitespace).
_ENDS = "。!?！？"
_REJOIN = re.compile(r"([。!?！？.])(?:(?<=[^.])\s*|\s+)(?=\S)")


def is_boilerplate(sentence: str) -> bool:
    """Whether one line or sentence is site boilerplate rather than story."""
    s = sentence.strip()
    if not s:
        return True
    if len(s) > _MAX_LEN:
        return False
    return bool(
        _STARTS.match(s)
        or _CONTAINS.search(s)
        or _WHOLE.match(s)
        or _LABELS.match(s)
        or _BREADCRUMB.match(s)
    )


def _lines_with(pattern: re.Pattern[str], text: str) -> set[int]:
    """The numbers of the lines of ``text`` in which ``pattern`` (never spanning a line break)
    matches."""
    found: set[int] = set()
    line = pos = 0
    while (m := pattern.search(text, pos)) is not None:
        start = m.start()
        line += text.count("\n", pos, start)
        found.add(line)
        pos = text.find("\n", m.end()) + 1  # the next line, whatever else this one holds
        if pos == 0:
            break
        line += 1
    return found


def _spaced(text: str) -> str:
    """``text`` with a space after each character of _ENDS."""
    for c in _ENDS:
        if c in text:
            text = text.replace(c, c + " ")
    return text


def _rejoin(line: str, spaced: str) -> str:
    """The sentences of ``line`` (split as _SENTENCE_END splits), stripped and joined by one
    space; ``spaced`` is ``_spaced`` of the line (before it was stripped, or after).

    When the line's only whitespace is single spaces, that is ``spaced`` with its double
    spaces made single, stripped: a sentence ends after each character of _ENDS (now
    followed by a space, two where a space already followed it) and at the space after a
    ".". A run of spaces or other whitespace takes the regex.
    """
    if "  " not in line and line.isprintable():
        return spaced.replace("  ", " ").strip()
    return _REJOIN.sub(r"\1 ", line).strip()


def _may_be_dateline(line: str) -> bool:
    """Whether a stripped line ends as a section dateline (see _DATELINE) does."""
    end = line[-1:]
    return end == "日" or end.isdecimal()


def _is_dateline(line: str) -> bool:
    """A section label and a date (see _DATELINE), on a stripped line."""
    return _may_be_dateline(line) and _DATELINE.match(line) is not None


def _strip_line(line: str) -> str | None:
    """One line (stripped, its prefix removed) without its boilerplate sentences; None when the
    whole line is boilerplate."""
    if _BREADCRUMB.match(line) or _LABELS.match(line) or _is_dateline(line):
        return None
    return " ".join([s for s in _sentences(line) if _kept(s)])


def _kept(sentence: str) -> bool:
    """Whether a sentence (of a line that holds a hint, stripped) is kept: it holds no
    _HINT, or it is not boilerplate (:func:`is_boilerplate`). One that holds no hint but
    ">" is boilerplate only as a breadcrumb: every other pattern needs a hint of its own
    (the quoted lines of a reply, "> > ...", are not run through all of them)."""
    if _HINT_NOT_GT.search(sentence) is not None:
        return not is_boilerplate(sentence)
    if ">" not in sentence:
        return True
    s = sentence.strip()
    return bool(s) and (len(s) > _MAX_LEN or _BREADCRUMB.match(s) is None)


def _sentences(line: str) -> list[str]:
    """The sentences of one line as _SENTENCE_END splits it, stripped, empty ones left out.

    When the line's only whitespace is spaces, a line break (which a line does not hold) is
    put after each character of _ENDS and in place of the space after a ".", and the line is
    split there: a run of spaces left after a split point ends up at the start of the next
    piece, and stripping removes it, as the regex split would have.
    """
    if line.isprintable():
        for c in _ENDS:
            if c in line:
                line = line.replace(c, c + "\n")
        pieces = line.replace(". ", ".\n").split("\n")
    else:
        pieces = _SENTENCE_END.split(line)
    return [s for s in map(str.strip, pieces) if s]


#: A judged line of up to _REMEMBERED_LEN characters is worked out once, the latest
#: _REMEMBERED of them remembered (:func:`_remembered_line`): a site's bylines, credits and
#: footers recur on its pages, as the lines replies quote do (of the first 10,000 articles
#: of hkcnews, 9 in 10 such lines had been seen before; of 20 Newsgroups' posts, 1 in 4).
_REMEMBERED = 8192
_REMEMBERED_LEN = 256


def _line(line: str, judged: bool, prefixed: bool) -> str | None:
    """One line of the output (see strip_boilerplate), or None when it has nothing to keep.

    ``judged``: the line holds a _HINT; ``prefixed``: it holds a _PREFIX_HINT. A judged
    line of up to _REMEMBERED_LEN characters is worked out once (see _REMEMBERED).
    """
    if not judged or len(line) > _REMEMBERED_LEN:  # (the others are quick to work out)
        return _line_of(line, judged, prefixed)
    return _remembered_line(line, judged, prefixed)


def _line_of(line: str, judged: bool, prefixed: bool) -> str | None:
    """:func:`_line`, worked out."""
    line = line.strip()
    if prefixed:
        line = _PREFIXES.sub("", line)
    if judged:
        joined = _strip_line(line)
    else:
        joined = None if _is_dateline(line) else _rejoin(line, _spaced(line))
    if not joined:
        return None
    return _PREFIXES.sub("", joined) if prefixed else joined


_remembered_line = functools.lru_cache(maxsize=_REMEMBERED)(_line_of)


def _is_folded(text: str, lines: list[str]) -> bool:
    """Whether ``text`` is as normalization leaves it: no empty lines, no whitespace at the ends
    of lines, and no whitespace but single spaces within them (``lines`` are its lines).

    Each line of such a text that is cut into sentences and rejoined (:func:`_rejoin`) comes
    out as its ``_spaced`` self with the double spaces ``_spaced`` made (after a sentence
    end that a space followed) made single again, less a space at its end."""
    return (
        "  " not in text
        and "\n\n" not in text
        and " \n" not in text
        and "\n " not in text
        and text[:1] not in (" ", "\n")
        and text[-1:] not in (" ", "\n")
        and all(map(str.isprintable, lines))
    )


def strip_boilerplate(text: str) -> str:
    """``text`` without its boilerplate lines and sentences (see the module's docstring).

    A page that is nothing but boilerplate comes out empty: it has no story to compare.
    """
    return strip_boilerplate_all([text])[0]


def strip_boilerplate_all(texts: Sequence[str]) -> list[str]:
    """:func:`strip_boilerplate` of each of ``texts``: with one compiled scan for all of them
    when the kernels pay (:mod:`neardup.kernels`), else with the regular expressions (the
    reference); both give the same texts."""
    chars = sum(map(len, texts))
    if kernels.wanted(chars):
        return [_strip(t, *scan) for t, scan in zip(texts, _scan_all(texts), strict=True)]
    kernels.work_done(chars)
    out = []
    for text in texts:
        lines = text.split("\n")
        judged = _lines_with(_HINT, text)
        prefixed = _lines_with(_PREFIX_HINT, text)
        out.append(_strip(text, lines, judged, prefixed, None, None))
    return out


def _strip(
    text: str,
    lines: list[str],
    judged: set[int],
    prefixed: set[int],
    folded: bool | None,
    dated: set[int] | None,
) -> str:
    """:func:`strip_boilerplate` of ``text`` (split into ``lines``), given the lines holding a
    _HINT (``judged``) and a _PREFIX_HINT (``prefixed``), and, when known beforehand,
    whether the text is folded and the lines that may be datelines."""
    # Line by line, a line is stripped and its dateline prefix removed; a line that is a
    # breadcrumb, a row of labels or a section dateline goes; the rest is cut into sentences,
    # boilerplate sentences go, and the others are stripped and joined by one space (and a
    # dateline prefix that comes first now is removed too). Most lines hold nothing that can be
    # boilerplate (see _HINT) and are only cut into sentences and rejoined; the lines that can
    # are found with one search over the whole text (or one compiled scan, see _scan_all).
    spaced = _spaced(text)
    if folded is None:
        folded = _is_folded(text, lines)
    if folded:
        # every line but these comes out as its spaced self, the double spaces that made
        # single again (less a space at its end)
        spaced = spaced.replace("  ", " ")
        special = judged | prefixed
        if dated is None:
            special.update(i for i, line in enumerate(lines) if _may_be_dateline(line))
        else:
            special.update(dated)
        if not special:
            return spaced.replace(" \n", "\n").strip()
        out: list[str | None] = list(spaced.split("\n"))
        for i in special:
            out[i] = _line(lines[i], i in judged, i in prefixed)
        return "\n".join([x for x in out if x is not None]).replace(" \n", "\n").strip()
    kept_lines: list[str] = []
    for i, (line, spaced_line) in enumerate(zip(lines, spaced.split("\n"), strict=True)):
        if i in judged or i in prefixed:
            kept = _line(line, i in judged, i in prefixed)
            if kept is not None:
                kept_lines.append(kept)
            continue
        line = line.strip()
        if line and not _is_dateline(line):
            kept_lines.append(_rejoin(line, spaced_line))
    return "\n".join(kept_lines).strip()


# -- the compiled scan ------------------------------------------------------------------------


class _Literals(NamedTuple):
    """The literals a set of alternatives starts with, as the compiled scan takes them (see
    :func:`neardup.kernels._text._hit`)."""

    starts: npt.NDArray[np.uint8]
    pairs: npt.NDArray[np.uint8]
    grams: npt.NDArray[np.uint8]
    first: npt.NDArray[np.int64]
    lit_cp: npt.NDArray[np.uint32]
    lit_start: npt.NDArray[np.int64]
    lit_prog: npt.NDArray[np.int64]
    set_start: npt.NDArray[np.int64]
    set_cp: npt.NDArray[np.uint32]


# what must follow a literal (kernels._text): bits
_WS_STAR, _IN_SET, _WS_ONE, _REGEX, _AT_START = 1, 2, 4, 8, 16
#: hints the compiled scan takes only where a sentence may start
#: (:func:`neardup.kernels._text._may_start_sentence`): a byline's "by " is boilerplate
#: only there (``_STARTS``), and elsewhere it is most often a word of the story ("caused
#: by ", "nearby "): 16,800 lines of 20 Newsgroups hold one and no other hint, and only
#: some 600 of them have a sentence to strip; a bracket is a hint for a sentence (or a
#: line) of bracketed labels (``_LABELS``), which starts with it (whatever else starts
#: with a bracket has a hint of its own after it), and 20 Newsgroups' "[" are mostly
#: inside sentences ("[deleted]", "[1]")
_AT_A_SENTENCE_START = frozenset({rf"by{_S}", r"\[", "【"})


def _char_set(pattern: str) -> str | None:
    """The characters of a one-character pattern (a plain or escaped character, or a class
    of plain characters such as ``[:|：]``), or None for anything else."""
    if len(pattern) == 1 and pattern not in ".^$*+?{}[]|()\\":
        return pattern
    if len(pattern) == 2 and pattern[0] == "\\" and not pattern[1].isalnum():
        return pattern[1]
    if len(pattern) >= 3 and pattern[0] == "[" and pattern[-1] == "]":
        inner = pattern[1:-1]
        if (
            inner
            and inner[0] != "^"
            and not any(c in inner for c in "\\[]")
            and "-" not in inner[1:-1]
        ):
            return inner
    return None


def _program(rest: str) -> tuple[int, str]:
    """What a literal's rest asks of the text after it, if the compiled scan can check it:
    ``[^\\S\\n]*`` then a character of a set, then ``[^\\S\\n]``, each optional; else
    _REGEX (the line is then searched with the regular expression)."""
    prog, chars = 0, ""
    if rest.startswith(_S + "*"):
        prog, rest = prog | _WS_STAR, rest[len(_S) + 1 :]
    if rest.endswith(_S) and not rest.endswith(_S + "*"):
        prog, rest = prog | _WS_ONE, rest[: -len(_S)]
    if rest:
        found = _char_set(rest)
        if found is None:
            return _REGEX, ""
        prog, chars = prog | _IN_SET, found
    elif prog & _WS_STAR:
        return _REGEX, ""  # a run of nothing but whitespace: always true, but say so plainly
    return prog, chars


_GRAM_BITS = 16  # kernels._text.GRAM_BITS


def _gram(chars: str) -> int:
    """kernels._text._gram of two or three characters."""
    a, b, c = (ord(x) for x in (chars + "\0")[:3])
    h = ((a << 42) ^ (b << 21) ^ c) * 0x9E3779B97F4A7C15 % (1 << 64)
    return h >> (64 - _GRAM_BITS)


@functools.cache
def _literals(alternatives: tuple[str, ...], leave_out: str = "") -> _Literals:
    """The literal table of ``alternatives`` (``leave_out``: an alternative counted apart)."""
    rows: list[tuple[str, int, str]] = []  # literal, program, set
    for alt in alternatives:
        if alt == leave_out:
            continue
        prefix, rest = _literal_prefix(alt)
        assert prefix, alt
        prog, chars = _program(rest)
        if alt in _AT_A_SENTENCE_START:
            prog |= _AT_START
        rows.append((prefix, prog, chars))
    rows.sort(key=lambda r: r[0])
    starts = np.zeros(0x10000, dtype=np.uint8)
    pairs = np.zeros(1 << 14, dtype=np.uint8)
    grams = np.zeros(1 << _GRAM_BITS, dtype=np.uint8)
    counts = np.zeros(0x10000 + 1, dtype=np.int64)
    for lit, _, _ in rows:
        c = ord(lit[0])
        counts[c + 1] += 1
        starts[c] |= 1 if len(lit) == 1 else 2 if len(lit) == 2 else 4
        if len(lit) >= 2:
            grams[_gram(lit[:3])] = 1
        if c < 128 and (len(lit) == 1 or ord(lit[1]) >= 128):
            pairs[c << 7 : (c + 1) << 7] = 1  # whatever ASCII follows
        elif c < 128:
            pairs[(c << 7) | ord(lit[1])] = 1

    def flat(strings: list[str]) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        start = np.zeros(len(strings) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in strings], out=start[1:])
        return tables.code_points("".join(strings)).copy(), start

    lit_cp, lit_start = flat([r[0] for r in rows])
    set_cp, set_start = flat([r[2] for r in rows])
    return _Literals(
        starts,
        pairs,
        grams,
        np.cumsum(counts),
        lit_cp,
        lit_start,
        np.array([r[1] for r in rows], dtype=np.int64),
        set_start,
        set_cp,
    )


@functools.cache
def _scan_tables() -> tuple[tuple[Any, ...], tuple[Any, ...], Any, Any, Any]:
    """The hints' and the dateline prefixes' literals as :func:`_scan_all` passes them to
    the compiled scan: each table's literals (its ``first`` to ``set_cp``), and the
    lookups of both in one (``starts``: the hints' lengths, the prefixes' shifted by 3;
    ``pairs`` and ``grams``: bit 1 the hints', bit 2 the prefixes')."""
    hint = _literals(tuple(_HINT_ALTERNATIVES), ">")
    prefix = _literals(tuple(_PREFIX_ALTERNATIVES))

    def matched(t: _Literals) -> tuple[Any, ...]:
        return (t.first, t.lit_cp, t.lit_start, t.lit_prog, t.set_start, t.set_cp)

    return (
        matched(hint),
        matched(prefix),
        hint.starts | (prefix.starts << 3),
        hint.pairs | (prefix.pairs << 1),
        hint.grams | (prefix.grams << 1),
    )


# line flags of kernels._text.scan_texts
_HIT, _CONFIRM, _TWO_GT, _DATE_END, _PREFIX_HIT, _PREFIX_CONFIRM = 1, 2, 8, 16, 32, 64

_Scan = tuple[list[str], set[int], set[int], bool, set[int]]


def _scan_all(texts: Sequence[str]) -> list[_Scan]:
    """What :func:`_strip` needs of each text, from one compiled scan of them all: its
    lines, those holding a _HINT and those holding a _PREFIX_HINT (as :func:`_lines_with`
    finds them, but a hint of _AT_A_SENTENCE_START only where a sentence may start: a
    line judged for nothing else gives no sentence to strip), whether it is folded
    (:func:`_is_folded`) and, if it is, its lines that may be datelines.

    A line whose only hints are ">" is left out of the first unless it may hold a
    breadcrumb (see :func:`~neardup.kernels._text.scan_texts`: two ">" near each other,
    and an end near the second): a ">" is a hint only because a breadcrumb needs two, so
    cutting such a line into sentences and keeping them all gives the line as
    :func:`_rejoin` gives it (a quoted reply's "> > ..." lines are not judged)."""
    k: Any = kernels.load("_text")
    n = len(texts)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    cp = tables.code_points("".join(texts))
    key, table = tables.keyed(cp)
    room = int(np.count_nonzero(cp == 10)) + n
    folded = np.zeros(n, dtype=np.bool_)
    where = np.zeros((room, 2), dtype=np.int64)
    what = np.zeros(room, dtype=np.uint8)
    hint, prefix, starts, pairs, grams = _scan_tables()
    size = k.scan_texts(
        key, offsets, table, starts, pairs, grams, hint, prefix, folded, where, what
    )
    docs, line_nos = where[:size, 0].tolist(), where[:size, 1].tolist()
    flags = what[:size].tolist()
    out: list[_Scan] = []
    at = 0
    for d, text in enumerate(texts):
        lines = text.split("\n")
        judged: set[int] = set()
        prefixed: set[int] = set()
        dated: set[int] = set()
        while at < size and docs[at] == d:
            i, f = line_nos[at], flags[at]
            at += 1
            if f & (_HIT | _TWO_GT) or (f & _CONFIRM and _HINT.search(lines[i])):
                judged.add(i)
            if f & _PREFIX_HIT or (f & _PREFIX_CONFIRM and _PREFIX_HINT.search(lines[i])):
                prefixed.add(i)
            if f & _DATE_END:
                dated.add(i)
        out.append((lines, judged, prefixed, bool(folded[d]), dated))
    return out
