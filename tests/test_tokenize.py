"""Tokenizers: mixed-text words, stop words, units, character n-grams, user dictionaries."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup import Tokenizer, char_ngrams, units, words
from neardup.tokenize import default_stopwords, get_segmenter, load_stopwords

SEGMENTERS = ["rjieba", "jieba"]

MIXED = [
    pytest.param(
        "我来到北京清华大学，学习Python 3.12和machine-learning!",
        ["我", "来到", "北京", "清华大学", "学习", "Python", "3.12", "和", "machine-learning"],
        id="mixed",
    ),
    pytest.param(
        "新闻联播报道了neardup 2.0版本，速度很快!",
        ["新闻联播", "报道", "了", "neardup", "2.0", "版本", "速度", "很快"],
        id="mixed-version",
    ),
    pytest.param(
        "COVID-19疫情下的don't panic",
        ["COVID-19", "疫情", "下", "的", "don't", "panic"],
        id="mixed-joined-words",
    ),
    pytest.param(
        "The quick, brown fox -- jumps (over) 42 dogs...",
        ["The", "quick", "brown", "fox", "jumps", "over", "42", "dogs"],
        id="english",
    ),
    pytest.param("「北京」、『上海』！？", ["北京", "上海"], id="chinese-punctuation"),
    pytest.param("，。！ ... ---", [], id="punctuation-only"),
    pytest.param("", [], id="empty"),
]


@pytest.mark.parametrize("segmenter", SEGMENTERS)
@pytest.mark.parametrize(("text", "expected"), MIXED)
def test_words_mixed_text(segmenter: str, text: str, expected: list[str]) -> None:
    """Chinese runs are segmented, Latin words and numbers kept whole, punctuation dropped."""
    assert Tokenizer(segmenter=segmenter)(text) == expected  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="北京天气晴朗新闻ab 1.2-'，。!_\n") | st.text(max_size=30))
def test_words_cover_the_units(text: str) -> None:
    """Joined, the words are the units joined: nothing but punctuation and spaces is dropped."""
    tokens = words(text)
    assert "".join(tokens) == "".join(units(text))
    for t in tokens:
        assert t
        assert not any(ch.isspace() for ch in t)


@pytest.mark.parametrize("segmenter", SEGMENTERS)
def test_drop_single_and_stopwords(segmenter: str) -> None:
    """drop_single removes one-character words; stop words are removed in both scripts."""
    text = "我们在北京 we are in beijing"
    tok = Tokenizer(segmenter=segmenter, drop_single=True, stopwords=frozenset({"are", "我们"}))  # type: ignore[arg-type]
    assert tok(text) == ["北京", "we", "in", "beijing"]
    assert words("我在北京", drop_single=True) == ["北京"]
    assert words("the cat and a dog", stopwords=frozenset({"the", "and"})) == ["cat", "a", "dog"]


def test_default_stopwords() -> None:
    """The built-in stop words hold common Chinese and English function words."""
    stop = default_stopwords()
    assert {"的", "了", "the", "and"} <= stop
    assert "北京" not in stop


def test_load_stopwords(tmp_path: Path) -> None:
    """Stop words load from a file, one a line, with a byte-order mark and blank lines ignored."""
    path = tmp_path / "stop.txt"
    path.write_text("\ufeff的\n\nthe\n  了  \n", encoding="utf-8")
    assert load_stopwords(path) == frozenset({"的", "the", "了"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello 世界, 2024!", ["hello", "世", "界", "2024"]),
        ("北京天气", ["北", "京", "天", "气"]),
        ("don't stop-me now_ok", ["don't", "stop-me", "now", "ok"]),
        ("版本2.0发布", ["版", "本", "2.0", "发", "布"]),
        ("かな漢字", ["か", "な", "漢", "字"]),
        ("，。 !", []),
    ],
)
def test_units(text: str, expected: list[str]) -> None:
    """units: each CJK character alone, each word of another script whole."""
    assert units(text) == expected


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [
        ("a,bcd", 2, ["ab", "bc", "cd"]),
        ("北京, 天气", 3, ["北京天", "京天气"]),
        ("新闻 news", 4, ["新闻ne", "闻new", "news"]),
        ("ab", 3, ["ab"]),
        ("中", 1, ["中"]),
        ("，。", 2, []),
        ("", 2, []),
    ],
)
def test_char_ngrams(text: str, n: int, expected: list[str]) -> None:
    """char_ngrams drops punctuation and spaces; a short text is its own only n-gram."""
    assert char_ngrams(text, n) == expected


def test_char_ngrams_rejects_zero() -> None:
    """An n-gram size below 1 is a ConfigError."""
    with pytest.raises(neardup.ConfigError, match="at least 1"):
        char_ngrams("abc", 0)


@pytest.mark.parametrize("segmenter", SEGMENTERS)
def test_user_dictionary(segmenter: str, tmp_path: Path) -> None:
    """A jieba-format user dictionary (word [freq] [tag]) is honoured by both segmenters."""
    text = "韩冬冬在奈德达普公司工作"
    plain = Tokenizer(segmenter=segmenter)(text)  # type: ignore[arg-type]
    assert "奈德达普" not in plain
    assert "韩冬冬" not in plain
    path = tmp_path / "user.dict"
    path.write_text("奈德达普 10 nz\n韩冬冬\n\n", encoding="utf-8")
    tok = Tokenizer(segmenter=segmenter, user_dict=str(path))  # type: ignore[arg-type]
    assert tok(text) == ["韩冬冬", "在", "奈德达普", "公司", "工作"]


def test_user_dictionary_missing(tmp_path: Path) -> None:
    """A user dictionary that is not a file is a ConfigError naming it."""
    missing = str(tmp_path / "nope.dict")
    with pytest.raises(neardup.ConfigError, match=r"nope\.dict"):
        Tokenizer(user_dict=missing)("北京")


def test_user_dictionary_malformed_line(tmp_path: Path) -> None:
    """A user dictionary line with too many fields is a ConfigError with file and line number."""
    path = tmp_path / "bad.dict"
    path.write_text("北京 3 ns\n天气 1 n extra\n", encoding="utf-8")
    with pytest.raises(neardup.ConfigError, match=r"bad\.dict:2"):
        Tokenizer(user_dict=str(path))("北京天气")


def test_unknown_segmenter() -> None:
    """An unknown segmenter name is a ConfigError."""
    with pytest.raises(neardup.ConfigError, match="rjieba"):
        get_segmenter("thulac")  # type: ignore[arg-type]
