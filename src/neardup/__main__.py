"""``python -m neardup``: the same as the ``neardup`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
