"""The keys a regulator gives the audit commands: a log's note verifier key, witnesses'
cosigner keys, each inline or in a file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from table_service.cli.common import err

if TYPE_CHECKING:
    from audit.note import VerifierKey


def _key_text(value: str) -> str:
    path = Path(value)
    return path.read_text().strip() if path.exists() else value.strip()


def parse_log_key(value: str) -> VerifierKey:
    from audit.note import NoteError, VerifierKey

    try:
        return VerifierKey.parse(_key_text(value))
    except (NoteError, OSError) as exc:
        err.print(f"[red]verifier key:[/red] {exc}")
        raise typer.Exit(2) from exc


def parse_witness_keys(values: list[str]) -> list[VerifierKey]:
    from audit.cosign import parse_cosigner_key
    from audit.note import NoteError

    keys = []
    for value in values:
        try:
            keys.append(parse_cosigner_key(_key_text(value)))
        except (NoteError, OSError) as exc:
            err.print(f"[red]witness key:[/red] {exc}")
            raise typer.Exit(2) from exc
    return keys
