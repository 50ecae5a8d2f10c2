"""A tiny local news web to try the example on: two sites, each with its own menus and
footer, publishing the same two stories (one Chinese, one English) under their own URLs.

    python demo_site.py            # serves http://127.0.0.1:8300/ until Ctrl-C
    python demo_site.py --port 8123

Its port is 8300, not 8000: ``neardup serve`` listens on 8000, and the two run side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import html
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STORIES = {
    "lantern": (
        "古城元宵灯会吸引十万游客",
        [
            "正月十五晚上，南河古城举办元宵灯会，三百多组彩灯沿着护城河一字排开，吸引了约十万名"
            "游客前来观灯、猜灯谜。",
            "今年的灯组由本地非遗传承人和美术学院师生共同设计，其中一条长达六十米的巨龙彩灯用了"
            "两千多个节能灯泡，每隔十分钟就会随音乐变换颜色。",
            "为了保障游客安全，古城管理处增派了四百名工作人员和志愿者，并在入口处实行分时段预约，"
            "游客可以通过手机提前选择入场时间。",
        ],
    ),
    "ferry": (
        "Electric ferry enters service on the bay",
        [
            "The first battery-powered ferry on Larch Bay carried its first passengers on Monday, "
            "crossing from the harbour to Gull Island in twenty-two minutes without a sound from "
            "its engines.",
            "The 40-metre vessel charges for fifteen minutes at each end of the route and can "
            "carry 300 passengers and twenty cars. The operator says it will save about 900 "
            "tonnes of diesel a year.",
            "Two more electric ferries are being built at the Northgate yard and should join the "
            "route next spring, when the last of the old diesel boats will be retired.",
        ],
    ),
}

SITES = {
    "daily": ("Bay Daily", "Home · Local · Business · Sport · Weather", "© Bay Daily. Subscribe."),
    "kuaixun": ("南河快讯", "首页 · 本地 · 财经 · 体育 · 视频", "版权所有 未经授权禁止转载"),
}


def page(site: str, key: str | None) -> str:
    name, nav, footer = SITES[site]
    if key is None:
        links = "".join(
            f'<li><a href="/{site}/{k}.html">{html.escape(t)}</a></li>'
            for k, (t, _) in STORIES.items()
        )
        main = f"<ul>{links}</ul>"
    else:
        title, paras = STORIES[key]
        if site == "kuaixun":  # the reprint: a reprint line before the story
            paras = ["（转载）" + paras[0], *paras[1:]]
        text = "".join(f"<p>{html.escape(p)}</p>" for p in paras)
        main = f"<article><h1>{html.escape(title)}</h1>{text}</article>"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{name}</title></head><body>"
        f"<header><b>{name}</b><nav><a href='/{site}/'>{nav}</a></nav></header>"
        f"<main>{main}</main><footer><p>{footer}</p></footer></body></html>"
    )


def pages() -> dict[str, str]:
    """Every page of the demo web by path."""
    out = {"/": "".join(f'<p><a href="/{s}/">{SITES[s][0]}</a></p>' for s in SITES)}
    for site in SITES:
        out[f"/{site}/"] = page(site, None)
        for key in STORIES:
            out[f"/{site}/{key}.html"] = page(site, key)
    return out


class Handler(BaseHTTPRequestHandler):
    PAGES = pages()

    def do_GET(self) -> None:
        body = self.PAGES.get(self.path)
        if body is None:
            self.send_error(404)
            return
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8300)
    port = parser.parse_args().port
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"serving the demo news web on http://127.0.0.1:{port}/", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
