"""Settlement as one ledger row per bet: the return entry is the settlement, the ``bets``
view reads status, result and return from it, and the database itself refuses a second
settlement, an edit of a placed bet and a reference to an account or round that does not
exist (on both backends). The 0006 migration carries existing bets over unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from migrations import alembic_config
from table_service.models import BetRow, LedgerEntry, PlacedBet
from table_service.runtime import Runtime
from table_service.table import commands as c
from table_service.table.config import StakeLimits, TableConfig
from table_service.table.service import TableService, new_bet_id
from table_service.table.wallet import Transfer, transfer

OPERATOR = "operator:op"


def _play(runtime: Runtime, *, void: bool = False) -> list[str]:
    """One baccarat round of 5 bets, settled (player natural 9) or voided; the bet ids."""
    for account in ("a1", "a2"):
        transfer(runtime, Transfer(account, 10_000, f"seed-{account}", "credit"), actor=OPERATOR)
    config = TableConfig(
        table_id="rows-1", betting_seconds=600, limits=StakeLimits(min_stake=1, max_stake=5000)
    )

    async def go() -> list[str]:
        service = TableService(runtime, config)
        await service.start(with_reader=False)
        for step in (c.InsertShoe(), c.CardScanned("AS"), c.CardScanned("2S"), c.OpenBetting()):
            await service.execute(step, actor="supervisor:s")
        kinds = ("player", "banker", "tie", "player_pair", "banker")
        bets = tuple(
            c.BetRequest(new_bet_id(), f"k{i}", f"a{i % 2 + 1}", kind, 100 * (i + 1))
            for i, kind in enumerate(kinds)
        )
        await service.execute(c.PlaceBets(bets), actor=OPERATOR)
        if void:
            await service.execute(c.VoidRound("test", True), actor="supervisor:s")
        else:
            await service.execute(c.CloseBetting(), actor="dealer:d")
            for card in ("9H", "2C", "KD", "3S"):  # player 9 (natural), banker 2
                await service.execute(c.CardScanned(card), actor="dealer:d")
        await service.stop()
        return [b.bet_id for b in bets]

    return asyncio.run(go())


def test_a_settled_round_is_one_return_entry_per_bet_read_through_the_view(
    make_runtime: Callable[..., Runtime],
) -> None:
    runtime = make_runtime()
    ids = _play(runtime)
    with runtime.sessions() as session:
        bets = {b.bet_id: b for b in session.scalars(select(BetRow))}
        returns = {
            e.bet_id: e
            for e in session.scalars(select(LedgerEntry).where(LedgerEntry.kind == "return"))
        }
        placed = session.scalar(select(func.count()).select_from(PlacedBet))
    assert sorted(bets) == sorted(ids) == sorted(returns, key=str) and placed == 5
    by_type = {b.bet_type: b for b in bets.values()}
    assert by_type["player"].returned == 200 and by_type["player"].result == "win"
    assert by_type["tie"].returned == 0 and by_type["tie"].result == "lose"
    for bet in bets.values():
        entry = returns[bet.bet_id]
        assert bet.status == "settled" and bet.closed_seq == entry.seq
        assert (bet.result, bet.returned) == (entry.result, entry.amount)


def test_a_voided_round_reads_refunded(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    _play(runtime, void=True)
    with runtime.sessions() as session:
        rows = list(session.scalars(select(BetRow)))
    assert len(rows) == 5
    assert {(b.status, b.result, b.returned == b.stake) for b in rows} == {
        ("refunded", "refunded", True)
    }


def test_the_database_refuses_a_second_return_and_an_edited_bet(
    make_runtime: Callable[..., Runtime],
) -> None:
    runtime = make_runtime()
    bet_id = _play(runtime)[0]
    second = (
        "INSERT INTO ledger_entries (account_id, amount, kind, bet_id, seq, result)"
        " VALUES ('a1', 100, 'return', :b, 999, 'refunded')"
    )
    with pytest.raises(IntegrityError), runtime.engine.begin() as conn:
        conn.execute(text(second), {"b": bet_id})  # a refund after the settlement
    with pytest.raises(DBAPIError), runtime.engine.begin() as conn:
        conn.execute(text("UPDATE placed_bets SET stake = 1 WHERE bet_id = :b"), {"b": bet_id})
    with runtime.sessions() as session:
        assert session.scalar(select(BetRow.status).where(BetRow.bet_id == bet_id)) == "settled"


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO placed_bets (bet_id, idempotency_key, table_id, round_id, account_id,"
        " bet_type, stake, placed_seq) VALUES ('x', 'op|x', 'rows-1', :round, 'nobody',"
        " 'player', 1, 1)",
        "INSERT INTO placed_bets (bet_id, idempotency_key, table_id, round_id, account_id,"
        " bet_type, stake, placed_seq) VALUES ('x', 'op|x', 'rows-1', 'no-round', 'a1',"
        " 'player', 1, 1)",
        "INSERT INTO ledger_entries (account_id, amount, kind, bet_id, seq)"
        " VALUES ('nobody', 1, 'return', 'x', 1)",
        "DELETE FROM accounts WHERE account_id = 'a1'",
        "UPDATE accounts SET account_id = 'a9' WHERE account_id = 'a1'",
        "DELETE FROM rounds WHERE round_id = :round",
    ],
)
def test_references_to_accounts_and_rounds_hold(
    make_runtime: Callable[..., Runtime], statement: str
) -> None:
    runtime = make_runtime()
    _play(runtime)
    with runtime.engine.connect() as conn:
        round_id = conn.execute(text("SELECT round_id FROM rounds")).scalar_one()
    with pytest.raises(IntegrityError), runtime.engine.begin() as conn:
        conn.execute(text(statement), {"round": round_id} if ":round" in statement else {})
    with runtime.engine.begin() as conn:  # an unreferenced account may still be renamed
        conn.execute(text("INSERT INTO accounts VALUES ('spare', 0, 1, NULL)"))
        conn.execute(text("UPDATE accounts SET account_id = 'spare2' WHERE account_id = 'spare'"))
        conn.execute(text("UPDATE accounts SET balance = balance WHERE account_id = 'a1'"))


def test_migration_0006_keeps_every_bet_status_and_goes_back(db_url: str, tmp_path: Path) -> None:
    config = alembic_config(db_url)
    command.upgrade(config, "0005_balance_bounds_owner")
    engine = create_engine(db_url)
    rows = [  # bet, status, result, returned
        ("b-open", "open", None, None),
        ("b-won", "settled", "win", 195),
        ("b-lost", "settled", "lose", 0),
        ("b-void", "refunded", "refunded", 100),
    ]
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO accounts VALUES ('a1', 1000, 1, 'operator:op')"))
        conn.execute(
            text(
                "INSERT INTO rounds (round_id, table_id, shoe_no, game_number, phase, closes_at,"
                " cards, opened_seq) VALUES ('r1', 't', 1, 1, 'settled', 'x', '[]', 1)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO ledger_entries (account_id, amount, kind, reference, seq)"
                " VALUES ('a1', 1000, 'credit', 'operator:op|seed', 1)"
            )
        )
        for n, (bet, status, result, returned) in enumerate(rows):
            conn.execute(
                text(
                    "INSERT INTO bets (bet_id, idempotency_key, table_id, round_id, account_id,"
                    " bet_type, stake, status, result, returned, placed_seq, closed_seq)"
                    " VALUES (:b, :k, 't', 'r1', 'a1', 'player', 100, :s, :r, :m, 2, :c)"
                ),
                {"b": bet, "k": f"op|{bet}", "s": status, "r": result, "m": returned, "c": None},
            )
            conn.execute(
                text(
                    "INSERT INTO ledger_entries (account_id, amount, kind, bet_id, seq)"
                    " VALUES ('a1', -100, 'stake', :b, 2)"
                ),
                {"b": bet},
            )
            if returned is not None:
                conn.execute(
                    text(
                        "INSERT INTO ledger_entries (account_id, amount, kind, bet_id, seq)"
                        " VALUES ('a1', :m, 'return', :b, :s)"
                    ),
                    {"b": bet, "m": returned, "s": 10 + n},
                )
    want = {bet: (status, result, returned) for bet, status, result, returned in rows}
    query = text("SELECT bet_id, status, result, returned FROM bets")
    command.upgrade(config, "head")
    with engine.connect() as conn:
        assert {b: (s, r, m) for b, s, r, m in conn.execute(query)} == want
        closed: dict[str, int] = dict(
            conn.execute(text("SELECT bet_id, closed_seq FROM bets")).all()
        )
        credit = conn.execute(
            text("SELECT result FROM ledger_entries WHERE reference = 'operator:op|seed'")
        ).scalar_one()
    assert closed == {"b-open": None, "b-won": 11, "b-lost": 12, "b-void": 13} and credit is None
    command.downgrade(config, "0005_balance_bounds_owner")
    with engine.connect() as conn:
        assert {b: (s, r, m) for b, s, r, m in conn.execute(query)} == want
    command.upgrade(config, "head")
    engine.dispose()


def test_the_collector_pauses_while_big_commands_run_and_comes_back() -> None:
    import gc

    from table_service.table.service import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # another table's command, overlapping
            assert not gc.isenabled()
        assert not gc.isenabled()  # the first one still runs
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("a command that fails")
    assert gc.isenabled()
    gc.disable()  # a process that runs without the collector keeps running without it
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
