"""The Spark engine: the local engine's decisions, connected components, bad rows, the CLI."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from neardup.cli import main
from neardup.deduper import dedup_batch
from neardup.engine import DedupConfig
from neardup.errors import MissingDependencyError
from neardup.records.document import NO_TEXT
from neardup.spark import connected_components, dedup, require_pyspark, spark_session

# -- fixtures --------------------------------------------------------------------------------

STORY_ZH = (
    "本报讯 4月8日，河湾区第一座社区养老服务中心在柳荫街道启用。中心设有日间照料室、康复训练室和"
    "老年食堂，可同时为80位老人提供午餐，60岁以上居民凭卡用餐每餐补贴6元。街道负责人介绍，"
    "中心由一处闲置厂房改建，投入资金320万元，今年还将在另外三个街道建设同类中心。"
)
STORY_EN = (
    "The regional water board approved a plan on Monday to replace 14 miles of lead service lines "
    "in the old harbor district by the end of next year. The work will cost about 22 million "
    "dollars, paid for by a federal grant and a small rate increase, and crews will begin on the "
    "streets nearest the two elementary schools. Homeowners will not be charged for the new lines."
)
FOOTER = (
    "\n本网声明：凡注明来源为本网的所有作品，版权均属本网所有，未经授权不得转载、摘编或利用其它方式"
    "使用上述作品。已经授权使用作品的，应在授权范围内使用，并注明来源。违反上述声明者，本网将追究其相关"
    "法律责任。联系电话：010-12345678。"
)
OTHER_ZH = [
    "3月2日，东林县首条城乡公交线路开通，线路全长38公里，沿途设站21个，票价统一为2元，首末班时间为6时和19时。",
    "记者从市气象台获悉，受冷空气影响，本周末全市将出现大风降温天气，最低气温降至零下5摄氏度，请市民注意防寒保暖。",
    "北岸镇今年种植的1200亩葡萄喜获丰收，亩产达到2500斤，镇里组织了12家合作社统一收购，帮助果农增收约900万元。",
    "市图书馆本月起延长开放时间，周一至周五开放至晚上9点，周末开放至晚上8点，新增自习座位300个。",
    "西山景区完成步道改造工程，新修步道6.5公里，增设观景平台4处，景区将于5月1日起恢复开放。",
    "高新区今年一季度新登记企业1860家，同比增长17%，其中科技型企业占比超过四成，新增就业岗位5400个。",
]


def records() -> list[tuple[str, str, float | None]]:
    """Stories with reprints, exact copies, a shared footer on different stories, and titles."""
    out: list[tuple[str, str, float | None]] = [
        ("zh-1", STORY_ZH, 300.0),
        ("en-1", STORY_EN, 100.0),
        ("zh-2", "转载自河湾日报\n" + STORY_ZH[:-30] + "（编辑：李华）", 200.0),
        ("en-2", "By Staff. " + STORY_EN.replace("Monday", "monday") + " Share this.", None),
        ("zh-3", STORY_ZH, 50.0),  # a byte-identical copy
        ("t-1", "河湾区首座社区养老服务中心启用", None),
        ("t-2", "河湾区首座社区养老服务中心今日启用", 10.0),
    ]
    for k, text in enumerate(OTHER_ZH):  # different stories behind one site footer
        out.append((f"f-{k}", text + FOOTER, float(k)))
    out.append(("f-copy", "来源：东林新闻网 " + OTHER_ZH[0] + FOOTER, None))
    out.append(("en-3", STORY_EN[: len(STORY_EN) // 2 + 40], 5.0))  # a cut copy of a copy
    return out


def sample_rows() -> list[dict[str, Any]]:
    """The sample that ships with the package."""
    text = files("neardup").joinpath("data", "sample.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One small local Spark for the whole module."""
    session = spark_session(
        "local[2]",
        app_name="neardup-tests",
        conf={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.adaptive.coalescePartitions.enabled": "true",
            "spark.driver.memory": "2g",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def local_decisions(
    ids: list[str], texts: list[str], **kw: Any
) -> dict[str, tuple[str, str | None, float, str | None]]:
    """What dedup_batch decides, by id."""
    result = dedup_batch(ids, texts, **kw)
    return {
        d.id: (d.cluster, d.duplicate_of, round(d.score, 9), d.measure) for d in result.decisions
    }


def spark_decisions(result: Any) -> dict[str, tuple[str, str | None, float, str | None]]:
    """What the Spark engine decided, by id (then its cached frames are let go)."""
    got = {
        r["id"]: (r["cluster"], r["duplicate_of"], round(r["score"], 9), r["measure"])
        for r in result.clusters.collect()
    }
    result.clusters.unpersist()
    result.errors.unpersist()
    return got


def same_as_local(
    spark: Any, ids: list[str], texts: list[str]
) -> dict[str, tuple[str, str | None, float, str | None]]:
    """The Spark engine's decisions on ``texts`` equal dedup_batch's; those decisions."""
    frame = spark.createDataFrame(list(zip(ids, texts, strict=True)), "id string, text string")
    want = local_decisions(ids, texts)
    assert spark_decisions(dedup(frame)) == want
    return want


# -- the same decisions as the local engine ------------------------------------------------------


def test_sample_same_decisions_as_local(spark: Any) -> None:
    """On the shipped sample, every decision (cluster, match, score, measure) is the local one."""
    rows = sample_rows()
    frame = spark.createDataFrame([(r["id"], r["text"]) for r in rows], "id string, text string")
    result = dedup(frame)
    assert result.stats["converged"]
    assert result.errors.count() == 0
    assert spark_decisions(result) == local_decisions(
        [r["id"] for r in rows], [r["text"] for r in rows]
    )


def test_bounded_verification_same_decisions_as_local(spark: Any) -> None:
    """A story copied 30 times and the sample, each document verified against one candidate
    or two (max_verify): the local decisions."""
    from tests.test_deduper import reprinted

    ids, texts = reprinted(30)
    rows = sample_rows()
    ids += [r["id"] for r in rows]
    texts += [r["text"] for r in rows]
    frame = spark.createDataFrame(list(zip(ids, texts, strict=True)), "id string, text string")
    for k in (1, 2):
        cfg = DedupConfig(max_verify=k)
        want = local_decisions(ids, texts, config=cfg)
        assert spark_decisions(dedup(frame, config=cfg)) == want
        assert sum(v[1] is not None for v in want.values()) >= 30


@pytest.mark.parametrize("keep", ["first", "longest", "earliest"])
def test_fixture_same_decisions_for_every_keep_policy(spark: Any, keep: str) -> None:
    """Reprints, exact copies, titles and a shared footer: the local decisions, any keep."""
    recs = records()
    frame = spark.createDataFrame(recs, "id string, text string, ts double")
    result = dedup(frame, timestamp_col="ts", keep=keep)  # type: ignore[arg-type]
    want = local_decisions(
        [r[0] for r in recs],
        [r[1] for r in recs],
        keep=keep,
        timestamps=[r[2] for r in recs],
    )
    assert spark_decisions(result) == want
    assert any(v[1] is not None for v in want.values())  # the fixture has duplicates
    # every story's kept document is kept (zh-3, a byte-identical copy, is the earliest)
    rows = {r["id"]: r for r in result.clusters.collect()}
    assert all(rows[r["cluster"]]["duplicate_of"] is None for r in rows.values())
    if keep == "earliest":
        assert rows["zh-1"]["cluster"] == "zh-3"


@pytest.mark.parametrize("keep", ["first", "longest"])
def test_a_hub_same_decisions_as_local(spark: Any, keep: str) -> None:
    """A post of chrome alone and the posts that carry it (a hub), then an excerpt and two
    versions of its article (no hub): the local decisions, what each extends included."""
    import random

    from tests.engine.test_real_crawls import hub_posts, zh

    ids, texts = hub_posts(random.Random(12))
    rng = random.Random(13)
    full = zh(rng, 12)
    ids += ["excerpt", "full", "longer"]
    texts += [full[: len(full) // 3], full, full + "\n" + zh(rng, 6)]
    frame = spark.createDataFrame(list(zip(ids, texts, strict=True)), "id string, text string")
    result = dedup(frame, keep=keep)  # type: ignore[arg-type]
    extends = {r["id"]: r["extends"] for r in result.clusters.collect()}
    want = dedup_batch(ids, texts, keep=keep).decisions  # type: ignore[arg-type]
    assert extends == {d.id: d.extends for d in want}
    assert spark_decisions(result) == local_decisions(ids, texts, keep=keep)
    if keep == "first":
        assert [d.cluster for d in want] == ["hub", "hub", "p2", "p3", *["excerpt"] * 3]


def test_chrome_passages_same_decisions_as_local(spark: Any) -> None:
    """A bio that two columns carry (chrome at once), replies that quote one passage (not
    chrome: a story counts its own lines), a frame around a short post and a long one: the
    local decisions, what each extends included."""
    import random

    from tests.engine.test_real_crawls import en, framed, zh

    rng = random.Random(19)
    bio = "\n---\n博客 | 某作者\n" + zh(rng, 5)
    ids = ["col-1", "col-2", "photo", "post"]
    texts = [zh(rng, 12) + bio, zh(rng, 12) + bio, "某人（1963－2016）" + bio, zh(rng, 4) + bio]
    passage = en(rng, 4)
    quoted = "\n".join("> " + line for line in passage.split(". "))
    ids += ["parent", "reply-1", "reply-2", "repost"]
    parent = f"{passage}\n{en(rng, 6)}"
    texts += [parent, *(f"Ann writes:\n{quoted}\n{en(rng, 12)}" for _ in range(2))]
    texts.append("Reposted\n" + parent)
    _, short, long = framed(random.Random(17))
    ids += ["short", "long"]
    texts += [short, long]
    frame = spark.createDataFrame(list(zip(ids, texts, strict=True)), "id string, text string")
    result = dedup(frame)
    extends = {r["id"]: r["extends"] for r in result.clusters.collect()}
    want = dedup_batch(ids, texts).decisions
    assert extends == {d.id: d.extends for d in want}
    assert spark_decisions(result) == local_decisions(ids, texts)
    clusters = {d.id: d.cluster for d in want}
    assert [clusters[i] for i in ("col-1", "col-2", "photo", "post")] == ids[:4]
    assert clusters["repost"] == "parent" and clusters["long"] == "long"


def test_a_short_answer_above_a_quote_same_decisions_as_local(spark: Any) -> None:
    """A reply whose own lines are new over its quoted parent is kept and extends it; the
    same text with the quote unmarked is a copy: the local decisions."""
    import random

    from tests.engine.test_real_crawls import short_answer

    want = same_as_local(spark, *short_answer(random.Random(14)))
    assert want["reply"][1] is None and want["unmarked"][1] == "parent"


@pytest.mark.parametrize("where", ["driver", "frames"])
def test_figures_a_copy_must_hold_same_decisions_as_local(
    spark: Any, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A later version with new figures kept, copies differing only in metadata figures
    dropped, notices differing in their amount kept, items of a template differing in one
    number kept — the texts carried where the copy rule reads them, on the driver's pairs
    or in Spark frames: the local decisions."""
    import random

    import neardup.spark.pipeline as pipeline
    from tests.engine.test_real_crawls import figure_versions, number_versions

    if where == "frames":
        monkeypatch.setattr(pipeline, "BROADCAST_PAIRS", 0)
        monkeypatch.setattr(pipeline, "LOCAL_LINKS", 0)
    want = same_as_local(spark, *figure_versions(random.Random(21)))
    assert want["update"][1] is None and want["repost"][1] == "post"
    want = same_as_local(spark, *number_versions(random.Random(31)))
    assert want["live-3"][1] is None and want["live-3-typo"][1] == "live-3"


def test_order_col_sets_the_input_order(spark: Any) -> None:
    """Rows given shuffled with an order column decide as the ordered input does."""
    recs = records()
    rows = [(i, r[0], r[1]) for i, r in enumerate(recs)]
    frame = spark.createDataFrame(list(reversed(rows)), "n long, id string, text string")
    got = spark_decisions(dedup(frame, order_col="n"))
    assert got == local_decisions([r[0] for r in recs], [r[1] for r in recs])


def test_identical_copies_do_not_count_towards_templates(spark: Any) -> None:
    """Exact copies of stories behind one footer are never kept, so they do not make the
    footer a template sooner: the local decisions, though the copies alone reach
    ``common_after``."""
    ids, texts = [], []
    for k, story in enumerate(OTHER_ZH[:3]):
        for c in range(3):  # each story and two byte-identical copies
            ids.append(f"s{k}-{c}")
            texts.append(story + FOOTER)
    for k, story in enumerate(OTHER_ZH[3:]):
        ids.append(f"late-{k}")
        texts.append(story + FOOTER)
    ids.append("reprint")
    texts.append("来源：东林新闻网 " + OTHER_ZH[4] + FOOTER)
    frame = spark.createDataFrame(list(zip(ids, texts, strict=True)), "id string, text string")
    result = dedup(frame)
    assert result.stats["converged"]
    want = local_decisions(ids, texts)
    assert spark_decisions(result) == want
    assert want["s0-1"][3] == "identical"


@pytest.mark.parametrize("where", ["driver", "frames", "small groups"])
@pytest.mark.parametrize(("case", "guess"), [("fixture", 0.0), ("reprinted", 9.0)])
def test_any_first_guess_and_either_bookkeeping_same_decisions(
    spark: Any, monkeypatch: pytest.MonkeyPatch, where: str, case: str, guess: float
) -> None:
    """However wrong the first template round's guess (every later document a copy, or
    none), and with the rounds' verdicts and the guard's volatile memberships on the driver
    or in Spark frames (more than the driver holds: the clusters in Spark joins too), or
    verified on the driver's pairs in groups of a few sketches each (a story heavier than a
    group's share split by later document): several rounds, the local decisions."""
    import neardup.spark.pipeline as pipeline
    import neardup.spark.templates as templates
    import neardup.spark.verify as verify
    from tests.test_deduper import reprinted

    monkeypatch.setattr(pipeline, "GUESS_CONTAINED", guess)
    if where == "frames":
        monkeypatch.setattr(pipeline, "BROADCAST_PAIRS", 0)
        monkeypatch.setattr(pipeline, "LOCAL_LINKS", 0)
        monkeypatch.setattr(templates, "DRIVER_MEMBERSHIPS", 0)
    if where == "small groups":
        monkeypatch.setattr(verify, "GROUP_BYTES", 1_000)
    if case == "fixture":
        ids, texts = [r[0] for r in records()], [r[1] for r in records()]
    else:
        ids, texts = reprinted(30)
        ids += [r["id"] for r in sample_rows()]
        texts += [r["text"] for r in sample_rows()]
    frame = spark.createDataFrame(list(zip(ids, texts, strict=True)), "id string, text string")
    result = dedup(frame)
    assert result.stats["rounds"] > 1 and result.stats["reverified"] > 0
    assert result.stats["converged"]
    if where == "small groups":
        assert result.stats["groups"] > 2
    assert spark_decisions(result) == local_decisions(ids, texts)


def test_grouped_verification_stops_at_a_documents_first_copy(spark: Any) -> None:
    """A later document's pairs are verified earliest first up to its first copy, as the
    engine's best_match: three copies of a story, the third's pair with the second is not
    verified (it cannot be its best match), whatever order the pairs come in."""
    from neardup.spark.columns import SKETCH_SCHEMA, sketch_batches
    from neardup.spark.verify import Grouped

    cfg = DedupConfig()
    texts = [STORY_ZH, STORY_ZH + "（完）", "转载：" + STORY_ZH]
    rows = [(k, f"d{k}", t, None, None) for k, t in enumerate(texts)]
    frame = spark.createDataFrame(
        rows, "_pos long, _id string, _text string, _title string, _ts double"
    )
    sketched = frame.mapInArrow(sketch_batches(cfg, 2), SKETCH_SCHEMA).filter("_side IS NULL")
    units = {r["_pos"]: r["_n"] for r in sketched.select("_pos", "_n").collect()}
    i, j = np.array([1, 0, 0]), np.array([2, 2, 1])
    ni, nj = (np.array([units[k] for k in side]) for side in (i, j))
    grouped = Grouped(spark, (i, j, ni, nj), sketched, None, cfg, 2)
    try:
        verdicts = grouped.verify((i, j), None).to_pylist()
    finally:
        grouped.unpersist()
    assert sorted((v["i"], v["j"]) for v in verdicts) == [(0, 1), (0, 2)]
    assert all(v["is_copy"] for v in verdicts)


def test_a_later_document_with_a_pair_at_risk_is_verified_again_whole() -> None:
    """A template round verifies again every pair of a later document with a pair at risk:
    its pairs after its first copy were never verified, and its first copy may be another
    now. Here only the first copy's pair is at risk, and the next one is the copy after."""
    from types import SimpleNamespace

    from neardup.spark.links import Verdicts
    from neardup.spark.pipeline import _Here
    from neardup.spark.templates import risk_intervals

    truth = {"before": {(1, 5): True, (2, 5): True}, "after": {(1, 5): False, (2, 5): True}}

    class Stubbed(_Here):
        def _verified(self, keep: Any, table: Any) -> Verdicts:
            out: list[tuple[int, int]] = []
            copied = -1
            for jj, ii in sorted(zip(self.j[keep].tolist(), self.i[keep].tolist(), strict=True)):
                if jj != copied and truth[table][(ii, jj)]:
                    out.append((ii, jj))
                    copied = jj
            n = len(out)
            return Verdicts(
                np.array([p[0] for p in out], dtype=np.int64),
                np.array([p[1] for p in out], dtype=np.int64),
                np.ones(n),
                np.array(["coverage"] * n, dtype=object),
                np.ones(n),
                np.ones(n, dtype=np.bool_),
                np.ones(n),
            )

    pairs = (np.array([1, 2]), np.array([5, 5]), np.array([9, 9]), np.array([9, 9]), np.ones(2))
    here = Stubbed(SimpleNamespace(positions=10), pairs, None, None)  # type: ignore[arg-type]
    here.verify("before")  # type: ignore[arg-type]
    assert here.verdicts is not None and here.verdicts.i.tolist() == [1]  # 2 not verified
    moved = risk_intervals(np.array([1]), np.array([0]), np.array([9]), 10)
    assert here.reverify(moved, "after") == 2  # type: ignore[arg-type]
    assert here.verdicts.best().parent.tolist() == [2]


def test_pairs_at_risk_are_those_a_moved_slot_crosses() -> None:
    """A pair is at risk when one of its documents holds a slot whose position moved across
    the later document's: the same pairs as checking every slot of both documents."""
    from neardup.spark.templates import at_risk, risk_intervals

    rng = np.random.default_rng(5)
    n = 60
    tpos = rng.integers(0, n, 80)
    was = rng.integers(0, n, 80)
    now = np.where(rng.random(80) < 0.2, np.iinfo(np.int64).max, rng.integers(0, n, 80))
    lo, hi = np.minimum(was, now), np.maximum(was, now)
    i = rng.integers(0, n - 1, 500)
    j = i + 1 + rng.integers(0, n - 1 - i)
    want = [
        any(d in (a, b) and (w < b) != (m < b) for d, w, m in zip(tpos, was, now, strict=True))
        for a, b in zip(i, j, strict=True)
    ]
    got = at_risk(i, j, risk_intervals(tpos, lo, hi, n), n)
    assert got.tolist() == want and 0 < sum(want) < len(want)


def test_wanted_slots_are_each_documents_own() -> None:
    """The guard's memberships start from each document's distinct wanted slots, found a
    step of documents at a time: the same as one document at a time (empty ones too)."""
    from neardup.engine.templates import SLOT_BITS
    from neardup.spark.templates import SLOTS_STEP, _wanted_slots, slots_of

    rng = np.random.default_rng(11)
    pool = rng.integers(0, 1 << 32, 500, dtype=np.uint64).astype("<u4")
    blobs = [
        rng.choice(pool, int(rng.integers(0, 40))).tobytes() for _ in range(SLOTS_STEP * 2 + 7)
    ]
    wanted = np.zeros(1 << SLOT_BITS, dtype=np.bool_)
    every = np.concatenate([slots_of(b) for b in blobs])
    wanted[every[::2]] = True
    want = [
        (row << SLOT_BITS) | int(s)
        for row, blob in enumerate(blobs)
        for s in slots_of(blob)
        if wanted[s]
    ]
    assert _wanted_slots(blobs, wanted).tolist() == want


@pytest.mark.parametrize(("n_parts", "passage"), [(1, 0), (3, 0), (8, 0), (3, 96)])
def test_common_candidates_are_the_slots_counted_naively(
    spark: Any, n_parts: int, passage: int
) -> None:
    """The slots in ``common_after`` or more documents (two with chrome passages), counted
    in four partitions and however many ranges the counts are cut into: the same as
    counting each document's distinct slots one by one."""
    from collections import Counter

    from neardup.spark.columns import SlotCounts, partition_keys
    from neardup.spark.templates import common_candidates, fewest, slots_of

    rng = np.random.default_rng(7)
    # codes drawn from a few slots' worth of values, so that many slots repeat
    pool = rng.integers(0, 1 << 32, 300, dtype=np.uint64).astype("<u4")
    blobs = [rng.choice(pool, int(rng.integers(0, 60))).tobytes() for _ in range(200)]
    cfg = DedupConfig(common_after=4, chrome_passage=passage)
    assert fewest(cfg) == (2 if passage else 4)
    side = []
    for part in range(4):  # what four partitions of the sketch stage send
        counts = SlotCounts(fewest(cfg))
        for blob in blobs[part::4]:
            counts.add(np.frombuffer(blob, dtype="<u4"))
        side += [(partition_keys(n_parts)[r], b) for r, b in counts.ranges(n_parts)]
    frame = spark.createDataFrame(side, "_side int, _b binary")
    seen = Counter(int(s) for b in blobs for s in slots_of(b))
    want = sorted(s for s, n in seen.items() if n >= fewest(cfg))
    got = common_candidates(frame, cfg, n_parts)
    assert got.tolist() == want and len(want) > 10


def test_partition_keys_put_each_range_in_its_partition(spark: Any) -> None:
    """Spark's hash partitioning sends the key of range r to partition r, so no two ranges
    share a task while another partition idles."""
    from pyspark.sql import functions as F

    from neardup.spark.columns import partition_keys

    for n in (1, 2, 3, 8):
        keys = partition_keys(n)
        frame = spark.createDataFrame([(k,) for k in keys], "_r int").repartition(n, "_r")
        got = dict(frame.select("_r", F.spark_partition_id().alias("p")).collect())
        assert [got[k] for k in keys] == list(range(n))


# -- connected components ------------------------------------------------------------------------


def components(spark: Any, edges: list[tuple[int, int]]) -> dict[int, int]:
    frame = spark.createDataFrame(edges, "src long, dst long")
    return {r["node"]: r["component"] for r in connected_components(frame).collect()}


def test_components_of_a_long_chain(spark: Any) -> None:
    """A chain of 40 nodes given in scrambled directions is one component named by its least."""
    edges = [(i + 1, i) if i % 3 else (i, i + 1) for i in range(3, 42)]
    assert components(spark, edges) == {n: 3 for n in range(3, 43)}


def test_components_of_stars_and_pieces(spark: Any) -> None:
    """Two stars, a triangle, repeated edges and a self-loop: each piece gets its least node."""
    edges = [(100, k) for k in range(101, 110)] + [(k, 50) for k in range(51, 56)]
    edges += [(7, 8), (8, 9), (9, 7), (8, 7), (200, 200), (109, 51)]
    got = components(spark, edges)
    assert {got[n] for n in range(100, 110)} == {50}
    assert {got[n] for n in range(50, 56)} == {50}
    assert {got[7], got[8], got[9]} == {7}
    assert 200 not in got


# -- bad rows --------------------------------------------------------------------------------------


def test_bad_rows_are_reported_not_dropped(spark: Any) -> None:
    """Null, empty and blank texts, null ids and repeated ids are errors; the rest is decided."""
    rows = [
        ("a", STORY_EN),
        ("b", None),
        ("c", ""),
        ("d", "   \n "),
        (None, STORY_ZH),
        ("a", STORY_ZH),  # repeated: the first usable row keeps the id
        ("e", STORY_EN + " Updated."),
        ("b", STORY_ZH),  # the first "b" was unusable, so this one may use it
        ("f", "<p></p>&nbsp;\u200b"),  # nothing once normalized, as the local readers say
        ("g", "&lt;p&gt;"),  # escaped markup is text
    ]
    result = dedup(spark.createDataFrame(rows, "id string, text string"))
    errors = {r["position"]: (r["id"], r["reason"]) for r in result.errors.collect()}
    assert errors == {
        1: ("b", "'text' is null"),
        2: ("c", "'text' is empty"),
        3: ("d", "'text' is only whitespace"),
        4: (None, "'id' is null"),
        5: ("a", "repeated id 'a', first on position 0"),
        8: ("f", f"'text' {NO_TEXT}"),
    }
    positions = {r["position"] for r in result.clusters.collect()} | set(errors)
    assert positions == set(range(len(rows)))
    got = spark_decisions(result)
    assert sorted(got) == ["a", "b", "e", "g"]
    assert got["e"][1] == "a"


def test_a_run_lets_go_of_its_checkpoints_not_of_its_results_or_the_callers_cache(
    spark: Any,
) -> None:
    """After a run, the session holds none of the run's checkpoints (copies of the texts a
    session running input after input would pile up): the results are cached and read
    without them, and a frame the caller cached (first computed by the run) stays cached."""
    from neardup.spark.session import held_rdds

    def checkpoints(ids: set[int]) -> set[int]:
        kept = spark.sparkContext._jsc.getPersistentRDDs()
        return {k for k in ids if kept.get(k).rdd().isCheckpointed()}

    rows = [(f"f-{k}", text + FOOTER) for k, text in enumerate(OTHER_ZH)]
    rows += [("zh-1", STORY_ZH), ("zh-2", "转载自河湾日报\n" + STORY_ZH), ("bad", None)]
    rows += [("zh-3", STORY_ZH)]
    before = held_rdds(spark)
    frame = spark.createDataFrame(rows, "id string, text string").cache()  # not computed yet
    result = dedup(frame)
    made = held_rdds(spark) - before
    assert checkpoints(made) == set()
    assert len(made) == 3  # the caller's cache, the clusters, the errors
    assert [tuple(r) for r in result.errors.collect()] == [(8, "bad", "'text' is null")]
    ids = [r[0] for r in rows if r[1] is not None]
    texts = [r[1] for r in rows if r[1] is not None]
    assert spark_decisions(result) == local_decisions(ids, texts)
    assert len(held_rdds(spark) - before) == 1  # the results let go of: the caller's cache
    assert frame.is_cached and frame.count() == len(rows)
    frame.unpersist()
    assert held_rdds(spark) - before == set()
    clean = dedup(spark.createDataFrame(rows[:2], "id string, text string"))
    assert clean.errors.columns == ["position", "id", "reason"] and clean.errors.count() == 0
    assert checkpoints(held_rdds(spark) - before) == set()
    spark_decisions(clean)


def test_texts_of_nothing_are_found_as_the_local_readers_find_them(spark: Any) -> None:
    """Markup, references and invisible characters alone are nothing, whichever of Python's
    whitespace they hold; text among them, escaped markup or a broken tag are text: Spark's
    answer (Java's regex first, Python for the few it lets through) is ``no_text``'s."""
    from neardup.records.document import no_text
    from neardup.spark.columns import holds_no_text

    texts = [
        "<p></p>&nbsp;\u200b",
        "\x1c\x1d\u3000\u2029\u202f<br/>&#160;&#x200b;\ufeff",
        "<div>\u00ad</div>\u2060\u2066\u206f",
        "&lt;p&gt;",
        "<p>一</p>",
        "<a<b>",
        "&amp;",
        "&" + "x" * 40 + ";",
        "\u200b" * 3 + "a",
        "！",
        "<p>\n\t \u3000</p>",
        "\u3000\u200b\n",
        "\u3000\u200b文<p></p>",
        " \t<p></p>x",
        "&nbsp;字",
        "\x00" * 5,  # control characters: no text (a binary record read as text)
        "\x00\x01<p>\x7f</p>\x9f\u200b",
        "\x00a\x00",
    ]
    frame = spark.createDataFrame([(t,) for t in texts], "t string")
    got = [r[0] for r in frame.select(holds_no_text(frame["t"])).collect()]
    assert got == [no_text(t) for t in texts]
    assert got.count(True) >= 4


def test_date_and_zoneless_timestamp_columns_are_utc_whatever_the_session_zone(
    spark: Any,
) -> None:
    """A DATE or TIMESTAMP_NTZ column is read as UTC, as the local readers read a date and a
    naive datetime; a Spark session in another time zone read them in its own (8 hours off
    in Hong Kong's: another order across a story's copies than the local engine's)."""
    import datetime as dt

    from neardup.spark.pipeline import _read_timestamps
    from neardup.times import parse_timestamp

    values = [
        (
            dt.date(2024, 3, 10),
            dt.datetime(2024, 3, 10, 12, 30, 15, 250000),
            dt.datetime(2024, 3, 10, 12, 30, tzinfo=dt.UTC),
        ),
        (
            dt.date(1, 1, 1),
            dt.datetime(1969, 12, 31, 23, 59, 59),
            dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
        ),
    ]
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Hong_Kong")
    try:
        frame = spark.createDataFrame(values, "d date, n timestamp_ntz, t timestamp")
        columns = [_read_timestamps(frame, name)[0].alias(name) for name in ("d", "n", "t")]
        got = [tuple(r) for r in frame.select(*columns).collect()]
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert got == [tuple(parse_timestamp(v) for v in row) for row in values]


@pytest.mark.parametrize("kind", ["string", "double", "bigint"])
def test_timestamp_columns_read_as_the_local_readers_read_them(spark: Any, kind: str) -> None:
    """keep='earliest' over a string column (ISO 8601 with offsets, HTTP dates, numbers as
    text, blanks, nonsense), or a numeric one (seconds and milliseconds, out of range): the
    local readers' times, decisions and error records (the strings were cast to double:
    every time lost, and the local engine's earliest copy not kept; milliseconds were
    compared with seconds)."""
    from neardup.records import Fields, RecordChecker

    base = [r for r in records() if r[0] in ("zh-1", "zh-2", "zh-3", "en-1", "en-2", "en-3")]
    stamps: dict[str, list[Any]] = {
        # zh-1, en-1, zh-2 (dated an hour before zh-1), en-2, zh-3 (an error), en-3
        "string": [
            "2024-01-05T10:00:00+08:00",
            "Fri, 05 Jan 2024 01:00:00 GMT",
            "1704416400",
            " ",
            "yesterday",
            "20240105",
        ],
        "double": [1704420000.0, 1704416400000.0, 1704416400.0, None, 1e300, 1704412800.0],
        "bigint": [1704420000, 1704416400000, 1704416400, None, 10**17, 1704412800],
    }
    rows = [(r[0], r[1], ts) for r, ts in zip(base, stamps[kind], strict=True)]
    frame = spark.createDataFrame(rows, f"id string, text string, ts {kind}")
    result = dedup(frame, timestamp_col="ts", keep="earliest")
    checker = RecordChecker(Fields(timestamp="ts"), repeated_ids=False)
    read = [
        checker.check({"id": i, "text": t, "ts": ts}, n + 1, None)
        for n, (i, t, ts) in enumerate(rows)
    ]
    good = [d for d in read if not hasattr(d, "reason")]
    errors = {r["id"]: r["reason"] for r in result.errors.collect()}
    assert errors == {d.id: d.reason for d in read if hasattr(d, "reason")}
    assert len(errors) == 1 and "bad 'ts'" in errors["zh-3"]
    want = local_decisions(
        [d.id for d in good],
        [d.text for d in good],
        keep="earliest",
        timestamps=[d.timestamp for d in good],  # type: ignore[union-attr]
    )
    assert spark_decisions(result) == want
    assert want["zh-1"][0] == "zh-2"


def test_struct_columns_by_dotted_names(spark: Any) -> None:
    """id_col, text_col and timestamp_col may name struct fields (``meta.url``), as the local
    readers read nested fields; a top-level column whose name holds a dot is itself."""
    recs = records()
    frame = spark.createDataFrame(
        [((i, ts), (t,), i) for i, t, ts in recs],
        "meta struct<url: string, ts: double>, content struct<text: string>, `a.b` string",
    )
    result = dedup(
        frame, id_col="meta.url", text_col="content.text", timestamp_col="meta.ts", keep="earliest"
    )
    want = local_decisions(
        [r[0] for r in recs], [r[1] for r in recs], keep="earliest", timestamps=[r[2] for r in recs]
    )
    assert spark_decisions(result) == want
    flat = dedup(frame, id_col="a.b", text_col="content.text")
    assert spark_decisions(flat) == local_decisions([r[0] for r in recs], [r[1] for r in recs])
    with pytest.raises(ValueError, match=r"text_col='content\.body' is not a column"):
        dedup(frame, id_col="meta.url", text_col="content.body")


def test_a_text_column_that_is_not_strings(spark: Any) -> None:
    """Every row of a non-string text column is an error naming the type; no job fails."""
    frame = spark.createDataFrame([("a", 1), ("b", 2)], "id string, text int")
    result = dedup(frame)
    assert [r["reason"] for r in result.errors.orderBy("position").collect()] == [
        "'text' must be a string, not int"
    ] * 2
    assert result.clusters.count() == 0


def test_an_array_of_strings_is_one_text_as_the_local_readers_read_it(spark: Any) -> None:
    """A text column of arrays of strings (a JSON array of paragraphs, a Parquet
    list<string>, a Scrapy item's getall()) is one text, its items joined by lines — as the
    local engine reads it: the same decisions and the same error rows (every row an error
    before)."""
    from neardup.records import Fields, RecordChecker

    paragraphs = [p for p in STORY_ZH.split("。") if p]
    rows = [
        ("a", [p + "。" for p in paragraphs]),
        ("b", [p + "。" for p in paragraphs[:-1]]),
        ("c", STORY_EN.split(". ")),
        ("d", None),
        ("e", []),
        ("f", ["x", None]),
        ("g", ["  ", "<p></p>"]),
    ]
    result = dedup(spark.createDataFrame(rows, "id string, text array<string>"))
    errors = {r["id"]: r["reason"] for r in result.errors.collect()}
    checker = RecordChecker(Fields())
    local = {}
    for doc_id, paras in rows:
        record = checker.check({"id": doc_id, "text": paras}, 1, None)
        if hasattr(record, "reason"):
            local[doc_id] = record.reason
    assert (
        errors
        == local
        == {
            "d": "'text' is null",
            "e": "'text' is empty",
            "f": "'text' must be a string or an array of strings, not an array holding null",
            "g": f"'text' {NO_TEXT}",
        }
    )
    texts = ["\n".join(r[1]) for r in rows[:3]]  # type: ignore[arg-type]
    got = spark_decisions(result)
    assert got == local_decisions(["a", "b", "c"], texts)
    assert got["b"][1] == "a"


def test_a_missing_column_is_named(spark: Any) -> None:
    """A column that is not in the frame is a ConfigError naming it."""
    frame = spark.createDataFrame([("a", "x")], "id string, body string")
    with pytest.raises(ValueError, match="text_col='text' is not a column"):
        dedup(frame)


# -- the command line --------------------------------------------------------------------------


def write_jsonl(path: Path) -> None:
    lines = [json.dumps({"id": r[0], "text": r[1]}, ensure_ascii=False) for r in records()]
    lines[3:3] = [
        '{"id": "x1", "text": null}',
        "not json",
        "",
        '{"id": "zh-1", "text": "重复的编号"}',
        '{"id": "x2", "text": 7}',
    ]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    # a line that is not UTF-8 (Latin-1): an error row, as the local reader says it (it
    # failed the Spark job with a UnicodeDecodeError)
    path.write_bytes(data + b'{"id": "x3", "text": "caf\xe9 au lait, a Latin-1 line"}\n')


def run_cli(tmp: Path, source: Path, *extra: str) -> dict[str, str]:
    out = {name: tmp / f"{name}.jsonl" for name in ("unique", "clusters", "errors")}
    status = main(
        [
            "dedup",
            str(source),
            "-o",
            str(out["unique"]),
            "--clusters",
            str(out["clusters"]),
            "--errors",
            str(out["errors"]),
            "-q",
            *extra,
        ]
    )
    assert status == 0
    return {name: p.read_text(encoding="utf-8") for name, p in out.items()}


def test_cli_engine_spark_writes_what_the_local_engine_writes(spark: Any, tmp_path: Path) -> None:
    """UNIQUE, CLUSTERS and ERRORS from --engine spark are the local run's, byte for byte."""
    source = tmp_path / "in.jsonl"
    write_jsonl(source)
    (tmp_path / "local").mkdir()
    (tmp_path / "spark").mkdir()
    local = run_cli(tmp_path / "local", source)
    remote = run_cli(tmp_path / "spark", source, "--engine", "spark", "--spark-master", "local[2]")
    assert remote == local
    assert len(local["errors"].splitlines()) == 5
    assert "not valid UTF-8: byte 0xE9" in local["errors"].splitlines()[-1]


def test_cli_a_spark_out_of_memory_is_one_line_exit_2(
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A run whose JVM ran out of memory exits 2 with one line saying what to set, not a
    traceback (the JVM's own log is its own)."""
    import neardup.spark.cli as spark_cli

    def out_of_memory(*args: Any, **kw: Any) -> Any:
        try:
            raise RuntimeError("Job aborted: java.lang.OutOfMemoryError: Java heap space")
        except RuntimeError:
            raise ConnectionRefusedError(111, "Connection refused")  # noqa: B904 (as Spark)

    monkeypatch.setattr(spark_cli, "run_pipeline", out_of_memory)
    source = tmp_path / "in.jsonl"
    write_jsonl(source)
    out = ["-o", str(tmp_path / "u.jsonl"), "--clusters", str(tmp_path / "c.jsonl")]
    status = main(["dedup", str(source), *out, "--engine", "spark"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and "out of memory" in err[0] and "spark.driver.memory" in err[0]


def test_cli_engine_spark_refuses_xz_saying_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An xz-compressed JSONL, which Spark's readers do not open (every line was binary
    data), is refused before Spark starts."""
    import lzma

    source = tmp_path / "in.jsonl.xz"
    source.write_bytes(lzma.compress(b'{"id": "a", "text": "x"}\n'))
    out = ["-o", str(tmp_path / "u.jsonl"), "--clusters", str(tmp_path / "c.jsonl")]
    status = main(["dedup", str(source), *out, "--engine", "spark"])
    assert status == 2
    assert "is xz-compressed, which Spark's readers do not open" in capsys.readouterr().err


def test_cli_engine_spark_refuses_another_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--encoding gbk with --engine spark (whose text reader is UTF-8's) is refused, naming
    iconv."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "text": "x"}\n')
    out = ["-o", str(tmp_path / "u.jsonl"), "--clusters", str(tmp_path / "c.jsonl")]
    status = main(["dedup", str(source), *out, "--engine", "spark", "--encoding", "gbk"])
    assert status == 2
    assert "iconv -f gbk -t utf-8" in capsys.readouterr().err


def test_cli_engine_spark_refuses_a_json_array_saying_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that is one JSON array (Scrapy's ``-o items.json``) is refused before Spark
    starts, naming the local engine and how to write it as lines (Spark read each of its
    lines as a record: every one an error but the last)."""
    source = tmp_path / "items.json"
    source.write_text(json.dumps([{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]))
    out = ["-o", str(tmp_path / "u.jsonl"), "--clusters", str(tmp_path / "c.jsonl")]
    status = main(["dedup", str(source), *out, "--engine", "spark"])
    err = capsys.readouterr().err
    assert status == 2
    assert "is one JSON array, and --engine spark reads JSON Lines" in err
    assert "jq -c '.[]'" in err


def test_cli_engine_spark_reads_parquet(spark: Any, tmp_path: Path) -> None:
    """A Parquet input: every row in CLUSTERS, the kept rows as JSON lines in UNIQUE."""
    source = tmp_path / "in.parquet"
    recs = records()
    spark.createDataFrame([(r[0], r[1]) for r in recs], "id string, text string").coalesce(
        1
    ).write.parquet(str(source))
    got = run_cli(tmp_path, source, "--engine", "spark")
    clusters = [json.loads(line) for line in got["clusters"].splitlines()]
    want = local_decisions([r[0] for r in recs], [r[1] for r in recs])
    assert {c["id"]: (c["cluster"], c["duplicate_of"]) for c in clusters} == {
        k: v[:2] for k, v in want.items()
    }
    kept = [json.loads(line)["id"] for line in got["unique"].splitlines()]
    assert kept == [k for k, v in want.items() if v[1] is None]


def test_without_pyspark_the_cli_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--engine spark without PySpark exits 2 and names the extra to install."""
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(MissingDependencyError):
        require_pyspark()
    source = tmp_path / "in.jsonl"
    write_jsonl(source)
    out = tmp_path / "u.jsonl"
    status = main(
        [
            "dedup",
            str(source),
            "-o",
            str(out),
            "--clusters",
            str(tmp_path / "c"),
            "--engine",
            "spark",
        ]
    )
    assert status == 2
    assert "pip install 'neardup[spark]'" in capsys.readouterr().err


def test_cli_output_dir_writes_parquet_with_the_local_decisions(spark: Any, tmp_path: Path) -> None:
    """--output-dir DIR: CLUSTERS and UNIQUE as Parquet parts in DIR, in input order, with
    the local run's decisions; ERRORS as the local run's."""
    import pyarrow.parquet as pq

    source = tmp_path / "in.jsonl"
    write_jsonl(source)
    (tmp_path / "local").mkdir()
    local = run_cli(tmp_path / "local", source)
    folder = tmp_path / "out"
    errors = tmp_path / "errors.jsonl"
    status = main(
        [
            "dedup",
            str(source),
            "--engine",
            "spark",
            "--spark-master",
            "local[2]",
            "--output-dir",
            str(folder),
            "--errors",
            str(errors),
            "-q",
        ]
    )
    assert status == 0
    assert errors.read_text(encoding="utf-8") == local["errors"]
    clusters = pq.read_table(folder / "clusters").to_pylist()
    want = [json.loads(line) for line in local["clusters"].splitlines()]
    assert [(c["id"], c["cluster"], c["duplicate_of"]) for c in clusters] == [
        (c["id"], c["cluster"], c["duplicate_of"]) for c in want
    ]
    unique = pq.read_table(folder / "unique").to_pylist()
    kept = [json.loads(line) for line in local["unique"].splitlines()]
    assert [(r["id"], r["text"]) for r in unique] == [(r["id"], r["text"]) for r in kept]


def test_cli_spark_conf_needs_key_equals_value(tmp_path: Path) -> None:
    """--spark-conf without '=' is refused before Spark starts (exit 2)."""
    source = tmp_path / "in.jsonl"
    write_jsonl(source)
    out = ["-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c")]
    status = main(["dedup", str(source), *out, "--engine", "spark", "--spark-conf", "novalue"])
    assert status == 2
    assert main(["dedup", str(source), *out, "--spark-conf", "a=b"]) == 2


def test_spark_says_when_the_local_engine_would_have_turned_its_guard_twice(
    spark: Any, tmp_path: Path
) -> None:
    """The Spark engine does not turn the template guard: below two turns of
    ``chrome_window`` (the default's, here) it decides as the local engine does; where the
    stories could fill two it counts every story — the local engine's decisions with
    ``chrome_window=0`` — and says so in its summary and stats."""
    rows = [(i, t) for i, t, _ in records()]
    frame = spark.createDataFrame(rows, "id string, text string")
    ids, texts = [r[0] for r in rows], [r[1] for r in rows]
    assert spark_decisions(dedup(frame)) == local_decisions(ids, texts)
    tiny = DedupConfig(chrome_window=100 / (1 << 26))
    result = dedup(frame, config=tiny)
    assert "enough to turn the chrome guard twice" in result.stats["guard_note"]
    forever = dataclasses.replace(tiny, chrome_window=0.0)
    assert spark_decisions(result) == local_decisions(ids, texts, config=forever)
    assert dedup(frame, config=forever).stats["guard_note"] is None

    source, summary = tmp_path / "in.jsonl", tmp_path / "summary.json"
    write_jsonl(source)
    out = ["-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c"), "-q"]
    window = ["--set", f"chrome_window={100 / (1 << 26)!r}", "--json-summary", str(summary)]
    assert main(["dedup", str(source), *out, "--engine", "spark", *window]) == 0
    notes = json.loads(summary.read_text(encoding="utf-8"))["notes"]
    assert any("--set chrome_window=0 to both engines" in n for n in notes)
