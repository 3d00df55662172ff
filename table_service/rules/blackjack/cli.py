"""`livetable rtp blackjack` and `livetable settle blackjack`."""

from __future__ import annotations

import typer


def rtp() -> None:
    """Exact / simulated RTP report for blackjack."""
    typer.echo("blackjack rtp: not implemented yet", err=True)
    raise typer.Exit(2)


def settle() -> None:
    """Settle blackjack rounds from JSON lines on standard input."""
    typer.echo("blackjack settle: not implemented yet", err=True)
    raise typer.Exit(2)
