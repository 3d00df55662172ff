"""Principals (who may call the API) and their bearer tokens.

A token is shown once when created; only its SHA-256 is stored. Tokens are 256 random
bits, so a fast hash is enough (no password stretching needed) and lookups stay O(1).
Adding and revoking are audit events like everything else.

Names use a safe alphabet (letters, digits, ``.``, ``_``, ``-``): no ``:`` or ``|``, so
the ``role:name|key`` scoping of idempotency keys and transfer references can never make
two principals' keys collide. The last active admin cannot be revoked (nobody could then
administer the service), and a principal bound to a table names a table that exists.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from audit.chain import utc_timestamp
from audit.models import AuditEvent
from audit.store import SYSTEM_TABLE, EventStore, NewEvent
from table_service.errors import Conflict, InvalidRequest, NotFound
from table_service.models import Principal as PrincipalRow


class Role(StrEnum):
    DEALER = "dealer"
    SUPERVISOR = "supervisor"
    REGULATOR = "regulator"
    OPERATOR = "operator"
    ADMIN = "admin"


TOKEN_PREFIX = "lt_"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class LastAdmin(Conflict):
    code = "last_admin"


class UnknownTableBinding(InvalidRequest):
    code = "unknown_table"


@dataclass(frozen=True)
class Identity:
    """An authenticated principal: who a request acts for, carried into every command.

    ``table_id``: the one table a bound principal may act on (None: unbound)."""

    name: str
    role: Role
    table_id: str | None

    @property
    def actor(self) -> str:
        """How the audit log names it (``role:name``)."""
        return f"{self.role.value}:{self.name}"

    @property
    def operator_id(self) -> str | None:
        """The operator whose accounts this principal may touch: the owner recorded on
        every account it funds. None for staff, who own no accounts."""
        return self.actor if self.role is Role.OPERATOR else None


INTERNAL_KINDS = ("system", "reader")


@dataclass(frozen=True)
class Internal:
    """The service acting on its own: a timer, a restart, the configuration, the shoe
    reader, an in-process tool. No token names one (``authenticate`` only ever returns an
    :class:`Identity`), so nothing from outside can act as one.

    ``actor`` is the name the audit log records (``system:timer``, ``reader:bac-1-shoe``);
    ``kind`` is ``reader`` for a card reader (it may only report what it reads) and
    ``system`` for everything else in the process."""

    actor: str
    kind: str = "system"
    table_id: str | None = None

    @property
    def operator_id(self) -> str | None:
        return None

    @staticmethod
    def of(actor: str) -> Internal:
        """The in-process principal an actor string names (``reader:…`` is a reader)."""
        return Internal(actor, "reader" if actor.startswith("reader:") else "system")


Principal = Identity | Internal
"""Whoever issues a command: every command carries one and passes one policy."""


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
    known_tables: Collection[str] | None = None,
) -> str:
    """Create a principal and return its token (the only time it is ever visible).

    ``known_tables``: the tables a binding may name (the API passes the tables it runs
    and those the log has seen opened); None leaves a binding unchecked, for set-up tools
    that create principals before their tables first start.
    """
    parsed = parse_role(role)
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidRequest(
            "a principal name is 1–64 letters, digits, '.', '_' or '-' (starting with a"
            " letter or digit)"
        )
    if table_id is not None and known_tables is not None and table_id not in known_tables:
        raise UnknownTableBinding(
            f"no table {table_id!r} to bind to", known=sorted(known_tables)[:100]
        )
    if session.get(PrincipalRow, name) is not None:
        raise Conflict(f"principal {name!r} already exists", name=name)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = utc_timestamp()
    session.add(
        PrincipalRow(
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
    principal = session.get(PrincipalRow, name)
    if principal is None:
        raise NotFound(f"no principal named {name!r}", name=name)
    if principal.revoked_at is not None:
        raise Conflict(f"principal {name!r} is already revoked", name=name)
    if principal.role == Role.ADMIN.value:
        admins = session.scalar(
            select(func.count())
            .select_from(PrincipalRow)
            .where(PrincipalRow.role == Role.ADMIN.value, PrincipalRow.revoked_at.is_(None))
        )
        if (admins or 0) <= 1:
            raise LastAdmin(f"{name!r} is the last admin; add another admin first", name=name)
    principal.revoked_at = utc_timestamp()
    store.append(session, [NewEvent(SYSTEM_TABLE, "principal_revoked", actor, {"name": name})])


def revoked_among(session: Session, names: Iterable[str]) -> set[str]:
    """Which of these principals are revoked now (one primary-key lookup of them all): the
    stream hub asks before it hands a batch of events to the principals' open streams."""
    wanted = sorted(set(names))
    if not wanted:
        return set()
    rows = session.scalars(
        select(PrincipalRow.name).where(
            PrincipalRow.name.in_(wanted), PrincipalRow.revoked_at.is_not(None)
        )
    )
    return set(rows)


def authenticate(session: Session, token: str) -> Identity | None:
    """The identity behind a token, or None for an unknown or revoked token."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    digest = hash_token(token)
    principal = session.scalars(
        select(PrincipalRow).where(PrincipalRow.token_hash == digest)
    ).first()
    if principal is None or not hmac.compare_digest(principal.token_hash, digest):
        return None
    if principal.revoked_at is not None:
        return None
    return Identity(principal.name, Role(principal.role), principal.table_id)


def opened_tables(session: Session) -> set[str]:
    """Tables the log has seen opened (the ones a principal may be bound to)."""
    rows = session.scalars(
        select(AuditEvent.table_id).where(AuditEvent.type == "table_opened").distinct()
    )
    return set(rows)


def list_principals(session: Session) -> list[PrincipalRow]:
    return list(session.scalars(select(PrincipalRow).order_by(PrincipalRow.name)))
