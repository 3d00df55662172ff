"""Live blackjack through HTTP and WebSocket, on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from table_service.app import build_app
from table_service.principals import add_principal
from table_service.rules.games import find_game
from table_service.runtime import Runtime
from table_service.table.config import TableConfig
from table_service.table.service import TableManager
from tests.support.api_client import ApiClient
from tests.table.test_table_api import ROLES, Clock, _ledger_ok

T = "bj-1"
CONFIG = TableConfig(
    table_id=T,
    game="blackjack",
    betting_seconds=15,
    game_rules={"decision_seconds": 1, "follow_seconds": 1},
    bet_limits={"main": {"min_stake": 100, "max_stake": 50_000}},
)


class Client(ApiClient):
    runtime: Runtime  # the studio's, set by the fixture that serves it

    def __init__(self, client: TestClient, tokens: dict[str, str], clock: Clock) -> None:
        super().__init__(client, tokens)
        self.clock = clock

    def card(self, card: str) -> dict[str, Any]:
        table: dict[str, Any] = self.post(f"/tables/{T}/cards", "supervisor", {"card": card})[
            "table"
        ]
        return table

    def act(self, actor: str, action: str, account: str, status: int = 200) -> dict[str, Any]:
        body = {"actor": actor, "action": action, "account": account}
        answer: dict[str, Any] = self.post(f"/tables/{T}/actions", "operator", body, status)
        return answer

    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = self.get(f"/tables/{T}")
        return summary

    def wait(self, predicate: Any, seconds: float = 60.0) -> dict[str, Any]:
        """The table's summary once ``predicate`` holds of it (the table's timers run on
        their own task: a loaded machine is slower, never red); fails at the bound."""
        end = time.monotonic() + seconds
        while True:
            summary = self.summary()
            if predicate(summary):
                return summary
            assert time.monotonic() < end, summary["round"]
            time.sleep(0.05)


def _tokens(runtime: Any) -> dict[str, str]:
    with runtime.sessions.begin() as session:
        return {r: add_principal(session, runtime.store, r, r, actor="test") for r in ROLES}


@pytest.fixture
def bj(make_runtime: Callable[..., Runtime]) -> Iterator[Client]:
    runtime = make_runtime()
    tokens = _tokens(runtime)
    clock = Clock()
    manager = TableManager(runtime, [CONFIG], clock=clock)
    with TestClient(build_app(runtime, [CONFIG], manager=manager)) as client:
        t = Client(client, tokens, clock)
        t.runtime = runtime
        yield t


def _start(t: Client) -> str:
    for account in ("alice", "bob", "carol"):
        t.post(f"/accounts/{account}/credit", "operator", {"amount": 10_000, "reference": account})
    t.post(f"/tables/{T}/shoe", "supervisor")
    t.post(f"/tables/{T}/seats", "operator", {"seat": 1, "account": "alice"})
    t.post(f"/tables/{T}/seats", "operator", {"seat": 3, "account": "bob"})
    refused = t.post(f"/tables/{T}/seats", "operator", {"seat": 2, "account": "alice"}, 409)
    assert refused["error"] == "seat_refused"
    opened = t.post(f"/tables/{T}/betting/open", "dealer")
    bets = [
        {"key": "a1", "account": "alice", "type": "main", "stake": 1000, "seat": 1},
        {"key": "a2", "account": "alice", "type": "pair", "stake": 100, "seat": 1},
        {"key": "b1", "account": "bob", "type": "main", "stake": 1000, "seat": 3},
        {"key": "c1", "account": "carol", "type": "behind", "stake": 500, "seat": 1},
        {"key": "c2", "account": "carol", "type": "behind", "stake": 500, "seat": 3},
        {"key": "x", "account": "bob", "type": "behind", "stake": 500, "seat": 3},
    ]
    results = t.post(f"/tables/{T}/bets", "operator", {"bets": bets})["results"]
    assert [r["status"] for r in results] == ["placed"] * 5 + ["refused"]
    assert results[-1]["error"] == "own_seat"
    t.post(f"/tables/{T}/betting/close", "dealer")
    round_id: str = opened["round_id"]
    return round_id


def test_a_blackjack_round_through_the_api(bj: Client) -> None:
    round_id = _start(bj)
    for card in ("8S", "5H", "AD", "8D"):  # seat 1, seat 3, dealer (an Ace), seat 1
        state = bj.card(card)
        assert state["round"]["next"]["kind"] == "card"
    state = bj.card("TC")  # seat 3: 5 T
    turn = state["round"]["turn"]
    assert turn["actors"] == ["seat:1"] and turn["deadline"]
    assert {"insurance", "split"} <= {m["action"] for m in turn["legal_actions"]["seat:1"]}
    assert state["round"]["view"]["dealer"]["cards"] == ["AD"]
    assert bj.act("seat:1", "hit", "bob", 403)["error"] == "wrong_player"
    assert bj.act("seat:3", "hit", "bob", 409)["error"] == "not_your_turn"
    assert bj.act("seat:1", "surrender", "alice", 409)["error"] == "illegal_decision"
    bj.act("seat:1", "insurance", "alice")
    answer = bj.act("seat:1", "split", "alice")
    assert answer["table"]["round"]["turn"]["actors"][0].startswith("behind:")
    follow = answer["table"]["round"]["turn"]["actors"][0]
    bj.act(follow, "accept", "carol")  # carol's bet behind seat 1 follows hand 2 too
    bj.card("3C")  # seat 1 hand 1: 8 3
    bj.act("seat:1", "double", "alice")  # carol's follow offer on the double: let it run out
    bj.clock.advance(1.0)
    bj.wait(lambda s: (s["round"]["next"] or {}).get("kind") == "card")
    bj.card("9H")  # hand 1: 8 3 9 = 20, doubled
    bj.card("7H")  # hand 2: 8 7 = 15
    bj.act("seat:1", "stand", "alice")
    # seat 3 (bob, 15) lets his timer run out: the rules stand a 15
    bj.clock.advance(1.0)
    state = bj.wait(lambda s: s["round"]["next"] and s["round"]["next"].get("code") == "DEALER")
    assert state["round"]["next"]["code"] == "DEALER"
    state = bj.card("6S")  # dealer A 6 = soft 17: stands
    assert state["round"]["phase"] == "settled", state["round"]
    assert [s["seat"] for s in state["seats"]] == [1]  # bob never acted: seat released
    detail = bj.get(f"/rounds/{round_id}")
    returned = {b["bet_id"]: b["returned"] for b in detail["bets"]}
    kinds = sorted(b["bet_id"].partition("~")[2] for b in detail["bets"])
    assert kinds == ["", "", "", "", "", "double1", "insurance", "split", "split"]
    # alice: hand 1 20 doubled beats 17 (2000 + 2000), hand 2 15 loses, insurance lost,
    # pair 8S 8D pays 11:1; carol behind seat 1: hand 1 wins 1000, split stake loses;
    # bob 15 and carol behind him lose
    assert sum(returned.values()) == 2000 + 2000 + 1200 + 1000
    assert detail["game"] == "blackjack"
    again = find_game("blackjack").recompute(CONFIG.rules, detail["settle_input"])
    assert {ln.stake_id: ln.returned for ln in again.lines} == returned
    balances = {
        a: bj.get(f"/accounts/{a}", "operator")["balance"] for a in ("alice", "bob", "carol")
    }
    assert balances == {"alice": 10_000 - 3600 + 5200, "bob": 9000, "carol": 10_000 - 1500 + 1000}
    _ledger_ok(bj.runtime)
    with bj.client.websocket_connect(f"/api/v1/public/tables/{T}/stream") as ws:
        public: list[dict[str, Any]] = []
        while not public or public[-1]["type"] != "round_settled":
            public.append(ws.receive_json())
    text = str(public)
    assert "alice" not in text and "carol" not in text and "stake" not in text
    assert any(e["type"] == "decision_awaited" for e in public)
    assert [e["data"]["action"] for e in public if e["type"] == "action_taken"][:2] == [
        "insurance",
        "split",
    ]


def test_a_restart_mid_round_voids_it_refunds_once_and_needs_a_new_shoe(
    make_runtime: Callable[..., Runtime],
) -> None:
    runtime = make_runtime()
    tokens = _tokens(runtime)
    clock = Clock()
    with TestClient(
        build_app(runtime, [CONFIG], manager=TableManager(runtime, [CONFIG], clock=clock))
    ) as client:
        t = Client(client, tokens, clock)
        round_id = _start(t)
        for card in ("8S", "5H", "6D", "8D", "TC"):
            t.card(card)
        t.act("seat:1", "split", "alice")
    with TestClient(
        build_app(runtime, [CONFIG], manager=TableManager(runtime, [CONFIG], clock=clock))
    ) as client:
        t = Client(client, tokens, clock)
        summary = t.summary()
        assert summary["round"]["phase"] == "voided" and summary["shoe"] is None
        detail = t.get(f"/rounds/{round_id}")
        assert {b["status"] for b in detail["bets"]} == {"refunded"}
        assert {b["returned"] == b["stake"] for b in detail["bets"]} == {True}
        assert len(detail["bets"]) == 6  # five bets and the split stake
        for account in ("alice", "bob", "carol"):
            assert t.get(f"/accounts/{account}", "operator")["balance"] == 10_000
        assert t.post(f"/tables/{T}/betting/open", "dealer", status=409)["error"] == "no_shoe"
        _ledger_ok(runtime)
