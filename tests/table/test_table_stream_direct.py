"""Live frames written by the stream hub itself (stream.Live, routes/sockets.py): over a
real server, each audience's frames are its projection of the log, in order, only after
the commit, whether the hub wrote them to an idle subscriber or its task sent them; a
subscriber whose transport is paused (backpressure) gets them from its task once it
resumes, in order, and the hub writes to it again once it has caught up; a connection
with permessage-deflate is left to the ASGI send."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from websockets.asyncio.client import ClientConnection, connect
from websockets.frames import Frame, Opcode

from audit.store import EventStore, StoredEvent
from table_service.principals import add_principal
from table_service.table.stream import frame_header, internal_view, public_view, render
from tests.support.served_app import served

pytestmark = pytest.mark.timeout(120)

PUBLIC = "/api/v1/public/tables/bac-1/stream"


def logged(runtime: Any) -> list[StoredEvent]:
    with runtime.reads() as session:
        return EventStore.read(session, after_seq=0, table_id="bac-1", limit=10_000)


def seen(
    view: Callable[[StoredEvent], dict[str, Any] | None], events: list[StoredEvent]
) -> list[Any]:
    """What an audience's frames must hold for ``events``: their projection, in order."""
    return [json.loads(text) for e in events if (text := render(view, e)) is not None]


async def frames(ws: ClientConnection, count: int) -> list[dict[str, Any]]:
    return [json.loads(await asyncio.wait_for(ws.recv(), 60)) for _ in range(count)]


def delivered() -> float:
    """Live frames counted in the commit -> subscriber metric for the table."""
    sample = "livetable_commit_to_subscriber_seconds_count"
    return REGISTRY.get_sample_value(sample, {"table": "bac-1"}) or 0.0


def untimed(frame: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in frame.items() if k != "t"}


async def command(http: httpx.AsyncClient) -> None:
    """One command on the table (a shoe in, or changed): its events committed and answered."""
    answer = await http.post("/api/v1/tables/bac-1/shoe")
    if answer.status_code == 409:  # a shoe in already
        answer = await http.post("/api/v1/tables/bac-1/shoe/change", json={"reason": "x"})
    assert answer.status_code == 200, answer.text


def test_the_frame_header_is_the_websocket_library_s_own() -> None:
    for length in (0, 1, 125, 126, 300, 65_535, 65_536, 70_000):
        payload = b"x" * length
        reference = Frame(Opcode.TEXT, payload).serialize(mask=False)
        assert frame_header(length) + payload == reference


@pytest.mark.parametrize("compression", [False, True])
async def test_live_frames_are_each_audience_s_projection_in_order_from_the_hub(
    make_runtime: Any, compression: bool
) -> None:
    runtime = make_runtime()
    with runtime.sessions.begin() as session:
        token = add_principal(session, runtime.store, "sup", "supervisor", actor="test")
    with served(runtime, compression=compression) as (base, app):
        hub = app.state.hub
        http = httpx.AsyncClient(
            base_url=base.replace("ws", "http", 1), headers={"Authorization": f"Bearer {token}"}
        )
        staff_url = f"{base}/api/v1/tables/bac-1/stream?token={token}&timing=1"
        async with (
            connect(f"{base}{PUBLIC}?timing=1") as timed,
            connect(f"{base}{PUBLIC}") as plain,
            connect(staff_url) as staff,
        ):
            audiences = [(timed, public_view), (plain, public_view), (staff, internal_view)]
            history = logged(runtime)
            for ws, view in audiences:  # the replay, from the log
                assert [untimed(f) for f in await frames(ws, len(seen(view, history)))] == seen(
                    view, history
                )
            await command(http)  # live: whoever sends it, each client is idle after it
            first = logged(runtime)[len(history) :]
            for ws, view in audiences:
                assert [untimed(f) for f in await frames(ws, len(seen(view, first)))] == seen(
                    view, first
                )
            written = hub.direct_frames
            observed = delivered()
            for _ in range(4):
                await command(http)
            later = logged(runtime)[len(history) + len(first) :]
            received = 0
            for ws, view in audiences:
                got = await frames(ws, len(seen(view, later)))
                assert [untimed(f) for f in got] == seen(view, later)
                received += len(got)
                for frame in got:
                    if ws is not plain:  # sent after the commit, stamped as it was sent
                        assert frame["t"]["commit"] <= frame["t"]["send"]
                    else:
                        assert "t" not in frame
            assert received > 0
            # The hub wrote each of them (the subscribers idle), unless the connection
            # compresses its frames: then every one went through the ASGI send.
            assert hub.direct_frames - written == (0 if compression else received)
            # and each of them is in the commit -> subscriber metric, once
            deadline = time.monotonic() + 30
            while delivered() < observed + received:
                assert time.monotonic() < deadline, "frames missing from the metric"
                await asyncio.sleep(0.01)
            assert delivered() == observed + received
        await http.aclose()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_paused_subscriber_gets_its_frames_in_order_from_its_task_then_from_the_hub(
    make_runtime: Any,
) -> None:
    runtime = make_runtime()
    with runtime.sessions.begin() as session:
        token = add_principal(session, runtime.store, "sup", "supervisor", actor="test")
    with served(runtime) as (base, app):
        hub = app.state.hub
        http = httpx.AsyncClient(
            base_url=base.replace("ws", "http", 1), headers={"Authorization": f"Bearer {token}"}
        )

        async def on_loop(call: Callable[[], Any]) -> Any:
            async def run() -> Any:
                return call()

            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), hub.loop))

        async with connect(f"{base}{PUBLIC}?timing=1") as ws:
            history = logged(runtime)
            await frames(ws, len(seen(public_view, history)))
            await command(http)
            done = len(logged(runtime))
            await frames(ws, len(seen(public_view, logged(runtime)[len(history) :])))
            (live,) = await on_loop(lambda: list(hub._direct.values()))
            protocol = live.socket.protocol
            # The transport's buffer past its high-water mark: uvicorn's send would wait.
            await on_loop(protocol.pause_writing)
            written = hub.direct_frames
            await command(http)  # answered after its event reached the hub
            assert hub.direct_frames == written  # not written past the pause
            assert not live.idle  # its task holds it, waiting to send
            # The transport resumes, and in the same turn of the loop, before the task has
            # sent what it holds, the next commit's events arrive: they wait behind it.
            caught: list[list[StoredEvent]] = []
            hub._dispatch = caught.append  # the hand-over to the loop, held
            await command(http)
            del hub._dispatch
            (batch,) = caught

            def resume_then_dispatch() -> None:
                protocol.resume_writing()
                hub._dispatch(batch)

            await on_loop(resume_then_dispatch)
            held = logged(runtime)[done:]
            got = await frames(ws, len(seen(public_view, held)))
            assert [untimed(f) for f in got] == seen(public_view, held)
            await command(http)  # caught up and idle again: the hub writes to it
            after = logged(runtime)[done + len(held) :]
            got = await frames(ws, len(seen(public_view, after)))
            assert [untimed(f) for f in got] == seen(public_view, after)
            assert hub.direct_frames - written == len(got) > 0
        await http.aclose()


def test_a_connection_without_the_parts_the_hub_reads_is_left_to_send() -> None:
    """uvicorn's and websockets' attributes the hub checks before writing are not public
    API: a protocol of a version that lacks one gets no direct writer (its frames go
    through ``send``), where reading the attribute would fail its subscriber's frames."""
    from types import SimpleNamespace

    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    from table_service.routes.sockets import CONNECTION, socket_of

    def socket_with(protocol: object) -> object:
        # a stand-in for the socket: only its scope is read
        return socket_of(SimpleNamespace(scope={CONNECTION: protocol}))  # type: ignore[arg-type]

    bare = object.__new__(WebSocketsSansIOProtocol)  # none of its connection's state
    assert socket_with(bare) is None
    whole = object.__new__(WebSocketsSansIOProtocol)
    conn = SimpleNamespace(state=None, expect_continuation_frame=False, writes=[], extensions=[])
    for part in ("writable", "disconnected", "close_sent", "initial_response", "transport"):
        setattr(whole, part, None)
    whole.conn = conn  # type: ignore[assignment]  # a stand-in connection
    assert socket_with(whole) is not None
    del conn.writes
    assert socket_with(whole) is None
    assert socket_with(object()) is None  # another implementation altogether
