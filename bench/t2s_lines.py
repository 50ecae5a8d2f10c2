"""Is ``to_simplified`` (OpenCC on the lines that may change) OpenCC, and how much faster?

    python bench/t2s_lines.py                  # hkcnews, 《新闻联播》, Reuters, 20 Newsgroups
    python bench/t2s_lines.py --limit 10000 --runs 5 corpus/hkcnews-zh-hans.jsonl.gz

Each corpus's texts are made as a run makes them before the script step (HTML to text,
NFKC, case folding), and then converted twice in this process: by OpenCC's ``t2s`` whole
(what ``neardup.normalize.to_simplified`` did before 2026-12-07) and by ``to_simplified``;
and the first ``--traditional`` of them again after OpenCC's ``s2t`` (a traditional text,
where most lines hold a character to convert). Prints the best of ``--runs`` for each and
how many texts came out different (0: the same text). Measurement only: the corpora stay in
``../shared``.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import itertools
import json
import sys
import time
from pathlib import Path

from _data import header, shared_path

CORPORA = [
    "corpus/hkcnews-zh-hans.jsonl.gz",
    "corpus/xinwenlianbo-zh.jsonl.gz",
    "corpus/reuters21578-en.jsonl.gz",
    "corpus/20newsgroups-en.jsonl.gz",
]


def prepared(path: Path, limit: int | None) -> list[str]:
    """The corpus's texts as normalization hands them to the script step: the default
    normalizer's steps before it (``Normalizer(script=False, whitespace=False)``)."""
    from neardup import Normalizer

    before = Normalizer(script=False, whitespace=False)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [before(json.loads(line)["text"]) for line in itertools.islice(f, limit)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpora", nargs="*", default=CORPORA, help="under ../shared (default: four)")
    p.add_argument("--limit", type=int, default=None, help="the first N texts of each")
    p.add_argument("--traditional", type=int, default=3000, help="texts converted to s2t")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)
    n = importlib.import_module("neardup.normalize")
    whole = n._opencc("t2s").convert
    s2t = n._opencc("s2t").convert
    if n._t2s_triggers() is None:
        print("the installed OpenCC's dictionaries are not data/t2s_triggers.json's: "
              "to_simplified converts whole texts")  # fmt: skip
    print(header("to_simplified against OpenCC's t2s of whole texts", {"runs": str(args.runs)}))
    print("| texts | count | characters | OpenCC whole, s | to_simplified, s | differ |")
    print("|---|--:|--:|--:|--:|--:|")
    for name in args.corpora:
        texts = prepared(shared_path(name), args.limit)
        for label, xs in (
            (Path(name).name, texts),
            ("  its first, s2t", [s2t(t) for t in texts[: args.traditional]]),
        ):
            a_s, b_s = [], []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                a = [whole(x) for x in xs]
                t1 = time.perf_counter()
                b = [n.to_simplified(x) for x in xs]
                a_s.append(t1 - t0)
                b_s.append(time.perf_counter() - t1)
            differ = sum(x != y for x, y in zip(a, b, strict=True))
            chars = sum(map(len, xs))
            print(
                f"| {label} | {len(xs):,} | {chars:,} | {min(a_s):.3f} | {min(b_s):.3f} | {differ} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
