"""A past round rebuilt from the log, for recall: the round as ``livetable settle`` takes it.

The round's own events are folded through the same :func:`~table_service.table.state.apply`
as the live table, under the configuration that was recorded when the round opened, so
the ``settle_input`` given back is exactly what the live table settled (cards in shoe
order, bets, decisions in order) and anyone can recompute the round offline.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from audit.models import AuditEvent
from audit.store import EventStore, StoredEvent
from table_service.table.state import ShoeState, TableRound, TableState, apply, settle_input_of


def _config_at(session: Session, table_id: str, before_seq: int) -> dict[str, Any] | None:
    row = session.scalars(
        select(AuditEvent)
        .where(
            AuditEvent.table_id == table_id,
            AuditEvent.type == "table_opened",
            AuditEvent.seq < before_seq,
        )
        .order_by(AuditEvent.seq.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    return dict(StoredEvent.from_row(row).payload["config"])


def rebuild_round(session: Session, table_id: str, round_id: str) -> TableRound | None:
    events = EventStore.read(session, table_id=table_id, round_id=round_id)
    opened = next((e for e in events if e.type == "betting_opened"), None)
    if opened is None:
        return None
    config = _config_at(session, table_id, opened.seq)
    if config is None:
        return None
    shoe_no = opened.payload.get("shoe_no") or int(round_id.rsplit("-s", 1)[1].split("-g")[0])
    state = TableState(table_id, config=config, shoe=ShoeState(shoe_no, int(config["decks"])))
    for event in events:
        state = apply(state, event.type, event.payload, event.seq)
    return state.round


def round_record(session: Session, table_id: str, round_id: str) -> dict[str, Any]:
    """``game`` and ``settle_input`` of a round (None for a round voided before dealing)."""
    return record_of(rebuild_round(session, table_id, round_id))


def record_of(rnd: TableRound | None) -> dict[str, Any]:
    """``game`` and ``settle_input`` of a rebuilt round."""
    if rnd is None or rnd.game is None:
        return {"game": None, "settle_input": None}
    return {"game": rnd.game.name, "settle_input": settle_input_of(rnd)}


def hand_accounts(session: Session, round_id: str) -> dict[int | None, str]:
    """Which account plays each hand of a round, from its ``bets_placed`` events: a seat's
    own stake (not a bet behind it), and the seated bank's (key None). Betting is over
    before a card is dealt, so the answer for a dealt card never changes."""
    return round_hands(session, round_id)[0]


def round_hands(session: Session, round_id: str) -> tuple[dict[int | None, str], bool]:
    """:func:`hand_accounts`, and whether the round's betting is closed (its hands final:
    an answer asked while betting is open, an incident's, may change, so is not kept)."""
    hands: dict[int | None, str] = {}
    closed = False
    rows = session.scalars(
        select(AuditEvent)
        .where(
            AuditEvent.round_id == round_id,
            AuditEvent.type.in_(("bets_placed", "betting_closed")),
        )
        .order_by(AuditEvent.seq)
    )
    for row in rows:
        if row.type == "betting_closed":
            closed = True
            continue
        for bet in StoredEvent.from_row(row).payload.get("bets") or ():
            kind, seat, account = bet.get("type"), bet.get("seat"), bet.get("account")
            if kind == "bank":
                hands.setdefault(None, str(account))
            elif isinstance(seat, int) and kind != "behind":
                hands.setdefault(seat, str(account))
    return hands, closed
