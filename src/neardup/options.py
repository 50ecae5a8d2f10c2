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
        return sqlite_url(args.db)
    url: str | None = getattr(args, "store", None)
    return url


def sqlite_url(path: str) -> str:
    """The store URL of the SQLite file ``path``: ``sqlite:///`` and the path, the two
    characters a URL reads otherwise written as escapes (a ``?`` begins its options, and a
    ``%`` an escape), so that :func:`sqlite_path` gives the path back.

    >>> sqlite_url("crawl.db"), sqlite_url("/data/a?b 100%.db")
    ('sqlite:///crawl.db', 'sqlite:////data/a%3Fb 100%25.db')
    >>> sqlite_path(sqlite_url("/data/a?b 100%.db"))
    ('/data/a?b 100%.db', '')
    """
    return "sqlite:///" + path.replace("%", "%25").replace("?", "%3F")


def sqlite_path(url: str) -> tuple[str, str]:
    """The file a ``sqlite:`` store URL names (``sqlite:///rel.db``, ``sqlite:////abs.db``;
    ``%`` escapes read, as in any URL: ``%3F`` is a ``?``) and its options (what follows
    the ``?``, if any).

    >>> sqlite_path("sqlite:///crawl.db?keep_text=1"), sqlite_path("sqlite:////tmp/x.db")
    (('crawl.db', 'keep_text=1'), ('/tmp/x.db', ''))
    """
    from urllib.parse import unquote

    path, _, options = url.split("://", 1)[1].partition("?")
    path = path[1:] if path.startswith("/") else path
    return unquote(path), options
