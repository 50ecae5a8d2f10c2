"""Features of one text: TF-IDF keywords and shingles, with the defaults every measure shares.

>>> sorted(shingle_set("the quick brown fox"))
['quick brown fox', 'the quick brown']
"""

from __future__ import annotations

from .tfidf import IDFTable, keyword_weights
from .tokenize import Tokenizer, default_stopwords, shingles, units

__all__ = ["KEYWORD_TOKENIZER", "keywords", "shingle_set"]

#: Keywords as jieba's extract_tags takes them: no one-character words, no stop words.
KEYWORD_TOKENIZER = Tokenizer(drop_single=True, stopwords=default_stopwords())


def keywords(
    text: str,
    *,
    idf: IDFTable | None = None,
    tokenizer: Tokenizer = KEYWORD_TOKENIZER,
    top_k: int | None = None,
) -> dict[str, float]:
    """TF-IDF weight of each keyword of ``text`` (all of them unless ``top_k``)."""
    return keyword_weights(tokenizer(text), idf, top_k=top_k)


def shingle_set(text: str, *, cjk_width: int = 5, word_width: int = 3) -> set[str]:
    """The set of shingles of ``text``: 5 CJK characters or 3 words each by default."""
    return set(shingles(units(text), cjk_width=cjk_width, word_width=word_width))
