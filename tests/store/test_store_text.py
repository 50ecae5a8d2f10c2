"""What a store keeps of text UTF-8 cannot carry: a lone surrogate in an id or a title (JSON's
``"\\udc00"``) is stored and comes back as it was, in every store, through the library and
through ``neardup dedup --db/--store``; a folder's file whose name is not UTF-8 too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neardup import Deduper

ZH = "北京地铁十九号线今天开通运营，全长二十二公里，设车站十座，预计日均客流三十万人次。"
ZH_COPY = "转载：北京地铁十九号线今天开通运营，全长二十二公里，设车站十座，预计日均客流三十万人次！"
ZH_OTHER = "上海今天发布暴雨蓝色预警，预计局地雨量超过五十毫米，请市民注意出行安全，远离低洼地带。"


def test_lone_surrogates_in_ids_and_titles_come_back_as_given(store_url: str) -> None:
    with Deduper(store=store_url) as dd:
        a = dd.check_and_add("a\udc00", ZH, title="x\udc00")
        b = dd.check_and_add("b", ZH_COPY, title="\ud800 reprint")
        c = dd.check_and_add("c\udfff", ZH_OTHER)
        same = dd.check_and_add("c\udfff", ZH_OTHER)  # known: its decision, nothing added
        assert (a.cluster, b.duplicate_of, b.cluster, c.cluster) == ("a\udc00",) * 3 + ("c\udfff",)
        assert same == c
        titles = {i: getattr(dd.entry(i), "title", "gone") for i in ("a\udc00", "b", "c\udfff")}
        assert titles == {"a\udc00": "x\udc00", "b": "\ud800 reprint", "c\udfff": None}
        assert dd.entry("a\ufffd") is None  # not confused with U+FFFD
        assert [d.id for d in dd.cluster("a\udc00")] == ["a\udc00", "b"]
        assert dict(dd.clusters()) == {"a\udc00": 2, "c\udfff": 1}
        assert dd.stored_text("c\udfff") is not None
        assert dd.decision("b").duplicate_of == "a\udc00"
        assert len(dd) == 3
        assert dd.remove("c\udfff") and "c\udfff" not in dd and len(dd) == 2


def test_a_store_reopened_finds_ids_with_lone_surrogates(persistent_url: str) -> None:
    with Deduper(store=persistent_url) as dd:
        first = dd.check_and_add_many([("a\udc00", ZH), ("c", ZH_OTHER)])
    with Deduper(store=persistent_url) as dd:
        again = dd.check_and_add_many([("a\udc00", ZH), ("b\udc01", ZH_COPY), ("c", ZH_OTHER)])
        assert [d.id for d in again] == ["a\udc00", "b\udc01", "c"]
        assert again[0] == first[0] and again[2] == first[1]
        assert again[1].duplicate_of == "a\udc00"
        assert len(dd) == 3


def _neardup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup", *args], capture_output=True, text=True, check=False
    )


def test_cli_a_lone_surrogate_in_a_title_or_an_id_with_a_store(
    persistent_url: str, tmp_path: Path
) -> None:
    src = tmp_path / "crawl.jsonl"
    src.write_text(
        '{"id":"a","title":"x\\udc00","text":"' + ZH + '"}\n'
        '{"id":"b\\udc00","title":"\\ud800","text":"' + ZH_COPY + '"}\n'
        '{"id":"c","text":"' + ZH_OTHER + '"}\n',
        encoding="utf-8",
    )
    outputs = []
    for _ in range(2):  # the second run finds every document in the store
        clusters = tmp_path / "c.jsonl"
        r = _neardup("dedup", str(src), "--store", persistent_url, "-o", str(tmp_path / "u"),
                     "--clusters", str(clusters))  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        assert "3 in → 2 kept, 1 duplicate " in r.stderr
        outputs.append(clusters.read_text(encoding="utf-8"))
    lines = [json.loads(line) for line in outputs[0].splitlines()]
    assert [(x["id"], x["duplicate_of"]) for x in lines] == [("a", None), ("b\udc00", "a"),
                                                            ("c", None)]  # fmt: skip
    assert outputs[0] == outputs[1]


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses file names that are not UTF-8")
def test_cli_a_folder_with_a_file_name_that_is_not_utf8_with_a_db(tmp_path: Path) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    with open(os.path.join(os.fsencode(pages), b"caf\xe9.txt"), "wb") as f:
        f.write(ZH.encode())
    (pages / "copy.txt").write_text(ZH_COPY, encoding="utf-8")
    db = tmp_path / "s.db"
    outputs = []
    for _ in range(2):
        clusters = tmp_path / "c.jsonl"
        r = _neardup("dedup", str(pages), "--db", str(db), "-o", str(tmp_path / "u"),
                     "--clusters", str(clusters))  # fmt: skip
        assert r.returncode == 0, r.stderr
        outputs.append(clusters.read_text(encoding="utf-8"))
    lines = [json.loads(line) for line in outputs[0].splitlines()]
    assert [(x["id"], x["duplicate_of"]) for x in lines] == [("caf\ufffd.txt", None),
                                                            ("copy.txt", "caf\ufffd.txt")]  # fmt: skip
    assert outputs[0] == outputs[1]
