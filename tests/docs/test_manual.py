"""The manual (``docs/``, a MkDocs site): every page in the navigation, every link and
anchor found, the site built with ``mkdocs build --strict`` and loading nothing from
outside, and every command and setting of the product documented.

Links are checked here without MkDocs too, so that a broken one is named with its page
and its target, and so that an anchor works both on the built site and where the page is
read as Markdown in a clone or on a forge (the two name headings differently when a
heading has accents or runs of punctuation: such a heading can be linked only as a page).
"""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import yaml  # PyYAML comes with MkDocs (the docs extra)

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
LINK = re.compile(r"(?<!!)\[(?:[^\]]|\][^(])*?\]\(([^)\s]+)\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6} (.+?)\s*#*$", re.MULTILINE)


def _text(page: str) -> str:
    """The page without its fenced blocks (a ``#`` there is a comment, not a heading)."""
    return FENCE.sub("", (DOCS / page).read_text(encoding="utf-8"))


def _plain(heading: str) -> str:
    """A heading as rendered: code marks, emphasis and link targets dropped."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return heading.replace("`", "").replace("*", "")


def _forge_anchor(heading: str) -> str:
    """GitHub's and GitLab's: lower case, punctuation dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", _plain(heading).strip().lower()).replace(" ", "-")


def _mkdocs_anchor(heading: str) -> str:
    """Python-Markdown's toc slugify, as MkDocs builds the site."""
    value = unicodedata.normalize("NFKD", _plain(heading)).encode("ascii", "ignore").decode()
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def _anchors(page: str) -> set[str]:
    return {_mkdocs_anchor(h) for h in HEADING.findall(_text(page))}


def _nav_pages(entries: Any) -> list[str]:
    found: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        found.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return found


def _config() -> dict[str, Any]:
    # mkdocs.yml has no Python tags; the safe loader reads it as MkDocs does.
    config: dict[str, Any] = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return config


def test_every_page_is_in_the_navigation_once_and_every_entry_is_a_page() -> None:
    nav = _nav_pages(_config()["nav"])
    assert sorted(nav) == sorted(set(nav)), "a page is twice in the navigation"
    assert set(nav) == set(PAGES), (
        f"pages missing from mkdocs.yml's nav: {sorted(set(PAGES) - set(nav))}; "
        f"nav entries that are no page: {sorted(set(nav) - set(PAGES))}"
    )


@pytest.mark.parametrize("page", PAGES)
def test_every_link_of_a_page_names_a_page_or_file_and_a_heading(page: str) -> None:
    text = _text(page)
    problems = []
    for target in LINK.findall(text) + IMAGE.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # an address outside: not followed (the site works offline)
        path, _, anchor = target.partition("#")
        resolved = (DOCS / page).parent / path if path else DOCS / page
        resolved = resolved.resolve()
        if not resolved.is_relative_to(DOCS):
            problems.append(f"{target}: outside docs/ (not on the site: name the file as code)")
            continue
        if not resolved.is_file():
            problems.append(f"{target}: no such file")
            continue
        if anchor:
            if resolved.suffix != ".md":
                problems.append(f"{target}: an anchor into a file that is not a page")
                continue
            other = resolved.relative_to(DOCS).as_posix()
            if anchor not in _anchors(other):
                problems.append(f"{target}: no heading of {other} has the anchor #{anchor}")
            headings = [h for h in HEADING.findall(_text(other)) if _mkdocs_anchor(h) == anchor]
            for heading in headings:
                if _forge_anchor(heading) != anchor:
                    problems.append(
                        f"{target}: the heading {heading!r} is #{_forge_anchor(heading)} when "
                        "the page is read as Markdown: link the page, or reword the heading"
                    )
    assert not problems, f"docs/{page}:\n" + "\n".join(problems)


def test_the_site_builds_strict_and_loads_nothing_from_outside(tmp_path: Path) -> None:
    """``mkdocs build --strict`` (as .ci/run runs it) fails on a broken link or anchor and
    a page left out of the navigation; the built pages and their style sheets load only
    files of the site (the theme's fonts and scripts included, highlight.js off)."""
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    loaded = re.compile(
        r"<(?:script|img|iframe|source|audio|video|embed)\b[^>]*\bsrc=[\"']([^\"']+)"
        r"|<link\b[^>]*\bhref=[\"']([^\"']+)"
        r"|url\(\s*[\"']?([^\"')]+)"
        r"|@import\s+[\"']([^\"']+)",
        re.IGNORECASE,
    )
    pages = list(site.rglob("*.html"))
    assert len(pages) >= len(PAGES)
    problems = []
    for file in pages + list(site.rglob("*.css")):
        for match in loaded.finditer(file.read_text(encoding="utf-8", errors="replace")):
            url = next(g for g in match.groups() if g)
            if url.startswith(("data:", "#")):
                continue
            if re.match(r"(?:[a-z]+:)?//", url, re.IGNORECASE):
                problems.append(f"{file.relative_to(site)} loads {url} from outside")
                continue
            path = url.split("?")[0].split("#")[0]
            # the 404 page names the site's files from its root, as a server would serve it
            local = site / path.lstrip("/") if path.startswith("/") else file.parent / path
            local = local.resolve()
            if not local.is_file():
                problems.append(f"{file.relative_to(site)} loads {url}, not in the site")
    assert not problems, "\n".join(sorted(set(problems))[:40])
    for page in PAGES:
        assert (site / page.replace("README.md", "index.md")).with_suffix(".html").is_file()


def _commands() -> list[str]:
    """Every ``livetable`` command that does something (groups left out), as typed."""
    import typer.main

    from table_service.cli import app

    found: list[str] = []

    def walk(command: Any, words: list[str]) -> None:
        children = getattr(command, "commands", None)
        if not children:
            found.append(" ".join(["livetable", *words]))
            return
        for name, child in children.items():
            if not getattr(child, "hidden", False):
                walk(child, [*words, name])

    walk(typer.main.get_command(app), [])
    return found


def test_every_command_is_documented() -> None:
    """``livetable --help`` and the manual name the same commands."""
    manual = "\n".join(
        (ROOT / page).read_text(encoding="utf-8")
        for page in ["README.md", *(f"docs/{p}" for p in PAGES)]
    )
    commands = _commands()
    assert len(commands) > 20, commands
    missing = [c for c in commands if not re.search(rf"{re.escape(c)}\b(?!-)", manual)]
    assert not missing, f"commands no page of the manual shows: {missing}"


def test_every_setting_is_in_the_configuration_reference() -> None:
    from table_service.config import Settings

    reference = (DOCS / "operations" / "configuration.md").read_text(encoding="utf-8")
    missing = [
        f"LIVETABLE_{name.upper()}"
        for name in Settings.model_fields
        if f"`LIVETABLE_{name.upper()}`" not in reference
        and f"LIVETABLE_{name.upper()}` /" not in reference
        and f"/ `LIVETABLE_{name.upper()}`" not in reference
    ]
    assert not missing, f"settings missing from docs/operations/configuration.md: {missing}"


def test_every_file_the_manual_names_is_in_the_repository() -> None:
    """A repository path the README or a guide page names as code (``table_service/...``,
    ``tests/...``, ``deploy/...``) is there: a module moved or renamed takes its pages
    along. The contract texts (``DESIGN.md``, ``design/``, ``rules/``, ``specs/``) are the
    shared documents' copies and keep their own words."""
    tops = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    tops |= {"tests", "benchmarks", "deploy", "docs", "migrations", ".ci"}
    contract = ("DESIGN.md", "design/", "rules/", "specs/")
    pages = ["README.md", *(f"docs/{p}" for p in PAGES if not p.startswith(contract))]
    problems = []
    for page in pages:
        text = (ROOT / page).read_text(encoding="utf-8")
        for span in re.findall(r"`([^`\n]+)`", text) + FENCE.findall(text):
            for token in span.split():
                path = token.strip("()[],;:.'\"").split("::")[0]
                if "/" not in path or path.split("/", 1)[0] not in tops:
                    continue
                if re.search(r"[<>*{}|…]", path):
                    continue  # a pattern (`benchmarks/<name>.py`), not a file
                if not (ROOT / path).exists():
                    problems.append(f"{page}: {path}")
    assert not problems, "paths the manual names that are not in the repository:\n" + "\n".join(
        sorted(set(problems))
    )


def test_every_option_is_documented() -> None:
    """Every option of every ``livetable`` command is named by some page of the manual
    (as ``--name``), so an option added to a command comes with its line."""
    import typer.main

    from table_service.cli import app

    manual = "\n".join(
        (ROOT / page).read_text(encoding="utf-8")
        for page in ["README.md", *(f"docs/{p}" for p in PAGES)]
    )
    missing: list[str] = []
    seen = 0

    def walk(command: Any, words: list[str]) -> None:
        nonlocal seen
        children = getattr(command, "commands", None)
        if children:
            for name, child in children.items():
                if not getattr(child, "hidden", False):
                    walk(child, [*words, name])
            return
        # typer ships its own click: options are told by their kind, not by a class
        params = [p for p in command.params if p.param_type_name == "option"]
        for option in [o for p in params for o in p.opts if o.startswith("--")]:
            seen += 1
            if option != "--help" and not re.search(rf"{re.escape(option)}\b(?!-)", manual):
                missing.append(" ".join(["livetable", *words, option]))

    walk(typer.main.get_command(app), [])
    assert seen > 50, seen
    assert not missing, f"options no page of the manual names: {missing}"
