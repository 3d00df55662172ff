"""Live Xì Dách through HTTP and WebSocket, on SQLite and PostgreSQL: a round, the
public stream's privacy, and a restart mid-round."""

from __future__ import annotations

import json
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

T = "xd-1"
CONFIG = TableConfig(
    table_id=T,
    game="xidach",
    profile="forced-draw",
    betting_seconds=15,
    limits={"min_stake": 100, "max_stake": 5000},
)
HIDDEN = ("9D", "8S", "TC")  # seat 1's hidden hand, the banker's face-down card
CARDS = ("TS", "9D", "TC", "7H", "8S", "7D")  # counter-clockwise: seat 2, seat 1, banker


class Client(ApiClient):
    runtime: Runtime  # the studio's, set by the fixture that serves it

    def act(
        self, actor: str, action: str, account: str, status: int = 200, **kw: Any
    ) -> dict[str, Any]:
        body = {"actor": actor, "action": action, "account": account, **kw}
        # the house banker's published move is confirmed by the dealer, never an operator
        role = "dealer" if actor == "banker" else "operator"
        answer: dict[str, Any] = self.post(f"/tables/{T}/actions", role, body, status)
        return answer


def _tokens(runtime: Any) -> dict[str, str]:
    with runtime.sessions.begin() as session:
        return {r: add_principal(session, runtime.store, r, r, actor="test") for r in ROLES}


def _start(t: Client) -> str:
    for account in ("alice", "bob"):
        t.post(f"/accounts/{account}/credit", "operator", {"amount": 10_000, "reference": account})
    t.post(f"/tables/{T}/shoe", "supervisor")
    t.post(f"/tables/{T}/seats", "operator", {"seat": 1, "account": "alice"})
    t.post(f"/tables/{T}/seats", "operator", {"seat": 2, "account": "bob"})
    opened = t.post(f"/tables/{T}/betting/open", "dealer")
    bets = [
        {"key": "a1", "account": "alice", "type": "hidden", "stake": 1000, "seat": 1},
        {"key": "b1", "account": "bob", "type": "main", "stake": 1000, "seat": 2},
    ]
    results = t.post(f"/tables/{T}/bets", "operator", {"bets": bets})["results"]
    assert [r["status"] for r in results] == ["placed", "placed"]
    t.post(f"/tables/{T}/betting/close", "dealer")
    round_id: str = opened["round_id"]
    return round_id


@pytest.fixture
def xd(make_runtime: Callable[..., Runtime]) -> Iterator[Client]:
    runtime = make_runtime()
    manager = TableManager(runtime, [CONFIG], clock=Clock())
    with TestClient(build_app(runtime, [CONFIG], manager=manager)) as client:
        t = Client(client, _tokens(runtime))
        t.runtime = runtime
        yield t


def test_a_forced_draw_round_and_the_public_stream_shows_no_hidden_card_early(xd: Client) -> None:
    with xd.client.websocket_connect(f"/api/v1/public/tables/{T}/stream") as ws:
        round_id = _start(xd)
        for card in CARDS:
            state = xd.post(f"/tables/{T}/cards", "supervisor", {"card": card})["table"]
        public_view = state["round"]["view"]
        assert public_view["banker"]["cards"][0] == "XX"
        assert xd.act("seat:1", "stand", "alice", 409)["error"] == "not_your_turn"
        xd.act("seat:2", "stand", "bob")  # counter-clockwise: seat 2 first (17)
        xd.act("seat:1", "stand", "alice")  # 17, hidden
        turn = xd.get(f"/tables/{T}")["round"]["turn"]
        assert turn["actors"] == ["banker"]
        assert [m["action"] for m in turn["legal_actions"]["banker"]] == ["check"]
        assert xd.act("banker", "stand", "banker", 409)["error"] == "house_policy"
        xd.act("banker", "check", "banker", target="all")  # the house at 17: check all
        public: list[dict[str, Any]] = []
        while not public or public[-1]["type"] != "round_settled":
            public.append(ws.receive_json())
    reveals = [(i, e) for i, e in enumerate(public) if e["type"] == "cards_revealed"]
    shown_at = {c["card"]: i for i, e in reveals for c in e["data"]["cards"]}
    assert set(shown_at) == set(HIDDEN)  # each hidden card is turned for the public once
    for code in HIDDEN:
        before = str(public[: shown_at[code]])
        assert f"'{code}'" not in before, (code, before)  # and never shown before that
    moves = [(i, e["data"]) for i, e in enumerate(public) if e["type"] == "action_taken"]
    last_punter = max(i for i, m in moves if m["actor"] != "banker")
    check = next(i for i, m in moves if m["actor"] == "banker")
    assert last_punter < shown_at["TC"] < check  # the hole card: turned at the banker's turn
    assert check < shown_at["9D"] == shown_at["8S"]  # the hidden hand: once it is settled
    dealt = [e["data"]["card"] for e in public if e["type"] == "card_dealt"]
    assert dealt == ["TS", None, None, "7H", None, "7D"]
    assert "alice" not in str(public) and "stake" not in str(public)
    staff = xd.client.websocket_connect(
        f"/api/v1/tables/{T}/stream?token={xd.tokens['supervisor']}"
    )
    with staff as ws:
        internal: list[dict[str, Any]] = []
        while not internal or internal[-1]["type"] != "round_settled":
            internal.append(ws.receive_json())
    staff_dealt = [e["payload"]["card"] for e in internal if e["type"] == "card_dealt"]
    assert staff_dealt == list(CARDS)  # the staff stream and the log hold the real cards
    detail = xd.get(f"/rounds/{round_id}")
    returned = {b["bet_id"]: b["returned"] for b in detail["bets"]}
    assert sorted(returned.values()) == [1000, 1000]  # 17 against 17: both push
    again = find_game("xidach").recompute(CONFIG.rules, detail["settle_input"])
    assert {ln.stake_id: ln.returned for ln in again.lines} == returned
    _ledger_ok(xd.runtime)


def test_a_restart_mid_round_voids_it_and_refunds_once(
    make_runtime: Callable[..., Runtime],
) -> None:
    runtime = make_runtime()
    tokens = _tokens(runtime)
    clock = Clock()
    with TestClient(
        build_app(runtime, [CONFIG], manager=TableManager(runtime, [CONFIG], clock=clock))
    ) as client:
        t = Client(client, tokens)
        round_id = _start(t)
        for card in CARDS[:4]:
            t.post(f"/tables/{T}/cards", "supervisor", {"card": card})
    with TestClient(
        build_app(runtime, [CONFIG], manager=TableManager(runtime, [CONFIG], clock=clock))
    ) as client:
        t = Client(client, tokens)
        summary = t.get(f"/tables/{T}")
        assert summary["round"]["phase"] == "voided" and summary["shoe"] is None
        detail = t.get(f"/rounds/{round_id}")
        assert {b["status"] for b in detail["bets"]} == {"refunded"}
        for account in ("alice", "bob"):
            assert t.get(f"/accounts/{account}", "operator")["balance"] == 10_000
        _ledger_ok(runtime)


def test_the_owner_sees_its_own_face_down_cards_alike_on_every_read(xd: Client) -> None:
    """Issue 30 Q2: the operator whose account plays the hidden seat saw its cards in the
    summary's ``cards`` and on its stream, but ``XX`` in the game's own layout (``view``):
    every read path shows a player's own face-down cards, and nobody else's."""
    round_id = _start(xd)
    for card in CARDS:
        xd.post(f"/tables/{T}/cards", "supervisor", {"card": card})
    summary = xd.get(f"/tables/{T}", "operator")["round"]
    assert {"9D", "8S"} <= set(summary["cards"]) and "TC" not in summary["cards"]
    own = next(h for h in summary["view"]["hands"] if h["seat"] == 1)
    assert own["cards"] == ["9D", "8S"], summary["view"]
    assert summary["view"]["banker"]["cards"][0] == "XX"  # the house's hole card: nobody's
    detail = xd.get(f"/rounds/{round_id}", "operator")
    assert {"9D", "8S"} <= set(detail["cards"]) and "TC" not in detail["cards"]


ROOM = TableConfig(
    table_id="xds-1",
    game="xidach",
    profile="room",
    betting_seconds=15,
    game_rules={"banker": "seated"},
    limits={"min_stake": 100, "max_stake": 2000},
    bet_limits={"bank": {"min_stake": 100, "max_stake": 10**9}},
)


def open_seated_bank_round(xd: Client, t: str) -> tuple[str, list[dict[str, Any]]]:
    """A round at ``t`` with alice on seat 1 and a seated banker ("bank") on seat 9, each
    funded and bet: its id and the bets' answers."""
    for account in ("alice", "bank"):
        credit = {"amount": 50_000, "reference": account}
        xd.post(f"/accounts/{account}/credit", "operator", credit)
    xd.post(f"/tables/{t}/shoe", "supervisor")
    xd.post(f"/tables/{t}/seats", "operator", {"seat": 1, "account": "alice"})
    xd.post(f"/tables/{t}/seats", "operator", {"seat": 9, "account": "bank"})
    round_id: str = xd.post(f"/tables/{t}/betting/open", "dealer")["round_id"]
    bets = [
        {"key": "a1", "account": "alice", "type": "main", "stake": 1000, "seat": 1},
        {"key": "k1", "account": "bank", "type": "bank", "stake": 10_000, "seat": 9},
    ]
    results: list[dict[str, Any]] = xd.post(f"/tables/{t}/bets", "operator", {"bets": bets})[
        "results"
    ]
    return round_id, results


def test_at_a_seated_bank_the_dealer_reads_the_hole_card_nowhere_before_it_is_turned(
    make_runtime: Callable[..., Runtime],
) -> None:
    """Issue 30 Q1, through the real app: the dealer's stream, ``GET /tables/{t}``, the
    round's detail and the dealer console show the seated banker's face-down card as
    ``null``/``XX`` (a round's detail is not the dealer's to read); the banker's operator
    sees it, and so does the supervisor."""
    t, runtime = "xds-1", make_runtime()
    manager = TableManager(runtime, [ROOM], clock=Clock())
    with TestClient(build_app(runtime, [ROOM], manager=manager)) as client:
        xd = Client(client, _tokens(runtime))
        round_id, results = open_seated_bank_round(xd, t)
        assert [r["status"] for r in results] == ["placed", "placed"], results
        token = xd.tokens["dealer"]
        with client.websocket_connect(f"/api/v1/tables/{t}/stream?token={token}") as ws:
            consoles = []  # the dealer console after each card (its "last card read" too)
            for card in ("TS", "6C", "TD", "KD"):  # the banker: 6C face down, KD up
                xd.post(f"/tables/{t}/cards", "supervisor", {"card": card})
                consoles.append(xd.get(f"/console/tables/{t}/view", "dealer"))
            frames: list[dict[str, Any]] = []
            while len([f for f in frames if f["type"] == "card_dealt"]) < 4:
                frames.append(ws.receive_json())
        dealer = [
            json.dumps(frames),
            json.dumps(xd.get(f"/tables/{t}", "dealer")),
            json.dumps(consoles),
        ]
        assert [i for i, text in enumerate(dealer) if '"6C"' in text] == []
        xd.get(f"/rounds/{round_id}", "dealer", 403)  # a round's detail: not the dealer's
        # the pit (the dealer's layout: every card); the banker's own operator (its hand)
        for who, layout in (("supervisor", "dealer_view"), ("operator", "view")):
            summary = xd.get(f"/tables/{t}", who)["round"]
            assert summary["cards"][1] == "6C", (who, summary)
            assert summary[layout]["banker"]["cards"][0] == "6C", (who, summary[layout])
