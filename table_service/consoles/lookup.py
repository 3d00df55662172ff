"""What every console route looks up: the table's running service and the dealer on duty."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from fastapi import Request
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from audit.models import AuditEvent
from table_service.errors import NotFound
from table_service.models import RoundRow

DUTY_EVENT = "dealer_signed_in"
ROUND_NUMBERS_KEPT = 4096
"""Round numbers kept per app (the rounds in play and recently looked at)."""


def service_of(request: Request, table_id: str) -> Any:
    manager = getattr(request.app.state, "tables", None)
    if manager is None or table_id not in manager.tables:
        raise NotFound(f"no table {table_id!r}")
    return manager.tables[table_id]


def dealer_on_duty(
    session: Session, table_id: str, before_seq: int | None = None
) -> dict[str, Any] | None:
    """The last dealer who signed in at the table (before ``before_seq``, if given)."""
    query = select(AuditEvent).where(AuditEvent.table_id == table_id, AuditEvent.type == DUTY_EVENT)
    if before_seq is not None:
        query = query.where(AuditEvent.seq < before_seq)
    row = session.scalars(query.order_by(AuditEvent.seq.desc()).limit(1)).first()
    if row is None:
        return None
    payload = json.loads(row.payload)
    return {"dealer": payload.get("dealer"), "since": row.ts, "seq": row.seq}


CARD_EVENTS = ("card_dealt", "card_burnt", "card_set_aside")


def last_card(session: Session, table_id: str) -> dict[str, Any] | None:
    """The last card the table was given (dealt, burnt or set aside), as the dealer's
    "last card read" shows it on a page opened mid-round."""
    row = session.scalars(
        select(AuditEvent)
        .where(AuditEvent.table_id == table_id, AuditEvent.type.in_(CARD_EVENTS))
        .order_by(AuditEvent.seq.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    payload = json.loads(row.payload)
    if not payload.get("card"):
        return None
    return {
        "type": row.type,
        "seq": row.seq,
        "actor": row.actor,
        "card": payload.get("card"),
        "position": payload.get("position"),
        "reader_seq": payload.get("reader_seq"),
        "source": payload.get("source"),
        "reason": payload.get("reason"),
    }


def round_number(request: Request, session: Session, table_id: str, round_id: str) -> int | None:
    """The round's number at its table (1 for the table's first round, counting every
    shoe): a one-deck Xì Dách round is always game 1 of its shoe, so studios number
    rounds by table. Kept per app once known (a round's number never changes)."""
    cache: dict[str, int] = getattr(request.app.state, "round_numbers", None) or {}
    request.app.state.round_numbers = cache
    if round_id in cache:
        return cache[round_id]
    while len(cache) >= ROUND_NUMBERS_KEPT:  # the oldest first: a dict keeps its order
        cache.pop(next(iter(cache)))
    row = session.get(RoundRow, round_id)
    if row is None or row.table_id != table_id:
        return None
    count = session.scalar(
        select(func.count())
        .select_from(RoundRow)
        .where(RoundRow.table_id == table_id, RoundRow.opened_seq <= row.opened_seq)
    )
    cache[round_id] = int(count or 0)
    return cache[round_id]


def event_times(session: Session, seqs: Iterable[int | None]) -> dict[int, str]:
    """When each of these events was logged (its UTC timestamp), by sequence number."""
    wanted = {seq for seq in seqs if seq is not None}
    if not wanted:
        return {}
    rows = session.execute(select(AuditEvent.seq, AuditEvent.ts).where(AuditEvent.seq.in_(wanted)))
    return {int(seq): str(ts) for seq, ts in rows}
