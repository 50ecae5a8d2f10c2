"""Sketches: small fixed-size summaries of a document's features (Simhash, MinHash)."""

from __future__ import annotations

from .simhash import hamming, simhash, simhash_batch

__all__ = ["hamming", "simhash", "simhash_batch"]
