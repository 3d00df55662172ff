"""A connection kept for one writer (``audit.db.KeptConnection``): its transactions, one
at a time from any thread, run on the same driver connection with nothing taken from the
pool; one begun while another is open, a closed keeper or another backend goes through
the pool as before; a connection the event
store's own BEGIN left in autocommit is put back, and one the server spoke on while it
sat idle (its last word: a terminated backend) is replaced before the next transaction."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import event, text

from audit.db import KeptConnection, create_db_engine, make_sessionmaker


def _backend(session: Any) -> int:
    return int(session.execute(text("SELECT pg_backend_pid()")).scalar_one())


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_one_connection_kept_one_transaction_at_a_time(db_url: str) -> None:
    engine = create_db_engine(db_url, pool_size=2, max_overflow=0)
    kept = KeptConnection(engine, make_sessionmaker(engine))
    checkouts: list[object] = []
    try:
        with kept.begin() as session:
            first = _backend(session)
        event.listen(engine, "checkout", lambda *args: checkouts.append(args))
        for _ in range(3):
            with kept.begin() as session:
                assert _backend(session) == first
        assert checkouts == []
        # the pool keeps both its places: the kept connection is not one of them
        held = [engine.connect() for _ in range(2)]
        assert first not in {c.exec_driver_sql("SELECT pg_backend_pid()").scalar() for c in held}
        for conn in held:
            conn.close()
        elsewhere: list[int] = []

        def other_thread() -> None:  # one at a time: another thread's turn, the same one
            with kept.begin() as session:
                elsewhere.append(_backend(session))

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(30)
        assert elsewhere == [first]
        with kept.begin() as session:
            with kept.begin() as nested:  # while it is open: the pool
                assert _backend(nested) != first
            assert _backend(session) == first
        kept.close()
        assert kept.dbapi_connection is None
        with kept.begin() as session:  # closed: the pool, as before
            assert _backend(session) != first
    finally:
        kept.close()
        engine.dispose()


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_the_kept_session_begins_each_transaction_as_a_new_one(db_url: str) -> None:
    engine = create_db_engine(db_url)
    kept = KeptConnection(engine, make_sessionmaker(engine))
    try:
        with kept.begin() as session:
            first, backend = session, _backend(session)
            session.info["left"] = "behind"
        with kept.begin() as session:  # the same session, emptied, on the same connection
            assert session is first and session.info == {} and _backend(session) == backend
            session.info["left"] = "behind"
        with pytest.raises(ZeroDivisionError), kept.begin() as session:
            session.execute(text("CREATE TEMPORARY TABLE kept_s (n int)"))
            raise ZeroDivisionError  # an error: rolled back, and that session let go
        with kept.begin() as session:
            assert session is not first and session.info == {} and _backend(session) == backend
            assert session.execute(text("SELECT to_regclass('kept_s')")).scalar() is None
            assert not session.identity_map
    finally:
        kept.close()
        engine.dispose()


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_kept_connection_left_in_autocommit_is_put_back(db_url: str) -> None:
    engine = create_db_engine(db_url)
    kept = KeptConnection(engine, make_sessionmaker(engine))
    try:
        with kept.begin() as session:
            first = _backend(session)
        dbapi = kept.dbapi_connection
        assert dbapi is not None  # the kept connection is open
        dbapi.autocommit = True  # as an own BEGIN that missed its end
        with kept.begin() as session:
            assert _backend(session) == first
            inner = session.connection().connection.dbapi_connection
            assert inner is not None and not inner.autocommit
            session.execute(text("CREATE TEMPORARY TABLE kept_t (n int)"))
            session.execute(text("INSERT INTO kept_t VALUES (1)"))
            session.rollback()  # a transaction: the row goes with it
        with kept.begin() as session:
            assert session.execute(text("SELECT to_regclass('kept_t')")).scalar() is None
    finally:
        kept.close()
        engine.dispose()


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_kept_connection_the_server_ended_is_replaced_unseen(db_url: str) -> None:
    engine = create_db_engine(db_url)
    kept = KeptConnection(engine, make_sessionmaker(engine))
    try:
        with kept.begin() as session:
            first = _backend(session)
        with engine.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_terminate_backend({first})")
            deadline = time.monotonic() + 30
            while conn.exec_driver_sql(f"SELECT 1 FROM pg_stat_activity WHERE pid = {first}").all():
                assert time.monotonic() < deadline
                conn.rollback()
                time.sleep(0.01)
        with kept.begin() as session:  # no error: replaced before anything was sent
            assert _backend(session) != first
        assert kept.replaced == 1
    finally:
        kept.close()
        engine.dispose()


def test_sqlite_goes_through_the_pool(tmp_path: Any) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'k.db'}")
    kept = KeptConnection(engine, make_sessionmaker(engine))
    try:
        with kept.begin() as session:
            assert session.execute(text("SELECT 1")).scalar() == 1
        assert not kept.kept and kept.dbapi_connection is None
    finally:
        engine.dispose()
