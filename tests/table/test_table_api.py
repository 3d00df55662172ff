"""The table through its HTTP and WebSocket API, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from audit.store import EventStore
from audit.verify import verify_database
from table_service.app import build_app
from table_service.models import Account, BetRow, LedgerEntry
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table.config import TableConfig
from table_service.table.service import TableManager
from tests.support.api_client import ApiClient

ROLES = ("dealer", "supervisor", "operator", "regulator")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
        self.lock = threading.Lock()

    def __call__(self) -> datetime:
        with self.lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += timedelta(seconds=seconds)


class Table(ApiClient):
    """A test client with a token per role and helpers for the common steps."""

    runtime: Runtime  # the studio's, set by the fixture that serves it

    def __init__(self, client: TestClient, tokens: dict[str, str], clock: Clock) -> None:
        super().__init__(client, tokens)
        self.clock = clock

    def card(self, card: str) -> dict[str, Any]:
        answer: dict[str, Any] = self.post("/tables/bac-1/cards", "supervisor", {"card": card})
        return answer

    def ready(self) -> None:
        self.post("/tables/bac-1/shoe", "supervisor")
        for card in ("2S", "3H", "4H"):
            self.card(card)

    def bets(self, *bets: tuple[str, str, str, int], status: int = 200) -> list[dict[str, Any]]:
        body = {"bets": [{"key": k, "account": a, "type": t, "stake": s} for k, a, t, s in bets]}
        results: list[dict[str, Any]] = self.post("/tables/bac-1/bets", "operator", body, status)[
            "results"
        ]
        return results


@pytest.fixture
def table(make_runtime: Callable[..., Runtime]) -> Iterator[Table]:
    runtime = make_runtime()
    tokens = {}
    with runtime.sessions.begin() as session:
        for role in ROLES:
            tokens[role] = add_principal(session, runtime.store, role, role, actor="test")
        tokens["other_dealer"] = add_principal(
            session, runtime.store, "d2", "dealer", table_id="bac-2", actor="test"
        )
    clock = Clock()
    config = TableConfig(
        table_id="bac-1",
        betting_seconds=20,
        bet_limits={"tie": {"min_stake": 100, "max_stake": 10_000}},
    )
    manager = TableManager(runtime, [config], clock=clock)
    app = build_app(runtime, [config], manager=manager)
    with TestClient(app) as client:
        t = Table(client, tokens, clock)
        t.runtime = runtime
        yield t


def _ledger_ok(runtime: Runtime) -> None:
    with runtime.sessions() as session:
        total = session.scalar(select(func.coalesce(func.sum(Account.balance), 0)))
        ledger = session.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0)))
        assert total == ledger
        per_bet = session.execute(
            select(LedgerEntry.bet_id, LedgerEntry.kind, func.count())
            .where(LedgerEntry.bet_id.is_not(None))
            .group_by(LedgerEntry.bet_id, LedgerEntry.kind)
        ).all()
        assert all(n == 1 for _, _, n in per_bet)
        for bet in session.scalars(select(BetRow)):
            kinds = {k for b, k, _ in per_bet if b == bet.bet_id}
            assert kinds == ({"stake", "return"} if bet.status != "open" else {"stake"})
        keys = {runtime.signer.key_id: runtime.signer.public_key}
        report = verify_database(session, keys, allow_unsigned_tail=True)  # the chain, unsealed
        assert report.ok, report.problem


def test_a_round_through_the_api(table: Table) -> None:
    table.ready()
    table.post("/accounts/alice/credit", "operator", {"amount": 10_000, "reference": "d1"})
    opened = table.post("/tables/bac-1/betting/open", "dealer")
    assert opened["game_number"] == 1
    results = table.bets(
        ("k1", "alice", "player", 1000),
        ("k2", "alice", "tie", 500),
        ("k3", "alice", "tie", 20_000),
        ("k4", "alice", "dragon", 9_000),
    )
    assert [r["status"] for r in results] == ["placed", "placed", "refused", "refused"]
    assert results[2]["error"] == "outside_limits"
    assert results[3]["error"] == "insufficient_funds"
    table.post("/tables/bac-1/betting/close", "dealer")
    for card in ("2S", "5H", "KD", "TC", "3S"):
        state = table.card(card)["table"]
    assert state["round"]["phase"] == "settled"
    assert state["round"]["outcome"]["winner"] == "tie"
    assert table.get("/accounts/alice", "operator")["balance"] == 10_000 - 1500 + 1000 + 4500
    detail = table.get(f"/rounds/{opened['round_id']}")
    assert {b["key"]: b["returned"] for b in detail["bets"]} == {"k1": 1000, "k2": 4500}
    assert table.get("/tables/bac-1/rounds")[0]["phase"] == "settled"
    _ledger_ok(table.runtime)


def test_a_retried_bet_is_placed_once(table: Table) -> None:
    table.ready()
    table.post("/accounts/bob/credit", "operator", {"amount": 5000, "reference": "d1"})
    assert (
        table.post("/accounts/bob/credit", "operator", {"amount": 5000, "reference": "d1"})[
            "duplicate"
        ]
        is True
    )
    table.post("/accounts/bob/credit", "operator", {"amount": 1, "reference": "d1"}, status=409)
    table.post("/tables/bac-1/betting/open", "dealer")
    first = table.bets(("same", "bob", "banker", 1000))[0]
    again = table.bets(("same", "bob", "banker", 1000), ("new", "bob", "player", 100))
    assert again[0] == {
        "key": "same",
        "status": "duplicate",
        "bet_id": first["bet_id"],
        "bet_status": "open",
        "round_id": "bac-1-s1-g1",
    }
    assert again[1]["status"] == "placed"
    body = {"bets": [{"key": "same", "account": "bob", "type": "banker", "stake": 2000}]}
    conflict = table.post("/tables/bac-1/bets", "operator", body, status=409)
    assert conflict["code"] == "idempotency_conflict" and conflict["keys"] == ["same"]
    twice = table.bets(("x", "bob", "player", 100), ("x", "bob", "player", 100))
    assert [r["status"] for r in twice] == ["placed", "duplicate"]
    assert table.get("/accounts/bob", "operator")["balance"] == 5000 - 1000 - 100 - 100
    _ledger_ok(table.runtime)


def test_a_retry_after_the_round_says_how_the_bet_ended(table: Table) -> None:
    """A retry whose answer was lost learns its bet's id and status from the record in any
    phase: settled with the round, and a key reused for another bet is still a conflict."""
    table.ready()
    table.post("/accounts/eve/credit", "operator", {"amount": 5000, "reference": "d"})
    opened = table.post("/tables/bac-1/betting/open", "dealer")
    first = table.bets(("late-answer", "eve", "banker", 1000), ("other", "eve", "tie", 100))
    table.post("/tables/bac-1/betting/close", "dealer")
    for card in ("2S", "5H", "KD", "TC", "3S"):
        state = table.card(card)["table"]
    assert state["round"]["phase"] == "settled"
    again = table.bets(("late-answer", "eve", "banker", 1000), ("other", "eve", "tie", 100))
    assert again == [
        {
            "key": key,
            "status": "duplicate",
            "bet_id": placed["bet_id"],
            "bet_status": "settled",
            "round_id": opened["round_id"],
        }
        for key, placed in zip(("late-answer", "other"), first, strict=True)
    ]
    body = {"bets": [{"key": "late-answer", "account": "eve", "type": "banker", "stake": 900}]}
    conflict = table.post("/tables/bac-1/bets", "operator", body, status=409)
    assert conflict["keys"] == ["late-answer"]
    _ledger_ok(table.runtime)


def test_betting_window_closes_on_the_clock(table: Table) -> None:
    table.ready()
    table.post("/accounts/c/credit", "operator", {"amount": 5000, "reference": "d"})
    table.post("/tables/bac-1/betting/open", "dealer")
    table.clock.advance(19.9)
    assert table.bets(("a", "c", "player", 100))[0]["status"] == "placed"
    table.clock.advance(0.2)
    refused = table.post(
        "/tables/bac-1/bets",
        "operator",
        {"bets": [{"key": "b", "account": "c", "type": "player", "stake": 100}]},
        status=409,
    )
    assert refused["error"] == "betting_closed"
    with table.runtime.sessions() as session:
        assert session.scalar(select(func.count()).select_from(BetRow)) == 1


def test_a_window_that_ran_out_while_the_service_was_down_is_closed_on_restart(
    table: Table,
) -> None:
    """The countdown is recorded, not kept in memory: a restart after the deadline closes
    betting at once (as the timer, for the countdown), an operator's retry then learns
    which of its bets were in and which are refused, and a request that never reached the
    log is refused whole."""
    table.ready()
    table.post("/accounts/c/credit", "operator", {"amount": 5000, "reference": "d"})
    opened = table.post("/tables/bac-1/betting/open", "dealer")
    placed = table.bets(("in", "c", "player", 100))[0]
    table.clock.advance(25)  # the service is "down" past the 20 s window
    runtime = table.runtime
    config = TableConfig(table_id="bac-1", betting_seconds=20)
    app = build_app(runtime, [config], manager=TableManager(runtime, [config], clock=table.clock))
    with TestClient(app) as client:
        again = Table(client, table.tokens, table.clock)
        state = again.get("/tables/bac-1", "dealer")
        for _ in range(200):  # the restart's timer fires at once; a generous bound
            if state["round"]["phase"] != "betting":
                break
            threading.Event().wait(0.05)
            state = again.get("/tables/bac-1", "dealer")
        assert state["round"]["round_id"] == opened["round_id"]
        assert state["round"]["phase"] == "dealing"
        retry = again.bets(("in", "c", "player", 100))[0]
        assert retry["status"] == "duplicate" and retry["bet_id"] == placed["bet_id"]
        # a retry holding the placed bet and one never placed: each answered on its own
        # (a whole-request 409 would say that none of them stand)
        mixed = again.bets(("in", "c", "player", 100), ("late", "c", "player", 100))
        assert mixed[0]["status"] == "duplicate" and mixed[0]["bet_id"] == placed["bet_id"]
        assert mixed[1]["status"] == "refused" and mixed[1]["error"] == "betting_closed"
        body = {"bets": [{"key": "never", "account": "c", "type": "player", "stake": 100}]}
        assert again.post("/tables/bac-1/bets", "operator", body, 409)["error"] == (
            "betting_closed"
        )
        assert again.get("/accounts/c", "operator")["balance"] == 4900
    with runtime.sessions() as session:
        assert session.scalar(select(func.count()).select_from(BetRow)) == 1
        closes = [
            e
            for e in EventStore.read(session, round_id=opened["round_id"])
            if e.type == "betting_closed"
        ]
    assert [(e.actor, e.payload.get("reason")) for e in closes] == [("system:timer", "countdown")]
    _ledger_ok(runtime)


def test_bets_racing_the_close_are_in_or_refused_never_half(table: Table) -> None:
    table.ready()
    table.post("/accounts/r/credit", "operator", {"amount": 10**7, "reference": "d"})
    table.post("/tables/bac-1/betting/open", "dealer")
    answers: list[tuple[str, int, Any]] = []

    def operator(n: int) -> None:
        for i in range(15):
            body = {
                "bets": [
                    {"key": f"{n}-{i}-{j}", "account": "r", "type": "player", "stake": 100}
                    for j in range(5)
                ]
            }
            response = table.client.post(
                "/api/v1/tables/bac-1/bets", json=body, headers=table.h("operator")
            )
            answers.append((f"{n}-{i}", response.status_code, response.json()))

    threads = [threading.Thread(target=operator, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    table.post("/tables/bac-1/betting/close", "dealer")
    for t in threads:
        t.join()
    placed = {
        r["bet_id"]
        for _, code, body in answers
        if code == 200
        for r in body["results"]
        if r["status"] == "placed"
    }
    refused = [body for _, code, body in answers if code != 200]
    assert all(body["error"] == "betting_closed" for body in refused)
    with table.runtime.sessions() as session:
        stored = set(session.scalars(select(BetRow.bet_id)))
    assert stored == placed
    for card in ("9S", "2H", "KD", "5C"):
        table.card(card)
    _ledger_ok(table.runtime)


def test_void_refunds_once_and_roles_are_enforced(table: Table) -> None:
    table.ready()
    table.post("/accounts/v/credit", "operator", {"amount": 3000, "reference": "d"})
    table.post("/tables/bac-1/betting/open", "dealer")
    table.bets(("a", "v", "player", 1000), ("b", "v", "banker", 2000))
    table.post("/tables/bac-1/betting/close", "dealer")
    table.post("/tables/bac-1/round/void", "dealer", {"reason": "x"}, status=403)
    table.post("/tables/bac-1/betting/open", "operator", status=403)
    table.post("/tables/bac-1/betting/open", "other_dealer", status=403)
    table.post(
        "/tables/bac-1/bets",
        "dealer",
        {"bets": [{"key": "z", "account": "v", "type": "player", "stake": 100}]},
        status=403,
    )
    table.post("/tables/bac-1/round/void", "supervisor", {"reason": "studio error"})
    again = table.post("/tables/bac-1/round/void", "supervisor", {"reason": "again"}, status=409)
    assert again["error"] == "wrong_phase"
    assert table.get("/accounts/v", "operator")["balance"] == 3000
    assert table.get("/tables/bac-1", "dealer")["shoe"] is None
    _ledger_ok(table.runtime)


def test_missed_scan_procedure_through_the_api(table: Table) -> None:
    table.ready()
    table.post("/tables/bac-1/betting/open", "dealer")
    table.post("/tables/bac-1/betting/close", "dealer")
    table.card("2S")
    raised = table.post(
        "/tables/bac-1/incidents", "dealer", {"kind": "missed_scan", "details": {"index": 1}}
    )
    assert raised["blocking"] is True
    for card in ("KD", "TC", "3S"):
        table.card(card)
    incidents = table.get("/incidents?status=open", "supervisor")
    assert [i["kind"] for i in incidents] == ["missed_scan"]
    table.post(
        f"/tables/bac-1/incidents/{raised['incident_id']}/resolve",
        "dealer",
        {"note": "x"},
        status=403,
    )
    done = table.post(
        f"/tables/bac-1/incidents/{raised['incident_id']}/resolve",
        "supervisor",
        {"note": "5H entered from the camera", "entered": [{"card": "5H", "index": 1}]},
    )
    assert done["table"]["round"]["phase"] == "settled"
    assert done["table"]["round"]["cards"] == ["2S", "5H", "KD", "TC", "3S"]
    resolved = table.get("/incidents?status=resolved", "supervisor")
    assert resolved[0]["resolved_by"] == "supervisor:supervisor"


def test_restart_rebuilds_the_same_table(table: Table) -> None:
    table.ready()
    table.post("/accounts/z/credit", "operator", {"amount": 3000, "reference": "d"})
    table.post("/tables/bac-1/betting/open", "dealer")
    table.bets(("a", "z", "player", 1000))
    table.post("/tables/bac-1/betting/close", "dealer")
    table.card("2S")
    before = table.get("/tables/bac-1", "dealer")
    runtime = table.runtime
    config = TableConfig(
        table_id="bac-1",
        betting_seconds=20,
        bet_limits={"tie": {"min_stake": 100, "max_stake": 10_000}},
    )
    app = build_app(runtime, [config], manager=TableManager(runtime, [config], clock=table.clock))
    with TestClient(app) as client:
        again = Table(client, table.tokens, table.clock)
        assert again.get("/tables/bac-1", "dealer") == before
        for card in ("5H", "KD", "TC", "3S"):
            again.card(card)
        assert again.get("/accounts/z", "operator")["balance"] == 3000


def test_stream_resumes_without_gaps_and_public_view_hides_money(table: Table) -> None:
    token = table.tokens["regulator"]
    table.ready()
    with table.client.websocket_connect(f"/api/v1/tables/bac-1/stream?token={token}") as ws:
        first = [ws.receive_json() for _ in range(5)]
    seqs = [e["seq"] for e in first]
    assert seqs == sorted(seqs)
    table.post("/accounts/p/credit", "operator", {"amount": 3000, "reference": "d"})
    table.post("/tables/bac-1/betting/open", "dealer")
    table.bets(("a", "p", "player", 1000))
    table.post("/tables/bac-1/betting/close", "dealer")
    for card in ("9S", "2H", "KD", "5C"):
        table.card(card)
    url = f"/api/v1/tables/bac-1/stream?token={token}&after_seq={seqs[-1]}"
    with table.client.websocket_connect(url) as ws:
        rest: list[dict[str, Any]] = []
        while not rest or rest[-1]["type"] != "round_settled":
            rest.append(ws.receive_json())
    all_seqs = seqs + [e["seq"] for e in rest]
    with table.runtime.sessions() as session:
        logged = [e.seq for e in EventStore.read(session, table_id="bac-1")]
    assert all_seqs == logged[: len(all_seqs)]  # in order, nothing missed, nothing twice
    assert any(e["type"] == "bets_placed" for e in rest)
    with table.client.websocket_connect("/api/v1/public/tables/bac-1/stream") as ws:
        public: list[dict[str, Any]] = []
        while not public or public[-1]["type"] != "round_settled":
            public.append(ws.receive_json())
    text = str(public)
    assert "bets_placed" not in text and "'p'" not in text and "actor" not in text
    assert [e["data"]["card"] for e in public if e["type"] == "card_dealt"] == [
        "9S",
        "2H",
        "KD",
        "5C",
    ]
    from starlette.websockets import WebSocketDisconnect

    with (
        pytest.raises(WebSocketDisconnect) as closed,
        table.client.websocket_connect("/api/v1/tables/bac-1/stream?token=lt_forged") as ws,
    ):
        ws.receive_json()
    assert closed.value.code == 4401


def test_tables_run_side_by_side(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    with runtime.sessions.begin() as session:
        tokens = {
            r: add_principal(session, runtime.store, r, r, actor="t")
            for r in ("supervisor", "dealer", "operator")
        }
    configs = [TableConfig(table_id=f"bac-{n}", betting_seconds=60) for n in (1, 2, 3)]
    with TestClient(build_app(runtime, configs)) as client:
        headers = {r: {"Authorization": f"Bearer {t}"} for r, t in tokens.items()}

        def post(path: str, role: str, body: Any = None) -> dict[str, Any]:
            response = client.post(f"/api/v1{path}", json=body, headers=headers[role])
            assert response.status_code == 200, response.text
            answer: dict[str, Any] = response.json()
            return answer

        post("/accounts/m/credit", "operator", {"amount": 10_000, "reference": "d"})

        def play(table_id: str) -> None:
            post(f"/tables/{table_id}/shoe", "supervisor")
            for card in ("AS", "KH"):
                post(f"/tables/{table_id}/cards", "supervisor", {"card": card})
            post(f"/tables/{table_id}/betting/open", "dealer")
            post(
                f"/tables/{table_id}/bets",
                "operator",
                {"bets": [{"key": table_id, "account": "m", "type": "player", "stake": 1000}]},
            )
            post(f"/tables/{table_id}/betting/close", "dealer")
            for card in ("9S", "2H", "KD", "5C"):
                post(f"/tables/{table_id}/cards", "supervisor", {"card": card})

        threads = [threading.Thread(target=play, args=(c.table_id,)) for c in configs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        states = [
            client.get(f"/api/v1/tables/{c.table_id}", headers=headers["dealer"]).json()
            for c in configs
        ]
        assert [s["round"]["phase"] for s in states] == ["settled"] * 3
        balance = client.get("/api/v1/accounts/m", headers=headers["operator"]).json()
        assert balance["balance"] == 10_000 + 3 * 1000
    _ledger_ok(runtime)
