"""The ``neardup`` command line: a thin layer over the library."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import json
import os
import stat
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from importlib.resources import as_file, files
from typing import Any, NoReturn, TextIO, TypeAlias, cast

from . import __version__
from .compare import Comparison, DedupView, compare
from .deduper import Deduper, chrome_of
from .engine import DedupConfig
from .engine.compact import DamagedGuard
from .engine.verify import quoted_chars
from .errors import Interrupted, NeardupError, RunWarning, StoreError
from .measures import DEFAULT_PROCESSOR
from .options import sqlite_path, store_options, store_url
from .passages import Passage
from .records import DEFAULT_MAX_RECORD, FORMATS, Fields, LineWriter, format_size, parse_size
from .records.writers import OUTPUT_FORMATS
from .run import Progress, RunResult, RunSummary, format_sample_report, run_dedup
from .run.summary import plural
from .service import cli as service_cli
from .settings import (
    coerce_setting,
    describe,
    make_config,
    parse_assignment,
    parse_setting,
    read_config_file,
)
from .store import Store, open_store
from .times import parse_timestamp, parse_window

__all__ = ["main"]

_COLORS = ("\x1b[1;33m", "\x1b[1;36m", "\x1b[1;35m", "\x1b[1;32m", "\x1b[1;34m", "\x1b[1;31m")
_RESET = "\x1b[0m"


class CliError(NeardupError):
    """A problem worth one line on standard error and a non-zero exit."""


def read_text_arg(arg: str, *, stdin_used: list[bool]) -> str:
    """A literal text, ``@path`` for a file's contents, or ``-`` for standard input."""
    if arg == "-":
        if stdin_used:
            raise CliError("only one of the texts can be read from standard input ('-')")
        stdin_used.append(True)
        return sys.stdin.read()
    if arg.startswith("@") and len(arg) > 1:
        from .errors import InputError
        from .records import decode_file

        path = arg[1:]
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise CliError(f"cannot read {path}: {e.strerror or e}") from None
        try:  # as a folder's file is read: UTF-8, or HTML in the charset it declares
            return decode_file(data, html=path.lower().endswith((".html", ".htm")))
        except InputError as e:
            print(
                f"neardup: warning: {path}: {e}; each byte that is not UTF-8 is compared as U+FFFD",
                file=sys.stderr,
            )
            return data.decode("utf-8", errors="replace")
    if not any(c.isspace() for c in arg) and os.path.isfile(arg):
        print(
            f"neardup: note: {arg!r} is compared as a text; a file of that name is here: "
            f"@{arg} compares what it holds",
            file=sys.stderr,
        )
    return arg


def _highlight(text: str, spans: list[tuple[int, int, int]], color: bool) -> str:
    """``text`` with each (start, end, number) span marked, in colour or with brackets."""
    out: list[str] = []
    pos = 0
    for start, end, k in sorted(spans):
        out.append(text[pos:start])
        if color:
            out.append(f"{_COLORS[k % len(_COLORS)]}{text[start:end]}{_RESET}")
        else:
            out.append(f"[{k + 1}>{text[start:end]}<{k + 1}]")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _excerpt(text: str, limit: int = 2000) -> str:
    return (
        text if len(text) <= limit else text[:limit] + f" … ({len(text) - limit:,} more characters)"
    )


def format_comparison(c: Comparison, *, color: bool, show: int = 10) -> str:
    """The human-readable table of scores and the highlighted texts."""
    lines = ["measure        similarity"]
    for name, score in c.scores.items():
        bar = "█" * round(score * 20)
        lines.append(f"{name:<14} {score:8.4f}  {bar}")
    for name in c.skipped:
        lines.append(f"{name:<14} {'—':>8}  not computed: the texts are too long for it")
    passages: list[Passage] = c.passages[:show]
    covered = sum(p.length for p in c.passages)
    lines.append("")
    lines.append(
        f"shared passages: {len(c.passages)} covering {covered:,} of {len(c.a):,} / {len(c.b):,} characters"
    )
    for k, p in enumerate(passages):
        lines.append(
            f"  [{k + 1}] {p.length} chars at A:{p.a_start} B:{p.b_start}  {_excerpt(p.text, 60)}"
        )
    lines.append("")
    lines.append(
        "A: "
        + _excerpt(
            _highlight(c.a, [(p.a_start, p.a_end, k) for k, p in enumerate(passages)], color)
        )
    )
    lines.append("")
    lines.append(
        "B: "
        + _excerpt(
            _highlight(c.b, [(p.b_start, p.b_end, k) for k, p in enumerate(passages)], color)
        )
    )
    if c.dedup is not None:
        lines.extend(["", *format_dedup_view(c.dedup)])
    return "\n".join(lines)


def format_dedup_view(view: DedupView) -> list[str]:
    """What ``neardup dedup`` decides for B after A, the score it decides on, and which
    shared text counted and which was set aside as chrome."""
    v = view.verdict
    lines = [f"dedup (B after A): {view.summary}"]
    if v.measure == "coverage":
        lines.append(
            f"  coverage of the shorter text {v.score:.4f} (same story from "
            f"{DedupConfig().threshold}), of B's own text {v.copy_score:.4f} "
            f"(a copy from {DedupConfig().copy_threshold})"
        )
    else:
        lines.append(f"  {v.measure} {v.score:.4f}, B's own text {v.copy_score:.4f}")
    quoted = quoted_chars(view.b)
    if quoted and v.measure == "coverage":
        lines.append(
            f"  B's quoted lines (starting with >, {quoted:,} characters) are not its own text: "
            "B is a copy only if what it says itself is found in A too"
        )
    counted = sum(p.length for p in view.counted)
    chrome = sum(p.length for p in view.chrome)
    lines.append(
        f"  shared text that counted: {len(view.counted)} passages, {counted:,} characters; "
        f"set aside as chrome: {len(view.chrome)} passages, {chrome:,} characters"
    )
    lines.extend(f"    chrome: {_excerpt(p.text, 60)}" for p in view.chrome[:5])
    stripped = len(view.a) + len(view.b)
    lines.append(
        f"  (compared as the engine compares them: boilerplate lines stripped, "
        f"{stripped:,} characters in all)"
    )
    return lines


def _cmd_compare(args: argparse.Namespace) -> int:
    stdin_used: list[bool] = []
    a = read_text_arg(args.a, stdin_used=stdin_used)
    b = read_text_arg(args.b, stdin_used=stdin_used)
    guard = None
    url = store_url(args)
    if url is not None:  # the chrome that store has learned sets shared text aside
        # (a store that is there: a path or namespace that holds none is no chrome learned)
        with Deduper(store=_open_store(args, existing=True)) as dd:
            guard = dd.chrome()
    c = compare(a, b, processor=None if args.raw else DEFAULT_PROCESSOR, guard=guard)
    for name, why in c.skipped.items():
        print(f"neardup: note: {name} not computed: {why}", file=sys.stderr)
    if args.json:
        print(json.dumps(c.to_dict(), ensure_ascii=False))
    else:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        print(format_comparison(c, color=color))
    _DONE["all closed"] = url is None
    return 0


_DEDUP_DESCRIPTION = """\
Keep one copy of each story in a crawl and say where every other copy went.

Reads every record of INPUT, finds the near-duplicates (reprints, mirrors, lightly edited
copies) in Chinese and English, and writes the kept records to UNIQUE, one line per record to
CLUSTERS, and the records that could not be used to ERRORS. A summary with the time of each
stage follows on standard error."""

_DEDUP_EPILOG = """\
outputs:
  UNIQUE    the kept records in input order, exactly as they came in (JSONL lines; CSV rows
            under the input's header; a folder's files as JSON lines {"id", "text"})
  CLUSTERS  one JSON line for every usable record, in input order:
            {"id", "cluster", "duplicate_of", "extends", "score"}: cluster is the id of the
            record kept for its story; duplicate_of the earlier record it copies (it is
            left out of UNIQUE), null when kept; extends, for a kept record that repeats an
            earlier one and adds text to it (a reply quoting its parent, a full article
            after an excerpt), that record, whose cluster it joins unless that record is a
            hub (text different stories share); score that match's score to 4 places (0.0
            for a new story)
  ERRORS    one JSON line for every record that cannot be used: {"line", "id", "reason"}
            (with "file" when several files are read: malformed JSON or CSV, no text, empty
            text, invalid UTF-8, a repeated id, a bad timestamp, a record over
            --max-record-size); standard error unless --errors is given
  Every record read ends in CLUSTERS or in ERRORS. A path ending .gz is compressed; - is
  standard output; .parquet is Parquet; UNIQUE of WARC input is a WARC of the kept captures.
  Records without an id are named FILE:LINE (FILE:ROW for Parquet and Arrow).

exit status:
  0  every record was deduplicated or reported in ERRORS
  2  INPUT cannot be read or names nothing readable, an output cannot be written, or an
     option is wrong (nothing was run)
  3  the input could not be read to its end (a truncated or corrupt gzip file, a file or
     folder that cannot be read), or no record of it was usable
  4  more records were errors than --max-errors allows

examples:
  neardup dedup --sample
  neardup dedup crawl.jsonl -o unique.jsonl --clusters clusters.jsonl --errors errors.jsonl
  neardup dedup shards/ 'more/*.parquet' -o unique.parquet --clusters clusters.parquet
  neardup dedup crawl.warc.gz -o unique.warc.gz --clusters clusters.jsonl
  zcat crawl.jsonl.gz | neardup dedup - -o unique.jsonl --clusters clusters.jsonl
  neardup dedup pages/ -o unique.jsonl --clusters clusters.jsonl --keep longest
  neardup dedup headlines.csv --text-field title -o unique.csv --clusters clusters.jsonl
  neardup dedup crawl.jsonl --config neardup.toml --set common_after=10 -o u.jsonl --clusters c.jsonl"""

_SAMPLE_INTRO = """\
The built-in sample: {n} news items in Chinese and English. Each story appears as first
published and as reprinted on other sites, from light edits to heavy rewrites, next to a few
look-alike stories that are not reprints. neardup keeps one copy of each story:
"""

_SAMPLE_NEXT = """\
Now your own crawl (JSONL with "id" and "text", CSV, or a folder of .txt/.html files):
  neardup dedup crawl.jsonl -o unique.jsonl --clusters clusters.jsonl --errors errors.jsonl"""

_CONFIG_DEFAULTS = {f.name: f.default for f in dataclasses.fields(DedupConfig)}
#: The settings with a flag of their own (besides --raw and --keep-boilerplate); every
#: other one is --set NAME=VALUE.
_NAMED_SETTINGS = (
    ("threshold", "T", "share of the shorter text the other must cover to be a duplicate"),
    ("title_threshold", "T", "similarity short texts such as titles need"),
    ("num_perm", "N", "MinHash permutations, a power of two"),
    ("common_after", "N", "a shingle seen in this many stories is boilerplate; 0: no guard"),
    ("fragment_ratio", "R", "below this length ratio, an excerpt needs more coverage; 0: off"),
    ("lsh_threshold", "J", "the Jaccard level the LSH bands catch (candidate recall)"),
    ("cjk_width", "N", "characters in a Chinese shingle"),
    ("word_width", "N", "letters and digits in a Latin shingle"),
)


def _setting_type(name: str) -> Callable[[str], object]:
    """An argparse type that reads setting ``name`` as --set does."""

    def read(value: str) -> object:
        try:
            return parse_setting(name, value)
        except NeardupError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    read.__name__ = name
    return read


def _size(value: str) -> int:
    try:
        return parse_size(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _memory(value: str) -> int:
    """--sketch-memory: a size, or 0."""
    return 0 if value.strip() == "0" else _size(value)


def _max_errors(value: str) -> tuple[float, bool]:
    """--max-errors: a count, or a percentage of the records read ("5%")."""
    text = value.strip()
    percent = text.endswith("%")
    try:
        n = float(text[:-1]) if percent else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither a count (10) nor a percentage (5%)"
        ) from None
    if n < 0 or (percent and n > 100):
        raise argparse.ArgumentTypeError(f"{value!r} must be a count or a percentage of 0 to 100")
    return (n, percent)


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _dedup_config(args: argparse.Namespace) -> DedupConfig:
    """The settings: the --config file's, then each --set, then the named flags."""
    values: dict[str, object] = {}
    if args.config is not None:
        values.update(read_config_file(args.config))
    for text in args.set or ():
        try:
            name, value = parse_assignment(text)
        except NeardupError as e:
            raise CliError(f"--set {text}: {e}") from None
        values[name] = value
    for name, _, _ in _NAMED_SETTINGS:
        value = getattr(args, name)
        if value is not None:
            values[name] = coerce_setting(name, value)
    if args.raw:
        values["normalize"] = False
    if args.keep_boilerplate:
        values["strip_boilerplate"] = False
    return make_config(values)


def _is_device(path: str) -> bool:
    """Whether ``path`` is a character device (``/dev/null``), not a file outputs would
    write over each other in."""
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def _check_dedup_args(args: argparse.Namespace) -> None:
    """Every mistake in the options that can be found before reading anything."""
    if args.sample and args.input:
        raise CliError("give INPUT or --sample, not both")
    if not args.sample:
        if not args.input:
            raise CliError(
                "dedup needs an INPUT (a JSONL, CSV, Parquet or WARC file, a folder, a glob, "
                "or - for standard input); try neardup dedup --sample"
            )
        missing = [
            flag
            for flag, value in (("-o UNIQUE", args.output), ("--clusters CLUSTERS", args.clusters))
            if value is None
        ]
        # --engine spark --output-dir DIR (or -o DIR/) writes both outputs in DIR
        in_folder = args.output_dir is not None or (args.output or "").endswith("/")
        if missing and not (args.engine == "spark" and in_folder):
            raise CliError(f"dedup {' '.join(args.input)} needs {' and '.join(missing)}")
        if args.input.count("-") > 1:
            raise CliError("standard input (-) can be read once, not twice")
    if (args.store or args.db or args.window) and args.keep != "first":
        raise CliError(
            f"a store or a window keeps the first copy of each story; --keep {args.keep} needs "
            "the whole corpus at once"
        )
    if args.window is not None:
        parse_window(args.window)
    if args.stream and args.keep != "first":
        raise CliError(
            f"--stream keeps the first copy of each story; --keep {args.keep} needs the whole "
            "corpus at once, so drop --stream"
        )
    batch_only = {
        "--sketch-memory": (args.sketch_memory, "is the memory of a local batch run's sketches"),
        "--workers": (args.workers, "sets the processes that sketch a local batch run"),
    }
    not_batch = args.stream or store_url(args) is not None or args.window or args.engine == "spark"
    for flag, (value, what) in batch_only.items():
        if value is not None and not_batch:
            raise CliError(
                f"{flag} {what}; drop it with --stream, --db/--store, --window or --engine spark"
            )
    outputs = {
        "-o": args.output,
        "--clusters": args.clusters,
        "--errors": args.errors,
        "--json-summary": args.json_summary,
        "--duplicates-only": args.duplicates_only,
    }
    on_stdout = [flag for flag, path in outputs.items() if path == "-"]
    if args.sample and on_stdout:
        raise CliError(f"--sample prints its report on standard output; give {on_stdout[0]} a file")
    if len(on_stdout) > 1:
        raise CliError(f"only one output can be standard output (-), not {' and '.join(on_stdout)}")
    seen: dict[str, str] = {}
    for flag, path in outputs.items():
        if path is None or path == "-":
            continue
        real = os.path.realpath(path)
        if real in seen and not _is_device(real):  # /dev/null takes any number of outputs
            raise CliError(f"{seen[real]} and {flag} are the same file {path}; give each its own")
        seen[real] = flag
        for source in args.input or ():
            if (
                source != "-"
                and os.path.exists(path)
                and os.path.exists(source)
                and os.path.samefile(path, source)
            ):
                raise CliError(f"{flag} {path} is the input; writing it would destroy the input")


def _cmd_dedup(args: argparse.Namespace) -> int:
    _check_dedup_args(args)
    config = _dedup_config(args)
    fields = Fields(
        id=args.id_field,
        text=args.text_field,
        title=args.title_field,
        timestamp=args.timestamp_field,
    )
    mode = args.progress
    if mode == "auto":
        mode = "on" if not args.quiet and sys.stderr.isatty() else "off"
    progress = Progress(sys.stderr, enabled=mode != "off", json=mode == "json")
    # every output is opened before the run, so a bad path fails before the work, not after
    summary_out = LineWriter(args.json_summary) if args.json_summary is not None else None
    url = store_url(args)
    run: Callable[..., RunResult] = functools.partial(
        run_dedup,
        unique=args.output,
        clusters=args.clusters,
        errors=args.errors,
        fields=fields,
        fmt=args.format,
        config=config,
        keep=args.keep,
        mode="stream" if args.stream else "batch",
        progress=progress,
        store=url,
        window=args.window,
        batch_size=args.batch_size,
        output_format=args.output_format,
        duplicates=args.duplicates_only,
        max_record_size=args.max_record_size,
        sketch_memory=args.sketch_memory,
        workers=args.workers,
        encoding=args.encoding,
    )
    if args.engine == "spark":
        run = _spark_run(args, fields, config)
    elif args.output_dir is not None or args.spark_conf:
        raise CliError("--output-dir and --spark-conf are for --engine spark")
    result: RunResult
    if args.sample:
        sample = files("neardup").joinpath("data", "sample.jsonl")
        with as_file(sample) as path:
            result = run(str(path), collect=True, label="built-in sample")
        print(_SAMPLE_INTRO.format(n=result.summary.records))
        print(format_sample_report(result.decided))
        if not args.quiet:
            print(result.summary.format())
            print()
        print(_SAMPLE_NEXT)
    else:
        result = run(args.input if len(args.input) > 1 else args.input[0])
        if not args.quiet:
            print(result.summary.format(), file=sys.stderr)
    status, why = _exit_status(result.summary, args.max_errors)
    if summary_out is not None:
        numbers = {**result.summary.to_dict(), "status": status}
        summary_out.write(json.dumps(numbers, ensure_ascii=False))
        summary_out.close()
    if status:
        print(f"neardup: {why} (exit status {status})", file=sys.stderr)
    # every output is closed (run_dedup closes what it opened); a store or Spark is left
    # to close as it always does
    _DONE["all closed"] = args.engine != "spark" and url is None
    return status


def _exit_status(summary: RunSummary, max_errors: tuple[float, bool] | None) -> tuple[int, str]:
    """The exit status of a finished run, and why it is not 0."""
    if summary.unread:
        more = f" and {len(summary.unread) - 1} more" if len(summary.unread) > 1 else ""
        return 3, f"the input could not be read to its end: {summary.unread[0]}{more}"
    if summary.records and not summary.documents:
        return 3, f"none of the {summary.records:,} records read was usable (see ERRORS)"
    if max_errors is not None:
        limit, percent = max_errors
        allowed = summary.records * limit / 100 if percent else limit
        if summary.errors > allowed:
            shown = f"{limit:g}% of {summary.records:,} records" if percent else f"{limit:g}"
            return 4, f"{summary.errors:,} records were errors, more than --max-errors {shown}"
    return 0, ""


def _spark_run(
    args: argparse.Namespace, fields: Fields, config: DedupConfig
) -> Callable[..., RunResult]:
    """The Spark engine's run for ``--engine spark``, with the same outputs as the local run
    (or, with ``--output-dir``, UNIQUE and CLUSTERS as Parquet written by the executors)."""
    if args.stream or store_url(args) is not None or args.window is not None:
        raise CliError(
            "--engine spark deduplicates the whole input at once; "
            "drop --stream, --db/--store and --window"
        )
    if args.output_format or args.duplicates_only or (args.input and len(args.input) > 1):
        raise CliError(
            "--engine spark reads one INPUT and writes JSONL; drop --output-format, "
            "--duplicates-only and the other inputs"
        )
    from .records.charsets import text_codec

    if text_codec(args.encoding) is not None:
        raise CliError(
            f"--engine spark reads UTF-8 (Spark's text reader); convert the input first "
            f"(iconv -f {args.encoding} -t utf-8), or run the local engine"
        )
    conf: dict[str, str] = {}
    for item in args.spark_conf or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--spark-conf takes KEY=VALUE, not {item!r}")
        conf[key.strip()] = value.strip()
    unique, clusters, output_dir = args.output, args.clusters, args.output_dir
    if unique is not None and unique.endswith("/"):
        if output_dir is not None:
            raise CliError(f"-o {unique} and --output-dir {output_dir}: give one folder")
        output_dir, unique = unique, None
    if output_dir is not None:
        if unique is not None or clusters is not None:
            raise CliError(
                f"--output-dir writes UNIQUE and CLUSTERS in {output_dir}; drop -o and --clusters"
            )
        if args.sample:
            raise CliError("--sample prints its report; drop --output-dir")
    from .spark import run_cli

    return functools.partial(
        run_cli,
        unique=unique,
        clusters=clusters,
        errors=args.errors,
        master=args.spark_master,
        fields=fields,
        fmt=args.format,
        config=config,
        keep=args.keep,
        conf=conf,
        output_dir=output_dir,
    )


def _open_store(
    args: argparse.Namespace, *, readonly: bool = False, existing: bool = False
) -> Store:
    url = store_url(args)
    if url is None:
        raise CliError("give the store: --db PATH or --store URL")
    if url.startswith("sqlite:///") and not os.path.exists(path := sqlite_path(url)[0]):
        raise CliError(f"no store at {path}")
    if existing and url.startswith("memory:"):
        raise CliError("a memory:// store lives in the process that made it: give --db or --store")
    return open_store(url, readonly=readonly, existing=existing)


def _cmd_store(args: argparse.Namespace) -> int:
    if args.action == "check":
        return _check_store(args)
    # only a store that is there: a typo in a path or namespace would otherwise make an
    # empty store and report on it (and a SQLite file of another program is never written)
    with _open_store(args, readonly=args.action == "stats", existing=True) as store:
        if args.action == "stats":
            stats = store.stats(full=True)
            guard = chrome_of(store)  # the chrome guard's load: how crowded its table is
            stats["chrome_load"] = float(f"{guard.load_factor():.6g}")
            if guard.window > 0:
                stats["chrome_window"] = guard.window
            if args.json:
                print(json.dumps(stats, ensure_ascii=False))
            else:
                for key, value in stats.items():
                    if key in ("oldest", "newest") and isinstance(value, float):
                        when = datetime.datetime.fromtimestamp(value, datetime.UTC)
                        value = when.isoformat(timespec="seconds")
                    print(f"{key:<18} {value}")
        elif args.action == "prune":
            if (args.window is None) == (args.before is None):
                raise CliError("prune needs --window SPAN or --before TIMESTAMP (one of them)")
            if args.before is not None:
                before = parse_timestamp(args.before)
            else:
                before = time.time() - cast(float, parse_window(args.window))
            n = store.prune(before)
            when = datetime.datetime.fromtimestamp(before, datetime.UTC)
            print(f"pruned {plural(n, 'document')} older than {when.isoformat(timespec='seconds')}")
            _reclaim(store, rewrite=args.vacuum)
        elif args.action == "vacuum":
            _reclaim(store, rewrite=True)
        else:
            missing = [doc_id for doc_id in args.ids if not store.delete(doc_id)]
            print(f"deleted {plural(len(args.ids) - len(missing), 'document')}")
            _reclaim(store, rewrite=args.vacuum)
            if missing:
                print(f"not in the store: {', '.join(missing)}", file=sys.stderr)
                return 1
    return 0


def _reclaim(store: Store, *, rewrite: bool) -> None:
    """Give the space of forgotten documents back (:meth:`Store.reclaim`) and say how much
    the SQLite file holds now, or what would give back the rest; of Redis, its memory."""
    before = store.stats()
    store.reclaim(rewrite=rewrite)
    if not isinstance(before.get("free_bytes"), int):
        used = before.get("redis_used_memory")
        if isinstance(used, int):  # Redis: the documents' keys went with them
            now = store.stats().get("redis_used_memory")
            shown = format_size(now) if isinstance(now, int) else "?"
            print(
                f"redis used_memory {format_size(used)} -> {shown} (a namespace's keys go with "
                "its documents: nothing to rewrite)"
            )
        return
    after = store.stats()
    print(
        f"store file {format_size(cast(int, before['bytes']))} -> "
        f"{format_size(cast(int, after['bytes']))}"
    )
    free = cast(int, after["free_bytes"])
    if free and not after.get("reclaims_space"):
        print(
            f"neardup: {format_size(free)} of free pages stay in the file, written before neardup gave "
            "space back as it goes: 'neardup store vacuum' rewrites it once (other processes "
            "wait meanwhile)",
            file=sys.stderr,
        )


def _check_store(args: argparse.Namespace) -> int:
    """``neardup store check``: 0 and "ok" when nothing is wrong, else 1 and what is."""
    try:
        store = _open_store(args, readonly=True)
    except StoreError as e:  # a file SQLite cannot even open as a database
        print(f"neardup: {e}", file=sys.stderr)
        return 1
    with store:
        problems = store.check()
        if not problems:  # the learned chrome: its saved table, read as every run reads it
            try:
                chrome_of(store)
            except DamagedGuard as e:
                problems.append(e.problem)
        documents = None if problems else store.stats().get("documents")
    if not problems:
        held = f"{documents:,} documents" if isinstance(documents, int) else "its documents"
        print(f"{store.url}: ok ({held} checked)")
        return 0
    print(f"{store.url}: {len(problems)} problem{'s' if len(problems) != 1 else ''}")
    for line in problems:
        print(f"  {line}")
    if problems[0].startswith("no neardup store"):
        what = "check the URL and its namespace"
    elif store.url.startswith("sqlite:"):
        what = (
            "the store is not sound: restore the file from a backup, or rebuild the store "
            "(move it away and run neardup dedup again over what it held)"
        )
    else:
        what = (
            "the store is not sound: rebuild the namespace (delete its keys and run neardup "
            "dedup again over what it held), or restore Redis from a backup"
        )
    print(f"neardup: {what} (exit status 1)", file=sys.stderr)
    return 1


#: The subcommands of the parser (argparse names the type only privately).
_Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

_VACUUM_HELP = (
    "then rewrite a SQLite file compactly (VACUUM), for a file written before neardup gave "
    "space back as it goes"
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="neardup",
        description="Find near-duplicate text (reprints, mirrors, lightly edited copies).",
    )
    parser.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_compare(sub)
    _add_dedup(sub)
    _add_store(sub)
    service_cli.add_parser(sub)
    return parser


def _add_compare(sub: _Subparsers) -> None:
    """``neardup compare A B``."""
    p = sub.add_parser("compare", help="every measure for two texts, with their shared passages")
    p.add_argument(
        "a",
        help="a text; @path reads a file (UTF-8, or HTML in the charset it declares), "
        "- reads standard input",
    )
    p.add_argument("b", help="the other text, the same way")
    p.add_argument("--json", action="store_true", help="print one JSON object of measure: score")
    p.add_argument(
        "--raw", action="store_true", help="compare the texts as given, without normalization"
    )
    store_options(p, default=" (the default: no chrome learned)")
    p.set_defaults(func=_cmd_compare)


def _add_dedup(sub: _Subparsers) -> None:
    """``neardup dedup INPUT ...``: its groups of options, each added by its own function."""
    d = sub.add_parser(
        "dedup",
        help="keep one copy of each story in a crawl; say where every other copy went",
        description=_DEDUP_DESCRIPTION,
        epilog=_DEDUP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    d.add_argument(
        "input",
        nargs="*",
        metavar="INPUT",
        help="what to read, in order: JSON Lines (- for standard input; gzip, zstd, bzip2 "
        "and xz read too) or one JSON array, CSV with a header row, Parquet, Arrow IPC, WARC "
        "or WET files; folders of them or of .txt/.html pages (in name order); globs "
        "('shards/*.jsonl.gz')",
    )
    d.add_argument(
        "--sample",
        action="store_true",
        help="run on the built-in sample (Chinese and English news with their reprints) and "
        "print each story with the duplicates merged into it; needs no INPUT",
    )
    _dedup_outputs(d.add_argument_group("outputs"))
    _dedup_input(d.add_argument_group("input"))
    _dedup_matching(
        d.add_argument_group(
            "matching",
            "Every setting can also be given as --set NAME=VALUE or in a TOML file (--config); "
            "the named flags win over --set, which wins over the file.",
        )
    )
    _dedup_store(
        d.add_argument_group(
            "store",
            "Remember what was seen, across runs and processes: each record is compared with "
            "everything stored by earlier runs (or by other processes at the same time), then "
            "added. Decisions are the streaming ones (the first copy of each story is kept).",
        )
    )
    _dedup_display(d.add_argument_group("display"))
    d.set_defaults(func=_cmd_dedup)


def _dedup_outputs(g: argparse._ArgumentGroup) -> None:
    """The outputs of ``neardup dedup`` and what ends a run."""
    g.add_argument("-o", "--output", metavar="UNIQUE", help="write the kept records here")
    g.add_argument(
        "--clusters", metavar="CLUSTERS", help="write one JSON line per usable record here"
    )
    g.add_argument(
        "--errors",
        metavar="ERRORS",
        help="write the records that cannot be used here (default: standard error; "
        "the summary counts them either way)",
    )
    g.add_argument(
        "--json-summary", metavar="PATH", help="also write the summary as one JSON object here"
    )
    g.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        help="write UNIQUE as this (default: what its name says — .parquet, .warc.gz, .jsonl, "
        ".csv — or else the input's own format); parquet makes CLUSTERS Parquet too",
    )
    g.add_argument(
        "--duplicates-only",
        metavar="IDS",
        help="also write the ids of the records to drop (the duplicates) here, one a line",
    )
    g.add_argument(
        "--max-errors",
        type=_max_errors,
        metavar="N",
        help="exit with status 4 when more records than this are errors: a count, or a "
        "percentage of the records read (5%%)",
    )


def _dedup_input(g: argparse._ArgumentGroup) -> None:
    """How ``neardup dedup`` reads its inputs."""
    g.add_argument(
        "--format",
        choices=FORMATS,
        help="read every INPUT file as this format (default: by its name: .csv, .parquet, "
        ".arrow, .warc, .wet are what they say, a folder is read file by file, anything else "
        "is JSONL); with a folder, every file in it (dir: its .txt/.html pages only)",
    )
    g.add_argument(
        "--max-record-size",
        type=_size,
        metavar="SIZE",
        default=DEFAULT_MAX_RECORD,
        help=f"the most one record (a line, a row, a file) may hold; larger ones are errors, "
        f"skipped unread (default: 64M = {format_size(DEFAULT_MAX_RECORD)})",
    )
    g.add_argument(
        "--encoding",
        metavar="NAME",
        help="the text encoding of JSONL and CSV inputs that are not UTF-8: gbk or big5 (what "
        "Excel saves on a Chinese Windows), cp1252, shift_jis ... (default: UTF-8; UTF-16 "
        "and UTF-32 are found by themselves)",
    )
    defaults = Fields()
    for part in ("id", "text", "title", "timestamp"):
        g.add_argument(
            f"--{part}-field",
            metavar="NAME",
            default=getattr(defaults, part),
            help=f"the field or CSV column holding the {part} (default: %(default)s)",
        )


def _dedup_matching(g: argparse._ArgumentGroup) -> None:
    """The settings of ``neardup dedup`` that decide what matches."""
    for name, metavar, what in _NAMED_SETTINGS:
        g.add_argument(
            f"--{name.replace('_', '-')}",
            type=_setting_type(name),
            metavar=metavar,
            help=f"{what} — {describe(name)}",
        )
    g.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="set any DedupConfig setting (threshold, fragment_ratio, prefilter, common_after, "
        "chrome_passage, chrome_window, title_threshold, short_units, lsh_threshold, num_perm, lsh_params, bucket_cap, "
        "max_verify, cjk_width, word_width, normalize, strip_boilerplate, normalizer.html|width|case|"
        "whitespace|script); again for more",
    )
    g.add_argument(
        "--config",
        metavar="TOML",
        help="read settings from a TOML file (keys: the setting names; [normalizer] for its steps)",
    )
    g.add_argument(
        "--keep",
        choices=("first", "longest", "earliest"),
        default="first",
        help="which copy of each story to keep: the first read, the longest, or the one with "
        "the earliest timestamp (default: first)",
    )
    g.add_argument(
        "--raw", action="store_true", help="compare the texts as given, without normalization"
    )
    g.add_argument(
        "--keep-boilerplate",
        action="store_true",
        help="do not strip site boilerplate (bylines, share and copyright lines) before comparing",
    )
    g.add_argument(
        "--stream",
        action="store_true",
        help="decide and write each record as it is read, instead of the whole corpus at once "
        "(the same decisions; keeps the first copy)",
    )
    g.add_argument(
        "--sketch-memory",
        type=_memory,
        metavar="SIZE",
        help="the most memory (512M, 4G; 0: none) the sketches of decided records hold in a "
        "batch run; past it the oldest go to a temporary file (in TMPDIR) and are read back "
        "when a later record's candidates name them: the same decisions in less memory, "
        "for about 11 KB of disk a long article (default: a quarter of the memory of the "
        "machine, or of its container)",
    )
    g.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="processes that sketch the records of a batch run: 1 sketches them in this "
        "process; the decisions are the same for any N (default: one per CPU this process "
        "may use, a container's CPU quota included, up to 4, once the input is big enough to "
        "pay for them)",
    )
    g.add_argument(
        "--engine",
        choices=("local", "spark"),
        default="local",
        help="where the batch runs: this process (local) or Apache Spark, for JSONL or "
        "Parquet too big for one machine (needs pip install 'neardup[spark]')",
    )
    g.add_argument(
        "--spark-master",
        metavar="URL",
        default="local[*]",
        help="the Spark master for --engine spark: local[N], spark://HOST:PORT, yarn... "
        "(default: %(default)s)",
    )
    g.add_argument(
        "--spark-conf",
        action="append",
        metavar="KEY=VALUE",
        help="a Spark setting for --engine spark (spark.executor.memory=8g, "
        "spark.sql.shuffle.partitions=4000, spark.pyspark.python=...); again for more. "
        "Partitions and Arrow batch sizes are chosen from the input and the cores unless set",
    )
    g.add_argument(
        "--output-dir",
        metavar="DIR",
        help="with --engine spark: write UNIQUE (DIR/unique) and CLUSTERS (DIR/clusters) as "
        "Parquet from the executors, in parts, instead of through this process (for outputs "
        "too big for one machine); -o DIR/ (a path ending in /) says the same",
    )


def _dedup_store(g: argparse._ArgumentGroup) -> None:
    """The store of ``neardup dedup``: what earlier runs saw."""
    store_options(g)
    g.add_argument(
        "--window",
        metavar="SPAN",
        help="compare each record only with those whose timestamp is within SPAN of its own "
        "(90d, 12h, 30m, 2w or seconds); records without a timestamp use the time they are read",
    )
    g.add_argument(
        "--batch-size",
        type=_positive_int,
        default=256,
        metavar="N",
        help="records decided and committed to the store together (default: %(default)s)",
    )


def _dedup_display(g: argparse._ArgumentGroup) -> None:
    """What ``neardup dedup`` shows while it runs."""
    g.add_argument(
        "--progress",
        choices=("auto", "on", "off", "json"),
        default="auto",
        help="show progress on standard error: where the run is (bytes read of the total, "
        "records, rate, ETA, the stage running); json: the same as JSON lines, for "
        "schedulers; --progress alone: on; --no-progress: off (default: auto, on when standard "
        "error is a terminal)",
    )
    g.add_argument("-q", "--quiet", action="store_true", help="print no progress and no summary")


def _add_store(sub: _Subparsers) -> None:
    """``neardup store ACTION``."""
    st = sub.add_parser(
        "store",
        help="look after a store: stats, check, prune old documents, delete documents",
        description="Look after a store that neardup dedup --db/--store fills.",
    )
    actions = st.add_subparsers(dest="action", required=True)
    a = actions.add_parser("stats", help="how many documents, stories, buckets; oldest, newest")
    store_options(a)
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a = actions.add_parser("prune", help="forget documents older than a window or a time")
    store_options(a)
    a.add_argument("--window", metavar="SPAN", help="keep the last SPAN (90d, 12h, ...)")
    a.add_argument("--before", metavar="TIMESTAMP", help="forget what is older than this")
    a.add_argument("--vacuum", action="store_true", help=_VACUUM_HELP)
    a = actions.add_parser(
        "vacuum",
        help="give back all the space of forgotten documents (SQLite: rewrite the file)",
        description="Rewrite a SQLite store compactly (VACUUM: needs free disk as large as "
        "the file, and other processes wait for it), so that a file written before neardup "
        "gave space back as it goes does so from then on; on Redis, hand freed memory back "
        "(MEMORY PURGE).",
    )
    store_options(a)
    a = actions.add_parser(
        "check",
        help="check a store: SQLite's integrity check and the store's own (exit 1 if not sound)",
        description="Check a store, reading only: a SQLite file with SQLite's integrity check "
        "and neardup's (its tables, every sketch decodes, nothing names a missing document); "
        "a Redis namespace's keys (their types, entries that parse, sketches that decode, the "
        "indexes). Prints ok and exits 0, or lists what is wrong and exits 1.",
    )
    store_options(a)
    a = actions.add_parser("delete", help="forget documents by id")
    store_options(a)
    a.add_argument("ids", nargs="+", metavar="ID")
    a.add_argument("--vacuum", action="store_true", help=_VACUUM_HELP)
    st.set_defaults(func=_cmd_store)


def _progress_flags(argv: list[str]) -> list[str]:
    """``--progress`` alone means ``--progress=on``, ``--no-progress`` ``--progress=off``
    (so that ``--progress json`` can take a value and ``--progress INPUT`` still works)."""
    out = []
    for i, arg in enumerate(argv):
        if arg == "--no-progress":
            out.append("--progress=off")
        elif arg == "--progress" and (
            i + 1 >= len(argv) or argv[i + 1] not in ("auto", "on", "off", "json")
        ):
            out.append("--progress=on")
        else:
            out.append(arg)
    return out


_SHOW_WARNING = warnings.showwarning


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A warning of neardup's own to a user (a run's workers lost, or fewer started than
    asked) as one line; any other as Python shows it."""
    if issubclass(category, RunWarning):
        print(f"neardup: warning: {message}", file=sys.stderr)
        return
    _SHOW_WARNING(message, category, filename, lineno, file, line)


#: set by a command whose every output is written and closed, and which leaves nothing for
#: the interpreter's exit to do (no store, no Spark, no service): :func:`run` then ends the
#: process at once
_DONE = {"all closed": False}


def run() -> NoReturn:
    """The ``neardup`` command (and ``python -m neardup``): :func:`main`, then the exit.

    A command that finished with everything written and closed ends the process at once,
    without the interpreter's teardown — freeing every object, array and compiled kernel
    one by one, which gives nothing to anyone: about 0.2 s of a 2.5 s ``neardup dedup`` of
    10,000 articles, more after a larger input. Not under a tracer or profiler (coverage,
    cProfile), which write what they found at that exit."""
    status = main()
    if _DONE["all closed"] and not _watched():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # (a pipe closed under it): the usual exit says so, or not, as it always did
        else:
            os._exit(status)
    sys.exit(status)


def _watched() -> bool:
    """Whether a tracer, a profiler or a monitoring tool (Python 3.12+) watches the process."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return True
    monitoring: Any = getattr(sys, "monitoring", None)
    return monitoring is not None and any(monitoring.get_tool(i) for i in range(6))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    _DONE["all closed"] = False
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["dedup"]:
        given = _progress_flags(given)
    args = parser.parse_args(given)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            status: int = args.func(args)
    except NeardupError as e:
        print(f"neardup: error: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:  # SIGINT or SIGTERM during a run: how far it got, 130 or 143
        print(f"neardup: {e}", file=sys.stderr)
        return e.status
    except KeyboardInterrupt:
        print("neardup: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, and let exit not complain either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return status
