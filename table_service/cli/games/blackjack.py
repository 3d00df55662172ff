"""`livetable rtp blackjack` and `livetable settle blackjack`."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from table_service.rules.settle_io import run_jsonl

# The rules, the exact solver and the settle code are imported by the command that uses
# each: every other `livetable` command starts without them.

if TYPE_CHECKING:
    from table_service.rules.blackjack.config import BlackjackRules
    from table_service.rules.blackjack.exact import MainGameReport, SideBetReport

SEED_MAX_RTP = 0.9954  # "RTP tối đa của trò chơi là 99.54%" (seed 000)
UP_ORDER = (2, 3, 4, 5, 6, 7, 8, 9, 10, 1)
ACTION_CODE = {"stand": "S", "hit": "H", "double": "D", "split": "P", "surrender": "R"}

RulesOption = typer.Option(None, "--rules", help="Table rules (TOML); default: the rules document.")


def _rules(path: Path | None) -> BlackjackRules:
    from table_service.rules.blackjack.config import load_rules
    from table_service.rules.blackjack.errors import RulesConfigError

    try:
        return load_rules(path)
    except RulesConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def _row_order(label: str) -> tuple[int, int]:
    kind, _, rest = label.partition(" ")
    group = {"hard": 0, "soft": 1, "pair": 2}[kind]
    number = {"A": 11, "T": 10}.get(rest) or int(rest)
    return group, number


def _up_label(up: int) -> str:
    return "A" if up == 1 else "T" if up == 10 else str(up)


def _side_json(report: SideBetReport) -> dict[str, Any]:
    return {
        "house_edge": round(float(report.house_edge), 6),
        "rtp": round(float(report.rtp), 6),
        "rtp_exact": str(report.rtp),
        "outcomes": [
            {"result": r, "pays": float(pays), "probability": str(p)}
            if r != "lose"
            else {"result": r, "probability": str(p)}
            for r, pays, p in report.outcomes
        ],
    }


def _comparison(main: MainGameReport) -> str:
    diff = (main.rtp - SEED_MAX_RTP) * 100
    relation = "above" if diff > 0 else "below" if diff < 0 else "equal to"
    return (
        f"seed 000 states a maximum RTP of 99.54 %; the exact best-play RTP of this table is "
        f"{main.rtp * 100:.3f} %, {abs(diff):.3f} percentage points {relation} it"
    )


def rtp(
    rules_file: Path | None = RulesOption,
    as_json: bool = typer.Option(False, "--json", help="One JSON object instead of text."),
) -> None:
    """Exact RTP of the main game (best composition-dependent play), pair bet and insurance."""
    from table_service.rules.blackjack.exact import insurance_report, pair_report, solve_main

    rules = _rules(rules_file)
    started = time.perf_counter()
    main = solve_main(rules)
    pair, insurance = pair_report(rules), insurance_report(rules)
    seconds = time.perf_counter() - started
    rows = sorted(main.chart, key=_row_order)
    if as_json:
        report = {
            "game": "blackjack",
            "decks": rules.decks,
            "method": "exact",
            "strategy": "composition-dependent optimal (split hands on their own cards)",
            "seconds": round(seconds, 2),
            "bets": {
                "main": {
                    "house_edge": round(main.house_edge, 6),
                    "rtp": round(main.rtp, 6),
                    "expectation": main.expectation,
                    "by_dealer_card": {_up_label(u): v for u, v in main.by_up_card.items()},
                },
                "pair": _side_json(pair),
                "insurance": _side_json(insurance),
            },
            "chart": {
                row: {_up_label(u): main.chart[row][u].action for u in UP_ORDER} for row in rows
            },
            "seed_max_rtp": SEED_MAX_RTP,
            "comparison": _comparison(main),
        }
        typer.echo(json.dumps(report, indent=2))
        return
    echo = typer.echo
    echo(f"Blackjack, {rules.decks} decks, exact (computed in {seconds:.1f} s)")
    echo(
        f"  main      RTP {main.rtp * 100:.4f} %   house edge {main.house_edge * 100:.4f} %"
        "   (best composition-dependent play)"
    )
    for name, side in (("pair", pair), ("insurance", insurance)):
        echo(
            f"  {name:<9} RTP {float(side.rtp) * 100:.4f} %   house edge "
            f"{float(side.house_edge) * 100:.4f} %   (exact {side.rtp})"
        )
    echo(f"  {_comparison(main)}")
    echo("")
    echo(
        "Main game EV by dealer card: "
        + "  ".join(f"{_up_label(u)}:{v:+.4f}" for u, v in main.by_up_card.items())
    )
    echo("")
    echo("Derived first-decision chart (S stand, H hit, D double, P split, R surrender)")
    echo("           " + " ".join(f"{_up_label(u):>2}" for u in UP_ORDER))
    for row in rows:
        cells = " ".join(f"{ACTION_CODE[main.chart[row][u].action]:>2}" for u in UP_ORDER)
        echo(f"  {row:<8} {cells}")


def settle(rules_file: Path | None = RulesOption) -> None:
    """Settle blackjack rounds from JSON lines on standard input."""
    from table_service.rules.blackjack.settle_request import handle

    rules = _rules(rules_file)
    run_jsonl(sys.stdin, sys.stdout, lambda request: handle(request, rules))
