"""The Deduper and dedup_batch: streaming semantics, cluster labels, evidence, the built-in
sample's ground truth, and batch reaching exactly the decisions streaming reaches."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import threading
import time
from datetime import timedelta
from importlib import resources
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import batch as batch_module
from neardup import normalize
from neardup.batch import BatchRun
from neardup.deduper import Decision, Deduper, dedup_batch
from neardup.engine import DedupConfig
from neardup.errors import ConfigError, InputError

CJK_POOL = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种"
    "面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本"
    "去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比"
    "或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总"
    "次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做"
)
EN_WORDS = (
    "city council river bridge market school hospital station train airport harbor farmers harvest "
    "storm snow rain wind power grid budget mayor governor police court judge company profit revenue "
    "shares quarter growth museum library festival music theater team coach season final league "
    "players fans research university enzyme plastic bottle climate ocean forest wildlife park trail "
    "road traffic housing rent prices workers union strike talks deal plan report survey data study "
    "opened closed announced said reported expected approved rejected launched built raised cut "
    "new old large small first last early late local national public private northern southern"
)
EN_POOL = EN_WORDS.split()

ZH_FRAMES = [
    ("来源：江城晚报 编辑：李四\n", "\n点击下方关注我们，获取更多资讯。"),
    ("本文转载自：示例网\n", "\n版权所有 未经授权禁止转载"),
    ("首页 > 新闻 > 正文\n", "\n扫码关注公众号"),
]
EN_FRAMES = [
    ("By Jane Doe, Example Times\n", "\nClick here to subscribe to our newsletter."),
    ("Home > News > Local\n", "\nCopyright 2026 Example Media. All rights reserved."),
    ("Reporting by John Smith\n", "\nFollow us on Twitter and Facebook"),
]
NOISE = ["", "   ", "，。！？", "... --- !!!", "点击下方关注我们，获取更多资讯。", "Advertisement"]


def zh_sentence(rng: random.Random) -> str:
    """A random Chinese sentence of two clauses."""
    first = "".join(rng.choices(CJK_POOL, k=rng.randint(8, 18)))
    second = "".join(rng.choices(CJK_POOL, k=rng.randint(6, 16)))
    return f"{first}，{second}。"


def en_sentence(rng: random.Random) -> str:
    """A random English sentence."""
    words = rng.choices(EN_POOL, k=rng.randint(8, 18))
    return " ".join(words).capitalize() + "."


def mixed_sentence(rng: random.Random) -> str:
    """A Chinese sentence with English words and a figure in it."""
    a = "".join(rng.choices(CJK_POOL, k=rng.randint(6, 14)))
    b = " ".join(rng.choices(EN_POOL, k=rng.randint(1, 3)))
    c = "".join(rng.choices(CJK_POOL, k=rng.randint(5, 12)))
    return f"{a}{b}{c}{rng.randint(10, 99)}{rng.choice(CJK_POOL)}。"


SENTENCE = {"zh": zh_sentence, "en": en_sentence, "mixed": mixed_sentence}


def story(rng: random.Random, lang: str, templates: list[str]) -> str:
    """A story of a few paragraphs, now and then ending with a site-wide template sentence."""
    make = SENTENCE[lang]
    joiner = "" if lang != "en" else " "
    paragraphs = [
        joiner.join(make(rng) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(2, 5))
    ]
    if templates and rng.random() < 0.5:
        paragraphs.append(rng.choice(templates))
    return "\n".join(paragraphs)


def variant(rng: random.Random, text: str, lang: str) -> str:
    """A reprint: framed, cut, retyped, shortened by a paragraph, or a copy."""
    kind = rng.choice(["copy", "frame", "cut", "typos", "drop", "frame+cut+typos"])
    out = text
    if "cut" in kind:
        out = out[: max(10, int(len(out) * rng.uniform(0.4, 0.9)))]
    if "typos" in kind:
        chars = list(out)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(chars))
            chars[i] = rng.choice(CJK_POOL) if lang != "en" else rng.choice("xyzq")
        out = "".join(chars)
    if kind == "drop":
        paragraphs = out.split("\n")
        if len(paragraphs) > 1:
            del paragraphs[rng.randrange(len(paragraphs))]
        out = "\n".join(paragraphs)
    if "frame" in kind:
        header, footer = rng.choice(ZH_FRAMES if lang != "en" else EN_FRAMES)
        out = header + out + footer
    return out


def labelled_corpus(
    seed: int, lang: str, *, templated: bool = True
) -> tuple[list[str], list[str], list[str]]:
    """Ids, texts and story labels of a shuffled synthetic crawl: stories (some ending with a
    site-wide template paragraph), their reprints, titles with a near copy, and noise."""
    rng = random.Random(seed)
    langs = ["zh", "en", "mixed"] if lang == "all" else [lang]
    templates = [SENTENCE[rng.choice(langs)](rng) * 3 for _ in range(2)]
    docs: list[tuple[str, str]] = []
    for n in range(rng.randint(4, 10)):
        la = rng.choice(langs)
        text = story(rng, la, templates if templated else [])
        docs.append((text, f"story{n}"))
        docs += [(variant(rng, text, la), f"story{n}") for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.3:
            title = SENTENCE[la](rng)[:20]
            docs += [(title, f"title{n}"), (title[:-1] + rng.choice(CJK_POOL), f"title{n}")]
    docs += [(t, f"noise{k}") for k, t in enumerate(rng.sample(NOISE, rng.randint(0, 3)))]
    rng.shuffle(docs)
    ids = [f"{lang}-{seed}-{i}" for i in range(len(docs))]
    return ids, [t for t, _ in docs], [label for _, label in docs]


def corpus(seed: int, lang: str) -> tuple[list[str], list[str]]:
    """Ids and texts of a shuffled synthetic crawl (see labelled_corpus)."""
    ids, texts, _ = labelled_corpus(seed, lang)
    return ids, texts


def fields(d: Decision) -> tuple[object, ...]:
    """The parts of a decision batch and streaming must agree on."""
    return (d.id, d.is_duplicate, d.duplicate_of, d.cluster, d.score, d.measure)


def stream(
    ids: list[str], texts: list[str], cfg: DedupConfig | None = None, **kw: bool
) -> list[Decision]:
    """Decisions of a fresh Deduper fed the documents one by one."""
    dd = Deduper(cfg, **kw)
    return [dd.check_and_add(i, t) for i, t in zip(ids, texts, strict=True)]


def assert_batch_equals_stream(
    ids: list[str], texts: list[str], cfg: DedupConfig | None = None
) -> list[Decision]:
    """Batch and streaming make the same decision for every document; return streaming's."""
    streamed = stream(ids, texts, cfg, explain=False)
    batched = dedup_batch(ids, texts, config=cfg).decisions
    assert [fields(d) for d in batched] == [fields(d) for d in streamed]
    return streamed


# ---------------------------------------------------------------------------------------------
# the built-in sample

SAMPLE = [
    json.loads(line)
    for line in resources.files("neardup")
    .joinpath("data/sample.jsonl")
    .read_text("utf-8")
    .splitlines()
    if line.strip()
]
SAMPLE_IDS = [r["id"] for r in SAMPLE]
SAMPLE_TEXTS = [r["text"] for r in SAMPLE]
FIRST_OF_STORY = {}
for _r in SAMPLE:
    FIRST_OF_STORY.setdefault(_r["cluster"], _r["id"])
REPRINTS = [r["id"] for r in SAMPLE if r["id"] != FIRST_OF_STORY[r["cluster"]]]
DISTINCT = [r["id"] for r in SAMPLE if r["kind"] == "distinct"]
KNOWN_MISSES: dict[str, str] = {}


@pytest.fixture(scope="module")
def sample_decisions() -> dict[str, Decision]:
    """Streaming decisions on the sample in file order, checked equal to the batch ones."""
    decisions = assert_batch_equals_stream(SAMPLE_IDS, SAMPLE_TEXTS)
    return {d.id: d for d in decisions}


def test_sample_has_ground_truth() -> None:
    """The sample holds stories, reprints and hard negatives, each record labelled."""
    assert len(SAMPLE) >= 50
    assert {"orig", "light", "medium", "heavy", "distinct"} <= {r["kind"] for r in SAMPLE}
    assert len(DISTINCT) >= 4 and len(REPRINTS) >= 30


@pytest.mark.parametrize(
    "doc_id",
    [
        pytest.param(i, marks=pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[i]))
        if i in KNOWN_MISSES
        else i
        for i in REPRINTS
    ],
)
def test_sample_reprint_joins_its_story(doc_id: str, sample_decisions: dict[str, Decision]) -> None:
    """In file order, each reprint is a duplicate in the cluster of its story's first copy."""
    record = SAMPLE[SAMPLE_IDS.index(doc_id)]
    d = sample_decisions[doc_id]
    assert d.is_duplicate
    assert d.cluster == FIRST_OF_STORY[record["cluster"]]


@pytest.mark.parametrize("doc_id", sorted(FIRST_OF_STORY.values()))
def test_sample_story_is_kept(doc_id: str, sample_decisions: dict[str, Decision]) -> None:
    """The first copy of every story, and every hard negative, is kept as its own cluster."""
    d = sample_decisions[doc_id]
    assert not d.is_duplicate
    assert d.cluster == doc_id and d.duplicate_of is None


@pytest.mark.parametrize("doc_id", DISTINCT)
def test_sample_distinct_is_never_merged(
    doc_id: str, sample_decisions: dict[str, Decision]
) -> None:
    """A hard negative neither joins a cluster nor gathers any other document into its own."""
    assert not sample_decisions[doc_id].is_duplicate
    joined = [d.id for d in sample_decisions.values() if d.cluster == doc_id and d.id != doc_id]
    assert joined == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sample_batch_equals_stream_shuffled(seed: int) -> None:
    """In a shuffled order, batch and streaming still make the same decisions."""
    order = list(range(len(SAMPLE)))
    random.Random(seed).shuffle(order)
    assert_batch_equals_stream([SAMPLE_IDS[i] for i in order], [SAMPLE_TEXTS[i] for i in order])


@given(st.permutations(range(len(SAMPLE))))
@settings(max_examples=6, deadline=None)
def test_sample_batch_equals_stream_any_order(order: list[int]) -> None:
    """Whatever the order of the sample, batch and streaming make the same decisions."""
    assert_batch_equals_stream([SAMPLE_IDS[i] for i in order], [SAMPLE_TEXTS[i] for i in order])


def test_sample_stories_never_merge_in_any_order() -> None:
    """In reversed order no document joins a cluster of another story or a hard negative."""
    ids, texts = SAMPLE_IDS[::-1], SAMPLE_TEXTS[::-1]
    story_of = {r["id"]: r["cluster"] for r in SAMPLE}
    for d in assert_batch_equals_stream(ids, texts):
        assert story_of[d.cluster] == story_of[d.id]


# ---------------------------------------------------------------------------------------------
# synthetic corpora


@given(st.integers(0, 2**32 - 1), st.sampled_from(["zh", "en", "mixed", "all"]))
@settings(max_examples=12, deadline=None)
def test_synthetic_batch_equals_stream(seed: int, lang: str) -> None:
    """On synthetic Chinese, English and mixed crawls batch and streaming decide alike."""
    ids, texts = corpus(seed, lang)
    assert_batch_equals_stream(ids, texts)


@given(st.integers(0, 2**32 - 1), st.sampled_from(["zh", "en", "mixed", "all"]))
@settings(max_examples=8, deadline=None)
def test_synthetic_stories_never_merge(seed: int, lang: str) -> None:
    """Without shared templates, no document is called a duplicate of another story's."""
    ids, texts, labels = labelled_corpus(seed, lang, templated=False)
    story_of = dict(zip(ids, labels, strict=True))
    for d in assert_batch_equals_stream(ids, texts):
        assert story_of[d.cluster] == story_of[d.id]


@pytest.mark.parametrize(
    "cfg",
    [
        DedupConfig(bucket_cap=1),
        DedupConfig(bucket_cap=2, common_after=2),
        DedupConfig(common_after=0, threshold=0.8),
        DedupConfig(lsh_params=(32, 4), short_units=0),
        DedupConfig(num_perm=64, cjk_width=3, word_width=5),
        DedupConfig(max_verify=1),
        DedupConfig(max_verify=2, bucket_cap=3),
        DedupConfig(common_after=2, chrome_window=300 / (1 << 26)),  # turns several times
    ],
    ids=[
        "cap1",
        "cap2-common2",
        "no-common",
        "bands32x4",
        "perm64-narrow",
        "verify1",
        "verify2",
        "window",
    ],
)
@pytest.mark.parametrize("lang", ["zh", "en", "mixed"])
def test_synthetic_batch_equals_stream_under_other_configs(cfg: DedupConfig, lang: str) -> None:
    """Batch equals streaming with small bucket caps, common counting on or off, other bands."""
    ids, texts = corpus(7, lang)
    assert_batch_equals_stream(ids, texts, cfg)


def reprinted(n: int, seed: int = 3) -> tuple[list[str], list[str]]:
    """One story and ``n`` copies of it, each with a different sentence dropped (none
    byte-identical), between other stories."""
    rng = random.Random(seed)
    sentences = [zh_sentence(rng) for _ in range(n + 4)]
    ids, texts = ["story"], ["".join(sentences)]
    for k in range(n):
        ids += [f"copy{k}", f"other{k}"]
        texts += [
            "".join(s for m, s in enumerate(sentences) if m != k),
            "".join(zh_sentence(rng) for _ in range(6)),
        ]
    return ids, texts


@pytest.mark.parametrize("max_verify", [1, 2, 8])
def test_bounded_verification_of_a_story_reprinted_many_times(max_verify: int) -> None:
    """A story copied 40 times: however few candidates each copy is verified against, every
    copy is dropped into the story's cluster, and batch decides as streaming does."""
    ids, texts = reprinted(40)
    cfg = DedupConfig(max_verify=max_verify)
    for d in assert_batch_equals_stream(ids, texts, cfg):
        if d.id.startswith("copy"):
            assert d.is_duplicate and d.cluster == "story"
        else:
            assert not d.is_duplicate and d.cluster == d.id


@pytest.mark.parametrize("lang", ["zh", "en", "mixed"])
def test_synthetic_reprints_are_found(lang: str) -> None:
    """The synthetic crawls do hold duplicates, so the equality tests compare something."""
    ids, texts = corpus(11, lang)
    decisions = stream(ids, texts)
    assert sum(d.is_duplicate for d in decisions) >= 3


def test_batch_chunks_do_not_matter() -> None:
    """Sketching in small chunks gives the same decisions as one chunk."""
    ids, texts = corpus(5, "all")
    whole = dedup_batch(ids, texts).decisions
    chunked = dedup_batch(ids, texts, chunk=3).decisions
    assert [fields(d) for d in whole] == [fields(d) for d in chunked]


def test_batch_worker_processes_do_not_matter() -> None:
    """Sketching on two processes gives the same decisions as one process."""
    ids: list[str] = []
    texts: list[str] = []
    for seed in range(8):  # enough documents for several chunks of at least 100
        more_ids, more_texts = corpus(seed, "all")
        ids += more_ids
        texts += more_texts
    while len(ids) < 250:
        ids.append(f"pad-{len(ids)}")
        texts.append(texts[len(ids) % 40] + f" 附注{len(ids)}")
    alone, pooled = dedup_batch(ids, texts, workers=1), dedup_batch(ids, texts, workers=2)
    assert (alone.sketch_workers, pooled.sketch_workers) == (0, 2)
    assert [fields(d) for d in alone.decisions] == [fields(d) for d in pooled.decisions]
    with pytest.raises(ConfigError, match="workers"):
        dedup_batch(ids, texts, workers=0)


def test_after_forking_its_workers_a_run_counts_chrome_in_a_table_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once its workers are forked (all at once, by the pool's first chunk), the run moves
    its chrome count table to memory of its own, once, with the counts it had; the
    decisions are those of a run in one process."""
    import multiprocessing

    import numpy as np

    from neardup.engine import CommonShingles

    ids, texts = corpus(4, "all")
    moves: list[tuple[int, bool, bool]] = []
    own = CommonShingles.own_pages

    def moved(self: CommonShingles) -> None:
        before = self.counts
        own(self)
        moves.append(
            (
                len(multiprocessing.active_children()),
                np.shares_memory(before, self.counts),
                np.array_equal(before, self.counts),
            )
        )

    monkeypatch.setattr(CommonShingles, "own_pages", moved)
    with BatchRun(DedupConfig(), chunk=3, workers=2, chars=None) as run:
        run.MIN_CHUNK = 3
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
        decisions = run.finish().decisions
    assert len(moves) == 1 and moves[0][0] >= 2 and moves[0][1:] == (False, True)
    alone = dedup_batch(ids, texts, workers=1, chunk=3).decisions
    assert [fields(d) for d in decisions] == [fields(d) for d in alone]


def test_a_count_table_that_cannot_be_copied_stays_shared_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Where making the count table the run's own fails in its thread (out of memory), the
    run goes on with the table it shares with its workers: the same decisions, and no
    traceback from the thread."""
    from neardup.engine import CommonShingles

    def fails(self: CommonShingles) -> None:
        raise MemoryError("no room for a copy")

    monkeypatch.setattr(CommonShingles, "own_pages", fails)
    uncaught: list[object] = []  # what a thread's uncaught error would be shown as
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    ids, texts = corpus(4, "all")
    with BatchRun(DedupConfig(), chunk=3, workers=2, chars=None) as run:
        run.MIN_CHUNK = 3
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
        decisions = run.finish().decisions
    alone = dedup_batch(ids, texts, workers=1, chunk=3).decisions
    assert [fields(d) for d in decisions] == [fields(d) for d in alone]
    assert not uncaught and "Traceback" not in capfd.readouterr().err


def _numpy_asks_huge_pages() -> bool:
    from neardup.memory import set_huge_pages

    now = set_huge_pages(True)
    set_huge_pages(now)
    return now


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the workers forked")
def test_a_batch_run_asks_huge_pages_for_its_count_table_only() -> None:
    """While a batch run runs, numpy asks no huge pages for the arrays it makes (in the run's
    process and in its sketch workers), the chrome count table still asks them once the
    workers are forked and the table is the run's own, and numpy's setting is put back
    after; the decisions are those of a run in one process."""
    from neardup.memory import set_huge_pages

    ids, texts = corpus(5, "all")
    before = set_huge_pages(True)
    try:
        with BatchRun(DedupConfig(), chunk=3, workers=2, chars=None) as run:
            run.MIN_CHUNK = 3
            for doc_id, text in zip(ids, texts, strict=True):
                run.add(doc_id, text)
            assert not _numpy_asks_huge_pages()
            assert run._pool is not None
            assert not any(run._pool.submit(_numpy_asks_huge_pages).result() for _ in range(4))
            table = run._guard().counts  # once the run owns it (a thread copies it)
            decisions = run.finish().decisions
        assert _numpy_asks_huge_pages()
    finally:
        set_huge_pages(before)
    with open("/proc/self/smaps") as f:
        smaps = f.read()
    if "VmFlags" in smaps and os.path.exists("/sys/kernel/mm/transparent_hugepage"):
        at = table.__array_interface__["data"][0] + table.nbytes // 2
        flags, inside = "", False
        for line in smaps.splitlines():
            head = line.split(maxsplit=1)[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= at < hi
            elif head == "VmFlags:" and inside:
                flags = line
        assert "hg" in flags.split()
    alone = dedup_batch(ids, texts, workers=1, chunk=3).decisions
    assert [fields(d) for d in decisions] == [fields(d) for d in alone]


def test_the_workers_start_with_the_first_chunk_of_a_large_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Told the input is ``POOL_BYTES`` or more on disk (the command line passes its size),
    the run forks its sketch workers with the first chunk, while it holds little (forked
    later, each would hold a copy of everything read and sketched by then); told less, or
    nothing, only once ``STREAM_POOL_AT`` characters came in. The decisions are the same."""
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    ids, texts = corpus(5, "all")
    runs = {}
    for size in (BatchRun.POOL_BYTES, BatchRun.POOL_BYTES - 1, None):
        with BatchRun(DedupConfig(), chunk=3, workers=None, chars=None, input_bytes=size) as run:
            run.MIN_CHUNK = 3
            started = []
            for doc_id, text in zip(ids, texts, strict=True):
                run.add(doc_id, text)
                started.append(run._pool is not None)
            runs[size] = ([fields(d) for d in run.finish().decisions], started)
    assert sum(map(len, texts)) < BatchRun.STREAM_POOL_AT
    assert runs[BatchRun.POOL_BYTES][1][3] and not any(runs[BatchRun.POOL_BYTES][1][:2])
    assert not any(runs[BatchRun.POOL_BYTES - 1][1]) and not any(runs[None][1])
    assert runs[BatchRun.POOL_BYTES][0] == runs[None][0] == runs[BatchRun.POOL_BYTES - 1][0]
    assert runs[None][0] == [fields(d) for d in dedup_batch(ids, texts, workers=1).decisions]


def test_a_chunk_holds_about_chunk_chars_characters() -> None:
    """However many documents a chunk may hold, it holds no more than ``CHUNK_CHARS``
    characters' worth at the mean length of the texts sent before it (so that the last
    chunks of an input of long articles are short work for the workers); the decisions
    are those of any other chunking."""
    ids: list[str] = []
    texts: list[str] = []
    for seed in (6, 7, 8, 9):
        more_ids, more = corpus(seed, "all")
        ids += [f"{seed}-{i}" for i in more_ids]
        texts += more
    mean = sum(map(len, texts)) / len(texts)
    sent: list[int] = []  # each chunk's documents
    with BatchRun(DedupConfig(), chunk=1000, workers=1, chars=None) as run:
        run.MIN_CHUNK, run.CHUNK_CHARS = 20, int(5 * mean)
        send = run._send

        def counted() -> None:
            sent.append(len(run._pending))
            send()

        run._send = counted  # type: ignore[method-assign]
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
        decisions = run.finish().decisions
    assert sent[0] == 20 and len(sent) >= 10 and sum(sent) == len(ids)
    assert all(1 <= n < 10 for n in sent[1:]), sent  # about 5 a chunk: not MIN_CHUNK's 20
    assert [fields(d) for d in decisions] == [
        fields(d) for d in dedup_batch(ids, texts, workers=1, chunk=len(ids)).decisions
    ]


def test_a_run_gives_freed_memory_back_between_joins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before a join, once ``TRIM_EVERY`` band keys were joined since the last time, the
    run gives the memory the chunks before it freed back to the system; the decisions do
    not change."""
    import neardup.batch

    ids, texts = corpus(4, "all")
    calls: list[int] = []
    monkeypatch.setattr(neardup.batch, "trim", lambda: calls.append(1) or True)
    with BatchRun(DedupConfig(), chunk=3, workers=1, chars=None) as run:
        run.TRIM_EVERY = 64 * 6  # the band keys of six documents
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
        decisions = run.finish().decisions
    assert 2 <= len(calls) <= len(ids) // 6
    alone = dedup_batch(ids, texts, workers=1, chunk=3).decisions
    assert [fields(d) for d in decisions] == [fields(d) for d in alone]


def test_reading_waits_for_the_decisions_of_joined_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside worker processes, once more than ``MAX_JOINED`` joined chunks wait to be
    decided, taking the next document waits for the oldest: however slow the join, the
    documents read ahead of the decisions stay bounded (without the bound they pile up);
    the decisions do not change."""
    ids, texts = corpus(4, "all")
    slow = BatchRun._candidates

    def lagging(self: BatchRun, *args: Any) -> Any:
        time.sleep(0.1)  # a join slower than reading
        return slow(self, *args)

    monkeypatch.setattr(BatchRun, "_candidates", lagging)
    alone = [fields(d) for d in dedup_batch(ids, texts, workers=1, chunk=3).decisions]
    for bound in (1, 10_000):
        waiting: list[int] = []
        with BatchRun(DedupConfig(), chunk=2, workers=2, chars=None) as run:
            run.MIN_CHUNK, run.MAX_JOINED, run.JOIN_SHARE = 2, bound, 1 << 40  # each joined
            run.POLL_EVERY = 1
            for doc_id, text in zip(ids, texts, strict=True):
                while run._sent and not run._ready(run._sent[0][1]):
                    time.sleep(0.005)  # each chunk sketched before the next document
                run.add(doc_id, text)
                waiting.append(len(run._joined))
            decisions = run.finish().decisions
        assert (max(waiting) == 1) if bound == 1 else (max(waiting) > 2)
        assert [fields(d) for d in decisions] == alone


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("chunk", [1, 2, 7])
def test_run_fed_as_read_equals_stream(workers: int, chunk: int) -> None:
    """Fed one document at a time (as the CLI reads), deciding while the workers sketch,
    the batch run equals streaming, with byte-identical copies of documents whose sketches
    are still being made, copies at the very start and end, and empty texts."""
    ids, texts = corpus(3, "all")
    rng = random.Random(chunk * 10 + workers)
    for k in range(12):
        at = rng.randrange(1, len(texts) + 1)
        texts.insert(at, texts[rng.randrange(at)])  # a copy of an earlier text
        ids.insert(at, f"copy-{k}")
    texts = [texts[0], *texts, "", "   ", texts[-1], texts[0]]
    ids = ["first-copy", *ids, "empty", "blank", "copy-last", "copy-first"]
    streamed = stream(ids, texts)
    with BatchRun(DedupConfig(), chunk=chunk, workers=workers, chars=None) as run:
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
        result = run.finish()
    assert [fields(d) for d in result.decisions] == [fields(d) for d in streamed]
    assert sum(d.measure == "identical" for d in streamed) >= 14
    assert result.timings.keys() >= {"sketch", "candidates", "verify", "clusters"}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_run_handing_decisions_out_gives_the_same_as_its_finish(workers: int) -> None:
    """With ``hand_out``, each decision is handed out as it is made (by ``take``, in input
    order, never before the document is decided) and ``finish`` gives the rest: together
    exactly the decisions of a run that makes them all at the end — copies, documents that
    extend another, a hub's posts (a cluster of their own) and byte-identical copies."""
    from .engine.test_real_crawls import hub_posts  # it imports this module's pools

    ids, texts = corpus(5, "all")
    hub_ids, hub_texts = hub_posts(random.Random(12))
    titles = [
        "上海今天发布暴雨蓝色预警",
        "上海今天发布暴雨蓝色预警！",
        "快讯：上海今天发布暴雨蓝色预警",
    ]
    titles += ["Shanghai issues a rainstorm warning", "Shanghai issues a blue rainstorm warning"]
    ids = ids[:20] + [f"title-{k}" for k in range(3)] + ids[20:] + hub_ids
    ids += [f"title-{k}" for k in range(3, 5)]
    texts = texts[:20] + titles[:3] + texts[20:] + hub_texts + titles[3:]
    rng = random.Random(workers)
    for k in range(10):
        at = rng.randrange(1, len(texts) + 1)
        texts.insert(at, texts[rng.randrange(at)])
        ids.insert(at, f"copy-{k}")
    whole = dedup_batch(ids, texts, workers=workers, chunk=3).decisions
    assert {"hub", "p2", "p3"} <= {d.cluster for d in whole}
    assert any(d.extends for d in whole) and any(d.is_duplicate for d in whole)
    # titles compared with titles decided before them (kept by then as their texts only)
    assert sum(d.measure in ("lcsubstr", "levenshtein") for d in whole) >= 2
    handed: list[Decision] = []
    with BatchRun(DedupConfig(), chunk=3, workers=workers, chars=None, hand_out=True) as run:
        run.MIN_CHUNK, run.POLL_EVERY = 3, 1
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
            got = run.take()
            assert len(handed) + len(got) == run.decided <= len(run.ids)
            handed += got
        if workers == 1:  # sketched at once: some are handed out while documents come in
            assert 0 < len(handed) < len(ids)
        with pytest.raises(ConfigError, match="keeps the first"):
            run.finish(keep="longest")
        rest = run.finish().decisions
    assert [fields(d) for d in handed + rest] == [fields(d) for d in whole]
    assert run.take() == []


def _with_copies(seed: int) -> tuple[list[str], list[str]]:
    """A synthetic crawl (``corpus``) with ten exact copies of earlier texts put in."""
    ids, texts = corpus(seed, "all")
    rng = random.Random(seed)
    for k in range(10):
        at = rng.randrange(1, len(texts) + 1)
        texts.insert(at, texts[rng.randrange(at)])
        ids.insert(at, f"copy-{k}")
    return ids, texts


def _join_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("neardup-join")]


def _thread(seed: int) -> tuple[list[str], list[str]]:
    """Forum posts, each with a signature: a parent, two replies that quote most of it
    (``>``) and answer (kept, extending it), and one that only quotes (a copy)."""
    rng = random.Random(seed)
    ids, texts = [], []
    for k in range(6):
        parent = " ".join(en_sentence(rng) for _ in range(8))
        ids.append(f"post-{k}")
        texts.append(f"{parent}\n-- \nAnn, the list's keeper")
        for r in range(3):
            quoted = "\n".join("> " + line for line in parent.split(". ")[: 8 - 2 * r])
            answer = " ".join(en_sentence(rng) for _ in range(4 if r < 2 else 0))
            ids.append(f"post-{k}-re-{r}")
            texts.append(f"Ann writes:\n{quoted}\n{answer}\n-- \nAnn, the list's keeper")
    return ids, texts


def test_the_workers_make_what_a_story_adds_to_the_guard() -> None:
    """The sketch workers make each document's story codes for the template guard (its
    vocabulary less what it quotes: None where that is the vocabulary), the codes the run's
    own process would make; a run taking them decides as one without workers, and holds
    none once done. Without a guard none are made."""
    from neardup.engine import make_sketch, story_codes
    from neardup.engine.codec import block_name, take

    ids, texts = _thread(5)
    cfg = DedupConfig()
    shipped, owns = batch_module._sketch_packed(texts, cfg, block_name(os.getpid(), 7, 0))
    take(shipped)  # (frees its block)
    assert owns is not None and len(owns) == len(texts)
    for text, own in zip(texts, owns, strict=True):
        sketch = make_sketch(text, cfg)
        want = story_codes(sketch)
        if want is sketch.vocab:
            assert own is None
        else:
            assert own is not None and own.tolist() == want.tolist()
    assert sum(own is not None for own in owns) == 18  # the replies quote
    no_guard = dataclasses.replace(cfg, common_after=0)
    shipped, owns = batch_module._sketch_packed(texts, no_guard, block_name(os.getpid(), 7, 1))
    take(shipped)
    assert owns is None

    alone = dedup_batch(ids, texts, workers=1, chunk=3).decisions
    with BatchRun(cfg, chunk=3, workers=2, chars=None) as run:
        run.MIN_CHUNK = 3
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
        decisions = run.finish().decisions
        assert run._pool is None and not run._owns
    assert [fields(d) for d in decisions] == [fields(d) for d in alone]
    assert any(d.is_duplicate for d in alone) and any(d.extends for d in alone)


def test_the_join_runs_in_a_thread_beside_the_workers_and_decides_the_same() -> None:
    """Beside worker processes, chunks are joined in a thread of their own while the run
    decides the chunks before: however late a join comes in, the decisions handed out are
    made in input order and equal those of a run joining in its own thread, and the thread
    ends with the run."""
    ids, texts = _with_copies(4)
    alone = dedup_batch(ids, texts, workers=1, chunk=3).decisions
    seen_threads: set[str] = set()
    handed: list[Decision] = []
    with BatchRun(DedupConfig(), chunk=3, workers=2, chars=None, hand_out=True) as run:
        run.MIN_CHUNK, run.POLL_EVERY = 3, 1
        join = run._candidates

        def slow(*args: object) -> object:
            seen_threads.add(threading.current_thread().name)
            time.sleep(0.02)  # the joins lag behind the chunks coming back
            return join(*args)  # type: ignore[arg-type]

        run._candidates = slow  # type: ignore[method-assign]
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
            got = run.take()
            assert len(handed) + len(got) == run.decided
            handed += got
        assert len(handed) < len(ids)  # some chunks' joins were still on their way
        rest = run.finish().decisions
    assert [fields(d) for d in handed + rest] == [fields(d) for d in alone]
    assert seen_threads and all(name.startswith("neardup-join") for name in seen_threads)
    assert not _join_threads()


def test_an_error_in_the_join_thread_reaches_the_caller() -> None:
    """An error raised while joining in the join's thread is raised by the run (by ``add``
    or ``finish``), and the thread and the workers end with the run."""
    ids, texts = corpus(2, "all")
    calls = [0]
    with (
        pytest.raises(RuntimeError, match="join failed"),
        BatchRun(DedupConfig(), chunk=3, workers=2, chars=None) as run,
    ):
        run.MIN_CHUNK, run.POLL_EVERY = 3, 1
        extend = run._join.extend

        def failing(*args: object) -> object:
            calls[0] += 1
            if calls[0] == 3:
                raise RuntimeError("join failed")
            return extend(*args)  # type: ignore[arg-type]

        run._join.extend = failing  # type: ignore[method-assign]
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
        run.finish()
    assert calls[0] >= 3
    assert not _join_threads()


def test_batch_evidence_equals_stream_evidence() -> None:
    """With explain on, batch and streaming show the same evidence passages."""
    ids, texts = corpus(3, "all")
    streamed = stream(ids, texts, explain=True)
    batched = dedup_batch(ids, texts, explain=True).decisions
    assert [d.evidence for d in batched] == [d.evidence for d in streamed]
    assert any(d.evidence for d in streamed)


# ---------------------------------------------------------------------------------------------
# streaming semantics

ZH = (
    "1月18日上午9时，临江市轨道交通5号线一期工程正式开通初期运营。该线路西起滨江新城站，东至高铁东站，"
    "全长24.6公里，全部为地下线，共设车站18座，其中换乘站5座。\n"
    "据临江地铁集团介绍，5号线采用最高时速100公里的A型列车，从滨江新城到高铁东站全程约需45分钟。"
)
ZH_REPRINT = (
    "来源：江城晚报 编辑：李四\n"
    + ZH.replace("正式", "正试")
    + "\n点击下方关注我们，获取更多资讯。"
)
EN = (
    "The city's first light rail line opened to passengers on Saturday morning, connecting the "
    "downtown waterfront with the international airport in about 25 minutes. Officials said it "
    "would carry about 40,000 passengers a day within its first year."
)
EN_REPRINT = "By Jane Doe, Example Times\n" + EN.replace("passengers", "passangers", 1)


@pytest.mark.parametrize(
    ("original", "reprint"), [(ZH, ZH_REPRINT), (EN, EN_REPRINT)], ids=["zh", "en"]
)
def test_check_does_not_remember(original: str, reprint: str) -> None:
    """check decides without adding: the Deduper stays empty and the id stays unknown."""
    dd = Deduper()
    first = dd.check("a", original)
    assert not first.is_duplicate
    assert len(dd) == 0 and "a" not in dd
    assert not dd.check("b", reprint).is_duplicate
    with pytest.raises(KeyError, match="'a'"):
        dd.decision("a")


@pytest.mark.parametrize(
    ("original", "reprint"), [(ZH, ZH_REPRINT), (EN, EN_REPRINT)], ids=["zh", "en"]
)
def test_check_and_add_finds_the_reprint(original: str, reprint: str) -> None:
    """After adding a story, check and check_and_add both find its reprint, with full fields."""
    dd = Deduper()
    kept = dd.check_and_add("orig", original)
    assert kept == Decision("orig", False, None, "orig", 0.0, None)
    checked = dd.check("copy", reprint)
    assert len(dd) == 1
    added = dd.check_and_add("copy", reprint)
    assert checked == added
    assert added.is_duplicate and added.duplicate_of == "orig" and added.cluster == "orig"
    assert added.measure == "coverage" and 0.6 <= added.score < 1.0
    assert dd.decision("copy") == added and "copy" in dd and len(dd) == 2


def test_same_id_returns_the_earlier_decision() -> None:
    """An id already added keeps its decision, whatever text comes with it later."""
    dd = Deduper()
    dd.check_and_add("a", ZH)
    first = dd.check_and_add("b", ZH_REPRINT)
    assert dd.check_and_add("b", EN) == first
    assert dd.add("b", "") == first
    assert dd.check("b", EN) == first
    assert len(dd) == 2
    # the text that came later was not indexed under the id
    assert not dd.check("c", EN).is_duplicate


def test_add_is_check_and_add() -> None:
    """add decides and remembers, as check_and_add does."""
    dd = Deduper()
    assert not dd.add("a", EN).is_duplicate
    d = dd.add("b", EN_REPRINT)
    assert d.is_duplicate and d.duplicate_of == "a"


def test_decision_to_dict() -> None:
    """A decision serializes to plain JSON values, score rounded, evidence as texts."""
    dd = Deduper()
    dd.add("a", ZH)
    d = dd.add("b", ZH_REPRINT)
    out = d.to_dict()
    assert json.loads(json.dumps(out, ensure_ascii=False)) == out
    assert out["id"] == "b" and out["duplicate_of"] == "a" and out["cluster"] == "a"
    assert out["score"] == round(d.score, 4)
    assert out["evidence"] == [p.text for p in d.evidence]


@pytest.mark.parametrize(
    ("original", "reprint"),
    [(ZH, ZH_REPRINT), (EN, EN_REPRINT), (SAMPLE_TEXTS[0], SAMPLE_TEXTS[2])],
    ids=["zh", "en", "sample-html"],
)
def test_evidence_passages_are_common_substrings(original: str, reprint: str) -> None:
    """Each evidence passage is the same text at its offsets in both normalized texts."""
    dd = Deduper()
    dd.add("a", original)
    d = dd.add("b", reprint)
    assert d.is_duplicate
    assert 1 <= len(d.evidence) <= 10
    a_text, b_text = dd.sketch(reprint).text, dd.sketch(original).text
    for p in d.evidence:
        assert len(p.text) >= 6
        assert a_text[p.a_start : p.a_end] == p.text == b_text[p.b_start : p.b_end]
        assert p.text.replace(" ", "") in normalize(reprint).replace(" ", "")
        assert p.text.replace(" ", "") in normalize(original).replace(" ", "")
    lengths = [p.length for p in d.evidence]
    assert lengths == sorted(lengths, reverse=True)


def test_no_evidence_without_explain() -> None:
    """explain=False leaves evidence empty and changes nothing else."""
    plain, explained = Deduper(explain=False), Deduper()
    for dd in (plain, explained):
        dd.add("a", ZH)
    d1, d2 = plain.add("b", ZH_REPRINT), explained.add("b", ZH_REPRINT)
    assert d1.evidence == () and d2.evidence
    assert fields(d1) == fields(d2)


def chain(seed: int = 4) -> tuple[list[str], list[str]]:
    """A, then B = A + Y, then C = Y + Z: C matches only B, B matches A."""
    rng = random.Random(seed)
    x = "".join(zh_sentence(rng) for _ in range(4))
    y = "".join(zh_sentence(rng) for _ in range(4))
    z = zh_sentence(rng) + zh_sentence(rng)
    return ["A", "B", "C"], [x, x + "\n" + y, y + "\n" + z]


def test_cluster_label_is_the_first_seen() -> None:
    """Documents that extend a story with text of their own are kept, in the cluster of the
    story's first document, and say what they extend."""
    ids, texts = chain()
    d = assert_batch_equals_stream(ids, texts)
    assert [x.duplicate_of for x in d] == [None, None, None]
    assert [x.extends for x in d] == [None, "A", "B"]
    assert [x.cluster for x in d] == ["A", "A", "A"]


def test_a_copy_of_a_document_that_extends_joins_its_story() -> None:
    """A copy of B (which extends A) is dropped as a copy of B, in A's cluster."""
    ids, texts = chain()
    d = assert_batch_equals_stream([*ids, "D"], [*texts, texts[1]])
    assert [(x.is_duplicate, x.duplicate_of, x.cluster) for x in d][-1] == (True, "B", "A")


def test_keep_longest_names_cluster_after_longest() -> None:
    """keep='longest' keeps the longest text of each cluster and names the cluster after it."""
    ids, texts = chain()
    d = dedup_batch(ids, texts, keep="longest").decisions
    # A is all in B: a copy of the kept one; C brings text of its own and is kept
    assert [(x.is_duplicate, x.cluster) for x in d] == [(True, "B"), (False, "B"), (False, "B")]
    assert [x.duplicate_of for x in d] == ["B", None, None]
    assert [x.extends for x in d] == [None, None, "B"]


@pytest.mark.parametrize(
    ("timestamps", "kept", "dropped"),
    [
        ([3.0, 1.0, 2.0], "B", ["A"]),
        ([5.0, 9.0, 1.0], "C", []),
        ([None, None, 4.0], "C", []),
        ([2.0, 2.0, 2.0], "A", []),
    ],
)
def test_keep_earliest_uses_timestamps(
    timestamps: list[float | None], kept: str, dropped: list[str]
) -> None:
    """keep='earliest' keeps the earliest timestamp; a missing one never wins; ties keep the
    first; only documents that the kept one covers are dropped (A is all in B, not in C)."""
    ids, texts = chain()
    d = dedup_batch(ids, texts, keep="earliest", timestamps=timestamps).decisions
    assert [x.cluster for x in d] == [kept] * 3
    assert [x.id for x in d if x.is_duplicate] == dropped
    assert next(x for x in d if x.id == kept).extends is None


@pytest.mark.parametrize("keep", ["longest", "earliest"])
@pytest.mark.parametrize("kind", ["identical", "edited"])
def test_the_document_a_story_keeps_is_kept_when_it_is_a_copy(keep: str, kind: str) -> None:
    """A reprint dated before its original (or longer by a line it is still a copy with) is
    what keep='earliest' ('longest') keeps: kept and naming the story, not dropped with the
    original it copies (both were dropped, and the story lost)."""
    first = ZH + "记者从临江地铁集团获悉，5号线周末照常运营。"
    later = first if kind == "identical" else first.replace("周末", "周六和周日", 1)
    d = dedup_batch(["a", "b"], [first, later], keep=keep, timestamps=[2.0, 1.0]).decisions  # type: ignore[arg-type]
    assert dedup_batch(["a", "b"], [first, later]).decisions[1].is_duplicate  # a copy of a
    kept = "b" if keep == "earliest" or kind == "edited" else "a"
    assert [x.cluster for x in d] == [kept, kept]
    assert [x.id for x in d if not x.is_duplicate] == [kept]
    assert all(x.duplicate_of == kept for x in d if x.is_duplicate)


@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(["zh", "en", "mixed", "all"]),
    st.sampled_from(["longest", "earliest"]),
)
@settings(max_examples=12, deadline=None)
def test_every_story_keeps_a_document_whatever_the_keep_policy(
    seed: int, lang: str, keep: str
) -> None:
    """Nothing is lost: the stories are those of keep='first', the document naming each is
    kept, and a duplicate names a document of its own story."""
    ids, texts = corpus(seed, lang)
    rng = random.Random(seed)
    stamps = [rng.choice([None, 1.0, 2.0, 3.0, 4.0]) for _ in ids]
    first = dedup_batch(ids, texts).decisions
    d = dedup_batch(ids, texts, keep=keep, timestamps=stamps).decisions  # type: ignore[arg-type]
    by_id = {x.id: x for x in d}

    def stories(decisions: list[Decision]) -> set[frozenset[str]]:
        members: dict[str, set[str]] = {}
        for x in decisions:
            members.setdefault(x.cluster, set()).add(x.id)
        return {frozenset(m) for m in members.values()}

    assert stories(d) == stories(first)
    assert not any(by_id[x.cluster].is_duplicate for x in d)
    assert all(by_id[str(x.duplicate_of)].cluster == x.cluster for x in d if x.is_duplicate)


def test_keep_earliest_without_timestamps_keeps_first() -> None:
    """keep='earliest' with no timestamps at all falls back to the first seen."""
    ids, texts = chain()
    d = dedup_batch(ids, texts, keep="earliest").decisions
    assert [fields(x) for x in d] == [fields(x) for x in dedup_batch(ids, texts).decisions]


def test_keep_policies_leave_singletons_alone() -> None:
    """A document alone in its cluster is kept whatever the policy."""
    ids, texts = ["zh", "en"], [ZH, EN]
    for keep in ("first", "longest", "earliest"):
        d = dedup_batch(ids, texts, keep=keep, timestamps=[2.0, 1.0]).decisions  # type: ignore[arg-type]
        assert [(x.is_duplicate, x.cluster) for x in d] == [(False, "zh"), (False, "en")]


@pytest.mark.parametrize(
    "text", [*NOISE, "来源：新华网 编辑：张三\n版权所有 未经授权禁止转载\n首页 > 新闻 > 正文"]
)
def test_documents_without_story_are_kept_alone(text: str) -> None:
    """Texts with no story match no story; only their byte-identical copies match them."""
    ids = ["s1", "e1", "e2", "s2", "e3"]
    texts = [ZH, text, text, EN, text]
    d = assert_batch_equals_stream(ids, texts)
    assert [x.is_duplicate for x in d] == [False, False, True, False, True]
    assert [(x.duplicate_of, x.measure) for x in d if x.is_duplicate] == [("e1", "identical")] * 2
    assert Deduper().sketch(text).is_empty


def test_ten_megabyte_document() -> None:
    """A 10 MB document is sketched and decided, and its cut copy is found."""
    rng = random.Random(10)
    paragraphs = [zh_sentence(rng) * 4 + en_sentence(rng) for _ in range(400)]
    text = "\n".join(paragraphs)
    text = (text + "\n") * (10_000_000 // len(text.encode("utf-8")) + 1)
    assert len(text.encode("utf-8")) >= 10_000_000
    dd = Deduper()
    assert not dd.check_and_add("big", text).is_duplicate
    d = dd.check_and_add("half", text[: len(text) // 2])
    assert d.is_duplicate and d.duplicate_of == "big"


def test_input_validation() -> None:
    """Non-string text, mismatched lengths, repeated ids and unknown policies are refused."""
    dd = Deduper()
    with pytest.raises(InputError, match="must be a str, not bytes"):
        dd.check_and_add("a", b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="2 ids for 1 texts"):
        dedup_batch(["a", "b"], ["x"])
    with pytest.raises(InputError, match="unique"):
        dedup_batch(["a", "a"], ["x", "y"])
    with pytest.raises(ConfigError, match="'newest'"):
        dedup_batch(["a"], ["x"], keep="newest")  # type: ignore[arg-type]


def test_batch_counts() -> None:
    """dedup_batch reports how many candidate pairs it found and how many verified."""
    ids, texts = chain()
    result = dedup_batch(ids, texts)
    assert result.verified_pairs == sum(d.match is not None for d in result.decisions) == 2
    assert result.candidate_pairs >= 2
    assert dedup_batch([], []).decisions == []


def test_config_is_used() -> None:
    """A stricter threshold turns a lightly edited reprint into a new story."""
    strict = dataclasses.replace(DedupConfig(), threshold=1.0)
    assert stream(["a", "b"], [ZH, ZH_REPRINT], strict)[1].is_duplicate is False
    assert stream(["a", "b"], [ZH, ZH_REPRINT])[1].is_duplicate is True


@given(st.lists(st.lists(st.integers(0, 12), max_size=20), max_size=12))
@settings(max_examples=200, deadline=None)
def test_first_texts_finds_the_first_of_each_text(blocks: list[list[int]]) -> None:
    """The batch run's index of exact texts (sorted runs, merged as they grow) gives each
    text the position of the first with its key, as a dict does, block after block; keys
    use all 64 bits."""
    from neardup.batch import _FirstTexts

    index, model, at = _FirstTexts(), {}, 0
    for block in blocks:
        keys = np.array([(k * 0x9E3779B97F4A7C15) % 2**64 for k in block], dtype=np.uint64)
        where = np.arange(at, at + 2 * len(block), 2, dtype=np.int64)  # positions may skip
        want = [model.setdefault(int(k), int(p)) for k, p in zip(keys, where, strict=True)]
        assert index.first(keys, where).tolist() == want
        at += 2 * len(block) + 1


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_compact_store_writes_the_forms_made_where_documents_were_prepared(
    kind: str, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    """A compact Redis store's preparation carries what the store writes of each sketch
    (its compact sketch, its story's logged slots, its compressed text), made where it was
    prepared (a service's worker), through a pickle as the service sends it, and the
    deciding Deduper makes none of them again; a SQLite file's leaves them to the decider.
    Either way the store holds the same bytes as after ``check_and_add_many``."""
    import pickle

    from neardup.deduper import Prepared
    from neardup.engine import compact as compact_module

    ids, texts = corpus(41, "zh")
    docs = list(zip(ids, texts, strict=True))

    def url(name: str) -> str:
        if kind == "sqlite":
            return f"sqlite:///{tmp_path / name}.db?keep_text=1"
        server = request.getfixturevalue("redis_server")
        return f"{server}?namespace=t{tmp_path.name[-12:]}{name}&keep_text=1"

    with Deduper(store=url("direct")) as direct:
        expected = direct.check_and_add_many(docs)
    with Deduper(store=url("decided")) as dd, Deduper(store=url("decided")) as preparing:
        prepared = preparing.prepare(docs)
        ahead = kind == "redis"
        assert preparing.store.forms_ahead is ahead
        assert prepared.sketches
        assert set(prepared.forms) == (set(prepared.sketches) if ahead else set())
        prepared = pickle.loads(pickle.dumps(prepared))
        made = []
        real = compact_module.compact
        compact_module.compact = lambda sk: made.append(sk) or real(sk)
        try:
            got = dd.decide_prepared(Prepared.join([prepared]), add=True)
        finally:
            compact_module.compact = real
        assert (made == []) is ahead
        assert [(d.id, d.duplicate_of, d.cluster) for d in got] == [
            (d.id, d.duplicate_of, d.cluster) for d in expected
        ]
        kept = [d.id for d in got if not d.is_duplicate]
        with Deduper(store=url("direct")) as again:
            want = again.store.sketches(ids)
            assert {i: compact_module.encode(c) for i, c in dd.store.sketches(ids).items()} == {
                i: compact_module.encode(c) for i, c in want.items()
            }
            assert dd.store.texts(kept) == again.store.texts(kept)
            log, want_log = dd.store.log_stories(0, 1000), again.store.log_stories(0, 1000)
            assert [(i, slots.tolist()) for i, slots in log.stories] == [
                (i, slots.tolist()) for i, slots in want_log.stories
            ]


def test_documents_prepared_elsewhere_are_decided_as_added_at_once(
    store_url: str, tmp_path: Any
) -> None:
    """``prepare`` in one Deduper (the service's workers), two preparations joined and
    ``decide_prepared`` in another (its decider): the decisions and what is stored of
    ``check_and_add_many`` on the same documents; ``add=False`` adds nothing; a bad document
    is refused where it is prepared."""
    from neardup.deduper import Prepared

    ids, texts = corpus(73, "zh")
    docs = list(zip(ids[:40], texts[:40], strict=True))
    other = f"sqlite:///{tmp_path / 'other.db'}"
    with Deduper(store=other) as one:
        expected = one.check_and_add_many(docs)
    assert any(d.is_duplicate for d in expected) and any(not d.is_duplicate for d in expected)
    with Deduper(store=store_url) as dd, Deduper(store=store_url) as preparing:
        parts = [preparing.prepare(docs[:7]), preparing.prepare(docs[7:])]
        assert [len(p) for p in parts] == [7, len(docs) - 7]
        checked = dd.decide_prepared(Prepared.join(parts), add=False)
        assert not dd.store.entries([i for i, _ in docs])
        got = dd.decide_prepared(Prepared.join(parts), add=True)
        key = [(d.id, d.is_duplicate, d.duplicate_of, d.cluster, d.extends) for d in got]
        assert key == [
            (d.id, d.is_duplicate, d.duplicate_of, d.cluster, d.extends) for d in expected
        ]
        assert [d.id for d in checked] == [d.id for d in got]
        assert set(dd.store.entries([i for i, _ in docs])) == {i for i, _ in docs}
        with pytest.raises(InputError, match="document 'x': text must be a str"):
            preparing.prepare([("y", "正文。"), {"id": "x", "text": None}])


def _break_in(run: BatchRun, *, half_message: bool) -> None:
    """Kill one of a run's sketch workers with SIGKILL, as the kernel's out-of-memory killer
    does; with ``half_message``, as it sends a chunk back: the results' pipe is left holding
    the start of a message (its length, then some of it) and its lock taken, so the pool's
    thread waits for the rest and never sees the worker gone."""
    import signal
    import struct

    pool = run._pool
    assert pool is not None
    if half_message:
        results = pool._result_queue
        assert results._wlock.acquire(timeout=30)  # no worker is halfway through its own
        os.write(results._writer.fileno(), struct.pack("!i", 1000) + b"\x80\x04 half")
        time.sleep(0.2)  # the pool's thread is reading it
    worker = next(iter(pool._processes.values()))
    os.kill(worker.pid, signal.SIGKILL)
    if not half_message:
        # the pool sees a worker gone only when no result is waiting to be read: until it
        # does, so that a killed worker that held no chunk is not missed as the run ends
        deadline = time.monotonic() + 30
        while not pool._broken and time.monotonic() < deadline:
            time.sleep(0.01)


def test_more_sketch_workers_than_memory_holds_start_as_many_as_it_holds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    """``workers=N`` past what half the memory the process may use holds at 256 MiB each
    (:func:`neardup.machine.workers_memory_holds`) starts that many, with a WorkersCapped
    warning that the command line prints as one line (1,000 asked of a 2-core machine
    forked 1,000), and decides as a run in one process."""
    from neardup import machine
    from neardup.cli import main
    from neardup.errors import WorkersCapped

    monkeypatch.setattr(machine, "workers_memory_holds", lambda: 2)
    ids, texts = _with_copies(6)
    alone = dedup_batch(ids, texts, workers=1, chunk=3)
    with pytest.warns(WorkersCapped, match="^9 sketch workers asked for; .* holds 2 at 256 MiB"):
        capped = dedup_batch(ids, texts, workers=9, chunk=3)
    assert (capped.sketch_workers, capped.decisions) == (2, alone.decisions)
    src = tmp_path / "in.jsonl"
    lines = (json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts, strict=True))
    src.write_text("".join(lines))
    out = ["-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c"), "-q"]
    assert main(["dedup", str(src), *out, "--workers", "9"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert said == [
        "neardup: warning: 9 sketch workers asked for; half the memory this process may use "
        "holds 2 at 256 MiB each: starting 2"
    ]


@pytest.mark.parametrize("half_message", [False, True], ids=["killed", "killed sending"])
def test_a_run_whose_worker_is_killed_sketches_the_rest_itself(half_message: bool) -> None:
    """A sketch worker killed under the run (the out-of-memory killer): the chunks on their
    way and the rest are sketched by the run's own process, the joins stay in their thread
    and in order, and the decisions are those of a run without workers; a WorkersLost
    warning says so. Killed as it sends a chunk back, the pool's thread would wait for the
    rest of the message for ever (and the run with it)."""
    from neardup.errors import WorkersLost

    ids, texts = _with_copies(6)
    alone = dedup_batch(ids, texts, workers=1, chunk=3).decisions
    handed: list[Decision] = []
    with (
        pytest.warns(WorkersLost, match="a sketch worker process"),
        BatchRun(DedupConfig(), chunk=3, workers=2, chars=None, hand_out=True) as run,
    ):
        run.MIN_CHUNK, run.POLL_EVERY, run.WORKER_CHECK = 3, 1, 0.2
        join = run._candidates

        lost = threading.Event()

        def slow(*args: object) -> object:
            if threading.current_thread().name.startswith("neardup-join"):
                # joins wait in their thread as the workers go, the longer once they went
                time.sleep(0.3 if lost.is_set() else 0.01)
            return join(*args)  # type: ignore[arg-type]

        run._candidates = slow  # type: ignore[method-assign]
        for k, (doc_id, text) in enumerate(zip(ids, texts, strict=True)):
            if k == len(ids) // 3:
                lost.set()
                _break_in(run, half_message=half_message)
            run.add(doc_id, text)
            handed += run.take()
        rest = run.finish().decisions
        assert run._pool is None and run._joiner is None
    assert [fields(d) for d in handed + rest] == [fields(d) for d in alone]
    assert not _join_threads()


_SKETCH_PACKED = batch_module._sketch_packed


def _sketch_short_of_memory(texts: list[str], cfg: DedupConfig, name: str) -> object:
    """A sketch worker's job that runs out of memory from the 7th document sent on (the
    block's name ends with the number of documents sent before the chunk)."""
    if int(name.rsplit("_", 1)[1]) >= 6:
        raise MemoryError
    return _SKETCH_PACKED(texts, cfg, name)


def test_a_run_whose_worker_runs_out_of_memory_sketches_the_rest_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A MemoryError in a sketch worker (not killed: Python could not allocate) is not the
    run's end either: the chunks it and the others could not sketch, and the rest, are
    sketched by the run's own process, with the decisions of a run without workers."""
    from neardup.errors import WorkersLost

    ids, texts = _with_copies(7)
    alone = dedup_batch(ids, texts, workers=1, chunk=3).decisions
    monkeypatch.setattr(batch_module, "_sketch_packed", _sketch_short_of_memory)
    with (
        pytest.warns(WorkersLost, match="a sketch worker process ran out of memory"),
        BatchRun(DedupConfig(), chunk=3, workers=2, chars=None) as run,
    ):
        run.MIN_CHUNK = 3
        for doc_id, text in zip(ids, texts, strict=True):
            run.add(doc_id, text)
        decisions = run.finish().decisions
        assert run._pool is None and run._pool_lost
    assert [fields(d) for d in decisions] == [fields(d) for d in alone]


def test_batches_of_a_shape_the_deduper_does_not_take_are_named() -> None:
    """A tuple of one value or three, a bare string: an InputError naming the document's
    place in the batch and the shapes taken (an IndexError and an AttributeError before)."""
    with Deduper() as d:
        for batch, said in (
            ([("a", "x"), ("b",)], "document 1 of the batch: a tuple must be (id, text), not 1"),
            ([("a", "x", "title")], "document 0 of the batch: a tuple must be (id, text), not 3"),
            (["just text"], "document 0 of the batch is str: give an (id, text) tuple"),
        ):
            with pytest.raises(InputError, match=re.escape(said)):
                d.check_and_add_many(batch)  # type: ignore[arg-type]
        assert d.stats()["documents"] == 0  # nothing of a refused batch is added


def test_prune_takes_any_time_a_timestamp_may_be_and_clusters_its_bounds() -> None:
    """prune(before=) reads '2024-06-01' or a datetime as a record's timestamp is read (a
    TypeError from the store before); clusters() refuses a negative limit or offset (SQL's
    LIMIT -1 is no limit at all)."""
    from datetime import datetime

    with Deduper() as d:
        d.check_and_add("old", ZH, timestamp="2024-05-01")
        d.check_and_add("new", EN, timestamp="2024-07-01")
        assert d.prune(before="2024-06-01") == 1
        assert d.prune(before=datetime(2024, 8, 1)) == 1
        with pytest.raises(ConfigError, match="prune before: cannot read 'soon' as a time"):
            d.prune(before="soon")
        for bad in ({"limit": -1}, {"offset": -5}, {"limit": 2.5}):
            with pytest.raises(ConfigError, match="must be a whole number of 0 or more"):
                d.clusters(**bad)  # type: ignore[arg-type]


def test_dedup_batch_reads_timestamps_as_records_and_names_bad_inputs() -> None:
    """dedup_batch's timestamps are read as a record's (ISO 8601, datetimes; NaN and NaT are
    none), from any iterables; a text that is no string, a bad time or a count that differs
    is an error naming the document (a TypeError, AttributeError or numpy's ValueError
    before, and a string time could not be given at all)."""
    from datetime import datetime

    texts = [ZH, ZH, ZH]
    stamps = [float("nan"), "2024-01-02T00:00:00+08:00", datetime(2024, 1, 3)]
    d = dedup_batch(iter(["a", "b", "c"]), iter(texts), keep="earliest", timestamps=stamps)
    assert [(x.id, x.is_duplicate, x.cluster) for x in d.decisions] == [
        ("a", True, "b"),
        ("b", False, "b"),
        ("c", True, "b"),
    ]
    arrays = dedup_batch(["a", "b"], [ZH, ZH], keep="earliest", timestamps=np.array([2, 1]))
    assert [x.is_duplicate for x in arrays.decisions] == [True, False]  # numpy's numbers
    with Deduper() as dd:  # a DataFrame row's missing time is none, as dedup_batch reads it
        assert dd.check_and_add("n", ZH, timestamp=float("nan")).cluster == "n"
        assert dd.check_and_add("t", EN, timestamp=np.datetime64("NaT", "ns")).cluster == "t"
    with pytest.raises(InputError, match="document 'b': text must be a str, not bytes"):
        dedup_batch(["a", "b"], [ZH, b"x"])  # type: ignore[list-item]
    with pytest.raises(InputError, match="document 'a': cannot read 'soon' as a time"):
        dedup_batch(["a"], [ZH], keep="earliest", timestamps=["soon"])
    with pytest.raises(ConfigError, match="2 ids for 1 timestamps"):
        dedup_batch(["a", "b"], [ZH, EN], timestamps=[1.0])


def test_dedup_batch_ids_are_labels_given_back_and_a_bad_one_is_named() -> None:
    """A DataFrame's integer index names its documents and comes back as it came; a
    repeated id is named with both its places (the message named none), and a missing one
    (None or a frame's NaN, taken as an id before) or one that cannot be hashed is an
    InputError naming its place (a bare TypeError before)."""
    d = dedup_batch(np.array([10, 11]), [ZH, ZH])
    assert [(x.id, x.cluster) for x in d.decisions] == [(10, 10), (11, 10)]
    bad: list[tuple[list[object], str]] = [
        (["a", "b", "a"], "ids must be unique within a batch: 'a' names documents 0 and 2"),
        (["a", None], r"document 1 has no id \(None\)"),
        ([float("nan"), "b"], r"document 0 has no id \(nan\)"),
        ([["a"], "b"], "document 0's id is list, which cannot name a document"),
    ]
    for ids, message in bad:
        with pytest.raises(InputError, match=message):
            dedup_batch(ids, [ZH, EN, ZH][: len(ids)])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("window", "seconds"),
    [
        (timedelta(days=90), 7_776_000.0),
        ("90 days", 7_776_000.0),
        ("12 Hours", 43_200.0),
        ("30 min", 1_800.0),
        ("2w", 1_209_600.0),
        (np.int64(3600), 3_600.0),
    ],
)
def test_a_window_is_a_timedelta_a_span_in_words_or_numpy_seconds(
    window: object, seconds: float
) -> None:
    """Deduper(window=) (and --window, NEARDUP_WINDOW, ?ttl=) takes a timedelta and units in
    words (a ConfigError before); an infinite span is refused (None is no window)."""
    from neardup.times import parse_window

    assert Deduper(window=window).window == seconds  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="window must be a finite span"):
        parse_window(float("inf"))
    with pytest.raises(ConfigError, match="window must be a number of seconds"):
        parse_window("5 months")
