"""The manual's links: every link inside the README, from the README into the measurement log
(``docs/measurements.md``) and back, and to files of the repository, goes somewhere — the
README keeps the latest figures and the log the history, and a section moved or renamed in
one must not leave the other pointing nowhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
LOG = ROOT / "docs" / "measurements.md"

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(text: str) -> set[str]:
    """The anchors GitHub makes of a Markdown text's headings (lower case, punctuation
    dropped, spaces as hyphens, a repeated one numbered), and its ``<a id>`` ones."""
    found: set[str] = set(re.findall(r'<a id="([^"]+)"', text))
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"#{1,6} (.*)", line)
        if heading is None:
            continue
        anchor = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        k = seen.get(anchor, 0)
        seen[anchor] = k + 1
        found.add(anchor if k == 0 else f"{anchor}-{k}")
    return found


def test_anchors_are_githubs() -> None:
    assert anchors("# Speed\n## Speed\n### Stores: remembering, across runs\n") == {
        "speed",
        "speed-1",
        "stores-remembering-across-runs",
    }


@pytest.mark.parametrize("doc", [README, LOG], ids=["README", "measurements"])
def test_every_link_of_the_manual_goes_somewhere(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    own = anchors(text)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        file = doc if not path else (doc.parent / path).resolve()
        found = file.exists() and (
            not anchor or anchor in (own if file == doc else anchors(file.read_text("utf-8")))
        )
        if not found:
            broken.append(target)
    assert not broken, f"{doc.name}: links to nowhere: {broken}"
