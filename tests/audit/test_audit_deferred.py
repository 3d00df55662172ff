"""Writes sent with the COMMIT (``append(defer=True)``, ``EventStore.defer``,
``EventStore.commit``): what a command defers lands with its commit or not at all, in the
order it was written, with the chain intact; a transaction that defers and commits the
ordinary way loses nothing. With ``lock(one_trip=True)`` the lock goes with them too
(PostgreSQL, the head known): a head that moved meanwhile is refused and the same events
are linked again to the real one, once."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from audit.models import AuditEvent
from audit.store import EventStore, HeadMoved, NewEvent, StoredEvent
from audit.verify import verify_database
from table_service.runtime import Runtime


def _count(runtime: Any) -> int:
    with runtime.sessions() as session:
        return session.scalar(select(func.count()).select_from(AuditEvent)) or 0


def _scratch(runtime: Any) -> None:
    with runtime.sessions.begin() as session:
        session.execute(text("CREATE TABLE scratch_rows (id INTEGER PRIMARY KEY, v TEXT)"))


def _values(runtime: Any) -> list[tuple[int, str]]:
    with runtime.sessions() as session:
        rows = session.execute(text("SELECT id, v FROM scratch_rows ORDER BY id"))
        return [(r[0], r[1]) for r in rows]


def _verified(runtime: Any) -> None:
    with runtime.sessions() as session:
        keys = {runtime.signer.key_id: runtime.signer.public_key}
        assert verify_database(session, keys, allow_unsigned_tail=True).ok


def test_deferred_writes_land_with_the_commit_in_order(runtime: Any) -> None:
    _scratch(runtime)
    with runtime.sessions.begin() as session:
        runtime.store.lock(session)
        stored = runtime.store.append(
            session,
            [NewEvent("t1", "a", "test", {"n": 1}), NewEvent("t1", "b", "test", {})],
            defer=True,
        )
        assert [e.seq for e in stored] == [1, 2]  # known before anything is sent
        EventStore.defer(session, "INSERT INTO scratch_rows (id, v) VALUES (%s, %s)", (1, "x"))
        EventStore.defer(session, "UPDATE scratch_rows SET v = %s WHERE id = %s", ("it's %s", 1))
        runtime.store.commit(session)
    assert _count(runtime) == 2
    assert _values(runtime) == [(1, "it's %s")]  # quoted by the driver, in order
    _verified(runtime)


def test_a_deferred_write_that_fails_fails_the_whole_commit(runtime: Any) -> None:
    _scratch(runtime)
    with runtime.sessions.begin() as session:
        EventStore.defer(session, "INSERT INTO scratch_rows (id, v) VALUES (%s, %s)", (1, "x"))
    with pytest.raises(DBAPIError), runtime.sessions.begin() as session:
        runtime.store.lock(session)
        runtime.store.append(session, [NewEvent("t1", "a", "test", {})], defer=True)
        EventStore.defer(session, "INSERT INTO scratch_rows (id, v) VALUES (%s, %s)", (2, "y"))
        EventStore.defer(session, "INSERT INTO scratch_rows (id, v) VALUES (%s, %s)", (1, "dup"))
        runtime.store.commit(session)
    assert _count(runtime) == 0  # nothing of it: not the event, not the rows before the error
    assert _values(runtime) == [(1, "x")]
    with runtime.sessions.begin() as session:  # the connection is usable, the chain goes on
        runtime.store.append(session, [NewEvent("t1", "a", "test", {})], defer=True)
        runtime.store.commit(session)
    assert _count(runtime) == 1


def test_deferred_writes_go_with_an_ordinary_commit_too(runtime: Any) -> None:
    _scratch(runtime)
    with runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent("t1", "a", "test", {})], defer=True)
        EventStore.defer(session, "INSERT INTO scratch_rows (id, v) VALUES (%s, %s)", (1, "x"))
    assert _count(runtime) == 1
    assert _values(runtime) == [(1, "x")]


def test_a_rollback_drops_what_was_deferred(runtime: Any) -> None:
    _scratch(runtime)
    with pytest.raises(RuntimeError), runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent("t1", "a", "test", {})], defer=True)
        raise RuntimeError("decided to stop")
    with runtime.sessions.begin() as session:  # a later transaction on a pooled connection
        EventStore.defer(session, "INSERT INTO scratch_rows (id, v) VALUES (%s, %s)", (1, "x"))
        runtime.store.commit(session)
    assert _count(runtime) == 0
    assert _values(runtime) == [(1, "x")]


def test_a_checkpoint_reads_the_deferred_events_first(make_runtime: Any) -> None:
    runtime = make_runtime()
    runtime.store.checkpoint_every = 2
    with runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent("t1", "a", "test", {})], defer=True)
        runtime.store.append(session, [NewEvent("t1", "b", "test", {})], defer=True)
        runtime.store.commit(session)
    assert _count(runtime) == 2
    with runtime.sessions() as session:
        assert session.scalar(text("SELECT max(size) FROM audit_checkpoints")) == 2
    _verified(runtime)


def test_inside_a_savepoint_the_writes_go_and_the_commit_is_the_sessions(runtime: Any) -> None:
    _scratch(runtime)
    with runtime.sessions.begin() as session:
        with session.begin_nested():
            runtime.store.append(session, [NewEvent("t1", "a", "test", {})], defer=True)
            runtime.store.commit(session)  # not the outer transaction's COMMIT
            EventStore.defer(session, "INSERT INTO scratch_rows (id, v) VALUES (%s, %s)", (1, "x"))
        if runtime.engine.dialect.name == "postgresql":  # (SQLite: its write lock is held)
            assert _count(runtime) == 0  # nothing committed: the outer transaction is open
    assert _count(runtime) == 1
    assert _values(runtime) == [(1, "x")]


def _one_trip_append(runtime: Runtime, session: Session, v: str) -> list[StoredEvent]:
    stored = runtime.store.append(session, [NewEvent("t1", "card", "test", {"v": v})], defer=True)
    EventStore.defer(
        session, "INSERT INTO scratch_rows (id, v) VALUES (%s, %s)", (stored[0].seq, v)
    )
    return stored


def test_one_trip_commits_at_the_known_head(runtime: Any) -> None:
    _scratch(runtime)
    with runtime.sessions.begin() as session:  # this process appends: it knows the head
        runtime.store.append(session, [NewEvent("t1", "a", "test", {})])
    with runtime.sessions.begin() as session:
        runtime.store.lock(session, tables=("t1",), one_trip=True)
        assert _one_trip_append(runtime, session, "x")[0].seq == 2
        runtime.store.commit(session)
    one_trip = runtime.engine.dialect.name == "postgresql"  # SQLite: the usual way
    assert runtime.store.one_trips == {
        "committed": int(one_trip), "relinked": 0, "head_moved": 0, "refused": 0
    }  # fmt: skip
    assert _count(runtime) == 2
    assert _values(runtime) == [(2, "x")]
    _verified(runtime)


def test_a_head_moved_since_is_refused_and_the_events_linked_again_once(make_runtime: Any) -> None:
    a, b = make_runtime(), make_runtime()  # two processes on one log
    a.store.checkpoint_every = 3  # the second try's event is due one: it cannot wait
    _scratch(a)
    with a.sessions.begin() as session:
        a.store.append(session, [NewEvent("t1", "a", "test", {})])  # a knows the head: 1
    with b.sessions.begin() as session:
        b.store.append(session, [NewEvent("t2", "b", "test", {})])  # and it moves on: 2
    with a.sessions.begin() as session:
        a.store.lock(session, tables=("t1",), one_trip=True)
        stored = _one_trip_append(a, session, "first")
        if a.engine.dialect.name == "postgresql":
            assert stored[0].seq == 2  # linked to the head a knew
            with pytest.raises(HeadMoved) as moved:
                a.store.commit(session)
            assert (moved.value.seq, moved.value.hash) == _head(b)
            stored = _one_trip_append(a, session, "again")  # under the lock, the real head
        a.store.commit(session)
    assert stored[0].seq == 3
    assert _count(a) == 3
    assert _values(a)[-1] == (3, stored[0].payload["v"])  # the first try's row undone
    assert len(_values(a)) == 1
    with a.sessions() as session:
        assert session.scalar(text("SELECT max(size) FROM audit_checkpoints")) == 3
    _verified(a)
    with a.sessions.begin() as session:  # a knows the head again: the next goes in one trip
        a.store.lock(session, tables=("t1",), one_trip=True)
        _one_trip_append(a, session, "next")
        a.store.commit(session)
    assert _count(a) == 4
    if a.engine.dialect.name == "postgresql":
        assert a.store.one_trips == {"committed": 1, "relinked": 0, "head_moved": 1, "refused": 0}
    _verified(a)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_head_moved_by_this_process_is_linked_again_before_the_trip(runtime: Any) -> None:
    """Two transactions of one process linked to the same head (two tables' commands at
    once): the one committing second learns, before its trip, that the first moved the
    head, and is linked again to it there; nothing was sent, and it still commits in one
    round trip (it found the head moved under the log's lock, a second trip, before)."""
    _scratch(runtime)
    with runtime.sessions.begin() as session:  # this process appends: it knows the head
        runtime.store.append(session, [NewEvent("t1", "a", "test", {})])
    with runtime.sessions.begin() as first, runtime.sessions.begin() as second:
        for session, v in ((first, "first"), (second, "second")):
            runtime.store.lock(session, tables=("t1",), one_trip=True)
            assert _one_trip_append(runtime, session, v)[0].seq == 2
        runtime.store.commit(first)
        with pytest.raises(HeadMoved) as moved:
            runtime.store.commit(second)
        assert not moved.value.sent
        assert (moved.value.seq, moved.value.hash) == _head(runtime)
        assert _one_trip_append(runtime, second, "again")[0].seq == 3
        runtime.store.commit(second)
    assert runtime.store.one_trips == {
        "committed": 2, "relinked": 1, "head_moved": 0, "refused": 0
    }  # fmt: skip
    assert _values(runtime) == [(2, "first"), (3, "again")]  # the first link's row: gone
    _verified(runtime)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_one_processs_tables_committing_at_once_each_go_in_one_trip(runtime: Any) -> None:
    """Threads of one process (a table's each) committing one-trip cards at once: they
    take turns, so none of them finds the head moved under the log's lock (each linked
    again, if need be, before its trip); every card lands once, the chain intact."""
    threads, cards = 3, 15
    with runtime.sessions.begin() as session:  # this process appends: it knows the head
        runtime.store.append(session, [NewEvent("t0", "a", "test", {})])
    start = threading.Barrier(threads)
    failed: list[BaseException] = []

    def deal(table: str) -> None:
        try:
            start.wait()
            for n in range(cards):
                with runtime.sessions.begin() as session:
                    runtime.store.lock(session, tables=(table,), one_trip=True)
                    new = [NewEvent(table, "card", "test", {"n": n})]
                    runtime.store.append(session, new, defer=True)
                    while True:
                        try:
                            runtime.store.commit(session)
                            break
                        except HeadMoved:
                            runtime.store.append(session, new, defer=True)
        except BaseException as exc:  # reported below
            failed.append(exc)

    workers = [threading.Thread(target=deal, args=(f"t{i}",)) for i in range(1, threads + 1)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert not failed
    trips = runtime.store.one_trips
    assert trips["committed"] == threads * cards
    assert trips["head_moved"] == 0 and trips["refused"] == 0
    with runtime.sessions() as session:
        for i in range(1, threads + 1):
            events = EventStore.read(session, table_id=f"t{i}")
            assert [e.payload["n"] for e in events] == list(range(cards))
    _verified(runtime)


def _head(runtime: Any) -> tuple[int, str]:
    with runtime.sessions() as session:
        return EventStore.head(session)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_connection_with_its_own_isolation_level_begins_as_it_says(runtime: Any) -> None:
    """The lock's round trip carries the BEGIN the driver would have sent on its own (a
    round trip of its own), with the connection's isolation level; a pooled connection
    once used in autocommit (READ COMMITTED then set explicitly) still commits a card's
    writes in one round trip."""
    with runtime.sessions.begin() as session:
        session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        runtime.store.lock(session)
        level = session.execute(text("SELECT current_setting('transaction_isolation')"))
        assert level.scalar() == "repeatable read"
        runtime.store.append(session, [NewEvent("t1", "a", "test", {})])
    with runtime.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("SELECT 1")  # as a lease renewal does
    _scratch(runtime)
    with runtime.sessions.begin() as session:
        runtime.store.lock(session, tables=("t1",), one_trip=True)
        _one_trip_append(runtime, session, "x")
        runtime.store.commit(session)
    assert runtime.store.one_trips["committed"] == 1
    assert _count(runtime) == 2
    _verified(runtime)


@pytest.mark.parametrize("one_trip", [False, True])
def test_subscribers_hear_the_events_as_the_commits_trip_comes_back(
    runtime: Any, one_trip: bool
) -> None:
    """The trip that carries the COMMIT makes the events durable: the subscribers (the
    streams, the head's learners) hear them then, not after the session's own commit
    bookkeeping, and only once; a rolled-back transaction is never heard."""
    heard: list[list[int]] = []
    runtime.store.subscribe(lambda events: heard.append([e.seq for e in events]))
    with runtime.sessions.begin() as session:  # a first commit: the head known
        runtime.store.lock(session)
        runtime.store.append(session, [NewEvent("t1", "a", "test", {})], defer=True)
        runtime.store.commit(session)
    assert heard == [[1]]
    with runtime.sessions.begin() as session:
        runtime.store.lock(session, tables=("t1",), one_trip=one_trip)
        runtime.store.append(session, [NewEvent("t1", "b", "test", {})], defer=True)
        runtime.store.commit(session)
        if runtime.engine.dialect.name == "postgresql":
            assert heard == [[1], [2]]  # before the session's commit
    assert heard == [[1], [2]]
    with pytest.raises(RuntimeError), runtime.sessions.begin() as session:
        runtime.store.lock(session)
        runtime.store.append(session, [NewEvent("t1", "c", "test", {})], defer=True)
        raise RuntimeError("rolled back")
    assert heard == [[1], [2]]
