"""The similarity measures, one module each, all with the same functions.

Every module offers ``distance``, ``similarity`` and ``normalized_similarity`` (in [0, 1],
1.0 = identical), inputs positional and options keyword-only: ``processor=`` (normalization
by default, ``None`` for the raw text) and ``score_cutoff=``.

>>> sorted(METHODS)[:3]
['common', 'containment', 'contiguity']
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from ..errors import ConfigError
from . import (
    common,
    containment,
    contiguity,
    cosine,
    coverage,
    euclidean,
    jaccard,
    lcsubstr,
    levenshtein,
    mcc,
    simhash,
)
from ._base import DEFAULT_PROCESSOR, Processor, prepare

__all__ = ["DEFAULT_PROCESSOR", "METHODS", "Processor", "get_method", "prepare", "similarity"]

#: Every measure by name, in the order ``compare`` shows them.
METHODS: dict[str, ModuleType] = {
    "cosine": cosine,
    "euclidean": euclidean,
    "common": common,
    "levenshtein": levenshtein,
    "simhash": simhash,
    "lcsubstr": lcsubstr,
    "mcc": mcc,
    "contiguity": contiguity,
    "jaccard": jaccard,
    "containment": containment,
    "coverage": coverage,
}


def get_method(name: str) -> Callable[..., float]:
    """The ``normalized_similarity`` function of the measure called ``name``."""
    try:
        module = METHODS[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; choose one of: {', '.join(METHODS)}") from None
    fn: Callable[..., float] = module.normalized_similarity
    return fn


def similarity(
    a: str,
    b: str,
    *,
    method: str = "cosine",
    processor: Processor = DEFAULT_PROCESSOR,
    score_cutoff: float | None = None,
) -> float:
    """The normalized similarity of a and b by ``method``: 0.0 .. 1.0, 1.0 = identical.

    >>> similarity("kitten", "sitting", method="levenshtein") == 1 - 3 / 7
    True
    """
    return get_method(method)(a, b, processor=processor, score_cutoff=score_cutoff)
