"""The event store on both backends: atomicity, gap-free sequences, append-only, checkpoints."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError

from audit.canonical import NonCanonicalValue
from audit.models import AuditCheckpoint, AuditEvent
from audit.store import EventStore, NewEvent
from audit.verify import verify_database
from table_service.models import Principal
from table_service.runtime import Runtime


def _count(runtime: Runtime) -> int:
    with runtime.sessions() as session:
        return session.scalar(select(func.count()).select_from(AuditEvent)) or 0


def _seqs(runtime: Runtime) -> list[int]:
    with runtime.sessions() as session:
        return list(session.scalars(select(AuditEvent.seq).order_by(AuditEvent.seq)))


def test_events_and_read_model_commit_together(runtime: Runtime) -> None:
    with runtime.sessions.begin() as session:
        session.add(Principal(name="p", role="dealer", token_hash="a" * 64, created_at="x"))
        runtime.store.append(session, [NewEvent("t1", "principal_added", "test", {"n": 1})])
    with pytest.raises(RuntimeError), runtime.sessions.begin() as session:
        session.add(Principal(name="q", role="dealer", token_hash="b" * 64, created_at="x"))
        runtime.store.append(session, [NewEvent("t1", "principal_added", "test", {"n": 2})])
        raise RuntimeError("crash before commit")
    with runtime.sessions() as session:
        assert session.get(Principal, "q") is None
        assert session.get(Principal, "p") is not None
    assert _seqs(runtime) == [1]


def test_a_failed_read_model_write_leaves_no_event(runtime: Runtime) -> None:
    with runtime.sessions.begin() as session:
        session.add(Principal(name="p", role="dealer", token_hash="a" * 64, created_at="x"))
    with pytest.raises(DBAPIError), runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent("t1", "x", "test", {})])
        session.add(Principal(name="p2", role="dealer", token_hash="a" * 64, created_at="x"))
        session.flush()  # unique token_hash violated
    assert _count(runtime) == 0


def test_float_payload_is_refused_and_nothing_written(runtime: Runtime) -> None:
    with pytest.raises(NonCanonicalValue), runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent("t1", "bet", "test", {"amount": 1.5})])
    assert _count(runtime) == 0


def test_subscribers_hear_only_committed_events(runtime: Runtime) -> None:
    heard: list[int] = []
    runtime.store.subscribe(lambda events: heard.extend(e.seq for e in events))
    with pytest.raises(RuntimeError), runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent("t1", "x", "test", {})])
        raise RuntimeError
    assert heard == []
    with runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent("t1", "x", "test", {}), NewEvent("t1", "y", "t")])
    assert heard == [1, 2]


def test_concurrent_threads_get_gap_free_sequences(runtime: Runtime) -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(25):
                with runtime.sessions.begin() as session:
                    runtime.store.append(session, [NewEvent(f"t{n}", "e", "w", {"i": i})] * 2)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _seqs(runtime) == list(range(1, 201))
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    with runtime.sessions() as session:
        assert verify_database(session, {runtime.signer.key_id: runtime.signer.public_key}).ok


def _process_writer(settings_kwargs: dict[str, Any], n: int, count: int) -> None:
    from table_service.config import Settings
    from table_service.runtime import Runtime

    runtime = Runtime.from_settings(Settings(**settings_kwargs))
    for i in range(count):
        with runtime.sessions.begin() as session:
            runtime.store.append(session, [NewEvent(f"p{n}", "e", "proc", {"i": i})])
    runtime.close()


def test_concurrent_processes_get_gap_free_sequences(runtime: Runtime) -> None:
    settings = runtime.settings
    kwargs = {
        "data_dir": str(settings.data_dir),
        "database_url": settings.resolved_database_url,
        "checkpoint_every": settings.checkpoint_every,
    }
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_writer, args=(kwargs, n, 20)) for n in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert _seqs(runtime) == list(range(1, 61))
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    with runtime.sessions() as session:
        assert verify_database(session, {runtime.signer.key_id: runtime.signer.public_key}).ok


@pytest.mark.parametrize(
    "statement", ["UPDATE audit_events SET actor = 'x'", "DELETE FROM audit_events"]
)
def test_database_refuses_update_and_delete(runtime: Runtime, statement: str) -> None:
    with runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent("t1", "e", "test", {"k": "v"})])
    with pytest.raises(DBAPIError, match="append-only"), runtime.sessions.begin() as session:
        session.execute(text(statement))
    with runtime.sessions() as session:
        row = session.get(AuditEvent, 1)
        assert row is not None and row.actor == "test"


def test_checkpoints_every_n_events_and_on_demand(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime(checkpoint_every=10)
    for i in range(23):
        with runtime.sessions.begin() as session:
            runtime.store.append(session, [NewEvent("t1", "e", "test", {"i": i})])
    with runtime.sessions() as session:
        sizes = list(session.scalars(select(AuditCheckpoint.size).order_by(AuditCheckpoint.size)))
    assert sizes == [10, 20]
    with runtime.sessions.begin() as session:
        first = runtime.store.checkpoint(session)
        assert first is not None and first.size == 23
        again = runtime.store.checkpoint(session)
        assert again is not None and again.size == 23
    with runtime.sessions() as session:
        report = verify_database(session, {runtime.signer.key_id: runtime.signer.public_key})
    assert report.ok and report.checkpoints_checked == 3 and report.unsealed == 0


def test_read_filters_by_table_and_position(runtime: Runtime) -> None:
    with runtime.sessions.begin() as session:
        runtime.store.append(
            session, [NewEvent(t, "e", "test", {}, round_id="r") for t in ("a", "b", "a", "c")]
        )
    with runtime.sessions() as session:
        assert [e.seq for e in EventStore.read(session, table_id="a")] == [1, 3]
        assert [e.seq for e in EventStore.read(session, after_seq=2)] == [3, 4]
        assert [e.seq for e in EventStore.read(session, after_seq=1, limit=2)] == [2, 3]


def test_the_log_lock_is_one_per_log_not_one_per_server(
    tmp_path: Path, pg_schema: Callable[[], str]
) -> None:
    """PostgreSQL: the write lock serialises the appends of one log (one schema's
    audit_events), and a log in another schema of the same database never waits on it."""
    from sqlalchemy.exc import OperationalError

    from table_service.config import Settings
    from table_service.runtime import Runtime

    url_a, url_b = pg_schema(), pg_schema()
    made = [
        Runtime.from_settings(Settings(data_dir=tmp_path / n, database_url=u), upgrade=True)
        for n, u in (("a", url_a), ("a2", url_a), ("b", url_b))
    ]
    a, a2, b = made
    try:
        with a.sessions.begin() as holder:
            a.store.append(holder, [NewEvent("t1", "held", "test")])  # holds a's log lock
            with b.sessions.begin() as other:  # another log: not held up
                other.execute(text("SET LOCAL lock_timeout = '10s'"))
                assert [e.seq for e in b.store.append(other, [NewEvent("t2", "x", "t")])] == [1]
            with pytest.raises(OperationalError, match="lock timeout"), a2.sessions.begin() as same:
                same.execute(text("SET LOCAL lock_timeout = '100ms'"))
                a2.store.append(same, [NewEvent("t3", "waits", "test")])
        with a2.sessions.begin() as same:  # released at the holder's commit
            assert [e.seq for e in a2.store.append(same, [NewEvent("t3", "x", "t")])] == [2]
    finally:
        for runtime in made:
            runtime.close()


def test_settings_go_with_the_lock_and_hold_for_the_transaction(runtime: Runtime) -> None:
    """PostgreSQL: a transaction's settings given to the lock are sent in its round trip
    (no statement of their own) and hold until the transaction ends; given once the lock
    is held, they are sent on their own."""
    from sqlalchemy import event

    if runtime.engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL's SET LOCAL")
    sent: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    event.listen(runtime.engine, "before_cursor_execute", seen)
    try:
        with runtime.sessions.begin() as session:
            runtime.store.lock(session, settings=["SET LOCAL statement_timeout = '7s'"])
            assert sent == []
            runtime.store.lock(session, settings=["SET LOCAL lock_timeout = '3s'"])
            assert sent == ["SET LOCAL lock_timeout = '3s'"]
            shown = session.execute(text("SHOW statement_timeout")).scalar()
            assert (shown, session.execute(text("SHOW lock_timeout")).scalar()) == ("7s", "3s")
            runtime.store.append(session, [NewEvent("t1", "a", "test")])
        with runtime.sessions() as session:
            assert session.execute(text("SHOW statement_timeout")).scalar() != "7s"
    finally:
        event.remove(runtime.engine, "before_cursor_execute", seen)
    assert _seqs(runtime) == [1]
