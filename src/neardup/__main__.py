"""``python -m neardup``: the same as the ``neardup`` command."""

from __future__ import annotations

from .cli import run

run()
