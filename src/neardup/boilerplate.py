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

import re

__all__ = ["is_boilerplate", "strip_boilerplate"]

_MAX_LEN = 120  # a longer sentence is content, whatever it starts with

_STARTS = re.compile(
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
_CONTAINS = re.compile(
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
    r"[\[【][^\]】]{1,16}讯[\]】]"  # 【新华网讯】
    r"|[^\s,。:]{2,12}\d{1,2}月\d{1,2}日(?:电|讯)(?:\([^)]{0,20}\))?"  # 新华社北京3月2日电(记者李明)
    r"|[^\s,。:]{2,12}\d{4}-\d{1,2}-\d{1,2}消息[,，]"  # 人民网2021-09-22消息,
    r"|[a-z][a-z .,'&-]{0,40}\((?:[a-z][a-z .&']{1,30})\)\s*[-–—]\s"  # london (reuters) -
    r"|\((?:[a-z][a-z .&']{1,30})\)\s*[-–—]\s"  # (business insider) -
    r")"
)
_SENTENCE_END = re.compile(r"(?<=[。!?！？])|(?<=[.!?])\s+(?=\S)")


def is_boilerplate(sentence: str) -> bool:
    """Whether one line or sentence is site boilerplate rather than story."""
    s = sentence.strip()
    if not s:
        return True
    if len(s) > _MAX_LEN:
        return False
    return bool(_STARTS.match(s) or _CONTAINS.search(s) or _LABELS.match(s) or _BREADCRUMB.match(s))


def strip_boilerplate(text: str) -> str:
    """``text`` without its boilerplate lines and sentences (see the module's docstring).

    A page that is nothing but boilerplate comes out empty: it has no story to compare.
    """
    kept_lines: list[str] = []
    for line in text.split("\n"):
        line = _PREFIXES.sub("", line.strip())
        if _BREADCRUMB.match(line) or _LABELS.match(line) or _DATELINE.match(line):
            continue
        kept = [s for s in _SENTENCE_END.split(line) if s and not is_boilerplate(s)]
        if kept:
            kept_lines.append(_PREFIXES.sub("", " ".join(k.strip() for k in kept)))
    return "\n".join(kept_lines).strip()
