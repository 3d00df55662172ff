"""The HTTP application: health, readiness, administration and the audit read API.

Game routes are mounted by the table service on the same app (see ``create_app``'s
``routers`` argument), so one process serves everything behind one authentication.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import structlog
from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, Field

from audit.models import AuditCheckpoint
from audit.store import EventStore
from table_service.api.auth import get_runtime, identify, require
from table_service.api.tiles import tiles_router
from table_service.consoles.routes import mount_consoles
from table_service.errors import Refused
from table_service.logs import bind_context
from table_service.principals import (
    Identity,
    Role,
    add_principal,
    list_principals,
    revoke_principal,
)
from table_service.runtime import Runtime

log = structlog.get_logger(__name__)


class PrincipalIn(BaseModel):
    name: str = Field(min_length=1, max_length=128)
    role: Role
    table_id: str | None = Field(None, max_length=64)


def _admin_router() -> APIRouter:
    router = APIRouter(prefix="/api/v1")

    @router.get("/whoami")
    def whoami(identity: Identity = Depends(identify)) -> dict[str, Any]:
        return {"name": identity.name, "role": identity.role, "table_id": identity.table_id}

    @router.get("/principals")
    def principals(
        runtime: Runtime = Depends(get_runtime), _: Identity = Depends(require(Role.ADMIN))
    ) -> list[dict[str, Any]]:
        with runtime.sessions() as session:
            return [
                {
                    "name": p.name,
                    "role": p.role,
                    "table_id": p.table_id,
                    "created_at": p.created_at,
                    "revoked_at": p.revoked_at,
                }
                for p in list_principals(session)
            ]

    @router.post("/principals", status_code=201)
    def create_principal(
        body: PrincipalIn,
        runtime: Runtime = Depends(get_runtime),
        identity: Identity = Depends(require(Role.ADMIN)),
    ) -> dict[str, Any]:
        with runtime.sessions.begin() as session:
            token = add_principal(
                session,
                runtime.store,
                body.name,
                body.role.value,
                table_id=body.table_id,
                actor=identity.actor,
            )
        return {"name": body.name, "role": body.role, "token": token}

    @router.delete("/principals/{name}")
    def delete_principal(
        name: str,
        runtime: Runtime = Depends(get_runtime),
        identity: Identity = Depends(require(Role.ADMIN)),
    ) -> dict[str, Any]:
        with runtime.sessions.begin() as session:
            revoke_principal(session, runtime.store, name, actor=identity.actor)
        return {"name": name, "revoked": True}

    @router.get("/audit/events")
    def audit_events(
        after_seq: int = Query(0, ge=0),
        limit: int = Query(500, ge=1, le=5000),
        table_id: str | None = None,
        runtime: Runtime = Depends(get_runtime),
        _: Identity = Depends(require(Role.REGULATOR, Role.SUPERVISOR, Role.ADMIN)),
    ) -> list[dict[str, Any]]:
        with runtime.sessions() as session:
            events = EventStore.read(session, after_seq=after_seq, table_id=table_id, limit=limit)
        return [e.to_json() for e in events]

    @router.post("/audit/checkpoint")
    def audit_checkpoint(
        runtime: Runtime = Depends(get_runtime),
        _: Identity = Depends(require(Role.SUPERVISOR, Role.ADMIN)),
    ) -> dict[str, Any]:
        with runtime.sessions.begin() as session:
            cp: AuditCheckpoint | None = runtime.store.checkpoint(session)
        if cp is None:
            return {"size": 0}
        return {"size": cp.size, "root_hash": cp.root_hash, "key_id": cp.key_id}

    return router


def create_app(
    runtime: Runtime, routers: Iterable[APIRouter] = (), lifespan: Any = None
) -> FastAPI:
    # /docs and /redoc from packaged Swagger UI and ReDoc assets: they work with no internet.
    app = FastAPIOffline(
        title="livetable",
        description="Live-dealer table back-office API",
        version="0.1.0",
        lifespan=lifespan,
        static_url="/docs-assets",
    )
    app.state.runtime = runtime

    @app.middleware("http")
    async def request_context(request: Request, call_next: Any) -> Any:
        request_id = request.headers.get("x-request-id") or uuid.uuid4().hex[:16]
        structlog.contextvars.clear_contextvars()
        bind_context(request_id=request_id)
        response = await call_next(request)
        response.headers["x-request-id"] = request_id
        return response

    @app.exception_handler(Refused)
    async def refused(_: Request, exc: Refused) -> JSONResponse:
        log.info("request.refused", code=exc.code, reason=exc.reason)
        return JSONResponse(exc.to_json(), status_code=exc.status)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz() -> JSONResponse:
        ready, reason = runtime.database_ready()
        return JSONResponse(
            {"status": "ready" if ready else "not ready", "reason": reason},
            status_code=200 if ready else 503,
        )

    app.include_router(_admin_router())
    app.include_router(tiles_router())
    for router in routers:
        app.include_router(router)
    mount_consoles(app)
    return app
