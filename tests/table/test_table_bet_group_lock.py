"""A bet group does not hold the log's lock while it reads and decides (PostgreSQL): it
reads its balances first and takes the lock with its writes and COMMIT, one round trip.
What moved meanwhile is found under the lock: a balance gone short refuses the trip and
the group is decided again, the lock first (the bet refused, nothing half-written); a head
another writer moved links the same bets again."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import text

from audit.store import ADVISORY_LOCK_SQL, NewEvent
from audit.verify import verify_database
from table_service.table.service import Outcome, TableService
from table_service.table.wallet import Transfer, transfer
from tests.table.test_table_bet_groups import (
    balance,
    bets,
    ledger_matches_balances,
    stored,
    together,
)
from tests.table.test_table_bet_groups import table as table

pytestmark = pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)


def _while_deciding(
    table: TableService, monkeypatch: pytest.MonkeyPatch, meanwhile: Any
) -> list[bool]:
    """Run ``meanwhile`` on a thread of its own while the first group decides (bounded: a
    lock held by the group would keep it waiting); whether it ended in time, per group."""
    ended: list[bool] = []
    decide = table._decide_group

    def deciding(*args: Any) -> Any:
        if not ended:
            other = threading.Thread(target=meanwhile)
            other.start()
            other.join(20)
            ended.append(not other.is_alive())
        return decide(*args)

    monkeypatch.setattr(table, "_decide_group", deciding)
    return ended


async def test_a_group_decides_without_the_logs_lock(
    table: TableService, runtime: Any, make_runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = make_runtime()

    def take_the_lock() -> None:
        with other.engine.begin() as conn:
            assert conn.scalar(text(f"SELECT pg_try_advisory_xact_lock({ADVISORY_LOCK_SQL})"))

    ended = _while_deciding(table, monkeypatch, take_the_lock)
    before = dict(runtime.store.one_trips)
    answers = await together(
        table, [(bets(("k1", "a0", 100)), "operator:a"), (bets(("k2", "b0", 200)), "operator:b")]
    )
    assert ended == [True]
    assert all(isinstance(a, Outcome) for a in answers)
    assert runtime.store.one_trips["committed"] == before["committed"] + 1
    assert stored(runtime) == {"k1": ("a0", 100), "k2": ("b0", 200)}
    assert balance(runtime, "a0") == 9_900 and balance(runtime, "b0") == 9_800
    ledger_matches_balances(runtime)


async def test_a_balance_gone_short_meanwhile_refuses_the_bet(
    table: TableService, runtime: Any, make_runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = make_runtime()
    drain = Transfer("a0", 9_950, "drain", "debit")
    ended = _while_deciding(table, monkeypatch, lambda: transfer(other, drain, actor="operator:a"))
    before = dict(runtime.store.one_trips)
    (answer,) = await together(table, [(bets(("k1", "a0", 100)), "operator:a")])
    assert ended == [True]
    assert isinstance(answer, Outcome)
    assert [r.get("error") for r in answer.answer["results"]] == ["insufficient_funds"]
    # the debit moved the head too: linked again, then refused by its debit under the lock
    assert runtime.store.one_trips["head_moved"] == before["head_moved"] + 1
    assert stored(runtime) == {} and balance(runtime, "a0") == 50
    ledger_matches_balances(runtime)


async def test_a_head_moved_meanwhile_links_the_group_again(
    table: TableService, runtime: Any, make_runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = make_runtime()

    def append() -> None:
        with other.sessions.begin() as session:
            other.store.append(session, [NewEvent("elsewhere", "noted", "test", {})])

    ended = _while_deciding(table, monkeypatch, append)
    before = dict(runtime.store.one_trips)
    (answer,) = await together(table, [(bets(("k1", "a0", 100), ("k2", "a1", 300)), "operator:a")])
    assert ended == [True]
    assert isinstance(answer, Outcome) and len(answer.events) == 1
    assert runtime.store.one_trips["head_moved"] == before["head_moved"] + 1
    assert stored(runtime) == {"k1": ("a0", 100), "k2": ("a1", 300)}
    assert balance(runtime, "a0") == 9_900 and balance(runtime, "a1") == 9_700
    ledger_matches_balances(runtime)
    with runtime.sessions() as session:
        keys = {runtime.signer.key_id: runtime.signer.public_key}
        assert verify_database(session, keys, allow_unsigned_tail=True).ok
    assert table.state.last_seq == answer.events[-1].seq
