"""A copy changes no number: the numbers two texts share, read from their characters (two
short texts) or from their shingles, against the edits that change one and those that
do not."""

from __future__ import annotations

import importlib

from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.engine import DedupConfig, make_sketch

v = importlib.import_module("neardup.engine.verify")  # the package exports a function of that name

CFG = DedupConfig()
NUMERALS = v.NUMERALS
WORDS = "天气晴朗的早晨发射会议举行abcxyz "
TEXT = st.text(alphabet=NUMERALS + WORDS, min_size=1, max_size=60)


@settings(max_examples=300)
@given(TEXT, st.data())
def test_one_numeral_replaced_by_another_changes_a_number(text: str, data: st.DataObject) -> None:
    """Of two texts that differ in one numeral only (for one of the same kind: a digit, or
    a Chinese digit), the later changed a number (its share under 1); a text against
    itself changed none."""
    assert v._numbers_by_characters(text, text) == 1.0
    at = [i for i, c in enumerate(text) if c in "0123456789一二三四五六七八九"]
    if not at:
        return
    i = data.draw(st.sampled_from(at))
    kind = "0123456789" if text[i].isascii() else "一二三四五六七八九"
    other = data.draw(st.sampled_from([c for c in kind if c != text[i]]))
    later = text[:i] + other + text[i + 1 :]
    assert v._numbers_by_characters(later, text) < 1.0


@settings(max_examples=500)
@given(TEXT, st.data())
def test_numerals_replaced_beside_other_edits_change_a_number(
    text: str, data: st.DataObject
) -> None:
    """Numerals replaced by others, beside another edit — a character that is no numeral
    replaced by one the text does not hold, or dropped —, change a number however an
    alignment of the raw characters would pair them ("十四届三中全会" after "十三届六中全会",
    where "三" is in both)."""
    at = [i for i, c in enumerate(text) if c in NUMERALS]
    words = [i for i, c in enumerate(text) if c not in NUMERALS]
    if not at or not words:
        return
    chars = list(text)
    for i in data.draw(st.lists(st.sampled_from(at), min_size=1, max_size=3, unique=True)):
        chars[i] = data.draw(st.sampled_from([c for c in NUMERALS if c != text[i]]))
    chars[data.draw(st.sampled_from(words))] = data.draw(st.sampled_from(["", "届", "Q"]))
    later = "".join(chars)
    assert v._numbers_by_characters(later, text) < 1.0, later


def _chinese(n: int) -> str:
    """``n`` (0 to 99) in Chinese numerals, as a title writes it: 十五, 二十, 七."""
    digits = "〇一二三四五六七八九"
    if n < 10:
        return digits[n]
    tens, ones = divmod(n, 10)
    return ("" if tens == 1 else digits[tens]) + "十" + (digits[ones] if ones else "")


@given(st.integers(0, 99), st.integers(0, 99), st.sampled_from(["第{}集", "{}人受伤", "之{}"]))
def test_a_number_spelt_another_way_is_the_same_number(n: int, m: int, frame: str) -> None:
    """A number written in digits after the same number in Chinese numerals (or the other
    way round) is no change; another number, however written, is."""
    digits, chinese = frame.format(n), frame.format(_chinese(n))
    assert v._numbers_by_characters(digits, chinese) == 1.0
    assert v._numbers_by_characters(chinese, digits) == 1.0
    if m != n:
        assert v._numbers_by_characters(frame.format(m), chinese) == 0.0
        assert v._numbers_by_characters(frame.format(_chinese(m)), digits) == 0.0


def test_runs_of_numerals_are_read_whole() -> None:
    """The runs around a changed stretch are compared whole: "二〇二五" and "2025" are one
    year, "1一" is no number, and "〇" and "零" are both nought."""
    assert v._numbers_by_characters("2025年报告", "二〇二五年报告") == 1.0
    assert v._numbers_by_characters("二零二五年报告", "二〇二五年报告") == 1.0
    assert v._numbers_by_characters("第1一集", "第十一集") == 0.0
    assert v._numbers_by_characters("第12集", "第十一集") == 0.0


def test_two_changes_an_alignment_would_pair_otherwise() -> None:
    assert (
        v._numbers_by_characters("学会十四届三中全会今天闭幕", "学会十三届六中全会今天闭幕") == 0.0
    )


@settings(max_examples=300)
@given(TEXT, st.data())
def test_a_changed_character_that_is_no_numeral_changes_no_number(
    text: str, data: st.DataObject
) -> None:
    """Replacing, adding or dropping a character that is no numeral (next to a number or
    not), or dropping a numeral, changes no number."""
    i = data.draw(st.integers(0, len(text)))
    c = data.draw(st.sampled_from(WORDS))
    edits = [text[:i] + c + text[i:]]  # added
    if i < len(text) and text[i] not in NUMERALS:
        edits += [text[:i] + c + text[i + 1 :], text[:i] + text[i + 1 :]]  # replaced, dropped
    if i < len(text) and text[i] in NUMERALS:
        edits.append(text[:i] + text[i + 1 :])  # a numeral dropped
    for later in edits:
        assert v._numbers_by_characters(later, text) == 1.0, later


def test_longer_texts_are_read_from_their_shingles() -> None:
    """Two texts of 100 units or more: a number changed in the middle is seen (from the
    shingles), one changed within a shingle's width of the start is not (as the README
    says)."""
    body = "北京地铁十九号线今天开通运营，全长二十二公里，设车站十座。" * 5
    a = make_sketch("三号" + body + "第三届活动在京举行，各方代表出席。" + body, CFG)
    middle = make_sketch("三号" + body + "第四届活动在京举行，各方代表出席。" + body, CFG)
    start = make_sketch("五号" + body + "第三届活动在京举行，各方代表出席。" + body, CFG)
    assert a.n_units >= v.CHARACTER_UNITS
    assert v.numbers_kept(middle, a, CFG) < 1.0
    assert v.numbers_kept(start, a, CFG) == 1.0


@given(st.text(alphabet=NUMERALS, max_size=8))
def test_every_run_of_numerals_has_a_value_or_none(run: str) -> None:
    """Any run of numerals reads as a number or as none, never as an error; digits read as
    Python reads them."""
    value = v._numeral_value(run)
    assert value is None or value >= 0
    if run and run.isascii():
        assert value == int(run)


@st.composite
def _news_line(draw: st.DrawFn) -> str:
    """A line around the labelled lines' bounds: a label of 0 to 26 characters, what may
    follow it (a colon, "://", a digit), and a rest that makes the line as long as the
    bounds (79 to 81, 159 to 161 characters) or not, with colons, digits and "。"."""
    size = draw(st.sampled_from([0, 1, 2, 12, 23, 24, 25, 26]))
    label = draw(st.text(alphabet="ab7٣ 中/.w", min_size=size, max_size=size))
    after = draw(st.sampled_from(["", ":", ": ", ":\t", "://", ":7", ":٣", "::"]))
    rest = draw(st.text(alphabet="ab7٣ 。/w.(中:\t", max_size=12))
    end = draw(st.sampled_from(["", ":", ": \t", "\u3000", "www.x", " http://a.b/1"]))
    total = draw(st.sampled_from([None, 79, 80, 81, 159, 160, 161]))
    fill = max(0, total - len(label + after + rest + end)) if total else 0
    return label + after + rest + "a" * fill + end


@settings(max_examples=2000)
@given(st.lists(_news_line(), min_size=1, max_size=4), st.sampled_from(["", "\n", " "]))
def test_labelled_lines_and_addresses_are_blanked_as_the_expressions_blank_them(
    lines: list[str], edge: str
) -> None:
    """The line-by-line blanking of labelled lines and addresses gives the text the regular
    expressions give, whatever the lines' lengths (at 24, 80 and 160 characters and either
    side), colons, digits (any decimal digit, "٣" too), "//", "。", spaces and addresses;
    a text of one line has its addresses blanked alone."""
    text = edge + "\n".join(lines) + edge
    blank = v._ADDRESSES if "\n" not in text.strip() else v._NOT_NEWS
    want = blank.sub(lambda m: " " * len(m.group()), text)
    assert v._news(text) == want


def test_a_titles_figures_are_read_once_for_all_its_candidates() -> None:
    """A short text verified against many candidates (whole, as titles, each lacking one of
    its figures) reads its units and figures once, and every verdict is the one worked out
    afresh: "第 123 楼 reply 45" against floors that lack its 45 are copies of none."""
    from unittest import mock

    later = make_sketch("第 123 楼 reply 45 已经更新", CFG)
    earlier = [make_sketch(f"第 123 楼 reply {k} 已经更新", CFG) for k in range(46, 56)]
    v._remembered_figures.cache_clear()
    with mock.patch.object(v, "unit_chars", wraps=v.unit_chars) as read:
        verdicts = [v.verify(later, e, CFG) for e in earlier]
    assert read.call_count == 1
    with mock.patch.object(v, "_remembered_figures", v._figures_inside):
        assert [v.verify(later, e, CFG) for e in earlier] == verdicts
    assert all(x.is_duplicate and not x.is_copy for x in verdicts)
