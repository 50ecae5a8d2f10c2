"""Site boilerplate: which header, footer, byline and navigation lines are removed, which
story sentences are kept, and what a page made only of boilerplate becomes."""

from __future__ import annotations

import pytest

from neardup import normalize
from neardup.boilerplate import is_boilerplate, strip_boilerplate


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
