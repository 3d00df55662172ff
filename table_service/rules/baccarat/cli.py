"""`livetable rtp baccarat` and `livetable settle baccarat`."""

from __future__ import annotations

import typer


def rtp() -> None:
    """Exact / simulated RTP report for baccarat."""
    typer.echo("baccarat rtp: not implemented yet", err=True)
    raise typer.Exit(2)


def settle() -> None:
    """Settle baccarat rounds from JSON lines on standard input."""
    typer.echo("baccarat settle: not implemented yet", err=True)
    raise typer.Exit(2)
