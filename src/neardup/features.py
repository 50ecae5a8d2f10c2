"""Features of one text: TF-IDF keywords, with the defaults the keyword measures share."""

from __future__ import annotations

from .tfidf import IDFTable, keyword_weights
from .tokenize import Tokenizer, default_stopwords

__all__ = ["KEYWORD_TOKENIZER", "keywords"]

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
