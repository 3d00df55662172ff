"""The serve watchdog's read-model check in memory bounded by a round's bets, not by the
log: folding the whole log each time held every bet of the studio's history at once, and a
soak's serve processes rose by hundreds of MiB at each check (5 December 2026)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest
from sqlalchemy import text

import table_service.regulator.readmodels as readmodels
from table_service.regulator.readmodels import check_read_models
from table_service.runtime import Runtime
from tests.support.table_session import Session


def _peak_kib(runtime: Runtime) -> float:
    """Python memory the check allocates at its peak, over what it started with."""
    with runtime.sessions() as session:
        assert check_read_models(session) == []  # warm: statements compiled, pool open
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        with runtime.sessions() as session:
            assert check_read_models(session) == []
        return (tracemalloc.get_traced_memory()[1] - before) / 1024
    finally:
        tracemalloc.stop()


def test_the_check_s_memory_does_not_grow_with_the_log(
    make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pages and batches small enough that a test-sized log is many of them.
    monkeypatch.setattr(readmodels, "PAGE", 8, raising=False)
    monkeypatch.setattr(readmodels, "FLUSH", 60, raising=False)
    runtime = make_runtime()
    table = Session(runtime)
    table.play(2, bets=30)
    short = _peak_kib(runtime)
    table.play(18, bets=30, void=(5, 11))
    long = _peak_kib(runtime)
    # The old fold: about nine times the short log's peak for nine times the bets.
    assert long < 1.6 * short + 64, (short, long)


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE ledger_entries SET amount = amount - 1 WHERE kind = 'stake'"
        " AND id = (SELECT MIN(id) FROM ledger_entries WHERE kind = 'stake')",
        "DELETE FROM ledger_entries WHERE kind = 'return'"
        " AND id = (SELECT MAX(id) FROM ledger_entries WHERE kind = 'return')",
        "INSERT INTO ledger_entries (account_id, amount, kind, bet_id, seq)"
        " VALUES ('a1', 5, 'commission', 'no-such-bet', 1)",
        "UPDATE ledger_entries SET amount = amount + 1 WHERE kind = 'credit'"
        " AND id = (SELECT MIN(id) FROM ledger_entries WHERE kind = 'credit')",
        "UPDATE accounts SET balance = 0 WHERE account_id = 'a3'",
    ],
    ids=["stake", "return-deleted", "ledger-line-added", "credit", "balance"],
)
def test_every_edit_still_fails_the_bounded_pass(
    make_runtime: Callable[..., Runtime], edit: str
) -> None:
    """The streamed pass must never call a tampered studio clean: each edit below makes it
    answer "differs", and the full fold then names the difference."""
    runtime = make_runtime()
    Session(runtime).play(6, bets=12, void=(2,))
    with runtime.sessions() as session:
        assert readmodels._agree(session)
    with runtime.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL session_replication_role = replica"))  # no guard triggers
        else:
            for (name,) in conn.execute(
                text("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            ).all():
                conn.execute(text(f'DROP TRIGGER "{name}"'))
        assert conn.execute(text(edit)).rowcount == 1
    with runtime.sessions() as session:
        assert not readmodels._agree(session)
    with runtime.sessions() as session:
        assert check_read_models(session)


def test_the_bounded_pass_agrees_on_a_blackjack_session(
    make_runtime: Callable[..., Runtime],
) -> None:
    """Doubles, splits and insurance add stakes mid-round, settled with the round: the
    streamed pass agrees without falling back to the full fold (which would hold the whole
    log again)."""
    from tests.support.table_session import BlackjackSession

    runtime = make_runtime()
    table = BlackjackSession(runtime)
    for _ in range(12):
        table.round()
    with runtime.sessions() as session:
        assert readmodels._agree(session)
