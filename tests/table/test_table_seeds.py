"""Seed conformance at the live table (issue 31): each point of the seeds that the live
table once got wrong, played through decide/apply as the table plays it, and checked
against the one rules code (``livetable settle``'s recompute and the audit replay).

The seeds are ``shared/seeds/*.txt``; the decisions are ``docs/rules/*.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from table_helpers import Harness

from audit.replay import ReplayError, ReplayTotals, fold_rounds, replay_round
from table_service.table import commands as c
from table_service.table.config import TableConfig


@dataclass(frozen=True)
class _Logged:
    """A harness draft as the audit replay reads an event."""

    seq: int
    table_id: str
    round_id: str | None
    type: str
    ts: str
    payload: dict[str, Any]


def replayed_rounds(h: Harness) -> ReplayTotals:
    """Every closed round of the harness's log recomputed by the audit replay."""
    events = [
        _Logged(n + 1, h.config.table_id, d.round_id, d.type, "2026-01-01T12:00:00Z", d.payload)
        for n, d in enumerate(h.log)
    ]
    folded = fold_rounds(events)
    totals = ReplayTotals()
    for fold in folded.rounds.values():
        replay_round(fold, folded.rules[fold.rules_ref], None, totals)
    return totals


# -- 3. Tiger Pair (Hổ đôi) has no 30-game cut-off (seed 004) -----------------------------------
def test_tiger_pair_is_taken_after_game_30_unlike_the_other_tiger_bets() -> None:
    h = Harness(TableConfig(table_id="t1", betting_seconds=1))
    h.ready_shoe()
    answers: dict[int, dict[str, str]] = {}
    for game in range(1, 33):
        h.run(c.OpenBetting())
        if game in (30, 31, 32):
            answers[game] = {
                bet: h.bet(bet, 100)["status"] for bet in ("tiger_pair", "tiger_tie", "big_tiger")
            }
        h.run(c.VoidRound("test", change_shoe=False))
    assert answers[30] == {"tiger_pair": "placed", "tiger_tie": "placed", "big_tiger": "placed"}
    for game in (31, 32):
        assert answers[game] == {
            "tiger_pair": "placed",
            "tiger_tie": "refused",
            "big_tiger": "refused",
        }, game


def test_tiger_pair_in_game_31_settles_through_the_rules_code() -> None:
    h = Harness(TableConfig(table_id="t1", betting_seconds=1))
    h.ready_shoe()
    for _ in range(30):
        h.run(c.OpenBetting())
        h.run(c.VoidRound("test", change_shoe=False))
    h.run(c.OpenBetting())
    assert h.state.round is not None and h.state.round.game_number == 31
    assert h.bet("tiger_pair", 100)["status"] == "placed"
    h.run(c.CloseBetting())
    h.deal("5S", "7H", "5D", "7C", "KS")  # both sides pair: 20
    (line,) = h.events("bets_settled")[0]["results"]
    assert (line["type"], line["result"], line["returned"]) == ("tiger_pair", "win", 2100)
    assert replayed_rounds(h).bets == 1


# -- 4. Baccarat procedure 8: the insurance card forgotten (seed 004) ----------------------------
def _insured_round() -> Harness:
    """A table configured with an insurance-type bet, a round being dealt."""
    h = Harness(TableConfig(table_id="t1", insurance_bet_types=("either_natural",)))
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.bet("player", 1000, account="a1")
    h.bet("either_natural", 300, account="a1")
    h.bet("either_natural", 200, account="a2")
    h.run(c.CloseBetting())
    h.deal("9S")
    return h


def test_forgotten_insurance_card_forfeits_insurance_type_bets_and_the_game_goes_on() -> None:
    h = _insured_round()
    decision = h.run(c.RaiseIncident("insurance_card_forgotten", {"card": "2H"}), "dealer:d1")
    assert decision.answer["blocking"] is False and not h.state.paused
    assert not h.events("bets_refunded")  # forfeited, not refunded
    forfeited = h.events("bets_settled")[0]["results"]
    assert sorted((r["bet_id"], r["result"], r["returned"]) for r in forfeited) == [
        ("b2", "forfeited", 0),
        ("b3", "forfeited", 0),
    ]
    h.deal("2H", "KD", "5C")  # the round goes on: player 9 + K = 9, a natural win
    assert h.state.round is not None and h.state.round.phase == "settled"
    settled = [r for e in h.events("bets_settled") for r in e["results"]]
    assert sorted(r["bet_id"] for r in settled) == ["b1", "b2", "b3"]  # each closed once
    assert next(r for r in settled if r["bet_id"] == "b1")["returned"] == 2000
    # the round's totals count the forfeited stakes once, as kept by the house
    totals = h.events("round_settled")[0]
    assert (totals["bets"], totals["staked"], totals["returned"]) == (3, 1500, 2000)
    assert replayed_rounds(h).returned == 2000
    assert h.replayed() == h.state


def test_forfeited_insurance_stands_when_the_round_is_voided_later() -> None:
    h = _insured_round()
    h.run(c.RaiseIncident("insurance_card_forgotten", {}), "dealer:d1")
    h.run(c.VoidRound("supervisor decision"), "supervisor:s1")
    refunds = [r["bet_id"] for e in h.events("bets_refunded") for r in e["refunds"]]
    assert refunds == ["b1"]  # never both forfeited and refunded
    assert h.events("round_voided")[0]["stood"] == ["b2", "b3"]
    replayed_rounds(h)


def test_a_forfeit_the_procedure_did_not_order_is_a_replay_finding() -> None:
    h = _insured_round()
    h.run(c.RaiseIncident("insurance_card_forgotten", {}), "dealer:d1")
    h.deal("2H", "KD", "5C")
    for draft in h.log:  # forge: the incident was never raised
        if draft.type == "incident_raised":
            draft.payload["kind"] = "other"
    with pytest.raises(ReplayError, match="forfeited without the procedure"):
        replayed_rounds(h)


def test_forgotten_insurance_card_forfeits_nothing_on_a_table_without_insurance() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.bet("player", 1000)
    h.run(c.CloseBetting())
    h.run(c.RaiseIncident("insurance_card_forgotten", {}), "dealer:d1")
    assert not h.events("bets_settled") and not h.events("bets_refunded")
    h.deal("9S", "2H", "KD", "5C")
    assert h.events("bets_settled")[0]["results"][0]["returned"] == 2000
