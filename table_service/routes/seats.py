"""What an operator does for its players at a table: bets, seats, a player gone, a
player's decision (and the staff's confirmation of the house banker's published move).
Who may do each for whom is the policy's to decide, when the table runs the command."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from table_service.api.auth import acting, get_runtime
from table_service.errors import InvalidRequest
from table_service.principals import Identity
from table_service.routes.commands import CommandRoute, add_commands
from table_service.routes.common import SeatNo, TableId, command_errors, table_of
from table_service.routes.models import ActionIn, BetsAnswer, BetsIn, LeaveIn, SeatIn
from table_service.table import commands as c
from table_service.table.service import new_bet_ids
from table_service.table.view import ReadModel, model_view, viewer_of

SEATS = (
    CommandRoute(
        "/seats",
        "take_seat",
        c.TakeSeat,
        lambda body, _: c.TakeSeat(body.seat, body.account),
        SeatIn,
    ),
    CommandRoute(
        "/seats/{seat}/leave",
        "leave_seat",
        c.LeaveSeat,
        lambda body, params: c.LeaveSeat(params["seat"], body.reason),
        LeaveIn,
        params={"seat": SeatNo},
    ),
    CommandRoute(
        "/seats/{seat}/disconnected",
        "player_disconnected",
        c.PlayerDisconnected,
        lambda _, params: c.PlayerDisconnected(params["seat"]),
        params={"seat": SeatNo},
    ),
    CommandRoute(
        "/actions",
        "action",
        c.Act,
        lambda body, _: c.Act(body.actor, body.action, body.account, body.hand, body.target),
        ActionIn,
        doc="A player's decision, checked against the legal actions of that actor now: by its\n"
        "operator; the house banker's published move (Xì Dách), by the table's staff.",
    ),
)


def add_seats(router: APIRouter) -> None:
    @router.post(
        "/tables/{table_id}/bets",
        response_model=BetsAnswer,
        response_model_exclude_unset=True,
        responses=command_errors(),
    )
    async def place_bets(
        table_id: TableId,
        body: BetsIn,
        request: Request,
        who: Identity = Depends(acting(c.PlaceBets)),
    ) -> dict[str, Any]:
        service = table_of(table_id, request)
        if len(body.bets) > service.config.max_bets_per_request:
            raise InvalidRequest(f"at most {service.config.max_bets_per_request} bets a request")
        limit = get_runtime(request).settings.max_amount
        if any(b.stake > limit for b in body.bets):
            raise InvalidRequest(f"a stake is at most {limit} minor units", maximum=limit)
        bets = tuple(
            c.BetRequest(bet_id, b.key, b.account, b.type, b.stake, b.seat)
            for bet_id, b in zip(new_bet_ids(len(body.bets)), body.bets, strict=True)
        )
        outcome = await service.execute(c.PlaceBets(bets), actor=who)
        answer = {**outcome.answer, "seq": service.state.last_seq}
        return model_view(ReadModel("answer", answer), viewer_of(who))

    add_commands(router, SEATS)
