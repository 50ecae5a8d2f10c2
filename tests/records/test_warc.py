"""WARC and WET input: files the tests write with a real WARC library (warcio), and a WARC
made by ``wget --warc-file`` of the local news web the Scrapy tests crawl, which must keep
the same stories as the Scrapy crawl of that web. UNIQUE of WARC input is a WARC again,
record for record byte-for-byte, readable by WARC tools."""

from __future__ import annotations

import gzip
import html
import io
import json
import shutil
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("fastwarc")
pytest.importorskip("trafilatura")
warcio = pytest.importorskip("warcio")

from fastwarc.warc import ArchiveIterator as FastIterator  # noqa: E402
from warcio.archiveiterator import ArchiveIterator  # noqa: E402
from warcio.statusandheaders import StatusAndHeaders  # noqa: E402
from warcio.warcwriter import WARCWriter  # noqa: E402

from ..run.test_cli_dedup import (  # noqa: E402
    EN_OTHER,
    EN_REPRINT,
    EN_STORY,
    ZH_OTHER,
    ZH_REPRINT,
    ZH_STORY,
    read_jsonl,
    run,
)

DATE = "2026-03-12T09:00:00Z"


def page(site: str, title: str, text: str) -> bytes:
    """A news page: the site's menu and footer around an article of paragraphs."""
    paras = "".join(f"<p>{html.escape(p)}</p>" for p in text.split("。") if p.strip())
    if not paras:
        paras = f"<p>{html.escape(text)}</p>"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"</head><body><nav><a href='/'>{site} 首页</a> <a href='/news'>News</a></nav>"
        f"<article><h1>{html.escape(title)}</h1>{paras}</article>"
        f"<footer><p>© {site}. All rights reserved. 版权所有</p></footer></body></html>"
    ).encode()


class Warc:
    """A WARC written with warcio, record by record (gzip per record, as crawlers do)."""

    def __init__(self, path: Path, *, gzip: bool = True) -> None:
        self.file = path.open("wb")
        self.writer = WARCWriter(self.file, gzip=gzip)
        self.writer.write_record(self.writer.create_warcinfo_record(path.name, {"software": "t"}))

    def capture(
        self,
        uri: str,
        body: bytes,
        *,
        ctype: str = "text/html; charset=utf-8",
        status: str = "200 OK",
        metadata: bool = False,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> str:
        """A request, its response (with more HTTP ``headers``: its body is written as given)
        and (optionally) a metadata record; the response's id."""
        w = self.writer
        http = StatusAndHeaders(status, [("Content-Type", ctype), *headers], protocol="HTTP/1.1")
        resp = w.create_warc_record(
            uri,
            "response",
            payload=io.BytesIO(body),
            http_headers=http,
            warc_headers_dict={"WARC-Date": DATE},
        )
        rid = resp.rec_headers.get_header("WARC-Record-ID")
        req = w.create_warc_record(
            uri,
            "request",
            payload=io.BytesIO(f"GET {uri} HTTP/1.1\r\nHost: x\r\n\r\n".encode()),
            warc_headers_dict={"WARC-Concurrent-To": rid},
        )
        w.write_record(req)
        w.write_record(resp)
        if metadata:
            meta = w.create_warc_record(
                uri,
                "metadata",
                payload=io.BytesIO(b"fetchTimeMs: 12\r\n"),
                warc_headers_dict={"WARC-Concurrent-To": rid},
            )
            w.write_record(meta)
        return str(rid)

    def revisit(self, uri: str, refers_to: str) -> None:
        w = self.writer
        rec = w.create_revisit_record(uri, "sha1:AAAA", uri, DATE)
        rec.rec_headers.add_header("WARC-Refers-To", refers_to)
        w.write_record(rec)

    def close(self) -> None:
        self.file.close()


def crawl_warc(path: Path, *, gzip: bool = True) -> dict[str, str]:
    """The fixture crawl: stories in both languages with their reprints, a request per
    response, metadata, a revisit, a PDF, a 404, and one URI fetched twice. Returns the
    response record ids by a name."""
    w = Warc(path, gzip=gzip)
    ids = {
        "zh": w.capture(
            "https://a.example/zh/1.html", page("南湖日报", "图书馆新馆开放", ZH_STORY)
        ),
        "en": w.capture(
            "https://a.example/en/1.html", page("Ledger", "Park plan", EN_STORY), metadata=True
        ),
    }
    w.capture("https://a.example/report.pdf", b"%PDF-1.4 ...", ctype="application/pdf")
    ids["zh_r"] = w.capture(
        "https://b.example/zh/9.html", page("环球快讯", "转载：图书馆新馆开放", ZH_REPRINT)
    )
    w.capture("https://b.example/missing", b"<html>Not found</html>", status="404 Not Found")
    ids["en_r"] = w.capture(
        "https://b.example/en/9.html", page("Wire", "Rail yard park", EN_REPRINT), metadata=True
    )
    w.revisit("https://b.example/en/9.html", ids["en_r"])
    ids["zh2"] = w.capture("https://a.example/zh/2.html", page("南湖日报", "游泳馆", ZH_OTHER))
    ids["en2"] = w.capture("https://a.example/en/2.html", page("Ledger", "Ferry", EN_OTHER))
    ids["zh_again"] = w.capture(  # the same URI fetched again, the same page
        "https://a.example/zh/1.html", page("南湖日报", "图书馆新馆开放", ZH_STORY)
    )
    w.close()
    return ids


def records_of(path: Path) -> list[tuple[str, str | None, bytes]]:
    """(type, target URI, content) of every record, read with warcio."""
    out = []
    with path.open("rb") as f:
        for rec in ArchiveIterator(f):
            out.append(
                (
                    rec.rec_type,
                    rec.rec_headers.get_header("WARC-Target-URI"),
                    rec.content_stream().read(),
                )
            )
    return out


def members(path: Path) -> list[bytes]:
    """The gzip members of a file, as bytes (each WARC record is one)."""
    data = path.read_bytes()
    with path.open("rb") as f:
        offsets = [r.stream_pos for r in FastIterator(f)]
    return [data[a:b] for a, b in zip(offsets, [*offsets[1:], len(data)], strict=True)]


def dedup_warc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: Path, unique: str, *extra: str
) -> tuple[list[dict[str, object]], list[dict[str, object]], str]:
    argv = ["dedup", str(source), "-o", str(tmp_path / unique)]
    argv += ["--clusters", str(tmp_path / "c.jsonl"), "--errors", str(tmp_path / "e.jsonl"), *extra]
    status, _, err = run(argv, capsys)
    assert status == 0, err
    return read_jsonl(tmp_path / "c.jsonl"), read_jsonl(tmp_path / "e.jsonl"), err


def test_warc_records_and_decisions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each 2xx HTML response is a record named by its URI (a repeated URI gets its record
    id), dated by WARC-Date; the rest is counted, not an error."""
    source = tmp_path / "crawl.warc.gz"
    ids = crawl_warc(source)
    clusters, errors, err = dedup_warc(tmp_path, capsys, source, "u.warc.gz")
    assert errors == []
    again = f"https://a.example/zh/1.html {ids['zh_again']}"
    assert {c["id"]: c["cluster"] for c in clusters} == {
        "https://a.example/zh/1.html": "https://a.example/zh/1.html",
        "https://a.example/en/1.html": "https://a.example/en/1.html",
        "https://b.example/zh/9.html": "https://a.example/zh/1.html",
        "https://b.example/en/9.html": "https://a.example/en/1.html",
        "https://a.example/zh/2.html": "https://a.example/zh/2.html",
        "https://a.example/en/2.html": "https://a.example/en/2.html",
        again: "https://a.example/zh/1.html",
    }
    assert "7 in → 4 kept, 3 duplicates" in err
    note = next(line for line in err.splitlines() if "WARC records held no document" in line)
    for kind in (
        "request ×9",
        "warcinfo ×1",
        "metadata ×2",
        "revisit ×1",
        "response not HTML (application/pdf) ×1",
        "response with HTTP status 404 ×1",
    ):
        assert kind in note


def test_unique_warc_keeps_the_kept_captures_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """UNIQUE is a WARC: every record but the duplicates' captures (request, response,
    metadata, and the revisit that refers to one), each gzip member copied as it was;
    warcio and FastWARC read it."""
    source = tmp_path / "crawl.warc.gz"
    crawl_warc(source)
    dedup_warc(tmp_path, capsys, source, "u.warc.gz")
    out = tmp_path / "u.warc.gz"
    written = records_of(out)
    dropped = {"https://b.example/zh/9.html", "https://b.example/en/9.html"}
    expected = [r for r in records_of(source) if r[1] not in dropped]
    # the second fetch of zh/1.html is a byte-identical copy: its capture goes too
    zh1 = [k for k, r in enumerate(expected) if r[1] == "https://a.example/zh/1.html"]
    expected = [r for k, r in enumerate(expected) if k not in zh1[2:]]
    assert written == expected
    assert [t for t, _, _ in written].count("response") == 6  # 4 stories, the PDF, the 404
    kept_members = set(members(out))
    assert kept_members <= set(members(source))  # byte for byte
    with out.open("rb") as f:
        assert sum(1 for _ in FastIterator(f)) == len(written)


def test_uncompressed_warc_in_gzip_out_and_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An uncompressed WARC gives a .warc.gz of the same records, and the other way round."""
    source = tmp_path / "crawl.warc"
    crawl_warc(source, gzip=False)
    dedup_warc(tmp_path, capsys, source, "u.warc.gz")
    dedup_warc(tmp_path, capsys, tmp_path / "u.warc.gz", "back.warc")
    assert records_of(tmp_path / "back.warc") == records_of(tmp_path / "u.warc.gz")
    assert (
        gzip.decompress((tmp_path / "u.warc.gz").read_bytes())
        == (tmp_path / "back.warc").read_bytes()
    )


def test_warc_in_one_gzip_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A WARC gzipped whole (not record by record) is read, and written back record by
    record with the same contents."""
    plain = tmp_path / "crawl.warc"
    crawl_warc(plain, gzip=False)
    source = tmp_path / "whole.warc.gz"
    source.write_bytes(gzip.compress(plain.read_bytes()))
    clusters, _, _ = dedup_warc(tmp_path, capsys, source, "u.warc")
    assert sum(c["duplicate_of"] is None for c in clusters) == 4
    assert len([r for r in records_of(tmp_path / "u.warc") if r[0] == "response"]) == 6


@pytest.mark.parametrize("packing", ["zstd-per-record", "zstd-whole", "bzip2", "xz"])
def test_zstd_bzip2_and_xz_warcs_in_and_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], packing: str
) -> None:
    """A .warc.zst (a zstd frame a record, or one frame), .warc.bz2 or .warc.xz is read, and
    UNIQUE — .warc, .warc.gz or .warc.zst — holds the kept records whatever the input's
    compression (a zstd input's frames were copied raw into a .warc or wrapped in gzip:
    corrupt output, exit status 0; bzip2 and xz were 'Invalid WARC header'); a .warc.zst
    written from a .warc.zst copies its frames byte for byte."""
    import bz2
    import lzma

    zstandard = pytest.importorskip("zstandard")
    gz = tmp_path / "crawl.warc.gz"
    crawl_warc(gz)
    records = [gzip.decompress(m) for m in members(gz)]
    plain = b"".join(records)
    packer = zstandard.ZstdCompressor()
    data = {
        "zstd-per-record": b"".join(packer.compress(r) for r in records),
        "zstd-whole": packer.compress(plain),
        "bzip2": bz2.compress(plain),
        "xz": lzma.compress(plain),
    }[packing]
    suffix = {"zstd-per-record": "zst", "zstd-whole": "zst", "bzip2": "bz2", "xz": "xz"}[packing]
    source = tmp_path / f"crawl.warc.{suffix}"
    source.write_bytes(data)
    reference, _, _ = dedup_warc(tmp_path, capsys, gz, "ref.warc")
    for out in ("u.warc", "u.warc.gz", "u.warc.zst"):
        clusters, errors, _ = dedup_warc(tmp_path, capsys, source, out)
        assert errors == [] and clusters == reference
        written = tmp_path / out
        if out.endswith(".zst"):  # (warcio reads no zstd)
            written = tmp_path / "unpacked.warc"
            written.write_bytes(b"".join(records_of_bytes((tmp_path / out).read_bytes())))
        assert records_of(written) == records_of(tmp_path / "ref.warc")
    if packing == "zstd-per-record":
        frames = (tmp_path / "u.warc.zst").read_bytes()
        assert all(packer.compress(r) in data for r in records_of_bytes(frames))


def records_of_bytes(zst: bytes) -> list[bytes]:
    """The records of a WARC of zstd frames, as their uncompressed bytes."""
    import zstandard

    out = []
    reader = zstandard.ZstdDecompressor()
    while zst:
        obj = reader.decompressobj()
        out.append(obj.decompress(zst))
        zst = obj.unused_data
    return out


def test_a_warc_from_standard_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``cat crawl.warc.gz | neardup dedup - --format warc`` (FastWARC panicked: it seeks)."""
    import contextlib
    import io as _io

    source = tmp_path / "crawl.warc.gz"
    crawl_warc(source)
    reference, _, _ = dedup_warc(tmp_path, capsys, source, "ref.jsonl")
    for data in (source.read_bytes(), gzip.decompress(source.read_bytes())):
        stdin = _io.TextIOWrapper(_io.BytesIO(data))
        with contextlib.ExitStack() as stack:
            stack.enter_context(pytest.MonkeyPatch.context()).setattr(sys, "stdin", stdin)
            clusters, errors, _ = dedup_warc(tmp_path, capsys, "-", "u.jsonl", "--format", "warc")  # type: ignore[arg-type]
        assert errors == [] and clusters == reference


def test_warc_to_jsonl_writes_the_extracted_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-o unique.jsonl`` (or --output-format jsonl) writes the main text of the kept pages."""
    source = tmp_path / "crawl.warc.gz"
    crawl_warc(source)
    dedup_warc(tmp_path, capsys, source, "u.jsonl")
    kept = read_jsonl(tmp_path / "u.jsonl")
    assert [k["id"] for k in kept] == [
        "https://a.example/zh/1.html",
        "https://a.example/en/1.html",
        "https://a.example/zh/2.html",
        "https://a.example/en/2.html",
    ]
    assert "南湖区图书馆新馆正式向市民开放" in str(kept[0]["text"])
    assert "首页" not in str(kept[0]["text"]) and "版权所有" not in str(kept[0]["text"])
    assert kept[0]["timestamp"] == 1773306000.0


def test_wet_conversion_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A WET file's conversion records give their plain text directly."""
    path = tmp_path / "crawl.warc.wet.gz"
    with path.open("wb") as f:
        w = WARCWriter(f, gzip=True)
        for n, text in enumerate([ZH_STORY, EN_STORY, ZH_REPRINT, EN_OTHER]):
            rec = w.create_warc_record(
                f"https://c.example/{n}",
                "conversion",
                payload=io.BytesIO(text.encode()),
                warc_content_type="text/plain",
            )
            w.write_record(rec)
    clusters, _, _ = dedup_warc(tmp_path, capsys, path, "u.wet.gz")
    assert [c["cluster"] for c in clusters] == [
        "https://c.example/0",
        "https://c.example/1",
        "https://c.example/0",
        "https://c.example/3",
    ]
    assert [u for t, u, _ in records_of(tmp_path / "u.wet.gz")] == [
        "https://c.example/0",
        "https://c.example/1",
        "https://c.example/3",
    ]


def test_pages_are_read_in_the_charset_their_http_header_declares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A page whose charset only the response's Content-Type names is read in it (as a
    browser reads it: ``iso-8859-1`` as windows-1252, ``big5`` as Big5-HKSCS), not in the one
    a guess finds; a page whose bytes are UTF-8 is UTF-8 whatever a misconfigured server
    says; a page with no declaration at all is still read (guessed)."""
    latin = "“Café” owners in Zürich say naïve tourists pay €5 more."
    hk = "立法會今日三讀通過《啓德發展條例》，議員就修訂辯論。"
    zh = "国务院今日召开常务会议，研究部署稳就业工作。"
    zh2 = "国家统计局发布数据，十月份社会消费品零售总额增长。"
    latin2 = "A “naïve” résumé costs €20 at the café, señor."

    def short(text: str) -> str:
        return f"<html><head><title>t</title></head><body><article><p>{text}</p></article></body></html>"

    path = tmp_path / "crawl.warc.gz"
    w = Warc(path)
    w.capture(
        "https://a.example/1", short(latin).encode("cp1252"), ctype="text/html; charset=ISO-8859-1"
    )
    w.capture("https://a.example/2", short(hk).encode("big5hkscs"), ctype="text/html; charset=big5")
    w.capture("https://a.example/3", short(zh).encode("gbk"), ctype='text/html; charset="GBK"')
    w.capture("https://a.example/4", short(zh2).encode(), ctype="text/html; charset=gbk")
    w.capture("https://a.example/5", short(latin2).encode(), ctype="text/html")
    w.close()
    dedup_warc(tmp_path, capsys, path, "u.jsonl")
    texts = {k["id"]: k["text"] for k in read_jsonl(tmp_path / "u.jsonl")}
    assert texts == {
        "https://a.example/1": latin,
        "https://a.example/2": hk,
        "https://a.example/3": zh,
        "https://a.example/4": zh2,
        "https://a.example/5": latin2,
    }


def chunked(data: bytes, size: int = 100) -> bytes:
    parts = [data[i : i + size] for i in range(0, len(data), size)]
    return b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def test_http_bodies_in_every_coding_are_read_and_a_bad_one_is_an_error_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A response's chunked transfer coding and gzip, deflate (zlib or raw), brotli or zstd
    content coding are undone; a body stored decoded under its coding's header (as some
    archivers keep it) is read as it is; a body in no coding its headers name, or broken
    chunks, is an error record naming it — and every record after it is read. (FastWARC's
    own decoding stopped the file quietly at a brotli body, losing it and every record after
    it, and raised a traceback at a body that was not the gzip its header said.)"""
    brotli = pytest.importorskip("brotli")
    zstandard = pytest.importorskip("zstandard")
    stories = [page("Site", "t", t) for t in (ZH_STORY, EN_STORY, ZH_OTHER, EN_OTHER)]
    raw_deflate = zlib.compressobj(wbits=-15)
    codings: list[tuple[str, bytes, tuple[tuple[str, str], ...]]] = [
        ("chunked", chunked(stories[0]), (("Transfer-Encoding", "chunked"),)),
        ("gzip", gzip.compress(stories[1]), (("Content-Encoding", "gzip"),)),
        ("zlib", zlib.compress(stories[2]), (("Content-Encoding", "deflate"),)),
        (
            "raw-deflate",
            raw_deflate.compress(stories[3]) + raw_deflate.flush(),
            (("Content-Encoding", "deflate"),),
        ),
        ("br", brotli.compress(stories[0]), (("Content-Encoding", "br"),)),
        ("zstd", zstandard.ZstdCompressor().compress(stories[1]), (("Content-Encoding", "zstd"),)),
        (
            "chunked-gzip",
            chunked(gzip.compress(stories[2]), 37),
            (("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")),
        ),
        (
            "gzip-br",
            brotli.compress(gzip.compress(stories[3])),
            (("Content-Encoding", "gzip, br"),),
        ),
        (
            "stored-decoded",
            stories[0],
            (("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")),
        ),
        ("not-gzip", bytes(range(256)) * 4, (("Content-Encoding", "gzip"),)),
        ("broken-chunks", b"zz\r\n" + bytes(range(1, 200)), (("Transfer-Encoding", "chunked"),)),
        ("unknown", b"\x1f\x9d\x90" + bytes(300), (("Content-Encoding", "compress"),)),
        ("last", stories[3], ()),
    ]
    path = tmp_path / "crawl.warc.gz"
    w = Warc(path)
    for name, body, headers in codings:
        w.capture(f"https://a.example/{name}", body, headers=headers)
    w.close()
    argv = ["dedup", str(path), "-o", str(tmp_path / "u.jsonl"), "--duplicates-only", "-"]
    argv += ["--clusters", str(tmp_path / "c.jsonl"), "--errors", str(tmp_path / "e.jsonl")]
    status, _, err = run(argv, capsys)
    assert status == 0, err
    clusters = {c["id"]: c["cluster"] for c in read_jsonl(tmp_path / "c.jsonl")}
    assert len(clusters) == 10 and "https://a.example/last" in clusters
    groups: dict[object, set[str]] = {}
    for uri, cluster in clusters.items():
        groups.setdefault(cluster, set()).add(uri.rsplit("/", 1)[1])
    assert sorted(map(sorted, groups.values())) == [
        ["br", "chunked", "stored-decoded"],
        ["chunked-gzip", "zlib"],
        ["gzip", "zstd"],
        ["gzip-br", "last", "raw-deflate"],
    ]
    errors = {
        str(e["id"]).rsplit("/", 1)[1]: str(e["reason"]) for e in read_jsonl(tmp_path / "e.jsonl")
    }
    assert errors.keys() == {"not-gzip", "broken-chunks", "unknown"}
    assert "its body is not gzip data as its Content-Encoding says" in errors["not-gzip"]
    assert "its body is not chunked as its Transfer-Encoding says" in errors["broken-chunks"]
    assert "its Content-Encoding 'compress' is not one neardup decodes" in errors["unknown"]


def test_html_without_main_text_is_an_error_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "crawl.warc.gz"
    w = Warc(path)
    w.capture("https://a.example/1", page("Ledger", "Park plan", EN_STORY))
    w.capture("https://a.example/empty", b"<html><body></body></html>")
    w.close()
    _, errors, _ = dedup_warc(tmp_path, capsys, path, "u.warc.gz")
    assert [(e["id"], e["line"]) for e in errors] == [("https://a.example/empty", 5)]
    assert str(errors[0]["reason"]).startswith("no main text found in the HTML of the WARC record")
    # it is not a duplicate: its capture stays in the archive
    assert "https://a.example/empty" in {u for _, u, _ in records_of(tmp_path / "u.warc.gz")}


def test_warc_output_needs_warc_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": 1, "text": "x"}) + "\n")
    argv = [
        "dedup",
        str(source),
        "-o",
        str(tmp_path / "u.warc.gz"),
        "--clusters",
        str(tmp_path / "c"),
    ]
    status, _, err = run(argv, capsys)
    assert status == 2 and "a WARC output needs WARC input" in err


def test_truncated_warc_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "crawl.warc.gz"
    crawl_warc(source)
    cut = tmp_path / "cut.warc.gz"
    data = source.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3 + 7])
    argv = ["dedup", str(cut), "-o", str(tmp_path / "u.jsonl"), "--clusters", str(tmp_path / "c")]
    status, _, err = run([*argv, "--errors", str(tmp_path / "e.jsonl")], capsys)
    assert status == 3, err
    assert "could not be read to its end" in err


# -- a real crawler's WARC: wget, of the Scrapy tests' local news web ---------------------------

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "scrapy_project"


@pytest.mark.skipif(shutil.which("wget") is None, reason="needs wget (apt-get install wget)")
def test_wget_warc_keeps_the_stories_the_scrapy_crawl_keeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``wget --warc-file`` of the local news web, deduplicated, keeps each story once —
    the same stories, and as many, as the Scrapy crawl of that web with the add-on.

    wget also fetches the sites' index pages, which the spider does not yield as items; the
    video page (no article text, only the site's menus and footer) is a copy of its site's
    index page there, where the Scrapy crawl, which never saw that page, keeps it."""
    pytest.importorskip("scrapy")
    from ..scrapy_site import build, serve

    pages, story_of = build()
    with serve(pages) as url:
        subprocess.run(
            [
                "wget",
                "--quiet",
                "--recursive",
                "--level=inf",
                "--no-host-directories",
                "--warc-file",
                str(tmp_path / "site"),
                "-P",
                str(tmp_path / "mirror"),
                url + "/",
            ],
            check=False,
            timeout=300,
        )
        feed = tmp_path / "scrapy.jsonl"
        crawl = subprocess.run(
            [
                sys.executable,
                "-m",
                "scrapy",
                "crawl",
                "news",
                "-a",
                f"start_url={url}/",
                "-O",
                str(feed),
                "-s",
                "TELNETCONSOLE_ENABLED=False",
                "-s",
                "LOG_LEVEL=INFO",
            ],
            cwd=EXAMPLE,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    warc = tmp_path / "site.warc.gz"
    assert warc.exists()
    clusters, _, _ = dedup_warc(tmp_path, capsys, warc, "u.warc.gz")

    def story(u: str) -> str | None:
        return story_of.get(u.split(" ", 1)[0].removeprefix(url))

    kept_by_warc = Counter(
        story(str(c["id"]))
        for c in clusters
        if c["duplicate_of"] is None and story(str(c["id"])) is not None
    )
    items = [json.loads(line) for line in feed.read_text("utf-8").splitlines()]
    kept_by_scrapy = Counter(story(str(item["url"])) for item in items)
    stories = set(story_of.values()) - {""}
    # the same stories; each kept once, or twice when a cut reprint was fetched before the
    # full story (which brings text of its own): the two crawls fetch in other orders
    assert set(kept_by_warc) - {""} == set(kept_by_scrapy) - {""} == stories
    assert set(kept_by_warc.values()) <= {1, 2} and set(kept_by_scrapy.values()) <= {1, 2}
    video = next(c for c in clusters if story(str(c["id"])) == "")
    assert str(video["duplicate_of"]).endswith("/c/")
    # every article fetched is in CLUSTERS; the kept archive is a WARC
    assert {story(str(c["id"])) for c in clusters} >= set(story_of.values())
    assert any(t == "response" for t, _, _ in records_of(tmp_path / "u.warc.gz"))
