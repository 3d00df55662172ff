"""``livetable audit verify``: did the holder of this key sign this log, and does it extend
what the regulator already holds?

One command for the three places a log is found (the database, an export file, a bundle
folder). With a key, "OK" means every event lies under a checkpoint signed by that key;
``--allow-unsigned-tail`` accepts the events after the last checkpoint explicitly and the
report counts them. ``--since NOTE`` takes a checkpoint kept from an earlier verification
and proves, with an RFC 9162 consistency proof, that the log's newest signed tree extends
it; ``--save-checkpoint NOTE`` keeps the newest one for next time (the regulator's
routine: the manual, docs/regulator/audit.md).

Exit status: 0 verified, 1 the log fails verification (the first bad sequence number is
named), 2 the command could not run (a file that cannot be read, a key that is not one).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from table_service.cli.common import console, err

if TYPE_CHECKING:
    from audit.verify import HeldCheckpoint, Trusted, VerifyReport


def _bad_input(what: str, detail: object) -> typer.Exit:
    prefix = f"{what}: " if what else ""
    err.print(f"[red]audit verify:[/red] {escape(f'{prefix}{detail}')}", soft_wrap=True)
    return typer.Exit(2)


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _bad_input(what, f"{path} is not UTF-8 text") from exc
    except OSError as exc:
        raise _bad_input(what, f"cannot read {path}: {exc.strerror or exc}") from exc


def _key_text(value: str) -> str:
    """A key given inline, or the file holding it."""
    path = Path(value)
    if len(value) < 4096 and path.is_file():
        return _read_text(path, "key").strip()
    return value.strip()


def trusted_keys(public_key: str | None, verifier_key: str | None) -> Trusted | None:
    """The keys the regulator gave: a note verifier key, or a bare base64 public key."""
    from audit.note import NoteError, VerifierKey
    from audit.signing import SigningKeyError, key_id, load_public_key

    if public_key and verifier_key:
        raise _bad_input("keys", "give --public-key or --verifier-key, not both")
    if verifier_key:
        try:
            return [VerifierKey.parse(_key_text(verifier_key))]
        except NoteError as exc:
            raise _bad_input("--verifier-key", exc) from exc
    if public_key:
        try:
            key = load_public_key(_key_text(public_key))
        except SigningKeyError as exc:
            raise _bad_input("--public-key", exc) from exc
        return {key_id(key): key}
    return None


def _held_text(since: Path | None) -> str | None:
    return None if since is None else _read_text(since, "--since")


def _open_held(text: str | None, since: Path | None, keys: Trusted) -> HeldCheckpoint | None:
    from audit.note import NoteError
    from audit.verify import open_held_checkpoint

    if text is None:
        return None
    try:
        return open_held_checkpoint(text, keys)
    except NoteError as exc:
        raise _bad_input(
            "--since", f"{since} is not a checkpoint note signed by the trusted key: {exc}"
        ) from exc


def save_checkpoint(note: str | None, size: int | None, out: Path | None) -> None:
    """Keep the newest verified checkpoint note for the next verification (atomically:
    the file held before is replaced only by a complete new one)."""
    if out is None:
        return
    if not note or size is None:
        err.print("  no signed note to keep: the newest checkpoint predates signed notes")
        raise typer.Exit(1)
    out = out.resolve()
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(note)
        os.replace(tmp, out)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _bad_input("--save-checkpoint", f"cannot write {out}: {exc.strerror}") from exc
    console.print(f"  checkpoint of size {size} kept in {out} (give it as --since next time)")


def print_report(report: VerifyReport) -> None:
    if report.ok:
        line = (
            f"[green]OK[/green] {report.events} events, "
            f"{report.checkpoints_checked} signed checkpoints verified"
        )
        if report.unsigned_accepted:
            line += (
                f", {report.unsealed} unsigned events accepted "
                f"(sequence {report.sealed_size + 1} on)"
            )
        console.print(line, soft_wrap=True)
        if report.extends is not None:
            old, new, hashes = report.extends
            console.print(
                f"  extends the checkpoint held: size {old} → {new} "
                f"(RFC 9162 consistency proof of {hashes} hashes verified)",
                soft_wrap=True,
            )
        for note in report.notes:
            console.print(f"  note: {note}", soft_wrap=True)
        return
    problem = report.problem
    assert problem is not None
    err.print(f"[red]FAILED[/red] first bad sequence number {problem.seq}")
    err.print(f"  {problem}", soft_wrap=True, markup=False)
    if problem.kind == "unsigned":
        err.print(
            f"  (the chain of {report.events} events links and hashes correctly, but no "
            "signature by this key vouches for those events: the log's operator signs a "
            "checkpoint with `livetable audit checkpoint`; --allow-unsigned-tail accepts "
            "them explicitly)",
            soft_wrap=True,
            markup=False,
        )
    elif problem.kind == "checkpoint root":
        err.print(
            "  (the chain links and hashes correctly, so it was recomputed after a change: "
            "the tree of those events is not the one the key signed)",
            soft_wrap=True,
        )
    elif problem.kind in ("truncated", "rewritten", "other log"):
        err.print(
            f"  ({report.events} events verified against their own signatures; the log "
            "does not extend the checkpoint held)",
            soft_wrap=True,
        )
    else:
        err.print(f"  ({report.events} events verified before it)")


def verify_export_cli(
    export: Path,
    keys: Trusted | None,
    *,
    allow_unsigned_tail: bool,
    since: Path | None,
    save: Path | None,
) -> None:
    from audit.export import ExportError, verify_export

    if keys is None:
        err.print("[red]--public-key (or --verifier-key) is required to verify an export[/red]")
        raise typer.Exit(2)
    held = _open_held(_held_text(since), since, keys)
    try:
        report = verify_export(
            export, trusted=keys, allow_unsigned_tail=allow_unsigned_tail, since=held
        )
    except (ExportError, OSError) as exc:
        raise _bad_input("cannot read export", exc) from exc
    _finish(report, save)


def _finish(report: VerifyReport, save: Path | None) -> None:
    print_report(report)
    if not report.ok:
        raise typer.Exit(1)
    newest = report.newest
    save_checkpoint(getattr(newest, "note", None), None if newest is None else newest.size, save)


def verify_bundle_cli(
    bundle: Path,
    keys: Trusted | None,
    witness_keys: list[str],
    *,
    replay: bool,
    since: Path | None,
    save: Path | None,
) -> None:
    import time

    from table_service.cli.keys import parse_witness_keys
    from table_service.regulator.bundle import BundleError, verify_bundle

    witnesses = parse_witness_keys(witness_keys)
    started = time.monotonic()
    try:
        report = verify_bundle(
            bundle,
            trusted=keys,
            witness_keys=witnesses,
            replay=replay,
            since=_held_text(since),
        )
    except (BundleError, OSError) as exc:
        err.print(f"[red]FAILED[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from exc
    typer.echo(report.summary())
    if report.extends is not None:
        old, new, hashes = report.extends
        typer.echo(
            f"  extends the checkpoint held: size {old} → {new} "
            f"(RFC 9162 consistency proof of {hashes} hashes verified)"
        )
    for note in report.notes:
        err.print(f"  note: {note}")
    for key, size in report.witnessed_size.items():
        err.print(f"  witnessed up to size {size} by {key.split('+')[0]}")
    err.print(f"  ({time.monotonic() - started:.1f} s)")
    save_checkpoint(report.newest_note, report.newest_size, save)


def verify_database_cli(
    data_dir: Path | None,
    keys: Trusted | None,
    *,
    allow_unsigned_tail: bool,
    since: Path | None,
    save: Path | None,
    extra: Callable[[Any, Any, VerifyReport], list[str]],
) -> None:
    """The database's log; without a key, the data folder's own (its operator's check)."""
    from audit.db import make_sessionmaker
    from audit.signing import SigningKeyError, key_id
    from audit.verify import verify_database
    from table_service.cli.common import NoLog, existing_log, own_public_key

    held_text = _held_text(since)
    try:
        settings, engine = existing_log(data_dir)
    except NoLog as exc:
        raise _bad_input("", exc) from exc
    try:
        if keys is None:
            own = own_public_key(settings)
            keys = {key_id(own): own}
        held = _open_held(held_text, since, keys)
        sessions = make_sessionmaker(engine)
        with sessions() as session:
            report = verify_database(
                session, keys, allow_unsigned_tail=allow_unsigned_tail, since=held
            )
        problems = extra(settings, sessions, report) if report.ok else []
    except (NoLog, SigningKeyError) as exc:
        raise _bad_input("signing key", exc) from exc
    finally:
        engine.dispose()
    if problems:
        print_report(report)
        for problem in problems:
            err.print(f"[red]FAILED[/red] {escape(problem)}", soft_wrap=True)
        raise typer.Exit(1)
    _finish(report, save)
