"""The knobs of near-duplicate detection, the keep policies, and what a store depends on.

>>> DedupConfig().threshold, check_keep("longest")
(0.6, 'longest')
>>> check_keep("newest")
Traceback (most recent call last):
...
neardup.errors.ConfigError: keep must be 'first', 'longest' or 'earliest', got 'newest'
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field, fields
from typing import Literal

from ..errors import ConfigError
from ..index.lsh import optimal_params
from ..normalize import Normalizer, setting_flag

__all__ = ["KEEP_POLICIES", "DedupConfig", "KeepPolicy", "check_keep", "store_fingerprint"]

#: Which document of a cluster is kept and names it: the first seen (the streaming rule),
#: the longest text, or the earliest timestamp.
KeepPolicy = Literal["first", "longest", "earliest"]
KEEP_POLICIES: tuple[KeepPolicy, ...] = ("first", "longest", "earliest")


def check_keep(keep: object) -> KeepPolicy:
    """``keep`` if it is a keep policy, else ConfigError naming the choices."""
    if keep not in KEEP_POLICIES:
        raise ConfigError(f"keep must be 'first', 'longest' or 'earliest', got {keep!r}")
    return keep


@dataclass(frozen=True)
class DedupConfig:
    """The knobs of near-duplicate detection, with defaults chosen on news in both languages.

    ``threshold``: the coverage of the shorter text that makes two documents the same story.
    ``copy_threshold``: the share of a later document's own text (chrome aside) that must be
    found in its match for it to be dropped as a copy; below it the document brings new text
    and is kept, extending the story it matched.
    ``title_threshold``: the character-measure score short texts need.
    ``short_units``: texts with fewer units than this are compared as titles.
    ``fragment_ratio``: below this length ratio (shorter / longer) the coverage needed rises
    towards 1.0, so a short template sentence does not absorb every story that quotes it.
    ``prefilter``: candidates whose MinHash-estimated containment is below this skip the exact
    check (they could not reach ``threshold``).
    ``common_after``: a shingle seen in this many stories is boilerplate or template and does
    not count towards coverage (0 turns this off).
    ``chrome_passage``: a passage of this many units (shingles in a row) every shingle of
    which has been seen in two different stories is chrome as well — a bio, a signature, a
    series' blurb that two different stories carry (0 turns this off).
    ``chrome_window``: how much the guard behind ``common_after`` and ``chrome_passage``
    remembers, as a load (stories a slot of its count table): it counts in turns, each
    ending once the stories counted in it fill this load, and forgets what came before the
    last full turn, so its load stays below twice this. The default is what the default
    ``common_after`` and ``chrome_passage`` hold (:func:`~neardup.engine.templates.window_for`:
    about 20,000 long news stories a turn). 0: it counts every story ever kept; its load
    then grows with the run, and from about 0.73 chance makes a story's own text look like
    chrome (see :class:`~neardup.engine.templates.CommonShingles`).
    ``lsh_threshold``: the Jaccard level the LSH bands are tuned to catch (low, because the
    verification, not the index, decides; excerpts have a low Jaccard but a high coverage).
    ``bucket_cap``: an LSH bucket pairs only its first this many documents with later ones.
    ``max_verify``: a document is verified against at most this many of its candidates,
    the most alike first (:func:`~neardup.engine.to_verify`): what a story reprinted a
    thousand times costs per copy.
    """

    threshold: float = 0.6
    copy_threshold: float = 0.9
    fragment_ratio: float = 0.3
    prefilter: float = 0.3
    common_after: int = 5
    chrome_passage: int = 96
    chrome_window: float = 0.36
    title_threshold: float = 0.75
    short_units: int = 24
    lsh_threshold: float = 0.15
    num_perm: int = 128
    lsh_params: tuple[int, int] | None = None
    bucket_cap: int = 100
    max_verify: int = 8
    cjk_width: int = 5
    word_width: int = 9
    normalize: bool = True
    strip_boilerplate: bool = True
    normalizer: Normalizer = field(default_factory=Normalizer)

    def __post_init__(self) -> None:
        self._check_types()
        for name in ("threshold", "copy_threshold", "title_threshold"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ConfigError(f"{name} must be in (0, 1], got {value}")
        if self.short_units < 0:
            raise ConfigError(f"short_units must be >= 0, got {self.short_units}")
        if self.chrome_passage < 0:
            raise ConfigError(f"chrome_passage must be >= 0, got {self.chrome_passage}")
        if not 0.0 <= self.chrome_window <= 64.0:  # a turn's load can reach 255 a slot
            raise ConfigError(f"chrome_window must be in [0, 64], got {self.chrome_window}")
        if not (1 <= self.cjk_width <= 255 and 1 <= self.word_width <= 255):
            raise ConfigError(
                f"shingle widths must be between 1 and 255, got cjk_width={self.cjk_width}, "
                f"word_width={self.word_width}"
            )
        n = self.num_perm
        if n < 1 or n & (n - 1) or n > 4096:
            raise ConfigError(f"num_perm must be a power of two between 1 and 4096, got {n}")
        if self.bucket_cap < 1:
            raise ConfigError(f"bucket_cap must be at least 1, got {self.bucket_cap}")
        if self.max_verify < 1:
            raise ConfigError(f"max_verify must be at least 1, got {self.max_verify}")
        _ = self.bands_rows  # validates the LSH parameters

    def _check_types(self) -> None:
        """Each setting of its type, numpy's numbers and lists taken as Python's (a sweep's
        values; a store writes the settings as JSON), anything else a ConfigError naming it."""

        def put(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "float":
                if isinstance(value, bool) or not isinstance(value, numbers.Real):
                    raise ConfigError(f"{f.name} must be a number, got {value!r}")
                put(f.name, float(value))
            elif f.type == "int":
                if _whole(value) is None:
                    raise ConfigError(f"{f.name} must be a whole number, got {value!r}")
                put(f.name, _whole(value))
            elif f.type == "bool":
                put(f.name, setting_flag(f.name, value))
            elif f.name == "lsh_params" and value is not None:
                pair = tuple(value) if isinstance(value, list | tuple) else ()
                if len(pair) != 2 or any(_whole(v) is None for v in pair):
                    raise ConfigError(f"lsh_params must be (bands, rows) or None, got {value!r}")
                put(f.name, (_whole(pair[0]), _whole(pair[1])))
            elif f.name == "normalizer" and not isinstance(value, Normalizer):
                raise ConfigError(f"normalizer must be a neardup.Normalizer, got {value!r}")

    @property
    def bands_rows(self) -> tuple[int, int]:
        """(bands, rows) of the LSH index."""
        if self.lsh_params is not None:
            b, r = self.lsh_params
            if b < 1 or r < 1 or b * r > self.num_perm:
                raise ConfigError(
                    f"b * r = {b} * {r} = {b * r} must not exceed num_perm {self.num_perm}"
                )
            return b, r
        return optimal_params(self.lsh_threshold, self.num_perm, 0.2, 0.8)


def _whole(value: object) -> int | None:
    """``value`` as an int when it is a whole number (numpy's, or a float such as 128.0 that
    JSON may give), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and float(value).is_integer():
        return int(float(value))
    return None


def store_fingerprint(cfg: DedupConfig) -> dict[str, object]:
    """The settings a store's sketches depend on: a store filled under one fingerprint
    refuses a Deduper with another (thresholds may change between runs; these may not)."""
    n = cfg.normalizer
    return {
        "format": 1,
        "num_perm": cfg.num_perm,
        "bands_rows": list(cfg.bands_rows),
        "cjk_width": cfg.cjk_width,
        "word_width": cfg.word_width,
        "normalize": [cfg.normalize, n.html, n.width, n.case, n.whitespace, n.script],
        "strip_boilerplate": cfg.strip_boilerplate,
    }
