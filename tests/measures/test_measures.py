"""The eleven measures: against the textbook references, their shared properties, their API,
and what they do with bad input."""

from __future__ import annotations

import inspect
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup.measures import (
    METHODS,
    common,
    containment,
    contiguity,
    cosine,
    euclidean,
    jaccard,
    lcsubstr,
    levenshtein,
    mcc,
    simhash,
)
from neardup.measures._base import ratio

from .. import naive

FAST = settings(max_examples=60, deadline=None)
SLOW = settings(max_examples=25, deadline=None)

# A small alphabet so that matches happen; a lone surrogate because raw text may hold one.
SMALL = st.text(alphabet="ab中文", max_size=24)
SMALL_ODD = st.text(alphabet="ab中\ud800", max_size=24)
WIDE = st.text(max_size=24)
# Over 64 characters: rapidfuzz's multi-word bit-parallel path, several numpy blocks.
LONG = st.text(alphabet="ab中文", min_size=65, max_size=140)


@st.composite
def near_copies(draw: st.DrawFn) -> tuple[str, str]:
    """A long text and a copy with a few insertions, deletions and substitutions."""
    a = draw(LONG)
    b = list(a)
    for _ in range(draw(st.integers(0, 6))):
        i = draw(st.integers(0, len(b) - 1))
        op = draw(st.sampled_from("ids"))
        ch = draw(st.sampled_from("ab中文x"))
        if op == "i":
            b.insert(i, ch)
        elif op == "d" and len(b) > 1:
            del b[i]
        else:
            b[i] = ch
    return a, "".join(b)


PAIRS = st.one_of(
    st.tuples(SMALL, SMALL),
    st.tuples(SMALL_ODD, SMALL_ODD),
    st.tuples(WIDE, WIDE),
    st.tuples(LONG, LONG),
    st.tuples(SMALL, LONG),
    near_copies(),
)

# Words that share keywords and shingles, so the set and vector measures see overlap too.
VOCAB = ["北京", "天气", "晴朗", "新闻", "报道", "今天", "the ", "news ", "weather ", "2024 "]
VOCAB += ["，", " ", "的", "a", "中", "漢語", "ＡＢ"]
TEXTS = st.one_of(
    st.lists(st.sampled_from(VOCAB), max_size=12).map("".join),
    st.text(alphabet="ab中文 ，", max_size=30),
    st.text(max_size=20),
)

SAMPLES = [
    pytest.param("北京今天天气晴朗，适合出游。", id="chinese"),
    pytest.param("The quick brown fox jumps over the lazy dog.", id="english"),
    pytest.param("新闻联播报道了neardup 2.0版本，速度很快!", id="mixed"),
    pytest.param("中", id="one-cjk"),
    pytest.param("a", id="one-latin"),
    pytest.param("的", id="stopword-only"),
    pytest.param("，。！", id="punctuation-only"),
    pytest.param("ab" * 40 + "中文" * 40, id="long"),
]


# --- against the naive references, processor=None ------------------------------------------


@FAST
@given(PAIRS)
def test_levenshtein_matches_edit_distance(pair: tuple[str, str]) -> None:
    """levenshtein equals the full edit-distance DP, short and over 64 characters."""
    a, b = pair
    assert levenshtein.distance(a, b, processor=None) == naive.edit_distance(a, b)
    assert levenshtein.normalized_similarity(a, b, processor=None) == pytest.approx(
        naive.levenshtein(a, b), abs=1e-12
    )


@FAST
@given(PAIRS)
def test_lcsubstr_matches_dp(pair: tuple[str, str]) -> None:
    """lcsubstr equals the longest-common-substring DP, and the substring it returns is real."""
    a, b = pair
    length = naive.lcsubstr_length(a, b)
    assert lcsubstr.similarity(a, b, processor=None) == length
    assert lcsubstr.normalized_similarity(a, b, processor=None) == naive.lcsubstr(a, b)
    found = lcsubstr.longest_common_substring(a, b, processor=None)
    assert len(found) == length
    assert found in a
    assert found in b


@FAST
@given(PAIRS)
def test_lcsubstr_short_path_finds_the_first_in_a_and_its_first_place_in_b(
    pair: tuple[str, str],
) -> None:
    """The plain-string path (titles) gives the longest common substring that starts first
    in ``a``, at its first place in ``b``: the rule the hashing path follows too."""
    a, b = pair
    length = naive.lcsubstr_length(a, b)
    first = next((i for i in range(len(a)) if length and a[i : i + length] in b), 0)
    expected = (length, first, b.find(a[first : first + length])) if length else (0, 0, 0)
    assert lcsubstr._find_short(a, b) == expected
    if len(a) * len(b) <= lcsubstr._SHORT_CELLS:
        assert lcsubstr._find(a, b) == expected


@FAST
@given(PAIRS)
def test_mcc_matches_every_offset(pair: tuple[str, str]) -> None:
    """mcc equals the best count of agreeing characters over every offset, tried one by one."""
    a, b = pair
    assert mcc.normalized_similarity(a, b, processor=None) == naive.mcc(a, b)


@FAST
@given(PAIRS)
def test_contiguity_matches_reference(pair: tuple[str, str]) -> None:
    """contiguity equals the best offset's sum of squared runs, computed naively."""
    a, b = pair
    assert contiguity.normalized_similarity(a, b, processor=None) == naive.contiguity(a, b)


@FAST
@given(PAIRS)
def test_common_matches_reference(pair: tuple[str, str]) -> None:
    """common equals the multiset intersection over the longer length."""
    a, b = pair
    assert common.normalized_similarity(a, b, processor=None) == naive.common(a, b)


@FAST
@given(PAIRS)
def test_lcsubstr_short_and_hashed_paths_agree(pair: tuple[str, str]) -> None:
    """The plain-string path for short pairs and the rolling-hash path give the same
    (length, start in a, start in b)."""
    from neardup.measures import lcsubstr as module

    a, b = pair
    short = module._find_short(a, b) if a and b else (0, 0, 0)
    saved = module._SHORT_CELLS
    module._SHORT_CELLS = -1
    try:
        hashed = module._find(a, b)
    finally:
        module._SHORT_CELLS = saved
    assert short == hashed
    assert short[0] == naive.lcsubstr_length(a, b)


def _thue_morse(n: int) -> str:
    s = "a"
    for _ in range(n):
        s += s.translate(str.maketrans("ab", "ba"))
    return s


def test_lcsubstr_survives_rolling_hash_collisions() -> None:
    """Thue–Morse strings, which collide under any polynomial hash mod 2^64, still get the exact answer."""
    t = _thue_morse(11)  # 2048 characters: t and its complement have the same hash
    u = t.translate(str.maketrans("ab", "ba"))
    a, b = t + "|" + u, u
    assert lcsubstr.similarity(a, b, processor=None) == len(u)
    assert lcsubstr.longest_common_substring(a, b, processor=None) == u


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("北京时间上午十点", "今天上午十点整", "上午十点"),
        ("the cat sat on the mat", "a cat sat on a mat", " cat sat on "),
        ("新闻neardup 2.0版本发布", "neardup 2.0版本", "neardup 2.0版本"),
        ("abc", "xyz", ""),
    ],
)
def test_longest_common_substring_table(a: str, b: str, expected: str) -> None:
    """longest_common_substring finds the shared run in Chinese, English and mixed text."""
    assert lcsubstr.longest_common_substring(a, b, processor=None) == expected


# --- known values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "a", "b", "expected"),
    [
        ("levenshtein", "kitten", "sitting", 1 - 3 / 7),
        ("levenshtein", "北京今天天气晴朗", "北京明天天气晴朗", 1 - 1 / 8),
        ("levenshtein", "北京天气", "天气北京", 0.0),
        ("lcsubstr", "abcdefgh", "xxcdefyy", 4 / 8),
        ("lcsubstr", "北京时间上午十点", "今天上午十点整", 4 / 7),
        ("mcc", "abcdef", "abxdey", 4 / 6),
        ("mcc", "北京今天天气晴朗", "北京明天天气晴朗", 7 / 8),
        ("contiguity", "abcdef", "abxdey", 8 / 36),
        ("contiguity", "北京今天天气晴朗", "北京明天天气晴朗", (4 + 25) / 64),
        ("common", "aabbc", "abbd", 3 / 5),
        ("common", "北京天气", "天气北京", 1.0),
        ("common", "新闻news", "news新闻报道", 6 / 8),
    ],
)
def test_known_values_raw(method: str, a: str, b: str, expected: float) -> None:
    """The character measures give the textbook values (no normalization)."""
    assert neardup.similarity(a, b, method=method, processor=None) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("method", "a", "b", "expected"),
    [
        (
            "jaccard",
            "the cat sat on the mat",
            "the cat sat on a mat",
            3 / 13,
        ),  # 9-letter shingles: 3 shared of 9 + 7 - 3
        ("containment", "the cat sat on the mat", "the cat sat on the mat and then slept", 1.0),
        ("containment", "北京今天天气晴朗", "据报道，北京今天天气晴朗，适合出游", 1.0),
        ("cosine", "北京天气", "上海新闻", 0.0),
        ("euclidean", "北京天气", "上海新闻", 1 / (1 + math.sqrt(2))),
        ("cosine", "北京今天天气晴朗", "今天北京天气晴朗", 1.0),
        ("simhash", "北京今天天气晴朗", "今天北京天气晴朗", 1.0),
    ],
)
def test_known_values_default(method: str, a: str, b: str, expected: float) -> None:
    """The set, vector and sketch measures give the expected values on clear-cut pairs."""
    assert neardup.similarity(a, b, method=method) == pytest.approx(expected)


# --- identity, symmetry, range over all eleven ---------------------------------------------------


def test_methods_are_the_eleven_measures() -> None:
    """METHODS names exactly the eleven measures."""
    assert set(METHODS) == {
        "cosine",
        "euclidean",
        "common",
        "levenshtein",
        "simhash",
        "lcsubstr",
        "mcc",
        "contiguity",
        "jaccard",
        "containment",
        "coverage",
    }


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("text", SAMPLES)
@pytest.mark.parametrize("processor", [neardup.normalize, None], ids=["normalized", "raw"])
def test_identity(method: str, text: str, processor: object) -> None:
    """Equal non-empty texts score exactly 1.0 under every measure."""
    assert neardup.similarity(text, text, method=method, processor=processor) == 1.0  # type: ignore[arg-type]


@pytest.mark.parametrize("method", list(METHODS))
@SLOW
@given(a=TEXTS)
def test_identity_property(method: str, a: str) -> None:
    """Any text scores exactly 1.0 against itself (so score_cutoff=1.0 keeps exact copies)."""
    assert neardup.similarity(a, a, method=method) == 1.0
    assert neardup.similarity(a, a, method=method, score_cutoff=1.0) == 1.0


@pytest.mark.parametrize("method", list(METHODS))
@SLOW
@given(a=TEXTS, b=TEXTS)
def test_symmetric_and_in_range(method: str, a: str, b: str) -> None:
    """Every measure is symmetric and returns a float in [0, 1]."""
    ab = neardup.similarity(a, b, method=method)
    ba = neardup.similarity(b, a, method=method)
    assert isinstance(ab, float)
    assert 0.0 <= ab <= 1.0
    assert ab == ba


@pytest.mark.parametrize("method", list(METHODS))
@SLOW
@given(pair=PAIRS)
def test_symmetric_and_in_range_raw(method: str, pair: tuple[str, str]) -> None:
    """Symmetry and range hold with processor=None too, short and long, odd characters included."""
    a, b = pair
    ab = neardup.similarity(a, b, method=method, processor=None)
    assert 0.0 <= ab <= 1.0
    assert ab == neardup.similarity(b, a, method=method, processor=None)


# --- the rapidfuzz-style API ------------------------------------------------------------------


@pytest.mark.parametrize("name", list(METHODS))
def test_module_api_shape(name: str) -> None:
    """Each module offers distance, similarity, normalized_similarity: texts positional, options keyword-only."""
    module = METHODS[name]
    for fn_name in ("distance", "similarity", "normalized_similarity"):
        assert fn_name in module.__all__
        params = inspect.signature(getattr(module, fn_name)).parameters
        a, b = list(params.values())[:2]
        assert a.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert b.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert params["processor"].kind is inspect.Parameter.KEYWORD_ONLY
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(params.values())[2:])
    params = inspect.signature(module.normalized_similarity).parameters
    assert params["score_cutoff"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["score_cutoff"].default is None


@FAST
@given(PAIRS)
def test_character_measures_functions_agree(pair: tuple[str, str]) -> None:
    """distance, similarity and normalized_similarity of the character measures are one number three ways."""
    a, b = pair
    kw: dict[str, None] = {"processor": None}
    longest, shortest = max(len(a), len(b)), min(len(a), len(b))

    sim = levenshtein.similarity(a, b, **kw)
    assert sim == longest - levenshtein.distance(a, b, **kw)
    assert levenshtein.normalized_similarity(a, b, **kw) == (sim / longest if longest else 1.0)

    sim = common.similarity(a, b, **kw)
    assert sim == longest - common.distance(a, b, **kw)
    assert common.normalized_similarity(a, b, **kw) == (sim / longest if longest else 1.0)

    for module in (lcsubstr, mcc):
        sim = module.similarity(a, b, **kw)
        assert sim == shortest - module.distance(a, b, **kw)
        if shortest:
            assert module.normalized_similarity(a, b, **kw) == sim / shortest

    sim = contiguity.similarity(a, b, **kw)
    assert sim == shortest**2 - contiguity.distance(a, b, **kw)
    if shortest:
        assert contiguity.normalized_similarity(a, b, **kw) == sim / shortest**2


@SLOW
@given(a=TEXTS, b=TEXTS)
def test_set_vector_sketch_functions_agree(a: str, b: str) -> None:
    """For cosine, jaccard, containment, euclidean and simhash the three functions agree too."""
    for module in (cosine, jaccard, containment):
        s = module.normalized_similarity(a, b)
        assert module.similarity(a, b) == s
        assert module.distance(a, b) == pytest.approx(1.0 - s)
    d = euclidean.distance(a, b)
    assert 0.0 <= d <= math.sqrt(2) + 1e-12
    assert euclidean.similarity(a, b) == euclidean.normalized_similarity(a, b) == 1 / (1 + d)
    for bits in (64, 128):
        d = simhash.distance(a, b, bits=bits)
        assert simhash.similarity(a, b, bits=bits) == bits - d
        assert simhash.normalized_similarity(a, b, bits=bits) == 1 - d / bits


@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("fn_name", ["distance", "similarity", "normalized_similarity"])
def test_processor_is_applied(name: str, fn_name: str) -> None:
    """A custom processor is applied to both texts by all three functions."""
    fn = getattr(METHODS[name], fn_name)
    a, b = "北京天气晴朗 GOOD NEWS TODAY", "北京天气晴朗 good news today"
    assert fn(a, b, processor=str.lower) == fn(b, b, processor=None)


@pytest.mark.parametrize("method", list(METHODS))
@SLOW
@given(a=TEXTS, b=TEXTS, data=st.data())
def test_score_cutoff(method: str, a: str, b: str, data: st.DataObject) -> None:
    """A score below score_cutoff becomes 0.0; a score at or above it is returned unchanged."""
    score = neardup.similarity(a, b, method=method)
    c = data.draw(st.one_of(st.just(score), st.floats(0.0, 1.0)), label="score_cutoff")
    expected = score if score >= c else 0.0
    assert neardup.similarity(a, b, method=method, score_cutoff=c) == expected


@FAST
@given(pair=PAIRS, data=st.data())
def test_levenshtein_score_cutoff_early_exit(pair: tuple[str, str], data: st.DataObject) -> None:
    """levenshtein's early-exit cutoff keeps pairs exactly at the cutoff and drops those below."""
    a, b = pair
    score = levenshtein.normalized_similarity(a, b, processor=None)
    c = data.draw(st.one_of(st.just(score), st.floats(0.0, 1.0)), label="score_cutoff")
    got = levenshtein.normalized_similarity(a, b, processor=None, score_cutoff=c)
    assert got == (score if score >= c else 0.0)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("aba中bb中ab中", "中中bab中中aa中bb"),  # 5/12: (1 - 5/12) * 12 rounds below 7
        ("kitten", "sitting"),
        ("北京今天天气晴朗", "北京明天天气晴朗"),
    ],
)
def test_levenshtein_cutoff_at_exact_score(a: str, b: str) -> None:
    """A cutoff equal to the score keeps the score (float rounding must not drop it)."""
    score = levenshtein.normalized_similarity(a, b, processor=None)
    assert levenshtein.normalized_similarity(a, b, processor=None, score_cutoff=score) == score


def test_unknown_method() -> None:
    """An unknown method name is a ConfigError that lists the choices."""
    with pytest.raises(neardup.ConfigError, match="levenshtein"):
        neardup.similarity("a", "b", method="hamming")


# --- bad input --------------------------------------------------------------------------------

BAD_TEXTS = [
    pytest.param("", id="empty"),
    pytest.param("   \t\n ", id="whitespace"),
    pytest.param("中", id="one-cjk"),
    pytest.param("a", id="one-latin"),
    pytest.param("a\x00b\x07c\x1b[31m红\x7f", id="controls"),
    pytest.param("\ud800", id="lone-surrogate"),
    pytest.param("北京\udfff天气 news\ud800", id="surrogates-inside"),
    pytest.param("\u200b\ufeff\u00ad", id="invisible"),
    pytest.param("<p></p>&nbsp;", id="empty-html"),
]


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("text", BAD_TEXTS)
@pytest.mark.parametrize("processor", [neardup.normalize, None], ids=["normalized", "raw"])
def test_bad_text_gives_a_score(method: str, text: str, processor: object) -> None:
    """Odd texts, against themselves and a normal text, give a float in [0, 1] without crashing."""
    other = "北京今天天气晴朗 news 2024"
    for a, b in ((text, text), (text, other), (other, text), (text, "")):
        s = neardup.similarity(a, b, method=method, processor=processor)  # type: ignore[arg-type]
        assert isinstance(s, float)
        assert 0.0 <= s <= 1.0


@pytest.mark.parametrize("method", ["levenshtein", "common", "lcsubstr", "mcc", "contiguity"])
@pytest.mark.parametrize("text", ["abc", "北京天气", "neardup新闻"])
def test_empty_against_text_is_zero(method: str, text: str) -> None:
    """An empty text shares nothing with a non-empty one: 0.0, either way round."""
    assert neardup.similarity("", text, method=method, processor=None) == 0.0
    assert neardup.similarity(text, "", method=method, processor=None) == 0.0


@pytest.mark.parametrize("method", list(METHODS))
def test_two_empty_texts_are_identical(method: str) -> None:
    """Two empty texts (or two that normalize to nothing) score 1.0."""
    assert neardup.similarity("", "", method=method, processor=None) == 1.0
    assert neardup.similarity("  ", "\t\n", method=method) == 1.0


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("value", [None, b"bytes", 17, ["a"]], ids=["none", "bytes", "int", "list"])
def test_non_str_input(method: str, value: object) -> None:
    """A text that is not a str is an InputError (also a ValueError), in either position."""
    with pytest.raises(neardup.InputError, match="must be a str"):
        neardup.similarity(value, "text", method=method)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        neardup.similarity("text", value, method=method, processor=None)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def megabyte() -> tuple[str, str]:
    """A 1,000,000-character mixed text and a lightly edited copy."""
    base = "北京今天天气晴朗，适合出游。The quick brown fox jumps over the lazy dog 2024. "
    big = (base * (1_000_000 // len(base) + 1))[:1_000_000]
    edited = big[:500_000] + "上海" + big[500_002:]
    return big, edited


@pytest.mark.parametrize(
    "method", ["levenshtein", "lcsubstr", "common", "jaccard", "containment", "cosine"]
)
def test_megabyte_text(method: str, megabyte: tuple[str, str]) -> None:
    """A 1 MB text against a light edit of itself and against a title gives a number."""
    big, edited = megabyte
    near = neardup.similarity(big, edited, method=method)
    assert isinstance(near, float)
    assert 0.0 <= near <= 1.0
    title = neardup.similarity(big, "北京今天天气晴朗", method=method)
    assert 0.0 <= title <= 1.0


@pytest.mark.parametrize("method", ["mcc", "contiguity"])
def test_megabyte_text_too_long_for_diagonal_measures(
    method: str, megabyte: tuple[str, str]
) -> None:
    """mcc and contiguity refuse two 1 MB texts with a clear TextTooLongError (a ValueError)."""
    big, edited = megabyte
    with pytest.raises(neardup.TextTooLongError, match="containment") as info:
        neardup.similarity(big, edited, method=method, processor=None)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, neardup.InputError)
    assert method in str(info.value)
    # The limit is on the product of the lengths: a title against the big text is fine.
    assert neardup.similarity(big, "北京今天天气晴朗", method=method, processor=None) == 1.0


def test_megabyte_unrelated_texts_too_long_for_levenshtein(megabyte: tuple[str, str]) -> None:
    """levenshtein refuses two unrelated 1 MB texts at once; a light edit stays fast (above)."""
    big, _ = megabyte
    other = "".join(reversed(big))
    with pytest.raises(neardup.TextTooLongError, match="levenshtein") as info:
        neardup.similarity(big, other, method="levenshtein", processor=None)
    assert "containment" in str(info.value)


@given(st.text(alphabet="ab文字 ", max_size=40), st.text(alphabet="ab文字 ", max_size=40))
def test_the_engines_entries_give_the_public_measures(a: str, b: str) -> None:
    """What verification calls for short texts (no processor, no checks) is the measure."""
    assert lcsubstr.normalized(a, b) == lcsubstr.normalized_similarity(a, b, processor=None)
    assert lcsubstr.normalized(a, b) == pytest.approx(naive.lcsubstr(a, b))
    assert levenshtein.normalized(a, b) == pytest.approx(naive.levenshtein(a, b))
    assert levenshtein.normalized(a, b) == levenshtein.normalized_similarity(a, b, processor=None)
    # the same floats as the longest substring found by either path, or the edit distance,
    # over the length, clipped to [0, 1]: what the short path reads without clipping
    if a and b:
        for cells in (lcsubstr._SHORT_CELLS, -1):  # the plain-string path, then the hashes
            saved, lcsubstr._SHORT_CELLS = lcsubstr._SHORT_CELLS, cells
            try:
                found = lcsubstr._find(a, b)[0]
            finally:
                lcsubstr._SHORT_CELLS = saved
            assert lcsubstr.normalized(a, b) == ratio(found, min(len(a), len(b)))
    longest = max(len(a), len(b))
    if longest:
        distance = naive.edit_distance(a, b)
        assert levenshtein.normalized(a, b) == ratio(longest - distance, longest)
