"""What the Scrapy add-on costs a crawl: pages per second with and without it, in one run.

    python bench/scrapy_overhead.py                 # 2,000 pages, 5 rounds
    python bench/scrapy_overhead.py --pages 500 --rounds 3

A local news web of ``--pages`` article pages (half Chinese, half English, made up from a
fixed seed; a quarter of them reprints of earlier pages with a reprint line, a new headline
or a cut) plus index pages linking them is written to a temporary folder and served by
``python -m http.server`` in a process of its own. The example project's spider
(``examples/scrapy_project``) crawls all of it, as a process of its own, in these set-ups:

- ``off``: the add-on switched off (``NEARDUP_ENABLED = False``): the baseline;
- ``text``: the add-on comparing the item's ``text`` field (the default set-up);
- ``html``: the example project as shipped: the main text extracted from the page's HTML
  with trafilatura (``NEARDUP_HTML_FIELD = "html"``), then compared;
- ``text thread`` and ``html thread``: the same with ``NEARDUP_WORKER = "thread"`` (the
  decisions made on a thread of the crawler's process instead of a process of their own).

Each round runs every set-up in a rotated order; pages/s is Scrapy's own count of responses
over its ``elapsed_time_seconds``. The table gives the median of the rounds, the median of
the per-round ratios to ``off`` (so a machine that drifts during the run moves both sides),
and the CPU seconds of the crawl (the crawler and the add-on's worker process) with what
the add-on adds per page. On a machine with a core to spare the worker's work runs beside
the crawl; on a busy one every CPU second it takes is a second the crawl waits, so the
pages/s ratio then follows the CPU ratio: the table prints the load average. Every run must keep each story once: the script checks the
kept count against the web's number of stories.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import ROOT, header

EXAMPLE = ROOT / "examples" / "scrapy_project"
SETUPS = {
    "off": {"NEARDUP_ENABLED": "False"},
    "text": {"NEARDUP_HTML_FIELD": ""},
    "text thread": {"NEARDUP_HTML_FIELD": "", "NEARDUP_WORKER": "thread"},
    "html": {},
    "html thread": {"NEARDUP_WORKER": "thread"},
}
PER_INDEX = 50

_ZH = (
    "记者 今天 上午 宣布 市民 政府 工作 项目 建设 发展 经济 城市 地区 企业 公司 市场 价格 "
    "增长 下降 服务 交通 地铁 公交 铁路 机场 学校 学生 老师 医院 医生 患者 农民 茶叶 粮食 "
    "天气 气温 降雨 台风 游客 景区 文化 博物馆 图书馆 活动 比赛 球队 冠军 科技 研究 专家 "
    "数据 平台 网络 手机 电动 汽车 能源 电力 环境 保护 河流 森林 公园 社区 居民 安全 消防 "
    "警方 法院 改革 政策 计划 预计 完成 开通 运营 投资 亿元 万元 公里 吨 面积 人口 "
    "同比 提高 推动 加快 支持 鼓励 介绍 表示 认为 指出 据悉 目前 此外 同时 今年 去年 明年"
)
_EN = (
    "the council said on tuesday that a new bridge will open next month after two years of "
    "work city officials expect traffic to fall by a third while shop owners welcomed the "
    "plan researchers found that water levels in the river rose sharply during the storm "
    "company reported profit revenue quarter shares investors market prices energy power "
    "school students teachers hospital patients doctors police court judge mayor election "
    "voters campaign weather rain wind temperature island beach turtles ferry harbour port "
    "train station line service passengers minutes hours miles kilometres million billion "
    "percent year week month people residents community park forest library museum festival"
)
ZH_WORDS, EN_WORDS = _ZH.split(), _EN.split()


def _zh_paragraph(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(3, 5)):
        words = [rng.choice(ZH_WORDS) for _ in range(rng.randint(8, 14))]
        words.insert(rng.randrange(len(words)), str(rng.randint(2, 9999)))
        sentences.append("".join(words) + "。")
    return "".join(sentences)


def _en_paragraph(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(3, 5)):
        words = [rng.choice(EN_WORDS) for _ in range(rng.randint(12, 22))]
        words.insert(rng.randrange(len(words)), str(rng.randint(2, 9999)))
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


def _page(site: int, title: str, body: str) -> str:
    nav = "".join(f'<li><a href="/index-0.html">Section {i}</a></li>' for i in range(8))
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><header><b>Site {site}</b><nav><ul>{nav}</ul></nav></header><main>{body}</main>"
        f"<footer><p>Copyright site {site}. All rights reserved. Subscribe to our newsletter. "
        f"版权所有 未经授权禁止转载。</p></footer></body></html>"
    )


def write_site(folder: Path, pages: int, seed: int = 20240501) -> int:
    """Write the web into ``folder``; return the number of distinct stories."""
    rng = random.Random(seed)
    articles: list[tuple[str, list[str]]] = []
    stories = 0
    for n in range(pages):
        if n >= 8 and rng.random() < 0.25:  # a reprint of an earlier story
            title, paras = articles[rng.randrange(len(articles))]
            paras = list(paras)
            edit = rng.randrange(3)
            if edit == 0:
                paras[0] = "(Reprinted) 转载：" + paras[0]
            elif edit == 1:
                title = "UPDATE: " + title
            elif len(paras) > 2:
                paras = paras[:-1]
        else:
            stories += 1
            zh = n % 2 == 0
            para = _zh_paragraph if zh else _en_paragraph
            paras = [para(rng) for _ in range(rng.randint(3, 6))]
            title = f"Story {n} " + ("新闻" if zh else "news")
        articles.append((title, paras))
        text = "".join(f"<p>{p}</p>" for p in paras)
        body = f"<article><h1>{title}</h1>{text}</article>"
        (folder / f"a{n}.html").write_text(_page(n % 5, title, body), encoding="utf-8")
    indexes = (pages + PER_INDEX - 1) // PER_INDEX
    for i in range(indexes):
        links = "".join(
            f'<li><a href="/a{n}.html">article {n}</a></li>'
            for n in range(i * PER_INDEX, min(pages, (i + 1) * PER_INDEX))
        )
        more = f'<a href="/index-{i + 1}.html">next</a>' if i + 1 < indexes else ""
        (folder / f"index-{i}.html").write_text(_page(0, "index", f"<ul>{links}</ul>{more}"))
    first = "".join(f'<li><a href="/index-{i}.html">page {i}</a></li>' for i in range(indexes))
    (folder / "index.html").write_text(_page(0, "home", f"<ul>{first}</ul>"))
    return stories


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def crawl(url: str, setup: str, out: Path) -> dict[str, float]:
    """One crawl of the web as a child process: pages/s, its CPU seconds, items kept."""
    cmd = [sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={url}"]
    cmd += ["-O", str(out), "-s", "LOG_LEVEL=INFO", "-s", "TELNETCONSOLE_ENABLED=False"]
    for key, value in SETUPS[setup].items():
        cmd += ["-s", f"{key}={value}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=EXAMPLE, stderr=subprocess.PIPE, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = proc.stderr
    if proc.returncode != 0:
        raise SystemExit(f"crawl ({setup}) failed:\n{log[-3000:]}")
    responses = re.search(r"'response_received_count': (\d+)", log)
    elapsed = re.search(r"'elapsed_time_seconds': ([\d.]+)", log)
    if responses is None or elapsed is None:
        raise SystemExit(f"crawl ({setup}) printed no stats:\n{log[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "pages_s": int(responses.group(1)) / float(elapsed.group(1)),
        "cpu": cpu,
        "kept": len(out.read_text("utf-8").splitlines()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="neardup-scrapy-bench-") as tmp:
        web = Path(tmp) / "web"
        web.mkdir()
        stories = write_site(web, args.pages)
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            cwd=web,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}/index.html"
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            results: dict[str, list[dict[str, float]]] = {s: [] for s in SETUPS}
            order = list(SETUPS)
            for r in range(args.rounds):
                for setup in order[r % len(order) :] + order[: r % len(order)]:
                    res = crawl(url, setup, Path(tmp) / f"{setup}-{r}.jsonl")
                    results[setup].append(res)
                    print(
                        f"round {r + 1} {setup:>11}: {res['pages_s']:7.1f} pages/s, "
                        f"{int(res['kept'])} items",
                        file=sys.stderr,
                    )
        finally:
            server.terminate()
            server.wait(timeout=30)
    report(results, args.pages, stories, args.rounds)


def report(
    results: dict[str, list[dict[str, float]]], pages: int, stories: int, rounds: int
) -> None:
    base = results["off"]
    print(header("Scrapy add-on overhead", {"scrapy": _version("scrapy")}))
    print(f"{pages} article pages ({stories} stories), {rounds} rounds; medians\n")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average at the end (1, 5, 15 min): {load} on {os.cpu_count()} CPUs\n")
    print(
        "| set-up | pages/s | vs off | overhead | CPU s (crawler + worker) | CPU ms/page added | items kept |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    base_cpu = statistics.median(r["cpu"] for r in base)
    for setup, runs in results.items():
        rate = statistics.median(r["pages_s"] for r in runs)
        ratio = statistics.median(
            r["pages_s"] / b["pages_s"] for r, b in zip(runs, base, strict=True)
        )
        cpu = statistics.median(r["cpu"] for r in runs)
        kept = sorted({int(r["kept"]) for r in runs})
        print(
            f"| {setup} | {rate:.0f} | {ratio:.3f} | {100 * (1 - ratio):.1f} % | {cpu:.1f} | "
            f"{1000 * (cpu - base_cpu) / pages:.2f} | {', '.join(map(str, kept))} |"
        )
    for setup in list(SETUPS)[1:]:
        wrong = [int(r["kept"]) for r in results[setup] if int(r["kept"]) != stories]
        if wrong:
            print(f"\nwarning: {setup} kept {wrong} items, not the {stories} stories")


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
