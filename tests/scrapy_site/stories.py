"""Invented news stories for the Scrapy tests, in Chinese and English, written for them.

Each story is published once on the site that wrote it and reprinted on the other sites, each
reprint edited a little (a reprint line, a new headline, a dateline, a cut, Traditional
characters). Two pairs of "template" stories share their wording but not their facts: they
are different stories and must both be kept.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Story:
    """One story: a key, its language, headline and paragraphs."""

    key: str
    lang: str
    title: str
    paragraphs: tuple[str, ...]


STORIES: tuple[Story, ...] = (
    Story(
        "zh-metro",
        "zh",
        "青州地铁五号线今天开通运营",
        (
            "青州市轨道交通五号线今天上午正式开通运营。这条线路全长28.6公里，共设车站21座，"
            "其中换乘站6座，连接城市东部的高新区和西部的老城区。",
            "据市轨道交通集团介绍，五号线采用六节编组列车，最高运行时速80公里，早晚高峰最小"
            "行车间隔为三分三十秒。开通初期，全线首班车时间为早上六点，末班车时间为晚上十一点。",
            "五号线建成后，从高新区到老城区的通勤时间将由原来的一个多小时缩短到四十分钟左右。"
            "市民王女士在首班车上告诉记者，她过去每天要换乘两次公交车上班，现在可以直达公司附近，"
            "非常方便。",
            "据了解，青州市目前还有三条地铁线路在建，预计到明年底，全市轨道交通运营里程将超过"
            "200公里，中心城区居民步行十五分钟即可到达地铁站。",
        ),
    ),
    Story(
        "zh-tea",
        "zh",
        "云岭县高山茶园迎来春茶采摘旺季",
        (
            "四月中旬，云岭县的高山茶园迎来春茶采摘旺季。清晨六点，茶农们便背着竹篓走进云雾"
            "缭绕的茶山，手指翻飞间，一芽一叶的嫩梢被轻轻摘下。",
            "今年当地气温回升平稳，降雨充足，春茶发芽比往年早了一周左右，芽头饱满，品质上乘。"
            "县农业农村局负责人介绍，全县茶园面积已达12万亩，预计今年春茶产量将达到4800吨，"
            "产值突破9亿元。",
            "为了帮助茶农增收，当地建起了17个茶叶初制所，并与电商平台合作开设直播间，让新茶从"
            "采摘到送达消费者手中只需要三天。",
            "茶农李大爷算了一笔账：自家八亩茶园，去年收入六万多元，今年行情更好，有望再多收"
            "一成。他说，等忙完这一季，打算把老房子翻修一下，再给孙子买台电脑。",
        ),
    ),
    Story(
        "zh-books",
        "zh",
        "省图书馆完成一批明代刻本抢救性修复",
        (
            "省图书馆古籍修复中心近日完成了一批明代刻本的抢救性修复工作。这批古籍共有36册，"
            "因年代久远，多数存在虫蛀、霉变和纸张粘连等问题，有的书页已经脆化到一碰就碎。",
            "修复师们先对每一页进行拍照存档，再用特制的毛刷清除污渍，随后用传统的手工纸和"
            "小麦淀粉浆糊逐页补缀。中心主任介绍，一册破损严重的古籍往往需要两到三个月才能修好，"
            "整批工作前后历时一年半。",
            "修复完成的古籍将进行数字化扫描，读者今后可以在图书馆网站上在线阅读全文。目前，"
            "该中心还在培养年轻修复师，已有12名学员通过了考核，正式加入修复团队。",
        ),
    ),
    Story(
        "zh-weather-north",
        "zh",
        "气象台发布明日天气预报",
        (
            "市气象台今天下午发布天气预报：明天白天，北部山区多云转阴，有小雨，气温12到19摄氏度，"
            "东北风三到四级；中部平原晴转多云，气温16到25摄氏度，南风二到三级。",
            "气象专家提醒，受冷空气影响，北部山区夜间最低气温将降至8摄氏度，早晚温差较大，"
            "请市民注意添衣保暖，驾车出行注意山区路段湿滑。",
        ),
    ),
    Story(
        "zh-weather-south",
        "zh",
        "气象台发布明日天气预报",
        (
            "市气象台今天下午发布天气预报：明天白天，南部沿海晴，午后有雷阵雨，气温23到31摄氏度，"
            "东南风四到五级；西部丘陵阴转小雨，气温18到24摄氏度，西北风一到二级。",
            "气象专家提醒，受副热带高压影响，南部沿海午后最高气温将升至33摄氏度，紫外线强，"
            "请市民注意防暑降温，海上作业船只注意雷电大风。",
        ),
    ),
    Story(
        "en-bridge",
        "en",
        "Old Mill Bridge reopens after two-year rebuild",
        (
            "The Old Mill Bridge over the Tamber River reopened to traffic on Saturday morning "
            "after a two-year reconstruction that replaced its rusting steel deck and widened "
            "the crossing from two lanes to four.",
            "City engineer Maria Okafor said the new deck rests on the original stone piers, "
            "which divers inspected and reinforced with concrete collars last spring. The $41 "
            "million project also added a protected cycle lane and a footpath on each side.",
            "About 18,000 vehicles crossed the bridge every day before it closed, and the "
            "detour through the industrial district added up to twenty minutes to many commutes. "
            "Shop owners on Quay Street, who say they lost a third of their trade during the "
            "closure, welcomed the first cars with coffee and music.",
            "The council will keep a reduced speed limit of 25 miles per hour on the bridge "
            "until the new surface has settled, and expects to lift it before the end of the "
            "summer.",
        ),
    ),
    Story(
        "en-turtles",
        "en",
        "Researchers fit trackers to nesting sea turtles",
        (
            "Marine biologists on Pelican Key have fitted satellite trackers to nine loggerhead "
            "turtles that came ashore to nest this month, hoping to learn where the animals "
            "feed between breeding seasons.",
            "Each tracker, about the size of a smartphone, is glued to the turtle's shell with a "
            "marine epoxy and falls off on its own within a year. The devices report the "
            "turtle's position whenever it surfaces to breathe.",
            "Lead researcher Tom Halvorsen said earlier studies suggested that the island's "
            "turtles travel as far as the continental shelf, more than 400 kilometres away, "
            "but nobody had followed one for a full season.",
            "Volunteers counted 212 nests on the island's beaches last year. The public can "
            "follow the nine turtles, each named by a local school class, on the project's "
            "website.",
        ),
    ),
    Story(
        "en-orchard-earnings",
        "en",
        "Orchard Foods reports quarterly results",
        (
            "Orchard Foods said on Tuesday that net profit for the third quarter rose to $12.4 "
            "million, or 31 cents a share, from $9.8 million, or 25 cents a share, a year "
            "earlier. Revenue increased 7 percent to $188 million.",
            "The company said results were helped by higher prices for its packaged fruit and "
            "lower shipping costs. It expects full-year revenue of $720 million to $735 million.",
        ),
    ),
    Story(
        "en-harbor-earnings",
        "en",
        "Harbor Steel reports quarterly results",
        (
            "Harbor Steel said on Tuesday that net profit for the third quarter fell to $4.1 "
            "million, or 9 cents a share, from $6.6 million, or 15 cents a share, a year "
            "earlier. Revenue decreased 3 percent to $302 million.",
            "The company said results were hurt by weaker demand for its construction beams and "
            "higher energy costs. It expects full-year revenue of $1.19 billion to $1.22 billion.",
        ),
    ),
)


def reprint(story: Story, site: str) -> tuple[str, tuple[str, ...]]:
    """The headline and paragraphs ``site`` publishes for ``story`` (its own edit of it)."""
    title, paras = story.title, list(story.paragraphs)
    if site == "b":  # a reprint line, a new headline, and (in Chinese) Traditional characters
        if story.lang == "zh":
            import opencc

            t2 = opencc.OpenCC("s2t")
            title = "转载｜" + t2.convert(title)
            paras = ["（本文转载自《晨报》）" + t2.convert(paras[0])] + [
                t2.convert(p) for p in paras[1:]
            ]
        else:
            title = "UPDATE: " + title
            paras = ["HARBOR CITY (Coastal Wire) - " + paras[0], *paras[1:]]
    elif site == "c":  # cut: the last paragraph goes, a word changes
        if len(paras) > 2:
            paras = paras[:-1]
        if story.lang == "zh":
            paras[0] = paras[0].replace("今天", "今日", 1)
            title = title + "（图）"
        else:
            paras[0] = paras[0].replace("said", "says", 1)
            paras.append("This article first appeared in The Morning Ledger.")
    return title, tuple(paras)
