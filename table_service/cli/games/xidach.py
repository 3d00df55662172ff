"""`livetable rtp xidach` and `livetable settle xidach`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from table_service.rules.settle_io import run_jsonl
from table_service.rules.xidach.errors import ProfileError
from table_service.rules.xidach.profile import (
    PROFILE_NAMES,
    Profile,
    load_profile,
    load_profile_file,
)
from table_service.terminal import make_console

# The exact solver (NumPy), the simulation, the replay and the progress bar are imported by
# the command that uses each: every other `livetable` command starts without them.

if TYPE_CHECKING:
    from table_service.rules.xidach.exact import ExactEdge
    from table_service.rules.xidach.simulate import EdgeReport

PROFILE_HELP = f"Rule profile: {', '.join(PROFILE_NAMES)}."
RULES_HELP = "A table's own profile file (TOML, same fields as the shipped profiles)."


def _load(profile: str | None, rules: Path | None) -> Profile | None:
    try:
        if rules is not None:
            return load_profile_file(rules)
        return load_profile(profile) if profile is not None else None
    except ProfileError as exc:
        typer.echo(f"error: {exc.reason}", err=True)
        raise typer.Exit(2) from exc


def settle(
    profile: str | None = typer.Option(
        None, "--profile", "-p", help=PROFILE_HELP + " Without it, each line names its profile."
    ),
    rules: Path | None = typer.Option(None, "--rules", help=RULES_HELP),
) -> None:
    """Settle Xì Dách rounds from JSON lines on standard input (one output line per line)."""
    from table_service.rules.xidach.replay import handle_line

    chosen = _load(profile, rules)
    run_jsonl(sys.stdin, sys.stdout, lambda request: handle_line(request, chosen))


def rtp(
    profile: str = typer.Option("room", "--profile", "-p", help=PROFILE_HELP),
    rounds: int = typer.Option(200_000, "--rounds", "-n", min=2, help="Rounds to simulate."),
    seed: int = typer.Option(2026, "--seed", "-s", help="Seed; the same seed, the same report."),
    punters: int = typer.Option(1, "--punters", min=1, help="Punters at the table each round."),
    workers: int = typer.Option(
        0, "--workers", min=0, help="Processes (0: one per CPU); the result does not depend on it."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    rules: Path | None = typer.Option(None, "--rules", help=RULES_HELP),
    exact: bool = typer.Option(
        False, "--exact", help="The exact edge (one punter, deck enumeration), no simulation."
    ),
) -> None:
    """House edge: the house banker against punters, both on the automatic policy.

    Simulated by default (the exact figure for one punter is shown beside it);
    ``--exact`` enumerates the deck instead.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from table_service.rules.xidach.exact import exact_edge
    from table_service.rules.xidach.simulate import house_edge

    chosen = _load(profile, rules)
    assert chosen is not None
    if exact:
        result = exact_edge(chosen)
        if as_json:
            typer.echo(json.dumps(exact_json(chosen, result)))
        else:
            _print_exact(chosen, result)
        return
    if punters > chosen.max_punters:
        typer.echo(f"error: profile {chosen.name} seats at most {chosen.max_punters}", err=True)
        raise typer.Exit(2)
    console = Console(stderr=True)
    with Progress(
        TextColumn(f"xidach {chosen.name}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("rounds"),
        TimeRemainingColumn(),
        console=console,
        transient=as_json,
    ) as bar:
        task = bar.add_task("simulate", total=rounds)
        report = house_edge(
            chosen,
            rounds,
            seed,
            punters=punters,
            workers=workers or os.cpu_count() or 1,
            progress=lambda done: bar.update(task, completed=done),
        )
    reference = exact_edge(chosen) if report.punters == 1 else None
    if as_json:
        typer.echo(json.dumps(report_json(chosen, report, reference)))
    else:
        _print_report(chosen, report, reference)


def _policy(profile: Profile) -> dict[str, Any]:
    house = profile.house_policy
    return {
        "punter_stands_at": profile.punter.auto_stand_at,
        "house_draws_below": house.draw_below,
        "house_then": house.then,
        "house_checks_before_drawing": house.check_before_draw,
    }


def exact_json(profile: Profile, result: ExactEdge) -> dict[str, Any]:
    """The exact report; ``commission_for_1pct`` is the smallest 0.5 % step reaching +1 %."""
    return {
        "game": "xidach",
        "profile": profile.name,
        "decks": profile.decks,
        "method": "exact",
        "punters": 1,
        "banker": "house",
        "policy": _policy(profile),
        "commission": str(profile.payouts.commission),
        "bets": {
            "main": {
                "house_edge": round(result.house_edge, 9),
                "house_edge_before_commission": round(result.house_edge_before_commission, 9),
                "rtp": round(result.rtp, 9),
                "expected_win_per_unit": round(result.gross_win, 9),
                "commission_for_1pct": str(result.commission_for(0.01)),
                "outcomes": [
                    {"result": k, "probability": round(v, 9)}
                    for k, v in sorted(result.outcomes.items())
                ],
            }
        },
        "seconds": round(result.seconds, 3),
    }


def _print_exact(profile: Profile, result: ExactEdge) -> None:
    console = make_console()
    table = Table(title=f"Xì Dách '{profile.name}' — exact, one punter against the house")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("decks", str(profile.decks))
    table.add_row("house edge", f"{result.house_edge:+.4%}")
    table.add_row("house edge before commission", f"{result.house_edge_before_commission:+.4%}")
    table.add_row("commission", f"{float(profile.payouts.commission):.2%}")
    need = result.commission_for(0.01)
    table.add_row("commission for an edge of +1 %", f"{float(need):.1%}")
    table.add_row("RTP", f"{result.rtp:.4%}")
    for outcome, share in sorted(result.outcomes.items()):
        table.add_row(f"punter {outcome}", f"{share:.4%}")
    table.add_row("computed in", f"{result.seconds:.2f} s")
    console.print(table)


def report_json(
    profile: Profile, report: EdgeReport, reference: ExactEdge | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "game": "xidach",
        "profile": profile.name,
        "decks": profile.decks,
        "method": "monte_carlo",
        "rounds": report.rounds,
        "seed": report.seed,
        "punters": report.punters,
        "banker": "house",
        "policy": _policy(profile),
        "commission": str(profile.payouts.commission),
        "bets": {
            "main": {
                "house_edge": round(report.house_edge, 6),
                "rtp": round(report.rtp, 6),
                "std_error": round(report.std_error, 6),
                "ci95": [round(report.ci95[0], 6), round(report.ci95[1], 6)],
                "outcomes": [
                    {"result": k, "probability": round(v, 6)} for k, v in report.outcomes.items()
                ],
                "final_hands": {k: round(v, 6) for k, v in report.kinds.items()},
            }
        },
    }
    if reference is not None:
        low, high = report.ci95
        out["bets"]["main"]["exact_house_edge"] = round(reference.house_edge, 9)
        out["bets"]["main"]["exact_within_ci95"] = low <= reference.house_edge <= high
    return out


def _print_report(profile: Profile, report: EdgeReport, reference: ExactEdge | None) -> None:
    console = make_console()
    table = Table(title=f"Xì Dách '{profile.name}' — house banker, automatic policies")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("rounds (seed)", f"{report.rounds} ({report.seed})")
    table.add_row("punters per round", str(report.punters))
    table.add_row("decks", str(profile.decks))
    table.add_row("house edge", f"{report.house_edge:+.4%}")
    table.add_row("95 % CI", f"[{report.ci95[0]:+.4%}, {report.ci95[1]:+.4%}]")
    table.add_row("RTP", f"{report.rtp:.4%}")
    if reference is not None:
        low, high = report.ci95
        inside = "inside" if low <= reference.house_edge <= high else "OUTSIDE"
        table.add_row("exact house edge", f"{reference.house_edge:+.4%} ({inside} the CI)")
    for result, share in report.outcomes.items():
        table.add_row(f"punter hands {result}", f"{share:.4%}")
    for kind, share in report.kinds.items():
        table.add_row(f"final hand {kind}", f"{share:.4%}")
    console.print(table)
