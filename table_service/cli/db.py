"""``livetable db``: the schema (Alembic migrations), backup and restore (see
``table_service.backup``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from table_service.cli.common import (
    DATA_DIR_HELP,
    NoLog,
    console,
    err,
    existing_runtime,
    fail,
    open_runtime,
    own_public_key,
    settings_or_exit,
)
from table_service.logs import configure_for_command

db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the database to the newest schema."""
    from table_service.runtime import current_revision, upgrade_database

    runtime = open_runtime(upgrade=False)
    upgrade_database(runtime.engine)
    console.print(f"database at revision [bold]{current_revision(runtime.engine)}[/bold]")


@db_app.command("current")
def db_current() -> None:
    """Show the database's schema revision and the code's."""
    from table_service.runtime import current_revision, head_revision

    runtime = open_runtime(upgrade=False)
    current, head = current_revision(runtime.engine), head_revision()
    state = "[green]current[/green]" if current == head else "[yellow]needs upgrade[/yellow]"
    console.print(f"database: {current}  code: {head}  {state}")


@db_app.command("backup")
def db_backup(
    out: Path = typer.Argument(..., help="The backup file to write (never overwritten)"),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
) -> None:
    """Back up the database while the tables run, ending at a checkpoint signed at its
    head: SQLite's online backup API (one consistent copy, writers never blocked), or
    pg_dump of one snapshot on PostgreSQL. A SQLite copy is checked (chain, signed
    checkpoints, read models); a manifest is written beside the backup."""
    from table_service import backup as b

    if out.exists():
        raise fail("db backup", FileExistsError(f"{out} exists; choose a new file"))
    runtime = existing_runtime("db backup", data_dir)
    try:
        url = runtime.settings.resolved_database_url
        if b.sqlite_path(url) is not None:
            b.sign_head(runtime)  # the live log sealed too (PostgreSQL: in the snapshot)
        trusted = {runtime.signer.key_id: runtime.signer.public_key}
        public = runtime.signer.public_key_b64
        source = b.sqlite_path(url)
        if source is not None:
            b.backup_sqlite(source, out)
            b.seal_sqlite_copy(out, runtime.store)
            summary = b.summarise(b.read_only_engine(out), trusted)
            if summary.problems:
                out.unlink()
                raise b.BackupError("the copy does not verify: " + "; ".join(summary.problems))
            b.write_manifest(out, "sqlite", summary, public)
            console.print(
                f"backup {out}: {summary.events} events, last signed checkpoint at "
                f"{summary.checkpoint_size} ({summary.checkpoints_verified} verified), "
                f"read models agree; manifest {b.manifest_path(out).name}",
                soft_wrap=True,
            )
            return
        events, head, sealed = b.backup_postgres(runtime, out)
        summary = b.LogSummary(events, head, sealed, None, 0, None, ())
        b.write_manifest(out, "postgresql", summary, public)
        console.print(
            f"backup {out} (pg_dump, custom format): {events} events, last signed checkpoint "
            f"at {sealed}; manifest {b.manifest_path(out).name}",
            soft_wrap=True,
        )
    except (b.BackupError, OSError) as exc:
        raise fail("db backup", exc) from exc
    finally:
        runtime.close()


@db_app.command("restore")
def db_restore(
    backup: Path = typer.Argument(..., help="A file written by `livetable db backup`"),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    replace: bool = typer.Option(
        False, "--replace", help="SQLite: put it in place of an existing database (kept beside)"
    ),
    public_key: str | None = typer.Option(
        None,
        "--public-key",
        help="The studio's public key (base64, or a file holding it); default: the data "
        "folder's own key",
    ),
) -> None:
    """Restore a backup into the data folder's database (SQLite) or into the empty database
    of LIVETABLE_DATABASE_URL (pg_restore), then verify it: the chain, every signed
    checkpoint against the studio's key (never a key read from the backup) and the read
    models against the log. Stop the service first; start it again afterwards, and each
    table's round in play is resumed or voided by its game's restart rule."""
    from audit.signing import SigningKeyError, key_id, load_public_key
    from table_service import backup as b

    settings = settings_or_exit(data_dir)
    configure_for_command()
    if not backup.is_file():
        raise fail("db restore", FileNotFoundError(f"no backup at {backup}"))
    try:
        if public_key:
            text = Path(public_key).read_text() if Path(public_key).is_file() else public_key
            trusted_key = load_public_key(text)
        else:
            trusted_key = own_public_key(settings)
    except (NoLog, SigningKeyError, OSError) as exc:
        raise fail("db restore", exc) from exc
    trusted = {key_id(trusted_key): trusted_key}
    url = settings.resolved_database_url
    target = b.sqlite_path(url)
    try:
        kept = None
        if target is not None:
            check = b.summarise(b.read_only_engine(backup), trusted, read_models=False)
            if check.problems:
                raise b.BackupError("the backup does not verify: " + "; ".join(check.problems))
            kept = b.restore_sqlite(backup, target, replace=replace)
        else:
            b.restore_postgres(backup, url)
        summary = _installed(url, trusted)
    except (b.BackupError, OSError) as exc:
        raise fail("db restore", exc) from exc
    if kept is not None:
        console.print(f"the database it replaced is kept as {kept}")
    if summary.problems:
        for problem in summary.problems:
            err.print(f"[red]FAILED[/red] {problem}")
        raise typer.Exit(1)
    console.print(
        f"[green]restored[/green] {summary.events} events; last signed checkpoint at "
        f"{summary.checkpoint_size} verifies ({summary.checkpoints_verified} checkpoints); "
        "read models agree with the log",
        soft_wrap=True,
    )


def _installed(url: str, trusted: dict[str, Any]) -> Any:
    from audit.db import create_db_engine
    from table_service import backup as b

    return b.summarise(create_db_engine(url), trusted)
