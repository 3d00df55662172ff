"""Incidents: raised by the dealer (or the reader), resolved by a supervisor (table
commands), and listed for the staff through the projection."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy import select

from table_service.api.auth import allowed, get_runtime
from table_service.api.problems import AUTH, errors
from table_service.api.types import IDENT_PATTERN
from table_service.api.viewers import viewer_for
from table_service.models import IncidentRow
from table_service.principals import Identity
from table_service.routes.commands import CommandRoute, add_commands
from table_service.routes.common import PathId
from table_service.routes.models import IncidentIn, IncidentOut, ResolveIn
from table_service.table import commands as c
from table_service.table import policy
from table_service.table.view import incident_model, model_view


def _resolve(body: ResolveIn, params: Any) -> c.Command:
    return c.ResolveIncident(
        params["incident_id"],
        body.note,
        tuple(c.EnteredCard(e.card, e.index) for e in body.entered),
        tuple(body.order) if body.order is not None else None,
        body.read_twice,
    )


COMMANDS = (
    CommandRoute(
        "/incidents",
        "raise_incident",
        c.RaiseIncident,
        lambda body, _: c.RaiseIncident(body.kind, body.details),
        IncidentIn,
    ),
    CommandRoute(
        "/incidents/{incident_id}/resolve",
        "resolve_incident",
        c.ResolveIncident,
        _resolve,
        ResolveIn,
        params={"incident_id": PathId},
    ),
)


def add_incident_commands(router: APIRouter) -> None:
    add_commands(router, COMMANDS)


def add_incident_list(router: APIRouter) -> None:
    @router.get("/incidents", response_model=list[IncidentOut], responses=errors(*AUTH, 422))
    def incidents(
        request: Request,
        table_id: Annotated[str | None, Query(max_length=64, pattern=IDENT_PATTERN)] = None,
        status: Literal["open", "resolved"] | None = None,
        limit: int = Query(100, ge=1, le=1000),
        who: Identity = Depends(allowed("incidents.read")),
    ) -> list[dict[str, Any]]:
        if who.table_id is not None:  # a bound principal sees its own table only
            if table_id is not None:
                policy.check(policy.permit(who, "incidents.read", table_id))
            table_id = who.table_id
        runtime = get_runtime(request)
        viewer = viewer_for(request, who)
        with runtime.reads() as session:
            query = select(IncidentRow)
            if table_id:
                query = query.where(IncidentRow.table_id == table_id)
            if status:
                query = query.where(IncidentRow.status == status)
            rows = session.scalars(query.order_by(IncidentRow.raised_seq.desc()).limit(limit))
            return [model_view(incident_model(incident_json(r), viewer), viewer) for r in rows]


def incident_json(r: IncidentRow) -> dict[str, Any]:
    """An incident as its row keeps it (the ``incident`` read model)."""
    return {
        "incident_id": r.incident_id,
        "table_id": r.table_id,
        "round_id": r.round_id,
        "kind": r.kind,
        "blocking": r.blocking,
        "status": r.status,
        "details": _details(r.details),
        "raised_by": r.raised_by,
        "resolution": r.resolution,
        "resolved_by": r.resolved_by,
    }


def _details(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {"unreadable": True}
    return value if isinstance(value, dict) else {"value": value}
