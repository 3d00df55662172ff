"""Every answer a route gives is a declared read model (issue 30, hardening).

- Each route of the app (the OpenAPI document and the WebSocket routes) names, in
  ``view.ANSWERS``, the read model its answer is built from (or the stream's projected
  events, or the transparency log's bytes); a route without an entry fails here, so a new
  route is not done until its answer is declared, as a new field is not.
- The supervisors' two-person void (its request, its approval), the dealer's sign-in and an
  operator's transfers were answered with dicts as built: a field added to them went out
  to whoever called. Now each is built with ``view``: a field nobody declared is refused
  under ``LIVETABLE_STRICT_VIEW=1`` and left out otherwise; and each field goes only to
  its declared audience (the void's stake and people to the pit's records, never to a
  dealer or an operator, were one to read such an answer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from table_service.app import build_app
from table_service.principals import add_principal
from table_service.table.audience import Audience
from table_service.table.config import TableConfig
from table_service.table.view import (
    ANSWERS,
    DEALER_VIEWER,
    EVENTS_OUT,
    PUBLIC_VIEWER,
    READ_MODELS,
    STAFF_VIEWER,
    TLOG,
    ReadModel,
    UndeclaredField,
    Viewer,
    model_view,
)
from tests.hardening.hardening_helpers import AuditedClient
from tests.hardening.test_hardening_matrix import STUDIO_ONLY, _routes

T = "bac-1"
WHO = {
    "dealer": "dealer",
    "supervisor": "supervisor",
    "sup-2": "supervisor",
    "operator": "operator",
    "admin": "admin",
}
SMUGGLED = "smuggled-field"


@pytest.fixture
def api(make_runtime: Any) -> Iterator[AuditedClient]:
    runtime = make_runtime()
    with runtime.sessions.begin() as session:
        tokens = {
            name: add_principal(session, runtime.store, name, role, actor="test")
            for name, role in WHO.items()
        }
    configs = [TableConfig(table_id=T, betting_seconds=600, void_approval_above=500)]
    with TestClient(build_app(runtime, configs, with_readers=False)) as client:
        yield AuditedClient(client, tokens, runtime)


def _big_round(api: AuditedClient, first: bool = True) -> None:
    """A round with 600 staked: above the threshold, its void needs two supervisors."""
    if first:
        api.ok("/accounts/acct-1/credit", "operator", {"amount": 10_000, "reference": "c1"})
        api.ok(f"/tables/{T}/shoe", "supervisor")
        for card in ("2S", "3H", "4H"):  # the burn: a 2 shown, two cards burnt
            api.ok(f"/tables/{T}/cards", "supervisor", {"card": card})
    api.ok(f"/tables/{T}/betting/open", "dealer")
    bet = {"key": f"b{first}", "account": "acct-1", "type": "player", "stake": 600}
    api.ok(f"/tables/{T}/bets", "operator", {"bets": [bet]})


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_every_route_declares_the_read_model_of_its_answer(api: AuditedClient) -> None:
    routes = _routes(api.client.app)
    assert routes - set(ANSWERS) == set(), "routes whose answer no read model declares"
    gone = set(ANSWERS) - routes - set(STUDIO_ONLY)  # a studio's own routes: its app's
    assert gone == set(), "answers declared for routes that are gone"
    kinds = set(ANSWERS.values()) - {EVENTS_OUT, TLOG}
    assert kinds - set(READ_MODELS) == set(), "answers naming an undeclared read model"


def _smuggle(module: Any, name: str) -> Callable[[pytest.MonkeyPatch], None]:
    """Wrap ``module.name`` (sync or async) so the record it builds carries a field nobody
    declared, as a change to the code that builds the answer would."""
    import inspect

    original = getattr(module, name)

    def install(monkeypatch: pytest.MonkeyPatch) -> None:
        if inspect.iscoroutinefunction(original):

            async def tagged_async(*a: Any, **k: Any) -> Any:
                return {**(await original(*a, **k)), SMUGGLED: "a stake"}

            monkeypatch.setattr(module, name, tagged_async)
        else:
            monkeypatch.setattr(
                module, name, lambda *a, **k: {**original(*a, **k), SMUGGLED: "a stake"}
            )

    return install


def _answers() -> dict[str, tuple[Callable[[pytest.MonkeyPatch], None], str, str, Any]]:
    from table_service.consoles import approvals
    from table_service.routes import accounts

    credit = {"amount": 5, "reference": "smuggled"}
    return {
        "void request": (
            _smuggle(approvals, "request_void"),
            f"/tables/{T}/round/void-requests",
            "supervisor",
            {"reason": "shoe fault"},
        ),
        "void approval": (_smuggle(approvals, "approve_void"), "approve", "sup-2", None),
        "credit": (_smuggle(accounts, "transfer"), "/accounts/acct-1/credit", "operator", credit),
    }


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the projection, not the database
@pytest.mark.parametrize("answer", list(_answers()))
def test_a_field_nobody_declared_never_leaves_through_an_answer(
    api: AuditedClient, answer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _big_round(api)
    smuggle, path, who, body = _answers()[answer]
    for strict in ("1", "0"):
        target = path
        if path == "approve":  # a request of the first supervisor, approved by the second
            if strict == "0":  # the first pass voided its round (then its answer was refused)
                _big_round(api, first=False)
            void = {"reason": "x", "change_shoe": False}
            asked = api.ok(f"/tables/{T}/round/void-requests", "supervisor", void)
            target = f"/tables/{T}/round/void-requests/{asked['request_id']}/approve"
        monkeypatch.setenv("LIVETABLE_STRICT_VIEW", strict)
        with monkeypatch.context() as patched:
            smuggle(patched)
            if strict == "1":  # the suite: refused, as on every outward path
                with pytest.raises(UndeclaredField, match=SMUGGLED):
                    api.call(target, who, body)
                continue
            response = api.call(target, who, body)  # production: left out
        assert response.status_code == 200, response.text
        assert SMUGGLED not in response.text
        assert response.json(), "the declared fields still go out"


@pytest.mark.parametrize("db_url", ["sqlite", "postgresql"], indirect=True)
def test_the_two_person_void_answers_through_the_projection(api: AuditedClient) -> None:
    """The request and the approval answer the supervisors with their declared fields;
    the same answers read by a dealer or an operator would show nothing: the stake in play
    and the people who acted are the pit's records."""
    _big_round(api)
    asked = api.ok(f"/tables/{T}/round/void-requests", "supervisor", {"reason": "shoe fault"})
    assert set(asked) == set(READ_MODELS["void_request"])
    assert asked["stake"] == 600 and asked["requested_by"] == "supervisor"
    path = f"/tables/{T}/round/void-requests/{asked['request_id']}/approve"
    done = api.ok(path, "sup-2")
    assert set(done) == set(READ_MODELS["void_approval"])
    assert done["approved"] is True and done["voided"] is True
    operator = Viewer(Audience.OWNER, "operator", lambda _: True)
    for kind, data in (("void_request", asked), ("void_approval", done)):
        assert model_view(ReadModel(kind, data), STAFF_VIEWER) == data
        for viewer in (DEALER_VIEWER, operator, PUBLIC_VIEWER):
            assert model_view(ReadModel(kind, data), viewer) == {}, (kind, viewer.role)
