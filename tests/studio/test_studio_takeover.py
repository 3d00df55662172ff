"""Takeover in one process: two studio members on one database; the first stops
renewing (as if frozen or killed) and the second takes its table over, rebuilds it from
the log and applies the game's restart rule: a baccarat round resumes; a game whose rule
is void-and-refund has its round voided and every stake returned, once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest
from sqlalchemy import func, select

from table_service.models import Account, LedgerEntry
from table_service.runtime import Runtime
from table_service.studio.coordinator import Studio
from table_service.studio.lease import LeaseLost
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.wallet import Transfer, transfer

# Long enough that a loaded CI machine (two test workers on two cores) renews the lease
# while the test sets the round up: at 1.5 s (a 0.9 s lease) one run lost it mid-setup.
TAKEOVER = 4.0


async def _frozen(studio: Studio) -> None:
    """The member stops ticking (no renewals) but its tables stay in memory: a stall."""
    assert studio._task is not None
    studio._task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await studio._task


async def _betting_with_bets(studio: Studio) -> str:
    table = studio.get("tk-1")
    await table.execute(c.InsertShoe(), actor="supervisor:s")
    for card in ["2S", "3H", "4H"]:
        await table.execute(c.CardScanned(card), actor="supervisor:s")
    await table.execute(c.OpenBetting(), actor="dealer:d")
    bets = tuple(
        c.BetRequest(f"bet-{i}", f"k{i}", "p1", kind, 1_000)
        for i, kind in enumerate(["player", "banker"])
    )
    await table.execute(c.PlaceBets(bets, {}), actor="operator:op")
    assert table.state.round is not None
    return table.state.round.round_id


@pytest.mark.parametrize("rule", ["resume", "void"])
async def test_takeover_applies_the_games_restart_rule(
    make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch, rule: str
) -> None:
    config = TableConfig(table_id="tk-1", betting_seconds=600)
    monkeypatch.setattr(config.game_impl, "on_restart", rule)
    a_rt, b_rt = make_runtime(), make_runtime()
    transfer(a_rt, Transfer("p1", 10_000, "seed", "credit"), actor="operator:op")
    a = Studio(a_rt, [config], node_id="a", url="http://a", takeover_seconds=TAKEOVER)
    b = Studio(b_rt, [config], node_id="b", url="http://b", takeover_seconds=TAKEOVER)
    try:
        await a.start(with_readers=False)
        await b.start(with_readers=False)
        assert set(a.tables) == {"tk-1"} and not b.tables
        round_id = await _betting_with_bets(a)
        stale = a.tables["tk-1"]
        await _frozen(a)
        loop = asyncio.get_running_loop()
        started = loop.time()
        while "tk-1" not in b.tables:
            assert loop.time() - started < 3 * TAKEOVER, "no takeover"
            await asyncio.sleep(0.05)
        taken = b.tables["tk-1"]
        rnd = taken.state.round
        assert rnd is not None and rnd.round_id == round_id
        with b_rt.sessions() as session:
            account = session.get(Account, "p1")
            assert account is not None
            balance = account.balance
            returns = session.scalar(
                select(func.count()).select_from(LedgerEntry).where(LedgerEntry.kind == "return")
            )
        if rule == "resume":
            assert rnd.phase == "betting" and len(rnd.bets) == 2
            assert (balance, returns) == (8_000, 0)
        else:
            assert rnd.phase == "voided" and not rnd.active
            assert (balance, returns) == (10_000, 2)  # each stake back, once
        # The stalled member wakes up and tries to deal on: refused at its commit.
        with pytest.raises(LeaseLost):
            await stale.execute(c.CloseBetting("dealer"), actor="dealer:d")
        with a_rt.sessions() as session:
            account = session.get(Account, "p1")
            assert account is not None and account.balance == balance
    finally:
        await b.stop()
        with contextlib.suppress(Exception):
            await a.stop()
