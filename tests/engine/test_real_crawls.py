"""Real crawls: chrome (sign-offs, bios, series footers, signatures, header lines, view
counters) never makes two stories one, and a document that brings new text is never dropped.

The fixtures imitate the patterns of real sites with invented text: a blog's intro post that
is little more than the bio every later column ends with; a series footer; a reply quoting
its parent; two posts of one author sharing his header lines and signature; a view counter
whose figures change. Every case is decided the same way by the batch run, the streaming
Deduper and a SQLite store.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from neardup import Decision, Deduper, dedup_batch
from neardup.engine import CommonShingles, DedupConfig, make_sketch, verify

from ..test_deduper import CJK_POOL, EN_POOL

CFG = DedupConfig()


def zh(rng: random.Random, sentences: int) -> str:
    """Invented Chinese paragraphs (random characters in clauses): they share nothing."""
    out = []
    for _ in range(sentences):
        a = "".join(rng.choices(CJK_POOL, k=rng.randint(10, 18)))
        b = "".join(rng.choices(CJK_POOL, k=rng.randint(8, 16)))
        out.append(f"{a}，{b}。")
    return "".join(out)


def en(rng: random.Random, sentences: int) -> str:
    return " ".join(
        " ".join(rng.choices(EN_POOL, k=rng.randint(9, 16))).capitalize() + "."
        for _ in range(sentences)
    )


def decide(
    ids: list[str], texts: list[str], tmp_path: Path, cfg: DedupConfig = CFG
) -> list[Decision]:
    """The batch run's decisions, checked equal to streaming into memory and into SQLite."""
    batch = dedup_batch(ids, texts, config=cfg).decisions
    key: Callable[[Decision], tuple[object, ...]] = lambda d: (  # noqa: E731
        d.id, d.is_duplicate, d.duplicate_of, d.extends, d.cluster, round(d.score, 6), d.measure
    )  # fmt: skip
    for store in ("memory://", f"sqlite:///{tmp_path / 'crawl.db'}"):
        with Deduper(cfg, store=store, explain=False) as dd:
            streamed = dd.check_and_add_many(list(zip(ids, texts, strict=True)))
        assert [key(d) for d in streamed] == [key(d) for d in batch], store
    return batch


def by_id(decisions: list[Decision]) -> dict[str, Decision]:
    return {d.id: d for d in decisions}


# -- sign-offs and bios ------------------------------------------------------------------------


def test_a_bio_only_post_does_not_join_the_columns_that_end_with_the_bio(tmp_path: Path) -> None:
    """A columnist's first post is her bio and the site's subscription block; every later
    column ends with the same bio. The columns are different stories: none is dropped, none
    joins the bio post's cluster (nor each other's)."""
    rng = random.Random(1)
    bio = "\n---\n博客 | 某作者\n" + zh(rng, 5)
    subscribe = "\n请加入成为本站的月费订户，长期支持我们的工作。\n"
    ids = ["intro", "col-1", "col-2", "col-3", "col-4"]
    texts = [zh(rng, 1) + subscribe + bio] + [zh(rng, 14) + bio for _ in range(4)]
    d = by_id(decide(ids, texts, tmp_path))
    for i in ids[1:]:
        assert not d[i].is_duplicate, i
        assert d[i].cluster == i, (i, d[i])


def test_a_series_footer_does_not_join_the_series(tmp_path: Path) -> None:
    """Short posts of a series, each half its own text, half the series footer."""
    rng = random.Random(2)
    footer = "\n---\n【我的故事】系列" + zh(rng, 3)
    ids = [f"ep-{k}" for k in range(6)]
    texts = [zh(rng, 3) + footer for _ in ids]
    d = decide(ids, texts, tmp_path)
    assert [x.cluster for x in d] == ids
    assert not any(x.is_duplicate for x in d)


def test_a_copy_of_a_column_is_still_a_copy(tmp_path: Path) -> None:
    """The bio is chrome, the column is not: a reprint of a column is a copy of it."""
    rng = random.Random(3)
    bio = "\n---\n博客 | 某作者\n" + zh(rng, 5)
    columns = [zh(rng, 12) + bio for _ in range(5)]
    reprint = "转载自某网站\n" + columns[2].replace(columns[2][5], "甲", 1)
    ids = [*(f"col-{k}" for k in range(5)), "reprint"]
    d = by_id(decide(ids, [*columns, reprint], tmp_path))
    assert d["reprint"].is_duplicate and d["reprint"].duplicate_of == "col-2"


# -- quoting -----------------------------------------------------------------------------------


def test_a_reply_quoting_its_parent_is_kept_and_extends_it(tmp_path: Path) -> None:
    """A reply that quotes its parent and answers it brings new text: kept, in the parent's
    cluster, saying what it extends; a reply that only quotes (says "me too") is a copy."""
    rng = random.Random(4)
    parent = f"From: ann@example.org (Ann)\nSubject: {en(rng, 1)}\n\n{en(rng, 6)}"
    body = parent.split("\n\n", 1)[1]
    quoted = "\n".join("> " + line for line in body.split(". "))
    reply = (
        f"From: bob@example.net (Bob)\nSubject: Re: ...\n\nAnn writes:\n{quoted}\n\n{en(rng, 5)}"
    )
    metoo = f"Ann writes:\n{quoted}\n\nMe too."
    d = by_id(decide(["parent", "reply", "metoo"], [parent, reply, metoo], tmp_path))
    assert not d["reply"].is_duplicate
    assert d["reply"].extends == "parent" and d["reply"].cluster == "parent"
    assert d["metoo"].is_duplicate and d["metoo"].cluster == "parent"


def short_answer(rng: random.Random) -> tuple[list[str], list[str]]:
    """A post, a reply of two lines over the whole post quoted with ``>``, and the same
    reply with the quote unmarked."""
    parent = f"From: ann@example.org (Ann)\nSubject: Launchers\n\n{en(rng, 14)}"
    body = parent.split("\n\n", 1)[1]
    quoted = "\n".join("> " + line for line in body.split(". "))
    answer = en(rng, 2)
    reply = f"ann@example.org (Ann) writes:\n{answer}\n{quoted}"
    unmarked = f"ann@example.org (Ann) writes:\n{answer}\n{body}"
    return ["parent", "reply", "unmarked"], [parent, reply, unmarked]


def test_a_short_answer_above_a_long_quote_is_kept(tmp_path: Path) -> None:
    """Two lines of answer over the whole parent quoted: over nine tenths of the reply is
    found in the parent, but what the reply itself says (its lines that are not quoted) is
    new. Kept, extending the parent; the same answer with the quote unmarked is a copy."""
    ids, (parent, reply, unmarked) = short_answer(random.Random(14))
    a, b, c = (make_sketch(t, CFG) for t in (parent, reply, unmarked))
    assert verify(c, a, CFG).is_copy  # the rule for the whole text alone drops it
    v = verify(b, a, CFG)
    assert v.is_duplicate and not v.is_copy and v.copy_score < CFG.copy_threshold
    d = by_id(decide(ids, [parent, reply, unmarked], tmp_path))
    assert not d["reply"].is_duplicate and d["reply"].extends == "parent"
    assert d["unmarked"].is_duplicate and d["unmarked"].cluster == "parent"


def test_a_reprint_of_an_article_with_a_quoted_passage_is_still_a_copy(tmp_path: Path) -> None:
    """Quoted lines are set aside only to find what a document says itself: a reprint of an
    article that quotes a passage says what the article says, and is a copy of it."""
    rng = random.Random(15)
    article = f"{en(rng, 6)}\n> {en(rng, 3)}\n{en(rng, 6)}"
    reprint = "Reprinted from elsewhere\n" + article.replace(".", "!", 1)
    d = by_id(decide(["article", "reprint"], [article, reprint], tmp_path))
    assert d["reprint"].is_duplicate and d["reprint"].duplicate_of == "article"


def test_quoted_units_mark_the_lines_starting_with_a_quote_marker() -> None:
    from neardup.engine.verify import has_quotes, quoted_units

    text = "ab\n  > cd ef\ngh > ij\n>kl"
    assert has_quotes(text) and not has_quotes("a > b\nc")
    assert quoted_units(text, 12).astype(int).tolist() == [0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1]
    assert quoted_units(text, 14).astype(int).tolist()[12:] == [0, 0]  # past the kept text
    assert not quoted_units("", 3).any()


def test_a_full_article_after_an_excerpt_is_kept_and_an_excerpt_after_it_is_dropped(
    tmp_path: Path,
) -> None:
    """The excerpt first: the full article brings the rest and is kept, extending it. An
    excerpt arriving after the full article brings nothing: dropped."""
    rng = random.Random(5)
    full = zh(rng, 14)
    excerpt = full[: len(full) // 2]
    d = by_id(decide(["excerpt", "full", "excerpt-2"], [excerpt, full, excerpt + "。"], tmp_path))
    assert not d["full"].is_duplicate and d["full"].extends == "excerpt"
    assert d["excerpt-2"].is_duplicate and d["excerpt-2"].cluster == "excerpt"


# -- signatures and header lines ---------------------------------------------------------------


def test_two_posts_sharing_header_lines_and_a_signature_are_two_stories(tmp_path: Path) -> None:
    """One author's posts share their first and last lines; their middles differ."""
    rng = random.Random(6)
    head = "From: carl@example.com (Carl Jones)\nOrganization: Example Widgets Incorporated\n"
    sig = "\n-- \nCarl Jones, senior widget engineer, Example Widgets Incorporated\n" + en(rng, 1)
    texts = [head + f"Subject: {en(rng, 1)}\n\n" + en(rng, 3) + sig for _ in range(3)]
    d = decide(["p1", "p2", "p3"], texts, tmp_path)
    assert [x.cluster for x in d] == ["p1", "p2", "p3"]
    assert not any(x.is_duplicate for x in d)


def test_short_posts_mostly_header_lines_and_signature_are_two_stories(tmp_path: Path) -> None:
    """One author's posts whose long header lines and signature are most of each (about
    70 %), around a body of their own (about 30 %): the shared text lies only at both ends,
    around different middles, so they are different stories. A reprint of one of them is
    still a copy of it."""
    rng = random.Random(16)
    head = (
        "From: erin@example.net (Erin Walsh)\nOrganization: Example Institute of Technology, "
        "Department of Applied Physics\nReply-To: erin@example.net\n"
    )
    sig = "\n-- \nErin Walsh, Example Institute of Technology. " + en(rng, 4)

    def body() -> str:  # words of random letters: two bodies share no shingle by chance
        letters = "abcdefghijklmnopqrstuvwxyz"
        return " ".join("".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(36))

    texts = [head + f"Subject: {en(rng, 1)}\n\n" + body() + sig for _ in range(3)]
    a, b = (make_sketch(t, CFG) for t in texts[:2])
    v = verify(b, a, CFG)
    assert v.score >= CFG.threshold and v.edges  # one story by coverage alone; chrome here
    texts.append("Reposted\n" + texts[1])
    d = decide(["p1", "p2", "p3", "repost"], texts, tmp_path)
    assert [x.cluster for x in d] == ["p1", "p2", "p3", "p2"]
    assert [x.is_duplicate for x in d] == [False, False, False, True]


def framed(rng: random.Random) -> tuple[str, str, str]:
    """A series' blurb opening and closing every post, around a short announcement (a
    fifth of its text its own) and around a long episode (two thirds its own)."""
    opening, closing = zh(rng, 3), "\n---\n" + zh(rng, 3)
    short = opening + "\n" + zh(rng, 2) + closing
    long = opening + "\n" + zh(rng, 12) + closing
    return opening, short, long


def test_one_frame_around_a_short_post_and_a_long_one_makes_two_stories(tmp_path: Path) -> None:
    """The same opening and ending lines (a series' blurb, an author's header lines and
    signature) around a short post and around a long one: the shorter is mostly frame, so
    by coverage alone the long one contains it, but the long one's own text is one block in
    the middle and the short one has a middle of its own. Two stories; a copy of the long
    one is still a copy of it."""
    _, short, long = framed(random.Random(17))
    a, b = make_sketch(short, CFG), make_sketch(long, CFG)
    v = verify(b, a, CFG)
    assert v.score >= CFG.threshold and v.edges and not v.is_duplicate
    copy = "转载\n" + long.replace(long[9], "乙", 1)
    d = by_id(decide(["short", "long", "copy"], [short, long, copy], tmp_path))
    assert [d[i].cluster for i in ("short", "long", "copy")] == ["short", "long", "long"]
    assert d["copy"].is_duplicate


def test_an_excerpt_and_a_fuller_version_are_still_one_story() -> None:
    """The frame rule needs a middle of the shorter's own: an excerpt that keeps an
    article's opening and ending is the full article's story, and so is a version that
    adds paragraphs in several places."""
    rng = random.Random(18)
    parts = [zh(rng, 3) for _ in range(6)]
    full = "\n".join(parts)
    excerpt = "\n".join([parts[0], parts[5]])
    fuller = "\n".join([parts[0], zh(rng, 2), *parts[1:4], zh(rng, 2), *parts[4:]])
    for later, earlier in ((full, excerpt), (fuller, full)):
        v = verify(make_sketch(later, CFG), make_sketch(earlier, CFG), CFG)
        assert v.is_duplicate and not v.edges


# -- hubs: a post of chrome alone --------------------------------------------------------------


def hub_posts(rng: random.Random) -> tuple[list[str], list[str]]:
    """A post that is nothing but an author's header lines, one word and his signature, then
    three posts of his, each with the same lines around a text of its own."""
    head = "From: dora@example.org (Dora Smith)\nOrganization: Example Gazette, Springfield\n\n"
    sig = "\n-- \nDora Smith, night editor at the Example Gazette. " + en(rng, 2)
    posts = [head + en(rng, 9) + sig for _ in range(3)]
    return ["hub", "p1", "p2", "p3"], [head + "Thanks." + sig, *posts]


def test_a_post_of_chrome_alone_does_not_link_the_posts_that_carry_it(tmp_path: Path) -> None:
    """Every later post contains the chrome-only post, so each extends it; but they are not
    one story with each other. The first joins its cluster; the others start their own (it
    is a hub, not their story) and still say what they extend. Nothing is dropped."""
    ids, texts = hub_posts(random.Random(12))
    d = by_id(decide(ids, texts, tmp_path))
    assert not any(x.is_duplicate for x in d.values())
    assert [d[i].extends for i in ids] == [None, "hub", "hub", "hub"]
    assert [d[i].cluster for i in ids] == ["hub", "hub", "p2", "p3"]


def test_a_second_version_of_the_same_story_still_joins_the_excerpt(tmp_path: Path) -> None:
    """An excerpt, the full article (extends it), then the full article with a paragraph
    more: it extends the excerpt too, but it is the same story as the full article, so the
    excerpt is no hub and all three are one cluster."""
    rng = random.Random(13)
    full = zh(rng, 12)
    ids = ["excerpt", "full", "longer"]
    texts = [full[: len(full) // 3], full, full + "\n" + zh(rng, 6)]
    d = by_id(decide(ids, texts, tmp_path))
    assert [d[i].is_duplicate for i in ids] == [False, False, False]
    assert [d[i].cluster for i in ids] == ["excerpt"] * 3


# -- view counters -----------------------------------------------------------------------------


def test_a_view_counter_with_changing_figures_does_not_hide_a_copy(tmp_path: Path) -> None:
    """A page and its copy elsewhere end with a counter whose figures differ: still a copy;
    and two stories with counters are two stories."""
    rng = random.Random(7)

    def counter() -> str:
        return f"\n阅读 {rng.randint(100, 99999)} 次  点赞 {rng.randint(1, 999)}  评论 {rng.randint(1, 99)}"

    story, other = zh(rng, 10), zh(rng, 10)
    ids = ["a", "b", "a-copy"]
    d = by_id(decide(ids, [story + counter(), other + counter(), story + counter()], tmp_path))
    assert d["a-copy"].is_duplicate and d["a-copy"].duplicate_of == "a"
    assert d["b"].cluster == "b"


def figure_versions(rng: random.Random) -> tuple[list[str], list[str]]:
    """A story and a later version whose figures changed (a death toll); a post and its
    repost whose "Lines:" header differs; a page and its mirror whose view count and web
    archive capture time differ; two short notices of one template whose amounts differ."""
    head = zh(rng, 6) + "大楼共24层，当局调派40辆消防车及200名消防员。"
    tail = zh(rng, 6)
    first = head + "截至晚上9时，警方证实最少18人死亡，另有40多人受伤。" + tail
    update = head + "截至晚上11时，警方证实最少19人死亡，另有62人受伤。" + tail
    body = en(rng, 8)
    post = "From: a@example.org\nSubject: a question\nLines: 14\n\n" + body
    repost = "From: a@example.org\nSubject: a question\nLines: 15\n\n" + body + "\n"
    page = (
        zh(rng, 5)
        + "全年共有35宗个案，涉及120人。"
        + zh(rng, 5)
        + "\n阅读：1234\n联络：[信箱](/web/20210712011914/https://example.org/x)"
    )
    mirror = page.replace("1234", "1301").replace("20210712011914", "20210712024239")
    notice = "Qtly div {} cts vs {} cts prior qtr\n    Pay 1 April\n    Record 16 March\n"
    ids = ["first", "update", "post", "repost", "page", "mirror", "div-a", "div-b"]
    notices = [notice.format("37-1/2", "37-1/2"), notice.format(27, 27)]
    return ids, [first, update, post, repost, page, mirror, *notices]


def test_an_update_with_new_figures_is_kept_and_a_repost_with_other_metadata_dropped(
    tmp_path: Path,
) -> None:
    """A later version of a story whose figures changed (a death toll, a vote count) brings
    news: kept, extending the first; a copy whose figures differ only on labelled lines (a
    post's "Lines:" header, a page's views) or in an address (a web archive's capture time)
    is still a copy; a notice whose amount differs is not a copy."""
    d = by_id(decide(*figure_versions(random.Random(21)), tmp_path))
    assert not d["update"].is_duplicate and d["update"].extends == "first"
    assert d["update"].cluster == "first"
    assert d["repost"].is_duplicate and d["repost"].duplicate_of == "post"
    assert d["mirror"].is_duplicate and d["mirror"].duplicate_of == "page"
    assert not d["div-b"].is_duplicate


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (  # a short notice: the amount differs above the dates both share
            "Qtly div 37-1/2 cts vs 37-1/2 cts prior qtr\n    Pay 1 April\n    Record 16 March\n",
            "Qtly div 27 cts vs 27 cts prior qtr\n    Pay 1 April\n    Record 16 March\n",
        ),
        ("Qtly div 27 cts", "Qtly div 45 cts"),  # compared as titles
        ("北京发生地震 12人受伤", "北京发生地震 15人受伤"),
        ("“天网2025”行动正式启动", "“天网2026”行动正式启动"),  # a year, as titles
        ("国务院召开第5次全体会议", "国务院召开第6次全体会议"),  # one digit
        ("十四届全国人大二次会议开幕", "十四届全国人大三次会议开幕"),  # a Chinese numeral
        (  # short items (under CHARACTER_UNITS), the number at an end
            "神舟十六号船箭组合体转运至发射区 计划近日择机实施发射",
            "神舟十七号船箭组合体转运至发射区 计划近日择机实施发射",
        ),
        ("Treasury balances at Fed fell on March 5", "Treasury balances at Fed fell on March 10"),
        ("Soybean market report 10:50 EDT", "Soybean market report 11:00 EDT"),  # a time
        ("2024年第3季度十大新闻回顾之一", "2024年第3季度十大新闻回顾之二"),  # one of 4 numbers
        # a title of one line is its own news, a label before a colon too
        ("专题访谈：城市更新系列之二", "专题访谈：城市更新系列之三"),
        (
            "Update: 5 hurt as a bus leaves the road near the old bridge in heavy rain",
            "Update: 7 hurt as a bus leaves the road near the old bridge in heavy rain",
        ),
    ],
    ids=[
        "dividend",
        "title-en",
        "title-zh",
        "title-year",
        "title-digit",
        "title-numeral",
        "short-start",
        "short-end",
        "title-time",
        "title-one-of-four",
        "title-label-zh",
        "title-label-en",
    ],
)
def test_a_short_item_whose_figure_differs_is_not_a_copy(a: str, b: str, tmp_path: Path) -> None:
    """Short items of one template that differ in a figure or a number — two companies'
    dividends, a count updated, the next year's campaign, session or meeting — are kept: at
    most the same story, never a copy."""
    d = by_id(decide(["a", "b"], [a, b], tmp_path))
    assert not d["b"].is_duplicate


def number_versions(rng: random.Random) -> tuple[list[str], list[str]]:
    """Announcements of one template a year apart (the session of a congress, a campaign's
    year), the parts of a series, a date, a launch (a short item), each differing in one
    number — a digit or a Chinese numeral, after a source's name and a colon —; a reprint
    with a typo that is no numeral; and stories between them that repeat this year's
    session name (chrome to the guard once five stories hold it)."""
    live = (
        "央视网消息：十四届全国人大{}次会议将于3月5日上午9时在北京开幕，国务院总理将作政府"
        "工作报告。届时，中央电视台综合频道、新闻频道将进行现场直播，中央重点新媒体平台将同步转播。"
    )
    campaign = "“天网{}”行动正式启动，将继续开展防逃追逃追赃专项行动，重点追查外逃腐败分子。"
    part = "【调查】配稿之{}：立法会专责委员会即将展开调查，议员要求当局交代有关款项的来龙去脉。"
    dated = "商务部新闻发言人{}日表示，中方将继续扩大高水平对外开放，稳定外贸外资基本盘。"
    launch = "神舟{}号船箭组合体转运至发射区 计划近日择机实施发射"  # a short item
    stories = [f"十四届全国人大三次会议期间，{zh(rng, 2)}" for _ in range(6)]
    ids = ["live-2", *(f"story-{k}" for k in range(6)), "live-3", "live-3-typo"]
    texts = [live.format("二"), *stories, live.format("三")]
    texts.append(texts[-1].replace("综合频道", "综合频到"))
    for name, template, first, second in (
        ("campaign", campaign, "2025", "2026"),
        ("part", part, "一", "二"),
        ("dated", dated, "5", "6"),
        ("launch", launch, "十六", "十七"),
    ):
        ids += [f"{name}-a", f"{name}-b"]
        texts += [template.format(first), template.format(second)]
    return ids, texts


def test_a_copy_with_a_number_changed_is_not_a_copy(tmp_path: Path) -> None:
    """A later item of a template that differs in one number — this year's session, the
    campaign's year, the next part of a series, another day — is news of its own: kept
    (extending the earlier), never dropped, even where the guard has learned the phrase
    the number is in as chrome; a reprint whose one changed character is no numeral is
    still dropped as a copy of the first version it repeats."""
    d = by_id(decide(*number_versions(random.Random(31)), tmp_path))
    for later, earlier in [
        ("live-3", "live-2"),
        ("campaign-b", "campaign-a"),
        ("part-b", "part-a"),
        ("dated-b", "dated-a"),
        ("launch-b", "launch-a"),
    ]:
        assert not d[later].is_duplicate, later
        assert d[later].extends == earlier, later
    assert d["live-3-typo"].is_duplicate and d["live-3-typo"].duplicate_of == "live-3"


def test_a_title_with_a_typo_is_still_a_copy(tmp_path: Path) -> None:
    """A title whose one changed character is no numeral, or that drops a number, is still
    a copy of the title it repeats."""
    ids = ["a", "typo", "b", "fewer"]
    texts = [
        "国务院召开第5次全体会议",
        "国务院召开第5次全体会仪",
        "天网2025行动正式启动",
        "天网行动正式启动",
    ]
    d = by_id(decide(ids, texts, tmp_path))
    assert d["typo"].duplicate_of == "a"
    assert d["fewer"].duplicate_of == "b"


# -- learned chrome ----------------------------------------------------------------------------


def test_a_block_recurring_in_different_stories_is_learned_as_chrome(tmp_path: Path) -> None:
    """A block in the middle of many different stories (a "related articles" list) is
    chrome once it has been seen in ``common_after`` stories: it then makes no match."""
    rng = random.Random(8)
    block = "\n相关阅读：" + zh(rng, 4) + "\n"
    stories = [zh(rng, 2) + block + zh(rng, 2) for _ in range(CFG.common_after + 2)]
    ids = [f"s{k}" for k in range(len(stories))]
    d = decide(ids, stories, tmp_path)
    late = d[CFG.common_after :]
    assert all(x.cluster == x.id and not x.is_duplicate for x in late)


def test_a_bio_two_columns_carry_is_chrome_at_once(tmp_path: Path) -> None:
    """A bio that two different columns end with is chrome from then on (a passage seen in
    two stories), before it has been seen in ``common_after`` of them: a photo post that is
    a caption and the bio and a short post that ends with it are two stories, not one."""
    rng = random.Random(19)
    bio = "\n---\n博客 | 某作者\n" + zh(rng, 5)
    ids = ["col-1", "col-2", "photo", "post"]
    texts = [zh(rng, 12) + bio, zh(rng, 12) + bio, "某人（1963－2016）" + bio, zh(rng, 4) + bio]
    d = by_id(decide(ids, texts, tmp_path))
    assert [d[i].cluster for i in ids] == ids
    assert not any(x.is_duplicate for x in d.values())
    (tmp_path / "off").mkdir()
    without = by_id(decide(ids, texts, tmp_path / "off", DedupConfig(chrome_passage=0)))
    assert without["post"].cluster == "photo"  # what learning the bio at five stories gave


def test_a_story_seen_again_is_not_chrome_of_its_own(tmp_path: Path) -> None:
    """A story counted twice (seen again after its window) is still a story: a text that is
    all passage keeps it, so a reprint of it still matches."""
    rng = random.Random(20)
    story = zh(rng, 10)
    day = 86_400.0
    with Deduper(store=f"sqlite:///{tmp_path / 'w.db'}", window="30d", explain=False) as dd:
        dd.check_and_add("first", story, timestamp=0.0)
        again = dd.check_and_add("again", "来源：某网\n" + story, timestamp=100 * day)
        assert not again.is_duplicate  # outside the window: a story again
        reprint = dd.check_and_add("reprint", story + "。", timestamp=101 * day)
        assert reprint.is_duplicate and reprint.cluster == "again"


def test_passages_that_replies_quote_are_not_chrome() -> None:
    """Quoted lines are not a story's own text, so two replies that quote the same passage
    of a post do not make it chrome; their own lines count."""
    from neardup.engine import story_codes

    rng = random.Random(21)
    passage = en(rng, 4)
    parent = f"{passage}\n{en(rng, 6)}"
    quoted = "\n".join("> " + line for line in passage.split(". "))
    replies = [f"Ann writes:\n{quoted}\n{en(rng, 12)}" for _ in range(2)]
    dd = Deduper()
    for k, text in enumerate([parent, *replies]):
        dd.check_and_add(f"d{k}", text)
    sk = make_sketch(parent, CFG)
    assert not dd.chrome().is_common(sk.shingles).any()
    reply = make_sketch(replies[0], CFG)
    assert len(story_codes(reply)) < len(reply.vocab)
    assert set(story_codes(reply).tolist()) >= set(
        make_sketch(replies[0].split("\n")[-1], CFG).vocab.tolist()
    )


def test_chrome_passages_are_shown_beside_the_ones_that_counted() -> None:
    """A decision's evidence is what counted; what was set aside as chrome is listed apart."""
    rng = random.Random(9)
    block = zh(rng, 4)
    dd = Deduper()
    for k in range(CFG.common_after):  # the block becomes chrome
        dd.check_and_add(f"s{k}", zh(rng, 2) + "\n" + block + "\n" + zh(rng, 2))
    story = zh(rng, 8)
    dd.check_and_add("story", story + "\n" + block)
    d = dd.check_and_add("copy", "转载\n" + story + "\n" + block)
    assert d.is_duplicate and d.duplicate_of == "story"
    assert d.evidence and d.chrome
    middle = block[8:16].replace("，", ",")  # the block's first units share shingles with the story
    assert any(middle in p.text for p in d.chrome)
    assert not any(middle in p.text for p in d.evidence)


# -- the verdict itself ------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_copy_and_extends_verdicts(lang: str) -> None:
    """verify says the same story, and whether the later text is a copy."""
    rng = random.Random(10)
    write = zh if lang == "zh" else en
    story, more = write(rng, 8), write(rng, 4)
    a, b = make_sketch(story, CFG), make_sketch(story + "\n" + more, CFG)
    longer_after = verify(b, a, CFG)
    assert longer_after.is_duplicate and not longer_after.is_copy
    assert 0.5 < longer_after.copy_score < CFG.copy_threshold
    shorter_after = verify(a, b, CFG)
    assert shorter_after.is_duplicate and shorter_after.is_copy


def test_learned_chrome_counts_stories_not_copies() -> None:
    """Copies of one story do not make its text chrome; different stories do."""
    rng = random.Random(11)
    story = zh(rng, 6)
    ids = [f"c{k}" for k in range(8)]
    d = dedup_batch(ids, [story + "。" * k for k in range(8)]).decisions
    assert all(x.is_duplicate for x in d[1:])  # the eighth copy still matches
    common = CommonShingles(limit=CFG.common_after)
    common.add(make_sketch(story, CFG).vocab)
    assert not common.is_common(make_sketch(story, CFG).vocab).any()
