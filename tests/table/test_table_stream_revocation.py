"""The stream hub's revocation check (issue 30, F1b): before a batch of events reaches a
principal's open stream, the hub asks the database which of its principals are revoked —
unless the batch follows, with no gap in the log's one sequence, what the hub has already
seen: then no other process can have revoked a token before it (a revocation is an event
of the same log), and asking would only delay the staff's and operators' streams."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from audit.store import StoredEvent
from table_service.app import build_app
from table_service.principals import add_principal, revoke_principal
from table_service.table.config import TableConfig
from table_service.table.stream import REPLAY_PAGE, REVOKED, StreamHub


def _event(seq: int, kind: str = "card_dealt", table: str = "t1", **payload: str) -> StoredEvent:
    return StoredEvent(
        seq=seq,
        table_id=table,
        round_id=None,
        type=kind,
        actor="system",
        ts="2026-12-05T00:00:00Z",
        payload=dict(payload),
        prev_hash="",
        hash="",
    )


async def _drain(queue: asyncio.Queue[StoredEvent | None]) -> list[int | None]:
    got: list[int | None] = []
    while not queue.empty():
        item = queue.get_nowait()
        got.append(None if item is None else item.seq)
    return got


async def _until(condition: object, what: str) -> None:
    for _ in range(6000):  # generous: the check runs on a thread of its own
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"not reached: {what}")


def test_a_batch_after_a_gap_is_checked_and_a_gap_free_one_is_not() -> None:
    async def run() -> None:
        asked: list[frozenset[str]] = []
        revoked: set[str] = set()

        def revoked_among(names: frozenset[str]) -> set[str]:
            asked.append(names)
            return set(names & revoked)

        hub = StreamHub(asyncio.get_running_loop(), revoked_among=revoked_among)
        try:
            queue = hub.subscribe("t1")
            hub.hold("sup", queue)
            hub._dispatch([_event(1)])  # nothing seen before: checked
            await _until(lambda: len(asked) == 1 and not hub._checking, "the first check")
            hub._dispatch([_event(2), _event(3)])  # follows 1: delivered at once
            assert len(asked) == 1
            assert await _drain(queue) == [1, 2, 3]
            # seq 4 was another process's (a revocation by the CLI): the gap is checked
            revoked.add("sup")
            hub._dispatch([_event(5)])
            await _until(lambda: len(asked) == 2 and not hub._checking, "the gap's check")
            assert await _drain(queue) == [None], "a revoked principal's stream ends first"
            assert hub.revoked(queue)
        finally:
            hub.close()

    asyncio.run(run())


def test_a_revocation_this_process_logged_ends_the_stream_without_a_check() -> None:
    async def run() -> None:
        asked: list[frozenset[str]] = []

        def revoked_among(names: frozenset[str]) -> set[str]:
            asked.append(names)
            return set()

        hub = StreamHub(asyncio.get_running_loop(), revoked_among=revoked_among)
        try:
            hub._dispatch([_event(1, table="system")])  # seen: the hub knows seq 1
            queue = hub.subscribe("t1")
            hub.hold("sup", queue)
            hub._dispatch([_event(2, REVOKED, table="system", name="sup"), _event(3)])
            assert asked == []
            assert await _drain(queue) == [None]
            assert hub.revoked(queue)
        finally:
            hub.close()

    asyncio.run(run())


def test_a_batch_arriving_while_a_check_runs_waits_behind_it() -> None:
    async def run() -> None:
        release = asyncio.Event()
        loop = asyncio.get_running_loop()

        def revoked_among(names: frozenset[str]) -> set[str]:
            asyncio.run_coroutine_threadsafe(release.wait(), loop).result(timeout=60)
            return set()

        hub = StreamHub(loop, revoked_among=revoked_among)
        try:
            queue = hub.subscribe("t1")
            hub.hold("sup", queue)
            hub._dispatch([_event(1)])  # checked (first batch), the check held open
            hub._dispatch([_event(2)])  # follows 1 but must not overtake it
            assert await _drain(queue) == []
            release.set()
            await _until(lambda: queue.qsize() >= 2, "both events after the checks")
            assert await _drain(queue) == [1, 2]
        finally:
            hub.close()

    asyncio.run(run())


# -- a replay: its pages come from the log, not from the batches the hub checks -------------
def test_a_token_revoked_by_another_process_mid_replay_ends_before_the_next_page(
    make_runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A supervisor's stream replays a history of more than two pages; once its first page
    is read, another process (a second runtime on the same database, as the CLI's
    ``livetable principal revoke``) revokes its token. The hub never sees that revocation
    published, and a replay's pages pass no batch check: before, the stream took every
    page of the history and was closed only at the first live event. Now the token is
    asked of the database before each page: the first page and then 4401."""
    runtime = make_runtime()
    elsewhere = make_runtime()  # another process's connection to the same database
    with runtime.sessions.begin() as session:
        tokens = {
            name: add_principal(session, runtime.store, name, role, actor="test")
            for name, role in (("dealer", "dealer"), ("watcher", "supervisor"))
        }
    app = build_app(runtime, [TableConfig(table_id="bac-1")], with_readers=False)
    with TestClient(app) as client:
        dealer = {"Authorization": f"Bearer {tokens['dealer']}"}
        for _ in range(2 * REPLAY_PAGE + 20):  # the dealer's sign-ins: a long history
            answer = client.post("/api/v1/tables/bac-1/duty", headers=dealer)
            assert answer.status_code == 200, answer.text
        hub = app.state.hub
        original = hub.page
        pages: list[int] = []

        async def page(*args: Any, **kwargs: Any) -> Any:
            read = await original(*args, **kwargs)
            pages.append(len(read))
            if len(pages) == 1:  # revoked elsewhere once the first page is read
                await asyncio.to_thread(_revoke_elsewhere, elsewhere, "watcher")
            return read

        monkeypatch.setattr(hub, "page", page)
        frames = 0
        history = 1 + 2 * REPLAY_PAGE + 20  # the table opened, the sign-ins
        url = f"/api/v1/tables/bac-1/stream?token={tokens['watcher']}"
        with client.websocket_connect(url) as ws, pytest.raises(WebSocketDisconnect) as closed:
            while True:
                ws.receive_text()
                frames += 1
                if frames == history:  # the whole replay taken: a live event ends it
                    client.post("/api/v1/tables/bac-1/duty", headers=dealer)
    assert closed.value.code == 4401, closed.value
    assert len(pages) == 1, f"pages read after the revocation: {pages[1:]}"
    assert frames == REPLAY_PAGE  # the first page only (each event one staff frame)


def _revoke_elsewhere(runtime: Any, name: str) -> None:
    with runtime.sessions.begin() as session:
        revoke_principal(session, runtime.store, name, actor="cli:test")
