"""A shoe's events go from its reader's thread to the table's command thread: a card runs
there without waiting for the event loop, and no event ever overtakes an earlier one."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from audit.store import EventStore, StoredEvent
from shoe_reader.events import CardSeen, UnreadableCard
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.reader_lane import ReaderLane
from table_service.table.service import TableService

ACTOR = "reader:t-shoe"
READER_THREAD = "shoe-reader-t-shoe"


async def _until(check: Callable[[], bool], what: str) -> None:
    for _ in range(1000):  # a condition, bounded (10 s): never a guess at a duration
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(what)


async def _from_reader_thread(lane: ReaderLane, events: list[Any]) -> None:
    """``events`` as the reader's thread hands them over: one batch, off the loop."""
    thread = threading.Thread(target=lane.take, args=(events,), name=READER_THREAD)
    thread.start()
    await asyncio.to_thread(thread.join)


def _log(service: TableService) -> list[StoredEvent]:
    with service.runtime.sessions() as session:
        return EventStore.read(session, table_id=service.table_id)


@contextlib.asynccontextmanager
async def _shoe_in(make_runtime: Any) -> AsyncIterator[tuple[TableService, ReaderLane, int]]:
    """A started table with a shoe in and its reader's lane running on the loop: the
    table, the lane, and how many events the log held before the reader's."""
    service = TableService(make_runtime(), TableConfig(table_id="t"))
    await service.start(with_reader=False)
    lane = service.reader_lane(ACTOR)
    loop_side = asyncio.create_task(lane.run())
    try:
        await service.execute(c.InsertShoe(), actor="dealer:test")
        yield service, lane, len(_log(service))
    finally:
        loop_side.cancel()
        await service.stop()


async def test_a_card_after_an_event_the_loop_runs_waits_for_it(make_runtime: Any) -> None:
    """The indicator runs on the command thread at once; the unreadable card goes to the
    loop; the card read after it must not overtake it, so it goes to the loop too, behind
    it (run on the command thread at once, it would be burnt before the unreadable one)."""
    committed_on: list[str] = []
    async with _shoe_in(make_runtime) as (service, lane, before):
        service.runtime.store.subscribe(
            lambda _: committed_on.append(threading.current_thread().name)
        )
        events = [
            CardSeen(reader_id="t-shoe", seq=1, card="2S"),
            UnreadableCard(reader_id="t-shoe", seq=2, reason="smudged"),
            CardSeen(reader_id="t-shoe", seq=3, card="3H"),
        ]
        await _from_reader_thread(lane, events)
        await _until(lambda: lane.handed_back == 2, "the loop ran the two events handed back")
        assert lane.direct == 1  # the indicator only: the 3H was read behind the fault
        new = _log(service)[before:]
        # in the order read: the indicator, the unreadable card burnt, then the 3H
        assert [(e.type, e.payload["card"]) for e in new] == [
            ("card_burnt", "2S"),
            ("card_burnt", None),
            ("card_burnt", "3H"),
        ]
        assert new[1].payload["unreadable"]
        # the indicator on the reader's thread itself (the table's thread was idle), the
        # two the loop ran on the table's thread: none on the loop's
        assert committed_on[0] == READER_THREAD
        assert len(committed_on) == 3
        assert all(name.startswith("table-t") for name in committed_on[1:])


async def test_a_card_refused_on_the_command_thread_is_recorded_before_the_next(
    make_runtime: Any,
) -> None:
    """A card the table cannot take fails on the command thread and goes to the loop,
    which records it unreadable as it always did; the card read after it waits for that."""
    async with _shoe_in(make_runtime) as (service, lane, before):
        events = [
            CardSeen(reader_id="t-shoe", seq=1, card="ZZ"),
            CardSeen(reader_id="t-shoe", seq=2, card="2S"),
        ]
        await _from_reader_thread(lane, events)
        await _until(lambda: lane.handed_back == 2, "the loop ran both cards")
        assert lane.direct == 0
        new = _log(service)[before:]
        # the refused card is recorded unreadable (a burn, here) before the 2S is read
        assert [(e.type, e.payload["card"]) for e in new] == [
            ("card_burnt", None),
            ("card_burnt", "2S"),
        ]
        assert new[0].payload["unreadable"] and new[1].payload["indicator"]


async def test_a_cards_streams_run_before_its_thread_finishes_the_transaction(
    make_runtime: Any, monkeypatch: Any
) -> None:
    """Once a reader's card is committed, its command thread lets the loop run what the
    commit handed it (the streams' dispatch) before finishing the transaction's own
    bookkeeping: the loop ran it while the table's state had not moved yet. (The wait is
    made long here so that a loaded machine cannot end it first.) On SQLite the streams
    hear of the commit in the session's own commit, the last of the transaction: there
    is nothing to let the loop do before it, and the card does not wait."""
    import table_service.table.service as service_module

    monkeypatch.setattr(service_module, "STREAMS_FIRST_SECONDS", 30.0)
    loop = asyncio.get_running_loop()
    seen_by_loop: list[tuple[int, int]] = []  # (the card's seq, the table's last seq then)
    async with _shoe_in(make_runtime) as (service, lane, before):

        def dispatch(events: list[StoredEvent]) -> None:  # as the stream hub's publish
            loop.call_soon_threadsafe(
                lambda: seen_by_loop.append((events[-1].seq, service.state.last_seq))
            )

        service.runtime.store.subscribe(dispatch)
        await _from_reader_thread(lane, [CardSeen(reader_id="t-shoe", seq=1, card="2S")])
        await _until(lambda: lane.direct == 1 and bool(seen_by_loop), "the card ran")
        card_seq, table_seq = seen_by_loop[0]
        if service.runtime.engine.dialect.name == "postgresql":
            assert table_seq < card_seq  # the loop went first
        await _until(lambda: service.state.last_seq == card_seq, "the table's state moved")
        assert [e.type for e in _log(service)[before:]] == ["card_burnt"]


async def test_a_card_run_on_the_loops_own_thread_does_not_wait_for_the_loop(
    make_runtime: Any, monkeypatch: Any
) -> None:
    """A tool or test running a reader's card synchronously on the loop's thread: the loop
    cannot run while the command waits, so it does not wait."""
    import table_service.table.service as service_module

    monkeypatch.setattr(service_module, "STREAMS_FIRST_SECONDS", 60.0)
    async with _shoe_in(make_runtime) as (service, _lane, before):
        started = asyncio.get_running_loop().time()
        service.run_reader_command(
            c.CardScanned("2S", 1), ACTOR, CardSeen(reader_id="t-shoe", seq=1, card="2S")
        )
        loop_time = asyncio.get_running_loop().time()
        assert loop_time - started < 30  # not the 60 s wait: it did not wait at all
        assert [e.type for e in _log(service)[before:]] == ["card_burnt"]


async def test_a_card_read_while_the_table_is_idle_commits_on_the_readers_thread(
    make_runtime: Any,
) -> None:
    """Nothing running or waiting on the table's thread: the reader's thread, already
    running, commits the card itself rather than waking the table's thread for it."""
    committed_on: list[str] = []
    async with _shoe_in(make_runtime) as (service, lane, before):
        service.runtime.store.subscribe(
            lambda _: committed_on.append(threading.current_thread().name)
        )
        await _from_reader_thread(lane, [CardSeen(reader_id="t-shoe", seq=1, card="2S")])
        # committed when take returned: on the thread that called it
        assert committed_on == [READER_THREAD]
        assert lane.direct == 1
        assert [e.type for e in _log(service)[before:]] == ["card_burnt"]


async def test_a_card_read_while_the_table_is_busy_waits_its_turn_on_the_tables_thread(
    make_runtime: Any,
) -> None:
    """A command running on the table's thread and another waiting behind it: the card
    read meanwhile is not run on the reader's thread (it would overtake the waiting one,
    or run alongside the running one) but handed to the table's thread, after both; the
    reader's thread does not wait for them."""
    order: list[str] = []
    running = threading.Event()
    release = threading.Event()

    def first() -> None:
        running.set()
        release.wait(30)
        order.append("first")

    async with _shoe_in(make_runtime) as (service, lane, before):
        service.runtime.store.subscribe(
            lambda _: order.append(f"card on {threading.current_thread().name}")
        )
        service.on_command_thread(first)
        await asyncio.to_thread(running.wait, 30)
        service.on_command_thread(lambda: order.append("second"))
        await _from_reader_thread(lane, [CardSeen(reader_id="t-shoe", seq=1, card="2S")])
        assert order == []  # take returned with the table's thread still busy
        release.set()
        await _until(lambda: lane.direct == 1, "the card ran")
        assert order[:2] == ["first", "second"]
        assert len(order) == 3 and order[2].startswith("card on table-t")
        assert [e.type for e in _log(service)[before:]] == ["card_burnt"]
