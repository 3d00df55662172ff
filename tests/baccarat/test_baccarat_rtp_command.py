"""`livetable rtp baccarat`: the JSON document of the spec and the human table."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from table_service.cli.games import baccarat as baccarat_cli
from table_service.rules.baccarat import BET_TYPES

app = typer.Typer()
app.command("rtp")(baccarat_cli.rtp)
app.command("settle")(baccarat_cli.settle)
runner = CliRunner()


def test_json_report_for_eight_decks() -> None:
    result = runner.invoke(app, ["rtp", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["game"], report["decks"], report["method"]) == ("baccarat", 8, "exact")
    assert list(report["bets"]) == list(BET_TYPES)
    banker = report["bets"]["banker"]
    assert banker["house_edge"] == pytest.approx(0.010579, abs=1e-6)
    assert banker["rtp"] + banker["house_edge"] == pytest.approx(1)
    assert Fraction(banker["rtp_exact"]) + Fraction(banker["house_edge_exact"]) == 1
    win = next(o for o in banker["outcomes"] if o["result"] == "win")
    assert win["pays"] == 0.95 and win["pays_exact"] == "19/20"
    for bet in report["bets"].values():
        assert sum(Fraction(o["probability"]) for o in bet["outcomes"]) == 1
        rtp = sum(Fraction(o["probability"]) * Fraction(o["returns"]) for o in bet["outcomes"])
        assert float(rtp) == pytest.approx(bet["rtp"])
    assert report["bets"]["perfect_pair"]["closes_after"] == 30


def test_decks_option_and_rules_file(tmp_path: Path) -> None:
    rules = tmp_path / "six.toml"
    rules.write_text("decks = 6\n[bets.banker]\npays = { win = 0.95 }\n", encoding="utf-8")
    six = json.loads(runner.invoke(app, ["rtp", "--json", "--rules", str(rules)]).stdout)
    assert six["decks"] == 6 and list(six["bets"]) == ["banker"]
    assert six["bets"]["banker"]["house_edge"] == pytest.approx(0.010558, abs=1e-6)
    args = ["rtp", "--json", "--decks", "1", "--rules", str(rules)]
    one = json.loads(runner.invoke(app, args).stdout)
    assert one["decks"] == 1
    assert one["bets"]["banker"]["house_edge"] == pytest.approx(0.010117, abs=1e-6)


def test_human_table() -> None:
    result = runner.invoke(app, ["rtp"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    for bet in BET_TYPES:
        assert bet in result.stdout
    assert "1.0579 %" in result.stdout and "14.3596 %" in result.stdout
    assert "0.95" in result.stdout and "identical" in result.stdout


def test_bad_rules_file_is_a_clear_error(tmp_path: Path) -> None:
    rules = tmp_path / "broken.toml"
    rules.write_text("[bets.dragon]\npays = { lose = 1 }\n", encoding="utf-8")
    result = runner.invoke(app, ["rtp", "--rules", str(rules)])
    assert result.exit_code == 2
    assert "missing" in result.output


def test_progress_bar_only_after_the_delay() -> None:
    import io

    from rich.console import Console

    from table_service.rules.baccarat import default_paytable
    from table_service.rules.baccarat.rtp import analyse

    quiet_sink, shown_sink = io.StringIO(), io.StringIO()
    quiet = baccarat_cli._LateProgress(Console(file=quiet_sink, force_terminal=True), delay=60)
    shown = baccarat_cli._LateProgress(Console(file=shown_sink, force_terminal=True), delay=0)
    for progress in (quiet, shown):
        analyse(default_paytable(), decks=1, bet_types=("tie",), progress=progress)
        progress.close()
    assert quiet_sink.getvalue() == ""
    assert "exact enumeration" in shown_sink.getvalue()
