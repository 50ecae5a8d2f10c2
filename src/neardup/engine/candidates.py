"""Candidates: which earlier documents a document is verified against.

- **Byte-identical copies** (:func:`text_key`): a document whose text, exactly as given, is
  the text of an earlier one is a copy of its first copy at once (score 1.0, measure
  ``identical``; see :func:`~neardup.engine.decide.identical`), without a sketch of its own.
- **LSH buckets** (:func:`bucket_keys`): documents sharing a band of their MinHash signature
  are candidates. Each bucket pairs only its first ``DedupConfig.bucket_cap`` members with
  later ones (:func:`~neardup.index.lsh.bucket_pairs`; a store keeps at most that many
  members a bucket), so a flood of copies of one page costs a bounded amount per document.

>>> from neardup.engine import DedupConfig, make_sketch
>>> len(bucket_keys(make_sketch("北京地铁十九号线今天开通运营，全长二十二公里。", DedupConfig())))
64
>>> text_key("北京") == text_key("北京"), text_key("北京") == text_key("北京 ")
(True, False)
"""

from __future__ import annotations

import numpy as np
import xxhash

from ..hashing import SEED
from ..index.lsh import bucket_ids, bucket_pairs
from .sketches import Sketch

__all__ = ["BandKey", "bucket_ids", "bucket_keys", "bucket_pairs", "text_key"]

#: One LSH bucket as the stores keep it: :func:`~neardup.index.lsh.bucket_ids` as a signed
#: 64-bit integer (SQLite's integers are signed).
BandKey = int


def text_key(text: str) -> int:
    """A stable 64-bit hash of a text exactly as given, to spot byte-identical copies."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"), SEED)


def bucket_keys(sketch: Sketch) -> list[BandKey]:
    """The LSH buckets of a sketch, as signed integers (none for a text with nothing to
    compare)."""
    if sketch.is_empty:
        return []
    ids = bucket_ids(sketch.bands).ravel()
    keys: list[int] = ids.view(np.int64).tolist()
    return keys
