"""What the engine keeps of one document: its :class:`Sketch`.

A document's text is normalized and stripped of site boilerplate (the *prepared* text), cut
into shingles hashed to 32-bit codes in text order (the lowest bit telling a CJK-started
shingle from a Latin one), and summarized by a MinHash signature and its LSH band keys.
Its vocabulary (the sorted distinct codes) and its figures serve verification.

>>> sk = make_sketch("来源：某某日报\\n北京地铁十九号线今天开通运营，全长22公里。", DedupConfig())
>>> sk.text, sk.n_units, len(sk.signature), sorted(sk.numbers)
('北京地铁十九号线今天开通运营,全长22公里。', 20, 128, ['22'])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..boilerplate import strip_boilerplate, strip_boilerplate_all
from ..index.lsh import band_keys
from ..kernels import tables
from ..shingling import astral_words, distinct, pack_codes, shingle_hashes, unit_classes
from ..sketch.minhash import check_num_perm, minhash_batch
from .config import DedupConfig

__all__ = [
    "MAX_VERIFY_CHARS",
    "Sketch",
    "distinct",
    "distinct_with_index",
    "figures",
    "figures_at",
    "figures_within",
    "make_sketch",
    "make_sketches",
    "pack_codes",
    "prepare",
    "prepare_all",
]

U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_YEAR_OR_DATE = re.compile(r"(?:19|20)\d\d(?:[-/.]\d{1,2}){0,2}")  # what site headers add

#: Longest prepared text a sketch keeps for evidence and the title measures; the shingles,
#: and so coverage, always cover the whole document.
MAX_VERIFY_CHARS = 200_000


@dataclass(frozen=True, slots=True, init=False)
class Sketch:
    """Everything the engine keeps of one document to find and verify its near-duplicates.

    ``shingles`` are the shingle codes in text order. A sketch made with its vocabulary
    index may leave them out (``shingles=None``): they are then ``vocab[vocab_index]``,
    rebuilt when read, and the sketch holds 4 bytes a shingle less (what a batch run keeps
    of every document)."""

    text: str
    _shingles: U32 | None
    n_units: int
    signature: U64
    bands: U64
    vocab: U32
    numbers: frozenset[str]
    #: where each of ``shingles`` is in ``vocab`` (None: not computed; verification then
    #: looks the shingles up one by one, a few times slower)
    vocab_index: npt.NDArray[np.integer[Any]] | None

    def __init__(
        self,
        text: str,
        shingles: U32 | None = None,
        n_units: int | None = None,
        signature: U64 | None = None,
        bands: U64 | None = None,
        vocab: U32 | None = None,
        numbers: frozenset[str] = frozenset(),
        vocab_index: npt.NDArray[np.integer[Any]] | None = None,
        *,
        _shingles: U32 | None = None,  # what dataclasses.replace passes for ``shingles``
    ) -> None:
        if shingles is None:
            shingles = _shingles
        if n_units is None or signature is None or bands is None or vocab is None:
            raise TypeError("a Sketch needs n_units, signature, bands and vocab")
        if shingles is None and vocab_index is None:
            raise ValueError("a sketch needs its shingles or its vocabulary index")
        # the slots set through their descriptors (frozen: see neardup.frozen)
        _put_text(self, text)
        _put_shingles(self, shingles)
        _put_n_units(self, n_units)
        _put_signature(self, signature)
        _put_bands(self, bands)
        _put_vocab(self, vocab)
        _put_numbers(self, numbers)
        _put_vocab_index(self, vocab_index)

    @property
    def shingles(self) -> U32:
        """The shingle codes in text order."""
        if self._shingles is not None:
            return self._shingles
        codes: U32 = self.vocab[self.vocab_index]
        return codes

    @property
    def keeps_shingles(self) -> bool:
        """Whether the sketch holds its shingle codes (else :attr:`shingles` rebuilds them
        from the vocabulary and its index)."""
        return self._shingles is not None

    @property
    def is_empty(self) -> bool:
        """A document with no letters, digits or CJK characters has nothing to compare."""
        return self.n_units == 0


_put_text = Sketch.__dict__["text"].__set__
_put_shingles = Sketch.__dict__["_shingles"].__set__
_put_n_units = Sketch.__dict__["n_units"].__set__
_put_signature = Sketch.__dict__["signature"].__set__
_put_bands = Sketch.__dict__["bands"].__set__
_put_vocab = Sketch.__dict__["vocab"].__set__
_put_numbers = Sketch.__dict__["numbers"].__set__
_put_vocab_index = Sketch.__dict__["vocab_index"].__set__


def prepare(text: str, cfg: DedupConfig) -> str:
    """The text as it is compared: normalized and stripped of boilerplate (as configured)."""
    if cfg.normalize:
        text = cfg.normalizer(text)
    if cfg.strip_boilerplate:
        text = strip_boilerplate(text)
    return text


def prepare_all(texts: Sequence[str], cfg: DedupConfig) -> list[str]:
    """:func:`prepare` of each of ``texts`` (boilerplate found in one scan of them all)."""
    if cfg.normalize:
        normalizer = cfg.normalizer
        texts = [normalizer(t) for t in texts]
    if cfg.strip_boilerplate:
        return strip_boilerplate_all(texts)
    return list(texts)


def distinct_with_index(codes: U32) -> tuple[U32, npt.NDArray[np.integer[Any]]]:
    """``distinct(codes)``, and where each code is in it: ``vocab[index] == codes``. The
    index is uint16 (2 bytes a shingle) unless the text has more than 65,536 shingles.

    >>> vocab, index = distinct_with_index(np.array([7, 3, 7, 5], dtype=np.uint32))
    >>> vocab.tolist(), index.tolist(), index.dtype.name
    ([3, 5, 7], [2, 0, 2, 1], 'uint16')
    """
    order = np.argsort(codes)
    ordered = codes[order]
    new = np.ones(len(codes), dtype=np.bool_)
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    index: npt.NDArray[np.integer[Any]] = np.empty(
        len(codes), dtype=np.uint16 if len(codes) <= 1 << 16 else np.int32
    )
    index[order] = np.cumsum(new, dtype=np.int32) - 1
    return ordered[new], index


def figures(text: str) -> frozenset[str]:
    """The figures of a text (two or more characters), leaving out years and dates."""
    return frozenset(
        f for f in set(_NUMBER.findall(text)) if len(f) >= 2 and not _YEAR_OR_DATE.fullmatch(f)
    )


def figures_at(text: str) -> list[tuple[str, int]]:
    """The figures of :func:`figures` with where each occurrence starts in ``text``."""
    return [
        (m.group(), m.start())
        for m in _NUMBER.finditer(text)
        if len(m.group()) >= 2 and not _YEAR_OR_DATE.fullmatch(m.group())
    ]


#: a character a figure can hold (see :data:`_NUMBER`), and a run of them
_FIGURE_CHAR = re.compile(r"[\d.,:/-]")
_FIGURE_RUN = re.compile(r"[\d.,:/-]*")


def figures_within(text: str, lo: int, hi: int) -> set[str]:
    """The figures of :func:`figures_at` whose occurrence starts at a character from ``lo``
    to ``hi``, reading ``text`` only from the last character before ``lo`` that no figure
    holds (the figures found from there are the ones a reading from the start finds) to
    the first figure past ``hi`` — with the compiled kernel when the kernels are wanted,
    from there to the first character after ``hi`` that no figure holds (no figure that
    starts up to ``hi`` reaches past it).

    >>> sorted(figures_within("a 12.34 b 56 c 78", 4, 12))
    ['56']
    """
    if hi < lo:
        return set()
    start = lo
    while start > 0 and _FIGURE_CHAR.match(text, start - 1):
        start -= 1
    run = _FIGURE_RUN.match(text, hi + 1)  # matches at any position (it may be empty)
    end = run.end() if run is not None else len(text)
    if kernels.wanted(end - start):
        key, table = tables.keyed(tables.code_points(text[start:end]))
        spans = np.empty((len(key) // 2 + 1, 2), dtype=np.int64)  # a figure holds two or more
        size = kernels.load("_text").figure_spans(key, table, spans)
        return {
            text[start + a : start + b]
            for a, b in spans[:size].tolist()
            if start + a >= lo and start + a <= hi
        }
    kernels.work_done(end - start)
    return _figures_from(text, start, lo, hi)


def _figures_from(text: str, start: int, lo: int, hi: int) -> set[str]:
    """:func:`figures_within` with the regular expressions, reading from ``start``."""
    out: set[str] = set()
    for m in _NUMBER.finditer(text, start):
        at = m.start()
        if at > hi:
            break
        f = m.group()
        if at >= lo and len(f) >= 2 and not _YEAR_OR_DATE.fullmatch(f):
            out.add(f)
    return out


def make_sketches(texts: Sequence[str], cfg: DedupConfig) -> list[Sketch]:
    """Sketch many documents at once: with the compiled kernels when they pay
    (:mod:`neardup.kernels`), else with numpy (MinHash and band keys vectorized over the
    batch); both give the same sketches, bit for bit."""
    prepared = prepare_all(texts, cfg)
    chars = sum(map(len, prepared))
    if kernels.wanted(chars):
        return _compiled_sketches(prepared, cfg)
    kernels.work_done(chars)
    return _numpy_sketches(prepared, cfg)


def _numpy_sketches(prepared: Sequence[str], cfg: DedupConfig) -> list[Sketch]:
    """:func:`make_sketches` of prepared texts with numpy: the reference."""
    feats = [
        shingle_hashes(t, cjk_width=cfg.cjk_width, word_width=cfg.word_width) for t in prepared
    ]
    signatures = minhash_batch([f.hashes for f in feats], num_perm=cfg.num_perm)
    b, r = cfg.bands_rows
    keys = band_keys(signatures, b, r)
    packed = [pack_codes(f.hashes, cfg.cjk_width, f.widths) for f in feats]
    vocabs = [distinct_with_index(codes) for codes in packed]
    return [
        Sketch(
            text=p[:MAX_VERIFY_CHARS],
            shingles=packed[i],
            vocab=vocabs[i][0],
            n_units=f.n_units,
            signature=signatures[i],
            bands=keys[i],
            numbers=figures(p),
            vocab_index=vocabs[i][1],
        )
        for i, (p, f) in enumerate(zip(prepared, feats, strict=True))
    ]


def _compiled_sketches(prepared: Sequence[str], cfg: DedupConfig) -> list[Sketch]:
    """:func:`make_sketches` of prepared texts with the compiled kernel: one pass over all
    their code points gives every shingle code, signature and vocabulary."""
    check_num_perm(cfg.num_perm)
    n = len(prepared)
    cp = np.frombuffer("".join(prepared).encode("utf-32-le", "surrogatepass"), dtype="<u4")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(p) for p in prepared], out=offsets[1:])
    room = len(cp) + n  # at most one shingle per unit, or one for a text without any
    units = np.empty(n, dtype=np.int64)
    counts = np.empty(n + 1, dtype=np.int64)
    codes = np.empty(room, dtype=np.uint32)
    index = np.empty(room, dtype=np.int32)
    vocab_counts = np.empty(n + 1, dtype=np.int64)
    vocab = np.empty(room, dtype=np.uint32)
    signatures = np.empty((n, cfg.num_perm), dtype=np.uint64)
    kernels.load("_sketch").sketch_chunk(
        cp, offsets, unit_classes(), astral_words(cp), cfg.cjk_width, cfg.word_width,
        cfg.num_perm, units, counts, codes, index, vocab_counts, vocab, signatures,
    )  # fmt: skip
    b, r = cfg.bands_rows
    keys = band_keys(signatures, b, r)
    small = index.astype(np.uint16)  # the index of a text of at most 2^16 shingles
    bounds, vbounds = counts.tolist(), vocab_counts.tolist()
    numbers = _compiled_figures(prepared, cp, offsets)
    return [
        Sketch(
            text=p[:MAX_VERIFY_CHARS],
            shingles=codes[bounds[i] : bounds[i + 1]],
            vocab=vocab[vbounds[i] : vbounds[i + 1]],
            n_units=int(units[i]),
            signature=signatures[i],
            bands=keys[i],
            numbers=numbers[i],
            vocab_index=(small if bounds[i + 1] - bounds[i] <= 1 << 16 else index)[
                bounds[i] : bounds[i + 1]
            ],
        )
        for i, p in enumerate(prepared)
    ]


def _compiled_figures(
    prepared: Sequence[str], cp: npt.NDArray[np.uint32], offsets: npt.NDArray[np.int64]
) -> list[frozenset[str]]:
    """:func:`figures` of each prepared text (``cp`` their code points one after another,
    text k from ``offsets[k]``), found by the compiled kernel in one pass."""
    key, table = tables.keyed(cp)
    room = len(cp) // 2 + 1  # a figure holds two characters or more
    spans = np.empty((room, 2), dtype=np.int64)
    docs = np.empty(room, dtype=np.int64)
    size = kernels.load("_text").figure_spans_all(key, offsets, table, spans, docs)
    found: list[set[str]] = [set() for _ in prepared]
    starts = offsets.tolist()
    for d, (lo, hi) in zip(docs[:size].tolist(), spans[:size].tolist(), strict=True):
        at = starts[d]
        found[d].add(prepared[d][lo - at : hi - at])
    return [frozenset(f) for f in found]


def make_sketch(text: str, cfg: DedupConfig) -> Sketch:
    """Sketch one document."""
    return make_sketches([text], cfg)[0]
