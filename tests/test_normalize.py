"""Normalization: texts that differ only in markup, width, case, script or spacing are equal."""

from __future__ import annotations

import importlib
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup import Normalizer, normalize
from neardup.measures import METHODS
from neardup.normalize import fold_whitespace, html_to_text, looks_like_html, nfkc

# Each pair differs only in the one thing the default processor folds away.
VARIANTS = [
    pytest.param("<p>北京今天天气<b>晴朗</b></p>", "北京今天天气晴朗", id="html-tags-chinese"),
    pytest.param(
        "<div><p>The quick brown fox</p></div>", "The quick brown fox", id="html-tags-english"
    ),
    pytest.param("<span>neardup 2.0</span>版本发布", "neardup 2.0版本发布", id="html-tags-mixed"),
    pytest.param("A &amp; B &lt;3 &quot;新闻&quot;", 'A & B <3 "新闻"', id="html-entities"),
    pytest.param("&#21271;&#x4eac;天气晴朗", "北京天气晴朗", id="html-numeric-entities"),
    pytest.param("北京&nbsp;天气晴朗", "北京 天气晴朗", id="html-nbsp"),
    pytest.param(
        "<p>北京天气晴朗</p><script>alert('新闻')</script>", "北京天气晴朗", id="html-script"
    ),
    pytest.param(
        "<style>p{color:red}</style><p>Weather news today</p>",
        "Weather news today",
        id="html-style",
    ),
    pytest.param(
        "<html><head><title>标题</title></head><body>正文内容</body></html>",
        "正文内容",
        id="html-head",
    ),
    pytest.param("ｎｅａｒｄｕｐ２．０版本！", "neardup2.0版本!", id="width-mixed"),
    pytest.param(
        "北京，今天（周一）天气晴朗。", "北京,今天(周一)天气晴朗。", id="width-chinese-punctuation"
    ),
    pytest.param("Ｔｈｅ ｑｕｉｃｋ ｂｒｏｗｎ ｆｏｘ", "The quick brown fox", id="width-english"),
    pytest.param("The Quick Brown FOX Jumps", "the quick brown fox jumps", id="case-english"),
    pytest.param("NearDup 新闻 REPORT", "neardup 新闻 report", id="case-mixed"),
    pytest.param("STRASSE ΣΊΣΥΦΟΣ", "straße σίσυφος", id="case-fold"),
    pytest.param("漢語", "汉语", id="script-short"),
    pytest.param("北京今天天氣晴朗，適合出遊", "北京今天天气晴朗，适合出游", id="script-chinese"),
    pytest.param("這是一個測試 test 2024", "这是一个测试 test 2024", id="script-mixed"),
    pytest.param("  北京  今天\t天气  ", "北京 今天 天气", id="whitespace-chinese"),
    pytest.param("the quick   brown\t\tfox \n", "the quick brown fox", id="whitespace-english"),
    pytest.param("第一行\r\n\r\n  第二行 line", "第一行\n第二行 line", id="whitespace-lines"),
    pytest.param("北京\u3000天气晴朗", "北京 天气晴朗", id="whitespace-ideographic"),
    pytest.param("北京\x00天气\x07晴朗", "北京 天气 晴朗", id="control-characters"),
]


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize(("a", "b"), VARIANTS)
def test_variants_are_identical(method: str, a: str, b: str) -> None:
    """With the default processor, a pair differing only in one normalized aspect scores 1.0."""
    assert normalize(a) == normalize(b)
    assert neardup.similarity(a, b, method=method) == 1.0


@pytest.mark.parametrize(("a", "b"), VARIANTS)
def test_processor_none_does_not_normalize(a: str, b: str) -> None:
    """With processor=None the same pairs are compared as given, so they differ."""
    assert a != b
    assert neardup.similarity(a, b, method="levenshtein", processor=None) < 1.0
    assert neardup.similarity(a, b, method="common", processor=None) < 1.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<p>ＮＥＷＳ&amp;天氣  預報</p>", "news&天气 预报"),
        ("第一行\n\n\n  第二行  ", "第一行\n第二行"),
        ("The Quick Brown Fox", "the quick brown fox"),
        ("3 < 4 and 5 > 2", "3 < 4 and 5 > 2"),
        ("\ud800", "\ufffd"),
        ("北京\udfff天气", "北京\ufffd天气"),
        ("a\x00b\x1fc\x7fd", "a b c d"),
        ("   \t\n  ", ""),
        ("", ""),
    ],
)
def test_normalize_outputs(text: str, expected: str) -> None:
    """normalize gives the expected text for HTML, width, script, lines, surrogates, controls."""
    assert normalize(text) == expected


RAW_SAMPLES = [
    "<p>ＮＥＷＳ&amp;天氣  預報</p>",
    "The Quick  Brown\tFox\r\n",
    "漢語 ＡＢＣ",
    "\ud800lone\udfff",
    "a\x00b\x07",
    "",
]


@pytest.mark.parametrize("text", RAW_SAMPLES)
def test_raw_normalizer_leaves_text_unchanged(text: str) -> None:
    """Normalizer.raw() returns the text exactly as given, lone surrogates included."""
    assert Normalizer.raw()(text) == text


@settings(max_examples=200, deadline=None)
@given(st.text() | st.text(alphabet="a中\ud800\x00 <>&;pＡ漢"))
def test_raw_normalizer_property(text: str) -> None:
    """Normalizer.raw() is the identity on any text."""
    assert Normalizer.raw()(text) == text


@settings(max_examples=200, deadline=None)
@given(st.text() | st.text(alphabet="a中\ud800\x00\x85 \t\n<>&;/pＡ漢"))
def test_normalize_output_is_clean(text: str) -> None:
    """normalize never fails and leaves no surrogates, control characters or runs of spaces."""
    out = normalize(text)
    assert out == out.strip()
    assert not re.search(r"[\ud800-\udfff]", out)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
    assert "  " not in out
    out.encode("utf-8")


@pytest.mark.parametrize(
    ("normalizer", "text", "expected"),
    [
        (Normalizer(html=False), "<b>北京</b>", "<b>北京</b>"),
        (Normalizer(width=False), "ＡＢ北京", "ａｂ北京"),
        (Normalizer(case=False), "ABC 北京", "ABC 北京"),
        (Normalizer(script=False), "漢語 ＡＢＣ", "漢語 abc"),
        (Normalizer(whitespace=False), " the  quick\tfox ", " the  quick\tfox "),
        (Normalizer(), "<i>漢語</i>  ＡＢＣ", "汉语 abc"),
    ],
)
def test_each_step_can_be_switched_off(normalizer: Normalizer, text: str, expected: str) -> None:
    """Each flag of Normalizer turns exactly its own step off."""
    assert normalizer(text) == expected


def test_custom_normalizer_as_processor() -> None:
    """A Normalizer instance works as a measure's processor."""
    keep_script = Normalizer(script=False)
    assert neardup.similarity("漢語", "汉语", method="levenshtein", processor=keep_script) == 0.0
    assert neardup.similarity("漢語", "汉语", method="levenshtein") == 1.0


@pytest.mark.parametrize("value", [None, b"text", 3.5], ids=["none", "bytes", "float"])
def test_normalize_rejects_non_str(value: object) -> None:
    """normalize of something that is not a str raises InputError."""
    with pytest.raises(neardup.InputError, match="must be a str"):
        normalize(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a <b>bold</b> move", True),
        ("<!-- comment -->", True),
        ("<!doctype html>", True),
        ("<p>新闻</p>", True),
        ("A &amp; B", False),
        ("<Omnibus Computer Graphics Inc> said", False),
        ("3 < 4 and 5 > 2", False),
        ("北京 & 上海", False),
        ("plain text 纯文本", False),
    ],
)
def test_looks_like_html(text: str, expected: bool) -> None:
    """Markup counts as HTML; entities alone, stray < > & and <Company Inc> mentions do not."""
    assert looks_like_html(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A &amp; B", "a & b"),
        ("&#21271;京", "北京"),
        ("<Omnibus Computer Graphics Inc> said it", "<omnibus computer graphics inc> said it"),
    ],
)
def test_entities_and_angle_brackets(text: str, expected: str) -> None:
    """Entities are decoded without an HTML parse; a <Company Inc> mention is kept as text."""
    assert normalize(text) == expected


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<div>一<script>x()</script></div><p>A &amp; B</p>", "一\nA & B"),
        ("<style>.a{}</style><p>新闻</p><noscript>请启用</noscript>", "新闻"),
        ("<ul><li>one</li><li>二</li></ul>", "one\n二"),
        ("", ""),
    ],
)
def test_html_to_text(html: str, expected: str) -> None:
    """html_to_text drops scripts and styles, decodes entities and ends a line at each block."""
    assert html_to_text(html) == expected


# -- the fast paths equal the plain algorithms --------------------------------------------------

# Full-width and half-width forms, compatibility ideographs, Latin-1 signs, letterlike symbols,
# number forms, spaces of every kind, combining marks (which compose with what precedes them),
# Hangul jamo and syllables, Traditional characters, entities, surrogates and controls.
WIDTH_ALPHABET = (
    "aZ9 .,\n\t中漢體ＡＺａｚ０９，。：；！？（）［］｛｝／－＋＝＠＃％＆～｜"
    "\u00a0\u00b4\u00b5\u00bd\u00e9\u0301\u0308\u0327\u2002\u2009\u2026\u2122\u2160\u2161"
    "\u2460\u3000\u3001\u3002\u3099\u309b\u30ab\uff76\uff9e\ufe30\ufe50\uf900\ufa10"
    "\u1100\u1161\u11a8\uac00\u212b\u2fd5\u3250\u33a1\U0001d400\U0002f800\ud800\udfff"
)
WIDTH_TEXT = st.text(alphabet=WIDTH_ALPHABET, max_size=80) | st.text(max_size=40)


@settings(max_examples=400, deadline=None)
@given(WIDTH_TEXT)
def test_nfkc_equals_unicodedata(text: str) -> None:
    """nfkc (compatibility characters replaced one by one) is exactly unicodedata's NFKC."""
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


@pytest.mark.parametrize(
    "text",
    [
        "ＮＥＷＳ，天气（晴）",
        "e\u0301",  # already composed by NFKC: é
        "\uff76\uff9e",  # half-width katakana ka + voiced mark: one character
        "\u1100\u1161",  # Hangul jamo: one syllable
        "\u00b4\u0301",  # a compatibility character then a combining mark
        "Ａ\u0301",  # full-width A, replaced, then composed with the accent
        "plain ascii",
        "",
    ],
)
def test_nfkc_composes_across_replaced_characters(text: str) -> None:
    """Where replaced characters compose with their neighbours the result is still NFKC."""
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def reference_fold(text: str) -> str:
    """Whitespace folding as three regex substitutions (the definition)."""
    text = _CONTROLS.sub(" ", text)
    text = re.sub(r"[^\S\n]+", " ", text)
    return re.sub(r"\s*\n\s*", "\n", text).strip()


SPACE_TEXT = (
    st.text(
        alphabet="ab中 \n\t\r\x0b\x0c\x1c\x1f\x00\x07\x85\xa0\u2028\u2029\u3000\u200b\u2060",
        max_size=60,
    )
    | st.text(max_size=40)
    | st.text(alphabet="ab. \n", max_size=60)  # spaces and line breaks alone: printable
)


@settings(max_examples=400, deadline=None)
@given(SPACE_TEXT)
def test_fold_whitespace_equals_regex_definition(text: str) -> None:
    """fold_whitespace (a check for the usual case, else line by line) equals the regexes."""
    assert fold_whitespace(text) == reference_fold(text)


@pytest.mark.parametrize(
    "text",
    [
        "a\nb", "a\n\nb", "\na b\n", "a  b", "a \nb", "a\n b", " a", "a ", "a\u3000b", "a\x00b", "",
        "\n \n", "a \n \n b", "  a  \n\n  b  ", " \n", "\n ", "a   \n   b", " ", "\n", "  \n  ",
    ],
)  # fmt: skip
def test_fold_whitespace_cases(text: str) -> None:
    """The usual case and each thing that takes it off the fast path."""
    assert fold_whitespace(text) == reference_fold(text)


def reference_normalize(text: str) -> str:
    """Every normalization step, each as the plain library call."""
    from neardup.normalize import to_simplified

    text = re.sub(r"[\ud800-\udfff]", "\ufffd", text)
    if looks_like_html(text):
        text = html_to_text(text)
    elif re.search(r"&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);", text):
        import html

        text = html.unescape(text)
    text = unicodedata.normalize("NFKC", text).casefold()
    return reference_fold(to_simplified(text))


@settings(max_examples=300, deadline=None)
@given(WIDTH_TEXT | SPACE_TEXT | st.text(alphabet="a中漢&amp;#1;<>/p ", max_size=40))
def test_normalize_equals_plain_steps(text: str) -> None:
    """normalize gives exactly what the plain steps give."""
    assert normalize(text) == reference_normalize(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_ascii_text_is_what_opencc_makes_of_it(text: str) -> None:
    """to_simplified gives an ASCII text back without OpenCC: what OpenCC gives too."""
    from neardup.normalize import _opencc, to_simplified

    assert to_simplified(text) == _opencc("t2s").convert(text) == text  # type: ignore[attr-defined]


# Characters OpenCC's t2s changes alone (漢 後 乾 髮), ones it changes only inside a phrase
# (瞭 of 一目瞭然, 沈 of 沈浸, 藉 of 慰藉), the other characters of those phrases, characters
# it leaves alone (北 京 一 然 隆), a compatibility ideograph (U+F900, normalized first), a
# character past the BMP it changes (U+30EDE) and one it does not (an emoji), and line
# breaks, spaces and ASCII between them.
T2S_ALPHABET = "漢後乾髮瞭一目然沈浸藉慰北京隆\uf900\U00030ede\U0001f600\n\n a1"


def _whole(text: str) -> str:
    from neardup.normalize import _opencc

    return _opencc("t2s").convert(text)  # type: ignore[attr-defined,no-any-return]


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet=T2S_ALPHABET, max_size=60)
    | st.lists(
        st.sampled_from(
            ["一目瞭然", "沈浸", "乾隆", "慰藉", "北京", "頭髮", "\n", "a", "\U00030ede"]
        ),
        max_size=12,
    ).map("".join)
)
def test_to_simplified_equals_opencc_on_the_whole_text(text: str) -> None:
    """to_simplified, which converts only the lines holding a trigger character (or the
    whole text where they are most of it), gives what OpenCC gives of the whole text."""
    from neardup.normalize import to_simplified

    assert to_simplified(text) == _whole(text)


def test_to_simplified_converts_only_lines_that_may_change() -> None:
    """With the installed OpenCC's dictionaries (the ones of data/t2s_triggers.json), a
    simplified text's lines without a trigger never reach OpenCC, and a line whose only
    trigger changes in a phrase does."""
    from unittest import mock

    n = importlib.import_module("neardup.normalize")  # (neardup.normalize is a function)

    if n._t2s_triggers() is None:  # (the next tests check that this is right)
        pytest.skip("the installed OpenCC's t2s dictionaries are not those of "
                    "data/t2s_triggers.json: scripts/t2s_triggers.py writes theirs")  # fmt: skip
    text = "北京今天晴\n一目瞭然\n上海多云\n" + "广州小雨\n" * 5
    real = n._opencc("t2s")
    with mock.patch.object(n, "_opencc") as opencc:
        opencc.return_value.convert.side_effect = real.convert  # type: ignore[attr-defined]
        out = n.to_simplified(text)
    assert out == text.replace("瞭", "了") == _whole(text)
    assert [c.args for c in opencc.return_value.convert.call_args_list] == [("一目瞭然",)]


def test_to_simplified_without_known_dictionaries_converts_whole_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the installed dictionaries are not the ones the triggers were read from, no
    line is skipped: whole texts go to OpenCC."""
    n = importlib.import_module("neardup.normalize")  # (neardup.normalize is a function)

    monkeypatch.setattr(n, "_t2s_triggers", lambda: None)
    assert n.to_simplified("一目瞭然\n漢語") == "一目了然\n汉语" == _whole("一目瞭然\n漢語")


def test_t2s_triggers_file_is_what_the_installed_opencc_makes(tmp_path: Path) -> None:
    """scripts/t2s_triggers.py, run on the installed OpenCC, writes the shipped file again
    (its digests, so the fast path is on) — or one with other digests, in which case the
    shipped one is refused (a newer OpenCC: whole texts are converted, as before)."""
    import json
    import subprocess
    import sys

    n = importlib.import_module("neardup.normalize")  # (neardup.normalize is a function)

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "t2s_triggers.json"
    subprocess.run(
        [sys.executable, str(root / "scripts" / "t2s_triggers.py"), "--out", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    made = json.loads(out.read_text(encoding="utf-8"))
    shipped = json.loads(
        (root / "src" / "neardup" / "data" / "t2s_triggers.json").read_text(encoding="utf-8")
    )
    if made["files"] == shipped["files"]:
        assert made == shipped
        assert n._t2s_triggers() is not None
    else:
        assert n._t2s_triggers() is None
