"""The consoles' routes through HTTP and WebSocket, on SQLite and PostgreSQL: the pages,
the public and dealer views, the roads, the dealer on duty and the recall."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from table_service.app import build_app
from table_service.principals import add_principal
from table_service.rules.baccarat import default_paytable
from table_service.rules.baccarat.settle_command import settle_request
from table_service.rules.games import find_game
from table_service.runtime import Runtime
from table_service.table.config import TableConfig
from tests.consoles.consoles_rig import Rig


@pytest.fixture
def rig(make_runtime: Callable[..., Runtime]) -> Iterator[Rig]:
    runtime = make_runtime()
    tokens = {}
    with runtime.sessions.begin() as session:
        for name, role, bound in (
            ("dealer", "dealer", "bac-1"),
            ("other-dealer", "dealer", "bac-2"),
            ("supervisor", "supervisor", None),
            ("regulator", "regulator", None),
            ("operator", "operator", None),
        ):
            tokens[name] = add_principal(
                session, runtime.store, name, role, table_id=bound, actor="test"
            )
    configs = [TableConfig(table_id="bac-1", betting_seconds=60)]
    with TestClient(build_app(runtime, configs, with_readers=False)) as client:
        yield Rig(client, tokens)


TIE = ("2S", "5H", "KD", "TC", "3S")  # player 5, banker 5
PLAYER_NATURAL = ("9S", "2H", "KD", "5C")  # player 9, banker 7


def test_pages_are_served_offline_with_a_strict_policy(rig: Rig) -> None:
    for path in ("/console/dealer", "/console/supervisor", "/overlay/bac-1", "/recall/bac-1"):
        response = rig.client.get(path)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        assert response.headers["cache-control"] == "no-store"
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'self'" in policy
        assert "http://" not in response.text and "https://" not in response.text  # no CDN
    for name in ("common.js", "i18n.js", "render.js", "dealer.js", "style.css"):
        assert rig.client.get(f"/console/static/{name}").status_code == 200
    assert rig.client.get("/console/static/../routes.py").status_code == 404


def test_views_show_each_audience_what_it_may_see(rig: Rig) -> None:
    rig.ready()
    rig.post("/accounts/acct-1/credit", "operator", {"amount": 10_000, "reference": "c1"})
    rig.post("/tables/bac-1/betting/open", "dealer")
    rig.post(
        "/tables/bac-1/bets",
        "operator",
        {"bets": [{"key": "k", "account": "acct-1", "type": "player", "stake": 500}]},
    )
    rig.post("/tables/bac-1/betting/close", "dealer")
    rig.cards("2S", "5H", "KD")
    rig.post("/tables/bac-1/incidents", "dealer", {"kind": "missed_scan", "details": {"index": 3}})

    dealer = rig.get("/console/tables/bac-1/view", "dealer")
    assert dealer["game"] == "baccarat" and dealer["paused"] is True
    rnd = dealer["round"]
    assert rnd["phase"] == "dealing" and rnd["next"]["code"] == "B2"
    assert rnd["next"]["kind"] == "card" and rnd["turn"] is None
    assert rnd["layout"]["positions"] == [
        {"position": "P1", "card": "2S"},
        {"position": "B1", "card": "5H"},
        {"position": "P2", "card": "KD"},
    ]
    assert rnd["layout"]["hands"] == [
        {"hand": "player", "cards": ["2S", "KD"], "total": 2},
        {"hand": "banker", "cards": ["5H"], "total": 5},
    ]
    [incident] = dealer["incidents"]
    assert incident["kind"] == "missed_scan" and incident["raised_by"] == "dealer:dealer"
    assert incident["procedure"] == find_game("baccarat").incidents["missed_scan"].procedure
    assert incident["procedure_key"] == "baccarat.missed_scan"
    assert [k["kind"] for k in dealer["dealer_incidents"]] == list(find_game("baccarat").incidents)

    public = rig.get("/public/tables/bac-1/view", None)
    assert public["round"]["layout"] == rnd["layout"]
    assert public["incidents"] == [{"kind": "missed_scan", "blocking": True}]
    text = str(public)
    assert "acct-1" not in text and "dealer:dealer" not in text and "rule 6" not in text
    assert "cards" not in public["round"] and "legal_actions" not in public["round"]

    # roles and tables
    rig.get("/console/tables/bac-1/view", None, status=401)
    rig.get("/console/tables/bac-1/view", "other-dealer", status=403)
    rig.get("/console/tables/bac-1/view", "operator", status=403)
    rig.get("/console/tables/nope/view", "supervisor", status=404)
    rig.get("/public/tables/nope/view", None, status=404)


def test_roads_follow_the_shoe_and_reset_on_a_new_one(rig: Rig) -> None:
    rig.ready()
    assert rig.get("/tables/bac-1/roads", None)["counts"]["rounds"] == 0
    rig.round(*TIE)
    rig.round(*PLAYER_NATURAL)
    roads = rig.get("/tables/bac-1/roads", None)  # public: no token
    assert roads["shoe_no"] == 1
    assert [b["winner"] for b in roads["bead_plate"]] == ["tie", "player"]
    assert roads["bead_plate"][1]["natural"] is True
    assert [(c["winner"], c["ties"], c["round"]) for c in roads["big_road"]] == [("player", 1, 2)]
    assert roads["counts"]["tie"] == 1 and roads["counts"]["player"] == 1

    # a voided round is not on the roads
    rig.post("/tables/bac-1/betting/open", "dealer")
    rig.post("/tables/bac-1/round/void", "supervisor", {"reason": "test", "change_shoe": True})
    assert rig.get("/tables/bac-1/roads", None)["counts"]["rounds"] == 2  # shoe 1 still shown
    rig.ready()
    fresh = rig.get("/tables/bac-1/roads", None)
    assert fresh["shoe_no"] == 2 and fresh["counts"]["rounds"] == 0 and fresh["big_road"] == []
    rig.get("/tables/nope/roads", None, status=404)


def test_the_dealer_on_duty_is_recorded_and_named_in_the_recall(rig: Rig) -> None:
    rig.ready()
    signed = rig.post("/tables/bac-1/duty", "dealer")
    assert signed["dealer"] == "dealer"
    rig.post("/tables/bac-1/duty", "supervisor", status=403)  # only a dealer goes on duty
    rig.post("/tables/bac-1/duty", "other-dealer", status=403)  # at their own table
    events = rig.get("/audit/events?table_id=bac-1")
    [duty] = [e for e in events if e["type"] == "dealer_signed_in"]
    assert duty["actor"] == "dealer:dealer" and duty["payload"] == {"dealer": "dealer"}
    [tile] = rig.get("/console/overview", "supervisor")
    assert tile["dealer_on_duty"]["dealer"] == "dealer"
    rig.get("/console/overview", "dealer", status=403)

    rig.post("/accounts/acct-1/credit", "operator", {"amount": 10_000, "reference": "c1"})
    bets = [{"key": "b1", "account": "acct-1", "type": "banker", "stake": 1000}]
    rig.round(*TIE, bets=bets)
    rig.round(*PLAYER_NATURAL)
    rig.round("3C", "4D")  # the round in play: dealing
    recall = rig.get("/tables/bac-1/recall?last=2")
    newest, previous = recall["rounds"]
    assert newest["phase"] == "dealing" and previous["phase"] == "settled"
    assert all(r["dealer"] == "dealer" for r in recall["rounds"])
    dealt = [s for s in previous["steps"] if s["type"] == "card_dealt"]
    assert [(s["card"], s["position"], s["index"]) for s in dealt] == [
        ("9S", "P1", 0),
        ("2H", "B1", 1),
        ("KD", "P2", 2),
        ("5C", "B2", 3),
    ]
    seqs = [s["seq"] for s in previous["steps"]]
    assert seqs == sorted(seqs)

    full = rig.get("/tables/bac-1/recall?last=3")["rounds"][2]
    assert [b["type"] for b in full["bets"]] == ["banker"]
    assert full["settlement"][0]["result"] == "push"  # a tie pushes a banker bet
    # the settle input recomputes to the live result with the same rules code
    again = settle_request(full["settle_input"], default_paytable())
    assert again["winner"] == full["outcome"]["winner"] == "tie"
    assert [b["returned"] for b in again["bets"]] == [s["returned"] for s in full["settlement"]]

    rig.get("/tables/bac-1/recall", "dealer", status=403)
    rig.get("/tables/bac-1/recall", "operator", status=403)
    rig.get("/tables/bac-1/recall?last=0", status=422)


def test_the_stream_takes_its_token_as_a_sub_protocol(rig: Rig) -> None:
    rig.ready()
    token = rig.tokens["dealer"]
    with rig.client.websocket_connect(
        "/api/v1/tables/bac-1/stream", subprotocols=["livetable.v1", f"bearer.{token}"]
    ) as ws:
        assert ws.accepted_subprotocol == "livetable.v1"
        first = ws.receive_json()
        assert first["seq"] >= 1 and "payload" in first
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        rig.client.websocket_connect(
            "/api/v1/tables/bac-1/stream", subprotocols=["livetable.v1", "bearer.lt_wrong"]
        ) as ws,
    ):
        ws.receive_json()
    assert refused.value.code in (1008, 4401, 403)


@pytest.fixture
def strict(make_runtime: Callable[..., Runtime]) -> Iterator[Rig]:
    """A table whose voids above 500 need two supervisors."""
    runtime = make_runtime()
    tokens = {}
    with runtime.sessions.begin() as session:
        for name, role in (
            ("dealer", "dealer"),
            ("supervisor", "supervisor"),
            ("sup-2", "supervisor"),
            ("operator", "operator"),
            ("regulator", "regulator"),
        ):
            tokens[name] = add_principal(session, runtime.store, name, role, actor="test")
    configs = [TableConfig(table_id="bac-1", betting_seconds=60, void_approval_above=500)]
    with TestClient(build_app(runtime, configs, with_readers=False)) as client:
        yield Rig(client, tokens)


def test_two_supervisors_void_a_round_above_the_threshold(strict: Rig) -> None:
    rig = strict
    rig.ready()
    rig.post("/accounts/acct-1/credit", "operator", {"amount": 10_000, "reference": "c1"})
    small = [{"key": "s", "account": "acct-1", "type": "player", "stake": 400}]
    rig.round("2S", bets=small)  # 400 staked: one supervisor may void
    rig.post("/tables/bac-1/round/void", "supervisor", {"reason": "small", "change_shoe": False})

    big = [{"key": "b", "account": "acct-1", "type": "player", "stake": 600}]
    rig.round("2S", bets=big)
    refused = rig.post("/tables/bac-1/round/void", "supervisor", {"reason": "x"}, status=409)
    assert refused["error"] == "void_needs_approval" or refused.get("code") == "void_needs_approval"
    [tile] = rig.get("/console/overview", "supervisor")
    assert tile["void_approval"]["needed"] is True and tile["void_approval"]["open_stakes"] == 600
    asked = rig.post("/tables/bac-1/round/void-requests", "supervisor", {"reason": "shoe fault"})
    rid = asked["request_id"]
    [pending] = rig.get("/console/overview", "supervisor")[0]["void_approval"]["pending"]
    assert pending["requested_by"] == "supervisor" and pending["stake"] == 600
    rig.post(f"/tables/bac-1/round/void-requests/{rid}/approve", "supervisor", status=403)
    rig.post(f"/tables/bac-1/round/void-requests/{rid}/approve", "dealer", status=403)
    rig.post("/tables/bac-1/round/void-requests/nope/approve", "sup-2", status=404)
    done = rig.post(f"/tables/bac-1/round/void-requests/{rid}/approve", "sup-2")
    assert done["approved"] is True and done["approved_by"] == "sup-2"
    assert rig.get("/tables/bac-1", "supervisor")["round"]["phase"] == "voided"
    assert rig.get("/console/overview", "supervisor")[0]["void_approval"]["pending"] == []
    rig.post(f"/tables/bac-1/round/void-requests/{rid}/approve", "sup-2", status=409)
