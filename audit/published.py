"""What the log publishes about itself: checkpoint notes with their cosignatures.

A witness's cosignature is checked before it is stored (the right checkpoint, a valid
signature by the key it names), but storing it trusts nothing: whoever verifies an
export decides which witness keys count.
"""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from audit.chain import utc_timestamp
from audit.cosign import parse_cosigner_key, verify_cosignature
from audit.models import AuditCheckpoint, AuditCosignature
from audit.note import (
    ALG_ED25519,
    SIG_PREFIX,
    NoteError,
    VerifierKey,
    checkpoint_text,
    parse_note,
)


class CosignatureRefused(ValueError):
    pass


def checkpoint_note(cp: AuditCheckpoint, public_key: Ed25519PublicKey | None = None) -> str:
    """The checkpoint's signed note; one signed before notes existed is rendered from its
    bare signature (the signed bytes are the same), given the key that made it."""
    if cp.note:
        return cp.note
    if public_key is None:
        raise NoteError(f"checkpoint {cp.size} has no stored note")
    body = checkpoint_text(cp.origin, cp.size, bytes.fromhex(cp.root_hash))
    key = VerifierKey(cp.origin, ALG_ED25519, public_key)
    raw = key.key_id + base64.b64decode(cp.signature)
    return body + "\n" + f"{SIG_PREFIX}{cp.origin} {base64.b64encode(raw).decode()}\n"


def cosignature_lines(session: Session, size: int) -> list[str]:
    rows = session.scalars(
        select(AuditCosignature).where(AuditCosignature.size == size).order_by(AuditCosignature.id)
    )
    return [row.line for row in rows]


def note_with_cosignatures(
    session: Session, cp: AuditCheckpoint, public_key: Ed25519PublicKey | None = None
) -> str:
    return checkpoint_note(cp, public_key) + "".join(cosignature_lines(session, cp.size))


def latest_checkpoint(session: Session) -> AuditCheckpoint | None:
    return session.scalars(
        select(AuditCheckpoint).order_by(AuditCheckpoint.size.desc()).limit(1)
    ).first()


def store_cosignature(session: Session, size: int, cosigner_key: str, line: str) -> bool:
    """Store a witness's cosignature of checkpoint ``size``; False if already stored."""
    try:
        key = parse_cosigner_key(cosigner_key)
    except NoteError as exc:
        raise CosignatureRefused(f"cosigner key: {exc}") from exc
    cp = session.scalars(select(AuditCheckpoint).where(AuditCheckpoint.size == size)).first()
    if cp is None:
        raise CosignatureRefused(f"no checkpoint of size {size}")
    body = checkpoint_text(cp.origin, cp.size, bytes.fromhex(cp.root_hash))
    if not line.endswith("\n"):
        line += "\n"
    try:
        signature = parse_note(body + "\n" + line).unverified[0]
        timestamp = verify_cosignature(key, body, signature)
    except (NoteError, IndexError) as exc:
        raise CosignatureRefused(f"cosignature: {exc}") from exc
    existing = session.scalars(
        select(AuditCosignature).where(
            AuditCosignature.size == size,
            AuditCosignature.cosigner == key.name,
            AuditCosignature.key_id == key.key_id.hex(),
        )
    ).first()
    if existing is not None:
        return False
    try:
        with session.begin_nested():
            session.add(
                AuditCosignature(
                    size=size,
                    cosigner=key.name,
                    key_id=key.key_id.hex(),
                    timestamp=timestamp,
                    line=line,
                    received_at=utc_timestamp(),
                )
            )
    except IntegrityError:
        return False
    return True
