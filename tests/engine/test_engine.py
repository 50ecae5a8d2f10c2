"""The engine: sketches, and the verification of a candidate pair by coverage, numbers,
fragment length and, for titles, character measures."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
from unittest import mock

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.engine import (
    MAX_VERIFY_CHARS,
    CommonShingles,
    DedupConfig,
    Sketch,
    Verdict,
    alike,
    best_of,
    distinct,
    distinct_with_index,
    estimated_containment,
    light,
    make_sketch,
    make_sketches,
    may_verify,
    required,
    store_fingerprint,
    to_verify,
    verify,
)
from neardup.engine import compact as compact_sketch
from neardup.engine.templates import (
    MAX_COUNT,
    NOISE,
    PASSAGE_REST,
    SLOT_BITS,
    chrome_passage_for,
    common_after_for,
    crowding,
    holds,
    passages,
    window_for,
)
from neardup.errors import ConfigError
from neardup.normalize import Normalizer

CFG = DedupConfig()

ZH_STORY = (
    "1月18日上午9时，临江市轨道交通5号线一期工程正式开通初期运营。该线路西起滨江新城站，东至高铁东站，"
    "全长24.6公里，全部为地下线，共设车站18座，其中换乘站5座。\n"
    "据临江地铁集团介绍，5号线采用最高时速100公里的A型列车，开通初期高峰时段行车间隔为4分30秒，"
    "从滨江新城到高铁东站全程约需45分钟，比地面公交节省一个多小时。\n"
    "为方便市民出行，沿线各站均设置了无障碍电梯和母婴室，并在部分车站出入口增设了非机动车停放区。"
    "地铁集团提醒乘客，开通首周客流较大，请合理安排出行时间，注意乘车安全。\n"
    "按照规划，5号线二期工程将向东延伸至临港新区，预计2029年建成通车，届时全线长度将超过40公里。"
)
ZH_OTHER = (
    "1月25日，位于市文化中心片区的临江市图书馆新馆正式对外开放。新馆建筑面积5.8万平方米，设有少儿阅览区、"
    "古籍文献区、数字体验区和24小时自助阅览室，馆藏纸质图书约320万册。\n"
    "开馆当天，不少市民一早就在门口排队等候入馆。图书馆负责人表示，新馆实行免费开放，读者凭身份证或社保卡"
    "即可办理借阅，每人每次最多可借图书10册，借期为30天。\n"
    "据介绍，新馆还引入了智能书架和自助借还系统，读者可以通过手机查询图书位置，预约借书后到指定柜台取书。"
    "老馆将改造为地方文献研究中心，预计明年下半年完成改造。"
)
EN_STORY = (
    "HARBORVIEW - The city's first light rail line opened to passengers on Saturday morning, connecting "
    "the downtown waterfront with the international airport in about 25 minutes. Thousands of riders "
    "lined up at the twelve stations along the route, and the first trains left the waterfront "
    "terminal shortly after six.\n"
    "The line cost 1.4 billion dollars and took six years to build. Officials said it would carry about "
    "40,000 passengers a day within its first year, easing traffic on the coastal highway that links "
    "the city center with the airport and the new convention district.\n"
    "Mayor Elena Ortiz, who rode the first train, called the opening a turning point for the region. "
    "Fares will be free for the first week, after which a single ride will cost two dollars fifty. "
    "Trains will run every eight minutes at peak hours and every fifteen minutes late at night.\n"
    "Planners are already studying a second line that would run north toward the university campus "
    "and the hospital district, although funding for that project has not yet been approved."
)
EN_OTHER = (
    "NORTHFIELD - A team at Northfield University says it has engineered an enzyme that can break "
    "down common plastic bottles in a matter of days rather than centuries. The researchers modified "
    "a natural enzyme found in bacteria living at a recycling plant, making it work faster at lower "
    "temperatures.\n"
    "In laboratory tests, the enzyme broke down more than 90 percent of shredded bottles within four "
    "days. The building blocks it leaves behind can be turned back into new bottles of the same "
    "quality, which the team says could make the material endlessly recyclable.\n"
    "Outside experts welcomed the results but cautioned that scaling the process to industrial "
    "volumes would be costly, and that collecting and sorting plastic remains the biggest hurdle."
)
MIXED_STORY = (
    "3月26日晚间，云帆科技（Yunfan Technology）发布2025年年度报告。报告显示，公司全年实现营业收入86.7亿元，"
    "同比增长18.4%，其中海外业务收入首次突破20亿元，主要来自Southeast Asia和Middle East市场。\n"
    "公司董事长陈立表示，AI大模型和cloud computing业务是增长最快的板块，全年收入同比增长超过60%。"
    "公司计划在2026年继续加大研发投入，重点布局edge computing和智能制造解决方案。\n"
    "年报同时披露了利润分配预案：拟向全体股东每10股派发现金红利3.2元（含税），合计派现约4.1亿元。"
    "分析人士认为，在行业整体承压的背景下，云帆科技的业绩表现好于市场预期。"
)

ZH_FRAME = (
    "来源：江城晚报 2026-01-18 编辑：李四\n",
    "\n点击下方关注我们，获取更多资讯。\n版权所有 未经授权禁止转载",
)
EN_FRAME = (
    "Home > News > Local\nBy Jane Doe, Example Times\n",
    "\nClick here to subscribe to our newsletter.\nCopyright 2026 Example Media. All rights reserved.",
)
ZH_TEMPLATE = (
    "\n市民如遇紧急情况，可拨打12345市民服务热线或110报警电话求助。请广大市民关注官方发布的权威信息，"
    "不信谣、不传谣，共同维护良好的社会秩序。"
)
EN_TEMPLATE = (
    "\nAnyone with information is asked to call the city hotline at 311. Sign-ups for emergency text "
    "alerts are available on the city website, and residents are encouraged to check on neighbors."
)


def with_typos(text: str, n: int, seed: int) -> str:
    """``text`` with ``n`` letters or characters replaced by wrong ones."""
    rng = random.Random(seed)
    chars = list(text)
    spots = [i for i, c in enumerate(chars) if c.isalnum()]
    for i in rng.sample(spots, n):
        chars[i] = "错" if "\u4e00" <= chars[i] <= "\u9fff" else "x"
    return "".join(chars)


def pair(a: str, b: str, cfg: DedupConfig = CFG) -> tuple[Sketch, Sketch]:
    """Sketches of two texts under one configuration."""
    return make_sketch(a, cfg), make_sketch(b, cfg)


@pytest.mark.parametrize(
    ("story", "frame"),
    [(ZH_STORY, ZH_FRAME), (EN_STORY, EN_FRAME), (MIXED_STORY, ZH_FRAME), (MIXED_STORY, EN_FRAME)],
    ids=["zh", "en", "mixed-zh-frame", "mixed-en-frame"],
)
def test_truncated_reprint_with_typos_is_duplicate(story: str, frame: tuple[str, str]) -> None:
    """A reprint cut to half, with typos and its own site header and footer, verifies by coverage."""
    header, footer = frame
    reprint = header + with_typos(story[: len(story) // 2], 3, seed=len(story)) + footer
    a, b = pair(story, reprint)
    for v in (verify(a, b, CFG), verify(b, a, CFG)):
        assert v.is_duplicate
        assert v.measure == "coverage"
        assert 0.9 <= v.score < 1.0  # each typo uncovers a unit


@pytest.mark.parametrize(
    ("story", "other", "frame"),
    [
        (ZH_STORY, ZH_OTHER, ZH_FRAME),
        (EN_STORY, EN_OTHER, EN_FRAME),
        (MIXED_STORY, ZH_OTHER, ZH_FRAME),
        (MIXED_STORY, EN_OTHER, EN_FRAME),
    ],
    ids=["zh", "en", "mixed-zh", "mixed-en"],
)
@pytest.mark.parametrize("strip", [True, False], ids=["stripped", "unstripped"])
def test_different_stories_sharing_a_frame_are_not_duplicates(
    story: str, other: str, frame: tuple[str, str], strip: bool
) -> None:
    """Two stories of one site, same header and footer, are not duplicates of each other."""
    cfg = dataclasses.replace(CFG, strip_boilerplate=strip)
    header, footer = frame
    a, b = pair(header + story + footer, header + other + footer, cfg)
    v = verify(a, b, cfg)
    assert not v.is_duplicate
    assert v.score < 0.3


@pytest.mark.parametrize(
    ("story", "other", "template"),
    [(ZH_STORY, ZH_OTHER, ZH_TEMPLATE), (EN_STORY, EN_OTHER, EN_TEMPLATE)],
    ids=["zh", "en"],
)
def test_different_stories_sharing_a_template_paragraph(
    story: str, other: str, template: str
) -> None:
    """A shared closing paragraph covers only itself: below the threshold, even unfiltered."""
    cfg = dataclasses.replace(CFG, prefilter=0.0)
    a, b = pair(story + template, other + template, cfg)
    v = verify(a, b, cfg)
    assert not v.is_duplicate
    assert 0.1 < v.score < cfg.threshold


EARNINGS = (
    "{co} reported on Tuesday that first-quarter net profit rose {p} percent from a year earlier to "
    "{np} million dollars, or {eps} dollars per share, on revenue of {rev} million dollars. Analysts "
    "had expected earnings of {est} dollars per share. The company kept its full-year forecast "
    "unchanged and said it would pay a quarterly dividend of {div} cents per share."
)
WEATHER = (
    "临江市气象台{d}时发布暴雨橙色预警信号：受高空低槽和西南暖湿气流共同影响，预计未来{h}小时内，"
    "我市大部分地区将出现暴雨，累计雨量{lo}至{hi}毫米，局地可超过{mx}毫米，最大小时雨强{ph}毫米。"
    "请有关单位和人员做好防御工作，注意防范山洪、地质灾害和城市内涝。"
)
Q1 = {"co": "Brightline Logistics", "p": 12, "np": "48.2", "eps": "1.15", "rev": 612}
Q1 |= {"est": "1.02", "div": 25}
Q2 = {"co": "Brightline Logistics", "p": 8, "np": "39.6", "eps": "0.94", "rev": 577}
Q2 |= {"est": "0.90", "div": 22}
MAY = {"d": "5月14日10", "h": 24, "lo": 80, "hi": 120, "mx": 150, "ph": 60}
JUNE = {"d": "6月22日16", "h": 12, "lo": 60, "hi": 100, "mx": 130, "ph": 50}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (EARNINGS.format(**Q1), EARNINGS.format(**Q2)),
        (WEATHER.format(**MAY), WEATHER.format(**JUNE)),
    ],
    ids=["earnings-en", "weather-zh"],
)
def test_templated_items_with_other_figures_are_not_duplicates(a: str, b: str) -> None:
    """Same template, different figures: the numbers check caps the score below half."""
    x, y = pair(a, b)
    v = verify(x, y, CFG)
    assert not v.is_duplicate
    assert v.score < 0.5
    assert len(x.numbers) >= 2


@settings(max_examples=300)
@given(
    st.lists(
        st.sampled_from(["1", "23", "2023", "٣", ".", ",", ":", "/", "-", "a", " ", "\n"]),
        max_size=30,
    ),
    st.integers(0, 40),
    st.integers(0, 40),
)
def test_figures_within_a_span_are_those_a_reading_from_the_start_finds(
    pieces: list[str], lo: int, hi: int
) -> None:
    """The figure rule reads only the shared span of a text: the same figures as reading
    it all and keeping those that start inside the span."""
    from neardup.engine.sketches import figures_at, figures_within

    text = "".join(pieces)
    assert figures_within(text, lo, hi) == {f for f, at in figures_at(text) if lo <= at <= hi}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            EARNINGS.format(**Q1),
            EARNINGS.format(**Q1).replace(
                "kept its full-year forecast unchanged", "left its outlook for the year as it was"
            ),
        ),
        (
            WEATHER.format(**MAY),
            WEATHER.format(**MAY).replace(
                "请有关单位和人员做好防御工作", "请各有关单位和人员认真做好防御工作"
            ),
        ),
    ],
    ids=["earnings-en", "weather-zh"],
)
def test_templated_items_with_same_figures_are_duplicates(a: str, b: str) -> None:
    """The same item reworded in one clause, figures unchanged, is still a duplicate."""
    v = verify(*pair(a, b), CFG)
    assert v.is_duplicate
    assert v.measure == "coverage"


@pytest.mark.parametrize(
    ("fragment", "story"),
    [
        (
            "今天下午，市公交集团提醒乘客：开通首周客流较大，请合理安排出行时间，注意安全。",
            ZH_STORY,
        ),
        (
            "Fares will be free for the first week, after which a single ride will cost three "
            "dollars, the agency said.",
            EN_STORY,
        ),
    ],
    ids=["zh", "en"],
)
def test_template_fragment_is_not_duplicate_of_long_story(fragment: str, story: str) -> None:
    """A one-sentence fragment that mostly matches a long story needs more than the threshold."""
    cfg = dataclasses.replace(CFG, prefilter=0.0)
    f, s = pair(fragment, story, cfg)
    assert f.n_units >= cfg.short_units  # compared by coverage, not as a title
    v = verify(f, s, cfg)
    assert cfg.threshold <= v.score < required(cfg, f.n_units / s.n_units)
    assert not v.is_duplicate
    assert not verify(f, s, CFG).is_duplicate
    # without the fragment rule the same score would pass the threshold (a sentence found at
    # the end of the story's second half may still be set aside as a sign-off)
    loose = verify(f, s, dataclasses.replace(cfg, fragment_ratio=0.0))
    assert loose.score >= cfg.threshold and (loose.is_duplicate or loose.edges)


def test_required_coverage_rises_below_fragment_ratio() -> None:
    """The bar is the threshold from fragment_ratio up and climbs linearly to 1.0 at ratio 0."""
    assert required(CFG, 1.0) == CFG.threshold
    assert required(CFG, CFG.fragment_ratio) == CFG.threshold
    assert required(CFG, 0.0) == pytest.approx(1.0)
    ratios = np.linspace(0.0, 1.0, 21)
    bars = [required(CFG, float(r)) for r in ratios]
    assert all(x >= y for x, y in itertools.pairwise(bars))
    assert required(CFG, 0.0, base=0.75) == pytest.approx(1.0)
    assert required(CFG, 0.5, base=0.75) == 0.75
    assert required(dataclasses.replace(CFG, fragment_ratio=0.0), 0.01) == CFG.threshold


@pytest.mark.parametrize(
    ("a", "b", "measure", "score"),
    [
        ("北京天气晴朗", "北京天气晴郎", "lcsubstr", 5 / 6),
        ("临江地铁5号线今日开通", "临江地铁5号线今日开通运营", "lcsubstr", 1.0),
        ("Light rail line opens", "Light rail line opens today", "lcsubstr", 1.0),
        ("Apple发布新款iPhone", "Apple发布新款iPad", "lcsubstr", 11 / 13),
    ],
)
def test_titles_use_character_measures(a: str, b: str, measure: str, score: float) -> None:
    """Texts under short_units units are compared with lcsubstr or levenshtein, the better."""
    x, y = pair(a, b)
    assert min(x.n_units, y.n_units) < CFG.short_units
    v = verify(x, y, CFG)
    assert v.measure == measure
    assert v.score == pytest.approx(score)
    assert v.is_duplicate


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("临江地铁5号线今日开通", "青川市气象台发布暴雨预警"),
        ("Light rail line opens", "Maple syrup season ends"),
        ("临江地铁5号线今日开通", "Maple syrup season ends"),
    ],
)
def test_different_titles_are_not_duplicates(a: str, b: str) -> None:
    """Unrelated titles score low and are not duplicates."""
    v = verify(*pair(a, b), CFG)
    assert v.measure in ("lcsubstr", "levenshtein")
    assert not v.is_duplicate
    assert v.score < 0.5


def test_title_threshold_decides_titles() -> None:
    """A title pair scoring 0.83 passes at title_threshold 0.75 and fails at 0.9."""
    a, b = pair("北京天气晴朗", "北京天气晴郎")
    assert verify(a, b, CFG).is_duplicate
    strict = dataclasses.replace(CFG, title_threshold=0.9)
    assert not verify(a, b, strict).is_duplicate


def test_levenshtein_wins_when_better() -> None:
    """A title with one substituted character in the middle scores by levenshtein."""
    v = verify(*pair("临江暴雨橙色预警", "临江暴雨红色预警"), CFG)
    assert v.measure == "levenshtein"
    assert v.score == pytest.approx(7 / 8)


@pytest.mark.parametrize(
    ("a", "b"),
    [(ZH_STORY, ZH_OTHER), (EN_STORY, EN_STORY[:600]), ("北京天气晴朗", "北京天气晴郎")],
)
def test_verify_is_symmetric(a: str, b: str) -> None:
    """Whether two texts are one story does not depend on which came first (whether the
    later one is a copy does: it is about the later one's own text)."""
    x, y = pair(a, b)
    v, w = verify(x, y, CFG), verify(y, x, CFG)
    assert (v.score, v.measure, v.is_duplicate, v.edges) == (
        w.score,
        w.measure,
        w.is_duplicate,
        w.edges,
    )


@pytest.mark.parametrize("text", [ZH_STORY, EN_STORY, MIXED_STORY])
def test_identical_texts_score_one(text: str) -> None:
    """A text verifies against its copy with coverage 1.0."""
    v = verify(*pair(text, text), CFG)
    assert v == v.__class__(1.0, "coverage", True, 1.0, True, repeated=1.0)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("", "", (1.0, "identical", True)),
        ("，。！", "", (0.0, "coverage", False)),
        ("，。！", "，。！", (1.0, "identical", True)),
        ("", ZH_STORY, (0.0, "coverage", False)),
        ("点击下方关注我们，获取更多资讯。", EN_STORY, (0.0, "coverage", False)),
    ],
)
def test_empty_documents(a: str, b: str, expected: tuple[float, str, bool]) -> None:
    """A text with no units matches only an identical text with no units."""
    x, y = pair(a, b)
    assert x.is_empty
    v = verify(x, y, CFG)
    assert (v.score, v.measure, v.is_duplicate) == expected


def test_sketch_contents() -> None:
    """A sketch holds the prepared text, shingle codes, vocabulary, signature, bands, numbers."""
    s = make_sketch("来源：示例网\n" + MIXED_STORY, CFG)
    assert not s.text.startswith("来源")
    assert s.shingles.dtype == np.uint32
    assert s.vocab.tolist() == sorted(set(s.shingles.tolist()))
    assert s.signature.shape == (CFG.num_perm,)
    assert s.bands.shape == (CFG.bands_rows[0],)
    assert set(s.numbers) == {"26", "86.7", "18.4", "20", "60", "10", "3.2", "4.1"}  # no years
    # the lowest bit marks a shingle that starts at a CJK character
    assert s.shingles[0] & 1 == 0  # "3月26日…" starts at a digit
    assert s.shingles[1] & 1 == 1  # "月26日晚间"


def test_make_sketches_equals_make_sketch() -> None:
    """Sketching a batch gives each text the sketch it gets alone."""
    texts = [ZH_STORY, "", EN_STORY, "北京天气晴朗", MIXED_STORY]
    batch = make_sketches(texts, CFG)
    for got, text in zip(batch, texts, strict=True):
        alone = make_sketch(text, CFG)
        assert got.text == alone.text and got.n_units == alone.n_units
        assert got.shingles.tolist() == alone.shingles.tolist()
        assert got.signature.tolist() == alone.signature.tolist()
        assert got.bands.tolist() == alone.bands.tolist()
        assert got.numbers == alone.numbers


def test_vocab_index_places_every_shingle() -> None:
    """A sketch's vocab_index says where each shingle is in its sorted distinct vocab."""
    rng = np.random.default_rng(3)
    for codes in [rng.integers(0, 50, size=n, dtype=np.uint32) for n in (0, 1, 2, 40, 500)]:
        vocab, index = distinct_with_index(codes)
        assert vocab.tolist() == distinct(codes).tolist()
        assert index.dtype == np.uint16 and vocab[index].tolist() == codes.tolist()
    many = np.arange(70_000, dtype=np.uint32) % 66_000  # more shingles than uint16 holds
    vocab, index = distinct_with_index(many)
    assert index.dtype == np.int32 and vocab[index].tolist() == many.tolist()
    for s in make_sketches([ZH_STORY, EN_STORY, "", MIXED_STORY], CFG):
        assert s.vocab_index is not None
        assert s.vocab[s.vocab_index].tolist() == s.shingles.tolist()


def test_verify_is_the_same_without_vocab_index() -> None:
    """Coverage through the vocab index equals coverage looking each shingle up (the path
    for sketches rebuilt from a store or Spark, which carry no index)."""
    texts = [ZH_STORY, ZH_STORY[:150], ZH_OTHER, EN_STORY, EN_STORY[200:], EN_OTHER]
    sketches = make_sketches(texts, CFG)
    bare = [dataclasses.replace(s, vocab_index=None) for s in sketches]
    common = CommonShingles(limit=1)
    common.add(make_sketch(ZH_STORY[:40] + EN_STORY[:80], CFG).vocab)
    for i, j in itertools.permutations(range(len(texts)), 2):
        for guard in (None, common):
            want = verify(bare[i], bare[j], CFG, guard)
            assert verify(sketches[i], sketches[j], CFG, guard) == want
            assert verify(sketches[i], bare[j], CFG, guard) == want


def test_may_verify_agrees_with_verify() -> None:
    """The prefilter over many pairs at once rejects exactly the pairs verify rejects on the
    MinHash estimate alone, and never a pair verify would call a duplicate."""
    texts = [
        ZH_STORY,
        ZH_STORY[:300],
        ZH_STORY[100:],
        ZH_OTHER,
        "北京天气晴朗",
        EN_STORY,
        EN_STORY[:400],
        EN_OTHER,
        MIXED_STORY,
        ZH_OTHER[:60] + EN_STORY[:300],
    ]
    sketches = make_sketches(texts, CFG)
    pairs = list(itertools.permutations(range(len(texts)), 2))

    def figures(side: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            np.stack([sketches[k].signature for k in side]),
            np.array([len(sketches[k].vocab) for k in side]),
            np.array([sketches[k].n_units for k in side]),
        )

    ok = may_verify(figures([p[0] for p in pairs]), figures([p[1] for p in pairs]), CFG)
    assert 0 < ok.sum() < len(pairs)  # some pairs pass, some do not
    for (i, j), passes in zip(pairs, ok.tolist(), strict=True):
        a, b = sketches[i], sketches[j]
        short, other = (a, b) if a.n_units <= b.n_units else (b, a)
        title = short.n_units < CFG.short_units
        assert passes == (title or estimated_containment(short, other) >= CFG.prefilter)
        if not passes:
            assert not verify(a, b, CFG).is_duplicate


def test_long_text_is_verified_on_its_start() -> None:
    """A text longer than MAX_VERIFY_CHARS keeps only its start for verification."""
    text = ("北京天气晴朗，最高气温二十五度。" * (MAX_VERIFY_CHARS // 16 + 10))[
        : MAX_VERIFY_CHARS + 100
    ]
    s = make_sketch(text, DedupConfig(strip_boilerplate=False))
    assert len(s.text) == MAX_VERIFY_CHARS
    assert s.n_units > 0


def test_normalize_and_strip_switches() -> None:
    """normalize=False and strip_boilerplate=False keep the raw text for comparison."""
    raw = "来源：示例网\nＮＥＷＳ 北京天氣晴朗"
    assert make_sketch(raw, CFG).text == "news 北京天气晴朗"
    assert make_sketch(raw, DedupConfig(normalize=False, strip_boilerplate=False)).text == raw


def test_common_shingles_count_stories() -> None:
    """A shingle becomes common once it has been seen in ``limit`` stories."""
    codes = np.array([1 << 20, 2 << 20, 3 << 20], dtype=np.uint32)
    common = CommonShingles(limit=2)
    common.add(codes[:2])
    assert common.is_common(codes).tolist() == [False, False, False]
    common.add(codes[1:])
    assert common.is_common(codes).tolist() == [False, True, False]
    common.add(codes[:1])
    assert common.is_common(codes).tolist() == [True, True, False]


def test_common_shingles_own_pages_keeps_the_counts_in_new_memory() -> None:
    """``own_pages`` moves the table to memory of its own (nothing shared with the table
    before, which a forked child may still read) with the same counts, and counting goes on."""
    codes = np.array([1 << 20, 2 << 20, 3 << 20], dtype=np.uint32)
    common = CommonShingles(limit=2)
    common.add(codes[:2])
    before = common.counts
    kept = before.copy()
    common.own_pages()
    assert not np.shares_memory(before, common.counts)
    assert np.array_equal(before, common.counts)
    common.add(codes[1:])
    assert common.is_common(codes).tolist() == [False, True, False]
    assert np.array_equal(before, kept)  # the old table is no longer written


def test_common_shingles_count_a_story_once() -> None:
    """A shingle repeated within one story counts once."""
    common = CommonShingles(limit=2)
    common.add(np.array([5 << 20, 5 << 20, 5 << 20], dtype=np.uint32))
    assert not common.is_common(np.array([5 << 20], dtype=np.uint32))[0]


def test_common_shingles_saturate() -> None:
    """Counts stop at 255 rather than wrapping around."""
    common = CommonShingles(limit=255)
    code = np.array([7 << 20], dtype=np.uint32)
    for _ in range(300):
        common.add(code)
    assert common.is_common(code).tolist() == [True]


def test_common_shingles_load_factor_counts_stories_a_slot() -> None:
    """The load factor is the stories counted over the table's slots: each story's distinct
    slots once."""
    common = CommonShingles(limit=5)
    assert common.load_factor() == 0.0
    story = np.arange(1000, dtype=np.uint32) << np.uint32(32 - SLOT_BITS)
    common.add(np.concatenate([story, story]))  # a shingle twice in a story counts once
    common.add(story[:500])
    assert common.load_factor() == 1500 / (1 << SLOT_BITS)


def _poisson_at_least(k: int, mean: float) -> float:
    """P(X >= k) for X ~ Poisson(mean), summed as fractions of factorials."""
    return 1.0 - sum(math.exp(-mean) * mean**i / math.factorial(i) for i in range(k))


@given(st.floats(0.01, 40.0), st.integers(1, 30))
def test_common_after_for_is_the_smallest_limit_chance_rarely_reaches(
    load: float, limit: int
) -> None:
    """The common_after a load calls for is at least the one given, reached by a slot of
    unrelated shingles at most NOISE of the time, and the smallest such."""
    better = common_after_for(load, limit)
    assert better >= limit
    assert _poisson_at_least(better, load) <= NOISE + 1e-12
    if better > limit:
        assert _poisson_at_least(better - 1, load) > NOISE - 1e-12
    assert common_after_for(load * 2, limit) >= better


def test_chrome_passage_for_is_the_shortest_run_chance_rarely_fills() -> None:
    """The chrome_passage a load calls for is at least the one given (0 stays off), and the
    shortest run of shingles that unrelated ones fill at most NOISE of the time."""
    assert chrome_passage_for(8.0, 0) == 0 and chrome_passage_for(0.5, 96) == 96
    for load in (2.5, 3.0, 4.0, 6.0):
        n = chrome_passage_for(load, 96)
        shared = 1.0 - math.exp(-load)
        assert shared**n <= NOISE and (n == 96 or shared ** (n - 1) > NOISE)


def test_crowding_speaks_from_a_load_of_one() -> None:
    """Nothing to say while the settings are what the load asks (the defaults, up to a load
    of about 0.73) or with the guard off; past it, a window to forget with and the settings
    to raise; with them raised, nothing."""
    assert crowding(0.5, 5, 96) is None and crowding(0.73, 5, 96) is None
    note = crowding(0.75, 5, 96) or ""
    assert "(--set common_after=6)" in note and "(--set chrome_window=0.36) so that it" in note
    assert crowding(8.0, 0, 96) is None
    note = crowding(2.0, 5, 96)
    assert note is not None and "2.00 stories a slot" in note
    assert "(--set common_after=9)" in note and "chrome_passage" not in note
    assert crowding(2.0, 9, 96) is None
    note = crowding(4.0, 12, 96)
    assert note is not None and "(--set chrome_passage=374)" in note and "common_after" not in note
    note = crowding(4.0, 5, 96)
    assert note is not None and "--set common_after=12 --set chrome_passage=374" in note
    assert crowding(4.0, 12, 374) is None
    note = crowding(300.0, 5, 96)  # past what a count of 255 can tell
    assert note is not None and "(--set common_after=0: no guard)" in note
    note = crowding(2.0, 5, 96, window=1.0)  # a window too wide for the settings
    assert note is not None and "lower chrome_window to 0.36" in note
    note = crowding(2.0, 5, 96, window=0.36)  # counted before the guard turned
    assert note is not None and "until the guard has turned twice more" in note
    assert "--set" not in note
    assert DedupConfig().chrome_window == window_for(CFG.common_after, CFG.chrome_passage)


def test_the_window_keeps_a_guard_below_the_load_its_settings_hold() -> None:
    """holds() is the highest load (in hundredths) at which crowding says nothing, and a
    guard that turns at window_for() answers from at most twice that window."""
    for limit, passage in ((5, 96), (9, 96), (12, 374), (3, 0)):
        top = holds(limit, passage)
        assert crowding(top, limit, passage) is None
        assert crowding(top + 0.01, limit, passage) is not None
        assert 2 * window_for(limit, passage) <= top
    assert holds(0, 96) == MAX_COUNT


#: A window whose turns end every 64 counts (a few stories of the tests below).
_TINY_WINDOW = 64 / (1 << SLOT_BITS)


def _stories(seed: int, n: int) -> list[npt.NDArray[np.uint32]]:
    """Stories of a few distinct shingle codes over a small set of slots (so they share)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        slot = rng.integers(0, 40, size=int(rng.integers(1, 30)))
        low = rng.integers(0, 1 << (32 - SLOT_BITS), size=len(slot))  # codes sharing a slot
        out.append(np.unique((slot << (32 - SLOT_BITS)) | low).astype(np.uint32))
    return out


def _naive_turns(
    stories: list[npt.NDArray[np.uint32]], size: int
) -> tuple[list[int], list[int], int]:
    """What a guard turning every ``size`` counts answers for slots 0..39: each slot's
    count in the last full turn plus the current one (saturating), in the current one, and
    the turns ended."""
    last: dict[int, int] = {}
    this: dict[int, int] = {}
    filled = turns = 0
    for story in stories:
        for slot in set((story >> (32 - SLOT_BITS)).tolist()):
            if this.get(slot, 0) < MAX_COUNT:
                this[slot] = this.get(slot, 0) + 1
                filled += 1
        if filled >= size:
            last, this, filled, turns = this, {}, 0, turns + 1
    both = [min(MAX_COUNT, last.get(k, 0) + this.get(k, 0)) for k in range(40)]
    return both, [this.get(k, 0) for k in range(40)], turns


@given(st.integers(0, 2**32 - 1), st.integers(1, 200), st.sampled_from(["on", "off"]))
@settings(max_examples=40, deadline=None)
def test_a_guard_with_a_window_answers_from_its_last_two_turns(
    seed: int, n: int, kernels_mode: str
) -> None:
    """With a window the guard counts in turns and answers from the last full turn and
    the current one: equal to a naive model, compiled or not; without one, every story."""
    stories = _stories(seed, n)
    with mock.patch.dict("os.environ", {"NEARDUP_KERNELS": kernels_mode}):
        turning = CommonShingles(limit=3, window=_TINY_WINDOW)
        forever = CommonShingles(limit=3)
        for story in stories:
            turning.add(story)
            forever.add(story)
    expected, current, turns = _naive_turns(stories, 64)
    assert turning.counts[:40].tolist() == expected and turning.turns == turns
    assert turning.this_turn()[:40].tolist() == current
    assert (turning.fresh is None) == (turns == 0)  # one table until the first turn ends
    assert turning.load_factor() <= (2 * 64 + 40) / (1 << SLOT_BITS)
    everything = [0] * 40
    for story in stories:
        for slot in set((story >> (32 - SLOT_BITS)).tolist()):
            everything[slot] = min(MAX_COUNT, everything[slot] + 1)
    assert forever.counts[:40].tolist() == everything and forever.turns == 0


def test_a_guard_forgets_chrome_not_seen_for_a_whole_turn() -> None:
    """Chrome seen in five stories stays chrome through the next turn and is forgotten
    once a whole turn has passed without it; a removed story is taken back exactly."""
    chrome = np.array([3 << (32 - SLOT_BITS)], dtype=np.uint32)
    guard = CommonShingles(limit=5, window=_TINY_WINDOW)
    for k in range(5):
        guard.add(np.concatenate([chrome, np.array([(100 + k) << (32 - SLOT_BITS)], np.uint32)]))
    assert guard.is_common(chrome).tolist() == [True]

    def other(start: int) -> npt.NDArray[np.uint32]:
        return (np.arange(start, start + 32, dtype=np.uint32) + 1000) << np.uint32(32 - SLOT_BITS)

    before = guard.counts.copy()
    story = other(0)
    guard.add(story)
    guard.remove(story)
    assert (guard.counts == before).all() and guard.filled == 10 and guard.fresh is None
    guard.add(other(0))
    guard.add(other(32))  # 74 counts: the first turn ends
    assert guard.turns == 1 and guard.is_common(chrome).tolist() == [True]
    assert guard.fresh is not None and not guard.fresh.any()
    before, fresh = guard.counts.copy(), guard.fresh.copy()
    guard.add(other(64))
    guard.remove(other(64))  # taken back in a later turn: both tables
    assert (guard.counts == before).all() and (guard.fresh == fresh).all() and guard.filled == 0
    guard.add(other(64))
    guard.add(other(96))  # the second: the turn that saw the chrome is forgotten
    assert guard.turns == 2 and guard.is_common(chrome).tolist() == [False]


@pytest.mark.parametrize("window", [0.0, _TINY_WINDOW])
def test_a_guard_saved_and_loaded_turns_where_it_would_have(window: float) -> None:
    """A guard saved (as a store saves it, compact or not) and loaded answers and turns as
    the one that went on; a table saved without a window becomes a windowed guard's turn."""
    stories = _stories(11, 120)
    whole = CommonShingles(limit=3, window=window)
    for story in stories:
        whole.add(story)
    for save, load in (
        (CommonShingles.to_bytes, CommonShingles.load),
        (compact_sketch.encode_guard, lambda g, b: compact_sketch.load_guard(g, b)),
    ):
        half = CommonShingles(limit=3, window=window)
        for story in stories[:60]:
            half.add(story)
        blob = save(half)
        assert compact_sketch.guard_window(blob) == window
        again = CommonShingles(limit=3, window=window)
        load(again, blob)
        for story in stories[60:]:
            again.add(story)
        assert (again.counts == whole.counts).all() and again.turns == whole.turns
    old = CommonShingles(limit=3)
    for story in stories[:10]:
        old.add(story)
    turning = CommonShingles(limit=3, window=_TINY_WINDOW)
    compact_sketch.load_guard(turning, compact_sketch.encode_counts(old.counts))
    assert (turning.counts == old.counts).all() and turning.fresh is None
    assert (turning.this_turn() == old.counts).all() and turning.filled == int(old.counts.sum())


@pytest.mark.parametrize("window", [0.0, _TINY_WINDOW])
@pytest.mark.parametrize("saved_after", [5, 60, 119])
def test_a_guard_loaded_over_another_is_the_one_loaded_new(window: float, saved_after: int) -> None:
    """A process reads the saved table again over the guard it holds (other counts, another
    turn): every count, this turn's counts, the turns and the load are the saved ones, as a
    new guard reads them, written in the tables it held."""
    stories = _stories(12, 120)
    saver = CommonShingles(limit=3, window=window)
    for story in stories[:saved_after]:
        saver.add(story)
    blob = compact_sketch.encode_guard(saver)
    new = CommonShingles(limit=3, window=window)
    compact_sketch.load_guard(new, blob)
    held = CommonShingles(limit=3, window=window)
    for story in _stories(13, 90):
        held.add(story)
    counts, fresh = held.counts, held.fresh
    compact_sketch.load_guard(held, blob)
    assert np.array_equal(held.counts, new.counts) and np.array_equal(held.counts, saver.counts)
    assert held.turns == new.turns == saver.turns and held.filled == new.filled == saver.filled
    assert (held.fresh is None) == (new.fresh is None) == (saver.fresh is None)
    if saver.fresh is not None:
        assert np.array_equal(held.fresh, saver.fresh)
        assert held.fresh is fresh or fresh is None
    assert held.counts is counts  # no fresh memory
    for story in stories[saved_after:]:  # and it goes on as the saver does
        held.add(story)
        saver.add(story)
    assert np.array_equal(held.counts, saver.counts) and held.turns == saver.turns


def test_a_guard_loaded_adds_its_two_turns_up_to_the_most_a_slot_counts() -> None:
    guard = CommonShingles(limit=3, window=_TINY_WINDOW)
    at = np.array([3, 9], dtype=np.uint64)
    guard.restore(
        (at, np.array([200, 1], dtype=np.uint8)), (at, np.array([100, 2], dtype=np.uint8)), 7, 2
    )
    assert (
        guard.counts[[3, 9]].tolist() == [MAX_COUNT, 3] and int(guard.counts.sum()) == MAX_COUNT + 3
    )
    assert guard.fresh is not None and guard.fresh[[3, 9]].tolist() == [100, 2]
    assert (guard.filled, guard.turns) == (7, 2)


def test_chrome_window_must_be_a_load() -> None:
    with pytest.raises(ConfigError, match="chrome_window must be in"):
        DedupConfig(chrome_window=-0.1)
    with pytest.raises(ConfigError, match="chrome_window must be in"):
        DedupConfig(chrome_window=100.0)


def _naive_passages(seen: list[bool], length: int) -> list[bool]:
    """Runs of at least ``length`` seen ones, if a quarter of the text is left outside."""
    out = [False] * len(seen)
    if length <= 0:
        return out
    i = 0
    while i < len(seen):
        j = i
        while j < len(seen) and seen[j]:
            j += 1
        if j - i >= length:
            out[i:j] = [True] * (j - i)
        i = j + 1
    return out if len(seen) - sum(out) >= PASSAGE_REST * len(seen) else [False] * len(seen)


@given(st.lists(st.booleans(), max_size=70), st.integers(0, 9))
def test_passages_are_long_runs_of_seen_shingles(seen: list[bool], length: int) -> None:
    """passages() marks the runs a naive walk finds (none when they are most of the text)."""
    got = passages(np.array(seen, dtype=np.bool_), length).tolist()
    assert got == _naive_passages(seen, length)


def test_a_passage_seen_in_two_stories_is_chrome() -> None:
    """Shingles seen in two stories (fewer than ``limit``) are chrome where they run for a
    whole passage, in a text with as much again of its own; not alone, and not in a text
    that is nothing but the passage."""
    codes = np.arange(1, 41, dtype=np.uint32) << np.uint32(8)
    common = CommonShingles(limit=5, passage=10)
    common.add(codes[:12])  # two stories held the first twelve
    common.add(codes[:12])
    common.add(codes[20:25])  # and five of them (fewer than a passage)
    common.add(codes[20:25])
    got = common.is_common(codes)
    assert got[:12].all() and not got[12:].any()
    assert not common.is_common(codes[:14]).any()  # the passage is most of this text
    assert not CommonShingles(limit=5).is_common(codes).any()  # no passages: not chrome


@pytest.mark.parametrize("limit", [0, -1])
def test_common_shingles_off(limit: int) -> None:
    """A limit of 0 or less turns the counting off."""
    common = CommonShingles(limit=limit)
    code = np.array([7 << 20], dtype=np.uint32)
    for _ in range(5):
        common.add(code)
    assert common.is_common(code).tolist() == [False]
    common.add(np.zeros(0, dtype=np.uint32))


SHARED_ZH = (
    "\n市民如遇紧急情况，请及时拨打市民服务热线求助。请广大市民关注官方发布的权威信息，不信谣、不传谣，"
    "共同维护良好的社会秩序，感谢大家的理解和支持。"
)
SHARED_EN = (
    "\nAnyone with information is asked to call the city hotline. Sign-ups for emergency text alerts "
    "are available on the city website, and residents are encouraged to check on elderly neighbors "
    "during the cold weather."
)


TEMPLATE_CASES = [
    (
        "今天上午，临江市轨道交通五号线一期工程正式开通初期运营，沿线市民纷纷前来体验。",
        "位于市文化中心片区的临江市图书馆新馆今天正式对外开放，不少市民一早就排队入馆。",
        SHARED_ZH,
    ),
    (
        "The city opened its first light rail line on Saturday, linking the waterfront with the airport.",
        "A team at Northfield University has engineered an enzyme that breaks down plastic bottles.",
        SHARED_EN,
    ),
]


@pytest.mark.parametrize(("story", "other", "template"), TEMPLATE_CASES, ids=["zh", "en"])
def test_common_shingles_do_not_count_towards_coverage(
    story: str, other: str, template: str
) -> None:
    """A template seen in many stories stops making two stories that share it duplicates."""
    # the template in the middle of each (at the end it is set aside at once, see
    # test_a_shared_ending_is_chrome)
    half, rest = len(story) // 2, len(other) // 2
    a, b = pair(story[:half] + template + story[half:], other[:rest] + template + other[rest:])
    assert verify(a, b, CFG).is_duplicate  # the template is most of each text
    common = CommonShingles(limit=CFG.common_after)
    for _ in range(CFG.common_after):
        common.add(make_sketch(template, CFG).vocab)
    v = verify(a, b, CFG, common)
    assert not v.is_duplicate
    assert v.score < 0.1
    # a true reprint still verifies with the same counts
    reprint = make_sketch(story[:half] + template + story[half:], CFG)
    assert verify(a, reprint, CFG, common).is_duplicate


@pytest.mark.parametrize(("story", "other", "template"), TEMPLATE_CASES, ids=["zh", "en"])
def test_a_shared_ending_is_chrome(story: str, other: str, template: str) -> None:
    """Two stories ending with the same sign-off are not one story, before anything is
    learned: what they share lies only at their edges."""
    a, b = pair(story + template, other + template)
    v = verify(a, b, CFG)
    assert v.edges and not v.is_duplicate
    assert verify(a, make_sketch(story + template, CFG), CFG).is_duplicate


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": 0.0}, "threshold must be in \\(0, 1\\], got 0.0"),
        ({"threshold": 1.5}, "threshold must be in \\(0, 1\\], got 1.5"),
        ({"title_threshold": -0.1}, "title_threshold must be in \\(0, 1\\], got -0.1"),
        ({"short_units": -1}, "short_units must be >= 0, got -1"),
        ({"cjk_width": 0}, "cjk_width=0, word_width=9"),
        ({"word_width": 0}, "cjk_width=5, word_width=0"),
        ({"lsh_params": (8, 20)}, "b \\* r = 8 \\* 20 = 160 must not exceed num_perm 128"),
        ({"lsh_params": (0, 4)}, "b \\* r = 0 \\* 4 = 0"),
        ({"lsh_params": (40, 2), "num_perm": 64}, "= 80 must not exceed num_perm 64"),
        ({"lsh_threshold": 1.0}, "strictly between 0 and 1, got 1.0"),
        ({"threshold": "0.7"}, "threshold must be a number, got '0.7'"),
        ({"num_perm": "128"}, "num_perm must be a whole number, got '128'"),
        ({"max_verify": 2.5}, "max_verify must be a whole number, got 2.5"),
        ({"max_verify": True}, "max_verify must be a whole number, got True"),
        ({"normalize": "yes"}, "normalize must be True or False, got 'yes'"),
        ({"lsh_params": (4,)}, r"lsh_params must be \(bands, rows\) or None, got \(4,\)"),
        ({"normalizer": 3}, "normalizer must be a neardup.Normalizer, got 3"),
        ({"normalizer": "x"}, "normalizer must be a neardup.Normalizer, got 'x'"),
    ],
)
def test_config_validation(kwargs: dict[str, object], message: str) -> None:
    """DedupConfig refuses unusable values at construction, naming the value."""
    with pytest.raises(ConfigError, match=message):
        DedupConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"num_perm": 100}, id="num_perm"),
        pytest.param({"bucket_cap": 0}, id="bucket_cap"),
        pytest.param({"max_verify": 0}, id="max_verify"),
    ],
)
def test_config_validation_at_construction(kwargs: dict[str, object]) -> None:
    """Values that would fail later (num_perm 100, bucket_cap 0) fail at construction."""
    with pytest.raises(ConfigError):
        DedupConfig(**kwargs)  # type: ignore[arg-type]


def test_config_takes_numpy_values_as_python_ones() -> None:
    """A sweep's numpy values (np.int64, np.float32, np.bool_) and a list for lsh_params are
    taken as Python's, so a store can write them as JSON (it raised a TypeError); a whole
    float such as 128.0 is an int."""
    cfg = DedupConfig(
        num_perm=np.int64(64),
        threshold=np.float32(0.5),
        normalize=np.bool_(False),
        lsh_params=[np.int64(8), 8],  # type: ignore[arg-type]
        max_verify=4.0,  # type: ignore[arg-type]
    )
    assert (cfg.num_perm, cfg.threshold, cfg.normalize, cfg.lsh_params, cfg.max_verify) == (
        64,
        0.5,
        False,
        (8, 8),
        4,
    )
    assert [type(v) for v in (cfg.num_perm, cfg.threshold, cfg.normalize, cfg.max_verify)] == [
        int,
        float,
        bool,
        int,
    ]
    json.dumps(store_fingerprint(cfg))  # what a store writes
    steps = Normalizer(case=np.bool_(False))
    assert steps.case is False
    json.dumps(store_fingerprint(DedupConfig(normalizer=steps)))
    with pytest.raises(ConfigError, match=r"normalizer\.script must be True or False, got 0"):
        Normalizer(script=0)  # type: ignore[arg-type]


def test_default_bands_rows_fit() -> None:
    """The default LSH bands and rows fit the signature; explicit ones are used as given."""
    b, r = CFG.bands_rows
    assert b * r <= CFG.num_perm
    assert DedupConfig(lsh_params=(16, 8)).bands_rows == (16, 8)


def _painted_placement(
    doc: Sketch, other: Sketch, cfg: DedupConfig, common: object
) -> tuple[int, ...]:
    """The definition of placement, unit by unit: paint the units inside shingles that are
    not chrome, and those inside shingles the other also has; compress to the first. Against
    a text without shingles (which verification never places against: it compares such
    texts whole) every unit is the document's own, chrome unread."""
    n, codes = doc.n_units, doc.shingles
    if len(codes) == 0 or len(other.vocab) == 0:
        return (n, 0, 0, n, 0)
    shared = np.isin(codes, other.vocab)
    rare = np.ones(len(codes), bool) if common is None else ~common.is_common(codes)  # type: ignore[attr-defined]
    widths = np.where(codes & 1, cfg.cjk_width, cfg.word_width)
    own, hit = np.zeros(n, bool), np.zeros(n, bool)
    for i in range(len(codes)):
        if rare[i]:
            own[i : i + widths[i]] = True
            if shared[i]:
                hit[i : i + widths[i]] = True
    c = hit[own]
    if not c.any():
        return (len(c), 0, 0, len(c), 0)
    first, last = int(np.argmax(c)), len(c) - 1 - int(np.argmax(c[::-1]))
    runs, k = [0], 0
    for x in c[first : last + 1]:
        k = 0 if x else k + 1
        runs.append(k)
    return (first, len(c) - 1 - last, max(runs), len(c), int(c.sum()))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 3))
def test_placement_equals_its_definition(seed: int, chrome: int) -> None:
    """placement (interval arithmetic) equals painting the units one by one."""
    from neardup.engine.verify import placement

    rng = random.Random(seed)
    story = "".join(
        rng.choice("甲乙丙丁戊己庚辛壬癸子丑寅卯辰巳午未申酉") for _ in range(rng.randint(1, 300))
    )
    cut = rng.randint(0, len(story))
    other = story[cut // 2 : cut] + "".join(
        rng.choice("山水火木金土") for _ in range(rng.randint(0, 80))
    )
    a, b = make_sketch(story, CFG), make_sketch(other, CFG)
    common = None
    if chrome:
        common = CommonShingles(limit=1)
        codes = a.vocab[rng.sample(range(len(a.vocab)), min(len(a.vocab), chrome * 7))]
        common.add(codes)
    assert tuple(placement(a, b, CFG, common)) == _painted_placement(a, b, CFG, common)


# -- which candidates are verified ----------------------------------------------------------------


def naive_to_verify(
    later: list[int], earlier: list[int], likeness: list[float], k: int
) -> list[bool]:
    """Each later document's k most alike pairs, the earliest on ties, by sorting each group."""
    chosen: set[int] = set()
    for j in set(later):
        rows = [r for r in range(len(later)) if later[r] == j]
        rows.sort(key=lambda r: (-likeness[r], earlier[r]))
        chosen.update(rows[:k])
    return [r in chosen for r in range(len(later))]


@given(
    st.lists(
        st.tuples(st.integers(5, 9), st.integers(0, 4), st.sampled_from([0.0, 0.25, 0.5, 1.0])),
        max_size=40,
        unique_by=lambda t: (t[0], t[1]),
    ),
    st.integers(1, 4),
)
@settings(max_examples=200, deadline=None)
def test_to_verify_matches_a_naive_reference(rows: list[tuple[int, int, float]], k: int) -> None:
    """to_verify keeps each later document's max_verify most alike pairs, earliest on ties."""
    later, earlier, likeness = ([r[n] for r in rows] for n in range(3))
    got = to_verify(
        np.array(later, dtype=np.int64),
        np.array(earlier, dtype=np.int64),
        np.array(likeness, dtype=np.float64),
        dataclasses.replace(CFG, max_verify=k),
    )
    assert got.tolist() == naive_to_verify(later, earlier, likeness, k)


def test_light_likeness_is_at_least_the_full_one() -> None:
    """Equal full MinHash values are equal in their light bits, so the prefilter on the light
    likeness passes every pair the full one passes."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2**63, size=(50, 128), dtype=np.uint64)
    b = np.where(
        rng.random((50, 128)) < 0.5, a, rng.integers(0, 2**63, size=(50, 128), dtype=np.uint64)
    )
    full = np.count_nonzero(a == b, axis=1) / 128
    assert np.all(alike(light(a), light(b)) >= full)
    assert alike(light(a[0]), light(b)).shape == (50,)


# -- which candidate a document matches ---------------------------------------------------------

#: a scripted verification: (same story, copy, score)
Script = tuple[bool, bool, float]


def naive_best(script: list[Script]) -> int | None:
    """The candidate a document matches, candidates earliest first: the first it is a copy
    of, else the same-story one with the highest score, the earliest on ties."""
    for k, (dup, copy, _) in enumerate(script):
        if dup and copy:
            return k
    same = [k for k, (dup, _, _) in enumerate(script) if dup]
    return max(same, key=lambda k: (script[k][2], -k)) if same else None


SCRIPTS = st.lists(
    st.tuples(st.booleans(), st.booleans(), st.sampled_from([0.5, 0.75, 0.9, 1.0])), max_size=8
)


@given(SCRIPTS)
@settings(max_examples=200, deadline=None)
def test_best_match_is_the_first_copy_and_stops_there(script: list[Script]) -> None:
    """best_match verifies candidates earliest first and stops at the first it is a copy of
    (the later ones are not verified); without a copy, the highest-scoring same story."""
    import neardup.engine.decide as decide

    calls: list[str] = []

    def scripted(
        a: Sketch, b: Sketch, cfg: DedupConfig, guard: object = None, *, scored: bool = True
    ) -> Verdict:
        k = int(b.text)
        calls.append(b.text)
        dup, copy, score = script[k]
        return Verdict(score, "coverage", dup, score if dup and copy else 0.0, dup and copy)

    with mock.patch.object(decide, "verify", scripted):
        pool = [(str(k), make_sketch(str(k), CFG)) for k in range(len(script))]
        found = decide.best_match(make_sketch("x", CFG), pool, CFG, None)
    want = naive_best(script)
    assert (None if found is None else int(found.key)) == want
    if want is not None and script[want][1]:
        assert len(calls) == want + 1  # nothing after the first copy is verified
    else:
        assert len(calls) == len(script)


@given(st.lists(SCRIPTS, max_size=5))
@settings(max_examples=200, deadline=None)
def test_best_of_agrees_with_best_match(scripts: list[list[Script]]) -> None:
    """best_of (Spark: every pair verified, then each document's best) picks the candidate
    best_match picks, from the same-story pairs."""
    later, earlier, scores, copies, want = [], [], [], [], {}
    for j, script in enumerate(scripts):
        for k, (dup, copy, score) in enumerate(script):
            if dup:
                later.append(j)
                earlier.append(k)
                scores.append(score)
                copies.append(copy)
        best = naive_best(script)
        if best is not None:
            want[j] = best
    rows = best_of(
        np.array(later, dtype=np.int64),
        np.array(earlier, dtype=np.int64),
        np.array(scores, dtype=np.float64),
        np.array(copies, dtype=np.bool_),
    )
    assert {later[r]: earlier[r] for r in rows.tolist()} == want


@given(st.booleans(), st.floats(0.0, 1.0) | st.sampled_from([0.0, 0.5, 1.0]))
def test_counts_as_story_is_stories_for_one(is_copy: bool, repeated: float) -> None:
    """The one-document rule and the rule for many documents at once agree."""
    from neardup.engine.decide import Match, counts_as_story, stories
    from neardup.engine.verify import Verdict

    match = Match("a", Verdict(0.9, "coverage", True, 0.9, is_copy, repeated=repeated))
    assert counts_as_story(match) == bool(stories(np.array([is_copy]), np.array([repeated]))[0])
