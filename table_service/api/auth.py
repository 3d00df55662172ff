"""Bearer-token authentication and role checks as FastAPI dependencies.

401 for a missing, unknown or revoked token. Who may do what is not decided here but in
:mod:`table_service.table.policy` (one table for every route and command): a route's
dependency names its entry and the policy answers 403 for a wrong role or another table
than the principal's own, before any handler runs, so a refused request can never have
changed anything.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from table_service.logs import bind_context
from table_service.principals import Identity, authenticate
from table_service.runtime import Runtime
from table_service.table import policy

log = structlog.get_logger(__name__)
_bearer = HTTPBearer(auto_error=False)


def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def identify(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
) -> Identity:
    challenge = {"WWW-Authenticate": "Bearer"}
    if len(request.headers.getlist("authorization")) > 1:  # one field (RFC 9110 §11.6.2)
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "one Authorization header", challenge)
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing bearer token", challenge)
    runtime = get_runtime(request)
    with runtime.reads() as session:
        identity = authenticate(session, credentials.credentials)
    if identity is None:
        log.warning("auth.rejected", path=request.url.path)
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "invalid or revoked token", challenge)
    bind_context(principal=identity.name)
    return identity


def allowed(route: str) -> Callable[..., Identity]:
    """Dependency factory: an authenticated principal that the policy lets call ``route``
    (its role; its table binding against the path's ``table_id``). The table of who may
    call what is :data:`table_service.table.policy.ROUTES`; a route names its entry and
    checks nothing itself."""
    if policy.ROUTES.get(route, False) is False:
        raise KeyError(f"no policy entry for route {route!r}")

    def dependency(request: Request, identity: Identity = Depends(identify)) -> Identity:
        policy.check(policy.permit(identity, route, request.path_params.get("table_id")))
        return identity

    return dependency


def acting(command: type) -> Callable[..., Identity]:
    """Dependency factory for a route that issues one kind of table command: the role and
    table binding are checked at once (a wrong role is a 403 before anything is parsed);
    ownership is decided by the same policy when the table runs the command."""
    if command not in policy.COMMANDS:
        raise KeyError(f"no policy entry for command {command.__name__}")

    def dependency(request: Request, identity: Identity = Depends(identify)) -> Identity:
        table_id = request.path_params.get("table_id")
        policy.check(policy.permit_command(identity, command, table_id))
        return identity

    return dependency


def visible_table(identity: Identity, table_id: str) -> bool:
    """Whether ``identity`` may see ``table_id`` at all (its binding), for list routes."""
    return identity.table_id is None or identity.table_id == table_id
