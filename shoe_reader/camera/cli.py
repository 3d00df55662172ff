"""`livetable camera ...` (placeholder until the camera reader lands)."""

from __future__ import annotations

import typer

app = typer.Typer(help="Camera card recognition.", no_args_is_help=True)


@app.command()
def read() -> None:
    """Print one JSON line per reader event seen by the camera."""
    raise typer.Exit(2)
