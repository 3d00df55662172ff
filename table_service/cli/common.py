"""What every ``livetable`` command shares: its consoles, the settings and the runtime it
opens, and the log a read-only command must find already there (it creates nothing).

The command groups are the other modules of this package, one each; the root command
(``__init__``) mounts them.
"""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from table_service.config import Settings
from table_service.logs import configure_for_command
from table_service.terminal import make_console

# SQLAlchemy, Alembic, the audit log, the runtime and the API are imported by the commands
# that use them: `livetable --help` and every other area's commands start without them.

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from audit.signing import Signer
    from table_service.runtime import Runtime

console = make_console()
err = make_console(stderr=True)


def actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli:unknown"


def settings_or_exit(data_dir: Path | None = None) -> Settings:
    """The settings, or one clear line and exit 2 when they are invalid."""
    try:
        return Settings(data_dir=data_dir) if data_dir else Settings()
    except ValueError as exc:
        errors = getattr(exc, "errors", None)
        detail = (
            "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors())
            if callable(errors)
            else str(exc)
        )
        err.print(f"[red]configuration:[/red] {detail}")
        raise typer.Exit(2) from exc


DATA_DIR_HELP = (
    "Data folder (its livetable.db and signing key), as `demo` and `audit` take it; "
    "default: LIVETABLE_DATA_DIR, else ./livetable-data"
)


def open_runtime(*, upgrade: bool = True, data_dir: Path | None = None) -> Runtime:
    from audit.signing import SigningKeyError
    from table_service.runtime import Runtime

    settings = settings_or_exit(data_dir)
    configure_for_command()
    try:
        return Runtime.from_settings(settings, upgrade=upgrade)
    except SigningKeyError as exc:
        err.print(f"[red]signing key:[/red] {exc}")
        raise typer.Exit(2) from exc


def configured_table_ids(tables: Path | None, settings: Settings) -> set[str]:
    """The table ids of the table file (``--tables``, else LIVETABLE_TABLE_CONFIG); none
    without one. An unreadable or invalid file is one clear line and exit 2."""
    from table_service.table.config import ConfigError, load_tables

    path = tables or settings.table_config
    if path is None:
        return set()
    try:
        return {config.table_id for config in load_tables(path)}
    except ConfigError as exc:
        config_problems(exc)
        raise typer.Exit(2) from exc


def config_problems(exc: Exception) -> None:
    """A table file's problems, one line each."""
    from rich.markup import escape

    for line in getattr(exc, "problems", [str(exc)]):
        err.print(f"[red]table configuration:[/red] {escape(line)}", soft_wrap=True)


class NoLog(Exception):
    """The log a read-only command was pointed at does not exist or cannot be opened."""


def existing_log(data_dir: Path | None) -> tuple[Settings, Any]:
    """Settings and engine of a log that already exists; creates nothing (no folder, no
    database, no key), so a command run in the wrong folder says so instead of verifying
    a new empty log."""
    from sqlalchemy.exc import SQLAlchemyError

    from audit.db import create_db_engine
    from table_service.runtime import current_revision, head_revision

    settings = settings_or_exit(data_dir)
    configure_for_command()
    where: str | None = None
    if settings.database_url:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            where = make_url(settings.database_url).render_as_string(hide_password=True)
        except ArgumentError as exc:
            raise NoLog(f"LIVETABLE_DATABASE_URL is not a database URL: {exc}") from exc
    if settings.database_url is None:
        database = settings.data_dir / "livetable.db"
        if not database.is_file():
            raise NoLog(
                f"no livetable database in {settings.data_dir.resolve()} "
                "(give the folder the demo or the service used: --data-dir DIR)"
            )
        where = str(database)
    engine = create_db_engine(
        settings.resolved_database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms
    )
    try:
        revision = current_revision(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise NoLog(f"cannot use the database {where}: {reason}") from exc
    if revision is None:
        engine.dispose()
        raise NoLog(f"{where} holds no livetable schema (run `livetable db upgrade` first)")
    if revision != head_revision():
        engine.dispose()
        raise NoLog(
            f"{where} is at schema revision {revision}, this code at {head_revision()} "
            "(run `livetable db upgrade` first)"
        )
    return settings, engine


def existing_signer(settings: Settings) -> Signer:
    """The log's own private key, never a new one: a fresh key would sign checkpoints
    no regulator has."""
    from audit.signing import load_or_create_signer

    path = settings.resolved_signing_key_file
    if not settings.signing_key and not path.is_file():
        raise NoLog(f"no signing key at {path} (LIVETABLE_SIGNING_KEY or the data folder's)")
    return load_or_create_signer(path, settings.signing_key)


def own_public_key(settings: Settings) -> Ed25519PublicKey:
    """The public key the log's checkpoints were signed with: from the configured key, the
    key file, or the public half written beside it."""
    from audit.signing import load_public_key

    path = settings.resolved_signing_key_file
    pub = path.with_name(path.name + ".pub")
    if settings.signing_key or path.is_file():
        return existing_signer(settings).public_key
    if pub.is_file():
        return load_public_key(pub.read_text())
    raise NoLog(f"no signing key at {path} nor {pub.name} beside it; give --public-key")


def fail(command: str, exc: Exception) -> typer.Exit:
    err.print(f"[red]{command}:[/red] {exc}", soft_wrap=True)
    return typer.Exit(2)


def existing_runtime(command: str, data_dir: Path | None) -> Runtime:
    """A runtime on a log that exists, with the key that signed it; creates nothing."""
    from audit.db import make_sessionmaker
    from audit.signing import SigningKeyError
    from audit.store import EventStore
    from table_service.runtime import Runtime

    try:
        settings, engine = existing_log(data_dir)
    except NoLog as exc:
        raise fail(command, exc) from exc
    try:
        signer = existing_signer(settings)
    except (NoLog, SigningKeyError) as exc:
        engine.dispose()
        raise fail(command, exc) from exc
    store = EventStore(
        signer, origin=settings.log_origin, checkpoint_every=settings.checkpoint_every
    )
    sessions = make_sessionmaker(engine)
    store.attach(sessions)
    return Runtime(settings, engine, sessions, signer, store)
