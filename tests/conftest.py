"""Test-wide settings: Hypothesis never fails a test for being slow (timing is for bench/)."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("neardup", deadline=None)
settings.load_profile("neardup")
