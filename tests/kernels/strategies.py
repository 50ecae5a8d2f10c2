"""Texts for comparing the compiled kernels with the numpy reference: Chinese, English and
mixed, with the pieces the kernels treat apart (boilerplate hints, dateline prefixes,
figures and dates, controls, astral and full-width characters, runs of whitespace)."""

from __future__ import annotations

from hypothesis import strategies as st

from neardup import boilerplate as bp

PIECES = [
    *bp._CREDIT_WORDS, *bp._BYLINE_WORDS, *bp._LABEL_WORDS, *bp._LEAD_WORDS,
    ":", "：", "|", "/", " ", "  ", "\n", "\n\n", " \n ", "\t", "\x0b", "\x85", "\u3000", "\x00",
    "本文转载自", "本文来源", "文 /", "by ", "posted by", "copyright", "©", "(完)", "(记者",
    "[", "【", "]", "】", ">", " > ", "首页 > 新闻 > 正文", "讯", "日电", "消息,", "消息，",
    "转自", "原载", "原文载于", ") - ", ")—", "新华社北京3月5日电", "3月5日", "日",
    "2023", "2023-05-01", "12.5", "3/4", "1,000", "10:30", "٣٤", "12-", "7",
    "临江地铁", "今日开通运营", "天气晴朗", "中文", "。", "！", "？", "!", "?", ".", ". ", ",",
    "The", "quick", "Brown", "fox", "jumps", "Jane Doe", "newsletter", "subscribe to",
    "𠀀", "𝐀", "😀", "Ω", "é", "ｱ", "Ａ", "－", "'", "-",
]  # fmt: skip

#: A text made of the pieces above and a few random characters.
TEXTS = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=3)), max_size=40).map("".join)

#: A story long enough for shingles, and its pieces (for related texts).
WORDS = st.lists(st.sampled_from(PIECES), min_size=1, max_size=60)
