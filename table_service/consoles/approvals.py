"""The two-person rule for voids: above a table's stake threshold, one supervisor requests
the void and a different one approves it; both are recorded in the audit log.

A request is an audit event (``void_requested``) on the round; the approval is another
(``void_approved``) followed by the void itself, run by the approver through the table's
one writer. The table's own void route refuses a void that needs approval, so the rule
cannot be bypassed by calling the API directly.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from audit.models import AuditEvent
from audit.store import NewEvent
from table_service.errors import Conflict, NotFound, Refused
from table_service.principals import Identity
from table_service.runtime import Runtime

REQUESTED = "void_requested"
APPROVED = "void_approved"


class VoidNeedsApproval(Refused):
    code = "void_needs_approval"
    status = 409


class SameSupervisor(Refused):
    code = "approval_by_requester"
    status = 403


def open_stakes(service: Any) -> int:
    rnd = service.state.round
    if rnd is None:
        return 0
    return sum(int(b.stake) for b in rnd.bets.values())


def threshold(service: Any) -> int | None:
    return getattr(service.config, "void_approval_above", None)


def needs_approval(service: Any) -> bool:
    limit = threshold(service)
    return limit is not None and open_stakes(service) > limit


def check_void_approval(service: Any) -> None:
    """Refuse a single-supervisor void above the table's threshold."""
    if needs_approval(service):
        raise VoidNeedsApproval(
            "this round's stakes are above the table's threshold: one supervisor requests "
            "the void, a different supervisor approves it",
            stake=open_stakes(service),
            threshold=threshold(service),
        )


def pending(session: Session, table_id: str, round_id: str) -> list[dict[str, Any]]:
    """The round's void requests not yet approved, oldest first."""
    rows = session.scalars(
        select(AuditEvent)
        .where(
            AuditEvent.table_id == table_id,
            AuditEvent.round_id == round_id,
            AuditEvent.type.in_((REQUESTED, APPROVED)),
        )
        .order_by(AuditEvent.seq)
    )
    requests: dict[str, dict[str, Any]] = {}
    for row in rows:
        payload = json.loads(row.payload)
        if row.type == REQUESTED:
            requests[payload["request_id"]] = {**payload, "requested_at": row.ts}
        else:
            requests.pop(payload.get("request_id", ""), None)
    return list(requests.values())


def _append(runtime: Runtime, event: NewEvent) -> int:
    with runtime.sessions.begin() as session:
        runtime.store.lock(session)
        return runtime.store.append(session, [event])[-1].seq


async def request_void(
    runtime: Runtime, service: Any, *, reason: str, change_shoe: bool, actor: str, name: str
) -> dict[str, Any]:
    rnd = service.state.round
    if rnd is None or not rnd.active:
        raise Conflict("no round in progress to void")
    payload = {
        "request_id": uuid.uuid4().hex[:12],
        "round_id": rnd.round_id,
        "reason": reason,
        "change_shoe": change_shoe,
        "stake": open_stakes(service),
        "threshold": threshold(service),
        "requested_by": name,
    }
    seq = await asyncio.to_thread(
        _append, runtime, NewEvent(service.table_id, REQUESTED, actor, payload, rnd.round_id)
    )
    return {**payload, "seq": seq, "approved": False}


async def approve_void(
    runtime: Runtime, service: Any, request_id: str, *, who: Identity
) -> dict[str, Any]:
    """The approval is recorded, and the void runs as a command of ``who`` (the policy
    decides whether that supervisor may void at this table, like any void)."""
    from table_service.table import commands as c

    actor, name = who.actor, who.name

    rnd = service.state.round
    if rnd is None or not rnd.active:
        raise Conflict("no round in progress to void")
    with runtime.sessions() as session:
        found = next(
            (
                p
                for p in pending(session, service.table_id, rnd.round_id)
                if p["request_id"] == request_id
            ),
            None,
        )
    if found is None:
        raise NotFound(f"no pending void request {request_id!r} for round {rnd.round_id}")
    if found["requested_by"] == name:
        raise SameSupervisor("a different supervisor must approve a void they did not request")
    approval = {
        "request_id": request_id,
        "round_id": rnd.round_id,
        "requested_by": found["requested_by"],
        "approved_by": name,
    }
    await asyncio.to_thread(
        _append, runtime, NewEvent(service.table_id, APPROVED, actor, approval, rnd.round_id)
    )
    reason = f"{found['reason']} (requested by {found['requested_by']}, approved by {name})"
    outcome = await service.execute(c.VoidRound(reason, bool(found["change_shoe"])), actor=who)
    return {**approval, **outcome.answer, "approved": True}
