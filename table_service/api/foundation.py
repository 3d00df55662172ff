"""The foundation routes of the HTTP application: administration (principals), the audit
read API, the health and readiness answers' shapes, and every request's id.

``table_service/app.py`` assembles them with the tables', the studio's and the consoles'
routes into one application, so one process serves everything behind one authentication.
"""

from __future__ import annotations

import re
import uuid
from typing import Annotated, Any

import structlog
from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import Headers, MutableHeaders

from audit.models import AuditCheckpoint
from audit.store import EventStore
from table_service.api.auth import allowed, get_runtime
from table_service.api.problems import (
    AUTH,
    BODY,
    errors,
)
from table_service.api.types import IDENT_PATTERN, SEQ_MAX, PrincipalName
from table_service.logs import bind_context
from table_service.principals import (
    Identity,
    Role,
    add_principal,
    list_principals,
    opened_tables,
    revoke_principal,
)
from table_service.runtime import Runtime
from table_service.table import policy
from table_service.table.view import ReadModel, model_view, viewer_of

log = structlog.get_logger(__name__)


class PrincipalIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: PrincipalName
    role: Role
    table_id: str | None = Field(None, min_length=1, max_length=64, pattern=IDENT_PATTERN)


class WhoAmI(BaseModel):
    name: str
    role: Role
    table_id: str | None


class PrincipalOut(WhoAmI):
    created_at: str
    revoked_at: str | None


class PrincipalCreated(BaseModel):
    name: str
    role: Role
    token: str = Field(description="the bearer token, shown this once only")


class PrincipalRevoked(BaseModel):
    name: str
    revoked: bool


class AuditEventOut(BaseModel):
    seq: int
    table_id: str
    round_id: str | None
    type: str
    actor: str
    ts: str
    payload: dict[str, Any]
    prev_hash: str
    hash: str


class CheckpointOut(BaseModel):
    size: int
    root_hash: str | None = None
    key_id: str | None = None


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    reason: str


def admin_router() -> APIRouter:
    router = APIRouter(prefix="/api/v1")

    @router.get("/whoami", response_model=WhoAmI, responses=errors(401))
    def whoami(identity: Identity = Depends(allowed("whoami"))) -> dict[str, Any]:
        me = {"name": identity.name, "role": identity.role, "table_id": identity.table_id}
        return model_view(ReadModel("whoami", me), viewer_of(identity))

    @router.get("/principals", response_model=list[PrincipalOut], responses=errors(*AUTH))
    def principals(
        runtime: Runtime = Depends(get_runtime),
        who: Identity = Depends(allowed("principals.list")),
    ) -> list[dict[str, Any]]:
        viewer = viewer_of(who)
        with runtime.reads() as session:
            return [
                model_view(ReadModel("principal", _principal(p)), viewer)
                for p in list_principals(session)
            ]

    @router.post(
        "/principals",
        status_code=201,
        response_model=PrincipalCreated,
        responses=errors(*AUTH, 409, *BODY),
    )
    def create_principal(
        body: PrincipalIn,
        request: Request,
        runtime: Runtime = Depends(get_runtime),
        identity: Identity = Depends(allowed("principals.add")),
    ) -> dict[str, Any]:
        with runtime.sessions.begin() as session:
            known = None
            if body.table_id is not None:
                manager = getattr(request.app.state, "tables", None)
                known = set(getattr(manager, "tables", {})) | opened_tables(session)
            token = add_principal(
                session,
                runtime.store,
                body.name,
                body.role.value,
                table_id=body.table_id,
                actor=identity.actor,
                known_tables=known,
            )
        created = {"name": body.name, "role": body.role, "token": token}
        return model_view(ReadModel("principal_created", created), viewer_of(identity))

    @router.delete(
        "/principals/{name}",
        response_model=PrincipalRevoked,
        responses=errors(*AUTH, 404, 409, 422),
    )
    def delete_principal(
        name: Annotated[str, Path(min_length=1, max_length=128)],
        runtime: Runtime = Depends(get_runtime),
        identity: Identity = Depends(allowed("principals.revoke")),
    ) -> dict[str, Any]:
        with runtime.sessions.begin() as session:
            revoke_principal(session, runtime.store, name, actor=identity.actor)
        revoked = {"name": name, "revoked": True}
        return model_view(ReadModel("principal_revoked", revoked), viewer_of(identity))

    @router.get("/audit/events", response_model=list[AuditEventOut], responses=errors(*AUTH, 422))
    def audit_events(
        after_seq: int = Query(0, ge=0, le=SEQ_MAX),
        limit: int = Query(500, ge=1, le=5000),
        table_id: Annotated[
            str | None, Query(max_length=64, pattern=r"^[A-Za-z0-9_][A-Za-z0-9._:@-]*$")
        ] = None,
        runtime: Runtime = Depends(get_runtime),
        who: Identity = Depends(allowed("audit.events")),
    ) -> list[dict[str, Any]]:
        if who.table_id is not None:  # a bound principal reads its own table's events only
            if table_id is not None:
                policy.check(policy.permit(who, "audit.events", table_id))
            table_id = who.table_id
        with runtime.reads() as session:
            events = EventStore.read(session, after_seq=after_seq, table_id=table_id, limit=limit)
        viewer = viewer_of(who)  # whole records: declared for who reads the log
        return [model_view(ReadModel("audit_event", e.to_json()), viewer) for e in events]

    @router.post("/audit/checkpoint", response_model=CheckpointOut, responses=errors(*AUTH))
    def audit_checkpoint(
        runtime: Runtime = Depends(get_runtime),
        who: Identity = Depends(allowed("audit.checkpoint")),
    ) -> dict[str, Any]:
        with runtime.sessions.begin() as session:
            cp: AuditCheckpoint | None = runtime.store.checkpoint(session)
        head = (
            {"size": 0}
            if cp is None
            else {"size": cp.size, "root_hash": cp.root_hash, "key_id": cp.key_id}
        )
        return model_view(ReadModel("checkpoint", head), viewer_of(who))

    return router


def _principal(p: Any) -> dict[str, Any]:
    return {
        "name": p.name,
        "role": p.role,
        "table_id": p.table_id,
        "created_at": p.created_at,
        "revoked_at": p.revoked_at,
    }


REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")


class RequestContext:
    """Every HTTP request's id (the caller's ``x-request-id``, or a new one) bound to its
    log lines and echoed on its answer.

    A plain ASGI layer: the decorator form (``BaseHTTPMiddleware``) runs every request in a
    task of its own with memory streams between them, a tenth of a small request's time."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = Headers(scope=scope).get("x-request-id")
        # the caller's id only if it is a plain identifier (no format or bidirectional
        # characters, no kilobytes): it goes on every log line and back in the answer
        request_id = given if given and REQUEST_ID.fullmatch(given) else uuid.uuid4().hex[:16]
        structlog.contextvars.clear_contextvars()
        bind_context(request_id=request_id)

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["x-request-id"] = request_id
            await send(message)

        await self.app(scope, receive, send_with_id)
