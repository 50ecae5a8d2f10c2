"""TF-IDF keyword weights, as jieba's ``extract_tags`` computes them.

The weight of a term is its frequency in the text (divided by the number of terms) times its
IDF. The IDF table is jieba's by default (270,000 words fitted on a large Chinese corpus);
terms missing from it get the table's median IDF. :meth:`IDFTable.fit` fits a table on the
user's own corpus instead, and :meth:`IDFTable.save` / :meth:`IDFTable.load` keep it in
jieba's file format (``word idf`` a line).

>>> table = IDFTable.fit([["报道", "北京"], ["报道", "上海"], ["报道"]])
>>> round(table["北京"], 3) > round(table["报道"], 3)
True
"""

from __future__ import annotations

import functools
import importlib.util
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .errors import ConfigError, MissingDependencyError

__all__ = ["IDFTable", "keyword_weights"]


class IDFTable(Mapping[str, float]):
    """Inverse document frequencies of terms, with a default for unknown terms."""

    def __init__(self, idf: dict[str, float], default: float | None = None) -> None:
        self._idf = idf
        self.default = (
            default if default is not None else (statistics.median(idf.values()) if idf else 1.0)
        )

    def __getitem__(self, term: str) -> float:
        return self._idf.get(term, self.default)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._idf)

    def __len__(self) -> int:
        return len(self._idf)

    def get_idf(self, term: str) -> float:
        """The IDF of ``term``, or the default when the table does not know it."""
        return self._idf.get(term, self.default)

    @classmethod
    @functools.cache
    def jieba(cls) -> IDFTable:
        """jieba's own IDF table (read once and cached): the file ``jieba.analyse`` reads,
        found without importing that module, which loads jieba's part-of-speech and IDF
        tables as it is imported (about a second)."""
        spec = importlib.util.find_spec("jieba")
        if spec is None or spec.origin is None:
            raise MissingDependencyError("jieba's IDF table needs jieba: pip install jieba")
        return cls.load(Path(spec.origin).parent / "analyse" / "idf.txt")

    @classmethod
    def load(cls, path: str | Path) -> IDFTable:
        """A table from a jieba-format file: ``word idf`` on each line."""
        idf: dict[str, float] = {}
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                parts = line.strip().lstrip("\ufeff").split(" ")
                if not parts or not parts[0]:
                    continue
                try:
                    idf[parts[0]] = float(parts[1])
                except (IndexError, ValueError) as e:
                    raise ConfigError(f"{path}:{lineno}: expected 'word idf', got {line!r}") from e
        if not idf:
            raise ConfigError(f"IDF file {str(path)!r} holds no 'word idf' lines")
        return cls(idf)

    def save(self, path: str | Path) -> None:
        """Write the table in jieba's format."""
        with open(path, "w", encoding="utf-8") as f:
            for term, value in sorted(self._idf.items()):
                f.write(f"{term} {value:.6f}\n")

    @classmethod
    def fit(cls, documents: Iterable[Sequence[str]]) -> IDFTable:
        """Fit IDF = ln(N / df) on tokenized documents (smoothed: ln((N + 1) / (df + 1)) + 1)."""
        df: Counter[str] = Counter()
        n = 0
        for doc in documents:
            n += 1
            df.update(set(doc))
        if n == 0:
            raise ConfigError("cannot fit an IDF table on an empty corpus")
        return cls({t: math.log((n + 1) / (c + 1)) + 1.0 for t, c in df.items()})


def keyword_weights(
    terms: Sequence[str], idf: IDFTable | None = None, *, top_k: int | None = None
) -> dict[str, float]:
    """TF × IDF of each distinct term (TF = count / number of terms), the ``top_k`` largest.

    >>> w = keyword_weights(["a", "a", "b"], IDFTable({"a": 1.0, "b": 3.0}))
    >>> {k: round(v, 3) for k, v in w.items()}
    {'a': 0.667, 'b': 1.0}
    """
    if not terms:
        return {}
    table = idf if idf is not None else IDFTable.jieba()
    total = len(terms)
    weights = {t: c / total * table.get_idf(t) for t, c in Counter(terms).items()}
    if top_k is not None and len(weights) > top_k:
        weights = dict(sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:top_k])
    return weights
