"""The compiled boilerplate scan (the lines holding a hint or a dateline prefix, folded
texts, datelines) strips what the regular expressions strip, and the figures inside a span
are the reference's; the figures kernel of whole texts is compared in test_sketch.py,
through the sketches' numbers."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neardup import normalize
from neardup.boilerplate import strip_boilerplate_all

from .strategies import TEXTS

pytest.importorskip("numba")


def stripped(texts: list[str], mode: str) -> list[str]:
    """strip_boilerplate_all of ``texts`` with the kernels ``on`` or ``off``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", mode)
        return strip_boilerplate_all(texts)


def assert_strips_as_reference(texts: list[str]) -> None:
    """Raw and normalized (as the engine strips them), the compiled scan strips ``texts``
    as the regular expressions do."""
    assert stripped(texts, "on") == stripped(texts, "off")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", "off")
        normalized = [normalize(t) for t in texts]
    assert stripped(normalized, "on") == stripped(normalized, "off")


@settings(max_examples=300)
@given(st.lists(TEXTS, min_size=1, max_size=5))
def test_boilerplate_scan_matches_reference(texts: list[str]) -> None:
    """Raw texts: the compiled scan strips what the regular expressions strip."""
    assert stripped(texts, "on") == stripped(texts, "off")


@settings(max_examples=300)
@given(st.lists(TEXTS, min_size=1, max_size=5))
def test_boilerplate_scan_matches_reference_on_normalized_text(texts: list[str]) -> None:
    """Normalized texts (as the engine strips them): the same."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", "off")
        normalized = [normalize(t) for t in texts]
    assert stripped(normalized, "on") == stripped(normalized, "off")


def _hint_literals() -> list[str]:
    """The fixed text each hint and dateline prefix starts with."""
    from neardup import boilerplate as bp

    alternatives = [*bp._HINT_ALTERNATIVES, *bp._PREFIX_ALTERNATIVES]
    return sorted({bp._literal_prefix(a)[0] for a in alternatives})


#: lines of bracketed labels, hints and dateline prefixes (and whole ones) right before
#: ASCII, CJK or the line's end (the scan rules out two ASCII characters no literal starts
#: with at once, and looks both tables up in one)
_LABEL_PIECES = [
    *_hint_literals(), "[", "]", "【", "】", "(", ")", "a", "ap", "x", "Z", "1", "2023", " ",
    ":", "：", "-", "—", "编辑", "新", ">", ".", "。", "[ap]", "[Z1]", "【编辑】", "[新]",
    "(reuters) - ", "london (ap) — ", "(本文转载自《晨报》)", "【新华网讯】", "新华社北京3月2日电",
    "人民网2021-09-22消息,", "\n",
]  # fmt: skip
LABELLED = st.lists(
    st.lists(st.sampled_from(_LABEL_PIECES), max_size=12).map("".join), min_size=1, max_size=6
).map("\n".join)


@settings(max_examples=400)
@given(st.lists(LABELLED, min_size=1, max_size=4))
def test_hints_before_any_character_are_stripped_as_the_reference(texts: list[str]) -> None:
    """Every hint's and dateline prefix's literal, before ASCII, CJK or a line end, and
    lines of bracketed labels: raw and normalized, the compiled scan strips what the
    regular expressions strip."""
    assert_strips_as_reference(texts)


#: quoted replies and breadcrumbs: runs of ">" with words and sentence ends at every distance
#: from them (a line may hold a breadcrumb only when both are near, see scan_texts)
_QUOTE_PIECES = [
    ">", "> ", ">>", " > ", "a", "ab ", "word ", "x" * 9, "y" * 19, "z" * 21, ".", ". ", "!",
    "。", "?", " ", "  ", "\t", "\n", "\n>", "\n> > ", "home > news > ",
]  # fmt: skip
QUOTED = st.lists(st.sampled_from(_QUOTE_PIECES), max_size=50).map("".join)


@settings(max_examples=400)
@given(st.lists(QUOTED, min_size=1, max_size=4))
def test_quoted_lines_and_breadcrumbs_are_stripped_as_the_reference(texts: list[str]) -> None:
    """Lines of ">" the scan leaves out unless they may hold a breadcrumb: raw and
    normalized, the compiled scan strips what the regular expressions strip."""
    assert_strips_as_reference(texts)


#: "by " where a sentence starts and where one does not: after words, sentence ends,
#: brackets, whitespace of every kind, and each character a dateline prefix ends with
_BY_PIECES = [
    "by ", "by jane doe, x", "by jane doe", "nearby ", "caused by ", "by\tjoe smith|", "a",
    "word", ". ", ".", "。", "!", "?", "！", "？", "(", "[", "【", "<", ")", "]", "】", " ",
    "  ", "\t", "\u3000", "-", "–", "—", "电", "讯", ",", "，", "x)", "(reuters) - ",
    "london (ap) — ", "新华社北京3月2日电", "新华社北京3月2日电(记者李明)", "人民网2021-09-22消息,",
    "【新华网讯】", "(本文转载自《晨报》)", "\n",
]  # fmt: skip
BYLINES = st.lists(st.sampled_from(_BY_PIECES), max_size=14).map("".join)


@settings(max_examples=500)
@example(["nearby jane doe, x\n(reuters) - by jane doe, x\nok. by jane doe, y"])
@given(st.lists(BYLINES, min_size=1, max_size=4))
def test_bylines_where_a_sentence_may_start_are_stripped_as_the_reference(
    texts: list[str],
) -> None:
    """The scan takes "by " for a hint only where a sentence may start (the line's start, a
    sentence end, a bracket, a dateline prefix's end, whitespace between): raw and
    normalized, it strips what the regular expressions strip."""
    assert_strips_as_reference(texts)


#: what may come before a sentence's byline, and what may not
_BEFORE_A_BYLINE = [
    "", "ok. ", "ok.  ", "好。", "ok!", "ok?", "好！", "好？", "(", "[", "【", "<", "( ", "ok. [ ",
    "x)", "x] ", "x】", "新华社北京3月2日电", "新华社北京3月2日电(记者李明)", "人民网2021-09-22消息,",
    "人民网2021-09-22消息，", "(reuters) - ", "london (ap) — ", "(ap) – ", "\t", "\u3000",
    "(转自晨报)", "(转自晨报]", "(转自晨报】", "新华社北京3月2日讯", "near", "caused ", "word (", "1",
]  # fmt: skip


@pytest.mark.parametrize("before", _BEFORE_A_BYLINE)
@pytest.mark.parametrize("line", ["by jane doe, x", "[纠错] [图集]", "【纠错】【图集】 "])
def test_a_byline_or_labels_after_anything_are_stripped_as_the_reference(
    before: str, line: str
) -> None:
    """A byline or a row of bracketed labels after each thing that may end what comes
    before a sentence (and after some that may not), in a line of its own and after
    another line: raw and normalized, the compiled scan strips what the regular
    expressions strip."""
    texts = [f"{before}{line}", f"story.\n{before}{line}\nmore"]
    assert_strips_as_reference(texts)


#: section datelines as wide as the pattern lets them be, and a little wider: up to 20
#: characters of label (digits, spaces and separators among them), a separator, a date of
#: 4, 1-2 and 1-2 digits (ASCII, full-width or Arabic-Indic) with separators, 日, a space at
#: any of their places
_DIGITS = st.sampled_from(["1", "2", "0", "９", "٣"])
_SPACE = st.sampled_from(["", " ", "  ", "\t"])
_DATE_SEP = st.sampled_from(["年", "月", "-", "/", ".", "|"])
_LABEL = st.sampled_from("ab 1/|·-新闻。.")
DATELINES = st.tuples(
    st.integers(0, 24).flatmap(lambda n: st.lists(_LABEL, min_size=n, max_size=n)).map("".join),
    st.sampled_from(["", "/", "|", "·", "-"]),
    _SPACE,
    st.lists(_DIGITS, min_size=3, max_size=5).map("".join),
    _SPACE, _DATE_SEP, _SPACE,
    st.lists(_DIGITS, min_size=1, max_size=3).map("".join),
    _SPACE, _DATE_SEP, _SPACE,
    st.lists(_DIGITS, min_size=1, max_size=3).map("".join),
    _SPACE,
    st.sampled_from(["", "日", "日 ", "x"]),
).map("".join)  # fmt: skip


#: the widest section dateline of a folded line (38 characters), and one character more
WIDEST = "local news section a| 2026 - 03 - 13 日"
WIDER = "local news section ab| 2026 - 03 - 13 日"


@settings(max_examples=400)
@example([WIDEST, WIDER, f"a\n{WIDEST}\nb", WIDEST.replace(" ", "  ")])
@given(
    st.lists(
        st.lists(DATELINES | TEXTS, min_size=1, max_size=4).map("\n".join), min_size=1, max_size=4
    )
)
def test_datelines_are_stripped_as_the_reference(texts: list[str]) -> None:
    """Section datelines of every width the pattern allows, beside other lines: raw and
    normalized, the compiled scan strips what the regular expressions strip (it flags a
    folded text's line as a possible dateline only up to 38 characters and with 6 digits)."""
    assert_strips_as_reference(texts)


@settings(max_examples=600)
@example(WIDEST)
@example(WIDER)
@given(DATELINES)
def test_a_folded_dateline_is_as_short_and_has_the_digits_the_scan_asks(line: str) -> None:
    """Every line of a folded text that the dateline pattern matches has at most
    ``_DATE_MOST`` characters and ``_DATE_DIGITS`` decimal digits: the scan's bounds follow
    from the pattern (a wider pattern would need wider bounds)."""
    from neardup.boilerplate import _DATELINE
    from neardup.kernels import _text
    from neardup.normalize import fold_whitespace

    folded = fold_whitespace(line)
    assert "\n" not in folded
    if _DATELINE.match(folded):
        assert len(folded) <= _text._DATE_MOST
        assert sum(c.isdecimal() for c in folded) >= _text._DATE_DIGITS


@settings(max_examples=400)
@given(TEXTS, st.integers(-2, 60), st.integers(-2, 60))
def test_the_figures_inside_a_span_are_the_references(text: str, lo: int, hi: int) -> None:
    """The figures that start inside a span of a text, found by the compiled scan of the
    span (from the last character before it that no figure holds to the first one after
    it) or by the regular expressions, are those a reading of the whole text finds there."""
    from unittest import mock

    from neardup import kernels
    from neardup.engine.sketches import figures_at, figures_within

    lo = max(0, min(lo, len(text)))
    want = {f for f, at in figures_at(text) if lo <= at <= hi}
    for fast in (True, False):
        with mock.patch.object(kernels, "wanted", return_value=fast):
            assert figures_within(text, lo, hi) == want


#: texts of a few letters: seeds repeated often, some past the cap, maximal matches that
#: touch either end
_FEW = st.text(alphabet="ab天地\n", min_size=0, max_size=300)


@settings(max_examples=400)
@given(st.one_of(_FEW, TEXTS), st.one_of(_FEW, TEXTS), st.integers(1, 8))
def test_the_maximal_matches_of_two_texts_are_the_references(a: str, b: str, m: int) -> None:
    """The compiled search for the maximal matches of two texts finds the matches (where
    each starts, and its length) that numpy and Python find, and the plain Python search
    of short texts the same starts."""
    from unittest import mock

    from neardup import kernels, passages

    if len(a) < m or len(b) < m:
        return
    found = {}
    for fast in (True, False):
        with (
            mock.patch.object(kernels, "wanted", return_value=fast),
            mock.patch.object(passages, "_VECTOR_FROM", 0),
        ):
            found[fast] = sorted(passages._matches(a, b, m))
    assert found[True] == found[False]
    assert sorted((i, j) for _, i, j in found[True]) == sorted(passages._starts_py(a, b, m))


@settings(max_examples=200)
@given(st.one_of(_FEW, TEXTS), st.one_of(_FEW, TEXTS))
def test_shared_passages_are_the_same_with_the_kernels(a: str, b: str) -> None:
    from unittest import mock

    from neardup import kernels
    from neardup.passages import shared_passages

    runs = []
    for fast in (True, False):
        with mock.patch.object(kernels, "wanted", return_value=fast):
            runs.append(shared_passages(a + a[:50], b + a, min_len=6, limit=None))
    assert runs[0] == runs[1]


#: whitespace of every kind, controls, line breaks and a few characters between them
_SPACED = st.lists(
    st.sampled_from(
        [" ", "  ", "\t", "\n", "\n\n", " \n ", "\r\n", "\x00", "\x0b", "\x1f", "\x7f", "\x85",
         "\x9f", "\xa0", "\u2028", "\u3000", "\ud800", "a", "字", "😀", "ab c"]
    ),
    max_size=40,
).map("".join)  # fmt: skip
#: and of ASCII alone (folded as bytes)
_SPACED_ASCII = st.lists(
    st.sampled_from([" ", "  ", "\t", "\n", "\n\n", " \n ", "\r\n", "\x00", "\x0b", "\x1f",
                     "\x7f", "a", "ab c", "~"]),
    max_size=40,
).map("".join)  # fmt: skip


@settings(max_examples=400)
@given(st.one_of(_SPACED, _SPACED_ASCII, TEXTS))
def test_whitespace_folds_as_the_reference(text: str) -> None:
    """The compiled fold (a loaded process's) gives what the line-by-line reference gives."""
    fold = importlib.import_module("neardup.normalize").fold_whitespace
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", "on")
        compiled = fold(text)
        mp.setenv("NEARDUP_KERNELS", "off")
        assert compiled == fold(text)


# Characters the NFKC-and-case-fold table holds (letters of each case, full-width forms,
# "…" that becomes three, "µ", "ß", "İ" that folds to two, kana, hangul, box drawing,
# emoji, a CJK character beyond the BMP) and ones it must leave to the reference: combining
# marks after a letter or kana (U+0301, U+3099), the spacing and half-width sound marks
# whose NFKC holds one (U+309B, U+FF9E), a syllable and a trailing jamo that compose
# (가 + U+11A8), an Oriya vowel sign that composes with the one before it (U+0B47 +
# U+0B3E), a ligature and a compatibility ideograph outside its blocks (U+FB01, U+F900),
# and a lone surrogate.
_FOLD_ALPHABET = (
    "Aaé\u00c9ＡＮｅ，（）…µßİΣς中國カｶ가\u2500●😀\U00020bb7"
    "\u0301\u3099\u309b\uff9e\u11a8\u0b47\u0b3e\ufb01\uf900\ud800 \n"
)


def _nfkc_casefold_both(text: str) -> tuple[str, str]:
    fold = importlib.import_module("neardup.normalize").nfkc_casefold
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", "on")
        compiled = fold(text)
        mp.setenv("NEARDUP_KERNELS", "off")
        return compiled, fold(text)


@settings(max_examples=500)
@given(st.text(alphabet=_FOLD_ALPHABET, max_size=40) | TEXTS)
@example("…" * 200)  # 400 characters more than it had: past the first buffer
@example("가\u11a8")
@example("ｶ\uff9e")  # ガ: the half-width sound mark composes with the kana before it
@example("\u0b47\u0b3e")
def test_nfkc_casefold_is_nfkc_then_casefold(text: str) -> None:
    """The compiled NFKC and case fold (from the table) gives what unicodedata's NFKC and
    str.casefold give, on the characters it holds and beside those it must not."""
    import unicodedata

    compiled, reference = _nfkc_casefold_both(text)
    assert compiled == reference == unicodedata.normalize("NFKC", text).casefold()


def test_nfkc_casefold_table_holds_each_character_as_unicodedata_has_it() -> None:
    """Every BMP character the table holds becomes its own NFKC, case folded; every range
    held beyond the BMP is of characters of no combining class that NFKC and case folding
    leave alone; and no character the table may make composes with the one before it (the
    seconds of the Unicode data's canonical pairs of combining class 0, and the Hangul
    vowel and trailing jamo, fail ``_inert``)."""
    import unicodedata

    import numpy as np

    n = importlib.import_module("neardup.normalize")
    table, more_at, more, far = n._fold_table()
    for c in np.flatnonzero(table != 0xFFFFFFFF).tolist():
        v = int(table[c])
        made = (
            chr(v)
            if v < 0x80000000
            else "".join(map(chr, more[more_at[v - 0x80000000] : more_at[v - 0x80000000 + 1]]))
        )
        want = unicodedata.normalize("NFKC", chr(c)).casefold()
        assert made == want, hex(c)
        assert all(n._inert(x) for x in unicodedata.normalize("NFKC", chr(c))), hex(c)
    for lo, hi in far.tolist():
        for c in range(lo, hi + 1):
            ch = chr(c)
            assert unicodedata.combining(ch) == 0, hex(c)
            assert unicodedata.normalize("NFKC", ch).casefold() == ch, hex(c)
    seconds = {*range(0x1161, 0x1176), *range(0x11A8, 0x11C3)}
    for c in range(0x110000):
        parts = unicodedata.decomposition(chr(c)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(int(parts[1], 16))
    assert not any(n._inert(chr(s)) for s in seconds)


# Chinese text, traditional and simplified, with phrases OpenCC changes whole (一目瞭然,
# 沈浸), full-width forms, whitespace and control characters of every kind between them
# (a space, an ideographic space, a tab, line breaks, NUL, NEL, the line separator), a
# combining mark (a text the compiled NFKC leaves to the reference) and an emoji.
_NORMALIZE_ALPHABET = "一目瞭然沈浸漢語後北京ＡＢ，… \u3000\t\n\n\x00\x85\u2028e\u0301😀"


@settings(max_examples=500)
@given(st.text(alphabet=_NORMALIZE_ALPHABET, max_size=40) | TEXTS)
@example("一目 瞭然\n\n 沈\x00浸 ")
def test_normalize_with_the_compiled_passes_is_the_reference(text: str) -> None:
    """Normalization with the kernels (NFKC, case and whitespace folding in compiled
    passes over one copy of the code points, whitespace folded before OpenCC) gives what
    the reference steps give, in their order."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEARDUP_KERNELS", "on")
        compiled = normalize(text)
        mp.setenv("NEARDUP_KERNELS", "off")
        assert compiled == normalize(text)
