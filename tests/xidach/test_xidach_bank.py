"""The seated bank of profile `room` end to end, on SQLite and PostgreSQL: a banker
whose balance falls under the minimum bet loses the bank, which passes clockwise to the
next qualifying player; with nobody qualifying the room is closed (recorded, shown, no
round opens) until a seated player holds what taking the bank needs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from audit.store import EventStore
from table_service.app import build_app
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.errors import RoomClosed
from table_service.table.service import TableManager
from tests.table.test_table_api import Clock
from tests.xidach.test_xidach_api import Client, _tokens
from tests.xidach.test_xidach_table import xtable

T = "xd-room"
CONFIG = TableConfig(
    table_id=T,
    game="xidach",
    profile="room",
    game_rules={"banker": "seated"},
    limits={"min_stake": 100, "max_stake": 2000},  # taking the bank needs 5x 2000
    bet_limits={"bank": {"min_stake": 100, "max_stake": 10**9}},
)
PUNTERS = (1, 2, 3, 4, 5)


@pytest.fixture
def room(make_runtime: Any) -> Iterator[Client]:
    runtime = make_runtime()
    manager = TableManager(runtime, [CONFIG], clock=Clock())
    with TestClient(build_app(runtime, [CONFIG], manager=manager)) as client:
        t = Client(client, _tokens(runtime))
        t.runtime = runtime
        yield t


def _post(t: Client, path: str, body: Any = None, role: str = "operator", status: int = 200) -> Any:
    return t.post(path, role, body, status)


def _act(t: Client, actor: str, action: str, account: str) -> None:
    body = {"actor": actor, "action": action, "account": account}
    _post(t, f"/tables/{T}/actions", body)


def _bets(t: Client, round_no: int, bets: list[tuple[int, str, str, int]]) -> list[dict[str, Any]]:
    body = {
        "bets": [
            {"key": f"{round_no}-{seat}", "account": a, "type": kind, "stake": stake, "seat": seat}
            for seat, a, kind, stake in bets
        ]
    }
    results: list[dict[str, Any]] = _post(t, f"/tables/{T}/bets", body)["results"]
    return results


def test_a_bank_under_the_minimum_bet_is_lost_and_nobody_qualifying_closes_the_room(
    room: Client,
) -> None:
    for n in PUNTERS:
        _post(room, f"/accounts/p{n}/credit", {"amount": 5000, "reference": f"p{n}"})
        _post(room, f"/tables/{T}/seats", {"seat": n, "account": f"p{n}"})
    _post(room, "/accounts/banker/credit", {"amount": 10_000, "reference": "banker"})
    _post(room, f"/tables/{T}/seats", {"seat": 9, "account": "banker"})
    _post(room, f"/tables/{T}/shoe", role="supervisor")
    _post(room, f"/tables/{T}/betting/open", role="dealer")
    bets = [(n, f"p{n}", "main", 2000) for n in PUNTERS] + [(9, "banker", "bank", 10_000)]
    assert {r["status"] for r in _bets(room, 1, bets)} == {"placed"}  # betting closes
    # clockwise, two rounds of cards: every punter 20, the banker 7C QD = 17 (stands)
    for card in ("TS", "TH", "TD", "TC", "KS", "7C", "KH", "KD", "KC", "QS", "QH", "QD"):
        _post(room, f"/tables/{T}/cards", {"card": card}, role="supervisor")
    for n in PUNTERS:
        _act(room, f"seat:{n}", "stand", f"p{n}")
    _act(room, "banker", "stand", "banker")
    summary = room.get(f"/tables/{T}")
    assert summary["round"]["phase"] == "settled"
    # the bank paid 5 x 2000 and holds 0, under the minimum bet: it is lost and passes
    # clockwise from seat 9, but every punter holds 7000, under 5x the maximum bet
    assert room.get("/accounts/banker", "operator")["balance"] == 0
    assert summary["round"]["outcome"]["bank"]["keeps_bank"] is False
    bank = summary["bank"]
    assert (bank["seat"], bank["passes_from"], bank["room_closed"], bank["needs"]) == (
        None,
        9,
        True,
        10_000,
    )
    assert "nobody seated holds 10000" in bank["reason"]
    _post(room, f"/tables/{T}/shoe", role="supervisor")  # a fresh deck: still closed
    refused = _post(room, f"/tables/{T}/betting/open", role="dealer", status=409)
    assert refused["error"] == "room_closed" and refused["needs"] == 10_000
    assert room.get(f"/tables/{T}")["round"]["phase"] == "settled"  # no round opened
    # seat 2's player tops up to 12000: the room reopens, the bank passes to seat 2
    _post(room, "/accounts/p2/credit", {"amount": 5000, "reference": "p2 top-up"})
    opened = _post(room, f"/tables/{T}/betting/open", role="dealer")
    assert room.get(f"/tables/{T}")["bank"]["room_closed"] is False
    results = _bets(room, 2, [(1, "p1", "bank", 7000), (2, "p2", "bank", 12_000)])
    assert results[0]["error"] == "bank_passes" and results[1]["status"] == "placed"
    with room.runtime.sessions() as session:
        events = EventStore.read(session, table_id=T)
    kinds = [e.type for e in events]
    assert next(e for e in events if e.type == "room_closed").actor == "system:rules"
    closed, reopened = kinds.index("room_closed"), kinds.index("room_reopened")
    assert kinds[closed - 2 : closed] == ["round_settled", "shoe_ended"]  # with the settlement
    assert kinds[reopened + 1] == "betting_opened"
    assert opened["round_id"].endswith("-g1")  # the second deck's first round


def test_the_closed_room_is_recorded_and_replays_and_only_a_qualifier_reopens_it() -> None:
    h = xtable("room", 1, 2, 9, banker="seated")
    h.seat_bet("p1", "main", 100, 1)
    h.seat_bet("p2", "main", 100, 2)
    h.seat_bet("p9", "bank", 20_000, 9)
    h.deal("TS", "TD", "7C", "KH", "9H", "TC")
    h.act("banker", "leave", "p9")  # the banker leaves: its bank passes from seat 9
    h.run(c.ReviewRoom({"p1": 9999, "p2": 500}))
    assert h.state.room_closed is not None and h.events("room_closed")[0]["passes_from"] == 9
    h.run(c.ReviewRoom({"p1": 9999, "p2": 500}))
    assert len(h.events("room_closed")) == 1  # recorded once
    h.run(c.InsertShoe())
    with pytest.raises(RoomClosed):
        h.run(c.OpenBetting({"p1": 9999, "p2": 500}))
    decision = h.run(c.OpenBetting({"p1": 9999, "p2": 10_000}))
    assert h.types(decision) == ["room_reopened", "betting_opened"]
    assert h.events("room_reopened")[0]["seat"] == 2
    assert h.state.room_closed is None
    assert h.replayed() == h.state


def test_a_kept_bank_and_a_house_table_never_close_the_room() -> None:
    h = xtable("room", 1, 9, banker="seated")
    h.seat_bet("p1", "main", 100, 1)
    h.seat_bet("p9", "bank", 20_000, 9)
    h.deal("TS", "7C", "KH", "TC")
    h.act("seat:1", "stand", "p1")
    h.act("banker", "stand", "p9")  # 20 beats 17: the bank pays 100 and keeps 19900
    h.run(c.ReviewRoom({"p1": 0, "p9": 0}))  # nobody else could take it: it is kept
    assert h.state.room_closed is None and h.state.bank_seat == 9
    house = xtable("classic", 1)
    house.run(c.ReviewRoom({}))
    assert house.state.room_closed is None and house.events("room_closed") == []
