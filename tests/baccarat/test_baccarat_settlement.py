"""Every bet of rules/baccarat.md: known values, edge cases, cut-offs, refusals."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from table_service.rules.baccarat import (
    BET_TYPES,
    BetClosed,
    BetNotOffered,
    BetRefused,
    InvalidStake,
    NonPositiveStake,
    Outcome,
    UnknownBetType,
    load_paytable,
    outcome,
    paytable_from_dict,
    settle_bet,
    split_round,
    validate_bet,
)
from table_service.rules.cards import Card
from tests.baccarat.baccarat_helpers import deal, find_round

PT = load_paytable()


def returned(bet: str, stake: int, result: Outcome) -> int:
    return settle_bet(bet, stake, result, PT).returned


# --- main bets -------------------------------------------------------------------------

PLAYER_WINS = "4S 2S 3S AH TS"  # Player 7 v Banker 2+1 draws T -> 3
BANKER_WINS_ON_6 = "2S 3S 4S 3H"  # Player 6 v Banker 6, two cards each: a tie
BANKER_TWO_CARD_6 = "AS 3S 4S 3H TD"  # Player A+4=5 draws T -> 5; Banker 6 stands


def test_player_and_banker() -> None:
    win = deal(PLAYER_WINS)
    assert (win.player_total, win.banker_total, win.winner) == (7, 3, "player")
    assert returned("player", 1000, win) == 2000
    assert returned("banker", 1000, win) == 0
    banker = deal(BANKER_TWO_CARD_6)
    assert (banker.player_total, banker.banker_total, banker.winner) == (5, 6, "banker")
    assert returned("banker", 1000, banker) == 1950
    assert returned("banker", 15, banker) == 29  # 15 + floor(14.25)
    assert (settle_bet("banker", 1, banker, PT).result, returned("banker", 1, banker)) == ("win", 1)
    assert returned("player", 1000, banker) == 0


def test_ties_return_main_stakes_and_pay_tie() -> None:
    tie = deal(BANKER_WINS_ON_6)
    assert tie.winner == "tie"
    assert settle_bet("player", 700, tie, PT).result == "push"
    assert returned("player", 700, tie) == 700
    assert returned("banker", 700, tie) == 700
    assert returned("banker_no_commission", 700, tie) == 700
    assert returned("tie", 700, tie) == 700 * 9


def test_no_commission_banker_pays_half_on_6() -> None:
    assert returned("banker_no_commission", 1000, deal(BANKER_TWO_CARD_6)) == 1500
    assert returned("banker_no_commission", 3, deal(BANKER_TWO_CARD_6)) == 4  # 3 + floor(1.5)
    three_card_6 = find_round(
        lambda o: o.winner == "banker" and o.banker_total == 6 and len(o.banker_cards) == 3
    )
    assert returned("banker_no_commission", 1000, three_card_6) == 1500
    seven = find_round(lambda o: o.winner == "banker" and o.banker_total == 7)
    assert returned("banker_no_commission", 1000, seven) == 2000


# --- pairs -----------------------------------------------------------------------------


def test_pairs() -> None:
    player_pair = deal("5S 2H 5H 6D")  # Player 0 v Banker 8 natural
    assert player_pair.player_pair and not player_pair.banker_pair
    assert returned("player_pair", 100, player_pair) == 1200
    assert returned("banker_pair", 100, player_pair) == 0
    assert returned("any_pair", 100, player_pair) == 600
    assert returned("perfect_pair", 100, player_pair) == 0
    banker_pair = deal("2H 4S 7H 4S")  # Player 9 natural; Banker 4S 4S: perfect pair
    assert banker_pair.banker_perfect_pair
    assert returned("banker_pair", 100, banker_pair) == 1200
    assert returned("perfect_pair", 100, banker_pair) == 2600
    assert returned("any_pair", 100, banker_pair) == 600
    no_pair = deal("KS QS 9H 8D")
    assert no_pair.player_first_rank != no_pair.banker_first_rank
    for bet in ("player_pair", "banker_pair", "any_pair", "perfect_pair", "tiger_pair"):
        assert settle_bet(bet, 100, no_pair, PT).result == "lose"
    # Same rank, different ten-valued ranks are not a pair.
    assert not deal("TS 2H KS 6D").player_pair


@pytest.mark.parametrize(
    ("codes", "case", "factor"),
    [
        ("5S 5S 5S 5S TS TH", "identical", 101),  # all four first cards the same card
        ("5S 5H 5S 5H TS TH", "both", 21),  # both perfect pairs, different cards
        ("5S 5D 5H 5C TS TH", "both", 21),
        ("5S 3D 5H 5C", "one", 5),  # Player pair 0 v Banker natural 8: one side pairs
        ("3S 4D 2H 4C", "one", 5),  # Banker pair only
        ("3S 4D 2H 5C", "lose", 0),
    ],
)
def test_tiger_pair_100_20_4(codes: str, case: str, factor: int) -> None:
    result = settle_bet("tiger_pair", 10, deal(codes), PT)
    assert (result.case, result.returned) == (case, 10 * factor)


# --- Big / Small, naturals -------------------------------------------------------------


def test_big_and_small() -> None:
    four = deal("KS QS 9H 8D")
    five = deal(PLAYER_WINS)
    six = deal("5S 5S 5S 5S TS TH")
    assert returned("small", 3, four) == 7  # 3 + floor(4.5)
    assert returned("big", 3, four) == 0
    assert returned("big", 3, five) == 4  # 3 + floor(1.5)
    assert returned("big", 10, six) == 15
    assert returned("small", 10, five) == 0


def test_naturals() -> None:
    banker_9 = deal("AS 4S 5H 5D")  # Player 6 v Banker 9 natural
    assert returned("banker_natural", 10, banker_9) == 50
    assert returned("player_natural", 10, banker_9) == 0
    assert returned("either_natural", 7, banker_9) == 18  # 7 + floor(11.2)
    player_8 = deal("4S KS 4H 7D")  # Player 8 natural v Banker 7
    assert returned("player_natural", 10, player_8) == 50
    assert returned("either_natural", 10, player_8) == 26
    natural_tie = deal("4S 3S 4H 5D")
    assert natural_tie.winner == "tie" and natural_tie.natural
    for bet in ("banker_natural", "player_natural", "either_natural"):
        assert returned(bet, 10, natural_tie) == 0
    # A three-card 8 is not a natural.
    three_card = find_round(
        lambda o: o.winner == "banker" and o.banker_total >= 8 and not o.natural
    )
    assert returned("banker_natural", 10, three_card) == 0


# --- Dragon Bonus ------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["player", "banker"])
def test_dragon_bonus_natural_tie_pushes_other_ties_lose(side: str) -> None:
    bet = f"{side}_dragon_bonus"
    assert settle_bet(bet, 100, deal("4S 3S 4H 5D"), PT).result == "push"  # 8-8 naturals
    assert settle_bet(bet, 100, deal("3S 2S 4H 5D"), PT).result == "lose"  # 7-7


@pytest.mark.parametrize(
    ("codes", "case", "factor"),
    [
        ("4S 2S 3S AH TS", "margin_4", 2),  # Player 7 v 3, no natural
        ("4S 2S 3S 2H TS", "margin_3", 0),  # Player 7 v 4: margin 3 loses
        ("2S TS 2H KS 5S QS", "margin_9", 31),  # Player three-card 9 v 0
        ("4S 3S 5H 4D", "natural", 2),  # natural 9 v 7: margin 2 but natural pays 1
        ("4S TS 5H KD", "natural", 2),  # natural 9 v 0 still pays 1
    ],
)
def test_player_dragon_bonus_margins(codes: str, case: str, factor: int) -> None:
    result = settle_bet("player_dragon_bonus", 100, deal(codes), PT)
    assert (result.case, result.returned) == (case, 100 * factor)
    assert settle_bet("banker_dragon_bonus", 100, deal(codes), PT).returned == 0


@pytest.mark.parametrize(("margin", "factor"), [(4, 2), (5, 3), (6, 4), (7, 6), (8, 11), (9, 31)])
def test_banker_dragon_bonus_margins(margin: int, factor: int) -> None:
    win = find_round(lambda o: o.winner == "banker" and o.margin == margin and not o.natural)
    assert returned("banker_dragon_bonus", 100, win) == 100 * factor


# --- tiger / panda / dragon 7 / lucky 6 / super tie ----------------------------------------


def test_lucky6_and_tigers() -> None:
    two = deal(BANKER_TWO_CARD_6)
    three = find_round(
        lambda o: o.winner == "banker" and o.banker_total == 6 and len(o.banker_cards) == 3
    )
    assert returned("lucky6", 10, two) == 130
    assert returned("lucky6", 10, three) == 210
    assert returned("small_tiger", 10, two) == 230
    assert returned("big_tiger", 10, two) == 0
    assert returned("big_tiger", 10, three) == 510
    assert returned("small_tiger", 10, three) == 0
    tie6 = deal(BANKER_WINS_ON_6)
    assert returned("lucky6", 10, tie6) == 0
    assert returned("tiger_tie", 10, tie6) == 410
    assert returned("small_tiger", 10, tie6) == 0


def test_panda8_and_dragon7() -> None:
    panda = find_round(
        lambda o: o.winner == "player" and o.player_total == 8 and len(o.player_cards) == 3
    )
    assert returned("panda8", 10, panda) == 260
    assert returned("panda8", 10, deal("4S KS 4H 7D")) == 0  # two-card 8
    dragon = find_round(
        lambda o: o.winner == "banker" and o.banker_total == 7 and len(o.banker_cards) == 3
    )
    assert returned("dragon7", 10, dragon) == 410
    two_card_7 = find_round(
        lambda o: o.winner == "banker" and o.banker_total == 7 and len(o.banker_cards) == 2
    )
    assert returned("dragon7", 10, two_card_7) == 0


SUPER_TIE_PAYS = {0: 125, 1: 180, 2: 190, 3: 170, 4: 100, 5: 90, 6: 40, 7: 40, 8: 70, 9: 70}


@pytest.mark.parametrize("total", range(10))
def test_super_tie_per_total(total: int) -> None:
    tie = find_round(lambda o: o.winner == "tie" and o.player_total == total)
    for n in range(10):
        expected = 10 * (SUPER_TIE_PAYS[n] + 1) if n == total else 0
        assert returned(f"super_tie_{n}", 10, tie) == expected
    lost = find_round(lambda o: o.winner != "tie" and o.player_total == total)
    assert returned(f"super_tie_{total}", 10, lost) == 0


# --- Dragon / Tiger ----------------------------------------------------------------------


def test_dragon_tiger_by_rank_not_value() -> None:
    king_over_queen = deal("QS KS 9H 8D")  # Banker's first card K outranks Q
    assert returned("dragon", 100, king_over_queen) == 200
    assert returned("tiger", 100, king_over_queen) == 0
    assert returned("dragon_tiger_tie", 100, king_over_queen) == 0
    ace_under_ten = deal("TS AS 9H 8D")
    assert returned("tiger", 100, ace_under_ten) == 200


def test_dragon_tiger_equal_ranks_half_refund() -> None:
    equal = deal("KS KH 9H 8D")
    for bet in ("dragon", "tiger"):
        result = settle_bet(bet, 101, equal, PT)
        assert (result.result, result.returned) == ("half_refund", 50)  # rounded down
    assert returned("dragon_tiger_tie", 101, equal) == 909


# --- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bet", "last_game"),
    [("big", 20), ("small", 20), ("perfect_pair", 30), ("tiger_tie", 30), ("super_tie_0", 30)],
)
def test_cut_offs(bet: str, last_game: int) -> None:
    validate_bet(bet, 100, 1, PT)
    validate_bet(bet, 100, last_game, PT)
    with pytest.raises(BetClosed) as refused:
        validate_bet(bet, 100, last_game + 1, PT)
    assert refused.value.code == "bet_closed"
    assert bet in refused.value.reason and str(last_game + 1) in refused.value.reason


def test_cut_offs_of_the_rules_document() -> None:
    # Tiger Pair (Hổ đôi) is not among them: seed 004 gives it no cut-off
    twenty = {"big", "small"}
    thirty = {
        "perfect_pair", "tiger_tie", "big_tiger", "small_tiger", "panda8",
        "dragon7", "either_natural", *(f"super_tie_{n}" for n in range(10)),
    }  # fmt: skip
    for bet in BET_TYPES:
        expected = 20 if bet in twenty else 30 if bet in thirty else None
        assert PT.closes_after(bet) == expected, bet
    validate_bet("player", 100, 10_000, PT)


@pytest.mark.parametrize(
    ("bet", "stake", "error", "code"),
    [
        ("martingale", 100, UnknownBetType, "unknown_bet_type"),
        ("player", 0, NonPositiveStake, "non_positive_stake"),
        ("player", -5, NonPositiveStake, "non_positive_stake"),
        ("player", 1.5, InvalidStake, "invalid_stake"),
        ("player", True, InvalidStake, "invalid_stake"),
    ],
)
def test_refusals_are_typed(bet: str, stake: int, error: type[BetRefused], code: str) -> None:
    with pytest.raises(error) as refused:
        validate_bet(bet, stake, 1, PT)
    assert refused.value.code == code and refused.value.reason
    with pytest.raises(error):
        settle_bet(bet, stake, deal("KS QS 9H 8D"), PT)


def test_bet_not_offered_at_this_table() -> None:
    small_table = paytable_from_dict({"bets": {"player": {"pays": {"win": 1}}}})
    with pytest.raises(BetNotOffered) as refused:
        validate_bet("tie", 100, 1, small_table)
    assert isinstance(refused.value, UnknownBetType)
    validate_bet("player", 100, 1, small_table)


# --- properties ----------------------------------------------------------------------------

cards_st = st.builds(Card, st.integers(1, 13), st.sampled_from("SHDC"))
# Small decks make pairs, identical cards and ties common enough to be exercised.
dense_cards_st = st.builds(Card, st.sampled_from([1, 5, 10, 13]), st.sampled_from("SH"))


def _factor(result_case: str, pays: Fraction | None) -> Fraction:
    if pays is not None:
        return 1 + pays
    return {"push": Fraction(1), "half_refund": Fraction(1, 2)}.get(result_case, Fraction(0))


@given(
    st.lists(st.one_of(cards_st, dense_cards_st), min_size=6, max_size=6),
    st.sampled_from(BET_TYPES),
    st.integers(1, 10**9),
)
def test_returned_is_stake_times_factor(cards: list[Card], bet: str, stake: int) -> None:
    result_of_round = outcome(split_round(cards)[0])
    result = settle_bet(bet, stake, result_of_round, PT)
    # The factor of the outcome, measured with a stake that makes every pay exact (the
    # paytable's denominators all divide 20) ...
    factor = Fraction(settle_bet(bet, 20, result_of_round, PT).returned, 20)
    assert factor == _factor(result.case, result.pays)
    # ... scales every stake, rounded down to the unit.
    assert result.returned == (stake * factor.numerator) // factor.denominator
    assert result.returned >= 0
    if result.result == "lose":
        assert result.returned == 0
    if result.result == "win":
        assert result.returned >= stake  # 1 unit on banker wins 0.95 -> rounded down to 0
    if result.result == "push":
        assert result.returned == stake
