"""``livetable audit`` (verify, checkpoint, verifier-key, export, witness) and ``livetable
report``: the log's own checks and the regulator's tools on it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from table_service.cli import verify as cli_verify
from table_service.cli.common import (
    DATA_DIR_HELP,
    console,
    err,
    existing_runtime,
    fail,
    settings_or_exit,
)
from table_service.cli.keys import parse_log_key, parse_witness_keys
from table_service.config import Settings

# The audit package (SQLAlchemy, the bundle and note code) is imported by the commands that
# use it: mounting `witness` and `report` on the CLI costs nothing.

if TYPE_CHECKING:
    from collections.abc import Sequence

    from audit.note import VerifierKey
    from audit.verify import EventRecord, VerifyReport

audit_app = typer.Typer(help="The hash-chained audit log.", no_args_is_help=True)


def export_bundle(
    runtime: object, out: Path, table: str | None, date_from: str | None, date_to: str | None
) -> None:
    from table_service.regulator.bundle import BundleError, Scope, write_bundle
    from table_service.runtime import Runtime

    assert isinstance(runtime, Runtime)
    if out.exists():
        err.print(f"[red]refused:[/red] {out} already exists; a bundle goes into a new folder")
        raise typer.Exit(2)
    started = time.monotonic()
    try:
        with runtime.sessions() as session:
            summary = write_bundle(
                session,
                runtime.signer.public_key,
                runtime.settings.log_origin,
                out,
                Scope(table, date_from, date_to),
            )
    except BundleError as exc:
        err.print(f"[red]refused:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(
        f"bundle {out}: {summary.events} events ({summary.redacted} outside the scope, links "
        f"only), {summary.rounds} rounds, {summary.checkpoints} checkpoints up to size "
        f"{summary.size}, in {time.monotonic() - started:.1f} s"
    )


def strict_problem(report: VerifyReport, max_age: int, now: datetime | None = None) -> str | None:
    """Why a log fails ``--strict``: events waiting for a checkpoint longer than allowed."""
    if report.tail_start is None or not report.unsealed:
        return None
    seq, ts = report.tail_start
    moment = now or datetime.now(UTC)
    try:
        first = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return f"event {seq} has an unreadable timestamp {ts!r}"
    waited = (moment - first).total_seconds()
    if waited > max_age:
        return (
            f"{report.unsealed} event(s) from sequence {seq} on are not covered by a checkpoint "
            f"(the first is {int(waited)} s old, the limit is {max_age} s)"
        )
    return None


def extra_checks(
    settings: Any,
    sessions: Any,
    report: VerifyReport,
    *,
    strict: bool,
    witness_state: Path | None,
    read_models: bool,
    witness_keys: list[str] | None = None,
) -> list[str]:
    """The checks beyond the chain: ``--strict``, ``--witness-state``, ``--read-models``."""
    problems: list[str] = []
    if strict:
        found = strict_problem(report, settings.checkpoint_max_age)
        problems += [found] if found else []
    if witness_state is not None:
        found = check_witness_state(settings.log_origin, sessions, witness_state)
        problems += [found] if found else []
    if witness_keys:
        problems += witnessed_in_database(sessions, parse_witness_keys(witness_keys))
    if read_models:
        from table_service.regulator.readmodels import check_read_models

        with sessions() as session:
            problems += check_read_models(session)
    return problems


def witnessed_in_database(sessions: Any, keys: list[VerifierKey]) -> list[str]:
    """The log's newest checkpoint must carry a valid cosignature by each witness key."""
    from sqlalchemy import select

    from audit.models import AuditCheckpoint
    from audit.published import note_with_cosignatures
    from table_service.regulator.bundle import BundleError, check_witness

    with sessions() as session:
        rows = list(session.scalars(select(AuditCheckpoint).order_by(AuditCheckpoint.size)))
        notes = [(cp.size, note_with_cosignatures(session, cp)) for cp in rows if cp.note]
    if not notes:
        return ["the log has no signed-note checkpoint to be witnessed"]
    problems = []
    for key in keys:
        try:
            check_witness(key, notes)
        except BundleError as exc:
            problems.append(str(exc))
    return problems


def check_witness_state(origin: str, sessions: Any, state: Path) -> str | None:
    """Compare the log with what a witness cosigned last (its state folder)."""
    from audit.store import EventStore
    from audit.tree import LogTree
    from audit.witness import Witness

    if not (state / "witness-key").exists():
        return f"{state} is not a witness's state folder"
    seen = Witness(state).latest(origin)
    if seen is None:
        return f"the witness at {state} has never cosigned {origin}"
    with sessions() as session:
        head = EventStore.head(session)[0]
    if head < seen.size:
        return f"truncated: the witness cosigned size {seen.size}, the log ends at {head}"
    if LogTree(sessions).root(seen.size) != seen.root:
        return f"rewritten: the log's tree of size {seen.size} is not what the witness cosigned"
    return None


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
        return extra_checks(
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


@audit_app.command("checkpoint")
def audit_checkpoint(
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
) -> None:
    """Sign a checkpoint at the current head now."""
    runtime = existing_runtime("audit checkpoint", data_dir)
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
    settings = settings_or_exit(data_dir)
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
    runtime = existing_runtime("audit export", data_dir)
    if bundle is not None:
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
        raise fail("audit export", exc) from exc
    finally:
        runtime.close()
    console.print(f"{count} events written to {out}; public key {runtime.signer.public_key_b64}")


@audit_app.command("witness")
def witness(
    log: str = typer.Option(..., "--log", help="Base URL of the log (its /tlog/ endpoint)"),
    verifier_key: str = typer.Option(
        ..., "--verifier-key", help="The log's note verifier key (or a file holding it)"
    ),
    state: Path = typer.Option(..., "--state", help="This witness's own folder: key and state"),
    name: str | None = typer.Option(None, "--name", help="Witness name on first start"),
    token: str | None = typer.Option(
        None, "--token", envvar="LIVETABLE_WITNESS_TOKEN", help="Regulator token for the log"
    ),
    interval: float = typer.Option(30.0, "--interval", min=0.5, help="Seconds between polls"),
    once: bool = typer.Option(False, "--once", help="Poll once and exit (1 if refused)"),
) -> None:
    """Run an independent witness: poll the log's checkpoint, check its signature and its
    consistency with the last one cosigned, cosign it (c2sp.org/tlog-cosignature) and hand
    the cosignature back to the log. Refusals are kept in the state folder."""
    import httpx

    from audit.note import NoteError
    from audit.witness import Witness, WitnessRefused, poll_once

    log_key = parse_log_key(verifier_key)
    try:
        me = Witness(state, name)
    except (NoteError, OSError, ValueError) as exc:
        err.print(f"[red]witness state:[/red] {exc}")
        raise typer.Exit(2) from exc
    err.print(f"witness {me.verifier_key}")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=log.rstrip("/"), headers=headers, timeout=30.0) as client:
        while True:
            try:
                size, _ = poll_once(me, client, log_key)
                console.print(f"cosigned {log_key.name} at size {size}")
            except WitnessRefused as refused:
                err.print(f"[red]REFUSED[/red] {refused.code}: {refused.reason}")
                if once:
                    raise typer.Exit(1) from refused
            except (httpx.HTTPError, ValueError) as exc:
                err.print(f"[yellow]log unreachable or bad answer:[/yellow] {exc}")
                if once:
                    raise typer.Exit(2) from exc
            if once:
                return
            time.sleep(interval)


def report(
    date_from: str | None = typer.Option(None, "--from", help="First day (UTC, YYYY-MM-DD)"),
    date_to: str | None = typer.Option(None, "--to", help="Last day (UTC, inclusive)"),
    by: str = typer.Option("table", "--by", help="table | dealer | day"),
    bundle: Path | None = typer.Option(None, "--bundle", help="Report on a bundle, not the DB"),
    json_output: bool = typer.Option(False, "--json", help="JSON instead of tables"),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Data folder of the log"),
) -> None:
    """Rounds, voids, incidents by kind, stakes, returns and hold %, and per bet type the
    actual return next to the theoretical RTP from the rules code."""
    import json as jsonlib

    from rich.table import Table

    from table_service.regulator.report import build_report

    if by not in ("table", "dealer", "day"):
        err.print("[red]--by is table, dealer or day[/red]")
        raise typer.Exit(2)
    events: Sequence[EventRecord]  # a bundle's lines or the log's rows: what the report folds
    if bundle is not None:
        from table_service.regulator.bundle import BundleError, check_manifest, read_bundle_events

        try:
            check_manifest(bundle)
            events = [e for e in read_bundle_events(bundle) if not e.redacted]
        except (BundleError, OSError) as exc:
            err.print(f"[red]bundle:[/red] {exc}")
            raise typer.Exit(2) from exc
    else:
        from audit.store import EventStore

        runtime = existing_runtime("report", data_dir)
        try:
            with runtime.sessions() as session:
                events = EventStore.read(session)
        finally:
            runtime.close()
    groups = build_report(events, date_from=date_from, date_to=date_to, by=by)
    if json_output:
        typer.echo(jsonlib.dumps([g.to_json() for g in groups], indent=2))
        return
    kept = any(g.commission for g in groups)
    columns = ["group", "rounds", "voided", "incidents", "staked", "returned", "hold %"]
    summary = Table(*columns, *(["commission"] if kept else []))
    for g in groups:
        incidents = ", ".join(f"{k} {n}" for k, n in sorted(g.incidents.items())) or "-"
        hold = "-" if g.hold is None else f"{g.hold * 100:.2f}"
        row = [g.key, str(g.rounds), str(g.voided), incidents, str(g.staked), str(g.returned)]
        summary.add_row(*row, hold, *([str(g.commission)] if kept else []))
    console.print(summary)
    shoes = Table(
        "table",
        "shoe",
        "ended",
        "burnt",
        "dealt",
        "set aside",
        "remaining",
        "foreign",
        "duplicate",
        "unreadable",
        title="shoe reconciliation",
    )
    for g in groups:
        for s in g.shoes:
            shoes.add_row(
                s["table_id"],
                str(s["shoe_no"]),
                str(s["ended"]),
                str(s["burnt"]),
                str(s["dealt"]),
                str(s["set_aside"]),
                str(s["remaining"]),
                " ".join(s["foreign"]) or "-",
                " ".join(map(str, s["duplicates"])) or "-",
                str(s["unreadable"]),
            )
    if shoes.row_count:
        console.print(shoes)
    for g in groups:
        bets = Table(
            "bet",
            "bets",
            "staked",
            "returned",
            "actual %",
            "theoretical RTP %",
            title=f"{by} {g.key}",
        )
        for name, line in sorted(g.by_bet.items()):
            actual = "-" if line.actual is None else f"{line.actual * 100:.2f}"
            theory = "-" if line.theoretical is None else f"{line.theoretical * 100:.4f}"
            bets.add_row(name, str(line.bets), str(line.staked), str(line.returned), actual, theory)
        console.print(bets)
