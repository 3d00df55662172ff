"""Each process learns the log's head as the others commit (``EventStore.follow``,
PostgreSQL): every commit that appends announces its new head in its own round trip, and
a process's feed hands what it hears to its event store, so a card's one-trip commit
finds the head it expects after another process appended. What is heard is a hint only:
a wrong or late head costs a second round trip (the head is checked under the lock),
never a wrong link; the feed listens again after its connection is cut, and hears no
other schema's log."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import text

from audit.heads import CHANNEL_SQL
from audit.store import EventStore, NewEvent, StoredEvent
from audit.verify import verify_database
from table_service.runtime import Runtime

pytestmark = pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)


def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait for ``condition`` (checked as often as anything may have changed)."""
    done = threading.Event()
    for _ in range(2000):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError(f"never: {what}")


def _head(runtime: Any) -> tuple[int, str]:
    with runtime.sessions() as session:
        return EventStore.head(session)


def _append(runtime: Any, table: str = "t2") -> None:
    """An ordinary commit (the session's own) appending one event."""
    with runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent(table, "other", "test", {})])


def _deferred(runtime: Any, table: str = "t2") -> None:
    """The usual card: lock, deferred append, the writes and COMMIT in one script."""
    with runtime.sessions.begin() as session:
        runtime.store.lock(session, tables=(table,))
        runtime.store.append(session, [NewEvent(table, "other", "test", {})], defer=True)
        runtime.store.commit(session)


def _card(runtime: Runtime, table: str = "t1") -> list[StoredEvent]:
    """A card's transaction as the table service runs it: one trip, or two if the head
    moved (HeadMoved: the same event linked again under the lock)."""
    from audit.store import HeadMoved

    with runtime.sessions.begin() as session:
        runtime.store.lock(session, tables=(table,), one_trip=True)
        new = [NewEvent(table, "card", "test", {})]
        stored = runtime.store.append(session, new, defer=True)
        while True:
            try:
                runtime.store.commit(session)
                break
            except HeadMoved:
                stored = runtime.store.append(session, new, defer=True)
    return stored


def _verified(runtime: Any) -> None:
    with runtime.sessions() as session:
        keys = {runtime.signer.key_id: runtime.signer.public_key}
        assert verify_database(session, keys, allow_unsigned_tail=True).ok


def _listening(runtime: Any, connections: int = 1) -> Any:
    runtime.store.follow(runtime.engine)
    feed = runtime.store.feed
    assert feed is not None and feed.wait_listening(connections)
    return feed


@pytest.mark.parametrize("commits", [_append, _deferred, _card])
def test_a_head_another_process_appended_is_heard_and_the_next_card_goes_in_one_trip(
    make_runtime: Any, commits: Callable[[Any], Any]
) -> None:
    a, b = make_runtime(), make_runtime()  # two processes on one log
    _listening(a)
    _append(a, "t1")  # a knows the head it left
    for _ in range(3):
        commits(b)  # b appends: the head a knew is gone
        head = _head(b)

        def heard(head: tuple[int, str] = head) -> bool:
            return bool(a.store.known_head == head)

        _until(heard, "a hears b's head")
        _card(a)
    assert a.store.one_trips == {"committed": 3, "relinked": 0, "head_moved": 0, "refused": 0}
    _verified(a)


def test_a_card_after_another_process_appended_goes_in_two_trips_when_not_following(
    make_runtime: Any,
) -> None:
    a, b = make_runtime(), make_runtime()
    _append(a, "t1")
    _card(a)
    _append(b)
    _card(a)
    assert a.store.one_trips == {"committed": 1, "relinked": 0, "head_moved": 1, "refused": 0}
    assert a.store.feed is None


def test_the_feed_listens_again_after_its_connection_is_cut(make_runtime: Any) -> None:
    a, b = make_runtime(), make_runtime()
    feed = _listening(a)
    _append(a, "t1")
    cut = feed.backend_pid
    with b.engine.connect() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": cut}).scalar()
    assert feed.wait_listening(connections=2)  # connected again, listening
    assert feed.backend_pid != cut
    _append(b)
    head = _head(b)
    _until(lambda: a.store.known_head == head, "a hears b's head on the new connection")
    _card(a)
    assert a.store.one_trips["committed"] == 1
    a.store.unfollow()
    assert a.store.feed is None

    def gone() -> bool:  # closed: its backend leaves the server (on the server's time)
        with b.engine.connect() as conn:
            alive = conn.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE pid = :p"),
                {"p": feed.backend_pid},
            )
            return bool(alive.scalar() == 0)

    _until(gone, "the feed's connection closed")


def _say(runtime: Any, payload: str) -> None:
    """A notification on the log's channel, as a buggy or hostile writer might send."""
    with runtime.engine.connect() as conn:
        conn.execute(text(f"SELECT pg_notify({CHANNEL_SQL}, :p)"), {"p": payload})
        conn.commit()


def test_a_wrong_or_stale_head_heard_costs_a_relink_never_a_wrong_link(
    make_runtime: Any,
) -> None:
    a = make_runtime()
    feed = _listening(a)
    _append(a, "t1")
    _card(a)
    real = _head(a)
    _until(lambda: feed.heard == 2, "a's own two heads heard")  # (they come late, loaded)
    # stale: an older head (the first event's) is not taken back to
    heard = feed.heard
    first = a.store.read(a.sessions(), limit=1)[0]
    _say(a, f"{first.seq} {first.hash}")
    _say(a, "not a head")  # ignored, not counted
    _until(lambda: feed.heard == heard + 1, "the stale head heard")
    assert a.store.known_head == real
    # wrong: a head ahead of the log, with a hash nobody wrote
    _say(a, f"{real[0] + 5} {'ab' * 32}")
    _until(lambda: a.store.known_head == (real[0] + 5, "ab" * 32), "the wrong head heard")
    stored = _card(a)  # the trip's head check refuses it: linked again to the real head
    assert (stored[0].seq, stored[0].prev_hash) == (real[0] + 1, real[1])
    assert a.store.one_trips == {"committed": 1, "relinked": 0, "head_moved": 1, "refused": 0}
    assert a.store.known_head == _head(a)  # the head read under the lock replaced it
    _card(a)
    assert a.store.one_trips["committed"] == 2
    # the real head's seq with another hash (as if heard before the real one): the same
    seq, _ = _head(a)
    a.store._learn(seq, "cd" * 32, read_under_lock=True)
    _card(a)
    assert a.store.one_trips == {"committed": 2, "relinked": 0, "head_moved": 2, "refused": 0}
    _verified(a)


def test_another_schemas_log_is_not_heard(make_runtime: Any, pg_schema: Any) -> None:
    a, b = make_runtime(), make_runtime()
    elsewhere = make_runtime(database_url=pg_schema())  # another studio on the same server
    feed = _listening(a)
    heard = feed.heard
    _append(elsewhere)
    _append(elsewhere)
    _append(b)  # after them: heard after them, if they were heard at all
    head = _head(b)
    _until(lambda: a.store.known_head == head, "a hears b's head")
    assert feed.heard == heard + 1


def test_a_feed_does_not_keep_its_event_store_alive(make_runtime: Any) -> None:
    import gc

    from audit.store import EventStore as Store

    a = make_runtime()
    store = Store(a.signer)
    store.follow(a.engine)
    feed = store.feed
    assert feed is not None and feed.wait_listening()
    del store
    gc.collect()
    _append(a)  # the next head heard finds nobody to tell: the feed ends
    _until(lambda: not feed._thread.is_alive(), "the feed ends")
