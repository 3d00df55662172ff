"""Stream replays that give way to writes, the kept tail of a table's history, and the
service's timing on frames (``timing=1``)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from table_service.app import build_app
from table_service.principals import add_principal
from table_service.table.config import TableConfig
from table_service.table.service import TableManager
from table_service.table.stream import StreamHub, Writes

PUBLIC = "/api/v1/public/tables/bac-1/stream"


@pytest.fixture
def served(make_runtime: Any) -> Iterator[tuple[TestClient, dict[str, dict[str, str]], Any]]:
    runtime = make_runtime()
    with runtime.sessions.begin() as session:
        tokens = {
            role: add_principal(session, runtime.store, role, role, actor="test")
            for role in ("supervisor", "operator", "regulator")
        }
    configs = [TableConfig(table_id="bac-1")]
    app = build_app(runtime, configs, manager=TableManager(runtime, configs), with_readers=False)
    with TestClient(app) as client:
        headers = {r: {"Authorization": f"Bearer {t}"} for r, t in tokens.items()}
        yield client, headers, runtime


def logged(runtime: Any) -> list[int]:
    with runtime.reads() as session:
        return list(
            session.scalars(
                text("SELECT seq FROM audit_events WHERE table_id = 'bac-1' ORDER BY seq")
            )
        )


def change_shoe(client: TestClient, headers: dict[str, dict[str, str]]) -> None:
    sup = headers["supervisor"]
    assert client.post("/api/v1/tables/bac-1/shoe", headers=sup).status_code == 200
    body = {"reason": "x"}
    assert (
        client.post("/api/v1/tables/bac-1/shoe/change", json=body, headers=sup).status_code == 200
    )


def test_a_replayed_tail_is_never_older_than_the_log(served: Any) -> None:
    client, headers, runtime = served
    change_shoe(client, headers)
    before = logged(runtime)
    with client.websocket_connect(PUBLIC) as ws:  # reads the tail (a partial page), keeps it
        assert [ws.receive_json()["seq"] for _ in before] == before
    with client.websocket_connect(PUBLIC) as ws:  # served from what was kept
        assert [ws.receive_json()["seq"] for _ in before] == before
    change_shoe(client, headers)  # the table's head moves: the kept tail is stale
    after = logged(runtime)
    assert len(after) > len(before)
    with client.websocket_connect(PUBLIC) as ws:
        assert [ws.receive_json()["seq"] for _ in after] == after


def test_timing_frames_carry_the_service_send_and_commit_times(served: Any) -> None:
    client, headers, _ = served
    with client.websocket_connect(f"{PUBLIC}?timing=1") as ws:
        replayed = ws.receive_json()  # table_opened, from the log: a send time only
        assert set(replayed["t"]) == {"send"}
        started = time.monotonic()
        assert (
            client.post("/api/v1/tables/bac-1/shoe", headers=headers["supervisor"]).status_code
            == 200
        )
        live = ws.receive_json()
        assert live["type"] == "shoe_inserted"
        assert started <= live["t"]["commit"] <= live["t"]["send"] <= time.monotonic()
    with client.websocket_connect(PUBLIC) as ws:  # without it, frames are as they were
        assert "t" not in ws.receive_json()
    token = headers["regulator"]["Authorization"].removeprefix("Bearer ")
    url = f"/api/v1/tables/bac-1/stream?token={token}&timing=1"
    with client.websocket_connect(url) as ws:
        assert "send" in ws.receive_json()["t"]


def test_a_write_is_answered_while_a_crowd_replays(served: Any) -> None:
    client, headers, runtime = served
    for _ in range(120):  # more than one replay page of history
        change_shoe(client, headers)
    history = logged(runtime)
    sockets = [client.websocket_connect(PUBLIC) for _ in range(6)]
    entered = [s.__enter__() for s in sockets]
    try:
        got = [ws.receive_json()["seq"] for ws in entered]  # every one of them replaying
        assert got == [history[0]] * len(entered)
        body = {"amount": 100, "reference": "during"}
        answer = client.post("/api/v1/accounts/p/credit", json=body, headers=headers["operator"])
        assert answer.status_code == 200
        for ws in entered:
            rest = [ws.receive_json()["seq"] for _ in history[1:]]
            assert rest == history[1:]
    finally:
        for s in sockets:
            s.__exit__(None, None, None)


async def test_replay_bursts_wait_for_writes_in_flight_but_not_for_stuck_ones() -> None:
    # A write counts for a minute here: the burst must wait for it however long a loaded
    # machine takes to end it (with 0.5 s, a late wake-up would let the burst go first).
    writes = Writes(fresh=60)
    hub = StreamHub(asyncio.get_running_loop(), writes=writes, replay_share=1.0)
    try:
        order: list[str] = []
        end = writes.begin()

        async def burst() -> None:
            async with hub.turn(1):
                order.append("burst")

        task = asyncio.create_task(burst())
        await asyncio.sleep(0.05)
        order.append("write done")
        end()
        end()  # a second end counts nothing
        await asyncio.wait_for(task, 30)
        assert order == ["write done", "burst"]
        assert writes.count == 0 and writes.idle.is_set()
        # a write still running past `fresh` (a slow body, a long settlement) stops counting
        writes.fresh = 0.5  # read as each write begins
        stuck = writes.begin()
        assert not writes.idle.is_set()
        await asyncio.wait_for(writes.idle.wait(), 30)
        assert writes.count == 0
        other = writes.begin()
        stuck()  # ending late does not uncount the other write
        assert writes.count == 1 and not writes.idle.is_set()
        other()
        assert writes.count == 0 and writes.idle.is_set()
    finally:
        hub.close()


async def test_a_readers_card_carries_when_its_bytes_were_read(runtime: Any) -> None:
    """``t.read``: the reader's stamp on the report a card came of, kept for its events
    before the commit (the streams send as the commit lands, before the command's
    thread is back); a command no reader reported has none."""
    from table_service import metrics
    from table_service.table import commands as c
    from table_service.table.service import TableService
    from table_service.table.stream import StreamHub, stamped, with_timing

    service = TableService(runtime, TableConfig(table_id="read-1"))
    await service.start(with_reader=False)
    try:
        shoe = await service.execute(c.InsertShoe(), actor="supervisor:s")
        read = time.monotonic()
        card = await service.execute(c.CardScanned("AS"), actor="reader:r", seen=read)
        assert [metrics.COMMITS.read_at("read-1", e.seq) for e in card.events] == [read]
        assert all(metrics.COMMITS.read_at("read-1", e.seq) is None for e in shoe.events)
        framed = with_timing('{"seq":1}', time.monotonic(), read)
        timing = json.loads(framed)["t"]
        assert timing["read"] == round(read, 6)
        assert timing["read"] <= timing["commit"] <= timing["send"]
        # live frames: the same stamps, the commit and read times put in once per event and
        # audience, the send time per subscriber
        hub = StreamHub(asyncio.get_running_loop())
        event = card.events[0]
        metrics.COMMITS.record([event])  # as the app's event store hook does
        text = json.dumps({"seq": event.seq})
        prefix = hub.timed("public", "read-1", event, text)
        assert hub.timed("public", "read-1", event, text) is prefix
        first, second = stamped(prefix, 1.0), stamped(prefix, 2.5)
        assert json.loads(first)["t"] == {
            "read": round(read, 6),
            "commit": round(metrics.COMMITS.get("read-1", event.seq) or -1, 6),
            "send": 1.0,
        }
        assert json.loads(second)["t"]["send"] == 2.5
        assert json.loads(second)["seq"] == event.seq
        hub.close()
    finally:
        await service.stop()
