"""Every link in the README works in a clone: relative links name files of the repository
and anchors name headings of the README."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
DOCS = [
    "docs/DESIGN.md",
    "docs/design/live-game.md",
    "docs/rules/baccarat.md",
    "docs/rules/blackjack.md",
    "docs/rules/xidach.md",
    "docs/specs/settle-jsonl.md",
    "docs/specs/shoe-serial-protocol.md",
]


def _anchor(heading: str) -> str:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_relative_links_name_files_in_the_repository() -> None:
    links = LINK.findall(README)
    assert links
    for target in links:
        if re.match(r"[a-z]+://", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        assert not path.startswith(".."), f"{target} points outside the repository"
        assert (ROOT / path).is_file(), f"README links to {target}, which is not in the repo"


def test_anchor_links_name_readme_headings() -> None:
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", README, flags=re.MULTILINE)}
    for target in LINK.findall(README):
        if target.startswith("#"):
            assert target[1:] in anchors, f"no heading for {target}"


def test_the_design_rules_and_protocols_are_in_the_repository_and_linked() -> None:
    for doc in DOCS:
        assert (ROOT / doc).is_file(), doc
        assert f"]({doc})" in README, f"README does not link {doc}"
    assert "../shared" not in README and "shared/" not in README
