"""NEARDUP_KERNELS is read at every call, as os.environ holds it at that moment."""

from __future__ import annotations

import importlib.util

import pytest

from neardup import kernels


def reference(value: str | None) -> str:
    word = "auto" if value is None else value.strip().lower()
    return "on" if word in ("1", "on", "true", "yes") else "off" if word in (
        "0", "off", "false", "no"
    ) else "auto"  # fmt: skip


@pytest.mark.parametrize(
    "values",
    [
        [None, "on", None],
        ["off", "ON", " 1 ", "no", "", "weird", None, "TRUE", "0", "\u00e9", None, "yes"],
    ],
)
def test_mode_follows_the_variable_as_it_changes(
    monkeypatch: pytest.MonkeyPatch, values: list[str | None]
) -> None:
    """Set, changed and unset within one process: each call answers from the value of
    that moment, as parsing ``os.environ.get`` would (a cached answer would not); with the
    kernel modules imported, which set the package's attributes of their names."""
    if importlib.util.find_spec("numba") is not None:
        for name in ("_join", "_pairs", "_sketch", "_text"):
            kernels.load(name)
    for value in values:
        if value is None:
            monkeypatch.delenv("NEARDUP_KERNELS", raising=False)
        else:
            monkeypatch.setenv("NEARDUP_KERNELS", value)
        assert kernels.mode() == reference(value), value
        assert kernels.mode() == reference(value), value  # the parsed value remembered
