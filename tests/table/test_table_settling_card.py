"""The card that settles a round writes its return entries and credits with its COMMIT
(PostgreSQL): nothing is read or written before it, so it commits in one round trip like
any other card (on SQLite its credits are one upsert, with no read of the balances). The
rows and balances are what they were: one return entry per bet in the bets' order, each
account credited once with the command's last seq; the schema still refuses a balance past
its ceiling, and the card then leaves nothing behind. A balance read in the same
transaction after the settlement sees it (both backends)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import IntegrityError

from audit.store import EventStore, NewEvent
from table_service.models import BALANCE_CEILING
from table_service.table import commands as c
from table_service.table.config import StakeLimits, TableConfig
from table_service.table.projector import balances, project, writes_only_deferred
from table_service.table.service import TableService
from table_service.table.wallet import Transfer, transfer

OPERATOR = "operator:op"
ACCOUNTS = ("a1", "a2", "a3")
KINDS = ("player", "banker", "tie", "player_pair", "banker")
PLAYER_NATURAL = ("9H", "2C", "KD", "3S")  # player 9 (natural), banker 2


async def _round_to_its_last_card(runtime: Any, table_id: str) -> TableService:
    """Five bets on three accounts, betting closed, three cards dealt."""
    config = TableConfig(
        table_id=table_id, betting_seconds=600, limits=StakeLimits(min_stake=1, max_stake=5000)
    )
    service = TableService(runtime, config)
    await service.start(with_reader=False)
    for step in (c.InsertShoe(), c.CardScanned("AS"), c.CardScanned("2S"), c.OpenBetting()):
        await service.execute(step, actor="supervisor:s")
    bets = tuple(
        c.BetRequest(f"{i:032x}", f"k{i}", ACCOUNTS[i % 3], kind, 100 * (i + 1))
        for i, kind in enumerate(KINDS)
    )
    await service.execute(c.PlaceBets(bets), actor=OPERATOR)
    await service.execute(c.CloseBetting(), actor="dealer:d")
    for card in PLAYER_NATURAL[:-1]:
        await service.execute(c.CardScanned(card), actor="reader:r")
    return service


def _fund(runtime: Any) -> None:
    for account in ACCOUNTS:
        transfer(runtime, Transfer(account, 10_000, f"seed-{account}", "credit"), actor=OPERATOR)


def _money(runtime: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with runtime.engine.connect() as conn:
        accounts = conn.execute(
            text("SELECT account_id, balance, updated_seq FROM accounts ORDER BY account_id")
        ).all()
        ledger = conn.execute(
            text(
                "SELECT account_id, amount, kind, bet_id, seq, result FROM ledger_entries"
                " ORDER BY id"
            )
        ).all()
    return [tuple(r) for r in accounts], [tuple(r) for r in ledger]


def test_the_settling_card_commits_in_one_trip_with_the_same_rows(runtime: Any) -> None:
    _fund(runtime)
    sent: list[str] = []  # statements sent on their own (not in the COMMIT's round trip)

    def before(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    async def go() -> Any:
        service = await _round_to_its_last_card(runtime, "settle-1")
        trips = dict(runtime.store.one_trips)
        before_card = _money(runtime)
        event.listen(runtime.engine, "before_cursor_execute", before)
        try:
            outcome = await service.execute(c.CardScanned(PLAYER_NATURAL[-1]), actor="reader:r")
        finally:
            event.remove(runtime.engine, "before_cursor_execute", before)
        await service.stop()
        assert service.state.round is not None and service.state.round.phase == "settled"
        return outcome, trips, before_card

    outcome, trips, (accounts_before, ledger_before) = asyncio.run(go())
    assert [e.type for e in outcome.events] == [
        "card_dealt",
        "round_result",
        "bets_settled",
        "round_settled",
    ]
    last, settled = outcome.events[-1].seq, outcome.events[2]
    results = sorted(settled.payload["results"], key=lambda r: r["bet_id"])
    assert [r["returned"] for r in results] == [200, 0, 0, 0, 0]  # the player bet won
    credits = {a: sum(r["returned"] for r in results if r["account"] == a) for a in ACCOUNTS}
    accounts, ledger = _money(runtime)
    assert accounts == [
        (a, balance + credits[a], last if credits[a] else seq)
        for a, balance, seq in accounts_before
    ]
    assert ledger == ledger_before + [  # one return entry a bet, in the bets' order
        (r["account"], r["returned"], "return", r["bet_id"], settled.seq, r["result"])
        for r in results
    ]
    if runtime.engine.dialect.name == "postgresql":
        assert sent == []  # the lock, the rows, the balances: all in the COMMIT's trip
        assert runtime.store.one_trips["committed"] == trips["committed"] + 1
    else:  # credits are one upsert: no balance is read first
        assert not [s for s in sent if "FROM accounts" in s], sent


def test_a_settlement_past_the_balance_ceiling_leaves_nothing_behind(runtime: Any) -> None:
    """The winner's balance would pass the ceiling: the schema refuses the settlement
    (at the commit, on PostgreSQL), and the card is not recorded at all."""
    _fund(runtime)

    async def go() -> tuple[Any, Any, Any]:
        service = await _round_to_its_last_card(runtime, "settle-2")
        with runtime.engine.begin() as conn:  # a1 wins 200: 100 past the ceiling
            conn.execute(text(f"UPDATE accounts SET balance = {BALANCE_CEILING - 100}"))
        before = _money(runtime), service.state
        with pytest.raises(IntegrityError):
            await service.execute(c.CardScanned(PLAYER_NATURAL[-1]), actor="reader:r")
        after = _money(runtime), service.state
        with runtime.sessions() as session:
            types = [e.type for e in EventStore.read(session, table_id="settle-2")]
        await service.stop()
        return before, after, types

    before, after, types = asyncio.run(go())
    assert after == before
    assert types[-1] == "card_dealt" and "round_result" not in types


def test_balances_read_after_a_settlement_in_its_transaction_see_it(runtime: Any) -> None:
    """A seated bank's review reads the players' balances after the settling card's
    projection, in its transaction: the credits waiting for the COMMIT go first."""
    _fund(runtime)
    result = {"bet_id": "b1", "account": "a1", "type": "player", "stake": 100}
    settled = {"round_id": "r1", "results": [{**result, "result": "win", "returned": 200}]}
    with runtime.sessions.begin() as session:
        runtime.store.lock(session)
        stored = runtime.store.append(
            session, [NewEvent("settle-3", "bets_settled", "test", settled, "r1")], defer=True
        )
        project(session, stored)
        assert balances(session, ["a1", "a2"]) == {"a1": 10_200, "a2": 10_000}
        session.rollback()


def test_which_commands_write_only_with_their_commit() -> None:
    """A card settling up to a chunk of bets (one paying event) waits for its commit; one
    settling more writes at once (by COPY), as do stakes taken."""
    settling = ["card_dealt", "round_result", "bets_settled", "round_settled"]
    assert writes_only_deferred(settling)
    assert writes_only_deferred(["round_voided", "bets_refunded"])
    assert not writes_only_deferred([*settling[:2], "bets_settled", *settling[2:]])
    assert not writes_only_deferred(["bets_placed"])
    assert not writes_only_deferred(["account_credited"])
