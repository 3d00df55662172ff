"""Principals (who may call the API) and their bearer tokens.

A token is shown once when created; only its SHA-256 is stored. Tokens are 256 random
bits, so a fast hash is enough (no password stretching needed) and lookups stay O(1).
Adding and revoking are audit events like everything else.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import select
from sqlalchemy.orm import Session

from audit.chain import utc_timestamp
from audit.store import SYSTEM_TABLE, EventStore, NewEvent
from table_service.errors import Conflict, InvalidRequest, NotFound
from table_service.models import Principal


class Role(StrEnum):
    DEALER = "dealer"
    SUPERVISOR = "supervisor"
    REGULATOR = "regulator"
    OPERATOR = "operator"
    ADMIN = "admin"


TOKEN_PREFIX = "lt_"


@dataclass(frozen=True)
class Identity:
    name: str
    role: Role
    table_id: str | None

    @property
    def actor(self) -> str:
        return f"{self.role.value}:{self.name}"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_role(role: str) -> Role:
    try:
        return Role(role)
    except ValueError:
        allowed = ", ".join(r.value for r in Role)
        raise InvalidRequest(f"unknown role {role!r}; one of {allowed}") from None


def add_principal(
    session: Session,
    store: EventStore,
    name: str,
    role: str,
    *,
    table_id: str | None = None,
    actor: str,
) -> str:
    """Create a principal and return its token (the only time it is ever visible)."""
    parsed = parse_role(role)
    if not name or len(name) > 128 or not name.isprintable():
        raise InvalidRequest("a principal name is 1–128 printable characters")
    if session.get(Principal, name) is not None:
        raise Conflict(f"principal {name!r} already exists", name=name)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = utc_timestamp()
    session.add(
        Principal(
            name=name,
            role=parsed.value,
            table_id=table_id,
            token_hash=hash_token(token),
            created_at=now,
        )
    )
    store.append(
        session,
        [
            NewEvent(
                SYSTEM_TABLE,
                "principal_added",
                actor,
                {"name": name, "role": parsed.value, "table_id": table_id},
            )
        ],
    )
    return token


def revoke_principal(session: Session, store: EventStore, name: str, *, actor: str) -> None:
    principal = session.get(Principal, name)
    if principal is None:
        raise NotFound(f"no principal named {name!r}", name=name)
    if principal.revoked_at is not None:
        raise Conflict(f"principal {name!r} is already revoked", name=name)
    principal.revoked_at = utc_timestamp()
    store.append(session, [NewEvent(SYSTEM_TABLE, "principal_revoked", actor, {"name": name})])


def authenticate(session: Session, token: str) -> Identity | None:
    """The identity behind a token, or None for an unknown or revoked token."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    digest = hash_token(token)
    principal = session.scalars(select(Principal).where(Principal.token_hash == digest)).first()
    if principal is None or not hmac.compare_digest(principal.token_hash, digest):
        return None
    if principal.revoked_at is not None:
        return None
    return Identity(principal.name, Role(principal.role), principal.table_id)


def list_principals(session: Session) -> list[Principal]:
    return list(session.scalars(select(Principal).order_by(Principal.name)))
