"""Authentication and roles through the HTTP API; refused requests change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from audit.models import AuditEvent
from table_service.app import create_app
from table_service.models import Principal
from table_service.principals import add_principal, revoke_principal
from table_service.runtime import Runtime

Setup = tuple[Runtime, TestClient, dict[str, str]]
"""The runtime, a client of its app and a token by role (and a revoked one)."""


@pytest.fixture
def setup(runtime: Runtime) -> Setup:
    tokens: dict[str, str] = {}
    with runtime.sessions.begin() as session:
        for role in ("dealer", "supervisor", "regulator", "operator", "admin"):
            tokens[role] = add_principal(session, runtime.store, role, role, actor="test")
        tokens["revoked"] = add_principal(session, runtime.store, "gone", "admin", actor="test")
    with runtime.sessions.begin() as session:
        revoke_principal(session, runtime.store, "gone", actor="test")
    client = TestClient(create_app(runtime))
    return runtime, client, tokens


def _state(runtime: Runtime) -> tuple[int, list[tuple[str, str | None]]]:
    with runtime.sessions() as session:
        events = session.scalar(select(func.count()).select_from(AuditEvent)) or 0
        principals = [(p.name, p.revoked_at) for p in session.scalars(select(Principal))]
    return events, sorted(principals, key=lambda p: p[0])


def test_health_and_readiness(setup: Setup) -> None:
    _, client, _ = setup
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert client.get("/openapi.json").status_code == 200


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer lt_not-a-real-token"}, 401),
        ({"Authorization": "Bearer garbage"}, 401),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, 401),
        ("revoked", 401),
        ("dealer", 403),
        ("regulator", 403),
    ],
)
def test_refused_requests_change_nothing(
    setup: Setup, headers: dict[str, str] | str, status: int
) -> None:
    runtime, client, tokens = setup
    if isinstance(headers, str):
        headers = {"Authorization": f"Bearer {tokens[headers]}"}
    before = _state(runtime)
    for method, path, body in (
        ("post", "/api/v1/principals", {"name": "mallory", "role": "admin"}),
        ("delete", "/api/v1/principals/operator", None),
    ):
        response = client.request(method, path, json=body, headers=headers)
        assert response.status_code == status, response.text
    assert _state(runtime) == before


def test_admin_creates_and_revokes_through_the_api(setup: Setup) -> None:
    _, client, tokens = setup
    admin = {"Authorization": f"Bearer {tokens['admin']}"}
    unbound = client.post(  # a binding names a table that exists; this app runs none
        "/api/v1/principals",
        json={"name": "op2", "role": "operator", "table_id": "bac-1"},
        headers=admin,
    )
    assert unbound.status_code == 422 and unbound.json()["code"] == "unknown_table"
    created = client.post(
        "/api/v1/principals", json={"name": "op2", "role": "operator"}, headers=admin
    )
    assert created.status_code == 201
    new = {"Authorization": f"Bearer {created.json()['token']}"}
    assert client.get("/api/v1/whoami", headers=new).json() == {
        "name": "op2",
        "role": "operator",
        "table_id": None,
    }
    dup = client.post("/api/v1/principals", json={"name": "op2", "role": "operator"}, headers=admin)
    assert dup.status_code == 409 and dup.json()["code"] == "conflict"
    assert dup.headers["content-type"] == "application/problem+json"
    assert client.delete("/api/v1/principals/op2", headers=admin).status_code == 200
    assert client.get("/api/v1/whoami", headers=new).status_code == 401
    events = client.get(
        "/api/v1/audit/events", headers={"Authorization": f"Bearer {tokens['regulator']}"}
    ).json()
    assert [e["type"] for e in events][-2:] == ["principal_added", "principal_revoked"]
    assert events[-2]["actor"] == "admin:admin"
    assert "token" not in str(events)


def test_bad_role_in_body_is_a_validation_error(setup: Setup) -> None:
    runtime, client, tokens = setup
    before = _state(runtime)
    response = client.post(
        "/api/v1/principals",
        json={"name": "x", "role": "king"},
        headers={"Authorization": f"Bearer {tokens['admin']}"},
    )
    assert response.status_code == 422
    assert _state(runtime) == before


def test_readyz_reports_unmigrated_database(tmp_path: Path) -> None:
    from table_service.config import Settings
    from table_service.runtime import Runtime

    runtime = Runtime.from_settings(Settings(data_dir=tmp_path), upgrade=False)
    client = TestClient(create_app(runtime))
    response = client.get("/readyz")
    assert response.status_code == 503 and "migrations not current" in response.json()["reason"]
    runtime.close()


def test_every_answer_carries_its_request_id_and_its_log_lines_too(setup: Setup) -> None:
    import structlog

    _, client, _ = setup
    given = client.get("/healthz", headers={"x-request-id": "req-42"})
    assert given.headers["x-request-id"] == "req-42"
    refused = client.get("/api/v1/principals")  # a refusal is answered with one as well
    assert refused.status_code == 401 and len(refused.headers["x-request-id"]) == 16
    with structlog.testing.capture_logs(
        processors=[structlog.contextvars.merge_contextvars]
    ) as lines:
        forged = {"x-request-id": "req-43", "Authorization": "Bearer lt_forged"}
        client.get("/api/v1/principals", headers=forged)
    assert any(line.get("request_id") == "req-43" for line in lines)
