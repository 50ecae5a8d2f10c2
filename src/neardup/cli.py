"""The ``neardup`` command line: a thin layer over the library."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from . import __version__
from .compare import Comparison, compare
from .errors import NeardupError
from .measures._base import DEFAULT_PROCESSOR
from .passages import Passage

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
        path = arg[1:]
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise CliError(f"cannot read {path}: {e.strerror or e}") from None
        return data.decode("utf-8", errors="replace")
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
    return "\n".join(lines)


def _cmd_compare(args: argparse.Namespace) -> int:
    stdin_used: list[bool] = []
    a = read_text_arg(args.a, stdin_used=stdin_used)
    b = read_text_arg(args.b, stdin_used=stdin_used)
    c = compare(a, b, processor=None if args.raw else DEFAULT_PROCESSOR)
    if args.json:
        print(json.dumps(c.to_dict(), ensure_ascii=False))
    else:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        print(format_comparison(c, color=color))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="neardup",
        description="Find near-duplicate text (reprints, mirrors, lightly edited copies).",
    )
    parser.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("compare", help="every measure for two texts, with their shared passages")
    p.add_argument("a", help="a text; @path reads a file, - reads standard input")
    p.add_argument("b", help="the other text, the same way")
    p.add_argument("--json", action="store_true", help="print one JSON object of measure: score")
    p.add_argument(
        "--raw", action="store_true", help="compare the texts as given, without normalization"
    )
    p.set_defaults(func=_cmd_compare)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
    except NeardupError as e:
        print(f"neardup: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return status
