"""`livetable demo --game blackjack` end to end: pty shoe, reader, HTTP API, SQLite.

Asserted on the database and the audit log: rounds dealt and decided, the bots' decisions
and timeouts recorded as the table's events, the dealer's mistakes raised and resolved
as incidents, every round recomputed offline from its settle_input to the ledger's
figures, and the books balanced.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sqlalchemy import select

from audit.store import EventStore
from table_service.demo.run import run_demo
from table_service.models import BetRow, IncidentRow, RoundRow
from table_service.rules.games import find_game
from table_service.table.config import TableConfig
from table_service.table.recall import round_record
from tests.demo.test_demo_run import (
    _audit_verify,
    _check_ledger,
    _console,
    _options,
    _runtime,
    clean_env,
)

__all__ = ["clean_env"]
ROUNDS = 8


async def test_blackjack_demo_plays_decides_and_keeps_the_books(clean_env: Path) -> None:
    data_dir = clean_env
    console, out = _console()
    options = _options(
        data_dir,
        game="blackjack",
        rounds=ROUNDS,
        seed=11,
        decision_seconds=1,
        cut_after=60,
        mistakes=0.5,  # a card no position is owed voids its round: leave rounds to decide
    )
    report = await run_demo(options, console)
    text = out.getvalue()
    assert report.rounds_played == ROUNDS and report.stopped_by == "rounds"
    kinds = {kind for _, kind in report.mistakes}
    assert "card_not_owed" in kinds and "missed_scan" not in kinds, report.mistakes

    runtime = _runtime(data_dir)
    try:
        with runtime.sessions() as s:
            rounds = list(s.scalars(select(RoundRow).order_by(RoundRow.opened_seq)))
            incidents = list(s.scalars(select(IncidentRow)))
            events = EventStore.read(s, table_id="bj-1")
            settled = [r for r in rounds if r.phase == "settled"]
            assert len(rounds) == ROUNDS and settled
            assert {r.phase for r in rounds} <= {"settled", "voided"}
            actions = Counter(
                (e.payload.get("auto") or "player") for e in events if e.type == "action_taken"
            )
            assert actions["player"] > 0 and actions["timeout"] > 0, actions
            raised = Counter(i.kind for i in incidents)
            made = Counter(kind for _, kind in report.mistakes)
            assert raised["card_not_owed"] == made["card_not_owed"]
            assert all(i.status == "resolved" for i in incidents)
            # every settled round, recomputed offline from its settle_input, is the ledger
            rules = TableConfig(table_id="x", game="blackjack").rules
            game = find_game("blackjack")
            for row in settled:
                record = round_record(s, "bj-1", row.round_id)
                again = game.recompute(rules, record["settle_input"])
                bets = s.scalars(select(BetRow).where(BetRow.round_id == row.round_id))
                ledger = {b.bet_id: (b.returned, b.result) for b in bets}
                assert {ln.stake_id: (ln.returned, ln.result) for ln in again.lines} == ledger
        _check_ledger(runtime)
    finally:
        runtime.close()
    verify = _audit_verify(data_dir)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # the round log a pit boss reads: the dealer's hand, each seat's hands and decisions
    assert text.count("DEALER ") >= len(settled)
    assert "seat 1 hand 1" in text and "timer ran out" in text
    assert "card_not_owed" in text and "confirms the dealing error" in text
    # a card no position is owed voids its round (seed 000), every stake refunded
    voided = {r.round_id for r in rounds if r.phase == "voided"}
    assert {i.round_id for i in incidents if i.kind == "card_not_owed"} <= voided
