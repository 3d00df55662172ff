"""The stream hub's revocation check (issue 30, F1b): before a batch of events reaches a
principal's open stream, the hub asks the database which of its principals are revoked —
unless the batch follows, with no gap in the log's one sequence, what the hub has already
seen: then no other process can have revoked a token before it (a revocation is an event
of the same log), and asking would only delay the staff's and operators' streams."""

from __future__ import annotations

import asyncio

from audit.store import StoredEvent
from table_service.table.stream import REVOKED, StreamHub


def _event(seq: int, kind: str = "card_dealt", table: str = "t1", **payload: str) -> StoredEvent:
    return StoredEvent(
        seq=seq, table_id=table, round_id=None, type=kind, actor="system",
        ts="2026-12-05T00:00:00Z", payload=dict(payload), prev_hash="", hash="",
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
            return names & revoked

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
