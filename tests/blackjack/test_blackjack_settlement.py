"""Known values for every row of the settlement table, through the live round code."""

from __future__ import annotations

from fractions import Fraction

import pytest

from table_service.rules.blackjack.config import BlackjackRules
from table_service.rules.blackjack.errors import RoundNotComplete
from table_service.rules.blackjack.round_state import (
    Answer,
    BehindBet,
    FollowAnswer,
    RoundState,
    SideBet,
    apply,
)
from table_service.rules.blackjack.settlement import (
    DealerFacts,
    HandFacts,
    Result,
    hand_outcomes,
    settle,
    void_refunds,
)
from tests.blackjack.conftest import Table

RULES = BlackjackRules()


def lines(state: RoundState) -> list[tuple[str, str, int | None, str, int, str, int]]:
    return [
        (b.bet_id, b.type, b.hand, b.part, b.stake, b.result.value, b.returned)
        for b in settle(state).bets
    ]


def test_blackjack_pays_three_to_two_rounded_down(table: Table) -> None:
    state = table.deal(table.start([1, 2], stake=15), "AS 9D 6D KH TC")
    state = table.do(state, 2, 1, "stand")
    # seat 1 blackjack: 15 + floor(22.5) = 37; seat 2 stands on 19
    state = table.deal(state, "TS 5C")  # dealer 6 T 5 = 21
    assert lines(state)[0] == ("m1", "main", 1, "original", 15, "win", 37)
    assert lines(state)[1] == ("m2", "main", 1, "original", 15, "lose", 0)


def test_blackjack_against_dealer_blackjack_is_a_push(table: Table) -> None:
    state = table.deal(table.start(), "AS TD KH AC")
    assert lines(state) == [("m1", "main", 1, "original", 1000, "push", 1000)]


def test_three_card_21_loses_only_original_against_dealer_blackjack(table: Table) -> None:
    state = table.deal(table.start(), "5S AD 6H")
    state = table.deal(table.do(state, 1, 1, "double"), "TC")  # doubled 21
    state = table.deal(state, "KD")  # dealer A K: blackjack
    assert lines(state) == [
        ("m1", "main", 1, "original", 1000, "lose", 0),
        ("m1", "main", 1, "double", 1000, "push", 1000),
    ]


def test_split_and_double_stakes_refunded_on_dealer_blackjack(table: Table) -> None:
    state = table.deal(table.do(table.deal(table.start(), "8S TD 8H"), 1, 1, "split"), "3C")
    state = table.deal(table.do(state, 1, 1, "double"), "TC")  # hand 1: 21, doubled
    state = table.deal(state, "KC")
    state = table.do(state, 1, 2, "stand")
    state = table.deal(state, "AD")  # dealer T A: blackjack
    assert lines(state) == [
        ("m1", "main", 1, "original", 1000, "lose", 0),
        ("m1", "main", 1, "double", 1000, "push", 1000),
        ("m1", "main", 2, "split", 1000, "push", 1000),
    ]


def test_without_original_bets_only_every_stake_is_lost(make_table: type[Table]) -> None:
    t = make_table(BlackjackRules(original_bets_only=False))
    state = t.deal(t.start(), "5S AD 6H")
    state = t.deal(t.deal(t.do(state, 1, 1, "double"), "TC"), "KD")
    assert [r[5] for r in lines(state)] == ["lose", "lose"]


@pytest.mark.parametrize(
    ("cards", "decisions", "expected"),
    [
        ("TS 6D 9H TC 5C", ["stand"], ("lose", 0)),  # 19 v 21
        ("TS 6D 9H TC TD", ["stand"], ("win", 2000)),  # dealer busts
        ("TS 7D 9H 2D TC", ["stand"], ("push", 1000)),  # 19 v 7 2 T = 19
        ("TS 9D 8H TC", ["stand"], ("lose", 0)),  # 18 v 19
        ("TS 7D 9H AC", ["stand"], ("win", 2000)),  # 19 v soft 18
    ],
)
def test_totals_against_dealer(
    table: Table, cards: str, decisions: list[str], expected: tuple[str, int]
) -> None:
    state = table.deal(table.start(), " ".join(cards.split()[:3]))
    for move in decisions:
        state = table.do(state, 1, 1, move)
    state = table.deal(state, " ".join(cards.split()[3:]))
    assert lines(state)[0][5:] == expected


def test_player_bust_loses_even_if_dealer_busts(table: Table) -> None:
    state = table.deal(table.start([1, 2]), "TS 9S 6D 6H 8S")
    state = table.deal(table.do(state, 1, 1, "hit"), "KC")  # seat 1 busts
    state = table.do(state, 2, 1, "stand")
    state = table.deal(state, "TD TH")  # dealer 6 T T = 26
    assert [r[5:] for r in lines(state)] == [("lose", 0), ("win", 2000)]


def test_doubled_win_pays_both_stakes(table: Table) -> None:
    state = table.deal(table.do(table.deal(table.start(), "5S 6D 6H"), 1, 1, "double"), "TC")
    state = table.deal(state, "TD TH")
    assert [r[3:] for r in lines(state)] == [
        ("original", 1000, "win", 2000),
        ("double", 1000, "win", 2000),
    ]


def test_surrender_returns_half_rounded_down(table: Table) -> None:
    state = table.do(table.deal(table.start(stake=15), "TS 9D 6H"), 1, 1, "surrender")
    state = table.deal(state, "TD")
    assert lines(state) == [("m1", "main", 1, "original", 15, "half_refund", 7)]


def test_twenty_one_after_split_is_not_blackjack(table: Table) -> None:
    state = table.deal(table.do(table.deal(table.start(), "AS 9D AH"), 1, 1, "split"), "KC 9C")
    state = table.deal(state, "TD")  # dealer 19: hand 1 (21) wins 1:1, hand 2 (20) wins 1:1
    assert [r[5:] for r in lines(state)] == [("win", 2000), ("win", 2000)]


def test_insurance_pays_two_to_one(table: Table) -> None:
    state = table.do(table.deal(table.start(stake=1001), "TS AD 9H"), 1, 1, "insurance")
    won = table.deal(table.do(state, 1, 1, "stand"), "KD")
    assert ("m1", "insurance", None, "insurance", 500, "win", 1500) in lines(won)
    lost = table.deal(table.do(state, 1, 1, "stand"), "8D")
    assert ("m1", "insurance", None, "insurance", 500, "lose", 0) in lines(lost)


@pytest.mark.parametrize(("cards", "result"), [("KS 9D KH", "win"), ("KS 9D QH", "lose"),
                                               ("8S 9D 8H", "win")])  # fmt: skip
def test_pair_bet_pays_eleven_to_one_on_same_rank(table: Table, cards: str, result: str) -> None:
    state = table.deal(table.start(pairs=[SideBet("p1", 1, 100)]), cards)
    if cards.startswith("8S"):  # a split keeps the pair bet on the two dealt cards
        state = table.deal(table.do(state, 1, 1, "split"), "TC")
        state = table.do(state, 1, 1, "stand")
        state = table.do(table.deal(state, "TD"), 1, 2, "stand")
    else:
        state = table.do(state, 1, 1, "stand")
    state = table.deal(state, "TD" if not cards.startswith("8S") else "TH")
    pair = next(b for b in settle(state).bets if b.type == "pair")
    assert (pair.result.value, pair.returned) == (result, 1200 if result == "win" else 0)


def test_bet_behind_settles_like_the_hand_it_follows(table: Table) -> None:
    behind = [BehindBet("b1", 1, 200), BehindBet("b2", 1, 300)]
    bj = table.deal(table.start(behind=behind), "AS 9D KH TC")
    assert [r for r in lines(bj) if r[1] == "behind"] == [
        ("b1", "behind", 1, "original", 200, "win", 500),
        ("b2", "behind", 1, "original", 300, "win", 750),
    ]
    state = table.do(table.deal(table.start(behind=behind), "8S 9D 8H"), 1, 1, "split")
    state = apply(apply(state, FollowAnswer("b1", Answer.ACCEPT)),
                  FollowAnswer("b2", Answer.TIMEOUT))  # fmt: skip
    state = table.do(table.deal(state, "3C"), 1, 1, "double")
    state = apply(apply(state, FollowAnswer("b1", Answer.DECLINE)),
                  FollowAnswer("b2", Answer.ACCEPT))  # fmt: skip
    state = table.deal(state, "TC TC")  # hand 1: 8 3 T = 21 doubled; hand 2: 8 T
    state = table.do(state, 1, 2, "stand")  # hand 2: 18
    state = table.deal(state, "TD")  # dealer 19
    assert [r for r in lines(state) if r[1] == "behind"] == [
        ("b1", "behind", 1, "original", 200, "win", 400),
        ("b1", "behind", 2, "split", 200, "lose", 0),
        ("b2", "behind", 1, "original", 300, "win", 600),
        ("b2", "behind", 1, "double", 300, "win", 600),
    ]


def test_settle_refuses_an_unfinished_round(table: Table) -> None:
    with pytest.raises(RoundNotComplete):
        settle(table.deal(table.start(), "TS 9D"))


@pytest.mark.parametrize(
    ("hand", "dealer", "expected"),
    [
        (HandFacts(21, blackjack=True), DealerFacts(20), [(Result.WIN, Fraction(5, 2))]),
        (HandFacts(21, blackjack=True), DealerFacts(21, True), [(Result.PUSH, 1)]),
        (HandFacts(21), DealerFacts(21, True), [(Result.LOSE, 0)]),
        (HandFacts(20, second_of_split=True), DealerFacts(21, True), [(Result.PUSH, 1)]),
        (HandFacts(20), DealerFacts(19), [(Result.WIN, 2)]),
        (HandFacts(12), DealerFacts(22), [(Result.WIN, 2)]),
        (HandFacts(19), DealerFacts(19), [(Result.PUSH, 1)]),
        (HandFacts(18), DealerFacts(19), [(Result.LOSE, 0)]),
        (HandFacts(23), DealerFacts(22), [(Result.LOSE, 0)]),
        (HandFacts(23, doubled=True), DealerFacts(21, True), [(Result.LOSE, 0), (Result.PUSH, 1)]),
        (HandFacts(16, surrendered=True), DealerFacts(20), [(Result.HALF_REFUND, Fraction(1, 2))]),
    ],
)
def test_settlement_table_rows(
    hand: HandFacts, dealer: DealerFacts, expected: list[tuple[Result, Fraction | int]]
) -> None:
    got = [(o.result, o.factor) for o in hand_outcomes(hand, dealer, RULES)]
    assert got == expected


def test_void_mid_round_refunds_stakes_placed_so_far(table: Table) -> None:
    state = table.deal(table.start(pairs=[SideBet("p1", 1, 100)]), "8S 9D 8H")
    state = table.deal(table.do(state, 1, 1, "split"), "3C")
    state = table.do(state, 1, 1, "double")  # server fails before the double card
    assert [(b.bet_id, b.hand, b.part, b.returned) for b in void_refunds(state).bets] == [
        ("m1", 1, "original", 1000),
        ("m1", 1, "double", 1000),
        ("m1", 2, "split", 1000),
        ("p1", None, "pair", 100),
    ]
