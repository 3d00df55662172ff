"""``livetable principal``: who may call the API, their tokens and roles."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from table_service.cli.common import (
    DATA_DIR_HELP,
    actor,
    configured_table_ids,
    console,
    err,
    open_runtime,
)
from table_service.errors import Refused

principal_app = typer.Typer(help="Who may call the API: tokens and roles.", no_args_is_help=True)


@principal_app.command("add")
def principal_add(
    name: str,
    role: str = typer.Option(..., help="dealer|supervisor|regulator|operator|admin"),
    table: str | None = typer.Option(
        None,
        "--table",
        help="Bind the principal to one table: a table of the table file, or one the log "
        "has seen opened",
    ),
    tables: Path | None = typer.Option(
        None, "--tables", help="Table configuration TOML (default: LIVETABLE_TABLE_CONFIG)"
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
) -> None:
    """Create a principal and print its bearer token (shown this once only).

    A binding to a table that neither the table file nor the log knows is refused: a typo
    would otherwise make a token that can never act on the table it was meant for."""
    from table_service.principals import add_principal, opened_tables

    runtime = open_runtime(data_dir=data_dir)
    try:
        with runtime.sessions.begin() as session:
            known = None
            if table is not None:
                known = configured_table_ids(tables, runtime.settings) | opened_tables(session)
            token = add_principal(
                session,
                runtime.store,
                name,
                role,
                table_id=table,
                actor=actor(),
                known_tables=known,
            )
    except Refused as exc:
        err.print(f"[red]refused:[/red] {exc.reason}")
        known_ids = exc.details.get("known")
        if isinstance(known_ids, list):
            err.print(f"known tables: {', '.join(known_ids) if known_ids else 'none'}")
        raise typer.Exit(1) from exc
    err.print(f"principal [bold]{name}[/bold] ({role}) created; keep this token, it is not stored:")
    typer.echo(token)


@principal_app.command("revoke")
def principal_revoke(
    name: str,
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
) -> None:
    """Revoke a principal's token at once."""
    from table_service.principals import revoke_principal

    runtime = open_runtime(data_dir=data_dir)
    try:
        with runtime.sessions.begin() as session:
            revoke_principal(session, runtime.store, name, actor=actor())
    except Refused as exc:
        err.print(f"[red]refused:[/red] {exc.reason}")
        raise typer.Exit(1) from exc
    console.print(f"principal [bold]{name}[/bold] revoked")


@principal_app.command("list")
def principal_list(
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
) -> None:
    """Every principal, with its role, its table and when it was created or revoked."""
    from table_service.principals import list_principals

    runtime = open_runtime(data_dir=data_dir)
    table = Table("name", "role", "table", "created", "revoked")
    with runtime.reads() as session:
        for p in list_principals(session):
            table.add_row(p.name, p.role, p.table_id or "", p.created_at, p.revoked_at or "")
    console.print(table)
