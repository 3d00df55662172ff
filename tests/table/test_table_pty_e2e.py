"""End to end through the real driver: virtual shoe on a pty → serial reader → table → API
and WebSocket stream. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hardware_sim.virtual_shoe import ShoeLockedError, VirtualShoe
from table_service.principals import add_principal
from table_service.table.api import build_app
from table_service.table.config import ShoeConfig, TableConfig


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def rig(make_runtime) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    tokens = {}
    with runtime.sessions.begin() as session:
        for role in ("dealer", "supervisor", "operator", "regulator"):
            tokens[role] = add_principal(session, runtime.store, role, role, actor="test")
    shoe = VirtualShoe("framed", seed=7, heartbeat=0.2, retransmit_interval=0.1)
    # indicator 2S, two burn cards, then round 1 (spec example, a tie), round 2 (natural),
    # an unneeded card, and an unreadable card in round 3.
    shoe.load(
        [
            "2S",
            "3H",
            "4H",
            "2S",
            "5H",
            "KD",
            "TC",
            "3S",
            "9S",
            "2H",
            "KD",
            "5C",
            "7D",
            "4C",
            "8D",
            "6S",
            "AH",
            "QC",
        ]
        + ["KH"] * 20
    )
    shoe.start()
    config = TableConfig(
        table_id="bac-1", betting_seconds=30, shoe=ShoeConfig(port=shoe.device_path)
    )
    app = build_app(runtime, [config], reader_options={"offline_timeout": 2.0})
    with TestClient(app) as client:
        headers = {r: {"Authorization": f"Bearer {t}"} for r, t in tokens.items()}

        def post(path: str, role: str, body: Any = None) -> dict:
            response = client.post(f"/api/v1{path}", json=body, headers=headers[role])
            assert response.status_code == 200, response.text
            return response.json()

        def table() -> dict:
            return client.get("/api/v1/tables/bac-1", headers=headers["dealer"]).json()

        yield {
            "shoe": shoe,
            "post": post,
            "table": table,
            "client": client,
            "tokens": tokens,
            "headers": headers,
        }
    shoe.stop()


def _deal_round(rig: dict[str, Any]) -> dict:
    shoe, table = rig["shoe"], rig["table"]
    wait_for(lambda: not shoe.locked)
    while table()["round"]["next_position"] is not None:
        before = len(table()["round"]["cards"])
        shoe.deal()
        wait_for(
            lambda before=before: (
                len(table()["round"]["cards"]) > before or table()["round"]["phase"] != "dealing"
            )
        )
    return wait_for(lambda: table()["round"]["phase"] == "settled" and table())


def test_rounds_through_the_serial_driver(rig: dict[str, Any]) -> None:
    shoe, post, table = rig["shoe"], rig["post"], rig["table"]
    wait_for(lambda: table()["reader_online"])
    post("/tables/bac-1/shoe", "supervisor")
    for _ in range(3):
        shoe.deal()
    wait_for(lambda: table()["shoe"]["ready"])

    post("/accounts/p1/credit", "operator", {"amount": 10_000, "reference": "d"})
    post("/tables/bac-1/betting/open", "dealer")
    wait_for(lambda: shoe.locked)  # LCK reached the shoe: it refuses to release cards
    with pytest.raises(ShoeLockedError):
        shoe.deal()
    post(
        "/tables/bac-1/bets",
        "operator",
        {
            "bets": [
                {"key": "a", "account": "p1", "type": "tie", "stake": 1000},
                {"key": "b", "account": "p1", "type": "banker", "stake": 1000},
            ]
        },
    )
    post("/tables/bac-1/betting/close", "dealer")
    state = _deal_round(rig)
    assert state["round"]["cards"] == ["2S", "5H", "KD", "TC", "3S"]
    assert state["round"]["outcome"]["winner"] == "tie"
    balance = rig["client"].get("/api/v1/accounts/p1", headers=rig["headers"]["operator"])
    assert balance.json()["balance"] == 10_000 - 2000 + 9000 + 1000

    post("/tables/bac-1/betting/open", "dealer")
    post("/tables/bac-1/betting/close", "dealer")
    state = _deal_round(rig)
    assert state["round"]["outcome"]["winner"] == "player"  # 9S KD natural 9

    shoe.deal()  # 7D: a card the rules did not need
    wait_for(lambda: table()["carried"] == ["7D"])
    post("/tables/bac-1/betting/open", "dealer")
    post("/tables/bac-1/betting/close", "dealer")
    wait_for(lambda: not shoe.locked)
    assert table()["round"]["cards"] == ["7D"]
    shoe.unread_next()
    shoe.deal()  # 4C passes unread
    incident = wait_for(lambda: table()["incidents"])[0]
    assert incident["kind"] == "unreadable_card" and incident["details"]["index"] == 1
    assert table()["paused"]
    post(
        f"/tables/bac-1/incidents/{incident['incident_id']}/resolve",
        "supervisor",
        {"note": "4C read from the camera", "entered": [{"card": "4C", "index": 1}]},
    )
    state = _deal_round(rig)
    assert state["round"]["cards"][:3] == ["7D", "4C", "8D"]

    token = rig["tokens"]["regulator"]
    with rig["client"].websocket_connect(f"/api/v1/tables/bac-1/stream?token={token}") as ws:
        events = []
        while len([e for e in events if e["type"] == "round_settled"]) < 3:
            events.append(ws.receive_json())
    dealt = [e["payload"] for e in events if e["type"] == "card_dealt"]
    assert all(d["reader_seq"] is not None for d in dealt if d["source"] == "reader")
    assert [d["source"] for d in dealt].count("carried") == 1
    assert any(
        e["type"] == "incident_raised" and e["payload"]["kind"] == "unneeded_card" for e in events
    )


def test_reader_offline_pauses_until_a_supervisor_resolves(rig: dict[str, Any]) -> None:
    shoe, post, table = rig["shoe"], rig["post"], rig["table"]
    wait_for(lambda: table()["reader_online"])
    post("/tables/bac-1/shoe", "supervisor")
    for _ in range(3):
        shoe.deal()
    wait_for(lambda: table()["shoe"]["ready"])
    shoe.unplug()
    incident = wait_for(lambda: [i for i in table()["incidents"] if i["kind"] == "reader_offline"])[
        0
    ]
    assert table()["paused"] and not table()["reader_online"]
    response = rig["client"].post(
        "/api/v1/tables/bac-1/betting/open", headers=rig["headers"]["dealer"]
    )
    assert response.status_code == 409 and response.json()["error"] == "table_paused"
    shoe.replug()
    wait_for(lambda: table()["reader_online"], timeout=20)
    post(
        f"/tables/bac-1/incidents/{incident['incident_id']}/resolve",
        "supervisor",
        {"note": "cable re-seated; no card passed while offline"},
    )
    post("/tables/bac-1/betting/open", "dealer")
    wait_for(lambda: shoe.locked, timeout=20)
