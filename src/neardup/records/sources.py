"""What the INPUT arguments of a run name: files, folders of shards or pages, and globs,
resolved into the :class:`Part` s a reader reads, in order.

A folder is walked in name order, depth first; each file in it is read by its name: record
files (``.jsonl``, ``.ndjson``, ``.csv``, each also ``.gz`` or ``.zst``; ``.parquet``;
``.arrow``/``.feather``/``.ipc``; ``.warc``, ``.wet``, also ``.gz``) give their records,
pages (``.txt``, ``.html``, ``.htm``) are one record each, and anything else is left alone
(and counted). A glob (``'shards/*.jsonl.gz'``, ``**`` for any depth) is expanded the same
way, matches in name order. Something that names nothing readable is an
:class:`~neardup.errors.InputError`.

>>> import os, tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     for name in ("part-1.jsonl", "part-0.jsonl.gz", "notes.md", "page.html"):
...         open(os.path.join(folder, name), "w").close()
...     found = resolve([folder])
>>> [(os.path.basename(p.path), p.fmt) for p in found.parts], found.skipped
([('page.html', 'page'), ('part-0.jsonl.gz', 'jsonl'), ('part-1.jsonl', 'jsonl')], {'.md': 1})
"""

from __future__ import annotations

import glob
import os
import stat
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, cast

from ..errors import ConfigError, InputError

__all__ = [
    "FORMATS",
    "PAGE_SUFFIXES",
    "RECORD_SUFFIXES",
    "Format",
    "Part",
    "Resolved",
    "detect_format",
    "resolve",
    "shown_name",
]

#: The formats a user can name (``--format``): ``dir`` is a folder of pages, one record each.
Format: TypeAlias = Literal["jsonl", "csv", "dir", "parquet", "arrow", "warc"]
FORMATS: tuple[Format, ...] = ("jsonl", "csv", "dir", "parquet", "arrow", "warc")

#: What each file of a run is read as: a user format, or ``page`` (one file, one record).
PartFormat: TypeAlias = Literal["jsonl", "csv", "parquet", "arrow", "warc", "page"]

#: Files of a folder that hold records, by how their names end (compression aside).
RECORD_SUFFIXES: dict[str, PartFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "csv",  # read by its header: separated by tabs
    ".parquet": "parquet",
    ".arrow": "arrow",
    ".feather": "arrow",
    ".ipc": "arrow",
    ".warc": "warc",
    ".wet": "warc",
}
_COMPRESSED = (".gz", ".zst", ".bz2", ".xz")
#: Files of a folder that are one record each: the file's text, its path the id.
PAGE_SUFFIXES = (".txt", ".html", ".htm")
_GLOB_CHARS = frozenset("*?[")


def shown_name(name: str) -> str:
    """A file name fit for messages and ids: bytes the file system name holds that are not
    UTF-8 (Python keeps them as surrogates) shown as U+FFFD.

    >>> shown_name(os.fsdecode(b"caf\\xe9.txt"))
    'caf�.txt'
    """
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _suffix_format(name: str) -> PartFormat | None:
    """The record format a file's name says, or None."""
    low = name.lower()
    for end in _COMPRESSED:
        if low.endswith(end):
            low = low[: -len(end)]
            break
    for suffix, fmt in RECORD_SUFFIXES.items():
        if low.endswith(suffix):
            if fmt in ("parquet", "arrow") and low != name.lower():
                return None  # a compressed Parquet file is not one
            return fmt
    return None


def detect_format(source: str) -> Format:
    """The format of ``source`` as its name shows it.

    ``-`` (standard input) is JSONL; ``.csv`` (``.gz``, ``.zst``) is CSV; ``.parquet``,
    ``.arrow``/``.feather``/``.ipc`` and ``.warc``/``.wet`` (``.gz``) are what they say; a
    folder is ``dir``; anything else is JSONL. Compression is found by content when reading.

    >>> detect_format("-"), detect_format("crawl.CSV.gz"), detect_format("crawl.jsonl.gz")
    ('jsonl', 'csv', 'jsonl')
    >>> detect_format("CC-MAIN-1.warc.wet.gz"), detect_format("shard.parquet")
    ('warc', 'parquet')
    """
    if source == "-":
        return "jsonl"
    if os.path.isdir(source):
        return "dir"
    fmt = _suffix_format(source)
    return "jsonl" if fmt is None or fmt == "page" else fmt


@dataclass
class Part:
    """One file a run reads: what to open, how to name it, and as what.

    ``problem`` (when set) is why it cannot be read at all — it becomes one error record;
    ``unread`` says the problem means part of the input was not read (a folder that cannot
    be listed), as opposed to a file skipped on purpose (a device, a FIFO).
    """

    path: str  # what to open (as the file system names it)
    name: str  # how messages, ids and errors name it (as the user would type it)
    fmt: PartFormat
    size: int | None = None
    problem: str | None = None
    unread: bool = False
    #: a page's id: its path within the folder when the run reads one folder, else ``name``
    page_id: str | None = None
    #: filled by the reader: the CSV header, a table's schema, a WARC's record index
    info: dict[str, object] = field(default_factory=dict)


@dataclass
class Resolved:
    """The parts the arguments name, and the files of their folders that were left alone
    (by suffix)."""

    parts: list[Part]
    skipped: dict[str, int]
    #: the arguments that were folders or globs (every file of theirs is named by its path)
    expanded: bool = False


def resolve(sources: Sequence[str], *, fmt: str | None = None) -> Resolved:
    """The parts ``sources`` name, in order; InputError if one names nothing readable.

    ``fmt`` (a :data:`FORMATS` name) reads every file as that format: ``dir`` takes a
    folder's pages only (``.txt``, ``.html``), any other format every file of a folder
    whose name does not start with ``.`` or ``_`` (Spark's ``part-00000`` files).
    """
    if fmt is not None and fmt not in FORMATS:
        raise ConfigError(f"unknown input format {fmt!r}; use one of {', '.join(FORMATS)}")
    if not sources:
        raise InputError("no input given")
    parts: list[Part] = []
    skipped: Counter[str] = Counter()
    expanded = False
    single = len(sources) == 1
    for source in sources:
        if source == "-":
            if fmt == "dir":
                raise InputError("- (standard input) is not a folder, so it cannot be read as one")
            if fmt in ("parquet", "arrow"):
                raise InputError(f"{fmt} is read from a file, not from standard input")
            parts.append(Part("-", "-", "jsonl" if fmt is None else cast(PartFormat, fmt)))
            continue
        if os.path.isdir(source):
            expanded = True
            found = list(_walk(source, source, "", fmt, skipped, ids_from_root=single))
            if not found:
                raise InputError(_nothing_readable(source, skipped, fmt))
            parts.extend(found)
            continue
        if fmt == "dir":
            raise InputError(f"{source} is not a folder, so it cannot be read as one")
        if os.path.lexists(source) or not _GLOB_CHARS & set(source):
            parts.append(_file_part(source, source, fmt, direct=True))
            continue
        matches = sorted(glob.glob(source, recursive=True))
        if not matches:
            raise InputError(f"no file matches {source}")
        expanded = True
        before = len(parts)
        for match in matches:
            if os.path.isdir(match):
                parts.extend(_walk(match, match, "", fmt, skipped, ids_from_root=False))
            else:
                parts.append(_file_part(match, match, fmt, direct=False))
        if len(parts) == before:
            raise InputError(_nothing_readable(source, skipped, fmt))
    return Resolved(parts, dict(skipped), expanded)


def _nothing_readable(source: str, skipped: Counter[str], fmt: str | None) -> str:
    what = (
        "no .txt or .html page"
        if fmt == "dir"
        else "no file neardup reads (.jsonl, .csv, .tsv, .parquet, .arrow, .warc, .wet — also "
        ".gz, .zst, .bz2 or .xz — or .txt/.html pages)"
    )
    others = sum(skipped.values())
    tail = ""
    if others:
        kinds = ", ".join(f"{k or 'no suffix'} ×{n}" for k, n in skipped.most_common(4))
        tail = f"; it has {others:,} other file{'s' if others != 1 else ''} ({kinds}): give --format to read them"
    return f"{source} holds {what}{tail}"


def _file_part(path: str, name: str, fmt: str | None, *, direct: bool) -> Part:
    """A file named on the command line (``direct``) or matched by a glob."""
    chosen: PartFormat
    if fmt is not None:
        chosen = fmt  # type: ignore[assignment]
    elif path.lower().endswith((".html", ".htm")):
        chosen = "page"
    else:
        chosen = _suffix_format(path) or "jsonl"
    try:
        st = os.stat(path)
    except OSError as e:
        if direct:
            raise InputError(f"cannot read {name}: {e.strerror or e}") from None
        problem = f"cannot read: {e.strerror or e}"
        return Part(path, shown_name(name), chosen, problem=problem, page_id=shown_name(name))
    size = st.st_size if stat.S_ISREG(st.st_mode) else None
    # A FIFO or a device named on the command line is read (<(zcat …), /dev/stdin).
    return Part(path, shown_name(name), chosen, size, page_id=shown_name(name))


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _walk(
    folder: str,
    root: str,
    rel: str,
    fmt: str | None,
    skipped: Counter[str],
    *,
    ids_from_root: bool,
) -> Iterator[Part]:
    """The parts under ``folder`` (``rel`` within the argument ``root``), in name order,
    depth first. Files are named ``root/rel``; pages take ``rel`` as their id when
    ``ids_from_root`` (one folder is read: as before, ids are paths within it).

    Names starting with a dot are skipped, and so are links to folders (they can loop).
    A folder that cannot be listed, a broken link and a special file (device, FIFO, socket:
    reading one could block or never end) are parts with a problem, reported, not read.
    """
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda entry: entry.name)
    except OSError as e:
        name = shown_name(rel.rstrip("/") or root)
        yield Part(
            folder, name, "page", problem=f"cannot list the folder: {e.strerror or e}", unread=True
        )
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        inner = rel + entry.name
        full = os.path.join(root, inner)
        page_id = shown_name(inner if ids_from_root else full)
        try:
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(
                    entry.path, root, inner + "/", fmt, skipped, ids_from_root=ids_from_root
                )
                continue
        except OSError as e:
            problem = f"cannot read: {e.strerror or e}"
            yield Part(entry.path, shown_name(full), "page", problem=problem, page_id=page_id)
            continue
        chosen: PartFormat | None
        low = entry.name.lower()
        if fmt == "dir":
            chosen = "page" if low.endswith(PAGE_SUFFIXES) else None
        elif fmt is not None:
            chosen = None if entry.name.startswith("_") else fmt  # type: ignore[assignment]
        else:
            chosen = "page" if low.endswith(PAGE_SUFFIXES) else _suffix_format(entry.name)
        if chosen is None:
            base, dot, ext = entry.name.rpartition(".")
            skipped[f".{ext.lower()}" if dot and base else ""] += 1
            continue
        shown = shown_name(full)
        try:
            st = os.stat(entry.path)  # follows links: what would be read
        except OSError as e:
            problem = f"cannot read the file: {e.strerror or e}"
            yield Part(entry.path, shown, chosen, problem=problem, page_id=page_id)
            continue
        if stat.S_ISDIR(st.st_mode):
            continue  # a link to a folder
        if not stat.S_ISREG(st.st_mode):
            problem = f"{_kind(st.st_mode)}, not a file: skipped"
            yield Part(entry.path, shown, chosen, problem=problem, page_id=page_id)
            continue
        yield Part(entry.path, shown, chosen, st.st_size, page_id=page_id)
