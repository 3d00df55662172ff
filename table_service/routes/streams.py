"""The tables' WebSocket streams: the staff's and an operator's (``/tables/{t}/stream``,
by token) and the public one (anonymous, limited per table and per client address). Each
frame is the projection of a logged event for its class of viewer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from time import monotonic
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from audit.store import EventStore, StoredEvent
from table_service import metrics
from table_service.api.types import SEQ_MAX
from table_service.api.viewers import holding, ownership
from table_service.errors import Refused
from table_service.principals import Identity, authenticate
from table_service.routes.sockets import socket_of
from table_service.runtime import Runtime
from table_service.studio.errors import TableElsewhere, TableUnavailable
from table_service.table import policy
from table_service.table.service import Tables
from table_service.table.stream import (
    BURST_SEND_TIMEOUT,
    CLOSE_BAD_REQUEST,
    CLOSE_FORBIDDEN,
    CLOSE_NOT_FOUND,
    CLOSE_TOO_FAR_BEHIND,
    CLOSE_TOO_MANY,
    CLOSE_UNAUTHORIZED,
    MISSING,
    REPLAY_PAGE,
    SEND_BURST,
    Live,
    StreamHub,
    dealer_view,
    internal_view,
    operator_view,
    public_view,
    render,
    stamped,
    with_timing,
)


def add_streams(router: APIRouter) -> None:
    @router.websocket("/tables/{table_id}/stream")
    async def stream(websocket: WebSocket, table_id: str) -> None:
        """The staff stream. Refusals are an accepted socket closed with 4400 (bad
        parameter), 4401 (no valid token), 4403 (another table) or 4404 (no such table)."""
        runtime: Runtime = websocket.app.state.runtime
        params = websocket.query_params
        # A browser cannot set headers on a WebSocket: the consoles offer their token as a
        # sub-protocol ("bearer.<token>") beside "livetable.v1", so it is never in a URL.
        offered = [
            p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",")
        ]
        protocol_token = next((p[7:] for p in offered if p.startswith("bearer.")), "")
        bearer = (
            params.get("token")
            or protocol_token
            or websocket.headers.get("authorization", "").removeprefix("Bearer ")
        )
        # Accepted first, so every refusal reaches the client as a close code and reason.
        await websocket.accept(subprotocol="livetable.v1" if "livetable.v1" in offered else None)
        after_seq = _after_seq(params.get("after_seq"))
        if after_seq is None:
            await websocket.close(CLOSE_BAD_REQUEST, "after_seq is an integer 0..2^63-1")
            return
        identity = None
        if bearer and len(bearer) <= 256:
            identity = await asyncio.to_thread(_authenticate, runtime, bearer)
        if identity is None:
            await websocket.close(CLOSE_UNAUTHORIZED, "invalid or revoked token")
            return
        verdict = policy.permit(identity, "table.stream", table_id)
        if isinstance(verdict, policy.Refusal):
            await websocket.close(CLOSE_FORBIDDEN, verdict.reason[:120])
            return
        project: Callable[[StoredEvent], dict[str, Any] | None] = internal_view
        view_key = "internal"
        if identity.role.value == "dealer":
            project = dealer_view(holding(runtime, _anyone))
            view_key = "dealer"
        if identity.operator_id is not None:
            owned = ownership(runtime, identity.operator_id)
            project = operator_view(owned, identity.operator_id, holding(runtime, owned))
            view_key = identity.operator_id
        await _serve_stream(
            websocket,
            table_id,
            after_seq,
            project,
            view_key,
            address=None,
            timing=_timing(params),
            principal=identity.name,
        )

    @router.websocket("/public/tables/{table_id}/stream")
    async def public_stream(websocket: WebSocket, table_id: str) -> None:
        """Anonymous: public fields only, limited per table and per client address (4429)."""
        await websocket.accept()
        after_seq = _after_seq(websocket.query_params.get("after_seq"))
        if after_seq is None:
            await websocket.close(CLOSE_BAD_REQUEST, "after_seq is an integer 0..2^63-1")
            return
        address = websocket.client.host if websocket.client else "unknown"
        await _serve_stream(
            websocket,
            table_id,
            after_seq,
            public_view,
            "public",
            address=address,
            timing=_timing(websocket.query_params),
        )


def _anyone(_account: str) -> bool:
    return True  # any account playing the hand: for a dealer, whether a seated player banks


def _timing(params: Any) -> bool:
    """``timing=1``: each frame also carries the service's send and commit times."""
    return params.get("timing") in ("1", "true")


def _after_seq(text: str | None) -> int | None:
    if text is None:
        return 0
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        return None
    value = int(text)
    return value if value <= SEQ_MAX else None


def _authenticate(runtime: Runtime, token: str) -> Identity | None:
    with runtime.reads() as session:
        return authenticate(session, token)


async def _serve_stream(
    websocket: WebSocket,
    table_id: str,
    after_seq: int,
    view: Callable[[StoredEvent], dict[str, Any] | None],
    view_key: str,
    *,
    address: str | None,
    timing: bool = False,
    principal: str | None = None,
) -> None:
    manager: Tables = websocket.app.state.tables
    hub: StreamHub = websocket.app.state.hub
    if table_id not in manager.tables:
        await websocket.close(*_not_here(manager, table_id))
        return
    ticket = hub.admit(table_id, address)
    if isinstance(ticket, str):
        await websocket.close(CLOSE_TOO_MANY, ticket)
        return
    runtime: Runtime = websocket.app.state.runtime
    queue = hub.subscribe(table_id)
    if principal is not None:
        hub.hold(principal, queue)  # its token revoked: the stream ends (4401)
    last = after_seq
    audience = {"public": "public", "internal": "staff", "dealer": "staff"}.get(
        view_key, "operator"
    )
    metrics.STREAM_SUBSCRIBERS.labels(audience).inc()

    def read_after(seq: int) -> list[StoredEvent]:
        with runtime.reads() as session:
            return EventStore.read(session, after_seq=seq, table_id=table_id, limit=REPLAY_PAGE)

    async def until_disconnect() -> None:
        # A client that goes away while the table is quiet must end this handler too,
        # or it waits on the queue forever (and holds up the server's shutdown).
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass

    gone = asyncio.create_task(until_disconnect())
    gone.add_done_callback(lambda _: queue.put_nowait(None))
    replay: asyncio.Task[int | None] | None = None
    try:
        held = queue if principal is not None else None
        replay = asyncio.create_task(
            _replay(websocket, hub, table_id, view_key, view, last, read_after, gone, timing, held)
        )
        # A replay waits its turn (a replay slot, then the process's one burst at a time
        # behind the writes): after a takeover a crowd of resuming clients queues there for
        # tens of seconds. A client that leaves meanwhile ends its stream now, giving back
        # its per-address slot, instead of when its turn comes: its reconnection (or its
        # neighbours') would otherwise be refused (4429) by its own abandoned stream.
        await asyncio.wait({replay, gone}, return_when=asyncio.FIRST_COMPLETED)
        if not replay.done():
            return  # the client left: the replay is cancelled below
        replayed = replay.result()
        if replayed is None:
            return  # too slow to take the replay: closed
        # The live path, once per subscriber per event: nothing here but the send may wait
        # (the frame rendered once per audience, an operator's off the loop, the timing's
        # commit and read times put in once per audience). The public and staff audiences'
        # frames (rendered on the loop) the hub writes itself while this task waits idle
        # on an empty queue (see stream.Live); this task sends what it finds queued.
        send = websocket.send_text
        shared = view_key == "public" or view_key == "internal"
        socket = socket_of(websocket) if shared else None
        live = Live(table_id, view_key, view, timing, socket, replayed) if socket else None
        if live is not None:
            hub.go_live(queue, live)
        last = replayed
        while True:
            # a client gone puts None here too (no wait per event)
            if queue.qsize():
                event = queue.get_nowait()
            elif live is None:
                event = await queue.get()
            else:
                live.idle = True
                try:
                    event = await queue.get()
                finally:
                    live.idle = False
            if live is not None:
                last = live.last  # and what the hub wrote meanwhile
            if event is None:
                if not gone.done():
                    await websocket.close(*_why_ended(hub, manager, queue, table_id))
                return
            if event.seq <= last:
                continue
            if shared:
                frame = hub.rendered(view_key, view, event)
            else:
                frame = await _frame(hub, view_key, view, event)
            if frame is not None:
                if timing:
                    frame = stamped(hub.timed(view_key, table_id, event, frame), monotonic())
                await send(frame)
                metrics.delivered(table_id, event.seq)
            last = event.seq
            if live is not None:
                live.last = last
    except (WebSocketDisconnect, RuntimeError):
        pass  # the client went away mid-send
    finally:
        if replay is not None and not replay.done():
            replay.cancel()
            replay.add_done_callback(_retrieved)
        metrics.STREAM_SUBSCRIBERS.labels(audience).dec()
        gone.cancel()
        hub.unsubscribe(table_id, queue)
        hub.release(principal, queue)
        hub.leave(ticket)


def _retrieved(task: asyncio.Task[int | None]) -> None:
    """A replay cancelled because its client left: whatever it ended with is of no use."""
    if not task.cancelled():
        task.exception()


async def _replay(
    websocket: WebSocket,
    hub: StreamHub,
    table_id: str,
    view_key: str,
    view: Callable[[StoredEvent], dict[str, Any] | None],
    last: int,
    read_after: Callable[[int], list[StoredEvent]],
    gone: asyncio.Task[None],
    timing: bool,
    held: asyncio.Queue[StoredEvent | None] | None = None,
) -> int | None:
    """The table's history after ``last``, page by page, in bursts that take turns on the
    shared event loop: the last seq sent, or None when the client was too slow or its
    token was revoked (closed). ``held``: a principal's stream, whose token is checked
    before each page (revoked by another process while it replays: 4401 before the next)."""
    while not gone.done():
        if held is not None and not await hub.still_held(held):
            revoked = hub.revoked(held)
            await websocket.close(
                *(
                    (CLOSE_UNAUTHORIZED, "token revoked")
                    if revoked
                    else (CLOSE_TOO_FAR_BEHIND, "could not check the token; resume from seq")
                )
            )
            return None
        # replays take turns on the shared event loop
        async with metrics.replay_turn(hub.replay_slots):
            page = await hub.page(table_id, view_key, last, read_after, view)
            for start in range(0, len(page), SEND_BURST):
                burst = page[start : start + SEND_BURST]
                texts = [text for _, text in burst if text is not None]
                if texts and not await _send_burst(websocket, hub, texts, timing):
                    await websocket.close(CLOSE_TOO_FAR_BEHIND, "too slow; resume from seq")
                    return None
                last = burst[-1][0]
        if len(page) < REPLAY_PAGE:
            break
    return last


async def _send_burst(websocket: WebSocket, hub: StreamHub, texts: list[str], timing: bool) -> bool:
    """One burst of replayed frames, one burst at a time in the process, writes first:
    False when the client did not take it in time."""
    async with hub.turn(len(texts)):
        try:
            async with asyncio.timeout(BURST_SEND_TIMEOUT):
                for text in texts:
                    await websocket.send_text(with_timing(text, None) if timing else text)
        except TimeoutError:
            return False
    return True


async def _frame(
    hub: StreamHub,
    view_key: str,
    view: Callable[[StoredEvent], dict[str, Any] | None],
    event: StoredEvent,
) -> str | None:
    """A live event's frame, rendered once per event per class of viewer (public, staff,
    each operator); an operator's view may look up an account's owner: off the loop."""
    if view_key == "public" or view_key == "internal":
        return hub.rendered(view_key, view, event)
    frame: str | None = hub.kept(view_key, event.seq)
    if frame is MISSING:
        frame = await asyncio.get_running_loop().run_in_executor(
            hub.replay_pool, render, view, event
        )
        hub.keep(view_key, event.seq, frame)
    return frame


def _why_ended(
    hub: StreamHub,
    manager: Tables,
    queue: asyncio.Queue[StoredEvent | None],
    table_id: str,
) -> tuple[int, str]:
    """The close of a live stream the hub ended: its token revoked (4401), its table handed
    over (resume where it runs now), or the client too far behind."""
    if hub.revoked(queue):
        return CLOSE_UNAUTHORIZED, "token revoked"
    if table_id not in manager.tables:
        return _not_here(manager, table_id)
    return CLOSE_TOO_FAR_BEHIND, "too far behind; resume from seq"


def _not_here(manager: Tables, table_id: str) -> tuple[int, str]:
    """The WebSocket close for a table this process does not run: 4421 and the owner's
    address (a studio's table on another process), 4503 (being taken over), or 4404."""
    try:
        manager.get(table_id)
    except TableElsewhere as exc:
        return 4421, str(exc.details.get("owner_url") or exc.details.get("owner"))
    except TableUnavailable as exc:
        return 4503, exc.reason
    except Refused as exc:
        return CLOSE_NOT_FOUND, exc.reason
    return 4503, f"table {table_id} is starting"
