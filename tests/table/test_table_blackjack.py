"""Live blackjack at the table, through decide/apply (pure, controlled clock)."""

from __future__ import annotations

from typing import Any

import pytest

from table_service.rules.games import find_game
from table_service.table import commands as c
from table_service.table import policy
from table_service.table.config import TableConfig
from table_service.table.errors import (
    InsufficientFunds,
    NotYourTurn,
    RulesRefused,
    SeatRefused,
    WrongPhase,
)
from table_service.table.state import settle_input_of
from tests.table.table_helpers import Harness


class Table(Harness):
    def summary(self) -> dict[str, Any]:
        return self.state.public_summary()

    def turn(self) -> dict[str, Any]:
        """The turn now: a test that reads it expects one (a decision is awaited)."""
        turn: dict[str, Any] | None = self.summary()["round"]["turn"]
        assert turn is not None, "no turn now"
        return turn


def table(**rules: Any) -> Table:
    h = Table(TableConfig(table_id="bj", game="blackjack", game_rules=rules))
    h.run(c.InsertShoe())
    assert h.state.shoe is not None and h.state.shoe.ready  # seed 000: no burn
    return h


def seated(*seats: int, **rules: Any) -> Table:
    h = table(**rules)
    for n in seats:
        h.run(c.TakeSeat(n, f"p{n}"))
    h.run(c.OpenBetting())
    return h


def test_seats_one_per_player_and_bets_follow_the_seat_rules() -> None:
    h = seated(1, 2)
    with pytest.raises(SeatRefused):
        h.run(c.TakeSeat(1, "someone"))
    with pytest.raises(SeatRefused):
        h.run(c.TakeSeat(3, "p1"))  # one seat per player
    with pytest.raises(SeatRefused):
        h.run(c.TakeSeat(8, "x"))  # 7 seats
    assert h.seat_bet("p1", "pair", 100, 1)["error"] == "main_bet_first"
    assert h.seat_bet("p2", "main", 100, 1)["error"] == "not_your_seat"
    assert h.seat_bet("p1", "main", 100, 3)["error"] == "seat_free"
    assert h.seat_bet("p1", "main", 100, 1)["status"] == "placed"
    assert h.seat_bet("p1", "main", 100, 1)["error"] == "main_bet_placed"
    assert h.seat_bet("p1", "behind", 100, 1)["error"] == "own_seat"
    assert h.seat_bet("p1", "pair", 100, 1)["status"] == "placed"
    assert h.seat_bet("p9", "behind", 100, 1)["status"] == "placed"
    assert h.seat_bet("p1", "insurance", 50, 1)["error"] == "unknown_bet_type"
    assert h.seat_bet("p1", "main", 99, 2)["error"] == "not_your_seat"


def test_a_round_deals_in_order_takes_decisions_and_settles_every_line() -> None:
    h = seated(1, 2)
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p2", "main", 1000, 2)
    h.run(c.CloseBetting())
    cards = ["8S", "5H", "6D", "8D", "8H"]
    positions = [h.deal(card).drafts[0].payload["position"] for card in cards]
    assert positions == ["S1H1", "S2H1", "DEALER", "S1H1", "S2H1"]
    assert h.turn()["actors"] == ["seat:1"]
    moves = {m["action"] for m in h.turn()["legal_actions"]["seat:1"]}
    assert {"hit", "stand", "split", "double", "surrender"} <= moves and "insurance" not in moves
    with pytest.raises(NotYourTurn):
        h.act("seat:2", "stand", "p2")
    refusal = h.may_act("seat:1", "stand", "p2")  # the policy's, before decide
    assert isinstance(refusal, policy.Refusal) and refusal.code == "wrong_player"
    with pytest.raises(RulesRefused) as refused:
        h.act("seat:1", "insurance", "p1")
    assert refused.value.code == "illegal_decision" and "Ace" in refused.value.reason
    # (a card when a decision is awaited is a dealing error: tests/table/test_table_seeds.py)
    h.act("seat:1", "split", "p1")  # 8 8: two hands, a second stake debited
    placed = h.events("bets_placed")[-1]["bets"]
    assert [(b["part"], b["stake"], b["account"]) for b in placed] == [("split", 1000, "p1")]
    h.deal("2C")  # hand 1: 8 2
    h.act("seat:1", "double", "p1")
    h.deal("9C")  # hand 1: 19, doubled
    h.deal("TD")  # hand 2: 8 T = 18
    h.act("seat:1", "stand", "p1")
    h.act("seat:2", "stand", "p2")  # 5 8 = 13
    h.deal("TC")  # dealer 6 T = 16
    decision = h.deal("7S")  # dealer 23: bust
    assert h.types(decision)[-2:] == ["bets_settled", "round_settled"]
    results = h.events("bets_settled")[0]["results"]
    lines = {(r["bet_id"], r.get("part", "original")): r for r in results}
    assert {k: v["returned"] for k, v in lines.items()} == {
        ("b1", "original"): 2000,
        ("b1~double1", "double"): 2000,
        ("b1~split", "split"): 2000,
        ("b2", "original"): 2000,
    }
    assert h.current_round().phase == "settled" and not h.current_round().bets
    settle_input = settle_input_of(h.current_round())
    assert settle_input is not None
    assert settle_input["cards"] == [*cards, "2C", "9C", "TD", "TC", "7S"]
    again = find_game("blackjack").recompute(h.config.rules, settle_input)
    assert {ln.stake_id: ln.returned for ln in again.lines} == {
        r["bet_id"]: r["returned"] for r in results
    }
    assert h.replayed() == h.state


def test_timeouts_auto_play_and_release_the_seat_that_never_acted() -> None:
    h = seated(1, 2)
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p2", "main", 1000, 2)
    h.run(c.CloseBetting())
    h.deal("5S", "9H", "6D", "4C", "9D")  # seat 1: 5 4 = 9, seat 2: 9 9 = 18
    turn = h.turn()
    assert turn["actors"] == ["seat:1"] and turn["deadline"]
    with pytest.raises(WrongPhase):
        h.run(c.TurnTimeout(turn["clock"]))  # not yet
    h.tick(10)
    h.run(c.TurnTimeout(turn["clock"]))  # auto-play: 9 → hit
    assert h.events("action_taken")[-1]["auto"] == "timeout"
    assert h.summary()["round"]["next_position"] == "S1H1"
    h.deal("2H")  # 11: hit again
    h.deal("KH")  # 21: stands by itself
    h.act("seat:2", "stand", "p2")
    h.deal("TC", "5C")  # dealer 6 T 5 = 21
    released = h.events("seat_released")
    assert [(r["seat"], r["account"]) for r in released] == [(1, "p1")]
    assert 1 not in h.state.seats and 2 in h.state.seats


def test_disconnected_player_is_played_by_the_rules_at_once() -> None:
    h = seated(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("TS", "6D", "7C")  # 17
    h.run(c.PlayerDisconnected(1))
    assert h.events("action_taken")[-1]["action"] == "no_decision"
    assert h.summary()["round"]["next_position"] == "DEALER"  # 17: stands, never busts


def test_insurance_and_follow_offers_add_stakes_and_time_out_as_declined() -> None:
    h = seated(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p9", "behind", 500, 1)
    h.run(c.CloseBetting())
    h.deal("5S", "AD", "6C")  # dealer shows an Ace
    h.act("seat:1", "insurance", "p1")
    assert h.events("bets_placed")[-1]["bets"][0]["stake"] == 500  # half the main bet
    h.act("seat:1", "double", "p1")
    assert h.turn()["actors"] == ["behind:b2"]
    assert h.turn()["seconds"] == 5
    refusal = h.may_act("behind:b2", "accept", "p1")
    assert isinstance(refusal, policy.Refusal) and refusal.code == "wrong_player"
    assert h.may_act("behind:b2", "accept", "p9") == policy.ALLOWED
    h.tick(5)
    h.run(c.TurnTimeout(h.turn()["clock"]))
    assert h.events("action_taken")[-1]["action"] == "timeout"
    h.deal("9H")  # 20, doubled
    decision = h.deal("KD")  # dealer blackjack: insurance pays 2:1, original bet only
    assert "round_settled" in h.types(decision)
    lines = {r["bet_id"]: r["returned"] for r in h.events("bets_settled")[0]["results"]}
    assert lines == {"b1": 0, "b1~double1": 1000, "b1~insurance": 1500, "b2": 0}


def test_insufficient_funds_refuse_a_double_and_nothing_is_recorded() -> None:
    h = seated(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("5S", "6D", "5C")
    before = len(h.log)
    with pytest.raises(InsufficientFunds):
        h.run(c.Act("seat:1", "double", "p1", balances={"p1": 999}))
    assert len(h.log) == before


def test_void_refunds_every_stake_once_and_ends_the_shoe() -> None:
    h = seated(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p1", "pair", 100, 1)
    h.run(c.CloseBetting())
    h.deal("8S", "6D", "8C")
    h.act("seat:1", "split", "p1")
    h.run(c.RaiseIncident("misdeal", {"note": "card to the wrong seat"}), "supervisor:s1")
    refunds = [r for e in h.events("bets_refunded") for r in e["refunds"]]
    assert sorted((r["bet_id"], r["returned"]) for r in refunds) == [
        ("b1", 1000),
        ("b1~split", 1000),
        ("b2", 100),
    ]
    assert h.current_round().phase == "voided" and h.state.shoe is None


def test_a_seat_taken_during_a_round_plays_from_the_next() -> None:
    h = seated(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.run(c.TakeSeat(2, "p2"))
    assert h.state.seats[2].pending
    h.deal("TS", "6D", "9C")
    h.act("seat:1", "stand", "p1")
    h.deal("TD")  # dealer 16
    h.deal("5H")  # 21
    h.run(c.OpenBetting())
    assert not h.state.seats[2].pending
    assert h.seat_bet("p2", "main", 100, 2)["status"] == "placed"
