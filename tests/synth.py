"""Invented stories and their reprints, generated from a seed, for store and race tests.

Texts are random CJK characters in sentences (no real text is copied), so two stories share
nothing but what a reprint copies; a reprint adds a site header and footer, drops the last
sentences and changes a few characters, as real reprints do.
"""

from __future__ import annotations

import random

SITES = ("新华网", "人民网", "澎湃新闻", "央视网", "环球网", "南方网", "北青网", "中新网")


#: The CJK numerals (as the engine reads numbers): no invented text has one.
NUMERALS = frozenset("〇零一二三四五六七八九十")


def hanzi(rng: random.Random) -> str:
    """A random CJK character that is no numeral. A typo that turned a numeral into another
    character (or one into a numeral) would change a number, and a copy that changes a
    number is kept (it may be news): which of two such reprints came first would decide
    how many of a story are kept, and a test of racing writers would fail now and then."""
    while True:
        c = chr(rng.randint(0x4E00, 0x9FA5))
        if c not in NUMERALS:
            return c


def story(rng: random.Random, sentences: int = 12) -> str:
    """One invented Chinese news story."""
    out = []
    for _ in range(sentences):
        n = rng.randint(18, 40)
        out.append("".join(hanzi(rng) for _ in range(n)) + "。")
    return "".join(out)


def reprint(rng: random.Random, text: str, *, cut: bool = True) -> str:
    """A reprint of ``text`` on another site: header, footer, a few typos, and (``cut``) its
    last sentences dropped. An uncut reprint is a copy that brings nothing new; the story
    arriving after a cut one brings the sentences the cut dropped, and is kept too."""
    sentences = text.split("。")
    keep = max(4, int(len(sentences) * rng.uniform(0.75, 1.0))) if cut else len(sentences)
    cut_text = "。".join(sentences[:keep])
    body = list(cut_text.rstrip("。"))
    for _ in range(rng.randint(0, 3)):
        body[rng.randrange(len(body))] = hanzi(rng)
    site = rng.choice(SITES)
    return f"来源：{site}\n{''.join(body)}。\n责任编辑：{rng.choice('王李张刘陈')}某"


def corpus(
    seed: int, stories: int, copies: int, prefix: str = "", *, cut: bool = True
) -> list[tuple[str, str, int]]:
    """(id, text, story number) for ``stories`` stories with ``copies`` reprints each
    (``cut`` short or not), shuffled."""
    rng = random.Random(seed)
    docs = []
    for s in range(stories):
        text = story(rng)
        docs.append((f"{prefix}s{s}-0", text, s))
        for c in range(1, copies + 1):
            docs.append((f"{prefix}s{s}-{c}", reprint(rng, text, cut=cut), s))
    rng.shuffle(docs)
    return docs
