"""Every DedupConfig setting reachable: ``--set NAME=VALUE``, named flags, a TOML file
(``--config``), and the Scrapy add-on's ``NEARDUP_SET``; each value checked with one line
that names the setting and its type."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from neardup.engine import DedupConfig
from neardup.errors import ConfigError
from neardup.settings import SETTINGS, make_config, parse_assignment, read_config_file

from .test_cli_dedup import CORPUS, STORY, json_line, read_jsonl, run, write_lines


def test_every_field_is_a_setting() -> None:
    """Each DedupConfig field is a setting (the normalizer by its steps)."""
    fields = {f.name for f in dataclasses.fields(DedupConfig)} - {"normalizer"}
    assert fields <= set(SETTINGS)
    assert {s for s in SETTINGS if s.startswith("normalizer.")} == {
        "normalizer.html",
        "normalizer.width",
        "normalizer.case",
        "normalizer.whitespace",
        "normalizer.script",
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("threshold=0.7", ("threshold", 0.7)),
        ("common_after = 10", ("common_after", 10)),
        ("lsh_params=32,4", ("lsh_params", (32, 4))),
        ("lsh_params=none", ("lsh_params", None)),
        ("strip_boilerplate=off", ("strip_boilerplate", False)),
        ("normalizer.script=false", ("normalizer.script", False)),
    ],
)
def test_assignments(text: str, expected: tuple[str, object]) -> None:
    assert parse_assignment(text) == expected


def dedup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, object], str]:
    source = write_lines(tmp_path / "in.jsonl", [json_line(r) for r in CORPUS])
    summary = tmp_path / "s.json"
    argv = ["dedup", str(source), "-o", str(tmp_path / "u"), "--clusters", str(tmp_path / "c")]
    status, _, err = run([*argv, "--json-summary", str(summary), "-q", *extra], capsys)
    clusters = (
        {str(c["id"]): c["cluster"] for c in read_jsonl(tmp_path / "c")} if status == 0 else {}
    )
    return status, clusters, err


@pytest.mark.parametrize(
    "how",
    [
        ["--set", "threshold=1"],
        ["--threshold", "1"],
        ["--set", "fragment_ratio=0", "--set", "threshold=1"],
    ],
)
def test_settings_change_the_decisions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: list[str]
) -> None:
    """threshold 1 (only complete coverage) keeps the edited reprints apart."""
    status, clusters, err = dedup(tmp_path, capsys, *how)
    assert status == 0, err
    assert all(k == v for k, v in clusters.items())


def test_named_flags_for_the_common_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--common-after, --fragment-ratio, --lsh-threshold, --cjk-width, --word-width."""
    status, clusters, err = dedup(
        tmp_path,
        capsys,
        "--common-after",
        "10",
        "--fragment-ratio",
        "0.2",
        "--lsh-threshold",
        "0.2",
        "--cjk-width",
        "4",
        "--word-width",
        "8",
    )
    assert status == 0, err
    assert clusters == STORY


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--set", "thresold=0.7"],
            "--set thresold=0.7: no setting 'thresold' (did you mean threshold?)",
        ),
        (
            ["--set", "threshold=high"],
            "--set threshold=high: threshold takes a number (float), not 'high'",
        ),
        (["--set", "common_after=1.5"], "common_after takes a whole number (int), not '1.5'"),
        (["--set", "normalize=maybe"], "normalize takes true or false (bool), not 'maybe'"),
        (["--set", "threshold"], "--set takes NAME=VALUE"),
        (["--set", "threshold=1.5"], "threshold must be in (0, 1], got 1.5"),
        (["--set", "fragment_ratio=2"], "fragment_ratio must be in [0, 1], got 2.0"),
        (["--set", "common_after=-1"], "common_after must be >= 0, got -1"),
        (["--set", "num_perm=100"], "num_perm must be a power of two"),
    ],
)
def test_bad_settings_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    status, _, err = dedup(tmp_path, capsys, *argv)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("neardup: error: ") and message in err


def test_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A TOML file of settings; the command line wins over it."""
    toml = tmp_path / "neardup.toml"
    toml.write_text("threshold = 1\ncommon_after = 10\n[normalizer]\nscript = true\n")
    assert read_config_file(str(toml)) == {
        "threshold": 1.0,
        "common_after": 10,
        "normalizer.script": True,
    }
    status, clusters, _ = dedup(tmp_path, capsys, "--config", str(toml))
    assert status == 0 and all(k == v for k, v in clusters.items())
    status, clusters, _ = dedup(tmp_path, capsys, "--config", str(toml), "--threshold", "0.6")
    assert status == 0 and clusters == STORY
    status, clusters, _ = dedup(tmp_path, capsys, "--config", str(toml), "--set", "threshold=0.6")
    assert status == 0 and clusters == STORY


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("thresold = 0.7\nbucketcap = 3\n", "unknown settings 'thresold', 'bucketcap'"),
        ("threshold = 'high'\n", "threshold takes a number (float), not 'high'"),
        ("common_after = true\n", "common_after takes a whole number (int), not True"),
        ("threshold = \n", "is not valid TOML"),
        ("[normalizer]\ncolour = false\n", "unknown setting 'normalizer.colour'"),
    ],
)
def test_bad_config_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    toml = tmp_path / "neardup.toml"
    toml.write_text(text)
    status, _, err = dedup(tmp_path, capsys, "--config", str(toml))
    assert status == 2 and err.count("\n") == 1 and message in err
    assert str(toml) in err


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = dedup(tmp_path, capsys, "--config", str(tmp_path / "no.toml"))
    assert status == 2 and "cannot read the config file" in err


def test_make_config_normalizer_steps() -> None:
    cfg = make_config({"normalizer.script": False, "normalize": True})
    assert cfg.normalizer.script is False and cfg.normalizer.html is True
    with pytest.raises(ConfigError, match="lsh_threshold must be in"):
        make_config({"lsh_threshold": 0.0})


# -- the Scrapy add-on: NEARDUP_SET --------------------------------------------------------------


def test_scrapy_neardup_set_reaches_the_worker() -> None:
    pytest.importorskip("scrapy")
    from neardup.scrapy import NearDupPipeline, Worker

    from ..test_scrapy import crawler_with

    p = NearDupPipeline.from_crawler(
        crawler_with(
            {
                "NEARDUP_SET": {"common_after": 10, "normalizer.script": "false"},
                "NEARDUP_WORKER": "thread",
            }
        )
    )
    try:
        assert p.options.settings == (("common_after", 10), ("normalizer.script", False))
        cfg = p.options.config()
        assert cfg.common_after == 10 and cfg.normalizer.script is False
        assert isinstance(p._local, Worker) and p._local.deduper.config.common_after == 10
    finally:
        p.close()
    p = NearDupPipeline.from_crawler(crawler_with({"NEARDUP_SET": '{"threshold": 0.9}'}))
    try:
        assert p.options.threshold == 0.9
    finally:
        p.close()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"NEARDUP_SET": {"thresold": 0.7}}, "NEARDUP_SET: no setting 'thresold'"),
        ({"NEARDUP_SET": {"common_after": "x"}}, "NEARDUP_SET: common_after takes a whole number"),
        ({"NEARDUP_SET": {"fragment_ratio": 3}}, "NEARDUP_SET: fragment_ratio must be in [0, 1]"),
        ({"NEARDUP_SET": "{not json"}, "NEARDUP_SET must be a dict of setting: value"),
        (
            {"NEARDUP_SET": {"threshold": 0.7}, "NEARDUP_THRESHOLD": 0.8},
            "give threshold once: NEARDUP_THRESHOLD or NEARDUP_SET",
        ),
        ({"NEARDUP_SET": {"threshold": 2}}, "NEARDUP_SET['threshold'] must be in (0, 1]"),
    ],
)
def test_scrapy_neardup_set_is_checked_at_start_up(
    settings: dict[str, object], message: str
) -> None:
    pytest.importorskip("scrapy")
    from neardup.scrapy import NearDupPipeline

    from ..test_scrapy import crawler_with

    with pytest.raises(ConfigError) as info:
        NearDupPipeline.from_crawler(crawler_with(settings))
    assert message in str(info.value)
