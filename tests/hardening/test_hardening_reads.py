"""Every read through the projection (issue 30): the reads the last round left out.

- An operator sees the face-down cards of a hand its own account plays, as the rules show
  a player its own cards (Xì Dách ``forced-draw``: a punter may hide its cards from
  spectators), and never another operator's nor the house banker's hole card before it is
  turned: through ``GET /tables/{t}``, ``GET /tables/{t}/rounds``, ``GET /rounds/{id}`` and
  the operator's WebSocket stream. On the code before, the operator saw its own hidden
  cards as null everywhere.
- The recall search, the recall, the incident list, account reads, the consoles' data and
  the pit's timeline build their answers with ``view``: a field nobody declared (put there
  by a change to the code that builds the answer) is refused under
  ``LIVETABLE_STRICT_VIEW=1`` and left out otherwise. On the code before, each of these
  routes returned its rows as they were built, so the field went out (or, behind a closed
  response model, nothing said it was undeclared).

The face-down cards run on SQLite and PostgreSQL; the undeclared fields on SQLite.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from table_service.table.view import UndeclaredField
from tests.hardening import test_hardening_who_may_act as acting
from tests.hardening.test_hardening_who_may_act import CARDS, Api, T

api = acting.api  # the same fixture: operators A and B, a dealer, a supervisor

# counter-clockwise: seat 2 (bob, B) TS 7H; seat 1 (alice, A, hidden) 9D 8S; the house TC 7D
ALICE = {1: "9D", 4: "8S"}  # dealt face down: alice hides her cards from spectators
HOLE = 2  # the house banker's first card


def _get(api: Api, path: str, who: str) -> Any:
    response = api.client.get(
        f"/api/v1{path}", headers={"Authorization": f"Bearer {api.tokens[who]}"}
    )
    assert response.status_code == 200, response.text
    return response.json()


def _hidden_round(api: Api) -> str:
    """alice (A) plays a hidden hand at seat 1, bob (B) an open one at seat 2; dealt."""
    api.ok("/accounts/alice/credit", "opA", {"amount": 10_000, "reference": "a"})
    api.ok("/accounts/bob/credit", "opB", {"amount": 10_000, "reference": "b"})
    api.ok(f"/tables/{T}/shoe", "supervisor")
    api.ok(f"/tables/{T}/seats", "opA", {"seat": 1, "account": "alice"})
    api.ok(f"/tables/{T}/seats", "opB", {"seat": 2, "account": "bob"})
    api.ok(f"/tables/{T}/betting/open", "dealer")
    bet = {"key": "k", "account": "alice", "type": "hidden", "stake": 1000, "seat": 1}
    api.ok(f"/tables/{T}/bets", "opA", {"bets": [bet]})
    bet = {"key": "k", "account": "bob", "type": "main", "stake": 1000, "seat": 2}
    api.ok(f"/tables/{T}/bets", "opB", {"bets": [bet]})
    api.ok(f"/tables/{T}/betting/close", "dealer")
    for card in CARDS:
        api.ok(f"/tables/{T}/cards", "supervisor", {"card": card})
    return str(_get(api, f"/tables/{T}", "supervisor")["round"]["round_id"])


def _stream_cards(api: Api, who: str) -> dict[int, Any]:
    """The card of each ``card_dealt`` frame the principal's stream sends (by index)."""
    last = _get(api, f"/tables/{T}", "supervisor")["last_seq"]
    found: dict[int, Any] = {}
    url = f"/api/v1/tables/{T}/stream?token={api.tokens[who]}"
    with api.client.websocket_connect(url) as ws:
        while True:
            frame = ws.receive_json()
            if frame["type"] == "card_dealt" and frame["round_id"] is not None:
                found[frame["data"]["index"]] = frame["data"]["card"]
            if frame["seq"] >= last:
                return found


def test_an_operator_sees_its_own_players_face_down_cards_and_no_one_elses(api: Api) -> None:
    round_id = _hidden_round(api)
    staff = _get(api, f"/tables/{T}", "dealer")["round"]["cards"]
    assert staff == list(CARDS)
    expected = {
        "opA": ["TS", "9D", None, "7H", "8S", "7D"],  # its own hidden hand; not the hole card
        "opB": ["TS", None, None, "7H", None, "7D"],  # none of alice's, nor the hole card
    }
    for who, cards in expected.items():
        assert _get(api, f"/tables/{T}", who)["round"]["cards"] == cards, who
        (row,) = [r for r in _get(api, f"/tables/{T}/rounds", who) if r["round_id"] == round_id]
        assert row["cards"] == cards, who
        detail = _get(api, f"/rounds/{round_id}", who)
        assert detail["cards"] == cards, who
        assert detail["settle_input"]["cards"] == cards, who
        streamed = _stream_cards(api, who)
        assert [streamed[i] for i in range(len(CARDS))] == cards, who
    for index, card in ALICE.items():  # B's every read: none of alice's hidden cards
        for path in (f"/tables/{T}", "/tables", f"/tables/{T}/rounds", f"/rounds/{round_id}"):
            assert f'"{card}"' not in json.dumps(_get(api, path, "opB")), (path, index)
    assert f'"{CARDS[HOLE]}"' not in json.dumps(_get(api, f"/rounds/{round_id}", "opA"))


SMUGGLED = "smuggled-field"


def _smuggle(module: Any, name: str) -> Callable[[pytest.MonkeyPatch], None]:
    """Wrap ``module.name`` so every record it builds carries a field nobody declared."""

    def tag(value: Any) -> Any:
        if isinstance(value, dict):
            return {**value, SMUGGLED: "another operator's stake"}
        if isinstance(value, tuple):  # (rows, more)
            return ([tag(v) for v in value[0]], *value[1:])
        if isinstance(value, list):
            return [tag(v) for v in value]
        return value

    def install(monkeypatch: pytest.MonkeyPatch) -> None:
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, **k: tag(original(*a, **k)))

    return install


def _reads() -> dict[str, tuple[Callable[[pytest.MonkeyPatch], None], str, str]]:
    from table_service.consoles import recall, routes
    from table_service.routes import accounts, incidents

    return {
        "recall search": (_smuggle(recall, "search_rounds"), "/recall/search?account=alice", "opA"),
        "recall": (_smuggle(recall, "recall_round"), f"/tables/{T}/recall", "supervisor"),
        "incidents": (_smuggle(incidents, "incident_json"), "/incidents", "supervisor"),
        "account": (_smuggle(accounts, "account_view"), "/accounts/alice", "opA"),
        "public console": (_smuggle(routes, "console_view"), f"/public/tables/{T}/view", "-"),
        "dealer console": (_smuggle(routes, "console_view"), f"/console/tables/{T}/view", "dealer"),
        "pit overview": (_smuggle(routes, "console_view"), "/console/overview", "supervisor"),
        "pit timeline": (_smuggle(routes, "incident_timeline"), "/console/timeline", "supervisor"),
    }


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the projection, not the database
@pytest.mark.parametrize("read", list(_reads()))
def test_a_field_nobody_declared_never_leaves_through_a_read(
    api: Api, read: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    acting._dealt_round(api)
    api.ok(f"/tables/{T}/incidents", "dealer", {"kind": "other", "details": {"note": "x"}})
    smuggle, path, who = _reads()[read]
    smuggle(monkeypatch)
    headers = {} if who == "-" else {"Authorization": f"Bearer {api.tokens[who]}"}
    # strict (the suite): refused, as on every outward path
    with pytest.raises(UndeclaredField, match=SMUGGLED):
        api.client.get(f"/api/v1{path}", headers=headers)
    # production: left out
    monkeypatch.setenv("LIVETABLE_STRICT_VIEW", "0")
    response = api.client.get(f"/api/v1{path}", headers=headers)
    assert response.status_code == 200, response.text
    assert SMUGGLED not in response.text


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_bound_principal_reads_its_own_tables_log_only(api: Api) -> None:
    """Red team F6: a supervisor bound to one table read every table's events through
    ``GET /audit/events`` (``?table_id=`` another table's included), while every other
    read keeps a bound principal to its table."""
    from table_service.principals import add_principal

    acting._dealt_round(api)
    with api.runtime.sessions.begin() as session:
        token = add_principal(
            session, api.runtime.store, "sup-bound", "supervisor", table_id="xd-2", actor="t"
        )
    headers = {"Authorization": f"Bearer {token}"}
    mine = api.client.get("/api/v1/audit/events", headers=headers)
    assert mine.status_code == 200, mine.text
    assert {e["table_id"] for e in mine.json()} <= {"xd-2"}
    other = api.client.get(f"/api/v1/audit/events?table_id={T}", headers=headers)
    assert other.status_code == 403 and other.json()["code"] == "other_table", other.text
    unbound = _get_events(api)
    assert T in {e["table_id"] for e in unbound}


def _get_events(api: Api) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {api.tokens['supervisor']}"}
    response = api.client.get("/api/v1/audit/events", headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json())
