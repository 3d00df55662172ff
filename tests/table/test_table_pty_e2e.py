"""End to end through the real driver: virtual shoe on a pty → serial reader → table → API
and WebSocket stream. Runs on SQLite and PostgreSQL.

Every wait is on a condition (``tests/support/table_rig.py``: woken by the table's commits,
bounded by two minutes), and nothing the test does not check depends on speed: the shoe
retransmits an unacknowledged frame for a minute before it gives up, the betting window
never closes on its own, and the rounds test does not take a starved heartbeat for a
reader gone offline (the offline test keeps a 2 s timeout: that is what it tests).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hardware_sim.virtual_shoe import ShoeLockedError, VirtualShoe
from table_service.runtime import Runtime
from table_service.table.config import ShoeConfig, TableConfig
from tests.support.shoe_dealing import deal_unlocked
from tests.support.table_rig import in_process_table

# indicator 2S, two burn cards, then round 1 (spec example, a tie), round 2 (natural),
# an unneeded card, and an unreadable card in round 3.
CARDS = ["2S", "3H", "4H", "2S", "5H", "KD", "TC", "3S", "9S", "2H", "KD", "5C", "7D", "4C"]
CARDS += ["8D", "6S", "AH", "QC"] + ["KH"] * 20
HEARTBEAT = 0.2
RETRANSMIT = 0.1  # and up to a minute of retransmits: a slow ACK is not a lost card


@pytest.fixture
def offline_timeout() -> float:
    """Seconds without a heartbeat before the reader reports the shoe offline."""
    return 60.0


@pytest.fixture
def rig(make_runtime: Callable[..., Runtime], offline_timeout: float) -> Iterator[dict[str, Any]]:
    shoe = VirtualShoe(
        "framed",
        seed=7,
        heartbeat=HEARTBEAT,
        retransmit_interval=RETRANSMIT,
        max_retransmits=int(60 / RETRANSMIT),
    )
    shoe.load(CARDS)
    shoe.start()
    config = TableConfig(
        table_id="bac-1", betting_seconds=600, shoe=ShoeConfig(port=shoe.device_path)
    )
    try:
        with in_process_table(
            make_runtime(),
            config,
            roles=("dealer", "supervisor", "operator", "regulator"),
            reader_options={"offline_timeout": offline_timeout},
        ) as table:
            yield {
                "shoe": shoe,
                "post": table.post,
                "table": table.table,
                "wait_for": table.wait_for,
                "rig": table,
                "client": table.client,
                "tokens": table.tokens,
                "headers": table.headers,
            }
    finally:
        shoe.stop()


def _deal_round(rig: dict[str, Any]) -> dict[str, Any]:
    shoe, table = rig["shoe"], rig["rig"]
    dealt: dict[str, Any] = table.deal_round(lambda: deal_unlocked(shoe, table.wait_for))
    return dealt


def test_betting_opened_and_closed_before_the_lock_went_out_leaves_the_shoe_unlocked(
    rig: dict[str, Any],
) -> None:
    """The reader's thread is busy (held here) while the dealer opens and closes betting:
    the last command the shoe gets is the ULK (after the LCK, or alone if the two were
    folded into one), and it deals the next card. Before, the close saw the shoe as
    unlocked already (the LCK was not written yet) and sent nothing: the shoe stayed
    locked."""
    shoe, post, wait_for = rig["shoe"], rig["post"], rig["wait_for"]
    rig["rig"].insert_shoe(shoe.deal)
    reader = rig["client"].app.state.tables.get("bac-1").reader
    wait_for(lambda: reader.host_locked is False and shoe.lock_commands[-1:] == ["ULK"])
    before = len(shoe.lock_commands)
    with reader._lock:  # the reader's I/O lock: no command goes out meanwhile
        post("/tables/bac-1/betting/open", "dealer")
        post("/tables/bac-1/betting/close", "dealer")
    wait_for(lambda: shoe.lock_commands[before:][-1:] == ["ULK"], "the ULK reached the shoe")
    assert shoe.lock_commands[before:] in (["LCK", "ULK"], ["ULK"])
    assert not shoe.locked
    assert shoe.deal() == "2S"


def test_rounds_through_the_serial_driver(rig: dict[str, Any]) -> None:
    shoe, post, table, wait_for = rig["shoe"], rig["post"], rig["table"], rig["wait_for"]
    rig["rig"].insert_shoe(shoe.deal)

    post("/accounts/p1/credit", "operator", {"amount": 10_000, "reference": "d"})
    post("/tables/bac-1/betting/open", "dealer")
    wait_for(lambda: shoe.locked, "LCK reached the shoe")  # it refuses to release cards
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
    wait_for(lambda: table()["carried"] == ["7D"], "7D carried to the next round")
    post("/tables/bac-1/betting/open", "dealer")
    post("/tables/bac-1/betting/close", "dealer")
    assert table()["round"]["cards"] == ["7D"]
    shoe.unread_next()
    deal_unlocked(shoe, wait_for)  # 4C passes unread
    incident = wait_for(lambda: table()["incidents"], "an incident for the unread card")[0]
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
        events: list[dict[str, Any]] = []
        while len([e for e in events if e["type"] == "round_settled"]) < 3:
            events.append(ws.receive_json())
    dealt = [e["payload"] for e in events if e["type"] == "card_dealt"]
    assert all(d["reader_seq"] is not None for d in dealt if d["source"] == "reader")
    assert [d["source"] for d in dealt].count("carried") == 1
    assert any(
        e["type"] == "incident_raised" and e["payload"]["kind"] == "unneeded_card" for e in events
    )


@pytest.mark.parametrize("offline_timeout", [2.0])
def test_reader_offline_pauses_until_a_supervisor_resolves(rig: dict[str, Any]) -> None:
    shoe, post, table, wait_for = rig["shoe"], rig["post"], rig["table"], rig["wait_for"]
    rig["rig"].insert_shoe(shoe.deal)
    # The table records a card before its ACK is back at the shoe; a cable pulled with a
    # frame still waiting for its ACK is resent on the replug and raises a possible
    # duplicate (another incident, rightly): this test pulls it with nothing in flight.
    wait_for(shoe.idle, "every frame's ACK back at the shoe")
    shoe.unplug()
    wait_for(
        lambda: (
            not table()["reader_online"]
            and [i for i in table()["incidents"] if i["kind"] == "reader_offline"]
        ),
        "reader_offline incident",
    )
    assert table()["paused"]
    response = rig["client"].post(
        "/api/v1/tables/bac-1/betting/open", headers=rig["headers"]["dealer"]
    )
    assert response.status_code == 409 and response.json()["error"] == "table_paused"
    shoe.replug()
    wait_for(lambda: table()["reader_online"], "reader online again")
    # The unplug's incident, and any a heartbeat starved on a loaded machine raised before
    # it: each one stays open, and keeps the table paused, until a supervisor resolves it.
    open_offline = [i for i in table()["incidents"] if i["kind"] == "reader_offline"]
    assert open_offline, "the shoe coming back must not resolve its offline incident"
    for incident in open_offline:
        assert table()["paused"]
        post(
            f"/tables/bac-1/incidents/{incident['incident_id']}/resolve",
            "supervisor",
            {"note": "cable re-seated; no card passed while offline"},
        )
    post("/tables/bac-1/betting/open", "dealer")
    wait_for(lambda: shoe.locked, "LCK reached the shoe")
