"""neardup: find near-duplicate text — reprints, mirrors, lightly edited copies — in Chinese
and English, as web crawlers collect it.

>>> import neardup
>>> neardup.similarity("kitten", "sitting", method="levenshtein") == 1 - 3 / 7
True
"""

from __future__ import annotations

from .compare import Comparison, compare
from .deduper import BatchResult, Decision, Deduper, dedup_batch
from .engine import DedupConfig
from .errors import (
    ConfigError,
    EngineError,
    InputError,
    MissingDependencyError,
    NeardupError,
    OutputError,
    StoreError,
    TextTooLongError,
)
from .frames import dedup_frame
from .measures import METHODS, similarity
from .normalize import Normalizer, normalize
from .passages import Passage, shared_passages
from .shingling import shingle_hashes
from .tfidf import IDFTable
from .tokenize import Tokenizer, char_ngrams, units, words

__version__ = "0.1.0"

__all__ = [
    "METHODS",
    "BatchResult",
    "Comparison",
    "ConfigError",
    "Decision",
    "DedupConfig",
    "Deduper",
    "EngineError",
    "IDFTable",
    "InputError",
    "MissingDependencyError",
    "NeardupError",
    "Normalizer",
    "OutputError",
    "Passage",
    "StoreError",
    "TextTooLongError",
    "Tokenizer",
    "char_ngrams",
    "compare",
    "dedup_batch",
    "dedup_frame",
    "normalize",
    "shared_passages",
    "shingle_hashes",
    "similarity",
    "units",
    "words",
]
