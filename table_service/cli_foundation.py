"""Foundation commands: ``db``, ``principal``, ``audit`` and ``serve``."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from shoe_reader.logs import configure_for_command
from table_service.config import Settings
from table_service.errors import Refused
from table_service.terminal import make_console

# SQLAlchemy, Alembic, the audit log, the runtime and the API are imported by the commands
# that use them: `livetable --help` and every other area's commands start without them.

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from audit.signing import Signer
    from audit.verify import VerifyReport
    from table_service.runtime import Runtime

console = make_console()
err = make_console(stderr=True)

DATA_DIR_HELP = (
    "Data folder of the log to read (its livetable.db and signing key); "
    "default: LIVETABLE_DATA_DIR, else ./livetable-data"
)

db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)
principal_app = typer.Typer(help="Who may call the API: tokens and roles.", no_args_is_help=True)
audit_app = typer.Typer(help="The hash-chained audit log.", no_args_is_help=True)


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli:unknown"


def _settings(data_dir: Path | None = None) -> Settings:
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


def _runtime(*, upgrade: bool = True, data_dir: Path | None = None) -> Runtime:
    from audit.signing import SigningKeyError
    from table_service.runtime import Runtime

    settings = _settings(data_dir)
    configure_for_command()
    try:
        return Runtime.from_settings(settings, upgrade=upgrade)
    except SigningKeyError as exc:
        err.print(f"[red]signing key:[/red] {exc}")
        raise typer.Exit(2) from exc


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the database to the newest schema."""
    from table_service.runtime import current_revision, upgrade_database

    runtime = _runtime(upgrade=False)
    upgrade_database(runtime.engine)
    console.print(f"database at revision [bold]{current_revision(runtime.engine)}[/bold]")


@db_app.command("current")
def db_current() -> None:
    """Show the database's schema revision and the code's."""
    from table_service.runtime import current_revision, head_revision

    runtime = _runtime(upgrade=False)
    current, head = current_revision(runtime.engine), head_revision()
    state = "[green]current[/green]" if current == head else "[yellow]needs upgrade[/yellow]"
    console.print(f"database: {current}  code: {head}  {state}")


def _configured_table_ids(tables: Path | None, settings: Settings) -> set[str]:
    """The table ids of the table file (``--tables``, else LIVETABLE_TABLE_CONFIG); none
    without one. An unreadable or invalid file is one clear line and exit 2."""
    from table_service.table.config import ConfigError, load_tables

    path = tables or settings.table_config
    if path is None:
        return set()
    try:
        return {config.table_id for config in load_tables(path)}
    except ConfigError as exc:
        _config_problems(exc)
        raise typer.Exit(2) from exc


def _config_problems(exc: Exception) -> None:
    """A table file's problems, one line each."""
    from rich.markup import escape

    for line in getattr(exc, "problems", [str(exc)]):
        err.print(f"[red]table configuration:[/red] {escape(line)}", soft_wrap=True)


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

    runtime = _runtime(data_dir=data_dir)
    try:
        with runtime.sessions.begin() as session:
            known = None
            if table is not None:
                known = _configured_table_ids(tables, runtime.settings) | opened_tables(session)
            token = add_principal(
                session,
                runtime.store,
                name,
                role,
                table_id=table,
                actor=_actor(),
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

    runtime = _runtime(data_dir=data_dir)
    try:
        with runtime.sessions.begin() as session:
            revoke_principal(session, runtime.store, name, actor=_actor())
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

    runtime = _runtime(data_dir=data_dir)
    table = Table("name", "role", "table", "created", "revoked")
    with runtime.reads() as session:
        for p in list_principals(session):
            table.add_row(p.name, p.role, p.table_id or "", p.created_at, p.revoked_at or "")
    console.print(table)


class _NoLog(Exception):
    """The log a read-only command was pointed at does not exist or cannot be opened."""


def _existing_log(data_dir: Path | None) -> tuple[Settings, Any]:
    """Settings and engine of a log that already exists; creates nothing (no folder, no
    database, no key), so a command run in the wrong folder says so instead of verifying
    a new empty log."""
    from sqlalchemy.exc import SQLAlchemyError

    from audit.db import create_db_engine
    from table_service.runtime import current_revision, head_revision

    settings = _settings(data_dir)
    configure_for_command()
    where: str | None = None
    if settings.database_url:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            where = make_url(settings.database_url).render_as_string(hide_password=True)
        except ArgumentError as exc:
            raise _NoLog(f"LIVETABLE_DATABASE_URL is not a database URL: {exc}") from exc
    if settings.database_url is None:
        database = settings.data_dir / "livetable.db"
        if not database.is_file():
            raise _NoLog(
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
        raise _NoLog(f"cannot use the database {where}: {reason}") from exc
    if revision is None:
        engine.dispose()
        raise _NoLog(f"{where} holds no livetable schema (run `livetable db upgrade` first)")
    if revision != head_revision():
        engine.dispose()
        raise _NoLog(
            f"{where} is at schema revision {revision}, this code at {head_revision()} "
            "(run `livetable db upgrade` first)"
        )
    return settings, engine


def _existing_signer(settings: Settings) -> Signer:
    """The log's own private key, never a new one: a fresh key would sign checkpoints
    no regulator has."""
    from audit.signing import load_or_create_signer

    path = settings.resolved_signing_key_file
    if not settings.signing_key and not path.is_file():
        raise _NoLog(f"no signing key at {path} (LIVETABLE_SIGNING_KEY or the data folder's)")
    return load_or_create_signer(path, settings.signing_key)


def _own_public_key(settings: Settings) -> Ed25519PublicKey:
    """The public key the log's checkpoints were signed with: from the configured key, the
    key file, or the public half written beside it."""
    from audit.signing import load_public_key

    path = settings.resolved_signing_key_file
    pub = path.with_name(path.name + ".pub")
    if settings.signing_key or path.is_file():
        return _existing_signer(settings).public_key
    if pub.is_file():
        return load_public_key(pub.read_text())
    raise _NoLog(f"no signing key at {path} nor {pub.name} beside it; give --public-key")


def _fail(command: str, exc: Exception) -> typer.Exit:
    err.print(f"[red]{command}:[/red] {exc}", soft_wrap=True)
    return typer.Exit(2)


@audit_app.command("verify")
def audit_verify(
    export: Path | None = typer.Option(None, help="Verify an export file instead of the DB"),
    public_key: str | None = typer.Option(
        None,
        help="Trusted public key (base64, or a file holding it). An export needs it (or "
        "--verifier-key); for the database, default: the data folder's own key",
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    bundle: Path | None = typer.Option(None, "--bundle", help="Verify an export bundle folder"),
    verifier_key: str | None = typer.Option(
        None,
        "--verifier-key",
        help="The log's note verifier key (or a file holding it), instead of --public-key",
    ),
    allow_unsigned_tail: bool = typer.Option(
        False,
        "--allow-unsigned-tail",
        help="Accept events after the last signed checkpoint (counted in the report); "
        "without it any event no signed checkpoint covers fails",
    ),
    since: Path | None = typer.Option(
        None,
        "--since",
        help="A checkpoint note kept from before (signed note, as /tlog/checkpoint serves "
        "it): the log must extend it (RFC 9162 consistency proof)",
    ),
    save_checkpoint: Path | None = typer.Option(
        None,
        "--save-checkpoint",
        help="After a successful check, write the newest signed checkpoint note here "
        "(give it as --since next time)",
    ),
    witness_key: list[str] = typer.Option(
        [], "--witness-key", help="Require this witness's cosignature (repeatable)"
    ),
    replay: bool = typer.Option(False, "--replay", help="Recompute every round's payouts"),
    read_models: bool = typer.Option(
        False, "--read-models", help="Also check balances, ledger, bets, principals against the log"
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="With --allow-unsigned-tail: refuse a tail unsigned longer than "
        "LIVETABLE_CHECKPOINT_MAX_AGE",
    ),
    witness_state: Path | None = typer.Option(
        None, "--witness-state", help="A witness's state folder: the log must extend what it saw"
    ),
) -> None:
    """Did the log's key sign every event, unaltered? Checks chain, hashes, Merkle roots and
    signatures; exit 1 naming the first bad (or unsigned) sequence number, 2 on bad input."""
    from table_service import cli_audit, cli_verify

    keys = cli_verify.trusted_keys(public_key, verifier_key)
    if bundle is not None:
        cli_verify.verify_bundle_cli(
            bundle, keys, witness_key, replay=replay, since=since, save=save_checkpoint
        )
        return
    if export is not None:
        cli_verify.verify_export_cli(
            export,
            keys,
            allow_unsigned_tail=allow_unsigned_tail,
            since=since,
            save=save_checkpoint,
        )
        return

    def extra(settings: Settings, sessions: Any, report: VerifyReport) -> list[str]:
        return cli_audit.extra_checks(
            settings,
            sessions,
            report,
            strict=strict,
            witness_state=witness_state,
            read_models=read_models,
            witness_keys=witness_key,
        )

    cli_verify.verify_database_cli(
        data_dir,
        keys,
        allow_unsigned_tail=allow_unsigned_tail,
        since=since,
        save=save_checkpoint,
        extra=extra,
    )


def _existing_runtime(command: str, data_dir: Path | None) -> Runtime:
    """A runtime on a log that exists, with the key that signed it; creates nothing."""
    from audit.db import make_sessionmaker
    from audit.signing import SigningKeyError
    from audit.store import EventStore
    from table_service.runtime import Runtime

    try:
        settings, engine = _existing_log(data_dir)
    except _NoLog as exc:
        raise _fail(command, exc) from exc
    try:
        signer = _existing_signer(settings)
    except (_NoLog, SigningKeyError) as exc:
        engine.dispose()
        raise _fail(command, exc) from exc
    store = EventStore(
        signer, origin=settings.log_origin, checkpoint_every=settings.checkpoint_every
    )
    sessions = make_sessionmaker(engine)
    store.attach(sessions)
    return Runtime(settings, engine, sessions, signer, store)


@audit_app.command("checkpoint")
def audit_checkpoint(
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
) -> None:
    """Sign a checkpoint at the current head now."""
    runtime = _existing_runtime("audit checkpoint", data_dir)
    try:
        with runtime.sessions.begin() as session:
            cp = runtime.store.checkpoint(session)
    finally:
        runtime.close()
    if cp is None:
        console.print("log is empty; nothing to sign")
    else:
        console.print(f"checkpoint size {cp.size} root {cp.root_hash} key {cp.key_id}")


@audit_app.command("verifier-key")
def audit_verifier_key(
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
) -> None:
    """Print the log's note verifier key (``<origin>+<key ID>+<key>``, c2sp.org/signed-note):
    all a standard client needs to check the checkpoints."""
    settings = _settings(data_dir)
    configured = settings.signing_key
    if not configured and not settings.resolved_signing_key_file.exists():
        err.print(f"no signing key at {settings.resolved_signing_key_file} (nothing signed yet)")
        raise typer.Exit(2)
    from audit.note import NoteSigner
    from audit.signing import SigningKeyError, load_or_create_signer

    try:
        signer = load_or_create_signer(settings.resolved_signing_key_file, configured)
    except SigningKeyError as exc:
        err.print(f"[red]signing key:[/red] {exc}")
        raise typer.Exit(2) from exc
    typer.echo(str(NoteSigner(settings.log_origin, signer.private_key).verifier_key))


@audit_app.command("export")
def audit_export(
    out: Path | None = typer.Option(None, help="Output file (JSON lines)"),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    bundle: Path | None = typer.Option(
        None, "--bundle", help="Write a regulator bundle into this new folder instead"
    ),
    table: str | None = typer.Option(None, "--table", help="Bundle: this table only"),
    date_from: str | None = typer.Option(None, "--from", help="Bundle: from this date (UTC)"),
    date_to: str | None = typer.Option(None, "--to", help="Bundle: to this date (UTC)"),
) -> None:
    """Export every event and checkpoint for offline verification (or a regulator bundle)."""
    if bundle is None and out is None:
        err.print("[red]--out FILE or --bundle DIR is required[/red]")
        raise typer.Exit(2)
    runtime = _existing_runtime("audit export", data_dir)
    if bundle is not None:
        from table_service.cli_audit import export_bundle

        try:
            export_bundle(runtime, bundle, table, date_from, date_to)
        finally:
            runtime.close()
        return
    assert out is not None
    from audit.export import write_export

    try:
        with runtime.reads() as session, out.open("w", encoding="utf-8") as handle:
            count = write_export(session, runtime.signer, runtime.settings.log_origin, handle)
    except OSError as exc:
        raise _fail("audit export", exc) from exc
    finally:
        runtime.close()
    console.print(f"{count} events written to {out}; public key {runtime.signer.public_key_b64}")


def serve(
    host: str | None = typer.Option(None, help="Bind address (default from settings)"),
    port: int | None = typer.Option(None, help="Port (default from settings)"),
    tables: Path | None = typer.Option(
        None, "--tables", help="Table configuration TOML (default: LIVETABLE_TABLE_CONFIG)"
    ),
    metrics: str | None = typer.Option(
        None,
        "--metrics",
        help="Prometheus metrics on this HOST:PORT, a listener apart from the API "
        "(default: LIVETABLE_METRICS_ADDRESS; none if unset; port 0: any free port)",
    ),
) -> None:
    """Run the table service and API on the configured tables and shoes (migrates first).

    Start it several times with the same --tables against one PostgreSQL and the processes
    share the tables out, one writer per table; a table whose process dies is taken over
    within LIVETABLE_TAKEOVER_SECONDS (default 10). A request for a table another process
    runs is answered 421 with that process's address (the manual: docs/operations/studio.md)."""
    import uvicorn

    from table_service.app import build_app
    from table_service.studio.coordinator import studio_for
    from table_service.table.config import ConfigError, load_tables

    settings = _settings()
    path = tables or settings.table_config
    configs = []
    if path is not None:  # the whole table file is checked before anything starts
        try:
            configs = load_tables(path)
        except ConfigError as exc:
            _config_problems(exc)
            raise typer.Exit(2) from exc
    runtime = _runtime(upgrade=True)
    if path is None:
        err.print("no table configuration (--tables or LIVETABLE_TABLE_CONFIG): API only")
    bind_host, bind_port = host or settings.host, port or settings.port
    exposer = _metrics_listener(metrics or settings.metrics_address, settings.metrics_path)
    app = build_app(runtime, configs, manager=studio_for(runtime, configs, bind_host, bind_port))
    from table_service.regulator.watchdog import AuditWatchdog

    watchdog = AuditWatchdog(
        runtime,
        seal_seconds=settings.checkpoint_max_age,
        read_model_seconds=settings.read_model_check_seconds,
    )
    watchdog.start()
    try:
        uvicorn.run(
            app,
            host=bind_host,
            port=bind_port,
            log_config=None,
            ws_per_message_deflate=settings.stream_compression,
        )
    finally:
        watchdog.stop()
        if exposer is not None:
            exposer.close()


def _metrics_listener(address: str | None, path: str) -> Any:
    """The metrics listener of ``serve`` (printed), or None when none is configured."""
    if not address:
        console.print("metrics: off (--metrics HOST:PORT or LIVETABLE_METRICS_ADDRESS)")
        return None
    from table_service.metrics import MetricsAddressError, serve_metrics

    try:
        exposer = serve_metrics(address, path)
    except MetricsAddressError as exc:
        err.print(f"[red]metrics:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"metrics at {exposer.url}", soft_wrap=True)
    return exposer


def register(app: typer.Typer) -> None:
    """Mount the foundation's command groups on the root app."""
    app.add_typer(db_app, name="db")
    from table_service.cli_backup import db_backup, db_restore

    db_app.command("backup")(db_backup)
    db_app.command("restore")(db_restore)
    app.add_typer(principal_app, name="principal")
    app.add_typer(audit_app, name="audit")
    from table_service.cli_audit import report, witness

    audit_app.command("witness")(witness)
    app.command("report")(report)
    app.command("serve")(serve)
