"""Regulator exports: the whole log and its checkpoints as JSON lines, verifiable offline.

Line 1 is a header (format, origin, the public key); then one line per event in sequence
order; then one line per checkpoint. ``verify_export`` runs the same verifier as the
database check, so an export proves exactly what the live log proves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from audit.models import AuditCheckpoint, AuditEvent
from audit.signing import Signer, key_id, load_public_key
from audit.store import StoredEvent
from audit.verify import VerifyReport, verify_log

FORMAT = "livetable-audit-export/1"


class ExportError(ValueError):
    """An export file that is not in the expected format."""


def write_export(session: Session, signer: Signer, origin: str, out: IO[str]) -> int:
    header = {"format": FORMAT, "origin": origin, "public_key": signer.public_key_b64}
    out.write(json.dumps(header) + "\n")
    count = 0
    query = select(AuditEvent).order_by(AuditEvent.seq).execution_options(yield_per=2000)
    for row in session.scalars(query):
        out.write(json.dumps({"kind": "event", **StoredEvent.from_row(row).to_json()}) + "\n")
        count += 1
    for cp in session.scalars(select(AuditCheckpoint).order_by(AuditCheckpoint.size)):
        line = {
            "kind": "checkpoint",
            "size": cp.size,
            "origin": cp.origin,
            "root_hash": cp.root_hash,
            "key_id": cp.key_id,
            "signature": cp.signature,
            "created_at": cp.created_at,
            "note": cp.note,
        }
        out.write(json.dumps(line) + "\n")
    return count


@dataclass(frozen=True)
class _Row:
    seq: int
    table_id: str
    round_id: str | None
    type: str
    actor: str
    ts: str
    payload: Any
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class _Checkpoint:
    size: int
    origin: str
    root_hash: str
    key_id: str
    signature: str
    note: str | None = None


def read_export(path: Path) -> tuple[dict[str, Any], list[_Row], list[_Checkpoint]]:
    rows: list[_Row] = []
    checkpoints: list[_Checkpoint] = []
    with path.open(encoding="utf-8") as handle:
        lines: Iterator[str] = iter(handle)
        try:
            header = json.loads(next(lines))
        except (StopIteration, json.JSONDecodeError) as exc:
            raise ExportError(f"{path}: no export header") from exc
        if header.get("format") != FORMAT:
            raise ExportError(f"{path}: not a {FORMAT} file")
        for number, line in enumerate(lines, start=2):
            try:
                item = json.loads(line)
                kind = item.pop("kind")
                if kind == "event":
                    rows.append(_Row(**item))
                elif kind == "checkpoint":
                    item.pop("created_at", None)
                    checkpoints.append(_Checkpoint(**item))
                else:
                    raise ExportError(f"unknown kind {kind!r}")
            except (json.JSONDecodeError, KeyError, TypeError, ExportError) as exc:
                raise ExportError(f"{path}:{number}: {exc}") from exc
    return header, rows, checkpoints


def verify_export(path: Path, public_key_b64: str) -> VerifyReport:
    """Verify an export against a public key obtained out of band (never the file's own)."""
    _, rows, checkpoints = read_export(path)
    key = load_public_key(public_key_b64)
    return verify_log(rows, checkpoints, {key_id(key): key})
