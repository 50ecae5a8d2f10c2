"""Tokenizers: Chinese words, English words, mixed text, character n-grams and shingles.

Text is expected to be normalized first (:func:`neardup.normalize`). Punctuation and
whitespace never become tokens. Chinese runs are segmented by a jieba-compatible segmenter
(rjieba, the Rust jieba-rs, by default; the pure-Python ``jieba`` as an option); Latin words
and numbers are kept whole.

>>> words("新闻联播报道了neardup 2.0版本，速度很快!")
['新闻联播', '报道', '了', 'neardup', '2.0', '版本', '速度', '很快']
>>> char_ngrams("a,bcd", 2)
['ab', 'bc', 'cd']
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal, Protocol

from .errors import ConfigError, MissingDependencyError

__all__ = [
    "Segmenter",
    "Tokenizer",
    "char_ngrams",
    "default_stopwords",
    "get_segmenter",
    "load_stopwords",
    "units",
    "words",
]

# Han (with extensions and compatibility), kana: one character is one unit.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_CJK_CHAR = re.compile(f"[{_CJK}]")
# A word of any other script: letters and digits, joined by . ' - inside (2.0, don't, covid-19).
_WORD = f"[^\\W_{_CJK}]+(?:['.\\-][^\\W_{_CJK}]+)*"
_LATIN_WORD = re.compile(_WORD)
_UNIT = re.compile(f"[{_CJK}]|{_WORD}")
_NOT_TEXT = re.compile(f"[^\\w{_CJK}]+|_+")

SegmenterName = Literal["rjieba", "jieba"]


class Segmenter(Protocol):
    """What neardup needs of a Chinese word segmenter."""

    def cut(self, text: str) -> list[str]: ...


class _RJieba:
    def __init__(self, user_dict: Path | None) -> None:
        import rjieba

        self._jieba = rjieba.Jieba()
        if user_dict is not None:
            for word, freq, tag in _read_user_dict(user_dict):
                self._jieba.add_word(word, freq, tag)

    def cut(self, text: str) -> list[str]:
        return self._jieba.cut(text)


class _Jieba:
    def __init__(self, user_dict: Path | None) -> None:
        try:
            import jieba
        except ImportError as e:  # pragma: no cover - jieba is a dependency
            raise MissingDependencyError("the jieba segmenter needs: pip install jieba") from e
        import logging

        jieba.setLogLevel(logging.WARNING)
        self._jieba = jieba.Tokenizer()
        if user_dict is not None:
            self._jieba.load_userdict(str(user_dict))

    def cut(self, text: str) -> list[str]:
        return self._jieba.lcut(text)  # type: ignore[no-any-return]


def _read_user_dict(path: Path) -> Iterable[tuple[str, int | None, str | None]]:
    """Lines of a jieba user dictionary: ``word [freq] [tag]``."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.strip().lstrip("\ufeff").split()
            if not parts:
                continue
            word, freq, tag = parts[0], None, None
            rest = parts[1:]
            if rest and rest[0].isdigit():
                freq = int(rest.pop(0))
            if rest:
                tag = rest[0]
            if len(parts) > 3:
                raise ConfigError(f"{path}:{lineno}: expected 'word [freq] [tag]', got {line!r}")
            yield word, freq, tag


@functools.lru_cache(maxsize=8)
def get_segmenter(name: SegmenterName = "rjieba", user_dict: str | None = None) -> Segmenter:
    """The segmenter called ``name``, with a jieba-format user dictionary if given (cached)."""
    path = Path(user_dict) if user_dict else None
    if path is not None and not path.is_file():
        raise ConfigError(f"user dictionary {user_dict!r} is not a readable file")
    if name == "rjieba":
        return _RJieba(path)
    if name == "jieba":
        return _Jieba(path)
    raise ConfigError(f"unknown segmenter {name!r}: choose 'rjieba' or 'jieba'")


def load_stopwords(path: str | Path) -> frozenset[str]:
    """Stop words from a file, one a line (the format jieba and most lists use)."""
    with open(path, encoding="utf-8") as f:
        return frozenset(w for w in (line.strip().lstrip("\ufeff") for line in f) if w)


@functools.cache
def default_stopwords() -> frozenset[str]:
    """neardup's built-in list of common Chinese and English function words."""
    text = resources.files("neardup").joinpath("data/stopwords.txt").read_text(encoding="utf-8")
    return frozenset(w for w in (line.strip() for line in text.splitlines()) if w)


def words(
    text: str,
    *,
    segmenter: Segmenter | None = None,
    drop_single: bool = False,
    stopwords: frozenset[str] | None = None,
) -> list[str]:
    """Words of mixed text: Chinese runs segmented, Latin words and numbers kept whole.

    >>> words("我们在北京 we are in beijing", drop_single=True, stopwords=frozenset({"are"}))
    ['我们', '北京', 'we', 'in', 'beijing']
    """
    seg = segmenter if segmenter is not None else get_segmenter()
    out: list[str] = []
    pos = 0
    for m in _CJK_RUN.finditer(text):
        out.extend(_LATIN_WORD.findall(text, pos, m.start()))
        out.extend(seg.cut(m.group()))
        pos = m.end()
    out.extend(_LATIN_WORD.findall(text, pos))
    if drop_single or stopwords:
        stop = stopwords or frozenset()
        out = [w for w in out if not (drop_single and len(w) < 2) and w not in stop]
    return out


def units(text: str) -> list[str]:
    """The smallest units of text: each CJK character, and each whole word of other scripts.

    >>> units("hello 世界, 2024!")
    ['hello', '世', '界', '2024']
    """
    return _UNIT.findall(text)


def char_ngrams(text: str, n: int) -> list[str]:
    """Overlapping character n-grams of ``text`` with punctuation and whitespace removed.

    A text shorter than ``n`` gives itself as its only n-gram (if it is not empty).
    """
    if n < 1:
        raise ConfigError(f"n-gram size must be at least 1, got {n}")
    s = _NOT_TEXT.sub("", text)
    if len(s) <= n:
        return [s] if s else []
    return [s[i : i + n] for i in range(len(s) - n + 1)]


def is_cjk(unit: str) -> bool:
    """Whether a unit is a CJK character."""
    return _CJK_CHAR.match(unit) is not None


@dataclass(frozen=True)
class Tokenizer:
    """A configured word tokenizer: segmenter, user dictionary, stop words, single characters.

    >>> Tokenizer(drop_single=True)("我在北京")
    ['北京']
    """

    segmenter: SegmenterName = "rjieba"
    user_dict: str | None = None
    drop_single: bool = False
    stopwords: frozenset[str] | None = None

    def __call__(self, text: str) -> list[str]:
        seg = get_segmenter(self.segmenter, self.user_dict)
        return words(text, segmenter=seg, drop_single=self.drop_single, stopwords=self.stopwords)
