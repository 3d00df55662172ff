"""Dealing order and the third-card rules, row by row from rules/baccarat.md."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from table_service.rules.baccarat import (
    IncompleteRound,
    Position,
    baccarat_value,
    banker_draws,
    hand_total,
    next_position,
    outcome,
    player_draws,
    positions,
    round_length,
    split_round,
)
from table_service.rules.cards import Card, parse_card, parse_cards
from tests.baccarat.baccarat_helpers import value_card

# The drawing table of rules/baccarat.md, written out independently of the code.
BANKER_DRAWS_WHEN_PLAYER_THIRD_IS = {
    0: set(range(10)),
    1: set(range(10)),
    2: set(range(10)),
    3: {0, 1, 2, 3, 4, 5, 6, 7, 9},
    4: {2, 3, 4, 5, 6, 7},
    5: {4, 5, 6, 7},
    6: {6, 7},
    7: set(),
}

cards_st = st.builds(Card, st.integers(1, 13), st.sampled_from("SHDC"))


@pytest.mark.parametrize(
    ("code", "value"),
    [("AS", 1), ("2H", 2), ("5D", 5), ("9C", 9), ("TS", 0), ("JH", 0), ("QD", 0), ("KC", 0)],
)
def test_point_values(code: str, value: int) -> None:
    assert baccarat_value(parse_card(code)) == value


def test_hand_total_keeps_last_digit() -> None:
    assert hand_total(parse_cards(["9S", "8H"])) == 7
    assert hand_total(parse_cards(["KS", "QH", "JD"])) == 0
    assert hand_total(parse_cards(["5S", "5H", "AD"])) == 1


def test_initial_positions_in_shoe_order() -> None:
    cards = parse_cards(["2S", "3S", "4S", "5S"])
    assert [next_position(cards[:n]) for n in range(4)] == [
        Position.P1,
        Position.B1,
        Position.P2,
        Position.B2,
    ]


@pytest.mark.parametrize("player_total", range(10))
def test_player_rule(player_total: int) -> None:
    assert player_draws(player_total) == (player_total <= 5)


@pytest.mark.parametrize("banker_total", range(8))
@pytest.mark.parametrize("third", range(10))
def test_every_row_of_the_banker_table(banker_total: int, third: int) -> None:
    expected = third in BANKER_DRAWS_WHEN_PLAYER_THIRD_IS[banker_total]
    assert banker_draws(banker_total, third) == expected
    # Through the dealing-order function: Player A+2 = 3 draws, then the third card.
    banker = (value_card(banker_total, 1), value_card(0, 2))
    cards = (value_card(1), banker[0], value_card(2, 3), banker[1], value_card(third, 1))
    assert next_position(cards[:4]) is Position.P3
    assert next_position(cards) is (Position.B3 if expected else None)
    assert round_length((*cards, value_card(5))) == (6 if expected else 5)


@pytest.mark.parametrize("player_total", [6, 7])
@pytest.mark.parametrize("banker_total", range(8))
def test_banker_when_player_stood(player_total: int, banker_total: int) -> None:
    cards = (value_card(player_total), value_card(banker_total, 1), value_card(0), value_card(0, 3))
    assert next_position(cards) is (Position.B3 if banker_total <= 5 else None)
    assert banker_draws(banker_total, None) == (banker_total <= 5)


@pytest.mark.parametrize(("player_total", "banker_total"), [(8, 0), (9, 5), (0, 8), (3, 9), (8, 9)])
def test_naturals_stop_the_round(player_total: int, banker_total: int) -> None:
    cards = (value_card(player_total), value_card(banker_total, 1), value_card(0), value_card(0, 3))
    assert next_position(cards) is None
    assert round_length(cards) == 4


def test_extra_card_is_set_aside() -> None:
    cards = parse_cards(["9S", "2H", "KD", "5C", "3S", "4H"])
    used, unused = split_round(cards)
    assert used == cards[:4] and unused == cards[4:]
    with pytest.raises(ValueError, match="split_round"):
        outcome(cards)


def test_too_few_cards() -> None:
    with pytest.raises(IncompleteRound):
        split_round(parse_cards(["2S", "3H", "4D"]))
    with pytest.raises(IncompleteRound):
        outcome(parse_cards(["2S", "3H", "4D", "KC"]))  # Player 6 stands, Banker 3 draws


@given(st.lists(cards_st, min_size=6, max_size=8))
def test_every_round_takes_four_to_six_cards(cards: list[Card]) -> None:
    used, unused = split_round(cards)
    assert 4 <= len(used) <= 6
    assert (*used, *unused) == tuple(cards)


@given(st.lists(cards_st, min_size=6, max_size=6))
def test_dealing_order_and_outcome_agree(cards: list[Card]) -> None:
    used, _ = split_round(cards)
    result = outcome(used)
    assert all(next_position(used[:n]) is not None for n in range(len(used)))
    assert next_position(used) is None
    sides = positions(used)
    assert tuple(c for c, p in zip(used, sides, strict=True) if p.side == "player") == (
        result.player_cards
    )
    assert tuple(c for c, p in zip(used, sides, strict=True) if p.side == "banker") == (
        result.banker_cards
    )
    assert result.cards == used
    # The drawing rules, checked independently on the finished hands.
    p2 = hand_total(result.player_cards[:2])
    b2 = hand_total(result.banker_cards[:2])
    natural = p2 >= 8 or b2 >= 8
    assert (len(result.player_cards) == 3) == (not natural and p2 <= 5)
    if natural:
        assert len(result.banker_cards) == 2
    elif len(result.player_cards) == 2:
        assert (len(result.banker_cards) == 3) == (b2 <= 5)
    else:
        third = baccarat_value(result.player_cards[2])
        drawn = third in BANKER_DRAWS_WHEN_PLAYER_THIRD_IS.get(b2, set())
        assert (len(result.banker_cards) == 3) == drawn
