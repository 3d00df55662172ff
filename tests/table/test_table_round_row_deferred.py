"""A round's row is written with the COMMIT of the command that moves it (PostgreSQL): a
card's cards, and its phase and result when it closes betting or settles the round, wait
for the commit and go in its one round trip, so the log's lock is not held over a round
trip each. The row reads as it always did once committed, on both backends."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sqlalchemy import event, select

from audit.store import EventStore
from table_service.models import RoundRow
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.service import TableService
from table_service.table.wallet import Transfer, transfer

OPERATOR = "operator:op"


def test_the_rounds_phase_and_result_go_with_the_commit(runtime: Any) -> None:
    transfer(runtime, Transfer("a1", 10_000, "seed-a1", "credit"), actor=OPERATOR)
    sent: list[str] = []  # statements sent on their own (not with a COMMIT)

    def before(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    async def go() -> TableService:
        service = TableService(runtime, TableConfig(table_id="defer-1", betting_seconds=600))
        await service.start(with_reader=False)
        for step in (c.InsertShoe(), c.CardScanned("AS"), c.CardScanned("2S"), c.OpenBetting()):
            await service.execute(step, actor="supervisor:s")
        bet = c.BetRequest("b" * 32, "k1", "a1", "player", 100)
        await service.execute(c.PlaceBets((bet,)), actor=OPERATOR)
        event.listen(runtime.engine, "before_cursor_execute", before)
        try:
            await service.execute(c.CloseBetting(), actor="dealer:d")
            for card in ("9H", "2C", "KD", "3S"):  # player 9 (natural), banker 2: settled
                await service.execute(c.CardScanned(card), actor="dealer:d")
        finally:
            event.remove(runtime.engine, "before_cursor_execute", before)
        await service.stop()
        return service

    service = asyncio.run(go())
    rnd = service.state.round
    assert rnd is not None and rnd.phase == "settled"
    with runtime.sessions() as session:
        row = session.scalars(select(RoundRow).where(RoundRow.round_id == rnd.round_id)).one()
        settled = [
            e.seq
            for e in EventStore.read(session, round_id=rnd.round_id)
            if e.type == "round_settled"
        ]
    assert row.phase == "settled"
    assert json.loads(row.cards) == ["9H", "2C", "KD", "3S"]
    assert row.outcome is not None and json.loads(row.outcome)
    assert settled and row.closed_seq == settled[0]
    round_writes = [s for s in sent if s.lstrip().upper().startswith("UPDATE ROUNDS")]
    if runtime.engine.dialect.name == "postgresql":
        assert round_writes == []  # every one went with its command's COMMIT
    else:
        assert round_writes  # SQLite writes as it goes (nothing to save)


def test_opening_and_closing_betting_commit_in_one_trip_each(runtime: Any) -> None:
    """The new round's row waits for the COMMIT too: on PostgreSQL opening the betting
    window, like closing it, commits in one round trip; the row reads as before."""

    async def go() -> TableService:
        service = TableService(runtime, TableConfig(table_id="defer-2", betting_seconds=600))
        await service.start(with_reader=False)
        for step in (c.InsertShoe(), c.CardScanned("AS"), c.CardScanned("2S")):
            await service.execute(step, actor="supervisor:s")
        before = dict(runtime.store.one_trips)
        await service.execute(c.OpenBetting(), actor="dealer:d")
        rnd = service.state.round
        assert rnd is not None
        with runtime.sessions() as session:
            row = session.scalars(select(RoundRow).where(RoundRow.round_id == rnd.round_id)).one()
            assert (row.phase, row.cards, row.table_id) == ("betting", "[]", "defer-2")
        await service.execute(c.CloseBetting(), actor="dealer:d")
        if runtime.engine.dialect.name == "postgresql":
            assert runtime.store.one_trips["committed"] == before["committed"] + 2
        await service.stop()
        return service

    service = asyncio.run(go())
    rnd = service.state.round
    assert rnd is not None
    with runtime.sessions() as session:
        row = session.scalars(select(RoundRow).where(RoundRow.round_id == rnd.round_id)).one()
        opened = next(e.seq for e in EventStore.read(session, round_id=rnd.round_id))
    assert (row.phase, row.opened_seq) == ("dealing", opened)
