"""Streams resumed by a crowd, as after a studio's takeover (every client of a table
resuming from the same seq, queueing for replay turns): a stream's per-address slot is
given back as soon as its client leaves, even while it still waits for its turn (its
reconnection must not find its own abandoned stream holding the slot: 4429); and a client
that resumes while another's read of the same page is on its way gets no gap."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from audit.store import EventStore
from table_service.principals import add_principal
from tests.support.served_app import served

pytestmark = pytest.mark.timeout(60)

PUBLIC = "/api/v1/public/tables/bac-1/stream"


def public_streams() -> float:
    return REGISTRY.get_sample_value("livetable_stream_subscribers", {"audience": "public"}) or 0.0


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_stream_waiting_for_its_replay_turn_gives_its_slot_back_when_its_client_leaves(
    make_runtime: Any,
) -> None:
    runtime = make_runtime(stream_max_public_per_address=1, stream_replay_concurrency=1)
    with served(runtime) as (base, app):
        hub = app.state.hub
        # Every replay slot taken (a crowd replaying): a new stream waits for its turn.
        await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(hub.replay_slots.acquire(), hub.loop)
        )
        idle = public_streams()
        leaving = await connect(f"{base}{PUBLIC}?after_seq=0")
        # The address's one slot is the waiting stream's: another is refused.
        async with connect(f"{base}{PUBLIC}?after_seq=0") as refused:
            with pytest.raises(ConnectionClosed) as closed:
                await refused.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4429
        assert public_streams() == idle + 1
        await leaving.close()  # the client gives up while its stream still waits
        deadline = time.monotonic() + 10
        while public_streams() > idle:  # its stream ends (it had waited for its turn)
            assert time.monotonic() < deadline, "a stream whose client left kept its slot"
            await asyncio.sleep(0.02)
        async with connect(f"{base}{PUBLIC}?after_seq=0") as again:  # the slot is free
            hub.loop.call_soon_threadsafe(hub.replay_slots.release)
            first = json.loads(await asyncio.wait_for(again.recv(), 10))
            assert first["type"] == "table_opened"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_client_resuming_while_the_same_page_is_being_read_misses_nothing(
    make_runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(stream_replay_concurrency=2)
    with runtime.sessions.begin() as session:
        token = add_principal(session, runtime.store, "sup", "supervisor", actor="test")
    # A replay's read of the log that is slow to come back (a loaded host: the replay
    # threads queued, the loop late to take the answer): held after its query, until let go.
    read = EventStore.read
    snapshot, let_go = threading.Event(), threading.Event()

    def slow_read(session: Any, **kw: Any) -> Any:
        events = read(session, **kw)
        if threading.current_thread().name.startswith("replay") and not let_go.is_set():
            snapshot.set()
            let_go.wait(20)
        return events

    monkeypatch.setattr(EventStore, "read", staticmethod(slow_read))
    with served(runtime) as (base, app):
        http = httpx.AsyncClient(
            base_url=base.replace("ws", "http", 1), headers={"Authorization": f"Bearer {token}"}
        )

        async def post(path: str, body: Any = None) -> None:
            answer = await http.post(f"/api/v1/tables/bac-1{path}", json=body)
            assert answer.status_code == 200, answer.text

        def logged() -> list[int]:
            with runtime.reads() as session:
                return [e.seq for e in read(session, table_id="bac-1")]

        first = await connect(f"{base}{PUBLIC}?after_seq=0")
        second = None
        try:
            await asyncio.to_thread(snapshot.wait, 20)  # the first client's page is read...
            await post("/shoe")  # ...an event is committed and published after it...
            second = await connect(f"{base}{PUBLIC}?after_seq=0")  # ...the same page wanted
            deadline = time.monotonic() + 10
            while not app.state.hub.replay_slots.locked():  # both streams wait for the page
                assert time.monotonic() < deadline
                await asyncio.sleep(0.01)
            let_go.set()
            await post("/shoe/change", {"reason": "test"})  # and the stream goes on live
            wanted = logged()
            for ws in (first, second):
                got: list[int] = []
                while not got or got[-1] < wanted[-1]:
                    got.append(json.loads(await asyncio.wait_for(ws.recv(), 10))["seq"])
                assert got == wanted
        finally:
            let_go.set()
            await first.close()
            if second is not None:
                await second.close()
            await http.aclose()


async def test_a_table_dropped_and_taken_again_is_replayed_from_the_log_not_from_before() -> None:
    """A process loses a table's lease (its streams end), another process writes the
    table, and the first takes it back: what a replay read or kept in between is older
    than the log, and a client resuming then must not be given it."""
    from audit.store import StoredEvent
    from table_service.table.stream import StreamHub

    def event(seq: int) -> StoredEvent:
        return StoredEvent(seq, "t", None, "shoe_inserted", "x", "", {}, "", "")

    log = [event(1)]

    def load(after: int) -> list[StoredEvent]:
        return [e for e in log if e.seq > after]

    def view(e: StoredEvent) -> dict[str, Any]:
        return {"seq": e.seq}

    hub = StreamHub(asyncio.get_running_loop())
    try:
        hub._dispatch([event(1)])  # written here
        hub.end("t")  # the lease lost: the table's streams end
        # a stream still replaying when it ended reads (and would keep) the log's tail
        assert [seq for seq, _ in await hub.page("t", "public", 0, load, view)] == [1]
        log.append(event(2))  # the table's new writer, another process
        # taken back here: a client resumes before this process writes anything
        hub.subscribe("t")
        assert [seq for seq, _ in await hub.page("t", "public", 0, load, view)] == [1, 2]
    finally:
        hub.close()
