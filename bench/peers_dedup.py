"""One dedup contender, end to end, as its own process: read a gzipped JSONL corpus, find the
near-duplicates, write one ``{"id", "cluster"}`` line per document.

    python bench/peers_dedup.py datasketch CORPUS.jsonl.gz --out pred.jsonl [--lang zh|en]
    python bench/peers_dedup.py simhash    CORPUS.jsonl.gz --out pred.jsonl
    python bench/peers_dedup.py gaoya      CORPUS.jsonl.gz --out pred.jsonl [--lang zh|en]
    python bench/peers_dedup.py rensa      CORPUS.jsonl.gz --out pred.jsonl [--lang zh|en]
    python bench/peers_dedup.py neardup    CORPUS.jsonl.gz --out pred.jsonl
    python bench/peers_dedup.py mllib      CORPUS.jsonl.gz --out pred.jsonl [--lang zh|en]
    python bench/peers_dedup.py datatrove  CORPUS.jsonl.gz --out pred.jsonl [--lang zh|en]

``bench/dedup_speed.py`` times these commands from outside (wall seconds, peak RSS). The
peers are written as a user would write them, the way ``../shared/bench/peers.md`` ran them:

- ``datasketch``: ``MinHash(num_perm=128)`` over 5-character shingles of the text with its
  whitespace removed (zh) or lower-cased word 3-grams (en), ``MinHashLSH(threshold=0.5)``, query then
  insert each document, union-find over the reported pairs.
- ``gaoya``: the Rust ``gaoya`` package's ``MinHashStringIndex`` (32-bit hashes, 25 bands of
  5 rows, Jaccard threshold 0.5) with its own Rust analyzers over the same kind of shingles:
  character 5-grams of the text with its whitespace removed (zh), lower-cased word 3-grams
  (en); its multi-threaded ``par_bulk_insert_docs`` then ``par_bulk_query`` (which keeps the
  candidates whose estimated Jaccard reaches the threshold), union-find over the pairs.
- ``rensa``: the Rust ``rensa`` package's R-MinHash, its batch API as its README shows it:
  ``RMinHash.from_token_sets`` over the datasketch peer's shingles (128 permutations, seed
  42), ``RMinHashLSH(threshold=0.5, num_perm=128, num_bands=32)`` (``num_bands`` must divide
  ``num_perm``: 32 bands of 4 rows is the S-curve nearest 0.5), ``insert_pairs`` then
  ``query_all``, each candidate kept when ``jaccard`` of the two signatures reaches 0.5,
  union-find over the pairs.
- ``simhash``: the ``simhash`` package's ``Simhash(text)`` (its default character 4-gram
  features) and ``SimhashIndex(k=3)``, built incrementally (``get_near_dups`` then ``add``),
  union-find over the reported pairs. A text it cannot hash (an ``OverflowError`` in its numpy
  weighting, on some long English posts) stays a cluster of its own and is counted.
- ``mllib``: Spark MLlib's ``MinHashLSH`` and ``approxSimilarityJoin``, what a Spark user
  tries first, written from Spark's documentation: the same shingles made in Spark SQL
  (the text without whitespace split into characters, or its lower-cased words, then
  ``NGram(n=5)`` or ``NGram(n=3)``), ``HashingTF(numFeatures=2**20, binary=True)``,
  ``MinHashLSH(numHashTables=5)`` (the documentation's example; each table is one MinHash,
  so two documents are candidates when any of the five agree), a self-join at Jaccard
  distance below 0.5, union-find over the pairs on the driver. Spark's own settings
  (``local[*]`` here; ``bench/spark_speed.py`` runs it in its session). A text with no
  shingle (under 5 characters, or 3 words) stays a cluster of its own.
- ``datatrove``: Hugging Face datatrove's four-stage MinHash deduplication as its examples
  write it (``examples/minhash_deduplication.py``, on one machine as
  ``examples/local_minhash_deduplication.py``: each stage a ``LocalPipelineExecutor``; their
  ``TokensCounter``, which downloads a tokenizer, left out): ``JsonlReader`` of the input
  file and
  ``MinhashDedupSignature`` (1 task: one input file), ``MinhashDedupBuckets`` (a task a
  bucket, :data:`DATATROVE_WORKERS` at once), ``MinhashDedupCluster`` (1 task, cluster ids
  saved), then the input read again through ``MinhashDedupFilter`` (cluster ids loaded)
  into a ``JsonlWriter`` of the kept documents and one of the removed. Its default
  ``MinhashConfig`` (word 5-grams of its text normalization, 14 buckets of 8 hashes) with
  the 64-bit hashes the example asks for, and the word tokenizer of ``--lang`` (spaCy's,
  with jieba for Chinese). Each document's cluster is read from the two outputs
  (``minhash_cluster_id``); a document its reader skips (no text) stays a cluster of its
  own. Its files go to a temporary folder.
- ``neardup``: ``neardup.deduper.dedup_batch(ids, texts)`` with its defaults.

A summary (documents, duplicates, failures) is printed as one JSON line.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

Clusters = dict[str, str]
_WORD = re.compile(r"\w+")


def read_corpus(path: str, limit: int | None = None) -> tuple[list[str], list[str]]:
    """The ids and texts of a gzipped (or plain) JSONL corpus, at most ``limit`` documents."""
    ids: list[str] = []
    texts: list[str] = []
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if limit is not None and len(ids) >= limit:
                break
            if not line.strip():
                continue
            row = json.loads(line)
            ids.append(str(row["id"]))
            texts.append(row.get("text") or "")
    return ids, texts


class UnionFind:
    """Disjoint sets of document ids; a set's label is its first-seen member."""

    def __init__(self, ids: Iterable[str]) -> None:
        self.parent = {i: i for i in ids}
        self.order = {i: n for n, i in enumerate(self.parent)}

    def find(self, x: str) -> str:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if self.order[rb] < self.order[ra]:
                ra, rb = rb, ra
            self.parent[rb] = ra

    def clusters(self) -> Clusters:
        return {i: self.find(i) for i in self.parent}


def shingles(text: str, lang: str) -> set[str]:
    """5-character shingles of the text without whitespace (zh), lower-cased word 3-grams (en)."""
    if lang == "zh":
        s = "".join(text.split())
        return {s[i : i + 5] for i in range(max(1, len(s) - 4))} if s else set()
    words = _WORD.findall(text.lower())
    return {" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2))} if words else set()


def run_datasketch(ids: list[str], texts: list[str], lang: str) -> tuple[Clusters, int]:
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=0.5, num_perm=128)
    uf = UnionFind(ids)
    for doc_id, text in zip(ids, texts, strict=True):
        grams = shingles(text, lang)
        if not grams:
            continue
        m = MinHash(num_perm=128)
        m.update_batch([g.encode("utf-8") for g in grams])
        for other in lsh.query(m):
            uf.union(other, doc_id)
        lsh.insert(doc_id, m)
    return uf.clusters(), 0


def run_gaoya(ids: list[str], texts: list[str], lang: str) -> tuple[Clusters, int]:
    from gaoya.minhash import MinHashStringIndex

    if lang == "zh":
        index = MinHashStringIndex(
            hash_size=32, jaccard_threshold=0.5, num_bands=25, band_size=5,
            analyzer="char", ngram_range=(5, 5),
        )  # fmt: skip
        docs = ["".join(t.split()) for t in texts]
    else:
        index = MinHashStringIndex(
            hash_size=32, jaccard_threshold=0.5, num_bands=25, band_size=5,
            analyzer="word", lowercase=True, ngram_range=(3, 3),
        )  # fmt: skip
        docs = list(texts)
    keep = [i for i, d in enumerate(docs) if d]
    index.par_bulk_insert_docs(keep, [docs[i] for i in keep])
    uf = UnionFind(ids)
    for i, found in zip(keep, index.par_bulk_query([docs[i] for i in keep]), strict=True):
        for j in found:
            if j != i:
                uf.union(ids[j], ids[i])
    return uf.clusters(), 0


def run_rensa(ids: list[str], texts: list[str], lang: str) -> tuple[Clusters, int]:
    from rensa import RMinHash, RMinHashLSH

    grams = [shingles(t, lang) for t in texts]
    keep = [i for i, g in enumerate(grams) if g]
    minhashes = RMinHash.from_token_sets([list(grams[i]) for i in keep], num_perm=128, seed=42)
    lsh = RMinHashLSH(threshold=0.5, num_perm=128, num_bands=32)
    lsh.insert_pairs(zip(keep, minhashes, strict=True))
    mine = dict(zip(keep, minhashes, strict=True))
    uf = UnionFind(ids)
    for i, found in zip(keep, lsh.query_all(minhashes), strict=True):
        for j in found:
            if j != i and mine[i].jaccard(mine[j]) >= 0.5:
                uf.union(ids[j], ids[i])
    return uf.clusters(), 0


def run_simhash(ids: list[str], texts: list[str], lang: str) -> tuple[Clusters, int]:
    import logging

    from simhash import Simhash, SimhashIndex

    logging.getLogger("simhash").setLevel(logging.ERROR)  # it warns on every big bucket
    index = SimhashIndex([], k=3)
    uf = UnionFind(ids)
    failed = 0
    for doc_id, text in zip(ids, texts, strict=True):
        try:
            sh = Simhash(text)
        except OverflowError:
            failed += 1
            continue
        for other in index.get_near_dups(sh):
            uf.union(other, doc_id)
        index.add(doc_id, sh)
    return uf.clusters(), failed


def mllib_pairs(frame: Any, lang: str, *, tables: int = 5, seed: int = 42) -> list[tuple[str, str]]:
    """The pairs of ids that MLlib's ``approxSimilarityJoin`` finds in ``frame`` (``id``,
    ``text``): Jaccard similarity above 0.5 on the hashed shingles (see the module's
    documentation), each pair once."""
    from pyspark.ml.feature import HashingTF, MinHashLSH, NGram
    from pyspark.sql import functions as F

    if lang == "zh":
        tokens = F.split(F.regexp_replace("text", r"(?U)\s+", ""), "")
        n = 5
    else:
        tokens = F.filter(F.split(F.lower("text"), r"(?U)\W+"), lambda t: t != "")
        n = 3
    docs = frame.select(F.col("id").cast("string").alias("id"), tokens.alias("tokens"))
    grams = NGram(n=n, inputCol="tokens", outputCol="grams").transform(docs)
    hashed = HashingTF(inputCol="grams", outputCol="features", numFeatures=1 << 20, binary=True)
    features = hashed.transform(grams.filter(F.size("grams") > 0))
    lsh = MinHashLSH(inputCol="features", outputCol="hashes", numHashTables=tables, seed=seed)
    joined = lsh.fit(features).approxSimilarityJoin(features, features, 0.5, distCol="distance")
    found = joined.filter("datasetA.id < datasetB.id").select("datasetA.id", "datasetB.id")
    return [(a, b) for a, b in found.collect()]


def mllib_clusters(ids: list[str], pairs: Iterable[tuple[str, str]]) -> Clusters:
    """Union-find over MLlib's pairs: each document's cluster."""
    uf = UnionFind(ids)
    for a, b in pairs:
        uf.union(a, b)
    return uf.clusters()


def run_mllib(ids: list[str], texts: list[str], lang: str) -> tuple[Clusters, int]:
    from neardup.spark import spark_session

    spark = spark_session("local[*]")
    frame = spark.createDataFrame(list(zip(ids, texts, strict=True)), "id string, text string")
    return mllib_clusters(ids, mllib_pairs(frame, lang)), 0


#: datatrove's worker processes for the stages that have many tasks (this machine's cores)
DATATROVE_WORKERS = 2


def run_datatrove(path: str, lang: str, limit: int | None) -> tuple[Clusters, int]:
    """datatrove's MinHash deduplication of the JSONL file ``path`` (see the module's
    documentation): each document's cluster, by id, and how many documents its reader
    skipped."""
    import os
    import tempfile

    from datatrove.executor.local import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers.jsonl import JsonlWriter
    from datatrove.utils.hashing import HashConfig
    from datatrove.utils.typeshelper import Languages

    language = Languages.chinese if lang == "zh" else Languages.english
    config = MinhashConfig(hash_config=HashConfig(precision=64))
    folder, name = os.path.split(os.path.abspath(path))

    def reader() -> Any:
        return JsonlReader(folder, glob_pattern=name, limit=-1 if limit is None else limit)

    with tempfile.TemporaryDirectory(prefix="datatrove-") as tmp:
        stage1 = LocalPipelineExecutor(
            pipeline=[
                reader(),
                MinhashDedupSignature(f"{tmp}/signatures", config=config, language=language),
            ],
            tasks=1,
            logging_dir=f"{tmp}/logs/signatures",
        )
        stage2 = LocalPipelineExecutor(
            pipeline=[MinhashDedupBuckets(f"{tmp}/signatures", f"{tmp}/buckets", config=config)],
            tasks=config.num_buckets,
            workers=DATATROVE_WORKERS,
            logging_dir=f"{tmp}/logs/buckets",
            depends=stage1,
        )
        stage3 = LocalPipelineExecutor(
            pipeline=[
                MinhashDedupCluster(
                    f"{tmp}/buckets", f"{tmp}/remove_ids", config=config, save_cluster_id=True
                )
            ],
            tasks=1,
            logging_dir=f"{tmp}/logs/clusters",
            depends=stage2,
        )
        stage4 = LocalPipelineExecutor(
            pipeline=[
                reader(),
                MinhashDedupFilter(
                    f"{tmp}/remove_ids",
                    exclusion_writer=JsonlWriter(f"{tmp}/removed"),
                    load_cluster_ids=True,
                ),
                JsonlWriter(f"{tmp}/deduplicated"),
            ],
            tasks=1,
            logging_dir=f"{tmp}/logs/filter",
            depends=stage3,
        )
        stage4.run()
        labels: dict[str, int] = {}
        for out in ("deduplicated", "removed"):
            for root, _, files in os.walk(f"{tmp}/{out}"):
                for file in files:
                    with gzip.open(os.path.join(root, file), "rt", encoding="utf-8") as f:
                        for line in f:
                            row = json.loads(line)
                            labels[str(row["id"])] = int(row["metadata"]["minhash_cluster_id"])
    ids, _ = read_corpus(path, limit)
    first: dict[int, str] = {}
    clusters: Clusters = {}
    for doc_id in ids:
        label = labels.get(doc_id, -1)
        clusters[doc_id] = doc_id if label < 0 else first.setdefault(label, doc_id)
    return clusters, sum(1 for doc_id in ids if doc_id not in labels)


def run_neardup(ids: list[str], texts: list[str], lang: str) -> tuple[Clusters, int]:
    from neardup.deduper import dedup_batch

    result = dedup_batch(ids, texts)
    return {d.id: d.cluster for d in result.decisions}, 0


CONTENDERS: dict[str, Callable[[list[str], list[str], str], tuple[Clusters, int]]] = {
    "datasketch": run_datasketch,
    "simhash": run_simhash,
    "gaoya": run_gaoya,
    "rensa": run_rensa,
    "neardup": run_neardup,
    "mllib": run_mllib,
}


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("contender", choices=sorted([*CONTENDERS, "datatrove"]))
    ap.add_argument("corpus", help="a JSONL file (.gz or plain) with id and text fields")
    ap.add_argument(
        "--out", required=True, help="where to write one {id, cluster} line per document"
    )
    ap.add_argument(
        "--lang",
        choices=("zh", "en"),
        default="zh",
        help="the MinHash peers' shingles (default zh)",
    )
    ap.add_argument("--limit", type=int, help="only the first LIMIT documents")
    args = ap.parse_args()
    if args.contender == "datatrove":  # it reads the file itself (and its stages, again)
        clusters, failed = run_datatrove(args.corpus, args.lang, args.limit)
        ids = list(clusters)
    else:
        ids, texts = read_corpus(args.corpus, args.limit)
        clusters, failed = CONTENDERS[args.contender](ids, texts, args.lang)
    with open(args.out, "w", encoding="utf-8") as f:
        for doc_id in ids:
            f.write(
                json.dumps({"id": doc_id, "cluster": clusters[doc_id]}, ensure_ascii=False) + "\n"
            )
    summary = {
        "contender": args.contender,
        "docs": len(ids),
        "duplicates": sum(1 for i in ids if clusters[i] != i),
        "failed": failed,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
