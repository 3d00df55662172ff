"""`livetable shoe ...` (placeholder until the serial reader lands)."""

from __future__ import annotations

import typer

app = typer.Typer(help="Card shoe: virtual shoe and the technician's reader.", no_args_is_help=True)


@app.command()
def read() -> None:
    """Print one JSON line per reader event."""
    raise typer.Exit(2)
