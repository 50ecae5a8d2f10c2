"""Real crawls: does neardup keep one document per story, and never drop a document that
brought new text? Two real corpora, each judged by an oracle built from metadata and simple
text rules that knows nothing of the engine.

    python bench/real.py                               # hkcnews first 20,000, 20 Newsgroups first 4,000
    python bench/real.py --corpora ng --ng all         # all 18,847 posts
    PYTHONPATH=/work/base/src python bench/real.py --label before --out before.json --cases before.md
    python bench/real.py --corpora hk --clusters clusters.jsonl   # judge a CLUSTERS file, no run
    python bench/real.py --corpora hk --ids 185,186,205          # the judgement of a few ids

The engine runs as a user runs it: ``python -m neardup dedup INPUT -o UNIQUE --clusters
CLUSTERS --errors ERRORS`` (``sys.executable``, so ``PYTHONPATH`` decides which checkout is
measured) on a JSONL of the first N records holding only ``id`` and ``text``; titles,
authors, subjects and other metadata are for the judge only. From CLUSTERS it reads
``cluster``, ``duplicate_of`` (not null: the record was dropped from UNIQUE) and, when
present, ``contains`` (a kept record that contains or extends an earlier one); other keys
are ignored. ``--workdir DIR`` keeps the engine's files, to judge them again with
``--clusters``. Without ``../shared`` the script says so and exits 2.

The oracle
----------
Texts are cut into lines (hkcnews's lines are paragraphs) and normalized: NFKC, whitespace
collapsed, lower case. A line's *units* are its CJK characters and its Latin words/numbers;
*shingles* are 5 units (hkcnews) or 3 (20 Newsgroups: word 3-grams), never across a line (a
shorter line is one shingle). "B covers A" is the share of A's units that lie inside a
shingle B also has, so a typo uncovers one unit, not five shingles.

- *Chrome*, hkcnews: a line found in two documents that are otherwise different — titles
  not similar (normalized titles unequal and rapidfuzz ratio < 0.8) and the shorter one's
  text < 50 % covered by the other (two columns that share a bio; never a retitled reprint
  or an update of an excerpt, which share most of the shorter one) — or a line found under
  3+ titles that are not similar, unless every two of those documents are copies (≥ 80 %
  covered): the footer of a series of short posts, which is most of each post. 20
  Newsgroups: the header (up to the first blank line, and a second header block after a
  stray blank line), the signature (from the last ``--`` line, when at most 20 lines follow),
  and own lines found in posts of different subjects, by the same two rules (an author's
  sign-off block without ``--``, "thanks in advance"). Both: a line ≥ 80 % covered by the
  shingles of chrome lines seen in 3+ documents is chrome too (a bio edited once).
- *Quotes*, 20 Newsgroups: lines starting with ``>``, ``:``, ``|``, ``}`` or ``XX>``
  initials; a line (3+ words) found earlier in the thread in a post by another sender
  (quoting that lost its ``>``); attributions ("In article <…> … writes:", "… wrote:") are
  neither quote nor body.
- *Body*: the text minus chrome and quotes; its length is the characters of its lines. A
  document whose body has fewer than 8 units tells no story of its own ("chrome-only": an
  empty test post, a photo caption plus the blogger's bio); pairs with one are not judged.
- *Same story*, for a pair in one predicted cluster (the shorter body is the one with
  fewer units). hkcnews: the titles are similar and the other's full text covers ≥ 30 % of
  the shorter body (not a series under one title such as "世界这一天"); or the other's body
  covers ≥ 60 % of the shorter body (rewrites of one story reach 0.6–0.7). 20 Newsgroups:
  one thread (subjects equal without ``Re:``, whitespace and case, or one subject inside
  the other: "(was: …)") and one quotes the other (its full text covers ≥ 50 % of the
  other's body; or the other's full text covers ≥ 50 % of its quoted lines and those cover
  8+ units of the other's own body); or, in any thread, the other's full text covers ≥ 60 %
  of the shorter body (a repost, a crosspost).
  Two documents joined by chrome alone, or by quoting the same third post, fail.
- *Stories of a cluster*: the connected parts of the same-story graph over its members
  (every pair; a cluster over 1,000 judged members is judged on 200,000 random pairs, pair
  counts scaled, and the table says how many were). 2+ parts: it *joins different stories*.
- *Natural reprint pairs* (recall). hkcnews: both bodies ≥ 100 characters and the longer
  body covers ≥ 80 % of the shorter. Candidates: pairs with one normalized title, plus pairs
  sharing half of the smaller one's 1-in-4 sample of body shingles (an inverted index;
  shingles in over 100 documents skipped); each checked exactly. 20 Newsgroups: the same
  ``From:`` address and thread subject, both bodies ≥ 100 characters, ≥ 80 % covered.
- *Dropped with new content*: a dropped D (duplicate_of M) whose body sentences (lines cut
  after 。！？!?；;) that M's full text covers less than 80 % add up to at least
  max(80 characters, 20 % of D's body). A reply that quotes its parent and answers it, a
  column that ends with the same bio as the one before: data loss.
- ``contains`` (when the engine gives it): plausible when the two are the same story or the
  containing document's full text covers ≥ 50 % of the other's body.

The table: documents, kept, dropped, clusters of 2+, pair precision (of the judged pairs in
one predicted cluster, the share that are one story), clusters that join different stories
(and the largest: members / distinct titles), dropped with new content (and its share of
dropped), recall of natural reprints (both in one cluster) and, of those found, the share
where the later one was dropped. ``--cases FILE`` (markdown, for developers) lists every
joining cluster and every drop with new content with a 60-character excerpt; the terminal
gets counts only; ``--out FILE.json`` the figures.

Known limits: chrome is learned from the records judged, so a footer seen only in two posts
that are mostly that footer stays body; a paragraph that two different articles share (a
quoted statement, background, a pasted news story in two threads) is chrome, so they are
judged on the rest; two retitled versions of one story that share some paragraphs exactly but
under half of the shorter lose those paragraphs; a reply whose subject changed entirely, or
whose quotes lost their ``>`` and came first in the slice, is judged as a different post;
thresholds are round numbers checked by reading cases, not tuned.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz import fuzz

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BenchDataMissing, die, environment, header, read_jsonl, shared_path


@dataclass(frozen=True)
class Corpus:
    """A shared corpus: where it is, how many records a run takes, how it is shingled."""

    key: str
    path: str
    default: int
    total: int
    k: int  # units per shingle


CORPORA = {
    "hk": Corpus("hk", "corpus/hkcnews-zh-hans.jsonl.gz", 20_000, 48_005, 5),
    "ng": Corpus("ng", "corpus/20newsgroups-en.jsonl.gz", 4_000, 18_847, 3),
}

TITLE_SIMILAR = 80.0  # rapidfuzz ratio, 0-100
CHROME_PAIR = 0.5  # a line shared by two documents this different is chrome
CHROME_TITLES = 3  # a line under this many different titles is chrome ...
CHROME_COPY = 0.8  # ... unless every two of them are copies
FUZZY_CHROME = 0.8
FUZZY_CHROME_DOCS = 3
FUZZY_MIN_UNITS = 8
TINY_UNITS = 8
SAME_STORY = 0.6
SERIES_GUARD = 0.3
QUOTES = 0.5
REPRINT = 0.8
REPRINT_MIN_CHARS = 100
CANDIDATE = 0.5
FOUND = 0.8
NEW_MIN_CHARS = 80
NEW_MIN_SHARE = 0.2
SIG_MAX_LINES = 20
THREAD_MIN_CHARS = 8
WITNESS_TRIES = 30  # documents of a recurring line tried as witnesses
POSTING_CAP = 100
SAMPLE_MOD = 4
CLUSTER_CAP = 1_000
SAMPLED_PAIRS = 200_000

_UNIT = re.compile(r"[a-z0-9\u00c0-\u024f]+|[^\W_]")
_WS = re.compile(r"\s+")
_SENTENCE = re.compile(r"(?<=[。！？!?；;])")
_QUOTE = re.compile(r"^\s*(?:[>:|}]|[A-Za-z]{1,5}>)")
_ATTRIBUTION = re.compile(
    r"^\s*in article\b|\b(?:writes|wrote|says|said)\s*:\s*$|^\s*(?:quoting|according to) .*:\s*$",
    re.IGNORECASE,
)
_RE = re.compile(r"^(?:\s*re(?:\^\d+|\[\d+\])?\s*:)+", re.IGNORECASE)
_HEADERISH = re.compile(
    r"^\s*(?:<[^<>\s]+@[^<>\s]+>\s*)+$|^(?:nntp-posting-host|in-reply-to|references|reply-to|"
    r"distribution|keywords|summary|expires|originator|sender|followup-to|news-software|lines|"
    r"organization|message-id|article-i\.d\.|x-[\w-]+):",
    re.IGNORECASE,
)
_EMAIL = re.compile(r"[\w.+-]+@[\w.-]+")

_P = np.uint64(0x100000001B3)
_MASK = (1 << 64) - 1


def norm_line(s: str) -> str:
    """NFKC, whitespace collapsed, lower case."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", s)).strip().lower()


def norm_title(s: str) -> str:
    """A title or subject as compared: normalized, without whitespace."""
    return _WS.sub("", unicodedata.normalize("NFKC", s)).lower()


def header_end(raw: list[str]) -> int:
    """Where a post's header ends: the first blank line, unless what follows it is more header
    (a folded References line, NNTP-Posting-Host, In-reply-to ... after a stray blank line)."""
    end = next((i for i, s in enumerate(raw) if not s.strip()), len(raw))
    while end < len(raw):
        nxt = end
        while nxt < len(raw) and not raw[nxt].strip():
            nxt += 1
        block = []
        while nxt < len(raw) and raw[nxt].strip():
            block.append(raw[nxt])
            nxt += 1
        if not block or not all(_HEADERISH.match(s) for s in block):
            break
        end = nxt
    return end


def same_thread(a: str, b: str) -> bool:
    """Whether two thread subjects are one thread: equal, or one names the other ("(was: …)")."""
    if a == b:
        return True
    short, other = sorted((a, b), key=len)
    return len(short) >= THREAD_MIN_CHARS and short in other


def thread_subject(subject: str) -> str:
    """A subject without its ``Re:`` prefixes, whitespace and case: the thread."""
    return norm_title(_RE.sub("", unicodedata.normalize("NFKC", subject)))


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer, so the low bits of a shingle hash are as good as the high."""
    z = h + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


class Shingler:
    """Lines to shingles: units numbered by a vocabulary, ``k`` units a shingle, never across
    a line (a line of fewer units is one shingle)."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.vocab: dict[str, int] = {}

    def codes(self, line: str) -> list[int]:
        v = self.vocab
        return [v.setdefault(u, len(v) + 1) for u in _UNIT.findall(line)]

    def shingles(self, lines: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each unit's line; each shingle's hash, first unit and width."""
        k = self.k
        codes = [self.codes(line) for line in lines]
        lens = np.array([len(c) for c in codes], dtype=np.int64)
        n = int(lens.sum())
        flat = np.fromiter(chain.from_iterable(codes), dtype=np.uint64, count=n)
        unit_line = np.repeat(np.arange(len(lines), dtype=np.int64), lens)
        hs: list[np.ndarray] = [np.zeros(0, np.uint64)]
        starts: list[np.ndarray] = [np.zeros(0, np.int64)]
        widths: list[np.ndarray] = [np.zeros(0, np.int64)]
        if n >= k:
            m = n - k + 1
            h = np.zeros(m, dtype=np.uint64)
            for j in range(k):
                h = h * _P + flat[j : j + m]
            ok = np.flatnonzero(unit_line[:m] == unit_line[k - 1 :])
            hs.append(h[ok])
            starts.append(ok)
            widths.append(np.full(ok.size, k, dtype=np.int64))
        offsets = np.r_[0, np.cumsum(lens)]
        short = [i for i, c in enumerate(codes) if 0 < len(c) < k]
        if short:
            vals = []
            for i in short:
                v = 0xABCDEF + len(codes[i])
                for c in codes[i]:
                    v = (v * 0x100000001B3 + c) & _MASK
                vals.append(v)
            hs.append(np.array(vals, dtype=np.uint64))
            starts.append(offsets[short])
            widths.append(lens[short])
        return unit_line, _mix(np.concatenate(hs)), np.concatenate(starts), np.concatenate(widths)


def inside(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each hash of ``a``, whether the sorted unique array ``b`` has it."""
    if a.size == 0 or b.size == 0:
        return np.zeros(a.size, dtype=bool)
    i = np.searchsorted(b, a)
    i[i == b.size] = b.size - 1
    return b[i] == a


# Line kinds.
BODY, CHROME, HEADER, SIG, QUOTE, ATTRIBUTION, EMPTY = (
    "body",
    "chrome",
    "header",
    "signature",
    "quote",
    "attribution",
    "empty",
)


@dataclass
class Doc:
    """One record as the oracle sees it: its lines, their kinds, its shingles."""

    id: str
    pos: int
    label: str  # title or subject, as given
    key: str  # normalized title, or thread subject
    sender: str  # 20 Newsgroups: the From address
    lines: list[str]
    kinds: list[str]
    unit_line: np.ndarray
    sh: np.ndarray
    start: np.ndarray
    width: np.ndarray
    full: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    body: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    body_units: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    quote_units: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    quoted: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    body_chars: int = 0

    def mask(self, kinds: Iterable[str]) -> np.ndarray:
        """Which units lie in lines of these kinds."""
        want = set(kinds)
        per_line = np.array([k in want for k in self.kinds] + [False], dtype=bool)
        return per_line[self.unit_line]

    def hashes(self, units: np.ndarray) -> np.ndarray:
        """The unique shingles that start in these units."""
        return np.unique(self.sh[units[self.start]]) if self.sh.size else self.sh

    def covered(self, other: np.ndarray) -> np.ndarray:
        """Which units lie inside a shingle that ``other`` (sorted unique hashes) has."""
        n = self.unit_line.size
        hit = inside(self.sh, other)
        s = self.start[hit]
        ups = np.bincount(s, minlength=n + 1)
        downs = np.bincount(s + self.width[hit], minlength=n + 1)
        return np.cumsum(ups - downs)[:n] > 0

    def coverage(self, units: np.ndarray, other: np.ndarray) -> float:
        """The share of these units (a mask) that ``other`` covers; 0 for none."""
        total = int(units.sum())
        return float((self.covered(other) & units).sum() / total) if total else 0.0


class Oracle:
    """Chrome, bodies and same-story judgements for one corpus, from metadata and text rules."""

    def __init__(self, corpus: Corpus, records: list[dict[str, Any]]) -> None:
        self.corpus = corpus
        self.ng = corpus.key == "ng"
        self.shingler = Shingler(corpus.k)
        self.docs = [self._doc(i, r) for i, r in enumerate(records)]
        self.by_id = {d.id: d for d in self.docs}
        self._cover: dict[tuple[int, int], float] = {}
        if self.ng:
            self._mark_unprefixed_quotes()
        self.chrome_lines = self._mark_chrome()
        for d in self.docs:
            d.body_units = d.mask([BODY])
            d.body = d.hashes(d.body_units)
            d.body_chars = sum(len(s) for s, k in zip(d.lines, d.kinds, strict=True) if k == BODY)
            if self.ng:
                d.quote_units = d.mask([QUOTE])
                d.quoted = d.hashes(d.quote_units)

    # -- documents ---------------------------------------------------------------------------

    def _doc(self, pos: int, r: dict[str, Any]) -> Doc:
        raw = str(r["text"]).split("\n")
        if not self.ng:
            lines = [norm_line(s) for s in raw]
            kinds = [BODY if _UNIT.search(s) else EMPTY for s in lines]
            label, sender = str(r.get("title") or ""), str(r.get("author") or "")
            key = norm_title(label)
        else:
            lines, kinds, label, sender = self._post(raw)
            key = thread_subject(label)
        d = Doc(str(r["id"]), pos, label, key, sender, lines, kinds, *self.shingler.shingles(lines))
        d.full = np.unique(d.sh)
        return d

    @staticmethod
    def _post(raw: list[str]) -> tuple[list[str], list[str], str, str]:
        """A post's lines and kinds: header, quotes and attributions, signature, the rest."""
        lines = [norm_line(s) for s in raw]
        kinds = [BODY if _UNIT.search(s) else EMPTY for s in lines]
        subject = sender = ""
        end = header_end(raw)
        for i in range(end):
            kinds[i] = HEADER
            name, _, value = raw[i].partition(":")
            if name.lower() == "subject" and not subject:
                subject = value.strip()
            elif name.lower() == "from" and not sender:
                m = _EMAIL.search(value)
                sender = (m.group(0) if m else value).strip().lower()
        dashes = [i for i in range(end, len(raw)) if raw[i].strip() == "--"]
        if dashes and len(raw) - dashes[-1] - 1 <= SIG_MAX_LINES:
            for i in range(dashes[-1], len(raw)):
                kinds[i] = SIG
        for i in range(end, len(raw)):
            if kinds[i] != BODY:
                continue
            if _QUOTE.match(raw[i]):
                kinds[i] = QUOTE
                lines[i] = norm_line(_QUOTE.sub("", raw[i]))
            elif _ATTRIBUTION.search(raw[i]):
                kinds[i] = ATTRIBUTION
        return lines, kinds, subject, sender

    def _mark_unprefixed_quotes(self) -> None:
        """A post's line found earlier in its thread, in a post by someone else, is a quote
        (quoting that lost its ``>``: the replies of one thread repeat the question)."""
        first: dict[tuple[str, str], str] = {}
        for d in self.docs:
            for i, (s, k) in enumerate(zip(d.lines, d.kinds, strict=True)):
                if k != BODY or len(_UNIT.findall(s)) < self.corpus.k:
                    continue
                sender = first.setdefault((d.key, s), d.sender)
                if sender != d.sender:
                    d.kinds[i] = QUOTE

    # -- chrome ------------------------------------------------------------------------------

    def titles_similar(self, a: Doc, b: Doc) -> bool:
        return a.key == b.key or fuzz.ratio(a.key, b.key) >= TITLE_SIMILAR

    def shorter_in_other(self, a: Doc, b: Doc) -> float:
        """How much of the shorter document's whole text the other covers."""
        short, other = (a, b) if a.unit_line.size <= b.unit_line.size else (b, a)
        pair = (short.pos, other.pos)
        c = self._cover.get(pair)
        if c is None:
            everything = np.ones(short.unit_line.size, dtype=bool)
            c = self._cover[pair] = short.coverage(everything, other.full)
        return c

    def _is_chrome(self, docs: list[Doc]) -> bool:
        """Whether a line found in these documents is chrome (the rule in the docstring)."""
        for i, a in enumerate(docs):
            for b in docs[i + 1 :]:
                if not self.titles_similar(a, b) and self.shorter_in_other(a, b) < CHROME_PAIR:
                    return True
        groups: list[Doc] = []
        for d in docs:
            if not any(self.titles_similar(d, g) for g in groups):
                groups.append(d)
        if len(groups) < CHROME_TITLES:
            return False
        return any(
            self.shorter_in_other(a, b) < CHROME_COPY
            for i, a in enumerate(groups)
            for b in groups[i + 1 :]
        )

    def _mark_chrome(self) -> int:
        """Mark chrome lines in every document; the number of distinct chrome lines."""
        where: dict[str, list[int]] = defaultdict(list)
        for d in self.docs:
            for line in {s for s, k in zip(d.lines, d.kinds, strict=True) if k == BODY}:
                where[line].append(d.pos)
        chrome: dict[str, int] = {}
        for line, docs in where.items():
            if len(docs) >= 2 and self._is_chrome([self.docs[p] for p in docs[:WITNESS_TRIES]]):
                chrome[line] = len(docs)
        frequent: list[np.ndarray] = []
        for d in self.docs:
            for i, (s, k) in enumerate(zip(d.lines, d.kinds, strict=True)):
                if k == BODY and s in chrome:
                    d.kinds[i] = CHROME
                    if chrome[s] >= FUZZY_CHROME_DOCS:
                        frequent.append(d.hashes(d.unit_line == i))
        common = np.unique(np.concatenate(frequent)) if frequent else np.zeros(0, np.uint64)
        for d in self.docs:
            body = np.array([k == BODY for k in d.kinds], dtype=bool)
            if not body.any() or d.sh.size == 0:
                continue
            units = np.bincount(d.unit_line, minlength=len(d.kinds))
            got = np.bincount(d.unit_line[d.covered(common)], minlength=len(d.kinds))
            for i in np.flatnonzero(
                body & (units >= FUZZY_MIN_UNITS) & (got >= FUZZY_CHROME * units)
            ):
                d.kinds[i] = CHROME
        return len(chrome)

    # -- judgements --------------------------------------------------------------------------

    @staticmethod
    def no_story(d: Doc) -> bool:
        """A document whose text is all chrome (or nearly): it tells no story of its own."""
        return int(d.body_units.sum()) < TINY_UNITS

    @staticmethod
    def _shorter(a: Doc, b: Doc) -> tuple[Doc, Doc]:
        return (a, b) if a.body_units.sum() <= b.body_units.sum() else (b, a)

    def same_story(self, a: Doc, b: Doc) -> bool:
        """Whether two documents tell the same story (the rule in the module docstring)."""
        short, other = self._shorter(a, b)
        if self.ng:
            if short.coverage(short.body_units, other.full) >= SAME_STORY:
                return True
            return same_thread(a.key, b.key) and (self.quotes(a, b) or self.quotes(b, a))
        if self.titles_similar(a, b) and (
            short.coverage(short.body_units, other.full) >= SERIES_GUARD
        ):
            return True
        return short.coverage(short.body_units, other.body) >= SAME_STORY

    @staticmethod
    def quotes(x: Doc, y: Doc) -> bool:
        """Whether ``x`` quotes ``y``'s own text: contains most of ``y``'s body, or quotes what
        ``y`` holds (≥ 50 % of ``x``'s quoted lines) including 8+ units of ``y``'s own."""
        if y.body.size and y.coverage(y.body_units, x.full) >= QUOTES:
            return True
        if x.quote_units.sum() < TINY_UNITS or x.coverage(x.quote_units, y.full) < QUOTES:
            return False
        return int((y.covered(x.quoted) & y.body_units).sum()) >= TINY_UNITS

    def new_content(self, d: Doc, m: Doc) -> tuple[int, str]:
        """The characters of ``d``'s body sentences not found in ``m``, and those sentences.

        A sentence (a line cut after 。！？!?；;) is found when ``m`` covers 80 % of its units,
        so a paragraph with one new sentence added counts that sentence, not the paragraph."""
        if d.sh.size == 0:
            return 0, ""
        covered = d.covered(m.full)
        first = np.searchsorted(d.unit_line, np.arange(len(d.lines)))
        new: list[str] = []
        for i, (line, kind) in enumerate(zip(d.lines, d.kinds, strict=True)):
            if kind != BODY:
                continue
            at = int(first[i])
            for sentence in _SENTENCE.split(line):
                n = len(_UNIT.findall(sentence))
                if n and covered[at : at + n].sum() < FOUND * n:
                    new.append(sentence.strip())
                at += n
        return sum(len(x) for x in new), " ".join(new)

    def is_new(self, d: Doc, m: Doc) -> tuple[bool, int, str]:
        """Whether dropping ``d`` as a copy of ``m`` loses new content (and what)."""
        chars, text = self.new_content(d, m)
        return chars >= max(NEW_MIN_CHARS, NEW_MIN_SHARE * d.body_chars), chars, text

    # -- natural reprints --------------------------------------------------------------------

    def reprint_pairs(self) -> list[tuple[int, int]]:
        """Pairs (earlier, later) of natural reprints, by the rule in the module docstring."""
        ok = [d for d in self.docs if d.body_chars >= REPRINT_MIN_CHARS and d.body.size]
        groups: dict[str, list[int]] = defaultdict(list)
        for d in ok:
            groups[f"{d.sender}\0{d.key}" if self.ng else d.key].append(d.pos)
        cand: set[tuple[int, int]] = set()
        for g in groups.values():
            g = g[:POSTING_CAP]
            cand.update((a, b) for i, a in enumerate(g) for b in g[i + 1 :])
        if not self.ng:
            cand |= self._shared_shingle_pairs(ok)
        out = []
        for a, b in sorted(cand):
            short, other = self._shorter(self.docs[a], self.docs[b])
            if short.coverage(short.body_units, other.body) >= REPRINT:
                out.append((a, b))
        return out

    @staticmethod
    def _shared_shingle_pairs(docs: list[Doc]) -> set[tuple[int, int]]:
        """Pairs sharing at least half of the smaller one's 1-in-4 sample of body shingles."""
        hs, ds, sizes = [], [], {}
        for d in docs:
            s = d.body[d.body % np.uint64(SAMPLE_MOD) == 0]
            if s.size:
                hs.append(s)
                ds.append(np.full(s.size, d.pos, dtype=np.int64))
                sizes[d.pos] = s.size
        if not hs:
            return set()
        h, doc = np.concatenate(hs), np.concatenate(ds)
        order = np.lexsort((doc, h))
        h, doc = h[order], doc[order]
        starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
        counts = np.diff(np.r_[starts, h.size])
        codes = []
        n = max(sizes) + 1
        for s in np.unique(counts).tolist():
            if s < 2 or s > POSTING_CAP:
                continue
            at = starts[counts == s]
            members = doc[at[:, None] + np.arange(s)]
            i, j = np.triu_indices(s, 1)
            codes.append(members[:, i].ravel() * n + members[:, j].ravel())
        if not codes:
            return set()
        pair, shared = np.unique(np.concatenate(codes), return_counts=True)
        out = set()
        for p, c in zip(pair.tolist(), shared.tolist(), strict=True):
            a, b = divmod(p, n)
            if c >= 2 and c >= CANDIDATE * min(sizes[a], sizes[b]):
                out.add((a, b))
        return out


# -- the engine's decisions ------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    cluster: str
    duplicate_of: str | None
    score: float
    contains: str | None


def read_clusters(path: Path) -> dict[str, Decision]:
    out = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out[str(r["id"])] = Decision(
                    str(r["cluster"]),
                    None if r.get("duplicate_of") is None else str(r["duplicate_of"]),
                    float(r.get("score") or 0.0),
                    None
                    if r.get("extends", r.get("contains")) is None
                    else str(r.get("extends", r.get("contains"))),
                )
    return out


def run_engine(records: list[dict[str, Any]], work: Path) -> tuple[Path, float, int]:
    """Run ``neardup dedup`` on the records' id and text; CLUSTERS, seconds, error records."""
    inp, clusters, errors = work / "input.jsonl", work / "clusters.jsonl", work / "errors.jsonl"
    with inp.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False) + "\n")
    cmd = [sys.executable, "-m", "neardup", "dedup", str(inp), "-o", str(work / "unique.jsonl")]
    cmd += ["--clusters", str(clusters), "--errors", str(errors)]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    seconds = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"error: neardup dedup exited {p.returncode}:\n{p.stderr[-3000:]}")
    with errors.open(encoding="utf-8") as f:
        n_errors = sum(1 for line in f if line.strip())
    return clusters, seconds, n_errors


# -- judging ---------------------------------------------------------------------------------


class Union:
    def __init__(self, n: int) -> None:
        self.p = list(range(n))

    def find(self, x: int) -> int:
        while self.p[x] != x:
            self.p[x] = self.p[self.p[x]]
            x = self.p[x]
        return x

    def union(self, a: int, b: int) -> None:
        self.p[self.find(a)] = self.find(b)


@dataclass
class Figures:
    corpus: str
    label: str
    documents: int
    kept: int
    dropped: int
    missing: int
    clusters2: int
    pairs: int
    pairs_same: float
    pairs_no_story: int
    sampled_clusters: int
    joining: int
    joining_docs: int
    largest_joining: int
    largest_joining_titles: int
    dropped_new: int
    reprint_pairs: int
    reprints_found: int
    reprints_later_dropped: int
    contains: int
    contains_plausible: int
    chrome_lines: int
    engine_seconds: float | None
    errors: int = 0
    judge_seconds: float = 0.0
    cases: dict[str, Any] = field(default_factory=dict)

    @property
    def precision(self) -> float:
        return self.pairs_same / self.pairs if self.pairs else 1.0


def judge(oracle: Oracle, decisions: dict[str, Decision], label: str) -> Figures:
    docs = oracle.docs
    known = [d for d in docs if d.id in decisions]
    members: dict[str, list[Doc]] = defaultdict(list)
    for d in known:
        members[decisions[d.id].cluster].append(d)
    rng = random.Random(7)
    pairs = bare_pairs = 0
    same = 0.0
    sampled = 0
    joining: list[dict[str, Any]] = []
    for label_id, everyone in members.items():
        if len(everyone) < 2:
            continue
        ms = [d for d in everyone if not oracle.no_story(d)]
        bare = [d for d in everyone if oracle.no_story(d)]
        n = len(ms)
        bare_pairs += len(everyone) * (len(everyone) - 1) // 2 - n * (n - 1) // 2
        if n < 2:
            continue
        all_pairs = n * (n - 1) // 2
        if n > CLUSTER_CAP:
            sampled += 1
            idx = [tuple(rng.sample(range(n), 2)) for _ in range(SAMPLED_PAIRS)]
        else:
            idx = [(i, j) for i in range(n) for j in range(i + 1, n)]
        u = Union(n)
        ok = 0
        for i, j in idx:
            if oracle.same_story(ms[i], ms[j]):
                ok += 1
                u.union(i, j)
        pairs += all_pairs
        same += ok * all_pairs / len(idx)
        parts: dict[int, list[Doc]] = defaultdict(list)
        for i, d in enumerate(ms):
            parts[u.find(i)].append(d)
        if len(parts) >= 2:
            joining.append(
                {
                    "cluster": label_id,
                    "size": len(everyone),
                    "titles": len({d.key for d in everyone}),
                    "stories": sorted(
                        ([(d.id, d.label) for d in p] for p in parts.values()),
                        key=lambda p: -len(p),
                    ),
                    "no_story": [(d.id, d.label) for d in bare],
                }
            )
    joining.sort(key=lambda c: (-c["size"], c["cluster"]))
    dropped = [d for d in known if decisions[d.id].duplicate_of is not None]
    new_cases = []
    for d in dropped:
        m = oracle.by_id.get(decisions[d.id].duplicate_of or "")
        if m is None:
            continue
        flag, chars, text = oracle.is_new(d, m)
        if flag:
            new_cases.append(
                {
                    "id": d.id,
                    "title": d.label,
                    "match": m.id,
                    "match_title": m.label,
                    "body_chars": d.body_chars,
                    "new_chars": chars,
                    "excerpt": text[:60],
                }
            )
    reprints = oracle.reprint_pairs()
    found = later = 0
    for a, b in reprints:
        da, db = docs[a], docs[b]
        if (
            da.id in decisions
            and db.id in decisions
            and decisions[da.id].cluster == decisions[db.id].cluster
        ):
            found += 1
            later += decisions[db.id].duplicate_of is not None
    contains = plausible = 0
    for d in known:
        c = decisions[d.id].contains
        if c is not None and c in oracle.by_id:
            contains += 1
            other = oracle.by_id[c]
            plausible += oracle.same_story(d, other) or (
                other.coverage(other.body_units, d.full) >= QUOTES
            )
    return Figures(
        corpus=oracle.corpus.key,
        label=label,
        documents=len(known),
        kept=len(known) - len(dropped),
        dropped=len(dropped),
        missing=len(docs) - len(known),
        clusters2=sum(1 for ms in members.values() if len(ms) >= 2),
        pairs=pairs,
        pairs_same=same,
        pairs_no_story=bare_pairs,
        sampled_clusters=sampled,
        joining=len(joining),
        joining_docs=sum(c["size"] for c in joining),
        largest_joining=max((c["size"] for c in joining), default=0),
        largest_joining_titles=max(
            (c["titles"] for c in joining if c["size"] == joining[0]["size"]), default=0
        ),
        dropped_new=len(new_cases),
        reprint_pairs=len(reprints),
        reprints_found=found,
        reprints_later_dropped=later,
        contains=contains,
        contains_plausible=plausible,
        chrome_lines=oracle.chrome_lines,
        engine_seconds=None,
        cases={"joining": joining, "dropped_new": new_cases},
    )


# -- output ----------------------------------------------------------------------------------

NAMES = {"hk": "hkcnews-zh-hans", "ng": "20newsgroups-en"}


def pct(a: float, b: float) -> str:
    return f"{a / b:.1%}" if b else "–"


def table(rows: list[Figures]) -> str:
    out = [
        "| corpus | run | docs | kept | dropped | clusters 2+ | pair precision (pairs) "
        "| clusters joining stories (largest: docs / titles) | dropped with new content "
        "| reprint recall (pairs) | found, later dropped |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in rows:
        capped = f", {f.sampled_clusters} sampled" if f.sampled_clusters else ""
        largest = f" ({f.largest_joining} / {f.largest_joining_titles})" if f.joining else ""
        out.append(
            f"| {NAMES[f.corpus]} | {f.label} | {f.documents:,} | {f.kept:,} | {f.dropped:,} "
            f"| {f.clusters2:,} | {pct(f.pairs_same, f.pairs)} ({f.pairs:,}{capped}) "
            f"| {f.joining:,}{largest} | {f.dropped_new:,} ({pct(f.dropped_new, f.dropped)}) "
            f"| {pct(f.reprints_found, f.reprint_pairs)} ({f.reprint_pairs:,}) "
            f"| {pct(f.reprints_later_dropped, f.reprints_found)} |"
        )
    return "\n".join(out)


def write_cases(path: Path, rows: list[Figures]) -> None:
    out = ["# neardup on real crawls: the worst cases", ""]
    for f in rows:
        out.append(f"## {NAMES[f.corpus]} · {f.label}")
        out.append("")
        out.append(f"### Clusters that join different stories ({f.joining})")
        out.append("")
        for c in f.cases["joining"]:
            out.append(
                f"- cluster `{c['cluster']}`: {c['size']} documents, {c['titles']} titles, "
                f"{len(c['stories'])} stories"
            )
            for k, story in enumerate(c["stories"], 1):
                shown = ", ".join(f"`{i}` {t}" for i, t in story[:12])
                more = f", … {len(story) - 12} more" if len(story) > 12 else ""
                out.append(f"  - story {k} ({len(story)}): {shown}{more}")
            if c["no_story"]:
                shown = ", ".join(f"`{i}` {t}" for i, t in c["no_story"][:12])
                more = f", … {len(c['no_story']) - 12} more" if len(c["no_story"]) > 12 else ""
                out.append(
                    f"  - no story of their own, all chrome ({len(c['no_story'])}): {shown}{more}"
                )
        out.append("")
        out.append(f"### Dropped with new content ({f.dropped_new})")
        out.append("")
        for c in f.cases["dropped_new"]:
            out.append(
                f"- `{c['id']}` {c['title']} — dropped as a copy of `{c['match']}` "
                f"{c['match_title']}; {c['new_chars']:,} of {c['body_chars']:,} body characters "
                f"new: “{c['excerpt']}”"
            )
        out.append("")
    path.write_text("\n".join(out), encoding="utf-8")


def explain(oracle: Oracle, decisions: dict[str, Decision], ids: list[str]) -> None:
    """Print what the oracle thinks of a few ids (for reading a case by hand)."""
    members: dict[str, list[Doc]] = defaultdict(list)
    for d in oracle.docs:
        if d.id in decisions:
            members[decisions[d.id].cluster].append(d)
    for i in ids:
        d = oracle.by_id.get(i)
        if d is None:
            print(f"\n{i}: not among the {len(oracle.docs):,} records judged")
            continue
        dec = decisions.get(i)
        kinds = Counter(d.kinds)
        print(
            f"\n{i}: {d.label!r}  body {d.body_chars:,} chars, {d.body.size} shingles; lines {dict(kinds)}"
        )
        if dec is None:
            print("  not in CLUSTERS")
            continue
        state = "kept" if dec.duplicate_of is None else f"dropped as a copy of {dec.duplicate_of}"
        print(
            f"  {state}, cluster {dec.cluster} ({len(members[dec.cluster])} documents), score {dec.score}"
        )
        if dec.contains:
            print(f"  contains {dec.contains}")
        m = oracle.by_id.get(dec.duplicate_of or "")
        if m is not None:
            flag, chars, text = oracle.is_new(d, m)
            verdict = "NEW CONTENT" if flag else "no new content"
            print(
                f"  vs its match {m.id} {m.label!r}: {verdict}, {chars} new characters: {text[:60]!r}"
            )
        for o in members[dec.cluster][:30]:
            if o.id != i:
                if oracle.no_story(d) or oracle.no_story(o):
                    same = "no story"
                else:
                    same = "same story" if oracle.same_story(d, o) else "DIFFERENT"
                print(f"    {same:10} {o.id} {o.label!r}")


def select(spec: str | None, corpus: Corpus) -> int:
    if spec is None:
        return corpus.default
    if spec == "all":
        return corpus.total
    n = int(spec.replace(",", "").replace("_", ""))
    if n < 1:
        raise SystemExit(f"error: --{corpus.key} must be at least 1 or 'all', not {spec}")
    return n


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpora", default="hk,ng", help="hk, ng or hk,ng (default both)")
    ap.add_argument("--hk", help="records of hkcnews, or 'all' (default 20,000)")
    ap.add_argument("--ng", help="records of 20 Newsgroups, or 'all' (default 4,000)")
    ap.add_argument("--label", default="run", help="the run's name in the table")
    ap.add_argument(
        "--clusters", type=Path, help="judge this CLUSTERS file instead of running (one corpus)"
    )
    ap.add_argument("--workdir", type=Path, help="keep the engine's input and outputs here")
    ap.add_argument("--out", type=Path, help="write the figures as JSON")
    ap.add_argument("--cases", type=Path, help="write the worst cases (markdown)")
    ap.add_argument("--ids", help="comma-separated ids: print their judgement")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    keys = [k.strip() for k in args.corpora.split(",") if k.strip()]
    if not keys or any(k not in CORPORA for k in keys):
        ap.error(f"--corpora takes hk, ng or hk,ng, not {args.corpora!r}")
    if args.clusters and len(keys) != 1:
        ap.error("--clusters judges one corpus: give --corpora hk or --corpora ng")
    try:
        for k in keys:
            shared_path(CORPORA[k].path)
    except BenchDataMissing as e:
        die(e)
    print(header("neardup on real crawls: chrome and new content", {"run": args.label}))
    rows: list[Figures] = []
    for k in keys:
        corpus = CORPORA[k]
        spec = getattr(args, k)
        engine_seconds = None
        errors = 0
        if args.clusters:
            # Judge exactly the records the file decided (the first N when --hk/--ng is given).
            decisions = read_clusters(args.clusters)
            limit = select(spec, corpus) if spec else None
            records = [r for r in read_jsonl(corpus.path, limit) if str(r["id"]) in decisions]
        else:
            records = list(read_jsonl(corpus.path, select(spec, corpus)))
            with tempfile.TemporaryDirectory(prefix="neardup-real-") as tmp:
                work = args.workdir / k if args.workdir else Path(tmp)
                work.mkdir(parents=True, exist_ok=True)
                clusters, engine_seconds, errors = run_engine(records, work)
                decisions = read_clusters(clusters)
            print(f"  {NAMES[k]}: engine {engine_seconds:.1f} s", file=sys.stderr)
        t = time.perf_counter()
        oracle = Oracle(corpus, records)
        oracle_seconds = time.perf_counter() - t
        print(
            f"  {NAMES[k]}: {len(records):,} records, oracle built in {oracle_seconds:.1f} s "
            f"({oracle.chrome_lines:,} chrome lines)",
            file=sys.stderr,
        )
        t = time.perf_counter()
        fig = judge(oracle, decisions, args.label)
        fig.engine_seconds = engine_seconds
        fig.errors = errors
        fig.judge_seconds = oracle_seconds + time.perf_counter() - t
        print(f"  {NAMES[k]}: judged in {fig.judge_seconds:.1f} s", file=sys.stderr)
        rows.append(fig)
        if args.ids:
            explain(oracle, decisions, [i.strip() for i in args.ids.split(",") if i.strip()])
    print()
    print(table(rows))
    print()
    for f in rows:
        extra = []
        if f.engine_seconds is not None:
            extra.append(f"engine {f.engine_seconds:.1f} s")
        extra.append(f"judge {f.judge_seconds:.1f} s")
        extra.append(f"{f.chrome_lines:,} oracle chrome lines")
        if f.pairs_no_story:
            extra.append(f"{f.pairs_no_story:,} pairs with a chrome-only document not judged")
        if f.contains:
            extra.append(
                f"`contains` on {f.contains:,} kept ({pct(f.contains_plausible, f.contains)} plausible)"
            )
        if f.missing:
            extra.append(f"{f.missing:,} records not in CLUSTERS")
        if f.errors:
            extra.append(f"{f.errors:,} error records")
        print(f"{NAMES[f.corpus]}: " + ", ".join(extra))
    if args.out:
        data = []
        for f in rows:
            d = asdict(f)
            d.pop("cases")
            d["pair_precision"] = f.precision
            d["dropped_new_share"] = f.dropped_new / f.dropped if f.dropped else 0.0
            d["reprint_recall"] = f.reprints_found / f.reprint_pairs if f.reprint_pairs else 1.0
            d["later_dropped_share"] = (
                f.reprints_later_dropped / f.reprints_found if f.reprints_found else 0.0
            )
            data.append(d)
        out = {"environment": environment(), "argv": sys.argv[1:], "runs": data}
        args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    if args.cases:
        write_cases(args.cases, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
