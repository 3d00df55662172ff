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
from audit.proof import list_subtree
from audit.signing import Signer, key_id, load_public_key
from audit.store import StoredEvent
from audit.verify import (
    HeldCheckpoint,
    Trusted,
    VerifyReport,
    check_extends,
    held_checkpoint,
    verify_log,
)

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
class _Checkpoint:
    size: int
    origin: str
    root_hash: str
    key_id: str
    signature: str
    note: str | None = None


_HEX64 = frozenset("0123456789abcdef")
ROW_TYPES: dict[str, tuple[type, ...]] = {
    "seq": (int,),
    "table_id": (str,),
    "round_id": (str, type(None)),
    "type": (str,),
    "actor": (str,),
    "ts": (str,),
    "prev_hash": (str,),
    "hash": (str,),
}
_CHECKPOINT_TYPES: dict[str, tuple[type, ...]] = {
    "size": (int,),
    "origin": (str,),
    "root_hash": (str,),
    "key_id": (str,),
    "signature": (str,),
    "note": (str, type(None)),
}


def check_field_types(item: dict[str, Any], types: dict[str, tuple[type, ...]]) -> None:
    """Field types as written by :func:`write_export`: a forged line with a number where a
    hash belongs is named as a bad line, never met later as a crash of the verifier."""
    for key, allowed in types.items():
        if key in item and (isinstance(item[key], bool) or not isinstance(item[key], allowed)):
            raise ExportError(f"{key} must be {' or '.join(t.__name__ for t in allowed)}")
    for key in ("prev_hash", "hash", "root_hash"):
        value = item.get(key)
        if isinstance(value, str) and (len(value) != 64 or not set(value) <= _HEX64):
            raise ExportError(f"{key} must be 64 lower-case hex digits")


def read_export(path: Path) -> tuple[dict[str, Any], list[StoredEvent], list[_Checkpoint]]:
    """The header, events and checkpoints of an export; :class:`ExportError` names the
    first line that is not what :func:`write_export` writes (text that is not UTF-8 too)."""
    rows: list[StoredEvent] = []
    checkpoints: list[_Checkpoint] = []
    try:
        with path.open(encoding="utf-8") as handle:
            lines: Iterator[str] = iter(handle)
            try:
                header = json.loads(next(lines))
            except (StopIteration, json.JSONDecodeError) as exc:
                raise ExportError(f"{path}: no export header") from exc
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise ExportError(f"{path}: not a {FORMAT} file")
            for number, line in enumerate(lines, start=2):
                try:
                    item = json.loads(line)
                    if not isinstance(item, dict):
                        raise ExportError("not a JSON object")
                    kind = item.pop("kind")
                    if kind == "event":
                        check_field_types(item, ROW_TYPES)
                        rows.append(StoredEvent(**item))  # the line as written: the chain checks it
                    elif kind == "checkpoint":
                        item.pop("created_at", None)
                        check_field_types(item, _CHECKPOINT_TYPES)
                        checkpoints.append(_Checkpoint(**item))
                    else:
                        raise ExportError(f"unknown kind {kind!r}")
                except (json.JSONDecodeError, KeyError, TypeError, ExportError) as exc:
                    raise ExportError(f"{path}:{number}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ExportError(f"{path}: not UTF-8 text") from exc
    return header, rows, checkpoints


def verify_export(
    path: Path,
    public_key_b64: str | None = None,
    *,
    trusted: Trusted | None = None,
    allow_unsigned_tail: bool = False,
    since: HeldCheckpoint | str | None = None,
) -> VerifyReport:
    """Verify an export against a key obtained out of band (never the file's own): a base64
    public key, or ``trusted`` note verifier keys. Every event must be under a checkpoint
    signed by it unless ``allow_unsigned_tail``; with ``since``, the export's newest signed
    tree must extend that checkpoint (an RFC 9162 consistency proof over its events); a held
    note that does not verify with the key raises :class:`NoteError`."""
    if trusted is None:
        if public_key_b64 is None:
            raise ValueError("verify_export needs a public key or trusted verifier keys")
        key = load_public_key(public_key_b64)
        trusted = {key_id(key): key}
    held = None if since is None else held_checkpoint(since, trusted)
    _, rows, checkpoints = read_export(path)
    report = verify_log(rows, checkpoints, trusted, allow_unsigned_tail=allow_unsigned_tail)
    if held is not None and report.ok:
        check_extends(report, held, list_subtree([bytes.fromhex(r.hash) for r in rows]))
    return report
