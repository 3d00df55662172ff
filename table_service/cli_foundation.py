"""Foundation commands: db, audit, principal, serve."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Mount the foundation's command groups on the root app."""
