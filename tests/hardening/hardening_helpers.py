"""A real server on a free loopback port, run in a thread, for the hardening tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from sqlalchemy import func, select

from audit.models import AuditEvent
from table_service.app import build_app
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table.config import TableConfig
from tests.support.served_app import running

ROLES = ("dealer", "supervisor", "regulator", "operator", "admin")


class AuditedClient:
    """A test client with a token per principal and the size of the audit log, to check
    that a refused request wrote nothing."""

    def __init__(self, client: Any, tokens: dict[str, str], runtime: Any) -> None:
        self.client = client
        self.tokens = tokens
        self.runtime = runtime

    def log_size(self) -> int:
        with self.runtime.reads() as session:
            return int(session.scalar(select(func.count()).select_from(AuditEvent)) or 0)

    def call(self, path: str, who: str, body: Any = None) -> Any:
        """``POST /api/v1{path}`` as ``who``."""
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return self.client.post(f"/api/v1{path}", json=body, headers=headers)

    def ok(self, path: str, who: str, body: Any = None) -> Any:
        """The answer of a call that must succeed."""
        response = self.call(path, who, body)
        assert response.status_code == 200, response.text
        return response.json()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def principals(runtime: Runtime, tables: list[str]) -> dict[str, str]:
    """A token per role, plus a dealer bound to the first table and a second operator."""
    tokens: dict[str, str] = {}
    with runtime.sessions.begin() as session:
        for role in ROLES:
            tokens[role] = add_principal(session, runtime.store, role, role, actor="test")
        tokens["bound_dealer"] = add_principal(
            session, runtime.store, "d-bound", "dealer", table_id=tables[0], actor="test"
        )
        tokens["operator2"] = add_principal(
            session, runtime.store, "operator2", "operator", actor="test"
        )
    return tokens


@contextmanager
def serve(runtime: Runtime, configs: list[TableConfig], **kwargs: Any) -> Iterator[str]:
    """Serve the whole app over real HTTP/WebSocket; yields the base URL."""
    app = build_app(runtime, configs, with_readers=False, **kwargs)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, log_level="warning")
    with running(config):
        yield f"http://127.0.0.1:{port}"
