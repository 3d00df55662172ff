"""The authorization matrix (issue 30): every route × every principal × own / foreign /
other-table resource, each answer checked against the policy table, and the audit log
unchanged after every refusal.

The routes come from the OpenAPI document and the app's WebSocket routes; each has an
entry below naming its policy entry (``policy.ROUTES`` key or table command) and a
request that is valid for it. A route without an entry fails the test, as does an entry
whose route is gone. The expected answer is computed from the policy table:

- no token on a route that needs one: 401 (a stream: closed 4401);
- a role the policy does not list: 403 ``wrong_role``;
- a dealer bound to another table, on a table's route: 403 ``other_table`` (4403);
- operator B on operator A's account: 404 ``unknown_account``; on A's seated player:
  403 ``foreign_player``; an operator moving the house banker: 403 ``house_banker``;
  staff playing a punter's hand: 403 ``wrong_role``;
- otherwise the request is the route's to answer (its own 2xx, 404, 409 or 422), never a
  401/403, never a policy refusal, never a 5xx.

The refusals run first, all against the same state (a dealt Xì Dách round with operator
A's player at seat 1 and operator B's at seat 2); the allowed requests run after them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.routing import APIWebSocketRoute
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from table_service.app import build_app
from table_service.principals import Role, add_principal
from table_service.table import commands as c
from table_service.table import policy
from table_service.table.config import TableConfig
from table_service.table.service import TableManager
from tests.hardening.hardening_helpers import AuditedClient
from tests.table.test_table_api import Clock

T, T2 = "xd-1", "bac-2"
CONFIGS = [
    TableConfig(
        table_id=T,
        game="xidach",
        profile="forced-draw",
        betting_seconds=600,
        limits={"min_stake": 100, "max_stake": 5000},
    ),
    TableConfig(table_id=T2, betting_seconds=600),
]
# counter-clockwise: seat 2 (bob) TS 7H, seat 1 (alice) 9D 8S, the house TC 7D
CARDS = ("TS", "9D", "TC", "7H", "8S", "7D")
# name → (role, table binding); "anon" sends no token
PRINCIPALS: dict[str, tuple[Role, str | None]] = {
    "dealer_here": (Role.DEALER, T),
    "dealer_other": (Role.DEALER, T2),
    "supervisor": (Role.SUPERVISOR, None),
    "regulator": (Role.REGULATOR, None),
    "opA": (Role.OPERATOR, None),
    "opB": (Role.OPERATOR, None),
    "admin": (Role.ADMIN, None),
}
EVERYONE = ("anon", *PRINCIPALS)
POLICY_CODES = {"wrong_role", "other_table", "unknown_account", "foreign_player", "house_banker"}


@dataclass(frozen=True)
class Variant:
    """One resource a request names: ``owner`` the operator whose player or account it is
    (None: nobody's, e.g. the house banker); the answers to the other principals."""

    label: str
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    owner: str | None = None
    foreign: tuple[int, str] | None = None  # to another operator
    operators: tuple[int, str] | None = None  # to every operator (the house banker)
    staff: tuple[int, str] | None = None  # to staff whose role the policy lists
    query: dict[str, Any] = field(default_factory=dict)
    roles: dict[Role, tuple[int, str]] = field(default_factory=dict)  # to one role


@dataclass(frozen=True)
class Entry:
    key: str | type | None  # policy.ROUTES key, a table command, None: public
    body: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    variants: tuple[Variant, ...] = (Variant("-"),)


def _accounts() -> tuple[Variant, ...]:
    return tuple(
        Variant(name, {"account": name}, owner=owner, foreign=(404, "unknown_account"))
        for name, owner in (("alice", "opA"), ("bob", "opB"))
    )


def _seat_body(account: str, owner: str) -> Variant:
    return Variant(
        account,
        body={"seat": 3, "account": account},
        owner=owner,
        foreign=(404, "unknown_account"),
    )


def _bets(account: str, seat: int, owner: str) -> Variant:
    bet = {"key": f"m-{account}", "account": account, "type": "main", "stake": 100, "seat": seat}
    return Variant(account, body={"bets": [bet]}, owner=owner, foreign=(404, "unknown_account"))


def _seat(seat: int, owner: str) -> Variant:
    return Variant(f"seat {seat}", {"seat": seat}, owner=owner, foreign=(403, "foreign_player"))


def _act(actor: str, account: str | None, owner: str | None, **extra: Any) -> Variant:
    body = {"actor": actor, "action": "stand", **extra}
    if account is not None:
        body["account"] = account
    if owner is None:  # the house banker: its staff confirm, no operator
        return Variant(actor, body=body, operators=(403, "house_banker"))
    return Variant(
        actor,
        body=body,
        owner=owner,
        foreign=(403, "foreign_player"),
        staff=(403, "wrong_role"),
    )


V1 = "/api/v1"
TV = f"{V1}/tables/{{table_id}}"
ENTRIES: dict[str, Entry] = {
    "GET /healthz": Entry(None),
    "GET /readyz": Entry(None),
    f"GET {V1}/whoami": Entry("whoami"),
    f"GET {V1}/principals": Entry("principals.list"),
    f"POST {V1}/principals": Entry("principals.add", {"name": "m-made", "role": "regulator"}),
    f"DELETE {V1}/principals/{{name}}": Entry("principals.revoke", params={"name": "nobody"}),
    f"GET {V1}/audit/events": Entry("audit.events"),
    f"POST {V1}/audit/checkpoint": Entry("audit.checkpoint"),
    "GET /tlog/checkpoint": Entry("tlog.read"),
    "GET /tlog/tile/{tile_path}": Entry("tlog.read", params={"tile_path": "0/000"}),
    f"GET {V1}/audit/proof/inclusion": Entry("tlog.read", query={"seq": 1, "size": 2}),
    f"GET {V1}/audit/proof/consistency": Entry("tlog.read", query={"old": 1, "new": 2}),
    f"POST {V1}/audit/cosignatures": Entry(
        "tlog.cosign", {"size": 1, "cosigner_key": "x", "line": "y"}
    ),
    f"GET {V1}/tables": Entry("tables.list"),
    f"GET {TV}": Entry("table.read"),
    f"POST {TV}/betting/open": Entry(c.OpenBetting),
    f"POST {TV}/betting/close": Entry(c.CloseBetting),
    f"POST {TV}/incidents": Entry(c.RaiseIncident, {"kind": "other", "details": {}}),
    f"POST {TV}/incidents/{{incident_id}}/resolve": Entry(
        c.ResolveIncident, {"note": "matrix"}, {"incident_id": f"{T}-i99"}
    ),
    f"POST {TV}/round/void": Entry(c.VoidRound, {"reason": "matrix", "change_shoe": True}),
    f"POST {TV}/shoe": Entry(c.InsertShoe),
    f"POST {TV}/shoe/change": Entry(c.ChangeShoe, {"reason": "matrix"}),
    f"POST {TV}/cards": Entry(c.CardScanned, {"card": "2C"}),
    f"POST {TV}/bets": Entry(
        c.PlaceBets, variants=(_bets("alice", 1, "opA"), _bets("bob", 2, "opB"))
    ),
    f"POST {TV}/seats": Entry(
        c.TakeSeat, variants=(_seat_body("alice", "opA"), _seat_body("bob", "opB"))
    ),
    f"POST {TV}/seats/{{seat}}/leave": Entry(
        c.LeaveSeat, {}, variants=(_seat(1, "opA"), _seat(2, "opB"))
    ),
    f"POST {TV}/seats/{{seat}}/disconnected": Entry(
        c.PlayerDisconnected, variants=(_seat(1, "opA"), _seat(2, "opB"))
    ),
    f"POST {TV}/actions": Entry(
        c.Act,
        variants=(
            _act("seat:1", "alice", "opA"),
            _act("seat:2", "bob", "opB"),
            _act("banker", None, None, target="all"),
        ),
    ),
    f"GET {TV}/rounds": Entry("rounds.read"),
    f"GET {V1}/rounds/{{round_id}}": Entry("rounds.read"),
    f"GET {V1}/incidents": Entry("incidents.read"),
    f"POST {V1}/accounts/{{account}}/credit": Entry(
        "account.credit", {"amount": 1, "reference": "m"}, variants=_accounts()
    ),
    f"POST {V1}/accounts/{{account}}/debit": Entry(
        "account.debit", {"amount": 1, "reference": "m"}, variants=_accounts()
    ),
    f"GET {V1}/accounts/{{account}}": Entry("account.read", variants=_accounts()),
    f"GET {V1}/console/time": Entry(None),
    f"GET {V1}/public/tables/{{table_id}}/view": Entry(None),
    f"GET {V1}/console/tables/{{table_id}}/view": Entry("console.view"),
    f"GET {V1}/console/overview": Entry("console.overview"),
    f"POST {TV}/round/void-requests": Entry("void.request", {"reason": "matrix"}),
    f"POST {TV}/round/void-requests/{{request_id}}/approve": Entry(
        "void.approve", params={"request_id": "nope"}
    ),
    f"POST {TV}/duty": Entry("duty.sign_in"),
    f"GET {TV}/roads": Entry(None),
    f"GET {TV}/recall": Entry("recall.read"),
    f"GET {TV}/recall/{{round_id}}/{{section}}": Entry("recall.read", params={"section": "bets"}),
    f"GET {TV}/recall/{{round_id}}": Entry("recall.read"),
    f"GET {V1}/recall/search": Entry(
        "recall.search",
        variants=(
            # by account: a regulator, or the account's own operator (other staff: 403)
            *(
                Variant(
                    name,
                    query={"account": name},
                    owner=owner,
                    foreign=(404, "unknown_account"),
                    roles={r: (403, "wrong_role") for r in (Role.SUPERVISOR, Role.ADMIN)},
                )
                for name, owner in (("alice", "opA"), ("bob", "opB"))
            ),
            # by table: staff; an operator finds rounds by an account of its own only
            Variant("table", query={"table_id": T}, operators=(403, "wrong_role")),
        ),
    ),
    f"GET {V1}/console/timeline": Entry("console.timeline"),
    f"POST {TV}/house-move": Entry("house.move", {"action": "check", "target": "all"}),
    f"WS {TV}/stream": Entry("table.stream"),
    f"WS {V1}/public/tables/{{table_id}}/stream": Entry("table.public_stream"),
}
# Routes of a studio process only (several processes on one PostgreSQL): their entry is
# checked against the policy table, not called here.
STUDIO_ONLY = {f"GET {V1}/studio/tables": "studio.tables"}


LAST = {
    f"POST {TV}/round/void",
    f"POST {TV}/seats/{{seat}}/leave",
    f"POST {TV}/shoe/change",
    f"POST {TV}/round/void-requests/{{request_id}}/approve",
}


@dataclass
class Call:
    route: str
    variant: str
    who: str
    method: str
    path: str
    body: Any
    query: dict[str, Any]
    expect: tuple[int, str] | None  # None: the route's to answer (not a policy refusal)


def _roles(key: str | type) -> tuple[frozenset[Role], bool]:
    if isinstance(key, str):
        rule = policy.ROUTES[key]
        assert rule is not None
        return rule.roles, rule.bound
    return policy.COMMANDS[key], True


def expected(entry: Entry, variant: Variant, who: str, table_route: bool) -> tuple[int, str] | None:
    if entry.key is None or (isinstance(entry.key, str) and policy.ROUTES[entry.key] is None):
        return None  # public
    if who == "anon":
        return (401, "unauthorized")
    role, bound_to = PRINCIPALS[who]
    roles, bound = _roles(entry.key)
    if role not in roles:
        return (403, "wrong_role")
    if table_route and bound and bound_to not in (None, T):
        return (403, "other_table")
    if role in variant.roles:
        return variant.roles[role]
    if role is Role.OPERATOR:
        if variant.operators is not None:
            return variant.operators
        if variant.owner is not None and variant.owner != who:
            return variant.foreign
    elif variant.staff is not None:
        return variant.staff
    return None


class Matrix(AuditedClient):
    def headers(self, who: str) -> dict[str, str]:
        return {} if who == "anon" else {"Authorization": f"Bearer {self.tokens[who]}"}

    def post(self, path: str, who: str, body: Any = None) -> Any:
        response = self.client.post(f"{V1}{path}", json=body, headers=self.headers(who))
        assert response.status_code == 200, response.text
        return response.json()

    def request(self, call: Call) -> Any:
        return self.client.request(
            call.method,
            call.path,
            content=None if call.body is None else json.dumps(call.body),
            params=call.query,
            headers={**self.headers(call.who), "Content-Type": "application/json"},
        )

    def stream(self, call: Call) -> int | None:
        """The close code a stream answers ``call.who`` with (None: it streams)."""
        url = call.path + ("" if call.who == "anon" else f"?token={self.tokens[call.who]}")
        try:
            with self.client.websocket_connect(url) as ws:
                frame = ws.receive_json()
                assert isinstance(frame, dict) and "seq" in frame, frame
                return None
        except WebSocketDisconnect as closed:
            return closed.code


@pytest.fixture
def matrix(make_runtime: Any) -> Iterator[Matrix]:
    runtime = make_runtime()
    with runtime.sessions.begin() as session:
        tokens = {
            name: add_principal(
                session, runtime.store, name.replace("_", "-"), role.value, table_id=t, actor="t"
            )
            for name, (role, t) in PRINCIPALS.items()
        }
    # a still clock: no decision timer plays a move (and writes) while refusals are checked
    manager = TableManager(runtime, CONFIGS, clock=Clock())
    with TestClient(build_app(runtime, CONFIGS, manager=manager, with_readers=False)) as client:
        m = Matrix(client, tokens, runtime)
        m.post("/accounts/alice/credit", "opA", {"amount": 10_000, "reference": "a"})
        m.post("/accounts/bob/credit", "opB", {"amount": 10_000, "reference": "b"})
        m.post(f"/tables/{T}/shoe", "supervisor")
        m.post(f"/tables/{T}/seats", "opA", {"seat": 1, "account": "alice"})
        m.post(f"/tables/{T}/seats", "opB", {"seat": 2, "account": "bob"})
        m.post(f"/tables/{T}/betting/open", "dealer_here")
        for who, account, seat in (("opA", "alice", 1), ("opB", "bob", 2)):
            bet = {"key": "k", "account": account, "type": "main", "stake": 1000, "seat": seat}
            m.post(f"/tables/{T}/bets", who, {"bets": [bet]})
        m.post(f"/tables/{T}/betting/close", "dealer_here")
        for card in CARDS:
            m.post(f"/tables/{T}/cards", "supervisor", {"card": card})
        yield m


def _routes(app: Any) -> set[str]:
    spec = app.openapi()
    found = {f"{m.upper()} {p}" for p, item in spec["paths"].items() for m in item}

    def walk(routes: Any, prefix: str = "") -> Iterator[str]:
        for route in routes:
            if isinstance(route, APIWebSocketRoute):
                yield f"WS {prefix}{route.path}"
            included = getattr(route, "original_router", None)  # FastAPI's included router
            if included is not None:
                yield from walk(included.routes, prefix + route.include_context.prefix)
            yield from walk(getattr(route, "routes", None) or (), prefix)

    return found | set(walk(app.routes))


def _calls(round_id: str) -> list[Call]:
    calls = []
    for route, entry in ENTRIES.items():
        method, template = route.split(" ", 1)
        table_route = "{table_id}" in template
        for variant in entry.variants:
            params = {"table_id": T, "round_id": round_id, **entry.params, **variant.params}
            path = template.format(**{k: params[k] for k in params if "{" + k + "}" in template})
            body = variant.body if variant.body is not None else entry.body
            for who in EVERYONE:
                expect = expected(entry, variant, who, table_route)
                query = {**entry.query, **variant.query}
                calls.append(Call(route, variant.label, who, method, path, body, query, expect))
    return calls


def _code(response: Any) -> str | None:
    """A problem document's stable code (None for any other answer)."""
    if response.headers.get("content-type", "") != "application/problem+json":
        return None
    return str(response.json()["code"])


def test_every_route_every_principal_every_resource(matrix: Matrix) -> None:
    app = matrix.client.app
    routes = _routes(app)
    assert routes - set(ENTRIES) == set(), "routes without a matrix entry (and policy entry)"
    assert set(ENTRIES) - routes == set(), "matrix entries of routes that are gone"
    for key in STUDIO_ONLY.values():
        assert policy.ROUTES[key] is not None
    named = {e.key for e in ENTRIES.values() if isinstance(e.key, str)} | set(STUDIO_ONLY.values())
    assert {k for k, rule in policy.ROUTES.items() if rule is not None} - named == set()

    summary = matrix.client.get(f"{V1}/tables/{T}", headers=matrix.headers("supervisor")).json()
    round_id = summary["round"]["round_id"]
    calls = _calls(round_id)
    refusals = [x for x in calls if x.expect is not None]
    # allowed requests change the table: those that end the round or free a seat go last
    allowed = sorted((x for x in calls if x.expect is None), key=lambda x: x.route in LAST)
    started = time.perf_counter()
    failures: list[str] = []
    for call in refusals:  # all against the same state: a refusal changes nothing
        assert call.expect is not None  # a refusal: its status and code
        before = matrix.log_size()
        if call.method == "WS":
            code = matrix.stream(call)
            want = {401: 4401, 403: 4403}[call.expect[0]]
            if code != want:
                failures.append(f"{call.route} [{call.variant}] as {call.who}: {code} != {want}")
            continue
        response = matrix.request(call)
        got = (response.status_code, _code(response))
        if got != call.expect:
            failures.append(f"{call.route} [{call.variant}] as {call.who}: {got} != {call.expect}")
        if matrix.log_size() != before:
            failures.append(f"{call.route} [{call.variant}] as {call.who}: the log changed")
    for call in allowed:
        if call.method == "WS":
            code = matrix.stream(call)
            if code is not None:
                failures.append(f"{call.route} [{call.variant}] as {call.who}: closed {code}")
            continue
        response = matrix.request(call)
        problem = _code(response)
        if (
            response.status_code in (401, 403)
            or problem in POLICY_CODES
            or response.status_code >= 500
        ):
            failures.append(
                f"{call.route} [{call.variant}] as {call.who}: {response.status_code} {problem}"
            )
    seconds = time.perf_counter() - started
    print(
        f"authorization matrix: {len(ENTRIES)} routes, {len(calls)} calls "
        f"({len(refusals)} refusals, {len(allowed)} allowed) in {seconds:.1f} s"
    )
    assert failures == [], "\n".join(failures)
