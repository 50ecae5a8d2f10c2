"""Command-line options shared by ``neardup dedup``, ``neardup store`` and ``neardup serve``
(standard library only, so that ``--help`` works without the optional extras)."""

from __future__ import annotations

import argparse


def store_options(g: argparse._ActionsContainer, *, default: str = "") -> None:
    """``--store URL`` or ``--db PATH`` (a SQLite file), one or the other. ``default`` says, in
    the help, what the command uses without either."""
    where = g.add_mutually_exclusive_group()
    where.add_argument(
        "--store",
        metavar="URL",
        help="a store: sqlite:///path/to/file.db, redis://host:port/db?namespace=NAME, "
        f"or memory://{default}",
    )
    where.add_argument("--db", metavar="PATH", help="a SQLite store file: --store sqlite:///PATH")


def store_url(args: argparse.Namespace) -> str | None:
    """The store URL the options of :func:`store_options` name, or None."""
    if getattr(args, "db", None):
        return f"sqlite:///{args.db}"
    url: str | None = getattr(args, "store", None)
    return url
