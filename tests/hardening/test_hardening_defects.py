"""Regression tests for the eight defects a hostile-client review found (issue 18).

Each test sends what the attacker sent and asserts the answer a client is owed; on the
code before the fix each of them failed (a 500, a stalled write, money that moved wrongly,
a read across tenants). They run on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, text, update
from sqlalchemy.exc import IntegrityError
from starlette.websockets import WebSocketDisconnect

from table_service.app import build_app
from table_service.models import Account, BetRow, LedgerEntry
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table.config import TableConfig
from table_service.table.service import TableManager
from table_service.table.wallet import Transfer, transfer

TABLES = ("bac-1", "bac-2")


class Api:
    def __init__(self, client: TestClient, tokens: dict[str, str], runtime: Any) -> None:
        self.client = client
        self.tokens = tokens
        self.runtime = runtime

    def h(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def call(self, method: str, path: str, who: str, body: Any = None, **kw: Any) -> Any:
        return self.client.request(method, f"/api/v1{path}", json=body, headers=self.h(who), **kw)

    def ok(self, method: str, path: str, who: str, body: Any = None) -> Any:
        response = self.call(method, path, who, body)
        assert response.status_code in (200, 201), response.text
        return response.json()

    def refused(self, method: str, path: str, who: str, body: Any, status: int) -> dict[str, Any]:
        response = self.call(method, path, who, body)
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/problem+json"
        problem: dict[str, Any] = response.json()
        assert {"type", "title", "status", "detail", "code"} <= set(problem)
        assert problem["status"] == status
        return problem

    def ready_round(self) -> None:
        self.ok("POST", "/tables/bac-1/shoe", "supervisor")
        for card in ("2S", "3H", "4H"):
            self.ok("POST", "/tables/bac-1/cards", "supervisor", {"card": card})
        self.ok("POST", "/tables/bac-1/betting/open", "dealer")


@pytest.fixture
def api(make_runtime: Callable[..., Runtime]) -> Iterator[Api]:
    runtime = make_runtime(sqlite_busy_timeout_ms=3000)
    tokens: dict[str, str] = {}
    with runtime.sessions.begin() as session:
        for role in ("dealer", "supervisor", "regulator", "operator", "admin"):
            tokens[role] = add_principal(session, runtime.store, role, role, actor="test")
        tokens["operator2"] = add_principal(
            session, runtime.store, "operator2", "operator", actor="test"
        )
        tokens["bound"] = add_principal(
            session, runtime.store, "d-bac-2", "dealer", table_id="bac-2", actor="test"
        )
    configs = [TableConfig(table_id=t, betting_seconds=600) for t in TABLES]
    app = build_app(runtime, configs, manager=TableManager(runtime, configs), with_readers=False)
    with TestClient(app) as client:
        yield Api(client, tokens, runtime)


def _ledger_matches(runtime: Any) -> None:
    with runtime.reads() as session:
        total = session.scalar(select(func.coalesce(func.sum(Account.balance), 0)))
        ledger = session.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0)))
        assert total == ledger
        for balance in session.scalars(select(Account.balance)):
            assert isinstance(balance, int)


# 1 -- anonymous readers stall the database --------------------------------------------------
def test_1_an_open_read_transaction_never_blocks_a_write(api: Api) -> None:
    """A replay's (or any GET's) read transaction takes no write lock: with one held open,
    a credit commits at once and an authenticated read answers."""
    with api.runtime.reads() as session:
        session.execute(text("SELECT count(*) FROM audit_events")).scalar()  # snapshot open
        started = time.perf_counter()
        api.ok("POST", "/accounts/alice/credit", "operator", {"amount": 500, "reference": "r1"})
        api.ok("GET", "/tables", "regulator")
        elapsed = time.perf_counter() - started
    # A write queued behind the reader would wait out SQLite's busy timeout (10 s) and
    # fail; the bound is well short of that, and far above a loaded machine's few hundred ms.
    assert elapsed < 8.0, f"write waited {elapsed:.1f}s behind a reader"


def test_1_replays_are_paged_and_public_subscribers_are_limited(
    make_runtime: Callable[..., Runtime],
) -> None:
    from table_service.table.stream import REPLAY_PAGE

    runtime = make_runtime(stream_max_public_per_address=2)
    with runtime.sessions.begin() as session:
        token = add_principal(session, runtime.store, "op", "operator", actor="test")
    configs = [TableConfig(table_id="bac-1")]
    app = build_app(runtime, configs, manager=TableManager(runtime, configs), with_readers=False)
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {token}"}
        # Events on the table: more than two replay pages of them.
        supervisor = None
        with runtime.sessions.begin() as session:
            supervisor = add_principal(session, runtime.store, "sup", "supervisor", actor="t")
        sup = {"Authorization": f"Bearer {supervisor}"}
        n = 0
        while n < 2 * REPLAY_PAGE + 10:
            client.post("/api/v1/tables/bac-1/shoe/change", json={"reason": "x"}, headers=sup)
            client.post("/api/v1/tables/bac-1/shoe", headers=sup)
            n += 2
        with runtime.reads() as session:
            expected = session.scalar(
                text("SELECT count(*) FROM audit_events WHERE table_id = 'bac-1'")
            )
        url = "/api/v1/public/tables/bac-1/stream"
        with client.websocket_connect(url) as one, client.websocket_connect(url) as two:
            seqs = [one.receive_json()["seq"] for _ in range(expected)]
            assert seqs == sorted(set(seqs)) and len(seqs) == expected
            assert two.receive_json()["seq"] == seqs[0]
            with (
                pytest.raises(WebSocketDisconnect) as refused,
                client.websocket_connect(url) as three,
            ):
                three.receive_json()
            assert refused.value.code == 4429
        # The limit counts subscribers at once: both left, so a new one is admitted.
        with client.websocket_connect(url) as again:
            assert again.receive_json()["seq"] == seqs[0]
        assert client.get("/api/v1/whoami", headers=headers).status_code == 200


# 2 -- one dealer request breaks reads for everyone ------------------------------------------
def test_2_deep_or_huge_incident_details_are_refused_and_reads_stay_up(api: Api) -> None:
    deep: Any = {"x": 1}
    for _ in range(500):
        deep = {"d": deep}
    body = {"kind": "other", "details": deep}
    api.refused("POST", "/tables/bac-1/incidents", "dealer", body, 422)
    body = {"kind": "other", "details": {"d": {"d": {"d": {"d": {"d": 1}}}}}}
    api.refused("POST", "/tables/bac-1/incidents", "dealer", body, 422)
    wide = {"kind": "other", "details": {"text": "x" * 5000}}
    assert api.refused("POST", "/tables/bac-1/incidents", "dealer", wide, 422)["errors"]
    huge = {"kind": "other", "details": {"text": "x" * 10_000_000}}
    api.refused("POST", "/tables/bac-1/incidents", "dealer", huge, 413)
    fine = {"kind": "other", "details": {"seat": 3, "note": "a card on the floor"}}
    api.ok("POST", "/tables/bac-1/incidents", "dealer", fine)
    for who in ("dealer", "supervisor", "regulator", "admin"):
        assert api.call("GET", "/tables", who).status_code == 200
        assert api.call("GET", "/tables/bac-1", who).status_code == 200
    for who in ("dealer", "supervisor", "regulator"):
        incidents = api.ok("GET", "/incidents", who)
        assert [i["details"]["seat"] for i in incidents] == [3]


# 3 -- a balance past 2^63-1 becomes a float ---------------------------------------------------
def test_3_balances_are_bounded_in_the_api_and_in_the_database(api: Api) -> None:
    big = 2**63
    api.refused("POST", "/accounts/a/credit", "operator", {"amount": big, "reference": "r"}, 422)
    limit = api.runtime.settings.max_amount
    over = {"amount": limit + 1, "reference": "r"}
    api.refused("POST", "/accounts/a/credit", "operator", over, 422)
    max_balance = api.runtime.settings.max_balance
    credits = max_balance // limit
    # The first and the last of the credits that fill the account go through the API; the
    # ones between through the wallet's transfer, the function the route hands each credit
    # to (the same checks, lock and log), by the same operator: 1,000 requests took 7-8 s
    # of CPU a backend, and what is asserted of the route is at the limit, below.
    api.ok("POST", "/accounts/a/credit", "operator", {"amount": limit, "reference": "f0"})
    for i in range(1, credits - 1):
        transfer(api.runtime, Transfer("a", limit, f"f{i}", "credit"), actor="operator:operator")
    last = {"amount": limit, "reference": f"f{credits - 1}"}
    assert api.ok("POST", "/accounts/a/credit", "operator", last)["balance"] == max_balance
    problem = api.refused(
        "POST", "/accounts/a/credit", "operator", {"amount": 1, "reference": "one-more"}, 409
    )
    assert problem["code"] == "balance_limit"
    debit = api.ok("POST", "/accounts/a/debit", "operator", {"amount": 7, "reference": "d"})
    assert debit["balance"] == max_balance - 7
    assert api.ok("GET", "/accounts/a", "operator")["balance"] == max_balance - 7
    _ledger_matches(api.runtime)
    with pytest.raises(IntegrityError), api.runtime.sessions.begin() as session:
        session.execute(update(Account).values(balance=2**62))  # the CHECK holds the line


# 4 -- 500s where a 4xx is due -------------------------------------------------------------------
def test_4_out_of_range_and_malformed_input_is_a_4xx(api: Api) -> None:
    for path in (
        f"/audit/events?after_seq={2**63}",
        f"/tables/bac-1/rounds?before_seq={2**63}",
        f"/tables/bac-1/rounds?before_seq={10**30}",
    ):
        api.refused("GET", path, "regulator", None, 422)
    credit = {"amount": 2**53, "reference": "r"}
    api.refused("POST", "/accounts/a/credit", "operator", credit, 422)
    for raw in (
        b'{"amount": NaN, "reference": "r"}',
        b'{"amount": Infinity, "reference": "r"}',
        b'{"amount": 5, "reference": "\\ud800"}',
        b'{"kind": "other", "details": {"\\udfff": 1}}',
        b"\xff\xfe",
    ):
        response = api.client.post(
            "/api/v1/accounts/a/credit",
            content=raw,
            headers={**api.h("operator"), "content-type": "application/json"},
        )
        assert response.status_code == 422, (raw, response.text)
        assert response.json()["code"] == "invalid_json"
    floats = {"kind": "other", "details": {"x": 1.5}}
    api.refused("POST", "/tables/bac-1/incidents", "dealer", floats, 422)
    # the connection is still good after all that
    assert api.call("GET", "/whoami", "operator").status_code == 200


def test_4_websocket_after_seq_out_of_range_closes_with_4400(api: Api) -> None:
    for url in (
        f"/api/v1/public/tables/bac-1/stream?after_seq={2**63}",
        "/api/v1/public/tables/bac-1/stream?after_seq=-1",
        f"/api/v1/tables/bac-1/stream?after_seq={2**64}&token={api.tokens['regulator']}",
    ):
        with pytest.raises(WebSocketDisconnect) as closed, api.client.websocket_connect(url) as ws:
            ws.receive_json()
        assert closed.value.code == 4400, url


# 5 -- loose money types -----------------------------------------------------------------------
@pytest.mark.parametrize("stake", [100.0, 1e3, "100", True, None, -100, 0, [100]])
def test_5_only_a_json_integer_is_money(api: Api, stake: Any) -> None:
    api.ok("POST", "/accounts/p/credit", "operator", {"amount": 10_000, "reference": "f"})
    api.ready_round()
    bet = {"bets": [{"key": "k", "account": "p", "type": "player", "stake": stake}]}
    api.refused("POST", "/tables/bac-1/bets", "operator", bet, 422)
    credit = {"amount": stake, "reference": "c"}
    api.refused("POST", "/accounts/p/credit", "operator", credit, 422)
    with api.runtime.reads() as session:
        assert session.scalar(select(func.count()).select_from(BetRow)) == 0
    assert api.ok("GET", "/accounts/p", "operator")["balance"] == 10_000


def test_5_a_boolean_credit_adds_nothing(api: Api) -> None:
    api.refused("POST", "/accounts/p/credit", "operator", {"amount": True, "reference": "t"}, 422)
    api.refused("GET", "/accounts/p", "operator", None, 404)


# 6 -- role and tenant gaps -----------------------------------------------------------------------
def test_6_a_dealer_report_of_two_exposed_cards_pauses_for_a_supervisor(api: Api) -> None:
    api.ok("POST", "/accounts/p/credit", "operator", {"amount": 10_000, "reference": "f"})
    api.ready_round()
    api.ok(
        "POST",
        "/tables/bac-1/bets",
        "operator",
        {"bets": [{"key": "k", "account": "p", "type": "player", "stake": 1000}]},
    )
    report = {"kind": "cards_exposed", "details": {"count": 2}}
    answer = api.ok("POST", "/tables/bac-1/incidents", "dealer", report)
    table = answer["table"]
    assert table["paused"] is True and table["round"]["phase"] == "betting"
    assert table["shoe"] is not None  # the shoe did not end on a dealer's word
    api.refused("POST", "/tables/bac-1/round/void", "dealer", {"reason": "x"}, 403)
    voided = api.ok("POST", "/tables/bac-1/round/void", "supervisor", {"reason": "confirmed"})
    assert voided["table"]["round"]["phase"] == "voided"
    assert api.ok("GET", "/accounts/p", "operator")["balance"] == 10_000


def test_6_operators_are_isolated(api: Api) -> None:
    api.ok("POST", "/accounts/alice/credit", "operator", {"amount": 5000, "reference": "f"})
    for method, path, body in (
        ("GET", "/accounts/alice", None),
        ("POST", "/accounts/alice/debit", {"amount": 100, "reference": "steal"}),
        ("POST", "/accounts/alice/credit", {"amount": 100, "reference": "mix"}),
    ):
        api.refused(method, path, "operator2", body, 404)
    api.ready_round()
    bet = {"bets": [{"key": "k", "account": "alice", "type": "player", "stake": 1000}]}
    # another operator's account is unknown, as one that does not exist: nothing placed
    problem = api.refused("POST", "/tables/bac-1/bets", "operator2", bet, 404)
    assert problem["code"] == "unknown_account" and "5000" not in problem["detail"]
    nobody = {"bets": [{"key": "k", "account": "nobody", "type": "player", "stake": 1000}]}
    assert api.refused("POST", "/tables/bac-1/bets", "operator2", nobody, 404) == {
        **problem,
        "detail": problem["detail"].replace("alice", "nobody"),
    }
    mine = api.ok("POST", "/tables/bac-1/bets", "operator", bet)["results"][0]
    assert mine["status"] == "placed"
    assert api.ok("GET", "/accounts/alice", "regulator")["balance"] == 4000
    # the staff stream of operator2 shows none of alice's stake; operator's shows it
    streams = {}
    for who in ("operator", "operator2"):
        url = f"/api/v1/tables/bac-1/stream?token={api.tokens[who]}"
        with api.client.websocket_connect(url) as ws:
            events: list[dict[str, Any]] = []
            while not events or events[-1]["type"] != "betting_opened":
                events.append(ws.receive_json())
            api.ok("POST", "/tables/bac-1/betting/close", "dealer") if who == "operator2" else None
            events.append(ws.receive_json())
            streams[who] = events
    assert "alice" not in json.dumps(streams["operator2"])
    assert any(e["type"] == "bets_placed" for e in streams["operator"])
    assert all("actor" not in e for e in streams["operator"])  # no staff internals either
    _ledger_matches(api.runtime)


def test_6_principal_names_bindings_and_the_last_admin(api: Api) -> None:
    for name in ("a|b", "x:y", "nul\x00", "", "a" * 65, " lead"):
        body = {"name": name, "role": "operator"}
        api.refused("POST", "/principals", "admin", body, 422)
    body = {"name": "d9", "role": "dealer", "table_id": "no-such-table"}
    assert api.refused("POST", "/principals", "admin", body, 422)["code"] == "unknown_table"
    api.ok("POST", "/principals", "admin", {"name": "d9", "role": "dealer", "table_id": "bac-2"})
    problem = api.refused("DELETE", "/principals/admin", "admin", None, 409)
    assert problem["code"] == "last_admin"
    api.ok("POST", "/principals", "admin", {"name": "admin2", "role": "admin"})
    api.ok("DELETE", "/principals/admin", "admin", None)


def test_6_a_bound_dealer_sees_its_own_table_only(api: Api) -> None:
    api.ok("POST", "/tables/bac-1/incidents", "dealer", {"kind": "other", "details": {"t": 1}})
    api.ok("POST", "/tables/bac-2/incidents", "bound", {"kind": "other", "details": {"t": 2}})
    own = api.ok("GET", "/incidents", "bound")
    assert [i["table_id"] for i in own] == ["bac-2"]
    api.refused("GET", "/incidents?table_id=bac-1", "bound", None, 403)
    assert [t["table_id"] for t in api.ok("GET", "/tables", "bound")] == ["bac-2"]
    api.refused("GET", "/tables/bac-1", "bound", None, 403)


# 7 -- the API description is the API -------------------------------------------------------
def test_7_every_route_documents_its_errors_and_schemas(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    assert "Problem" in spec["components"]["schemas"]
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            ok = [s for s in responses if s.startswith("2")]
            assert ok, (method, path)
            for status in ok:
                content = responses[status]["content"]
                if "application/json" not in content:  # tiles and notes: bytes, documented
                    assert all(c["schema"] == {"type": "string"} for c in content.values())
                    continue
                schema = content["application/json"]["schema"]
                assert schema != {} and ("$ref" in schema or "items" in schema), (path, schema)
            if operation.get("security") and path != "/api/v1/whoami":  # a token is needed
                assert {"401", "403"} <= set(responses), (method, path)
            for status, response in responses.items():
                if int(status) >= 400 and path != "/readyz":
                    content = response["content"]
                    assert list(content) == ["application/problem+json"], (path, status)
    credit = spec["paths"]["/api/v1/accounts/{account}/debit"]["post"]["responses"]
    assert {"402", "404", "409", "413", "422"} <= set(credit)


def test_7_websocket_refusals_reach_the_client_as_close_codes(
    make_runtime: Callable[..., Runtime],
) -> None:
    """Over real HTTP: a refusal is an accepted socket closed with the code, not an HTTP
    403 at the handshake that hides why."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from tests.hardening.hardening_helpers import principals, serve

    runtime = make_runtime()
    tokens = principals(runtime, ["bac-2"])
    configs = [TableConfig(table_id="bac-1"), TableConfig(table_id="bac-2")]
    with serve(runtime, configs) as base:
        ws_base = base.replace("http://", "ws://")
        cases = {
            "/api/v1/tables/bac-1/stream?token=lt_forged": 4401,
            "/api/v1/tables/bac-1/stream": 4401,
            f"/api/v1/tables/bac-1/stream?token={tokens['bound_dealer']}": 4403,
            f"/api/v1/tables/nope/stream?token={tokens['regulator']}": 4404,
            "/api/v1/public/tables/nope/stream": 4404,
            f"/api/v1/public/tables/bac-1/stream?after_seq={2**63}": 4400,
        }
        for path, code in cases.items():
            with connect(ws_base + path, open_timeout=10) as ws:
                with pytest.raises(ConnectionClosed) as closed:
                    ws.recv(timeout=10)
                assert closed.value.rcvd is not None and closed.value.rcvd.code == code, path
        with connect(f"{ws_base}/api/v1/tables/bac-1/stream?token={tokens['regulator']}") as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "table_opened"


# 8 -- no limits ------------------------------------------------------------------------------
def test_8_bodies_over_a_megabyte_are_413_and_nul_is_refused(api: Api) -> None:
    api.ok("POST", "/accounts/p/credit", "operator", {"amount": 10_000, "reference": "f"})
    api.ready_round()
    bets = [
        {"key": f"k{i}", "account": "p", "type": "player", "stake": 100, "pad": "x" * 200}
        for i in range(5000)
    ]
    api.refused("POST", "/tables/bac-1/bets", "operator", {"bets": bets}, 413)

    # a body that lies about its length is cut off at the limit all the same
    def chunks() -> Iterator[bytes]:
        yield b'{"bets": ['
        for _ in range(2000):
            yield b'{"key": "k", "account": "p", "type": "player", "stake": 100},' * 10
        yield b"{}]}"

    response = api.client.post(
        "/api/v1/tables/bac-1/bets",
        content=chunks(),
        headers={**api.h("operator"), "content-type": "application/json"},
    )
    assert response.status_code == 413
    for bet in (
        {"key": "k\x00", "account": "p", "type": "player", "stake": 100},
        {"key": "k", "account": "p\x00", "type": "player", "stake": 100},
    ):
        api.refused("POST", "/tables/bac-1/bets", "operator", {"bets": [bet]}, 422)
    api.refused("POST", "/accounts/p/credit", "operator", {"amount": 1, "reference": "\x00"}, 422)
    response = api.client.post(
        "/api/v1/accounts/p%00/credit",
        json={"amount": 1, "reference": "r"},
        headers=api.h("operator"),
    )
    assert response.status_code == 422
    with api.runtime.reads() as session:
        assert session.scalar(select(func.count()).select_from(BetRow)) == 0


def test_8_limits_hold_over_real_http(make_runtime: Callable[..., Runtime]) -> None:
    """The same limits through uvicorn: a 413 for a large body, and the server answers
    the next request on a new connection."""
    from tests.hardening.hardening_helpers import principals, serve

    runtime = make_runtime()
    tokens = principals(runtime, ["bac-1"])
    with serve(runtime, [TableConfig(table_id="bac-1")]) as base:
        headers = {"Authorization": f"Bearer {tokens['operator']}"}
        big = {"amount": 1, "reference": "r", "pad": "x" * 1_100_000}
        response = httpx.post(f"{base}/api/v1/accounts/a/credit", json=big, headers=headers)
        assert response.status_code == 413
        assert response.json()["code"] == "body_too_large"
        nan = httpx.post(
            f"{base}/api/v1/accounts/a/credit",
            content=b'{"amount": NaN, "reference": "r"}',
            headers={**headers, "content-type": "application/json"},
        )
        assert nan.status_code == 422
        ok = httpx.post(
            f"{base}/api/v1/accounts/a/credit",
            json={"amount": 1, "reference": "r"},
            headers=headers,
        )
        assert ok.status_code == 200, ok.text
