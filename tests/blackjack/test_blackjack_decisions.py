"""Known values for the dealing order and every row of the player-decision table."""

from __future__ import annotations

import pytest

from table_service.rules.blackjack.config import BlackjackRules
from table_service.rules.blackjack.errors import (
    FollowOfferError,
    IllegalDecision,
    NotYourTurn,
    RoundSetupError,
    UnexpectedCard,
)
from table_service.rules.blackjack.hand import Total, hand_total
from table_service.rules.blackjack.round_state import (
    Answer,
    BehindBet,
    Deal,
    DealerTarget,
    Decision,
    FollowAnswer,
    Phase,
    RoundState,
    SeatBet,
    SeatTarget,
    SideBet,
    apply,
    legal_actions,
    new_round,
    next_card_target,
    removed_seats,
)
from table_service.rules.cards import parse_card, parse_cards
from tests.blackjack.conftest import Table


def open_decisions(state: RoundState) -> list[Decision]:
    """The moves open now, where a test expects no follow offer pending: decisions only."""
    actions = legal_actions(state)
    found = [a for a in actions if isinstance(a, Decision)]
    assert len(found) == len(actions), f"a follow offer is open: {actions}"
    return found


def moves(state: RoundState) -> set[str]:
    return {a.move.value for a in legal_actions(state) if isinstance(a, Decision)}


@pytest.mark.parametrize(
    ("codes", "points", "soft"),
    [
        ("AS 6H", 17, True),
        ("AS 6H TD", 17, False),
        ("AS AH", 12, True),
        ("AS AH 9C", 21, True),
        ("KS QH 2C", 22, False),
        ("AS KD", 21, True),
        ("5S 6H", 11, False),
        ("AS 5H 5C AC", 12, False),
    ],
)
def test_hand_totals(codes: str, points: int, soft: bool) -> None:
    assert hand_total(parse_cards(codes.split())) == Total(points, soft)


@pytest.mark.parametrize("n_seats", range(1, 8))
def test_dealing_order_one_to_seven_seats(table: Table, n_seats: int) -> None:
    seats = list(range(1, n_seats + 1))
    state = table.start(seats)
    targets = []
    for _ in range(2 * n_seats + 1):
        targets.append(next_card_target(state))
        state = apply(state, Deal(parse_card("5S")))
    expected = [SeatTarget(n, 1) for n in seats] + [DealerTarget()]
    expected += [SeatTarget(n, 1) for n in seats]
    assert targets == expected
    assert len(state.dealer) == 1  # European no hole card: one dealer card until the seats played
    assert state.phase is Phase.PLAY
    assert next_card_target(state) is None  # seat 1 must decide first


def test_dealing_order_skips_empty_seats(table: Table) -> None:
    state = table.start([5, 2])
    order = []
    for _ in range(5):
        order.append(next_card_target(state))
        state = apply(state, Deal(parse_card("9S")))
    assert order == [SeatTarget(2, 1), SeatTarget(5, 1), DealerTarget(), SeatTarget(2, 1),
                     SeatTarget(5, 1)]  # fmt: skip
    assert [a.seat for a in open_decisions(state)][:1] == [2]


def test_dealer_second_card_comes_after_all_seats(table: Table) -> None:
    state = table.deal(table.start([1, 2]), "9S 7H 6D TS 8C")
    state = table.do(state, 1, 1, "stand")
    assert next_card_target(state) is None and open_decisions(state)[0].seat == 2
    state = table.do(state, 2, 1, "stand")
    assert next_card_target(state) == DealerTarget()
    state = table.deal(state, "TD")  # 6 + T = 16: draws again
    assert next_card_target(state) == DealerTarget()
    state = table.deal(state, "AC")  # 17: stands
    assert state.phase is Phase.COMPLETE


def test_dealer_stands_on_soft_17(table: Table) -> None:
    state = table.deal(table.start(), "9S 6D TS")
    state = table.deal(table.do(state, 1, 1, "stand"), "AH")
    assert state.dealer_total == Total(17, True) and state.phase is Phase.COMPLETE


def test_table_that_hits_soft_17(make_table: type[Table]) -> None:
    t = make_table(BlackjackRules(dealer_hits_soft_17=True))
    state = t.deal(t.start(), "9S 6D TS")
    state = t.deal(t.do(state, 1, 1, "stand"), "AH")
    assert next_card_target(state) == DealerTarget()


def test_dealer_takes_only_second_card_when_no_hand_contends(table: Table) -> None:
    state = table.deal(table.start(), "TS 6D 5H")
    state = table.deal(table.do(state, 1, 1, "hit"), "KC")  # 25: bust
    assert next_card_target(state) == DealerTarget()
    state = table.deal(state, "TH")  # 16, but nobody left to beat
    assert state.phase is Phase.COMPLETE and len(state.dealer) == 2


def test_hit_repeats_at_will_and_stand_completes(table: Table) -> None:
    state = table.deal(table.start(), "2S 6D 3H")
    for code in ("2C", "2D", "3C"):
        state = table.deal(table.do(state, 1, 1, "hit"), code)
    assert [c.code for c in state.seats[0].hands[0].cards] == ["2S", "3H", "2C", "2D", "3C"]
    state = table.do(state, 1, 1, "stand")
    assert state.phase is Phase.DEALER


def test_twenty_one_completes_the_hand(table: Table) -> None:
    state = table.deal(table.start(), "TS 6D 5H")
    state = table.deal(table.do(state, 1, 1, "hit"), "6C")
    assert state.phase is Phase.DEALER


def test_blackjack_needs_no_decision(table: Table) -> None:
    state = table.deal(table.start([1, 2]), "AS 9D 6D KH 9C")
    assert open_decisions(state)[0].seat == 2


def test_double_on_two_cards_takes_exactly_one_card(table: Table) -> None:
    state = table.deal(table.start(), "5S 6D 6H")
    assert "double" in moves(state)
    state = table.do(state, 1, 1, "double")
    assert next_card_target(state) == SeatTarget(1, 1)
    state = table.deal(state, "2C")  # 13 after doubling: hand complete anyway
    assert state.seats[0].hands[0].doubled and state.phase is Phase.DEALER


def test_double_refused_after_a_hit_state_unchanged(table: Table) -> None:
    state = table.deal(table.start(), "2S 6D 3H")
    state = table.deal(table.do(state, 1, 1, "hit"), "4C")
    with pytest.raises(IllegalDecision, match="first two cards"):
        table.do(state, 1, 1, "double")
    assert moves(state) == {"hit", "stand", "no_decision"}


def test_double_after_split_allowed(make_table: type[Table]) -> None:
    t = make_table()
    state = t.deal(t.start(), "8S 6D 8H")
    state = t.deal(t.do(state, 1, 1, "split"), "3C")
    assert "double" in moves(state)
    no_das = make_table(BlackjackRules(double_after_split=False))
    state = no_das.deal(no_das.do(no_das.deal(no_das.start(), "8S 6D 8H"), 1, 1, "split"), "3C")
    with pytest.raises(IllegalDecision, match="after a split"):
        no_das.do(state, 1, 1, "double")


@pytest.mark.parametrize(("pair", "ok"), [("KS QH", True), ("TS JD", True), ("8S 8D", True),
                                          ("9S TD", False), ("AS KD", False)])  # fmt: skip
def test_split_on_equal_value(table: Table, pair: str, ok: bool) -> None:
    a, b = pair.split()
    state = table.deal(table.start(), f"{a} 6D {b}")
    if not ok:
        if pair == "AS KD":  # a blackjack: the hand is complete, the seat has no turn
            assert state.seats[0].hands[0].blackjack and state.phase is not Phase.PLAY
            with pytest.raises(NotYourTurn):
                table.do(state, 1, 1, "split")
            return
        assert state.phase is Phase.PLAY
        with pytest.raises(IllegalDecision, match="equal value"):
            table.do(state, 1, 1, "split")
        return
    state = table.do(state, 1, 1, "split")
    hands = state.seats[0].hands
    assert [h.cards for h in hands] == [(parse_card(a),), (parse_card(b),)]
    assert next_card_target(state) == SeatTarget(1, 1)


def test_split_rank_only_table_refuses_king_queen(make_table: type[Table]) -> None:
    t = make_table(BlackjackRules(split_ten_values=False))
    state = t.deal(t.start(), "KS 6D QH")
    with pytest.raises(IllegalDecision):
        t.do(state, 1, 1, "split")


def test_split_hands_played_in_order_and_only_once(table: Table) -> None:
    state = table.deal(table.do(table.deal(table.start(), "8S 6D 8H"), 1, 1, "split"), "8C")
    with pytest.raises(IllegalDecision, match="one split per seat"):
        table.do(state, 1, 1, "split")
    with pytest.raises(NotYourTurn):
        table.do(state, 1, 2, "stand")
    state = table.do(state, 1, 1, "stand")
    assert next_card_target(state) == SeatTarget(1, 2)
    state = table.deal(state, "TC")
    assert {a.hand for a in open_decisions(state)} == {2}


def test_split_aces_take_one_card_each(table: Table) -> None:
    state = table.do(table.deal(table.start([1, 2]), "AS 9D 6D AH 9C"), 1, 1, "split")
    state = table.deal(state, "KC")  # hand 1 complete: A + K = 21, not a blackjack
    assert next_card_target(state) == SeatTarget(1, 2)
    state = table.deal(state, "5C")  # hand 2 complete: soft 16, no more cards
    assert open_decisions(state)[0].seat == 2
    hand1 = state.seats[0].hands[0]
    assert hand1.total.points == 21 and not hand1.blackjack


def test_surrender_first_decision_against_two_to_nine_only(table: Table) -> None:
    for up in "23456789":
        state = table.deal(table.start(), f"TS {up}D 6H")
        assert "surrender" in moves(state)
    for up in "ATJQK":
        state = table.deal(table.start(), f"TS {up}D 6H")
        assert "surrender" not in moves(state)
        with pytest.raises(IllegalDecision, match="no surrender against"):
            table.do(state, 1, 1, "surrender")
    state = table.deal(table.do(table.deal(table.start(), "2S 9D 3H"), 1, 1, "hit"), "TC")
    with pytest.raises(IllegalDecision, match="first decision"):
        table.do(state, 1, 1, "surrender")
    state = table.do(table.deal(table.start(), "TS 9D 6H"), 1, 1, "surrender")
    assert state.seats[0].hands[0].surrendered and state.phase is Phase.DEALER


def test_insurance_only_against_an_ace_before_other_decisions(table: Table) -> None:
    state = table.deal(table.start(stake=1001), "TS AD 6H")
    assert "insurance" in moves(state)
    insured = table.do(state, 1, 1, "insurance")
    assert insured.seats[0].insured and insured.seats[0].insurance_stake == 500
    assert "insurance" not in moves(insured) and "hit" in moves(insured)
    after_hit = table.deal(table.do(state, 1, 1, "hit"), "2C")
    with pytest.raises(IllegalDecision, match="before the seat's other decisions"):
        table.do(after_hit, 1, 1, "insurance")
    not_ace = table.deal(table.start(), "TS 9D 6H")
    with pytest.raises(IllegalDecision, match="Ace"):
        table.do(not_ace, 1, 1, "insurance")


def test_no_decision_hits_to_twelve_or_more_then_stands(table: Table) -> None:
    state = table.do(table.deal(table.start(), "2S 9D 3H"), 1, 1, "no_decision")
    assert next_card_target(state) == SeatTarget(1, 1)
    state = table.deal(state, "4C")  # 9
    assert next_card_target(state) == SeatTarget(1, 1)
    state = table.deal(state, "2D")  # 11: still hits
    state = table.deal(state, "5D")  # 16: stands
    assert state.phase is Phase.DEALER


def test_no_decision_counts_ace_as_eleven_and_stands_on_twelve(table: Table) -> None:
    soft = table.do(table.deal(table.start(), "AS 9D 5H"), 1, 1, "no_decision")
    assert soft.phase is Phase.DEALER  # soft 16 is above 11: stand
    hard12 = table.do(table.deal(table.start(), "7S 9D 5H"), 1, 1, "no_decision")
    assert hard12.phase is Phase.DEALER
    small = table.do(table.deal(table.start(), "3S 9D 5H"), 1, 1, "no_decision")
    small = table.deal(small, "AC")  # 8 + A = soft 19: stand, never treated as 9
    assert small.phase is Phase.DEALER and small.seats[0].hands[0].total == Total(19, True)


def test_removed_only_after_a_round_with_no_action(table: Table) -> None:
    state = table.deal(table.start([1, 2, 3]), "2S TS AS 9D 9H 9C KD")
    state = table.do(state, 1, 1, "no_decision")
    state = table.deal(state, "TC")
    state = table.do(state, 2, 1, "stand")  # seat 3 has blackjack: no decision asked
    assert removed_seats(state) == (1,)
    acted = table.deal(table.do(table.deal(table.start(), "2S 9D 3H"), 1, 1, "hit"), "2C")
    acted = table.do(acted, 1, 1, "no_decision")
    assert removed_seats(acted) == ()


def _behind_round(table: Table) -> RoundState:
    bb = [BehindBet("b1", 1, 200), BehindBet("b2", 1, 300)]
    return table.deal(table.start(behind=bb), "8S 6D 8H")


def test_bet_behind_split_offer_accept_decline_timeout(table: Table) -> None:
    state = table.do(_behind_round(table), 1, 1, "split")
    assert next_card_target(state) is None  # the follow window holds the next card
    with pytest.raises(UnexpectedCard, match="follow offers"):
        apply(state, Deal(parse_card("2C")))
    with pytest.raises(FollowOfferError):
        table.do(state, 1, 1, "hit")
    state = apply(state, FollowAnswer("b1", Answer.ACCEPT))
    with pytest.raises(FollowOfferError, match="no open follow offer"):
        apply(state, FollowAnswer("b1", Answer.ACCEPT))
    state = apply(state, FollowAnswer("b2", Answer.TIMEOUT))
    assert {b.id: b.hands for b in state.behind} == {"b1": (0, 1), "b2": (0,)}
    state = table.do(table.deal(state, "3C"), 1, 1, "double")
    state = apply(state, FollowAnswer("b2", Answer.DECLINE))
    state = apply(state, FollowAnswer("b1", Answer.ACCEPT))
    assert {b.id: b.doubled for b in state.behind} == {"b1": (0,), "b2": ()}


def test_typed_errors_for_wrong_turn_and_unexpected_cards(table: Table) -> None:
    state = table.deal(table.start([1, 2]), "9S 7H 6D TS 8C")
    with pytest.raises(NotYourTurn):
        table.do(state, 2, 1, "stand")
    with pytest.raises(UnexpectedCard, match="decision is awaited"):
        apply(state, Deal(parse_card("2C")))
    with pytest.raises(NotYourTurn):
        state.seat(4)
    done = table.deal(table.do(table.do(state, 1, 1, "stand"), 2, 1, "stand"), "TD AC")
    with pytest.raises(UnexpectedCard, match="complete"):
        apply(done, Deal(parse_card("2C")))
    with pytest.raises(NotYourTurn):
        table.do(done, 1, 1, "hit")
    assert open_decisions(state)[0].seat == 1  # refusals left the state as it was


@pytest.mark.parametrize(
    ("seats", "pairs", "match"),
    [
        ([], [], "at least one seat"),
        ([SeatBet(1, "a", 10), SeatBet(1, "b", 10)], [], "only one main bet"),
        ([SeatBet(8, "a", 10)], [], "seat must be"),
        ([SeatBet(1, "a", 0)], [], "positive integer"),
        ([SeatBet(1, "a", 10)], [SideBet("a", 1, 5)], "duplicate"),
        ([SeatBet(1, "a", 10)], [SideBet("p", 2, 5)], "has no main bet"),
    ],
)
def test_round_setup_refusals(seats: list[SeatBet], pairs: list[SideBet], match: str) -> None:
    with pytest.raises(RoundSetupError, match=match):
        new_round(BlackjackRules(), seats, pairs)


def test_unknown_moves_and_answers_are_typed_refusals(table: Table) -> None:
    state = table.deal(table.start(behind=[BehindBet("b1", 1, 10)]), "8S 6D 8H")
    with pytest.raises(IllegalDecision, match="unknown decision"):
        apply(state, Decision(1, 1, "fold"))  # type: ignore[arg-type]  # no such move: the test
    state = table.do(state, 1, 1, "split")
    with pytest.raises(FollowOfferError, match="unknown follow answer"):
        apply(state, FollowAnswer("b1", "maybe"))  # type: ignore[arg-type]  # no such answer
