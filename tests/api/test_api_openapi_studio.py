"""The OpenAPI document lists the studio's answers on every route of one table.

In a studio a table route may answer 421 ``table_elsewhere`` (another process runs the
table; ``Location`` names the same request there) and 503 ``table_unavailable`` (a
takeover in progress) or ``lease_lost`` (this process lost the lease before writing). A
generated client knows them only if the document says so; the codes are read from the
exceptions the studio raises, so a renamed code fails here too.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from table_service.api.problems import PROBLEM_MEDIA_TYPE
from table_service.app import build_app
from table_service.config import Settings
from table_service.routes.tables import table_router
from table_service.runtime import Runtime
from table_service.studio.errors import TableElsewhere, TableUnavailable
from table_service.studio.lease import LeaseLost
from table_service.table.config import TableConfig

PROBLEM_REF = "#/components/schemas/Problem"


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = tmp_path_factory.mktemp("openapi")
    runtime = Runtime.from_settings(Settings(data_dir=data), upgrade=True)
    try:
        app = build_app(runtime, [TableConfig(table_id="bac-1")], with_readers=False)
        response = TestClient(app).get("/openapi.json")  # no lifespan: the document only
    finally:
        runtime.close()
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def _table_operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """The document's operations of the table routes: those that look the table up in the
    studio (a WebSocket stream answers with a close code instead, not in the document)."""
    routes = [r for r in table_router().routes if isinstance(r, APIRoute)]
    wanted = {
        (m.lower(), r.path) for r in routes if "{table_id}" in r.path for m in r.methods or ()
    }
    found = [
        (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if (method, path) in wanted
    ]
    assert len(found) == len(wanted), wanted - {(m, p) for m, p, _ in found}
    return found


def test_every_table_route_documents_421_and_503(document: dict[str, Any]) -> None:
    operations = _table_operations(document)
    # the table read, its round history, and the commands (bets, cards, seats, ...)
    assert len(operations) >= 15, [p for _, p, _ in operations]
    for method, path, operation in operations:
        responses = operation["responses"]
        where = f"{method.upper()} {path}"
        assert {"421", "503"} <= set(responses), (where, sorted(responses))
        elsewhere, unavailable = responses["421"], responses["503"]
        assert TableElsewhere.code in elsewhere["description"], where
        assert TableUnavailable.code in unavailable["description"], where
        assert elsewhere["headers"]["Location"]["schema"]["type"] == "string", where
        for answer in (elsewhere, unavailable):
            assert answer["content"][PROBLEM_MEDIA_TYPE]["schema"] == {"$ref": PROBLEM_REF}


def test_commands_also_name_lease_lost(document: dict[str, Any]) -> None:
    commands = [(path, op) for method, path, op in _table_operations(document) if method == "post"]
    assert commands
    for path, operation in commands:
        assert LeaseLost.code in operation["responses"]["503"]["description"], path
    assert {"421", "503"}.isdisjoint(document["paths"]["/api/v1/accounts/{account}"]["get"]
                                     ["responses"])  # fmt: skip  # no table: no studio answer


def test_the_codes_are_the_statuses_the_document_gives() -> None:
    assert TableElsewhere.status == 421
    assert TableUnavailable.status == LeaseLost.status == 503


def test_the_document_still_loads_as_openapi(document: dict[str, Any]) -> None:
    """The fuzzer (schemathesis, a test dependency) reads every operation of it."""
    import schemathesis
    from schemathesis.core.result import Err, Ok

    schema = schemathesis.openapi.from_dict(document)
    results = list(schema.get_all_operations())
    assert not [r.err() for r in results if isinstance(r, Err)]
    operations = [r.ok() for r in results if isinstance(r, Ok)]
    labels = {operation.label for operation in operations}
    assert "POST /api/v1/tables/{table_id}/bets" in labels, sorted(labels)
