"""The studio's own routes: which process runs which table, and the wrong-process answer."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from table_service.api.auth import require
from table_service.principals import Identity, Role
from table_service.studio.errors import TableElsewhere

ANY_STAFF = (Role.DEALER, Role.SUPERVISOR, Role.REGULATOR, Role.OPERATOR, Role.ADMIN)


def studio_router() -> APIRouter:
    router = APIRouter(prefix="/api/v1")

    @router.get("/studio/tables")
    def studio_tables(
        request: Request, _: Identity = Depends(require(*ANY_STAFF))
    ) -> dict[str, Any]:
        """Every table of the studio, the process running it and its address: where a
        client sends a table's commands and opens its stream, asked of any process."""
        studio = request.app.state.tables
        return {"node": studio.node_id, "url": studio.url, "tables": studio.directory()}

    return router


async def table_elsewhere(request: Request, exc: TableElsewhere) -> JSONResponse:
    """421 with the owner's address in the body and the same request on the owner in the
    ``Location`` header: the client re-sends there (with its token), nothing was done."""
    body = exc.to_json()
    owner_url = exc.details.get("owner_url")
    headers = {}
    if owner_url:
        location = owner_url.rstrip("/") + request.url.path
        if request.url.query:
            location += "?" + request.url.query
        body["location"] = location
        headers["Location"] = location
    return JSONResponse(body, status_code=exc.status, headers=headers)
