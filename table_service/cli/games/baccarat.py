"""`livetable rtp baccarat` and `livetable settle baccarat`."""

from __future__ import annotations

import json
import sys
import time
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from table_service.rules.baccarat.errors import PaytableError
from table_service.rules.baccarat.paytable import Paytable, load_paytable
from table_service.rules.settle_io import run_jsonl
from table_service.terminal import make_console

# The RTP enumeration, the settle command's code and the progress bar are imported by the
# command that uses each: every other `livetable` command starts without them.

if TYPE_CHECKING:
    from table_service.rules.baccarat.rtp import RtpReport

RULES_HELP = "Table configuration / paytable (TOML); default: the rules document's table."


def _paytable(rules: Path | None) -> Paytable:
    try:
        return load_paytable(rules)
    except PaytableError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


class _LateProgress:
    """A progress bar on standard error that appears only once the work passes a second."""

    def __init__(self, console: Console, delay: float = 1.0) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._start = time.monotonic()
        self._delay = delay
        self._progress = Progress(
            TextColumn("exact enumeration"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task = self._progress.add_task("rtp", total=1.0)
        self._shown = False

    def __call__(self, done: float) -> None:
        if not self._shown and time.monotonic() - self._start > self._delay:
            self._progress.start()
            self._shown = True
        self._progress.update(self._task, completed=done)

    def close(self) -> None:
        if self._shown:
            self._progress.stop()


def _pay_text(pay: Fraction) -> str:
    """A pay as the rules document writes it: a decimal when exact (0.95), else a fraction."""
    rest = pay.denominator
    for prime in (2, 5):
        while rest % prime == 0:
            rest //= prime
    if rest != 1:
        return str(pay)
    return str(Decimal(pay.numerator) / Decimal(pay.denominator))


def _percent(value: float) -> str:
    return f"{value * 100:.4f} %"


def _table(report: RtpReport, paytable: Paytable) -> Table:
    shoe = f"{report.decks} decks" if report.decks else f"{report.cards} cards"
    table = Table(
        title=f"Baccarat — exact RTP, {shoe} ({report.cards} cards), paytable: {paytable.source}",
        caption=f"{report.classes} outcome classes, each settled once through settle_bet",
    )
    for name in ("Bet", "Closes after", "Outcome"):
        table.add_column(name)
    table.add_column("Pays", justify="right")
    table.add_column("Probability", justify="right")
    table.add_column("Exact probability")
    table.add_column("RTP", justify="right")
    table.add_column("House edge", justify="right")
    for bet, bet_report in report.bets.items():
        closes = "" if bet_report.closes_after is None else f"game {bet_report.closes_after}"
        table.add_row(
            f"[bold]{bet}[/bold]",
            closes,
            "",
            "",
            "",
            "",
            f"[bold]{_percent(float(bet_report.rtp))}[/bold]",
            f"[bold]{_percent(float(bet_report.house_edge))}[/bold]",
        )
        for line in bet_report.outcomes:
            label = line.result if line.case == line.result else f"{line.result} ({line.case})"
            pays = "" if line.pays is None else _pay_text(line.pays)
            table.add_row(
                "",
                "",
                label,
                pays,
                f"{float(line.probability):.8f}",
                str(line.probability),
                "",
                "",
            )
        table.add_section()
    return table


def rtp(
    rules: Path | None = typer.Option(None, "--rules", help=RULES_HELP, dir_okay=False),
    decks: int | None = typer.Option(
        None, "--decks", min=1, help="Decks in the shoe; default: the paytable's (8)."
    ),
    json_output: bool = typer.Option(False, "--json", help="JSON per the spec instead of a table."),
) -> None:
    """Exact RTP and house edge of every baccarat bet, by enumeration of the shoe."""
    from table_service.rules.baccarat.rtp import analyse

    paytable = _paytable(rules)
    err = Console(stderr=True)
    progress = _LateProgress(err)
    try:
        report = analyse(paytable, decks=decks, progress=progress)
    finally:
        progress.close()
    if json_output:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
        return
    make_console().print(_table(report, paytable))


def settle(
    rules: Path | None = typer.Option(None, "--rules", help=RULES_HELP, dir_okay=False),
) -> None:
    """Settle baccarat rounds from their cards: JSON lines on standard input, one JSON
    line per input line on standard output (docs/specs/settle-jsonl.md)."""
    from table_service.rules.baccarat.settle_command import settle_request

    paytable = _paytable(rules)
    try:
        run_jsonl(sys.stdin, sys.stdout, lambda request: settle_request(request, paytable))
    except (OSError, UnicodeDecodeError) as exc:
        typer.echo(f"error: cannot read standard input: {exc}", err=True)
        raise typer.Exit(1) from exc
