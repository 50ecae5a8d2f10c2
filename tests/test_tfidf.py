"""TF-IDF: jieba's IDF table, fitting one on a corpus, saving and loading, keyword weights."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

import neardup
from neardup import IDFTable
from neardup.features import keywords
from neardup.tfidf import keyword_weights


def test_jieba_table_loads() -> None:
    """IDFTable.jieba() holds jieba's large table, is cached, and gives unknown terms the median."""
    table = IDFTable.jieba()
    assert len(table) > 100_000
    assert IDFTable.jieba() is table
    assert "北京" in table
    assert table["北京"] < table.default  # a common word is below the median
    assert table["zzz-not-a-word"] == table.default == table.get_idf("zzz-not-a-word")


def test_jieba_table_is_the_one_jieba_analyse_uses_without_importing_it() -> None:
    """The table is read from jieba's own file without importing ``jieba.analyse`` (which
    loads jieba's part-of-speech tables, about a second of a cold ``neardup compare``), and
    holds what jieba.analyse's TF-IDF holds."""
    code = (
        "import sys; from neardup import IDFTable; t = IDFTable.jieba(); "
        "assert 'jieba.analyse' not in sys.modules, 'imported'; "
        "import jieba.analyse as a; j = a.default_tfidf; "
        "assert dict(t) == j.idf_freq and t.default == j.median_idf, 'differs'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


CORPUS = [
    ["报道", "北京", "天气"],
    ["报道", "上海", "天气"],
    ["报道", "news", "news"],
]


def test_fit() -> None:
    """fit gives the smoothed IDF ln((N + 1) / (df + 1)) + 1: rarer terms weigh more."""
    table = IDFTable.fit(CORPUS)
    assert set(table) == {"报道", "北京", "天气", "上海", "news"}
    assert table["报道"] == pytest.approx(math.log(4 / 4) + 1)
    assert table["天气"] == pytest.approx(math.log(4 / 3) + 1)
    assert table["北京"] == pytest.approx(math.log(4 / 2) + 1)
    assert table["news"] == table["北京"]  # repeated in one document still counts once
    assert table.default == statistics.median(table.values())


def test_fit_empty_corpus() -> None:
    """Fitting on no documents is a ConfigError."""
    with pytest.raises(neardup.ConfigError, match="empty corpus"):
        IDFTable.fit([])


def test_save_load_round_trip(tmp_path: Path) -> None:
    """A table saved in jieba's format loads back with the same terms and values."""
    table = IDFTable.fit(CORPUS)
    path = tmp_path / "idf.txt"
    table.save(path)
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert len(first.split(" ")) == 2
    loaded = IDFTable.load(path)
    assert set(loaded) == set(table)
    for term in table:
        assert loaded[term] == pytest.approx(table[term], abs=1e-6)


@pytest.mark.parametrize(
    ("content", "match"),
    [("北京 4.5\n天气 not-a-number\n", r"idf\.txt:2"), ("\n\n", "no 'word idf' lines")],
    ids=["bad-value", "empty"],
)
def test_load_bad_file(tmp_path: Path, content: str, match: str) -> None:
    """A malformed or empty IDF file is a ConfigError saying where."""
    path = tmp_path / "idf.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(neardup.ConfigError, match=match):
        IDFTable.load(path)


def test_keyword_weights_tf_times_idf() -> None:
    """Each weight is count / number of terms times the term's IDF."""
    table = IDFTable({"北京": 1.0, "天气": 3.0, "news": 2.0})
    w = keyword_weights(["北京", "北京", "天气", "news"], table)
    assert w == pytest.approx({"北京": 0.5, "天气": 0.75, "news": 0.5})


def test_keyword_weights_top_k() -> None:
    """top_k keeps the largest weights, ties broken by the term."""
    table = IDFTable({"北京": 1.0, "天气": 3.0, "news": 2.0, "上海": 1.0})
    terms = ["北京", "北京", "天气", "news", "上海"]
    # weights 天气 0.6, 北京 0.4, news 0.4, 上海 0.2: "news" sorts before "北京"
    assert list(keyword_weights(terms, table, top_k=1)) == ["天气"]
    assert list(keyword_weights(terms, table, top_k=2)) == ["天气", "news"]
    assert list(keyword_weights(terms, table, top_k=3)) == ["天气", "news", "北京"]
    assert len(keyword_weights(terms, table, top_k=10)) == 4
    assert keyword_weights([], table, top_k=2) == {}


@pytest.mark.parametrize(
    "text",
    [
        "北京今天天气晴朗，北京新闻报道",
        "the weather in Beijing is fine today",
        "北京新闻 the weather in Beijing",
    ],
)
def test_keywords_top_k_with_jieba_table(text: str) -> None:
    """keywords(top_k=k) are the k heaviest of all the text's keywords, stop words excluded."""
    every = keywords(text)
    top = keywords(text, top_k=3)
    assert len(top) == 3
    assert top.items() <= every.items()
    assert min(top.values()) >= max(v for t, v in every.items() if t not in top)
    assert not {"the", "in", "is", "的"} & every.keys()


def test_fitted_table_in_cosine() -> None:
    """A fitted table can replace jieba's in the vector measures."""
    table = IDFTable.fit([["北京", "天气"], ["上海", "天气"], ["天气", "晴朗"]])
    score = neardup.measures.cosine.normalized_similarity("北京天气", "上海天气", idf=table)
    assert 0.0 < score < 1.0
    assert neardup.measures.cosine.normalized_similarity("北京天气", "北京天气", idf=table) == 1.0
