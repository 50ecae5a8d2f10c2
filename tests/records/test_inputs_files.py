"""``neardup dedup`` on the inputs crawler and data teams have: several INPUT arguments, globs
and folders of shards (JSONL, gzip, zstd, CSV, Parquet), Parquet and Arrow IPC files with any
column names, ids that keep their JSON type, records without an id; Parquet outputs and the
list of duplicates; and the exit statuses a script can trust."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from ..run.test_cli_dedup import CORPUS, STORY, json_line, read_jsonl, run, write_lines

pa = pytest.importorskip(
    "pyarrow", reason="Parquet and Arrow inputs need pyarrow: pip install 'neardup[parquet]'"
)
ipc = pytest.importorskip("pyarrow.ipc")
pq = pytest.importorskip("pyarrow.parquet")

zstandard = pytest.importorskip("zstandard")

#: the corpus split into three shards: zh1 en1 | zh1r zh2 | en1r en2
SHARDS = [CORPUS[:2], CORPUS[2:4], CORPUS[4:]]


def outputs(tmp_path: Path, *extra: str, unique: str = "unique.jsonl") -> list[str]:
    return [
        "-o",
        str(tmp_path / unique),
        "--clusters",
        str(tmp_path / "clusters.jsonl"),
        "--errors",
        str(tmp_path / "errors.jsonl"),
        *extra,
    ]


def dedup_ok(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, *inputs: object, extra: tuple[str, ...] = ()
) -> tuple[list[dict[str, object]], list[dict[str, object]], str]:
    status, _, err = run(["dedup", *map(str, inputs), *outputs(tmp_path, *extra)], capsys)
    assert status == 0, err
    return read_jsonl(tmp_path / "clusters.jsonl"), read_jsonl(tmp_path / "errors.jsonl"), err


def jsonl_bytes(records: list[dict[str, object]]) -> bytes:
    return "".join(json_line(r) + "\n" for r in records).encode("utf-8")


# -- several inputs, globs, folders of shards ---------------------------------------------------


def test_several_inputs_are_read_in_the_order_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three INPUT arguments are one corpus, read in the order given."""
    paths = []
    for k, shard in enumerate(SHARDS):
        paths.append(write_lines(tmp_path / f"s{k}.jsonl", [json_line(r) for r in shard]))
    clusters, errors, err = dedup_ok(capsys, tmp_path, *paths)
    assert errors == []
    assert [c["id"] for c in clusters] == [r["id"] for r in CORPUS]
    assert {c["id"]: c["cluster"] for c in clusters} == STORY
    assert "6 in → 4 kept, 2 duplicates" in err


def test_folder_of_shards_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder of part-*.jsonl, .jsonl.gz, .jsonl.zst, .parquet and .csv shards is read in
    name order, every file by its format; other files are left alone and counted."""
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / "part-0.jsonl").write_bytes(jsonl_bytes(SHARDS[0]))
    (folder / "part-1.jsonl.gz").write_bytes(gzip.compress(jsonl_bytes(SHARDS[1][:1])))
    (folder / "part-2.jsonl.zst").write_bytes(
        zstandard.ZstdCompressor().compress(jsonl_bytes(SHARDS[1][1:]))
    )
    rows = [{"id": r["id"], "text": r["text"]} for r in SHARDS[2]]
    pq.write_table(pa.Table.from_pylist(rows[:1]), folder / "part-3.parquet")
    csv_rows = ["id,text", *(f'{r["id"]},"{r["text"]}"' for r in rows[1:])]
    write_lines(folder / "part-4.csv", csv_rows)
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / "README.md").write_text("about the shards")
    clusters, errors, err = dedup_ok(capsys, tmp_path, folder)
    assert errors == []
    assert [c["id"] for c in clusters] == [r["id"] for r in CORPUS]
    assert {c["id"]: c["cluster"] for c in clusters} == STORY
    assert "2 files in the input folders not read" in err
    kept = read_jsonl(tmp_path / "unique.jsonl")
    assert [k["id"] for k in kept] == ["zh1", "en1", "zh2", "en2"]
    assert kept[-1] == {"id": "en2", "text": CORPUS[5]["text"]}  # a CSV row, as a JSON object


def test_glob_expands_in_name_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A quoted glob is expanded by neardup (``**`` at any depth), matches in name order."""
    for k, shard in enumerate(SHARDS):
        sub = tmp_path / "crawl" / f"day{k}"
        sub.mkdir(parents=True)
        (sub / "pages.jsonl.gz").write_bytes(gzip.compress(jsonl_bytes(shard)))
    clusters, _, _ = dedup_ok(capsys, tmp_path, tmp_path / "crawl" / "**" / "*.jsonl.gz")
    assert [c["id"] for c in clusters] == [r["id"] for r in CORPUS]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: None, "holds no file neardup reads"),
        (lambda d: (d / "notes.md").write_text("x"), "it has 1 other file (.md ×1)"),
        (lambda d: (d / "part-00000").write_text("{}"), "give --format to read them"),
    ],
)
def test_folder_with_nothing_readable_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, message: str
) -> None:
    """A folder with nothing to read is exit 2 and one line, not an empty run."""
    folder = tmp_path / "in"
    folder.mkdir()
    make(folder)  # type: ignore[operator]
    status, out, err = run(["dedup", str(folder), *outputs(tmp_path)], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "unique.jsonl").exists()


def test_glob_matching_nothing_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(["dedup", str(tmp_path / "*.jsonl"), *outputs(tmp_path)], capsys)
    assert status == 2 and f"no file matches {tmp_path / '*.jsonl'}" in err


def test_format_reads_files_without_a_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--format jsonl`` reads Spark's part-00000 files (names starting _ or . left alone)."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "part-00000").write_bytes(jsonl_bytes(CORPUS))
    (folder / "_SUCCESS").write_bytes(b"")
    clusters, _, _ = dedup_ok(capsys, tmp_path, folder, extra=("--format", "jsonl"))
    assert {c["id"]: c["cluster"] for c in clusters} == STORY


def test_errors_name_the_file_when_several_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With several files, an error line names the file; a repeat names where the first was."""
    a = write_lines(tmp_path / "a.jsonl", [json_line(CORPUS[0]), "[1]"])
    b = write_lines(tmp_path / "b.jsonl", [json_line(CORPUS[1]), json_line(CORPUS[0])])
    _, errors, _ = dedup_ok(capsys, tmp_path, a, b)
    assert errors == [
        {"file": str(a), "line": 2, "id": None, "reason": "not a JSON object but an array"},
        {
            "file": str(b),
            "line": 2,
            "id": "zh1",
            "reason": f"repeated id 'zh1', first on line 1 of {a}",
        },
    ]


def test_an_output_inside_an_input_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An output in an input folder would be read as input by the next run: exit 2."""
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(jsonl_bytes(CORPUS))
    argv = ["dedup", str(folder), "-o", str(folder / "u.jsonl"), "--clusters", str(tmp_path / "c")]
    status, _, err = run(argv, capsys)
    assert status == 2 and "is inside the input folder" in err


# -- ids: their JSON type, and records without one ----------------------------------------------


def test_ids_keep_their_json_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An integer id comes back as an integer in CLUSTERS, ERRORS and --duplicates-only."""
    records = [{**r, "id": k} for k, r in enumerate(CORPUS)]
    source = write_lines(
        tmp_path / "in.jsonl", [json_line(r) for r in records] + ['{"id": 99, "text": ""}']
    )
    clusters, errors, _ = dedup_ok(
        capsys, tmp_path, source, extra=("--duplicates-only", str(tmp_path / "drop.txt"))
    )
    assert clusters[2] == {**clusters[2], "id": 2, "cluster": 0, "duplicate_of": 0}
    assert clusters[0] == {**clusters[0], "id": 0, "cluster": 0, "duplicate_of": None}
    assert errors == [{"line": 7, "id": 99, "reason": "'text' is empty"}]
    assert (tmp_path / "drop.txt").read_text() == "2\n4\n"


def test_records_without_an_id_are_named_file_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Records without an id are named FILE:LINE, and the summary says so once."""
    lines = [json_line({k: v for k, v in r.items() if k != "id"}) for r in CORPUS]
    source = write_lines(tmp_path / "crawl.jsonl", ["", *lines])
    clusters, errors, err = dedup_ok(capsys, tmp_path, source)
    assert errors == []
    assert clusters[0]["id"] == f"{source}:2" and clusters[2]["cluster"] == f"{source}:2"
    assert err.count("6 records had no 'id'; they are named FILE:LINE") == 1


# -- Parquet and Arrow ----------------------------------------------------------------------------


def parquet_corpus(path: Path, **names: str) -> Path:
    """The corpus as Parquet, in several row groups, integer ids, columns renamed."""
    rows = [
        {
            names.get("id", "id"): k + 100,
            names.get("text", "text"): r["text"],
            names.get("title", "title"): r["title"],
            "lang": "zh" if str(r["id"]).startswith("zh") else "en",
        }
        for k, r in enumerate(CORPUS)
    ]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=2)
    return path


def test_parquet_input_with_its_own_column_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Parquet with columns doc_id/body is read in record batches by --id-field/--text-field;
    integer ids stay integers; UNIQUE as JSONL holds each kept row whole."""
    source = parquet_corpus(tmp_path / "crawl.parquet", id="doc_id", text="body")
    clusters, errors, _ = dedup_ok(
        capsys, tmp_path, source, extra=("--id-field", "doc_id", "--text-field", "body")
    )
    assert errors == []
    assert [c["cluster"] for c in clusters] == [100, 101, 100, 103, 101, 105]
    kept = read_jsonl(tmp_path / "unique.jsonl")
    assert [k["doc_id"] for k in kept] == [100, 101, 103, 105]
    assert set(kept[0]) == {"doc_id", "body", "title", "lang"}


def test_parquet_to_parquet_keeps_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """UNIQUE .parquet of Parquet input holds the kept rows under the input's schema;
    CLUSTERS .parquet has integer ids."""
    source = parquet_corpus(tmp_path / "crawl.parquet")
    argv = ["dedup", str(source), "-o", str(tmp_path / "u.parquet")]
    argv += ["--clusters", str(tmp_path / "c.parquet")]
    status, _, err = run(argv, capsys)
    assert status == 0, err
    unique = pq.read_table(tmp_path / "u.parquet")
    assert unique.schema == pq.read_schema(source)
    assert unique.column("id").to_pylist() == [100, 101, 103, 105]
    clusters = pq.read_table(tmp_path / "c.parquet")
    assert {"id", "cluster", "duplicate_of", "score"} <= set(clusters.column_names)
    assert clusters.column("duplicate_of").to_pylist() == [None, None, 100, None, 101, None]
    assert pa.types.is_integer(clusters.schema.field("cluster").type)


def test_parquet_without_ids_names_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A table without the id column names its rows FILE:ROW (rows count from 1)."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"text": [r["text"] for r in CORPUS]}), path)
    clusters, _, err = dedup_ok(capsys, tmp_path, path)
    assert clusters[2] == {**clusters[2], "id": f"{path}:3", "cluster": f"{path}:1"}
    assert "6 records had no 'id'; they are named FILE:ROW" in err


@pytest.mark.parametrize("kind", ["file", "stream"])
def test_arrow_ipc_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    """Arrow IPC, as a file (Feather v2) or a stream, is read batch by batch."""
    table = pa.Table.from_pylist([{"id": r["id"], "text": r["text"]} for r in CORPUS])
    path = tmp_path / "crawl.arrow"
    with pa.OSFile(str(path), "wb") as sink:
        new = ipc.new_file if kind == "file" else ipc.new_stream
        with new(sink, table.schema) as writer:
            for batch in table.to_batches(max_chunksize=2):
                writer.write_batch(batch)
    clusters, errors, _ = dedup_ok(capsys, tmp_path, path)
    assert errors == [] and {c["id"]: c["cluster"] for c in clusters} == STORY


def test_parquet_bad_rows_are_error_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A null or empty text, a repeated id: error records naming the row."""
    path = tmp_path / "t.parquet"
    pq.write_table(
        pa.table({"id": ["a", "b", "a", "d"], "text": [CORPUS[0]["text"], None, "again", " "]}),
        path,
    )
    clusters, errors, _ = dedup_ok(capsys, tmp_path, path)
    assert [c["id"] for c in clusters] == ["a"]
    assert errors == [
        {"line": 2, "id": "b", "reason": "'text' is null"},
        {"line": 3, "id": "a", "reason": "repeated id 'a', first on row 1"},
        {"line": 4, "id": "d", "reason": "'text' is only whitespace"},
    ]


def test_parquet_decimal_ids_and_a_binary_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A decimal id column (a database's NUMERIC) names rows by its value as Spark casts it
    ('100.00' in a column of two decimals); decimal timestamps and titles are numbers; a binary text column is an
    error record saying so (it was 'not an object', and decimal ids were refused)."""
    from decimal import Decimal

    path = tmp_path / "t.parquet"
    texts = [str(r["text"]) for r in CORPUS[:3]]  # zh1, en1 and zh1r, zh1's reprint
    pq.write_table(
        pa.table(
            {
                "id": pa.array(
                    [Decimal("100"), Decimal("7.50"), Decimal(102)], pa.decimal128(9, 2)
                ),
                "text": texts,
                "timestamp": pa.array([Decimal(1770000000)] * 3, pa.decimal128(12, 0)),
                "title": pa.array([Decimal(3), None, None], pa.decimal128(3, 0)),
            }
        ),
        path,
    )
    clusters, errors, _ = dedup_ok(capsys, tmp_path, path)
    assert errors == []
    assert [(c["id"], c["cluster"]) for c in clusters] == [
        ("100.00", "100.00"),
        ("7.50", "7.50"),
        ("102.00", "100.00"),
    ]
    binary = tmp_path / "b.parquet"
    pq.write_table(pa.table({"id": ["a"], "text": pa.array([b"bytes"], pa.binary())}), binary)
    argv = ["dedup", str(binary), "-o", str(tmp_path / "u"), "--errors", str(tmp_path / "e")]
    status, _, _ = run([*argv, "--clusters", str(tmp_path / "c")], capsys)
    assert status == 3
    assert read_jsonl(tmp_path / "e") == [
        {"line": 1, "id": "a", "reason": "'text' must be a string, not binary data"}
    ]


def test_parquet_struct_columns_by_dotted_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--id-field meta.url --text-field content.text read struct columns;
    a path into no struct field is the missing-column error naming the columns."""
    path = tmp_path / "nested.parquet"
    rows = [
        {"meta": {"url": f"u{k}", "lang": "zh"}, "content": {"text": r["text"]}, "n": k}
        for k, r in enumerate(CORPUS)
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    extra = ("--id-field", "meta.url", "--text-field", "content.text")
    clusters, errors, _ = dedup_ok(capsys, tmp_path, path, extra=extra)
    assert errors == []
    name = {str(r["id"]): f"u{k}" for k, r in enumerate(CORPUS)}
    assert {c["id"]: c["cluster"] for c in clusters} == {name[i]: name[s] for i, s in STORY.items()}
    csv_out = tmp_path / "unique.csv"  # the named fields' values, read from the structs
    argv = ["dedup", str(path), "-o", str(csv_out), "--clusters", str(tmp_path / "c"), *extra]
    assert run(argv, capsys)[0] == 0
    head, first, *_ = csv_out.read_text("utf-8").splitlines()
    assert head == "meta.url,content.text,title,timestamp"
    assert first.startswith("u0,") and str(CORPUS[0]["text"])[:20] in first
    argv = ["dedup", str(path), *outputs(tmp_path, "--text-field", "content.body")]
    status, _, err = run(argv, capsys)
    assert status == 2
    assert "has no 'content.body' column (it has 'meta', 'content', 'n')" in err


def test_parquet_without_the_text_column_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": [1], "body": ["x"]}), path)
    status, _, err = run(["dedup", str(path), *outputs(tmp_path)], capsys)
    assert status == 2 and "has no 'text' column (it has 'id', 'body')" in err


# -- outputs ------------------------------------------------------------------------------------


def test_jsonl_to_parquet_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--output-format parquet writes UNIQUE (the kept records' fields) and CLUSTERS as
    Parquet; a column whose values differ in type is written as strings."""
    records = [dict(r) for r in CORPUS]
    records[3]["timestamp"] = 1770000000  # others are strings: mixed
    source = write_lines(tmp_path / "in.jsonl", [json_line(r) for r in records])
    argv = [
        "dedup",
        str(source),
        "-o",
        str(tmp_path / "u.out"),
        "--clusters",
        str(tmp_path / "c.out"),
    ]
    status, _, err = run([*argv, "--output-format", "parquet"], capsys)
    assert status == 0, err
    unique = pq.read_table(tmp_path / "u.out")
    assert unique.column("id").to_pylist() == ["zh1", "en1", "zh2", "en2"]
    assert unique.column("text").to_pylist()[0] == CORPUS[0]["text"]
    assert unique.column("timestamp").to_pylist()[1] == "1770000000"
    assert pq.read_table(tmp_path / "c.out").column("cluster").to_pylist() == list(STORY.values())


def test_duplicates_only_lists_the_ids_to_drop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_lines(tmp_path / "in.jsonl", [json_line(r) for r in CORPUS])
    dedup_ok(capsys, tmp_path, source, extra=("--duplicates-only", str(tmp_path / "ids.txt")))
    assert (tmp_path / "ids.txt").read_text().splitlines() == ["zh1r", "en1r"]


# -- exit statuses ------------------------------------------------------------------------------


def test_truncated_gzip_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A gzip file cut short: what it held is deduplicated, the break is an error record,
    and the exit status is 3, with one line saying why."""
    data = jsonl_bytes([{"id": i, "text": f"第{i}条新闻 story number {i}"} for i in range(3000)])
    packed = gzip.compress(data)
    source = tmp_path / "in.jsonl.gz"
    source.write_bytes(packed[: len(packed) // 2])
    summary = tmp_path / "summary.json"
    status, _, err = run(
        ["dedup", str(source), *outputs(tmp_path, "--json-summary", str(summary))], capsys
    )
    assert status == 3
    assert "neardup: the input could not be read to its end:" in err.splitlines()[-1]
    (numbers,) = read_jsonl(summary)
    assert numbers["status"] == 3 and numbers["unread"]
    assert read_jsonl(tmp_path / "errors.jsonl")[-1]["reason"].startswith("the input breaks off")


@pytest.mark.parametrize("kind", ["bz2", "xz"])
def test_bzip2_and_xz_are_read_and_a_truncated_one_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """``.jsonl.bz2`` and ``.csv.xz`` (found by content, a CSV by its name under the
    compression suffix; in a folder too) were read as bytes: every line an error ('not
    valid UTF-8'), and one a note that the binary data 'ended its lines in CR alone'. A
    file cut short keeps what came before and exits 3."""
    import bz2
    import lzma

    pack = bz2.compress if kind == "bz2" else lzma.compress
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / f"part-0.jsonl.{kind}").write_bytes(pack(jsonl_bytes(SHARDS[0] + SHARDS[1])))
    rows = [{"id": r["id"], "text": r["text"]} for r in SHARDS[2]]
    csv_rows = "".join(f'{r["id"]},"{r["text"]}"\n' for r in rows)
    (folder / f"part-1.csv.{kind}").write_bytes(pack(f"id,text\n{csv_rows}".encode()))
    clusters, errors, err = dedup_ok(capsys, tmp_path, folder)
    assert errors == [] and "CR alone" not in err
    assert {c["id"]: c["cluster"] for c in clusters} == STORY
    data = jsonl_bytes([{"id": i, "text": f"第{i}条新闻 story number {i}"} for i in range(3000)])
    packed = pack(data)
    source = tmp_path / f"in.jsonl.{kind}"
    source.write_bytes(packed[: len(packed) // 2])
    status, _, err = run(["dedup", str(source), *outputs(tmp_path)], capsys)
    assert status == 3, err
    assert read_jsonl(tmp_path / "errors.jsonl")[-1]["reason"].startswith("the input breaks off")
    assert len(read_jsonl(tmp_path / "clusters.jsonl")) < 3000  # (a bzip2 block is whole or lost)


def test_an_archive_read_as_jsonl_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A zip archive of JSONL is not opened; the note says it is one and to unpack it."""
    import zipfile

    source = tmp_path / "crawl.zip"
    with zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("part-0.jsonl", jsonl_bytes(CORPUS))
    status, _, err = run(["dedup", str(source), *outputs(tmp_path)], capsys)
    assert status == 3
    assert "but it is a zip archive: unpack it and give the files or their folder" in err
    assert "CR alone" not in err


def test_corrupt_gzip_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(gzip.compress(jsonl_bytes(CORPUS * 1)))
    data[len(data) // 2] ^= 0xFF
    source = tmp_path / "in.jsonl.gz"
    source.write_bytes(bytes(data))
    status, _, _ = run(["dedup", str(source), *outputs(tmp_path)], capsys)
    assert status == 3


def test_no_usable_record_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_lines(tmp_path / "in.jsonl", ["[]", '{"id": 1}', "{oops"])
    status, _, err = run(["dedup", str(source), *outputs(tmp_path)], capsys)
    assert status == 3 and "none of the 3 records read was usable" in err


@pytest.mark.parametrize(
    ("limit", "status"), [("1", 4), ("2", 0), ("20%", 4), ("30%", 0), ("0", 4)]
)
def test_max_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: str, status: int
) -> None:
    """--max-errors N or N%: more error records than that is exit status 4."""
    source = write_lines(tmp_path / "in.jsonl", [*(json_line(r) for r in CORPUS), "[]", "{"])
    got, _, err = run(["dedup", str(source), *outputs(tmp_path, "--max-errors", limit)], capsys)
    assert got == status, err
    if status:
        assert f"2 records were errors, more than --max-errors {limit.rstrip('%')}" in err


def test_json_summary_into_a_missing_folder_fails_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_lines(tmp_path / "in.jsonl", [json_line(r) for r in CORPUS])
    bad = tmp_path / "no" / "such" / "summary.json"
    status, _, err = run(
        ["dedup", str(source), *outputs(tmp_path, "--json-summary", str(bad))], capsys
    )
    assert status == 2 and err == f"neardup: error: cannot write {bad}: No such file or directory\n"
    assert not (tmp_path / "clusters.jsonl").exists()


def test_duplicates_only_into_a_missing_folder_fails_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_lines(tmp_path / "in.jsonl", [json_line(r) for r in CORPUS])
    bad = tmp_path / "no" / "ids.txt"
    status, _, err = run(
        ["dedup", str(source), *outputs(tmp_path, "--duplicates-only", str(bad))], capsys
    )
    assert status == 2 and "cannot write" in err


def test_all_good_is_exit_0_and_says_nothing_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_lines(tmp_path / "in.jsonl", [json_line(r) for r in CORPUS])
    status, _, err = run(["dedup", str(source), *outputs(tmp_path, "-q")], capsys)
    assert status == 0 and err == ""
    assert os.path.getsize(tmp_path / "errors.jsonl") == 0
    assert json.loads((tmp_path / "clusters.jsonl").read_text().splitlines()[0])["id"] == "zh1"


def test_a_corrupt_shard_among_many_is_reported_and_the_rest_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One Parquet shard cut short in a folder: an error record naming it, the other shards
    deduplicated, exit 3. The same file alone is exit 2 (nothing could be read)."""
    folder = tmp_path / "shards"
    folder.mkdir()
    parquet_corpus(folder / "a.parquet")
    whole = (folder / "a.parquet").read_bytes()
    (folder / "b.parquet").write_bytes(whole[: len(whole) // 2])
    status, _, err = run(["dedup", str(folder), *outputs(tmp_path)], capsys)
    assert status == 3, err
    assert len(read_jsonl(tmp_path / "clusters.jsonl")) == len(CORPUS)
    (bad,) = read_jsonl(tmp_path / "errors.jsonl")
    assert bad["file"] == str(folder / "b.parquet")
    assert str(bad["reason"]).startswith(f"cannot read {folder / 'b.parquet'} as Parquet")
    status, _, err = run(["dedup", str(folder / "b.parquet"), *outputs(tmp_path)], capsys)
    assert status == 2 and err.startswith("neardup: error: cannot read")


@pytest.mark.parametrize(
    ("name", "delimiter"), [("semi.csv", ";"), ("tabs.csv", "\t"), ("bars.csv", "|")]
)
def test_a_csv_separated_otherwise_is_read_by_its_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, delimiter: str
) -> None:
    """A CSV separated by semicolons (Excel where the decimal mark is a comma), tabs (a TSV
    export named .csv, quoted as pandas writes it) or bars is read by its header, which
    names the text column ("the CSV header has no 'text' column (it has 'id;text')"
    before); UNIQUE as CSV is comma-separated under the same header, as JSONL the rows'
    fields."""
    import csv as csv_module
    import io as io_module

    rows = [
        {"id": r["id"], "text": r["text"] + "; 第二段, with a comma\nand a line"} for r in CORPUS
    ]
    buf = io_module.StringIO()
    writer = csv_module.DictWriter(buf, ["id", "text"], delimiter=delimiter)
    writer.writeheader()
    writer.writerows(rows)
    source = tmp_path / name
    source.write_text(buf.getvalue(), "utf-8")
    clusters, errors, _ = dedup_ok(capsys, tmp_path, source)
    assert errors == [] and {c["id"]: c["cluster"] for c in clusters} == STORY
    kept = [r for r in rows if r["id"] in {c["cluster"] for c in clusters}]
    assert read_jsonl(tmp_path / "unique.jsonl") == kept
    status, _, err = run(["dedup", str(source), *outputs(tmp_path, unique="u.csv")], capsys)
    assert status == 0, err
    with (tmp_path / "u.csv").open(newline="", encoding="utf-8") as f:
        assert list(csv_module.DictReader(f)) == kept


def test_csv_output_quotes_a_text_of_paragraphs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSONL in, CSV out: a text with line breaks is quoted (it was written bare, and every
    CSV reader split the row at its line break)."""
    import csv as csv_module

    records = [{"id": "a", "text": "第一段\n第二段\r\nthird"}, {"id": "b", "text": "other, story"}]
    source = write_lines(tmp_path / "in.jsonl", [json_line(r) for r in records])
    status, _, err = run(["dedup", str(source), *outputs(tmp_path, unique="u.csv")], capsys)
    assert status == 0, err
    with (tmp_path / "u.csv").open(newline="", encoding="utf-8") as f:
        got = [(r["id"], r["text"]) for r in csv_module.DictReader(f)]
    assert got == [(r["id"], r["text"]) for r in records]
