"""A table's rounds and one round in detail (with its ``settle_input`` and bets), as the
caller may see them: face-down cards, other operators' accounts, stakes and bet ids are
the projection's to show or not."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy import select

from table_service.api.auth import allowed, get_runtime, visible_table
from table_service.api.problems import AUTH, errors
from table_service.api.viewers import viewer_for
from table_service.errors import NotFound
from table_service.models import Account, BetRow, LedgerEntry, RoundRow, house_account
from table_service.principals import Identity
from table_service.routes.common import PathId, Seq, TableId, one_table_read, table_of, tables_of
from table_service.routes.models import RoundDetail, RoundOut
from table_service.table.audience import Audience
from table_service.table.recall import rebuild_round, record_of
from table_service.table.view import Context, ReadModel, Viewer, face_down, model_view


def add_rounds(router: APIRouter) -> None:
    readers = allowed("rounds.read")

    @router.get(
        "/tables/{table_id}/rounds",
        response_model=list[RoundOut],
        responses=one_table_read(),
    )
    def round_history(
        table_id: TableId,
        request: Request,
        before_seq: Seq | None = None,
        limit: int = Query(50, ge=1, le=500),
        who: Identity = Depends(readers),
    ) -> list[dict[str, Any]]:
        table_of(table_id, request)
        runtime = get_runtime(request)
        with runtime.reads() as session:
            query = select(RoundRow).where(RoundRow.table_id == table_id)
            if before_seq is not None:
                query = query.where(RoundRow.opened_seq < before_seq)
            rows = session.scalars(query.order_by(RoundRow.opened_seq.desc()).limit(limit))
            viewer = viewer_for(request, who)
            out: list[dict[str, Any]] = []
            for r in rows:
                hidden, shown = round_face_down(request, session, r, viewer)
                row = ReadModel("round", round_json(r), Context(hidden, shown=shown))
                out.append(model_view(row, viewer))
            return out

    @router.get("/rounds/{round_id}", response_model=RoundDetail, responses=errors(*AUTH, 404, 422))
    def round_detail(
        round_id: PathId,
        request: Request,
        who: Identity = Depends(readers),
    ) -> dict[str, Any]:
        runtime = get_runtime(request)
        with runtime.reads() as session:
            row = session.get(RoundRow, round_id)
            if row is None or not visible_table(who, row.table_id):
                raise NotFound(f"no round {round_id!r}")
            bets = round_bets(session, row, who.operator_id)
            rnd = rebuild_round(session, row.table_id, round_id)
            viewer = viewer_for(request, who)
            hidden, shown = round_face_down(request, session, row, viewer, rnd)
            detail = {
                **round_json(row),
                **record_of(rnd),
                "bets": bets,
            }
            owned = {b["bet_id"] for b in bets} if viewer.role is Audience.OWNER else ()
            context = Context(hidden, owned, shown)
            return model_view(ReadModel("round_detail", detail, context), viewer)


def round_bets(session: Any, row: RoundRow, operator: str | None) -> list[dict[str, Any]]:
    """A round's bets in the order placed, each with the house's commission on its win (an
    operator's: its own accounts' only)."""
    query = select(BetRow).where(BetRow.round_id == row.round_id)
    if operator is not None:  # an operator sees its own accounts' bets only
        query = query.join(Account, Account.account_id == BetRow.account_id).where(
            Account.owner == operator
        )
    bets = list(session.scalars(query.order_by(BetRow.placed_seq)))
    kept = (
        dict(
            session.execute(
                select(LedgerEntry.bet_id, LedgerEntry.amount).where(
                    LedgerEntry.kind == "commission",
                    LedgerEntry.account_id == house_account(row.table_id),
                    LedgerEntry.bet_id.in_([b.bet_id for b in bets]),
                )
            ).all()
        )
        if bets
        else {}
    )
    return [
        {
            "bet_id": b.bet_id,
            "key": b.idempotency_key.split("|", 1)[1],
            "account": b.account_id,
            "type": b.bet_type,
            "stake": b.stake,
            "status": b.status,
            "result": b.result,
            "returned": b.returned,
            "commission": kept.get(b.bet_id, 0),
        }
        for b in bets
    ]


def round_face_down(
    request: Request, session: Any, row: Any, viewer: Viewer, rnd: Any = None
) -> tuple[frozenset[int], frozenset[int]]:
    """The cards of a round still face down, and those of them the viewer may see (its
    own player's hand): none once it is settled (the game turns them all); the live
    table's state for its round in play; else the round rebuilt from its events (a voided
    round's face-down cards stay face down)."""
    if viewer.sees_face_down or row.phase == "settled":
        return frozenset(), frozenset()
    service = tables_of(request).tables.get(row.table_id)
    state = getattr(service, "state", None)
    live = getattr(state, "round", None)
    if live is not None and live.round_id == row.round_id:
        return face_down(live, viewer)
    if rnd is None:
        rnd = rebuild_round(session, row.table_id, row.round_id)
    return face_down(rnd, viewer)


def round_json(row: Any) -> dict[str, Any]:
    return {
        "round_id": row.round_id,
        "table_id": row.table_id,
        "shoe_no": row.shoe_no,
        "game_number": row.game_number,
        "phase": row.phase,
        "cards": json.loads(row.cards),
        "outcome": json.loads(row.outcome) if row.outcome else None,
        "void_reason": row.void_reason,
        "opened_seq": row.opened_seq,
        "closed_seq": row.closed_seq,
    }
