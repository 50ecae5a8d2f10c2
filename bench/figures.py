"""Copies with figures of their own: of the documents ``neardup dedup`` drops, how many hold a
figure that the document they were dropped for does not — another company's dividend, the
day's prices, a death toll updated — judged by a rule of this script's own, not the engine's.

    python bench/figures.py                       # Reuters-21578, all 19,043 items
    python bench/figures.py --corpus hk --limit 20000
    python bench/figures.py --corpus xwlb --years        # 《新闻联播》, years counted too
    PYTHONPATH=/path/to/old/src python bench/figures.py --label before

The engine runs as a user runs it (``python -m neardup dedup INPUT -o UNIQUE --clusters
CLUSTERS``, ``sys.executable``, so ``PYTHONPATH`` decides which checkout is measured) on a
JSONL of the corpus's ids and texts. The judge: a *figure* is a run of digits with the
separators ``.,:/-`` between them, two characters or more, not a year (19xx, 20xx) nor a
part of an address (``…://…``, ``www.…``) — with ``--years``, years too (the engine leaves
them out, against sites' date lines; a recurring announcement differs in its year alone);
a dropped document *has a figure of its own*
when its text holds a figure that its ``duplicate_of``'s text does not hold anywhere.
Byte-identical copies are counted apart. Titles are shown, never given to the engine.
Without ``../shared`` the script says so and exits 2.
"""

from __future__ import annotations

import argparse
import re

from _data import BenchDataMissing, dedup_clusters, die, header, read_jsonl

CORPORA = {
    "reuters": "corpus/reuters21578-en.jsonl.gz",
    "hk": "corpus/hkcnews-zh-hans.jsonl.gz",
    "ng": "corpus/20newsgroups-en.jsonl.gz",
    "xwlb": "corpus/xinwenlianbo-zh.jsonl.gz",
}
_ADDRESS = re.compile(r"\S*://\S*|\bwww\.\S+")
_FIGURE = re.compile(r"\d+(?:[.,:/-]\d+)*")
_YEAR = re.compile(r"(?:19|20)\d\d")


def figures(text: str, years: bool = False) -> set[str]:
    """The judge's figures of a text (see the module)."""
    text = _ADDRESS.sub(" ", text)
    return {f for f in _FIGURE.findall(text) if len(f) >= 2 and (years or not _YEAR.fullmatch(f))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=sorted(CORPORA), default="reuters")
    ap.add_argument("--limit", type=int, help="the first N records (default all)")
    ap.add_argument("--label", default="run", help="the run's name in the table")
    ap.add_argument("--examples", type=int, default=10, help="cases to list (default 10)")
    ap.add_argument("--years", action="store_true", help="count years as figures too")
    args = ap.parse_args()
    try:
        docs = [
            {"id": str(d["id"]), "text": str(d.get("text") or ""), "title": d.get("title")}
            for d in read_jsonl(CORPORA[args.corpus], args.limit)
        ]
    except BenchDataMissing as exc:
        die(exc)
    texts = {d["id"]: d["text"] for d in docs}
    rows = dedup_clusters((d["id"], d["text"]) for d in docs)
    titles = {d["id"]: d["title"] for d in docs}
    dropped = [r for r in rows if r.get("duplicate_of")]
    identical = [r for r in dropped if texts[r["id"]].strip() == texts[r["duplicate_of"]].strip()]
    own = []
    for r in dropped:
        new = figures(texts[r["id"]], args.years) - figures(texts[r["duplicate_of"]], args.years)
        if new:
            own.append((r, sorted(new)))
    print(header(f"Copies with figures of their own: {args.corpus}"))
    print("| corpus | run | docs | dropped | of them byte-identical | with a figure of their own |")
    print("|---|---|---:|---:|---:|---:|")
    print(
        f"| {args.corpus} | {args.label} | {len(docs):,} | {len(dropped):,} | "
        f"{len(identical):,} | {len(own):,} |"
    )
    for r, new in own[: args.examples]:
        print(
            f"- `{r['id']}` {titles.get(r['id']) or ''} — dropped for `{r['duplicate_of']}` "
            f"{titles.get(r['duplicate_of']) or ''} (score {r.get('score')}): {', '.join(new[:6])}"
        )


if __name__ == "__main__":
    main()
