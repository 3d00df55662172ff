"""Bearer-token authentication and role checks as FastAPI dependencies.

401 for a missing, unknown or revoked token; 403 for a valid token with the wrong role or
for another table than the principal's own. Both are decided before any handler runs, so
a refused request can never have changed anything.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from table_service.logs import bind_context
from table_service.principals import Identity, Role, authenticate
from table_service.runtime import Runtime

log = structlog.get_logger(__name__)
_bearer = HTTPBearer(auto_error=False)


def get_runtime(request: Request) -> Runtime:
    return request.app.state.runtime


def identify(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
) -> Identity:
    challenge = {"WWW-Authenticate": "Bearer"}
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


def require(*roles: Role) -> Callable[..., Identity]:
    """Dependency factory: the caller must hold one of ``roles``."""
    allowed = frozenset(roles)

    def dependency(identity: Identity = Depends(identify)) -> Identity:
        if identity.role not in allowed:
            names = ", ".join(sorted(r.value for r in allowed))
            raise HTTPException(
                status.HTTP_403_FORBIDDEN, f"role {identity.role.value} may not do this ({names})"
            )
        return identity

    return dependency


def check_table(identity: Identity, table_id: str) -> None:
    """A principal bound to a table acts on that table only."""
    if identity.table_id is not None and identity.table_id != table_id:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, f"{identity.name} is bound to table {identity.table_id}"
        )
