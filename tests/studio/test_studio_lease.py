"""The table lease and its fence, on both backends, with two runtimes as two processes."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from audit.store import EventStore, NewEvent
from table_service.runtime import Runtime
from table_service.studio.lease import LeaseLost, Leases


def _append(runtime: Runtime, table_id: str, n: int = 1) -> None:
    with runtime.sessions.begin() as session:
        runtime.store.append(
            session, [NewEvent(table_id, "card_dealt", "test", {"i": i}) for i in range(n)]
        )


def _events(runtime: Runtime, table_id: str) -> int:
    with runtime.sessions() as session:
        return len(EventStore.read(session, table_id=table_id))


# A lease long enough that a loaded machine still does within it what a test does within
# it (a 600 ms one ran out before the first append in a CI run), then waited out where a
# test needs it run out: a loaded machine makes these tests slower, never red.
TTL_MS = 2000


def _outlive(since: float, ttl_ms: int = TTL_MS) -> None:
    """Sleep until a lease or a heartbeat recorded before ``since`` (``time.monotonic()``
    read after the call that recorded it returned) has run out."""
    time.sleep(max(0.0, since + ttl_ms / 1000 + 0.1 - time.monotonic()))


def _member(
    runtime: Runtime, node: str, ttl_ms: int = TTL_MS, fenced: tuple[str, ...] = ("t1", "t2")
) -> Leases:
    leases = Leases(runtime.engine, node, f"http://{node}", ttl_ms)
    leases.fenced = frozenset(fenced)
    leases.install_fence(runtime.sessions)
    return leases


def test_one_writer_per_table_and_a_stale_token_cannot_commit(
    make_runtime: Callable[..., Runtime],
) -> None:
    a_rt, b_rt = make_runtime(), make_runtime()
    a, b = _member(a_rt, "a"), _member(b_rt, "b")
    assert a.acquire("t1") == 1
    taken = time.monotonic()
    assert b.acquire("t1") is None  # live and someone else's
    _append(a_rt, "t1", 2)
    with pytest.raises(LeaseLost) as refused:
        _append(b_rt, "t1")  # b never held it: the commit is refused, nothing written
    assert refused.value.details["owner"] == "a"
    assert _events(a_rt, "t1") == 2
    # Tables nobody configured nor leased (accounts, principals) are not fenced.
    _append(b_rt, "_wallet")

    _outlive(taken)  # a stalls past its lease
    with pytest.raises(LeaseLost):
        _append(a_rt, "t1")  # run out, even before anyone takes it
    assert b.acquire("t1") == 2  # the fencing token moves on
    _append(b_rt, "t1")
    with pytest.raises(LeaseLost):
        _append(a_rt, "t1")  # a still believes it holds token 1: refused
    assert a.renew() == {"t1"}  # and a learns it lost the table
    assert a.held() == {}
    assert _events(a_rt, "t1") == 3


def test_renew_keeps_the_lease_and_release_frees_it_at_once(
    make_runtime: Callable[..., Runtime],
) -> None:
    a_rt, b_rt = make_runtime(), make_runtime()
    a, b = _member(a_rt, "a"), _member(b_rt, "b")
    assert a.acquire("t1") == 1 and a.acquire("t2") == 1
    for _ in range(5):  # past the lease's first expiry, renewed every quarter of it
        time.sleep(TTL_MS / 4000)
        assert a.renew() == set()
    _append(a_rt, "t1")
    assert b.acquire("t1") is None
    a.release("t2")
    assert b.acquire("t2") == 2
    directory = b.directory()
    assert (directory["t1"].owner, directory["t1"].live) == ("a", True)
    assert (directory["t2"].owner, directory["t2"].owner_url) == ("b", "http://b")
    # The same node restarting takes its own lease back at once, with a new token.
    again = _member(make_runtime(), "a")
    assert again.acquire("t1") == 2
    with pytest.raises(LeaseLost):
        _append(a_rt, "t1")  # the old incarnation's token is dead


def test_members_heartbeat_and_leave(make_runtime: Callable[..., Runtime]) -> None:
    a_rt, b_rt = make_runtime(), make_runtime()
    a, b = _member(a_rt, "a"), _member(b_rt, "b")
    assert [m.node_id for m in a.heartbeat()] == ["a"]
    beat = time.monotonic()
    assert [m.node_id for m in b.heartbeat()] == ["a", "b"]
    _outlive(beat)
    assert [m.node_id for m in b.heartbeat()] == ["b"]  # a stopped beating
    b.leave()
    assert [m.node_id for m in a.heartbeat()] == ["a"]


def _locked_append(runtime: Runtime, table_id: str) -> None:
    """As a table command writes: the log's lock taken naming the table, then the append."""
    with runtime.sessions.begin() as session:
        runtime.store.lock(session, tables=(table_id,))
        runtime.store.append(session, [NewEvent(table_id, "card_dealt", "test", {})])


def test_the_fence_checked_with_the_log_lock_refuses_a_stale_writer(
    make_runtime: Callable[..., Runtime],
) -> None:
    """The fence folded into the lock's round trip (PostgreSQL) refuses exactly what the
    commit-time fence refuses, before anything is decided or written."""
    a_rt, b_rt = make_runtime(), make_runtime()
    a, b = _member(a_rt, "a"), _member(b_rt, "b")
    a.install_fence(a_rt.sessions, a_rt.store)
    b.install_fence(b_rt.sessions, b_rt.store)
    assert a.acquire("t1") == 1
    taken = time.monotonic()
    _locked_append(a_rt, "t1")
    with pytest.raises(LeaseLost):
        _locked_append(b_rt, "t1")  # never held
    _outlive(taken)
    with pytest.raises(LeaseLost):
        _locked_append(a_rt, "t1")  # run out
    assert b.acquire("t1") == 2
    _locked_append(b_rt, "t1")
    with pytest.raises(LeaseLost):
        _locked_append(a_rt, "t1")  # taken over: a's token 1 is dead
    _locked_append(b_rt, "_wallet")  # unfenced tables pass
    assert (_events(a_rt, "t1"), _events(a_rt, "_wallet")) == (2, 1)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_takeover_waits_for_the_commit_in_flight(make_runtime: Callable[..., Runtime]) -> None:
    """Checked under the log's lock, the lease row stays locked (FOR SHARE) until the
    commit: a peer's takeover waits for it, so no event of the old holder can land
    after the new holder's first read of the log."""
    import threading

    a_rt, b_rt = make_runtime(), make_runtime()
    a, b = _member(a_rt, "a"), _member(b_rt, "b")
    a.install_fence(a_rt.sessions, a_rt.store)
    assert a.acquire("t1") == 1
    acquired = time.monotonic()
    taken: list[tuple[float, int | None]] = []
    with a_rt.sessions.begin() as session:
        a_rt.store.lock(session, tables=("t1",))
        a_rt.store.append(session, [NewEvent("t1", "card_dealt", "test", {})])
        _outlive(acquired)  # the lease runs out while the transaction is open

        def take() -> None:
            token = b.acquire("t1")
            taken.append((time.monotonic(), token))

        thief = threading.Thread(target=take)
        thief.start()
        time.sleep(0.5)
        assert taken == []  # b waits on the lease row
        committed_at = time.monotonic()
    thief.join(60)
    assert taken and taken[0][1] == 2 and taken[0][0] >= committed_at
    assert _events(b_rt, "t1") == 1


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_renewal_does_not_wait_for_the_commit_in_flight(
    make_runtime: Callable[..., Runtime],
) -> None:
    """A commit's fence keeps its lease row locked against a takeover only: the holder's
    own renewal (a new expiry, no key changed) goes through while the commit is in flight,
    where it waited for it (and every commit after it waited for the renewal's)."""
    import threading

    a_rt = make_runtime()
    a = _member(a_rt, "a")
    a.install_fence(a_rt.sessions, a_rt.store)
    assert a.acquire("t1") == 1
    renewed: list[set[str]] = []
    with a_rt.sessions.begin() as session:
        a_rt.store.lock(session, tables=("t1",))  # the fence, checked under the log's lock
        a_rt.store.append(session, [NewEvent("t1", "card_dealt", "test", {})])
        renewal = threading.Thread(target=lambda: renewed.append(a.renew()))
        renewal.start()
        renewal.join(30)  # with FOR SHARE it waited here for the commit: never done
        assert renewed == [set()]  # renewed while the transaction is still open
    assert _events(a_rt, "t1") == 1


@pytest.mark.parametrize("under_lock", [False, True])
def test_writes_sent_with_the_commit_are_fenced_before_it(
    make_runtime: Callable[..., Runtime], under_lock: bool
) -> None:
    """A command's event rows deferred to its COMMIT (one round trip): a process that
    does not hold the table's lease writes nothing, whether the fence is checked under
    the log's lock or by the commit's own check, which runs before that COMMIT."""
    a_rt, b_rt = make_runtime(), make_runtime()
    a = Leases(a_rt.engine, "a", "http://a", TTL_MS)
    b = Leases(b_rt.engine, "b", "http://b", TTL_MS)
    for leases, rt in ((a, a_rt), (b, b_rt)):
        leases.fenced = frozenset({"t1"})
        leases.install_fence(rt.sessions, rt.store if under_lock else None)
    assert a.acquire("t1") == 1

    def deferred(rt: Runtime) -> None:
        with rt.sessions.begin() as session:
            rt.store.lock(session, tables=("t1",))
            rt.store.append(session, [NewEvent("t1", "card_dealt", "test", {})], defer=True)
            EventStore.defer(session, "UPDATE studio_leases SET owner_url = %s", ("moved",))
            rt.store.commit(session)

    deferred(a_rt)
    with pytest.raises(LeaseLost):
        deferred(b_rt)
    assert _events(a_rt, "t1") == 1
    assert a.directory(["t1"])["t1"].owner_url == "moved"  # a's, landed with its commit
    with b_rt.sessions.begin() as session:  # b's connection is clean for what comes next
        b_rt.store.append(session, [NewEvent("_wallet", "x", "test", {})], defer=True)
        b_rt.store.commit(session)
    assert _events(b_rt, "_wallet") == 1
