"""A table's command thread keeps its own PostgreSQL connection from one card to the next
(no pool checkout, no ping of a connection idle for a second), and a kept connection the
server cut is replaced: before the next card when the cut is known (nothing sent on it,
the card commits once, no pause), or, cut under a card's trip, through the table's outage
path (the card not written, written once when sent again) and a new connection after."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from sqlalchemy import event, text

from audit.store import EventStore
from audit.verify import verify_database
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.outage import DatabaseUnavailable
from table_service.table.projector import DEFERRED_PLACING
from table_service.table.service import TableService
from table_service.table.wallet import Transfer, transfer

READER = "reader:kept"
OPERATOR = "operator:op"
pytestmark = pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)


def _cards(runtime: Any, table_id: str) -> list[str]:
    with runtime.sessions() as session:
        keys = {runtime.signer.key_id: runtime.signer.public_key}
        assert verify_database(session, keys, allow_unsigned_tail=True).ok
        events = EventStore.read(session, table_id=table_id)
    return [e.payload["card"] for e in events if e.type == "card_dealt"]


async def _table(runtime: Any, table_id: str) -> TableService:
    """A baccarat table whose next card is dealt into a round (committed in one trip)."""
    service = TableService(runtime, TableConfig(table_id=table_id, betting_seconds=600))
    await service.start(with_reader=False)
    await service.execute(c.InsertShoe(), actor="supervisor:s")  # this process appends last
    for card in ("AS", "2S"):  # the first card and the one it burns
        await service.execute(c.CardScanned(card), actor=READER)
    await service.execute(c.OpenBetting(), actor="dealer:d")
    await service.execute(c.CloseBetting(), actor="dealer:d")
    return service


def _pid(service: TableService) -> int:
    raw = service.connection.dbapi_connection
    assert raw is not None
    return int(raw.info.backend_pid)


def _terminate(runtime: Any, pid: int) -> None:
    """The server ends that backend; returns once it is gone."""
    with runtime.engine.connect() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with runtime.engine.connect() as conn:
            found = conn.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE pid = :p"), {"p": pid}
            ).scalar()
        if not found:
            return
        time.sleep(0.01)
    raise AssertionError(f"backend {pid} still there")


def test_a_tables_cards_take_nothing_from_the_pool(make_runtime: Any) -> None:
    runtime = make_runtime()
    checkouts: list[object] = []

    async def go() -> None:
        service = await _table(runtime, "kept-1")
        first = _pid(service)
        trips = runtime.store.one_trips["committed"]
        event.listen(runtime.engine, "checkout", lambda *args: checkouts.append(args))
        for card in ("3S", "4S", "5S", "6S"):
            await service.execute(c.CardScanned(card), actor=READER)
            assert _pid(service) == first  # the same connection, card after card
        assert runtime.store.one_trips["committed"] == trips + 4
        await service.stop()
        assert service.connection.dbapi_connection is None  # closed with the table

    asyncio.run(go())
    assert checkouts == []  # no checkout: no pool events, no ping of an idle connection
    assert _cards(runtime, "kept-1") == ["3S", "4S", "5S", "6S"]


def test_a_connection_cut_between_two_cards_is_replaced_before_the_next(
    make_runtime: Any,
) -> None:
    runtime = make_runtime()

    async def go() -> None:
        service = await _table(runtime, "kept-2")
        await service.execute(c.CardScanned("3S"), actor=READER)
        first = _pid(service)
        trips = dict(runtime.store.one_trips)
        await asyncio.to_thread(_terminate, runtime, first)  # a moment after its use
        await service.execute(c.CardScanned("4S"), actor=READER)  # no error, no pause
        assert service.outage is None
        assert _pid(service) != first and service.connection.replaced == 1
        assert runtime.store.one_trips == {**trips, "committed": trips["committed"] + 1}
        await service.stop()

    asyncio.run(go())
    assert _cards(runtime, "kept-2") == ["3S", "4S"]  # each once


def test_a_connection_cut_under_a_cards_trip_pauses_the_table_and_is_replaced(
    make_runtime: Any,
) -> None:
    """Cut while the card's trip waits for the log's lock: the trip's answer is lost, so
    the table pauses (nothing is sent again by itself); the card sent again lands once."""
    a_rt, b_rt = make_runtime(), make_runtime()

    async def go() -> None:
        service = await _table(a_rt, "kept-3")
        first = _pid(service)
        with b_rt.sessions.begin() as session:
            b_rt.store.lock(session)  # b holds the log's lock: a's trip waits on it
            card = asyncio.create_task(service.execute(c.CardScanned("3S"), actor=READER))
            deadline = time.monotonic() + 30
            while not await asyncio.to_thread(_waits, b_rt, first):
                assert time.monotonic() < deadline and not card.done()
                await asyncio.sleep(0.01)
            await asyncio.to_thread(_terminate, b_rt, first)
            with pytest.raises(DatabaseUnavailable):
                await card
        assert service.outage is not None
        await service.execute(c.CardScanned("3S"), actor=READER)  # resumed, then sent again
        assert service.outage is None and _pid(service) != first
        await service.execute(c.CardScanned("4S"), actor=READER)
        await service.stop()

    asyncio.run(go())
    assert _cards(a_rt, "kept-3") == ["3S", "4S"]


def _waits(runtime: Any, pid: int) -> bool:
    with runtime.engine.connect() as conn:
        return bool(
            conn.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE pid = :p"
                     " AND wait_event_type = 'Lock'"),
                {"p": pid},
            ).scalar()
        )  # fmt: skip


def test_a_thousand_bets_and_their_settlement_go_through_copy_on_the_kept_connection(
    make_runtime: Any,
) -> None:
    """More bets than are deferred to the commit's trip go in by ``COPY`` on the driver's
    own connection, and so do their settlement's ledger rows: on the kept connection,
    which is detached from the pool and so has no pool record (its ``driver_connection``
    is None: taking that one refused every such command with "the database connection
    was closed under the projector")."""
    runtime = make_runtime()
    bets = [
        c.BetRequest(f"{i:032x}", f"k{i}", f"a{i % 10}", ("player", "banker")[i % 2], 100)
        for i in range(DEFERRED_PLACING + 234)
    ]

    async def go() -> TableService:
        for i in range(10):
            transfer(runtime, Transfer(f"a{i}", 10**7, f"seed-a{i}", "credit"), actor=OPERATOR)
        service = TableService(runtime, TableConfig(table_id="kept-copy", betting_seconds=600))
        await service.start(with_reader=False)
        for step in (c.InsertShoe(), c.CardScanned("AS"), c.CardScanned("2S"), c.OpenBetting()):
            await service.execute(step, actor="supervisor:s")
        first = _pid(service)
        await service.execute(c.PlaceBets(tuple(bets)), actor=OPERATOR)
        await service.execute(c.CloseBetting(), actor="dealer:d")
        for card in ("9H", "2C", "KD", "3S"):  # player 9 (natural): every bet settles
            await service.execute(c.CardScanned(card), actor=READER)
        assert _pid(service) == first  # all of it on the kept connection
        await service.stop()
        return service

    service = asyncio.run(go())
    rnd = service.state.round
    assert rnd is not None and rnd.phase == "settled"
    with runtime.sessions() as session:
        settled = session.execute(
            text("SELECT count(*) FROM bets WHERE round_id = :r AND status = 'settled'"),
            {"r": rnd.round_id},
        ).scalar()
    assert settled == len(bets)
