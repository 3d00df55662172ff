"""`livetable demo --game xidach`: live rounds over HTTP with bots, checked round by round
against `livetable settle xidach` on each round's settle_input."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from rich.console import Console

from table_service.demo.xidach import XiDachDemoOptions, run_xidach_demo


@pytest.mark.parametrize(("profile", "rounds"), [("room", 2), ("classic", 1), ("forced-draw", 1)])
def test_the_demo_plays_live_rounds_that_settle_as_the_settle_command(
    tmp_path: Path, profile: str, rounds: int
) -> None:
    console = Console(record=True, width=120)
    options = XiDachDemoOptions(
        profile=profile, port=0, data_dir=tmp_path, rounds=rounds, seed=5, timer_seconds=1
    )
    report = asyncio.run(run_xidach_demo(options, console))
    assert report.rounds_settled + report.rounds_voided == rounds
    assert report.settle_checks_failed == 0 and not report.problems
    assert report.settle_checks_passed == report.rounds_settled >= 1
    text = console.export_text()
    assert "settlement = livetable settle xidach" in text
    assert f"Xì Dách '{profile}'" in text and "exact house edge" in text
    if profile == "room":
        assert "bank:" in text  # the seated banker's bank, in and out, every round
        assert report.staked == report.returned  # a seated bank: the house takes nothing
