"""A scanned card commits in one round trip when its process knows the log's head
(PostgreSQL: the lock, the fence, the head's check, the writes and the COMMIT together).
Another writer's append since, or a lease lost, is refused by the server with nothing
written; the card is then linked to the real head in the same transaction (two round
trips, as usual), or refused by the fence the usual way. On SQLite the card goes the usual
way. Either way each card lands once, in order, with the chain intact."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from audit.store import EventStore, NewEvent, OneTripRefused
from audit.verify import verify_database
from table_service.studio.lease import LeaseLost, Leases
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.service import TableService

READER = "reader:one-trip"


def _append(runtime: Any, table_id: str) -> None:
    """Another process's append: the head moves on without this one knowing."""
    with runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent(table_id, "noted", "test", {})])


def _log(runtime: Any, table_id: str) -> list[tuple[str, Any]]:
    with runtime.sessions() as session:
        keys = {runtime.signer.key_id: runtime.signer.public_key}
        assert verify_database(session, keys, allow_unsigned_tail=True).ok
        events = EventStore.read(session, table_id=table_id)
    return [(e.type, e.payload.get("card")) for e in events]


async def _table(runtime: Any, table_id: str) -> TableService:
    service = TableService(runtime, TableConfig(table_id=table_id, betting_seconds=600))
    await service.start(with_reader=False)
    await service.execute(c.InsertShoe(), actor="supervisor:s")  # this process appends last
    return service


def test_a_card_lands_once_whether_or_not_the_head_moved(make_runtime: Any) -> None:
    a_rt, b_rt = make_runtime(), make_runtime()

    async def go() -> None:
        service = await _table(a_rt, "one-1")
        await service.execute(c.CardScanned("AS"), actor=READER)  # the head as a left it
        _append(b_rt, "elsewhere")
        await service.execute(c.CardScanned("2S"), actor=READER)  # moved: linked again
        await service.stop()

    asyncio.run(go())
    cards = [card for kind, card in _log(a_rt, "one-1") if card is not None]
    assert cards == ["AS", "2S"]  # each once, in order
    if a_rt.engine.dialect.name == "postgresql":
        trips = {"committed": 1, "relinked": 0, "head_moved": 1, "refused": 0}
        assert a_rt.store.one_trips == trips


def _member(runtime: Any, node: str) -> Leases:
    leases = Leases(runtime.engine, node, f"http://{node}", 60_000)
    leases.fenced = frozenset({"one-2"})
    leases.install_fence(runtime.sessions, runtime.store)
    return leases


def test_a_deposed_process_writes_no_card(make_runtime: Any) -> None:
    a_rt, b_rt = make_runtime(), make_runtime()
    a, b = _member(a_rt, "a"), _member(b_rt, "b")
    assert a.acquire("one-2") == 1

    async def go() -> None:
        service = await _table(a_rt, "one-2")
        await service.execute(c.CardScanned("AS"), actor=READER)  # held: one trip
        with a_rt.engine.begin() as conn:  # a stalls past its lease; b takes the table
            conn.execute(text("UPDATE studio_leases SET expires_ms = 0"))
        assert b.acquire("one-2") == 2
        with pytest.raises(LeaseLost):
            await service.execute(c.CardScanned("2S"), actor=READER)
        await service.stop()

    asyncio.run(go())
    assert [card for _, card in _log(a_rt, "one-2") if card is not None] == ["AS"]
    if a_rt.engine.dialect.name == "postgresql":
        trips = {"committed": 1, "relinked": 0, "head_moved": 0, "refused": 1}
        assert a_rt.store.one_trips == trips
    _append(a_rt, "_wallet")  # a's connections are clean; unfenced tables still pass
    _append(b_rt, "one-2")


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_takeover_in_flight_refuses_the_one_trip(make_runtime: Any) -> None:
    """The trip's fence waits on the lease row a takeover holds (``FOR UPDATE``) and
    reads it again once the takeover commits: the new token refuses the trip."""
    a_rt, b_rt = make_runtime(), make_runtime()
    a = _member(a_rt, "a")
    assert a.acquire("one-3") == 1
    _append(a_rt, "one-3")  # a knows the head
    with b_rt.engine.begin() as conn:  # b's takeover, in flight
        conn.execute(text("SELECT token FROM studio_leases WHERE table_id = 'one-3' FOR UPDATE"))
        writer, done = _one_trip_waiting(a_rt, "one-3", b_rt, "livetable lease lost")
        assert done == []  # a's trip waits for the lease row
        conn.execute(
            text("UPDATE studio_leases SET owner = 'b', token = 2 WHERE table_id = 'one-3'")
        )
    writer.join(60)
    assert len(done) == 1 and isinstance(done[0], OneTripRefused)
    assert a_rt.store.one_trips["refused"] == 1
    assert [kind for kind, _ in _log(a_rt, "one-3")] == ["noted"]


def _one_trip_waiting(
    runtime: Any, table_id: str, other: Any, marker: str
) -> tuple[threading.Thread, list[BaseException | None]]:
    """A card of ``table_id`` committed in one trip on a thread of its own, returned once
    ``other`` sees it wait on a lock in its statement holding ``marker`` (or after a
    generous bound); the thread and, once it ends, how the trip ended (None: committed)."""
    done: list[BaseException | None] = []

    def one_trip() -> None:
        try:
            with runtime.sessions.begin() as session:
                runtime.store.lock(session, tables=(table_id,), one_trip=True)
                runtime.store.append(session, [NewEvent(table_id, "card", "a", {})], defer=True)
                runtime.store.commit(session)
            done.append(None)
        except BaseException as exc:
            done.append(exc)

    writer = threading.Thread(target=one_trip)
    writer.start()
    deadline = time.monotonic() + 60
    while not _waiting(other, marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    return writer, done


def _waiting(runtime: Any, marker: str) -> bool:
    """A trip (a statement of it holding ``marker``) waits on a lock."""
    with runtime.engine.connect() as conn:
        waiting = conn.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND query LIKE :marker"
            ),
            {"marker": f"%{marker}%"},
        )
        return bool(waiting.scalar())


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_trip_without_an_answer_is_not_run_again(make_runtime: Any) -> None:
    """A trip whose connection is lost may have committed: the error goes to the caller
    (a table pauses and reads the log again), never to a second try that could write the
    card twice."""
    a_rt, b_rt = make_runtime(), make_runtime()
    _append(a_rt, "one-4")  # a knows the head
    with b_rt.sessions.begin() as session:
        b_rt.store.lock(session)  # b holds the log's lock: a's trip waits on it
        writer, done = _one_trip_waiting(a_rt, "one-4", b_rt, "livetable head")
        with b_rt.engine.connect() as conn:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock' AND query LIKE '%livetable head%'"
                    # this test's database only: another test's (another worker's, a
                    # benchmark's) trip waiting on its own log's lock is none of ours
                    " AND datname = current_database()"
                )
            )
        writer.join(60)
    assert len(done) == 1 and isinstance(done[0], DBAPIError)
    assert not isinstance(done[0], OneTripRefused) and done[0].connection_invalidated
    assert a_rt.store.one_trips == {"committed": 0, "relinked": 0, "head_moved": 0, "refused": 0}
    assert [kind for kind, _ in _log(a_rt, "one-4")] == ["noted"]
    _append(a_rt, "one-4")  # the pool has let the lost connection go
