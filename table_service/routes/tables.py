"""HTTP and WebSocket API of the tables: dealer, supervisor, operator, regulator routes.

:func:`table_router` puts together the routes of each resource, each in its own module:

- the tables themselves (here): the list and one table, as the caller may see them;
- :mod:`~table_service.routes.dealing`: betting, the shoe, a card keyed in, a void;
- :mod:`~table_service.routes.incidents`: raised, resolved, listed;
- :mod:`~table_service.routes.seats`: bets, seats, a player gone, decisions;
- :mod:`~table_service.routes.rounds`: the round history and a round's detail;
- :mod:`~table_service.routes.accounts`: money in and out, an account read;
- :mod:`~table_service.routes.streams`: the staff's, operators' and public streams.

Every table command is one line of :class:`~table_service.routes.commands.CommandRoute`;
every answer with table, round, bet, account or incident data is built by the projection
(:func:`table_service.table.view.view`) for the caller.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from table_service.api.auth import allowed, visible_table
from table_service.api.problems import AUTH, errors
from table_service.api.viewers import viewer_for
from table_service.principals import Identity
from table_service.routes.accounts import add_accounts
from table_service.routes.common import TableId, one_table_read, table_of, tables_of
from table_service.routes.dealing import add_betting, add_round_and_shoe
from table_service.routes.incidents import add_incident_commands, add_incident_list
from table_service.routes.models import TableSummary
from table_service.routes.rounds import add_rounds
from table_service.routes.seats import add_seats
from table_service.routes.streams import add_streams
from table_service.table.view import table_view


def add_tables(router: APIRouter) -> None:
    @router.get(
        "/tables",
        response_model=list[TableSummary],
        response_model_exclude_unset=True,
        responses=errors(*AUTH),
    )
    def tables(
        request: Request, who: Identity = Depends(allowed("tables.list"))
    ) -> list[dict[str, Any]]:
        viewer = viewer_for(request, who)
        return [
            table_view(t.state, viewer)
            for t in tables_of(request).tables.values()
            if visible_table(who, t.table_id)
        ]

    @router.get(
        "/tables/{table_id}",
        response_model=TableSummary,
        response_model_exclude_unset=True,
        responses=one_table_read(),
    )
    def table(
        table_id: TableId, request: Request, who: Identity = Depends(allowed("table.read"))
    ) -> dict[str, Any]:
        return table_view(table_of(table_id, request).state, viewer_for(request, who))


def table_router() -> APIRouter:
    """Every table route under ``/api/v1``, in the order the OpenAPI document lists them."""
    router = APIRouter(prefix="/api/v1")
    for add in (
        add_tables,
        add_betting,
        add_incident_commands,
        add_round_and_shoe,
        add_seats,
        add_rounds,
        add_incident_list,
        add_accounts,
        add_streams,
    ):
        add(router)
    return router
