"""Foundation commands: ``db``, ``principal``, ``audit`` and ``serve``."""

from __future__ import annotations

import getpass
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from audit.export import ExportError, verify_export, write_export
from audit.signing import SigningKeyError
from audit.verify import VerifyReport, verify_database
from table_service.config import Settings
from table_service.errors import Refused
from table_service.logs import configure_logging
from table_service.principals import add_principal, list_principals, revoke_principal
from table_service.runtime import Runtime, current_revision, head_revision, upgrade_database

console = Console()
err = Console(stderr=True)

db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)
principal_app = typer.Typer(help="Who may call the API: tokens and roles.", no_args_is_help=True)
audit_app = typer.Typer(help="The hash-chained audit log.", no_args_is_help=True)


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli:unknown"


def _settings() -> Settings:
    """The settings, or one clear line and exit 2 when they are invalid."""
    try:
        return Settings()
    except ValueError as exc:
        errors = getattr(exc, "errors", None)
        detail = (
            "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors())
            if callable(errors)
            else str(exc)
        )
        err.print(f"[red]configuration:[/red] {detail}")
        raise typer.Exit(2) from exc


def _runtime(*, upgrade: bool = True) -> Runtime:
    settings = _settings()
    configure_logging(settings.log_format, settings.log_level)
    try:
        return Runtime.from_settings(settings, upgrade=upgrade)
    except SigningKeyError as exc:
        err.print(f"[red]signing key:[/red] {exc}")
        raise typer.Exit(2) from exc


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the database to the newest schema."""
    runtime = _runtime(upgrade=False)
    upgrade_database(runtime.engine)
    console.print(f"database at revision [bold]{current_revision(runtime.engine)}[/bold]")


@db_app.command("current")
def db_current() -> None:
    """Show the database's schema revision and the code's."""
    runtime = _runtime(upgrade=False)
    current, head = current_revision(runtime.engine), head_revision()
    state = "[green]current[/green]" if current == head else "[yellow]needs upgrade[/yellow]"
    console.print(f"database: {current}  code: {head}  {state}")


@principal_app.command("add")
def principal_add(
    name: str,
    role: str = typer.Option(..., help="dealer|supervisor|regulator|operator|admin"),
    table: str | None = typer.Option(None, "--table", help="Bind the principal to one table"),
) -> None:
    """Create a principal and print its bearer token (shown this once only)."""
    runtime = _runtime()
    try:
        with runtime.sessions.begin() as session:
            token = add_principal(
                session, runtime.store, name, role, table_id=table, actor=_actor()
            )
    except Refused as exc:
        err.print(f"[red]refused:[/red] {exc.reason}")
        raise typer.Exit(1) from exc
    err.print(f"principal [bold]{name}[/bold] ({role}) created; keep this token, it is not stored:")
    typer.echo(token)


@principal_app.command("revoke")
def principal_revoke(name: str) -> None:
    """Revoke a principal's token at once."""
    runtime = _runtime()
    try:
        with runtime.sessions.begin() as session:
            revoke_principal(session, runtime.store, name, actor=_actor())
    except Refused as exc:
        err.print(f"[red]refused:[/red] {exc.reason}")
        raise typer.Exit(1) from exc
    console.print(f"principal [bold]{name}[/bold] revoked")


@principal_app.command("list")
def principal_list() -> None:
    runtime = _runtime()
    table = Table("name", "role", "table", "created", "revoked")
    with runtime.sessions() as session:
        for p in list_principals(session):
            table.add_row(p.name, p.role, p.table_id or "", p.created_at, p.revoked_at or "")
    console.print(table)


def _print_report(report: VerifyReport) -> None:
    if report.ok:
        console.print(
            f"[green]OK[/green] {report.events} events, "
            f"{report.checkpoints_checked} signed checkpoints verified"
        )
        for note in report.notes:
            console.print(f"  note: {note}")
        return
    err.print(f"[red]FAILED[/red] first bad sequence number {report.first_bad_seq}")
    err.print(f"  {report.problem}")
    err.print(f"  ({report.events} events verified before it)")


@audit_app.command("verify")
def audit_verify(
    export: Path | None = typer.Option(None, help="Verify an export file instead of the DB"),
    public_key: str | None = typer.Option(
        None, help="Trusted public key (base64, or a file holding it); default: this server's"
    ),
) -> None:
    """Check chain, hashes, Merkle roots and signatures; exit 1 naming the first bad seq."""
    key_text = public_key
    if key_text and Path(key_text).exists():
        key_text = Path(key_text).read_text().strip()
    if export is not None:
        if not key_text:
            err.print("[red]--public-key is required to verify an export[/red]")
            raise typer.Exit(2)
        try:
            report = verify_export(export, key_text)
        except (ExportError, SigningKeyError, OSError) as exc:
            err.print(f"[red]cannot read export:[/red] {exc}")
            raise typer.Exit(2) from exc
    else:
        runtime = _runtime(upgrade=False)
        keys = {runtime.signer.key_id: runtime.signer.public_key}
        if key_text:
            from audit.signing import key_id, load_public_key

            trusted = load_public_key(key_text)
            keys = {key_id(trusted): trusted}
        with runtime.sessions() as session:
            report = verify_database(session, keys)
    _print_report(report)
    if not report.ok:
        raise typer.Exit(1)


@audit_app.command("checkpoint")
def audit_checkpoint() -> None:
    """Sign a checkpoint at the current head now."""
    runtime = _runtime()
    with runtime.sessions.begin() as session:
        cp = runtime.store.checkpoint(session)
    if cp is None:
        console.print("log is empty; nothing to sign")
    else:
        console.print(f"checkpoint size {cp.size} root {cp.root_hash} key {cp.key_id}")


@audit_app.command("verifier-key")
def audit_verifier_key() -> None:
    """Print the log's note verifier key (``<origin>+<key ID>+<key>``, c2sp.org/signed-note):
    all a standard client needs to check the checkpoints."""
    settings = _settings()
    configured = settings.signing_key
    if not configured and not settings.resolved_signing_key_file.exists():
        err.print(f"no signing key at {settings.resolved_signing_key_file} (nothing signed yet)")
        raise typer.Exit(2)
    from audit.note import NoteSigner
    from audit.signing import load_or_create_signer

    try:
        signer = load_or_create_signer(settings.resolved_signing_key_file, configured)
    except SigningKeyError as exc:
        err.print(f"[red]signing key:[/red] {exc}")
        raise typer.Exit(2) from exc
    typer.echo(str(NoteSigner(settings.log_origin, signer.private_key).verifier_key))


@audit_app.command("export")
def audit_export(out: Path = typer.Option(..., help="Output file (JSON lines)")) -> None:
    """Export every event and checkpoint for offline verification."""
    runtime = _runtime(upgrade=False)
    with runtime.sessions() as session, out.open("w", encoding="utf-8") as handle:
        count = write_export(session, runtime.signer, runtime.settings.log_origin, handle)
    console.print(f"{count} events written to {out}; public key {runtime.signer.public_key_b64}")


def serve(
    host: str | None = typer.Option(None, help="Bind address (default from settings)"),
    port: int | None = typer.Option(None, help="Port (default from settings)"),
    tables: Path | None = typer.Option(
        None, "--tables", help="Table configuration TOML (default: LIVETABLE_TABLE_CONFIG)"
    ),
) -> None:
    """Run the table service and API on the configured tables and shoes (migrates first)."""
    import uvicorn

    from table_service.table.api import build_app
    from table_service.table.config import ConfigError, load_tables

    runtime = _runtime(upgrade=True)
    settings = runtime.settings
    path = tables or settings.table_config
    configs = []
    if path is not None:
        try:
            configs = load_tables(path)
        except ConfigError as exc:
            err.print(f"[red]table configuration:[/red] {exc}")
            raise typer.Exit(2) from exc
    else:
        err.print("no table configuration (--tables or LIVETABLE_TABLE_CONFIG): API only")
    app = build_app(runtime, configs)
    uvicorn.run(app, host=host or settings.host, port=port or settings.port, log_config=None)


def register(app: typer.Typer) -> None:
    """Mount the foundation's command groups on the root app."""
    app.add_typer(db_app, name="db")
    app.add_typer(principal_app, name="principal")
    app.add_typer(audit_app, name="audit")
    app.command("serve")(serve)
