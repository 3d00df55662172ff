"""Holes a hostile client found on a live ``livetable serve`` (issue 30, the red team).

Each test is the smallest reproduction of one finding against the real app (a real
uvicorn server where a socket or the log is involved). Those whose fix lies in another
helper's files are ``xfail(strict=True)`` with the reason: they fail today, and pass (so
fail the suite as XPASS) the day the fix lands, when the marker is to be taken off.
The findings, with how each was found: /work/notes/issues/30-redteam-findings.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from fastapi.testclient import TestClient

from table_service.app import build_app
from table_service.logs import configure_logging
from table_service.principals import add_principal, revoke_principal
from table_service.table.config import TableConfig
from table_service.table.service import TableManager
from tests.hardening.hardening_helpers import AuditedClient, serve
from tests.table.test_table_api import Clock

BJ = "bj-1"
BLACKJACK = TableConfig(
    table_id=BJ,
    game="blackjack",
    betting_seconds=600,
    game_rules={"decision_seconds": 600, "follow_seconds": 600, "seats": 7},
    limits={"min_stake": 100, "max_stake": 500_000},
)
WHO = {
    "opA": ("operator", None),
    "opB": ("operator", None),
    "dealer": ("dealer", BJ),
    "supervisor": ("supervisor", None),
    "watcher": ("supervisor", None),
    "admin": ("admin", None),
}


def _tokens(runtime: Any) -> dict[str, str]:
    with runtime.sessions.begin() as session:
        return {
            name: add_principal(session, runtime.store, name, role, table_id=t, actor="test")
            for name, (role, t) in WHO.items()
        }


class Api(AuditedClient):
    def send(self, method: str, path: str, who: str, body: Any = None) -> Any:
        """A request with its method (the audited client's call() is a POST)."""
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return self.client.request(method, f"/api/v1{path}", json=body, headers=headers)

    def ok(self, path: str, who: str, body: Any = None) -> Any:
        response = self.send("POST", path, who, body)
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture
def api(make_runtime: Any) -> Iterator[Api]:
    runtime = make_runtime()
    tokens = _tokens(runtime)
    # a still clock: no decision timer plays a move while the refusal is checked
    manager = TableManager(runtime, [BLACKJACK], clock=Clock())
    app = build_app(runtime, [BLACKJACK], manager=manager, with_readers=False)
    with TestClient(app) as client:
        yield Api(client, tokens, runtime)


def _bet(api: Api, who: str, key: str, account: str, kind: str, seat: int) -> str:
    bet = {"key": key, "account": account, "type": kind, "stake": 1000, "seat": seat}
    answer = api.ok(f"/tables/{BJ}/bets", who, {"bets": [bet]})
    (result,) = answer["results"]
    assert result["status"] == "placed", answer
    return str(result["bet_id"])


def test_not_your_turn_does_not_name_another_operators_bet(api: Api) -> None:
    """A's seat splits; the follow offer awaits B's bet behind it. A answering as its own
    bet behind is refused ``not_your_turn`` — and the refusal listed the awaited actors,
    ``behind:<B's bet id>``: a foreign bet id, which every read path withholds from A
    (the table summary shows A ``behind``), handed over by an error message."""
    for who, account in (("opA", "a1"), ("opA", "a2"), ("opB", "b1"), ("opB", "b2")):
        api.ok(f"/accounts/{account}/credit", who, {"amount": 100_000, "reference": account})
    api.ok(f"/tables/{BJ}/shoe", "supervisor")
    api.ok(f"/tables/{BJ}/seats", "opA", {"seat": 1, "account": "a1"})
    api.ok(f"/tables/{BJ}/seats", "opB", {"seat": 2, "account": "b1"})
    api.ok(f"/tables/{BJ}/betting/open", "dealer")
    _bet(api, "opA", "m1", "a1", "main", 1)
    _bet(api, "opB", "m2", "b1", "main", 2)
    b_behind = _bet(api, "opB", "bb", "b2", "behind", 1)  # B's player backs A's seat
    a_behind = _bet(api, "opA", "ab", "a2", "behind", 2)
    api.ok(f"/tables/{BJ}/betting/close", "dealer")
    for card in ("TS", "QD", "9H", "TH", "7H"):  # seat 1: a pair of tens
        api.ok(f"/tables/{BJ}/cards", "supervisor", {"card": card})
    api.ok(f"/tables/{BJ}/actions", "opA", {"actor": "seat:1", "action": "split"})
    # what A may see of the offer: an anonymous "behind"
    summary = api.send("GET", f"/tables/{BJ}", "opA").json()
    assert b_behind not in json.dumps(summary)
    before = api.log_size()
    answer = api.send(
        "POST", f"/tables/{BJ}/actions", "opA", {"actor": f"behind:{a_behind}", "action": "accept"}
    )
    assert answer.status_code == 409, answer.text
    assert answer.json()["code"] == "not_your_turn"
    assert api.log_size() == before
    assert b_behind not in answer.text, answer.text


# --- a revoked principal's open stream ----------------------------------------------


async def _frames_after_revoke(
    base: str, runtime: Any, tokens: dict[str, str], revoker: Any = None
) -> Any:
    url = base.replace("http", "ws") + f"/api/v1/tables/{BJ}/stream?token={tokens['watcher']}"
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        auth = {"Authorization": f"Bearer {tokens['supervisor']}"}
        async with websockets.connect(url, open_timeout=60) as ws:
            head = json.loads(await asyncio.wait_for(ws.recv(), 60))  # table_opened
            assert head["seq"] >= 1
            await asyncio.to_thread(_revoke, revoker or runtime, "watcher")
            answer = await http.get(
                "/api/v1/whoami", headers={"Authorization": f"Bearer {tokens['watcher']}"}
            )
            assert answer.status_code == 401  # the token no longer opens anything
            answer = await http.post(f"/api/v1/tables/{BJ}/shoe", headers=auth)
            assert answer.status_code == 200, answer.text
            try:
                frame = await asyncio.wait_for(ws.recv(), 30)
            except websockets.ConnectionClosed as closed:
                return closed.rcvd.code if closed.rcvd else None
            return json.loads(frame)


def _revoke(runtime: Any, name: str) -> None:
    with runtime.sessions.begin() as session:
        revoke_principal(session, runtime.store, name, actor="test")


def test_revoked_token_stream_is_closed(make_runtime: Any) -> None:
    """A supervisor's token is revoked while its staff stream is open; the next event
    of the table (a shoe inserted) still reached it. Revocation must end the stream
    (4401) before another frame."""
    runtime = make_runtime()
    tokens = _tokens(runtime)
    with serve(runtime, [BLACKJACK]) as base:
        outcome = asyncio.run(_frames_after_revoke(base, runtime, tokens))
    assert outcome == 4401, f"a revoked token received {outcome!r}"


def test_a_token_revoked_by_another_process_ends_the_stream(make_runtime: Any) -> None:
    """The documented revocation is the CLI (`livetable principal revoke NAME`), another
    process on the same database, as is another `livetable serve` of a studio: here a
    second runtime on the test's database. Live: a supervisor revoked by the CLI kept its
    staff stream and received the next incident with its details."""
    runtime = make_runtime()
    tokens = _tokens(runtime)
    elsewhere = make_runtime()  # the CLI's own connection to the same database
    with serve(runtime, [BLACKJACK]) as base:
        outcome = asyncio.run(_frames_after_revoke(base, runtime, tokens, revoker=elsewhere))
    assert outcome == 4401, f"a revoked token received {outcome!r}"


# --- the caller's x-request-id --------------------------------------------------------


def test_request_id_header_is_sanitised(api: Api) -> None:
    """The request id is an identifier the answer and every log line of the request
    carry; issue 30 refuses format and bidirectional characters in every identifier."""
    auth = f"Bearer {api.tokens['opA']}".encode()
    for given in ("req\u202e1234".encode(), b"A" * 5000):  # RIGHT-TO-LEFT OVERRIDE, UTF-8
        status, echoed = asyncio.run(
            _whoami(api.client.app, [(b"authorization", auth), (b"x-request-id", given)])
        )
        assert status == 200
        assert echoed.isascii() and echoed.isprintable() and 0 < len(echoed) <= 64, echoed


async def _whoami(app: Any, headers: list[tuple[bytes, bytes]]) -> tuple[int, str]:
    """One GET /api/v1/whoami through the app's ASGI stack with these raw header bytes
    (an HTTP client would refuse to send some of them; a hostile one does not)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/api/v1/whoami",
        "raw_path": b"/api/v1/whoami",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    echoed = dict(start["headers"]).get(b"x-request-id", b"").decode("latin-1")
    return int(start["status"]), echoed


# --- bearer tokens in the service's log -----------------------------------------------


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    """The service's logging sent to a file at INFO (as ``livetable serve`` logs), put
    back as it was afterwards."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    path = tmp_path / "service.log"
    configure_logging("console", "INFO", log_file=path, stderr_level="CRITICAL")
    try:
        yield path
    finally:
        for handler in list(root.handlers):
            if handler not in saved[0]:
                root.removeHandler(handler)
                handler.close()
        for handler in saved[0]:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(saved[1])


def test_a_stream_token_in_the_url_is_not_written_to_the_log(
    make_runtime: Any, log_file: Path
) -> None:
    """A stream takes its token as ``?token=T`` (documented); uvicorn logs every accepted
    WebSocket with its path and query at INFO, so every bearer token that opened a stream
    was written to the service's log in clear (only a SHA-256 of it is stored)."""
    runtime = make_runtime()
    tokens = _tokens(runtime)

    async def open_and_close(base: str) -> None:
        url = base.replace("http", "ws") + f"/api/v1/tables/{BJ}/stream?token={tokens['opA']}"
        async with websockets.connect(url, open_timeout=60) as ws:
            await asyncio.wait_for(ws.recv(), 60)

    uvicorn_log = logging.getLogger("uvicorn.error")
    with serve(runtime, [BLACKJACK]) as base:
        level = uvicorn_log.level
        uvicorn_log.setLevel(logging.INFO)  # as `livetable serve` runs it (no log_level)
        try:
            asyncio.run(open_and_close(base))
        finally:
            uvicorn_log.setLevel(level)
    for handler in logging.getLogger().handlers:
        handler.flush()
    text = log_file.read_text(encoding="utf-8")
    assert "/stream" in text  # the connection is logged ...
    assert tokens["opA"] not in text  # ... without its token


def test_two_authorization_headers_are_refused(api: Api) -> None:
    """Authorization is a single field (RFC 9110 §11.6.2): two of them is a malformed
    request, as a JSON member given twice is. A gateway or an audit that reads the other
    header sees another principal than the one the service acted for."""
    headers = [
        (b"authorization", f"Bearer {api.tokens['opB']}".encode()),
        (b"authorization", f"Bearer {api.tokens['supervisor']}".encode()),
    ]
    status, _ = asyncio.run(_whoami(api.client.app, headers))
    assert status in (400, 401), status


# --- a principal bound to one table reading the others --------------------------------

BAC = "bac-1"
BACCARAT = TableConfig(table_id=BAC, game="baccarat", betting_seconds=600)


@pytest.fixture
def studio(make_runtime: Any) -> Iterator[Api]:
    """Two tables; ``pit`` is a supervisor and ``auditor`` a regulator bound to bj-1."""
    runtime = make_runtime()
    tokens = _tokens(runtime)
    with runtime.sessions.begin() as session:
        for name, role in (("pit", "supervisor"), ("auditor", "regulator")):
            tokens[name] = add_principal(
                session, runtime.store, name, role, table_id=BJ, actor="test"
            )
    configs = [BLACKJACK, BACCARAT]
    manager = TableManager(runtime, configs, clock=Clock())
    app = build_app(runtime, configs, manager=manager, with_readers=False)
    with TestClient(app) as client:
        api = Api(client, tokens, runtime)
        api.ok(f"/tables/{BAC}/incidents", "supervisor", {"kind": "other", "details": {"n": 1}})
        api.ok(f"/tables/{BJ}/incidents", "supervisor", {"kind": "other", "details": {"n": 2}})
        yield api


@pytest.mark.parametrize("who", ["pit", "auditor"])
def test_the_pit_consoles_show_a_bound_principal_its_own_table_only(studio: Api, who: str) -> None:
    """A supervisor or regulator bound to bj-1 got every table of the studio from the pit
    overview (cards, seats and accounts, stakes) and every table's incidents from the
    timeline, while the table list, the incidents and the recall show it bj-1 only."""
    overview = studio.send("GET", "/console/overview", who)
    assert overview.status_code == 200, overview.text
    assert [t["table_id"] for t in overview.json()] == [BJ]
    timeline = studio.send("GET", "/console/timeline", who)
    assert timeline.status_code == 200, timeline.text
    assert {i["table_id"] for i in timeline.json()} == {BJ}
    # an unbound supervisor still sees the whole pit
    everything = studio.send("GET", "/console/overview", "supervisor").json()
    assert [t["table_id"] for t in everything] == sorted([BJ, BAC])
    incidents = studio.send("GET", "/console/timeline", "supervisor").json()
    assert {i["table_id"] for i in incidents} == {BJ, BAC}


@pytest.mark.parametrize("who", ["pit", "auditor"])
def test_audit_events_show_a_bound_principal_its_own_table_only(studio: Api, who: str) -> None:
    every = studio.send("GET", "/audit/events?limit=5000", who)
    assert every.status_code == 200, every.text
    assert BAC not in {e["table_id"] for e in every.json()}
    other = studio.send("GET", f"/audit/events?table_id={BAC}", who)
    assert other.status_code == 403, other.text
    assert other.json()["code"] == "other_table"
