"""The studio's own routes: which process runs which table, and the wrong-process answer."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from table_service.api.auth import allowed
from table_service.api.problems import AUTH, ProblemResponse, errors, problem
from table_service.principals import Identity
from table_service.studio.errors import TableElsewhere
from table_service.table.view import PUBLIC_VIEWER, ReadModel, model_view

# What a route on one table may answer in a studio (several ``serve`` processes on one
# database, one writer per table), for its OpenAPI ``responses``. A client that follows
# the 421 and retries the 503 never needs to know which process runs a table.
TABLE_ELSEWHERE_RESPONSE: dict[str, Any] = {
    "description": "Misdirected Request (`table_elsewhere`): another process of the studio "
    "runs this table. Nothing was done; send the same request, with the same token, to "
    "the `Location` header (also `location` in the body, next to `owner` and `owner_url`).",
    "headers": {
        "Location": {
            "description": "The same path and query on the process that runs the table",
            "schema": {"type": "string", "format": "uri"},
        }
    },
}
TABLE_UNAVAILABLE_RESPONSE: dict[str, Any] = {
    "description": "Service Unavailable (`table_unavailable`): no process runs this table "
    "at this moment, a takeover is in progress (`retry_after` seconds in the body); or "
    "(`lease_lost`) this process lost the table's lease before it wrote anything. Nothing "
    "was done; retry the same request (with the same idempotency keys).",
}


def studio_responses() -> dict[int | str, dict[str, Any]]:
    """The 421 and 503 of a table route, to merge into its ``responses=``."""
    return {421: dict(TABLE_ELSEWHERE_RESPONSE), 503: dict(TABLE_UNAVAILABLE_RESPONSE)}


class TableLease(BaseModel):
    table_id: str
    owner: str | None
    owner_url: str | None
    token: int
    here: bool


class StudioTables(BaseModel):
    node: str
    url: str | None
    tables: list[TableLease]


def studio_router() -> APIRouter:
    router = APIRouter(prefix="/api/v1")

    @router.get("/studio/tables", response_model=StudioTables, responses=errors(*AUTH))
    def studio_tables(
        request: Request, _: Identity = Depends(allowed("studio.tables"))
    ) -> dict[str, Any]:
        """Every table of the studio, the process running it and its address: where a
        client sends a table's commands and opens its stream, asked of any process."""
        studio = request.app.state.tables
        where = {"node": studio.node_id, "url": studio.url, "tables": studio.directory()}
        return model_view(ReadModel("studio_tables", where), PUBLIC_VIEWER)

    return router


async def table_elsewhere(request: Request, exc: TableElsewhere) -> ProblemResponse:
    """421 with the owner's address in the body and the same request on the owner in the
    ``Location`` header: the client re-sends there (with its token), nothing was done."""
    extra: dict[str, Any] = dict(exc.details)
    owner_url = exc.details.get("owner_url")
    headers = {}
    if owner_url:
        location = owner_url.rstrip("/") + request.url.path
        if request.url.query:
            location += "?" + request.url.query
        extra["location"] = location
        headers["Location"] = location
    return problem(exc.status, exc.code, exc.reason, headers=headers, **extra)
