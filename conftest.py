"""Collection without the optional extras: the doctests of modules that need an extra that
is not installed are left out (``pytest`` says which, with the reason, at the top of its
report); the tests of those features skip themselves with the reason."""

from __future__ import annotations

import importlib.util

#: Modules whose doctests import an optional dependency, and what installs it.
_NEEDS = {
    "src/neardup/scrapy.py": ("scrapy", "neardup[scrapy]"),
    "src/neardup/service/_*.py": ("fastapi", "neardup[service]"),
    "src/neardup/service/app.py": ("fastapi", "neardup[service]"),
    "src/neardup/frames.py": ("pandas", "neardup[frames]"),
    "src/neardup/kernels/_[a-z]*.py": ("numba", "neardup[fast]"),  # not __init__
}

collect_ignore_glob: list[str] = []
_missing: list[str] = []
for pattern, (module, extra) in _NEEDS.items():
    if importlib.util.find_spec(module) is None:
        collect_ignore_glob.append(pattern)
        _missing.append(f"{pattern} (needs {module}: pip install '{extra}')")


def pytest_report_header() -> list[str]:
    if not _missing:
        return []
    return ["doctests left out, their extras are not installed: " + "; ".join(_missing)]
