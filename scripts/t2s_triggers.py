"""Write ``src/neardup/data/t2s_triggers.json``: the characters without which OpenCC's
``t2s`` conversion leaves a text as it is, for the installed OpenCC's dictionaries.

    python scripts/t2s_triggers.py            # after an OpenCC whose dictionaries changed
    python scripts/t2s_triggers.py --out F    # somewhere else (the tests compare)

``neardup.normalize.to_simplified`` hands OpenCC only the lines of a text that hold one of
these characters (no key of the dictionaries holds a line break, so a line converts as it
does inside its text), and only while the installed dictionaries are the ones the file
names (their xxh3 digests); with any other dictionaries it converts whole texts, as before.

A character is a trigger if OpenCC changes it alone (every code point is converted, one a
line, in one call), if it is a key of the normalization dictionaries (applied first, a
character at a time), or if it is a character a phrase key changes where none of the
phrase's characters changes alone ("瞭" of "一目瞭然" → "一目了然", "沈" of "沈浸" →
"沉浸"): every key whose value differs from it then holds a trigger, so a line without one
is matched only by keys that leave it as it is. The keys are read with the ``opencc_dict``
tool of the OpenCC wheel (its ``.ocd2`` files are tries).

It also checks that no key or value of the dictionaries holds whitespace or a control
character: then a line converts as it does within its text, and a run of ``neardup``
may fold a text's whitespace before converting it (``normalize._folded``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

import opencc
import xxhash

OUT = Path(__file__).resolve().parent.parent / "src" / "neardup" / "data" / "t2s_triggers.json"


def dictionaries(config: dict[str, object]) -> tuple[list[str], list[str]]:
    """The files of a configuration's normalization dictionaries and of its conversion
    chain's, in order."""

    def files(node: object) -> list[str]:
        if isinstance(node, dict):
            if "file" in node:
                return [str(node["file"])]
            return [f for v in node.values() for f in files(v)]
        if isinstance(node, list):
            return [f for v in node for f in files(v)]
        return []

    return files(config.get("normalization", [])), files(config.get("conversion_chain", []))


def entries(tool: Path, ocd2: Path) -> list[str]:
    """The entries of an ``.ocd2`` dictionary, through ``opencc_dict``: a key, a tab, its
    values with a space between them."""
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "dict.txt"
        subprocess.run(
            [str(tool), "-i", str(ocd2), "-o", str(text), "-f", "ocd2", "-t", "text"],
            check=True,
            capture_output=True,
        )
        return [line for line in text.read_text(encoding="utf-8").split("\n") if line]


def _blank(c: str) -> bool:
    """Whitespace or a control character: what ``normalize.fold_whitespace`` folds."""
    return c.isspace() or unicodedata.category(c) == "Cc"


def triggers() -> dict[str, object]:
    """The trigger characters of the installed OpenCC's ``t2s``, with the digests of the
    files they were read from."""
    root = Path(opencc.__file__).resolve().parent / "clib"
    share, tool = root / "share" / "opencc", root / "bin" / "opencc_dict"
    config = json.loads((share / "t2s.json").read_text(encoding="utf-8"))
    normal, chain = dictionaries(config)
    convert = opencc.OpenCC("t2s").convert
    chars = [chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    alone = {
        c for c, out in zip(chars, convert("\n".join(chars)).split("\n"), strict=True) if c != out
    }
    read = {name: entries(tool, share / name) for name in normal + chain}
    found = set(alone)
    for name in normal:
        found.update(line.split("\t", 1)[0] for line in read[name])
    for name in chain:
        for key in (line.split("\t", 1)[0] for line in read[name]):
            if len(key) < 2 or set(key) & alone:
                continue
            value = convert(key)
            if value == key:
                continue
            if len(value) == len(key):
                found.update(a for a, b in zip(key, value, strict=True) if a != b)
            else:
                found.update(key)
    # no key or value holds whitespace or a control character: a line converts as it does
    # in its text, and folding whitespace before converting gives the same text as after
    for lines in read.values():
        for line in lines:
            key, _, values = line.partition("\t")
            assert not any(_blank(c) for c in key + values.replace(" ", "")), line
    digests = {
        name: xxhash.xxh3_64_hexdigest((share / name).read_bytes())
        for name in ["t2s.json", *normal, *chain]
    }
    version = getattr(opencc, "__version__", "")
    return {"opencc": version, "files": digests, "triggers": "".join(sorted(found))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=OUT, help=f"where to write them (default {OUT})")
    args = p.parse_args(argv)
    found = triggers()
    args.out.write_text(json.dumps(found, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(str(found['triggers'])):,} characters (OpenCC {found['opencc']}) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
