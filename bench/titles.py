"""Titles that differ in a number: of the titles ``neardup dedup`` drops when it is given a
corpus's titles alone (a crawler that dedups headlines), how many differ from the title they
were dropped for in numbers only — the next part of a series ("（三）" after "（一）"), the
next session or edition ("第六次", "第五届"), another year — judged by a rule of this
script's own, not the engine's.

    python bench/titles.py                        # 《新闻联播》's 19,540 titles
    python bench/titles.py --corpus hk            # hkcnews, 48,005 titles
    PYTHONPATH=/path/to/old/src python bench/titles.py --label before

The engine runs as a user runs it (``python -m neardup dedup INPUT -o UNIQUE --clusters
CLUSTERS``, ``sys.executable``, so ``PYTHONPATH`` decides which checkout is measured) on a
JSONL of the corpus's ids and titles. The judge: two titles *differ in numbers only* when
they differ and are the same once every numeral is taken out (the digits, the Chinese
numerals 〇 to 十 and 百 千 万, and the word numbers of English from one to twenty); a
title dropped for one that spells the same number otherwise ("4" for "FOUR") counts too,
so read the examples. Without ``../shared`` the script says so and exits 2.
"""

from __future__ import annotations

import argparse
import re

from _data import BenchDataMissing, dedup_clusters, die, header, read_jsonl

CORPORA = {
    "xwlb": "corpus/xinwenlianbo-zh.jsonl.gz",
    "hk": "corpus/hkcnews-zh-hans.jsonl.gz",
    "reuters": "corpus/reuters21578-en.jsonl.gz",
}
_WORDS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
_NUMERALS = re.compile(
    r"[0-9〇零一二三四五六七八九十百千万]+|\b(?:" + "|".join(_WORDS) + r")\b", re.IGNORECASE
)


def numbers_only(a: str, b: str) -> bool:
    """Whether two titles differ, and in numerals only (see the module)."""
    return (
        a.casefold() != b.casefold()
        and _NUMERALS.sub("#", a).casefold() == _NUMERALS.sub("#", b).casefold()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=sorted(CORPORA), default="xwlb")
    ap.add_argument("--label", default="run", help="the run's name in the table")
    ap.add_argument("--examples", type=int, default=10, help="cases to list (default 10)")
    args = ap.parse_args()
    try:
        titles = {
            str(d["id"]): str(d["title"])
            for d in read_jsonl(CORPORA[args.corpus], None)
            if d.get("title")
        }
    except BenchDataMissing as exc:
        die(exc)
    rows = dedup_clusters(titles.items())
    dropped = [r for r in rows if r.get("duplicate_of")]
    same = [r for r in dropped if titles[r["id"]] == titles[r["duplicate_of"]]]
    numbers = [r for r in dropped if numbers_only(titles[r["id"]], titles[r["duplicate_of"]])]
    print(header(f"Titles that differ in a number: {args.corpus}"))
    print(
        "| corpus | run | titles | dropped | of them the same title | differing in numbers only |"
    )
    print("|---|---|---:|---:|---:|---:|")
    print(
        f"| {args.corpus} | {args.label} | {len(titles):,} | {len(dropped):,} | "
        f"{len(same):,} | {len(numbers):,} |"
    )
    for r in numbers[: args.examples]:
        print(f"- `{r['id']}` {titles[r['id']]} — dropped for {titles[r['duplicate_of']]}")


if __name__ == "__main__":
    main()
