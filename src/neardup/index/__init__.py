"""Indexes: store keys with their sketches and return the *candidates* near a query, verified.

The Hamming index finds Simhash fingerprints within k bits (Manku, Jain and Das Sarma 2007).
"""

from __future__ import annotations

from .hamming import BruteForceHammingIndex, HammingIndex, Neighbor, hamming_join

__all__ = ["BruteForceHammingIndex", "HammingIndex", "Neighbor", "hamming_join"]
