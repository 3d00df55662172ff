"""The manual's settle examples (docs/regulator/xidach.md), one per profile, replayed through
the CLI: the docs stay true."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from table_service.cli import app

EXAMPLES = [
    json.loads(line)
    for line in (Path(__file__).parent / "settle_examples.jsonl").read_text().splitlines()
]


def test_every_profile_has_an_example() -> None:
    assert sorted(e["input"]["profile"] for e in EXAMPLES) == ["classic", "forced-draw", "room"]


def test_readme_examples_settle_as_documented() -> None:
    text = "".join(json.dumps(e["input"]) + "\n" for e in EXAMPLES)
    result = CliRunner().invoke(app, ["settle", "xidach"], input=text)
    assert result.exit_code == 0, result.output
    got = [json.loads(line) for line in result.stdout.splitlines()]
    assert got == [e["output"] for e in EXAMPLES]
