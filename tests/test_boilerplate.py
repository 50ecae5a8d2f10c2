"""Site boilerplate: which header, footer, byline and navigation lines are removed, which
story sentences are kept, and what a page made only of boilerplate becomes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import normalize
from neardup.boilerplate import _sentences, is_boilerplate, strip_boilerplate
from neardup.normalize import fold_whitespace


def strip(text: str) -> str:
    """Boilerplate removed from the normalized text, as the engine does it."""
    return strip_boilerplate(normalize(text))


REMOVED = [
    # Chinese source, editor and reprint lines
    "来源：新华网 2026-03-02 编辑：张三",
    "本文转载自：人民网",
    "转自：江城晚报网",
    "责任编辑：王敏",
    "【纠错】【责任编辑:王敏】",
    "原标题：临江地铁5号线一期今日开通运营",
    "作者：李明",
    "记者：李明",
    "（完）",
    "免责声明：本文仅代表作者观点。",
    # Chinese follow, subscribe and copyright footers
    "点击下方关注我们，获取更多资讯。",
    "扫码关注公众号",
    "下载新闻客户端，阅读原文",
    "版权所有 © 2026 示例网 未经授权禁止转载",
    "如有侵权请联系删除",
    # Chinese breadcrumb
    "首页 > 新闻 > 正文",
    # English bylines and credits
    "By Jane Doe, Example Times",
    "By JANE DOE | Reuters",
    "By Staff Reporter, Valley Courier",
    "Reporting by John Smith; Editing by Mary Jones",
    "Photo: Example Agency",
    # English footers
    "Copyright 2026 Example Media. All rights reserved.",
    "© 2026 Example Corp",
    "Click here to subscribe to our newsletter.",
    "Sign up for our daily newsletter",
    "Follow us on Twitter and Facebook",
    "Support independent journalism. Become a member today.",
    "Privacy Policy | Terms of Use",
    "This story has been updated.",
    "Read more: the best parks in town",
    "Advertisement",
    "Share this article",
    # English breadcrumb
    "Home > News > Local",
]


@pytest.mark.parametrize("line", REMOVED)
def test_boilerplate_line_is_removed(line: str) -> None:
    """A header, footer, byline, copyright, subscribe or breadcrumb line is removed."""
    assert strip(line) == ""


@pytest.mark.parametrize(
    ("line", "story"),
    [
        ("人民网2021-09-22消息，今天北京天气晴朗。", "今天北京天气晴朗。"),
        ("【新华网讯】今天北京天气晴朗。", "今天北京天气晴朗。"),
        (
            "LONDON (Reuters) - The Bank of England raised rates.",
            "the bank of england raised rates.",
        ),
        ("(Business Insider) - The bank raised rates.", "the bank raised rates."),
    ],
)
def test_dateline_prefix_is_removed(line: str, story: str) -> None:
    """A dateline prefix goes, the story on the same line stays."""
    assert strip(line) == story


KEPT = [
    "By 2030 the city will have four new light rail lines.",
    "By then the damage was done, officials said.",
    "The court ruled that the company had broken copyright law when it copied the novels.",
    "据该公司介绍，这批产品的原料主要来源于新疆和内蒙古的牧场，经过严格检测后才会进入加工环节，"
    "全年产量预计超过三万吨，比去年同期增长约百分之十二，来源地的牧民收入也随之提高。",
    "记者从市交通局获悉，5号线全长24.6公里。",
    "今天北京天气晴朗，最高气温二十五度。",
    "The editor of the paper resigned on Monday after the scandal.",
    "Photographers gathered outside the court on Monday.",
    "He said the subscription service would launch next year.",
    "Residents can follow the route on the city's website.",
    "The show was followed by a dinner for all the guests, organizers said.",
    "Apple公司发布了新款iPhone，售价5999元起。",
    "Mayor Elena Ortiz called the opening a turning point for the region.",
]


@pytest.mark.parametrize("sentence", KEPT)
def test_story_sentence_is_kept(sentence: str) -> None:
    """A story sentence is kept whole, even when it mentions a boilerplate word."""
    assert strip(sentence) == normalize(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "By contrast, the rival firm reported a loss of 3 million dollars.",
        "By Tuesday, the storm will reach the coast.",
        "Sources said the deal was close to being signed.",
        "Copyright law protects authors for seventy years after their death.",
        "Related research has shown similar results in mice.",
        "Image quality improved sharply with the new sensor.",
    ],
)
def test_story_sentence_starting_like_a_credit_is_kept(sentence: str) -> None:
    """A story sentence that merely starts with 'By', 'Sources' or 'Copyright' is kept."""
    assert strip(sentence) == normalize(sentence)


@pytest.mark.parametrize(
    "line",
    [
        "本报记者 张三",
        "记者 李明 通讯员 王芳",
        "文/李明",
        "编辑 张三",
        "Editor: Jane Doe",
        "Posted by admin | Feb 8, 2026 | Local News",
    ],
)
def test_byline_without_colon_is_removed(line: str) -> None:
    """Bylines written without a colon, and English editor lines, are removed too."""
    assert strip(line) == ""


def test_xinhua_dateline_is_removed() -> None:
    """The news-agency dateline in front of a Chinese story is removed."""
    assert strip("新华社北京3月2日电（记者李明）今天北京天气晴朗。") == "今天北京天气晴朗。"


@pytest.mark.parametrize(
    ("page", "story"),
    [
        (
            "来源：新华网 2026-03-02 编辑：张三\n今天北京天气晴朗，最高气温二十五度。\n"
            "点击下方关注我们，获取更多资讯。",
            "今天北京天气晴朗,最高气温二十五度。",
        ),
        (
            "Home > News > Local\nBy Jane Doe, Example Times\nThe city opened a new line. "
            "Click here to subscribe.\nCopyright 2026 Example Media. All rights reserved.",
            "the city opened a new line.",
        ),
        (
            "首页 > 科技 > 前沿\nApple公司发布了新款iPhone。Follow us on Twitter.\n"
            "By Jane Doe, Example Times\n版权所有 未经授权禁止转载",
            "apple公司发布了新款iphone。",
        ),
    ],
)
def test_page_keeps_only_the_story(page: str, story: str) -> None:
    """Header, footer and inline boilerplate go; the story's sentences stay in order."""
    assert strip(page) == story


@pytest.mark.parametrize(
    "page",
    [
        "来源：新华网 2026-03-02 编辑：张三\n点击下方关注我们，获取更多资讯。\n版权所有 未经授权禁止转载",
        "Home > News > Local\nBy Jane Doe, Example Times\nClick here to subscribe.\n"
        "Copyright 2026 Example Media. All rights reserved.",
        "首页 > 新闻 > 正文\nFollow us on Twitter and Facebook\n【纠错】【责任编辑:王敏】\nAdvertisement",
        "",
        "\n\n  \n",
    ],
)
def test_page_of_only_boilerplate_is_empty(page: str) -> None:
    """A page that is nothing but boilerplate comes out empty."""
    assert strip(page) == ""


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("", True),
        ("   ", True),
        ("责任编辑：王敏", True),
        ("click here to subscribe.", True),
        ("今天北京天气晴朗。", False),
        ("by 2030 the city will have four new lines.", False),
        ("来源:" + "很长的正文句子" * 20, False),
    ],
)
def test_is_boilerplate(sentence: str, expected: bool) -> None:
    """is_boilerplate judges one sentence; a very long sentence is content whatever its start."""
    assert is_boilerplate(sentence) is expected


@pytest.mark.parametrize(
    "text",
    [
        "今天北京天气晴朗。\n最高气温二十五度。",
        "the city opened a new line.\nofficials said it would carry 40,000 riders a day.",
    ],
)
def test_story_without_boilerplate_is_unchanged(text: str) -> None:
    """A normalized story with no boilerplate comes back as it went in."""
    assert strip_boilerplate(text) == text


# -- the fast paths equal the sentence-by-sentence definition ----------------------------------

# The module as it was first written: every line cut into sentences with one regex, every
# sentence judged with four. strip_boilerplate must give exactly what this gives.
_REF_MAX_LEN = 120  # a longer sentence is content, whatever it starts with

_REF_STARTS = re.compile(
    r"^\s*[\[【(<]?\s*(?:"
    # Chinese source, author and editor lines
    r"(?:本文)?(?:转载自|转自|来源|来源于|文章来源|消息来源|稿件来源|图片来源|图源|原标题|原文标题|原文链接|"
    r"作者|记者|编辑|责任编辑|责编|实习编辑|值班编辑|审核|审校|校对|监制|策划|通讯员|摄影|摄像|出品|"
    r"编者按|声明|免责声明|特别声明|版权声明|更新|editor's note|editors' note|note to editors)\s*[:|：]"
    r"|本文(?:转载自|来源|来自|有删节|仅代表|系)"
    # bylines without a colon: 本报记者 张三, 记者 李明 通讯员 王芳, 文/李明, 编辑 张三
    r"|(?:本报|特约)?(?:记者|通讯员|编辑|责编|摄影)\s+\S{2,4}(?:\s+(?:记者|通讯员|编辑|摄影)\s+\S{2,4})*\s*$"
    r"|文\s*/\s*\S{2,4}\s*$"
    # English bylines, credits and footers
    # bylines: "By Jane Doe, Example Times" (two or more name words), "Posted by admin | ..."
    r"|by\s+[a-z][\w.'-]*(?:\s+[a-z][\w.'-]*){1,3}\s*(?:,|\||-|$)"
    r"|posted by\b"
    r"|(?:source|sources|photo|image|file photo|related|editor|editors|credit|credits)\s*:"
    r"|(?:reporting by|editing by|writing by|additional reporting|compiled by|"
    r"originally published|this (?:story|article) (?:was|first)|"
    r"read more|advertisement|share this|follow us|sign up|subscribe|click here)\b"
    r"|copyright\s*(?:©|\(c\)|\d{4})|copyright [\w .&'-]{1,40}\.?\s*$|©"
    r")"
)
_REF_CONTAINS = re.compile(
    r"点击.{0,12}关注|关注我们|关注.{0,10}(?:公众号|微信|微博)|获取更多|扫码|二维码|下载.{0,6}客户端|阅读原文|"
    r"版权所有|版权归|未经.{0,6}授权|禁止转载|谢绝转载|如有侵权|联系删除|返回顶部|分享到|"
    # appeals to subscribe, donate or support the site
    r"订户|订阅|支持我们|赞助我们|捐款|捐助|成为会员|"
    r"support (?:our|independent) journalism|become a (?:member|subscriber|patron)|donate|"
    r"all rights reserved|click here|subscribe to|sign up for|follow us on|newsletter|"
    r"copyright \d{4}|\(c\) \d{4}|© ?\d{4}|terms of (?:use|service)|privacy policy|"
    # stock notes that carry no story: "this story has been updated", "正在进一步核实"
    r"(?:story|article|report) (?:has been|was) (?:updated|corrected)|"
    r"(?:more|further) details (?:were|are) not (?:immediately )?available|"
    r"no further details were|正在进一步核实|^\(完\)$|^\(记者.{0,6}\)$"
)
# a line made only of bracketed labels: 【纠错】【责任编辑:王敏】
_REF_LABELS = re.compile(r"^(?:\s*[\[【][^\]】]{0,20}[\]】])+\s*$")
# a section label and a date: "科学探索 / 2026年3月13日", "local news | 2026-03-13"
_REF_DATELINE = re.compile(
    r"^[^。.!?]{0,20}[/|·-]?\s*\d{4}\s*(?:年|-|/|\.)\s*\d{1,2}\s*(?:月|-|/|\.)\s*\d{1,2}\s*日?\s*$"
)
# navigation: "首页 > 新闻 > 正文", "home > news > article"
_REF_BREADCRUMB = re.compile(r"^[^>]{0,20}(?:>[^>]{0,20}){2,}$")
# dateline prefixes removed from the start of a line, keeping the rest
_REF_PREFIXES = re.compile(
    r"^(?:"
    r"[\[【(][^\]】)]{0,4}(?:转载自|转自|来源|来自|原载|原文载于)[^\]】)]{0,40}[\]】)]"  # (本文转载自《晨报》)
    r"|[\[【][^\]】]{1,16}讯[\]】]"  # 【新华网讯】
    r"|[^\s,。:]{2,12}\d{1,2}月\d{1,2}日(?:电|讯)(?:\([^)]{0,20}\))?"  # 新华社北京3月2日电(记者李明)
    r"|[^\s,。:]{2,12}\d{4}-\d{1,2}-\d{1,2}消息[,，]"  # 人民网2021-09-22消息,
    r"|[a-z][a-z .,'&-]{0,40}\((?:[a-z][a-z .&']{1,30})\)\s*[-–—]\s"  # london (reuters) -
    r"|\((?:[a-z][a-z .&']{1,30})\)\s*[-–—]\s"  # (business insider) -
    r")"
)
_REF_SENTENCE_END = re.compile(r"(?<=[。!?！？])|(?<=[.!?])\s+(?=\S)")


def reference_is_boilerplate(sentence: str) -> bool:
    """is_boilerplate with the regexes above (the definition)."""
    s = sentence.strip()
    if not s:
        return True
    if len(s) > _REF_MAX_LEN:
        return False
    return bool(
        _REF_STARTS.match(s)
        or _REF_CONTAINS.search(s)
        or _REF_LABELS.match(s)
        or _REF_BREADCRUMB.match(s)
    )


def reference_strip_boilerplate(text: str) -> str:
    """strip_boilerplate, sentence by sentence with the regexes above (the definition)."""
    kept_lines: list[str] = []
    for line in text.split("\n"):
        line = _REF_PREFIXES.sub("", line.strip())
        if _REF_BREADCRUMB.match(line) or _REF_LABELS.match(line) or _REF_DATELINE.match(line):
            continue
        kept = [s for s in _REF_SENTENCE_END.split(line) if s and not reference_is_boilerplate(s)]
        if kept:
            kept_lines.append(_REF_PREFIXES.sub("", " ".join(k.strip() for k in kept)))
    return "\n".join(kept_lines).strip()


FRAGMENTS = [
    *REMOVED,
    "来源:新华网 2026-03-02 编辑:张三",
    "本报记者 张三",
    "记者 李明 通讯员 王芳",
    "文/李明",
    "(完)",
    "(记者 李四)",
    "posted by admin | news",
    "editor's note: this is",
    "人民网2021-09-22消息,",
    "【新华网讯】",
    "新华社北京3月2日电(记者李明)",
    "london (reuters) - ",
    "(ap) - ",
    "科学探索 / 2026年3月13日",
    "local news | 2026-03-13",
    "首页 > 新闻 > 正文",
    "今天北京天气晴朗。",
    "the city opened a new line. ",
    "u.s. officials said 3.5 percent",
    "by 2030 the city will have four new lines.",
    "a!b", "a! b", "x. y", "x.  y", "。 ", "!!", ". .", "?", "】", "[", ">",
    "订户", "关注我们", "click here", "copyright 2020", "© 2021",
    "\n", "\n", "\n\n", " ", "  ", "\t", "\u3000", "\u2028", "\x85", "\u200b",
]  # fmt: skip
PAGE = st.lists(
    st.sampled_from(FRAGMENTS)
    | st.text(alphabet="ab .!?。！？:：|/>()[]【】讯日电消息,-—1张三\n ", max_size=6),
    max_size=14,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(PAGE)
def test_strip_boilerplate_equals_definition(page: str) -> None:
    """On any text, normalized or not, the result is the sentence-by-sentence one."""
    assert strip_boilerplate(page) == reference_strip_boilerplate(page)
    folded = fold_whitespace(page)  # as normalization leaves a text: the fast path
    assert strip_boilerplate(folded) == reference_strip_boilerplate(folded)


@settings(max_examples=300, deadline=None)
@given(PAGE | st.text(max_size=30))
def test_is_boilerplate_equals_definition(sentence: str) -> None:
    """is_boilerplate judges a sentence as the definition does."""
    assert is_boilerplate(sentence) is reference_is_boilerplate(sentence)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab .!?。！？\t\u3000\u2028", max_size=20))
def test_sentences_equal_the_regex_split(line: str) -> None:
    """_sentences cuts a line where the regex split does (after stripping each piece)."""
    line = line.replace("\n", " ")
    expected = [s.strip() for s in _REF_SENTENCE_END.split(line) if s.strip()]
    assert _sentences(line) == expected


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        (
            "(本文转载自《晨报》)市气象台今天下午发布天气预报:明天白天晴。",
            "市气象台今天下午发布天气预报:明天白天晴。",
        ),
        ("【转自某某网】北京地铁十九号线今天开通运营。", "北京地铁十九号线今天开通运营。"),
        ("(来源:新华网)今天北京天气晴朗。", "今天北京天气晴朗。"),
    ],
)
def test_a_credit_in_brackets_before_the_story_goes_alone(line: str, kept: str) -> None:
    """A bracketed "reprinted from" credit glued to the first sentence goes; the sentence
    stays (it used to go with it)."""
    assert strip_boilerplate(line) == kept


#: sentences of quoted replies, breadcrumbs and every kind of hint, for the sentence rule
_SENTENCE_PIECES = [
    ">", "> ", ">>", " > ", "home > news > ", "首页 > 新闻 > ", "a", "word ", "x" * 19,
    "y" * 25, "z" * 130, " ", "by ", "by jane doe", "posted by", "source:", "来源：", "[",
    "]", "【", "】", "(完)", "(记者", "copyright 2024", "©", "subscribe to", "newsletter",
    "点击关注", "本文转载自", "文/", "记者 李明", "photo:", "read more", ".", "。",
    "a > b > " * 16,  # a breadcrumb's shape, longer than a boilerplate sentence may be
]  # fmt: skip


@settings(max_examples=500)
@given(st.lists(st.sampled_from(_SENTENCE_PIECES), min_size=1, max_size=12).map("".join))
def test_a_sentence_is_kept_as_its_hints_and_patterns_say(sentence: str) -> None:
    """A judged line's sentence is kept when it holds no hint or is not boilerplate: the
    shortcut for one whose only hint is ">" (a breadcrumb or nothing) agrees with running
    every pattern."""
    from neardup import boilerplate as bp

    for s in _sentences(sentence):
        assert bp._kept(s) == (bp._HINT.search(s) is None or not is_boilerplate(s))


def test_a_line_seen_before_gives_the_answer_for_its_hints() -> None:
    """The remembered answer for a line is the one for the same line with the same hints:
    a line judged on one page and only prefixed, or neither, on another gets the answer
    worked out for that case."""
    from neardup import boilerplate as b

    b._remembered_line.cache_clear()
    line = "  中新网12月5日电 （记者 张三）今天天气晴朗。编辑：李四  "
    cases = [(True, False), (False, False), (True, True), (False, True)]
    want = {case: b._line_of(line, *case) for case in cases}
    assert len(set(want.values())) == 4  # each case has an answer of its own
    for _ in range(2):
        for case in cases:
            assert b._line(line, *case) == want[case]
    long_line = "编辑：张三。" + "新" * b._REMEMBERED_LEN
    kept = b._remembered_line.cache_info().currsize
    assert b._line(long_line, True, False) == b._line_of(long_line, True, False)
    assert b._remembered_line.cache_info().currsize == kept  # long lines not kept


def test_the_remembered_lines_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """However many distinct lines a process strips, it remembers at most _REMEMBERED, and
    pages come out as they do with nothing remembered, the first time and the next."""
    from neardup import boilerplate as b

    pages = [
        "\n".join(f"来源：第{i % 7}号 {k % 90}\n正文第{k}句。" for k in range(50))
        for i in range(400)
    ]
    b._remembered_line.cache_clear()
    with monkeypatch.context() as m:
        m.setattr(b, "_REMEMBERED_LEN", -1)  # nothing remembered
        want = b.strip_boilerplate_all(pages)
        assert b._remembered_line.cache_info().currsize == 0
    assert b.strip_boilerplate_all(pages) == want
    assert b.strip_boilerplate_all(pages) == want
    assert 0 < b._remembered_line.cache_info().currsize <= b._REMEMBERED
    many = ["\n".join(f"来源：第{i}号 {k}" for k in range(50)) for i in range(400)]
    b.strip_boilerplate_all(many)  # 20,000 distinct lines
    assert 0 < b._remembered_line.cache_info().currsize <= b._REMEMBERED
