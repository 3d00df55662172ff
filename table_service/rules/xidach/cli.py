"""`livetable rtp xidach` and `livetable settle xidach` (placeholder until the rules core lands)."""

from __future__ import annotations

import typer


def rtp() -> None:
    """Exact / simulated RTP report for xidach."""
    typer.echo("xidach rtp: not implemented yet", err=True)
    raise typer.Exit(2)


def settle() -> None:
    """Settle xidach rounds from JSON lines on standard input."""
    typer.echo("xidach settle: not implemented yet", err=True)
    raise typer.Exit(2)
