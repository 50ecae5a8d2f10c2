"""Every :class:`~neardup.engine.DedupConfig` setting by its name, read from the command line
(``--set name=value``), a TOML file (``--config neardup.toml``) or the Scrapy add-on
(``NEARDUP_SET``), each value checked against the field's type with a one-line error that
names the setting.

>>> parse_assignment("common_after=10"), parse_assignment("normalizer.script=false")
(('common_after', 10), ('normalizer.script', False))
>>> make_config({"threshold": 0.7, "normalizer.script": False}).normalizer.script
False
>>> describe("common_after")
'a whole number (int), default 5'
>>> parse_assignment("thresold=0.7")
Traceback (most recent call last):
...
neardup.errors.ConfigError: no setting 'thresold' (did you mean threshold?); the settings are: threshold, copy_threshold, fragment_ratio, prefilter, common_after, chrome_passage, chrome_window, title_threshold, short_units, lsh_threshold, num_perm, lsh_params, bucket_cap, max_verify, cjk_width, word_width, normalize, strip_boilerplate, normalizer.html, normalizer.width, normalizer.case, normalizer.whitespace, normalizer.script
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from typing import Any

from .engine import DedupConfig
from .errors import ConfigError
from .messages import did_you_mean
from .normalize import Normalizer

__all__ = [
    "SETTINGS",
    "coerce_setting",
    "describe",
    "make_config",
    "parse_assignment",
    "parse_setting",
    "read_config_file",
]


def _kinds() -> dict[str, str]:
    kinds: dict[str, str] = {}
    for f in dataclasses.fields(DedupConfig):
        if f.name == "normalizer":
            for step in dataclasses.fields(Normalizer):
                kinds[f"normalizer.{step.name}"] = "bool"
            continue
        kinds[f.name] = str(f.type).replace(" ", "")
    return kinds


#: Every setting and the type of its value: ``float``, ``int``, ``bool`` or ``pair``
#: (``lsh_params``: two whole numbers, or none). ``normalizer.STEP`` switches one
#: normalization step (html, width, case, whitespace, script).
SETTINGS: dict[str, str] = {
    name: {"tuple[int,int]|None": "pair"}.get(kind, kind) for name, kind in _kinds().items()
}
_DEFAULTS: dict[str, object] = {
    **{f.name: f.default for f in dataclasses.fields(DedupConfig) if f.name != "normalizer"},
    **{f"normalizer.{f.name}": f.default for f in dataclasses.fields(Normalizer)},
}
_WHAT = {
    "float": "a number (float)",
    "int": "a whole number (int)",
    "bool": "true or false (bool)",
    "pair": "two whole numbers, bands,rows such as 32,4, or none",
}
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def describe(name: str) -> str:
    """What ``name`` takes and its default, for help texts: 'a number (float), default 0.6'."""
    default = _DEFAULTS[name]
    shown = (
        "none"
        if default is None
        else str(default).lower()
        if isinstance(default, bool)
        else default
    )
    return f"{_WHAT[SETTINGS[name]]}, default {shown}"


def _known(name: str) -> str:
    if name in SETTINGS:
        return name
    hint = did_you_mean(name, SETTINGS)
    raise ConfigError(f"no setting {name!r}{hint}; the settings are: {', '.join(SETTINGS)}")


def _wrong(name: str, value: object) -> ConfigError:
    return ConfigError(f"{name} takes {_WHAT[SETTINGS[name]]}, not {value!r}")


def parse_setting(name: str, text: str) -> object:
    """The value of setting ``name`` written as ``text`` (as on the command line)."""
    kind = SETTINGS[_known(name)]
    raw = text.strip()
    if kind == "bool":
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise _wrong(name, text)
    if kind == "pair":
        if raw.lower() in ("none", ""):
            return None
        pieces = raw.replace("x", ",").split(",")
        try:
            b, r = (int(p) for p in pieces)
        except ValueError:
            raise _wrong(name, text) from None
        return (b, r)
    try:
        value: float = int(raw) if kind == "int" else float(raw)
    except ValueError:
        raise _wrong(name, text) from None
    if kind == "float" and not math.isfinite(value):
        raise _wrong(name, text)
    return value


def coerce_setting(name: str, value: object) -> object:
    """``value`` (from TOML, a Scrapy setting, Python) as setting ``name`` takes it; a string
    is read as on the command line."""
    kind = SETTINGS[_known(name)]
    if isinstance(value, str):
        return parse_setting(name, value)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise _wrong(name, value)
    if kind == "pair":
        if value is None:
            return None
        if (
            isinstance(value, list | tuple)
            and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        ):
            return (value[0], value[1])
        raise _wrong(name, value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(name, value)
    if kind == "int":
        if isinstance(value, float) and not value.is_integer():
            raise _wrong(name, value)
        return int(value)
    if not math.isfinite(value):
        raise _wrong(name, value)
    return float(value)


def parse_assignment(text: str) -> tuple[str, object]:
    """``name=value`` (``--set``) as (name, value)."""
    name, eq, value = text.partition("=")
    name = name.strip()
    if not eq or not name:
        raise ConfigError(f"--set takes NAME=VALUE (e.g. common_after=10), not {text!r}")
    return _known(name), parse_setting(name, value)


def read_config_file(path: str) -> dict[str, object]:
    """The settings of a TOML file: keys are setting names (``[normalizer]`` for its steps);
    an unknown key or a wrong value is a ConfigError naming the file and the key."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read the config file {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path} is not valid TOML: {e}") from None
    flat: dict[str, object] = {}
    for key, value in data.items():
        if key == "normalizer" and isinstance(value, dict):
            for step, v in value.items():
                flat[f"normalizer.{step}"] = v
        else:
            flat[key] = value
    unknown = [k for k in flat if k not in SETTINGS]
    if unknown:
        raise ConfigError(
            f"{path}: unknown setting{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; the settings are: {', '.join(SETTINGS)}"
        )
    out: dict[str, object] = {}
    for key, value in flat.items():
        try:
            out[key] = coerce_setting(key, value)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None
    return out


#: Ranges DedupConfig itself does not check: (lowest, highest, whether the lowest is allowed).
_RANGES: dict[str, tuple[float, float, bool]] = {
    "fragment_ratio": (0.0, 1.0, True),
    "prefilter": (0.0, 1.0, True),
    "lsh_threshold": (0.0, 1.0, False),
    "common_after": (0, math.inf, True),
}


def make_config(values: Mapping[str, object]) -> DedupConfig:
    """A DedupConfig with ``values`` (setting name: value, already checked) over the
    defaults; ConfigError (naming the setting) when a value is out of its range."""
    for name, (low, high, closed) in _RANGES.items():
        value = values.get(name)
        if isinstance(value, int | float) and not (
            (low <= value if closed else low < value) and value <= high
        ):
            bounds = (
                f"in {'[' if closed else '('}{low:g}, {high:g}]"
                if high != math.inf
                else f">= {low:g}"
            )
            raise ConfigError(f"{name} must be {bounds}, got {value}")
    kwargs: dict[str, Any] = {}
    steps: dict[str, Any] = {}
    for name, value in values.items():
        if name.startswith("normalizer."):
            steps[name.removeprefix("normalizer.")] = value
        else:
            kwargs[name] = value
    if steps:
        kwargs["normalizer"] = Normalizer(**steps)
    return DedupConfig(**kwargs)
