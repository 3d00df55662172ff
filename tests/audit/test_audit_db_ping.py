"""PostgreSQL connections are pinged only after sitting idle, and a dead one is replaced.

The writer's pool used to ping on every checkout (a round trip in front of every
command). Now a connection back in the pool for under a second is used as it is, and
one idle for longer is pinged first: a connection the server dropped meanwhile (a
restart, an idle timeout) is discarded and a fresh one used, with no error to the caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine.interfaces import DBAPIConnection

from audit.db import IDLE_PING_SECONDS, create_db_engine
from table_service.runtime import Runtime


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_an_idle_connection_killed_by_the_server_is_replaced_unseen(db_url: str) -> None:
    engine = create_db_engine(db_url, pool_size=1, max_overflow=0)
    admin = create_engine(db_url, isolation_level="AUTOCOMMIT")
    pings: list[object] = []
    real_ping = engine.dialect.do_ping

    def counted_ping(dbapi_connection: DBAPIConnection) -> bool:
        pings.append(dbapi_connection)
        return real_ping(dbapi_connection)

    engine.dialect.do_ping = counted_ping  # type: ignore[method-assign]  # the spy, on purpose
    try:
        with engine.connect() as conn:
            first = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        with engine.connect() as conn:  # back a moment ago: no ping in front of it
            assert conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one() == first
        assert pings == []
        with admin.connect() as conn:
            assert conn.exec_driver_sql(f"SELECT pg_terminate_backend({first})").scalar_one()
        time.sleep(IDLE_PING_SECONDS + 0.2)
        with engine.connect() as conn:  # idle: pinged, found dead, replaced
            second = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        assert second != first and len(pings) == 1
    finally:
        engine.dispose()
        admin.dispose()


def test_the_lock_round_trip_keeps_transactions_whole(make_runtime: Callable[..., Runtime]) -> None:
    """On PostgreSQL the log's lock sends its own BEGIN with the lock and the head, with
    the driver in autocommit mode for that transaction: a failure still rolls everything
    back, and the next transaction on the same connection is a transaction again."""
    from sqlalchemy import text

    from audit.store import EventStore, NewEvent

    runtime = make_runtime()
    with runtime.sessions.begin() as session:
        runtime.store.lock(session, tables=("t1",))
        runtime.store.append(session, [NewEvent("t1", "card_dealt", "test", {"n": 1})])
    with pytest.raises(RuntimeError), runtime.sessions.begin() as session:
        runtime.store.lock(session, tables=("t1",))
        runtime.store.append(session, [NewEvent("t1", "card_dealt", "test", {"n": 2})])
        raise RuntimeError("the command failed after its append")
    with pytest.raises(RuntimeError), runtime.sessions.begin() as session:
        # no lock: the driver's own transaction, which must not be in autocommit
        session.execute(
            text(
                "INSERT INTO studio_members (node_id, url, heartbeat_ms, started_ms)"
                " VALUES ('n', NULL, 1, 1)"
            )
        )
        raise RuntimeError("rolled back")
    with runtime.sessions() as session:
        assert [e.payload["n"] for e in EventStore.read(session)] == [1]
        assert session.execute(text("SELECT count(*) FROM studio_members")).scalar_one() == 0
        assert EventStore.head(session)[0] == 1


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_the_connection_checked_in_last_is_used_first_so_the_others_idle(db_url: str) -> None:
    """The pool hands out the connection returned last (LIFO): under a steady trickle of
    commands the same connection stays warm, where FIFO used each in turn, each once a
    round, just past the idle time, and pinged it (a round trip more) every time."""
    engine = create_db_engine(db_url, pool_size=3, max_overflow=0)
    try:
        held = [engine.connect() for _ in range(3)]
        pids = [c.exec_driver_sql("SELECT pg_backend_pid()").scalar_one() for c in held]
        for conn in held:  # back in the order taken: the last one back is pids[2]
            conn.close()
        for _ in range(3):  # one at a time, as a quiet table's commands
            with engine.connect() as conn:
                assert conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one() == pids[2]
    finally:
        engine.dispose()
