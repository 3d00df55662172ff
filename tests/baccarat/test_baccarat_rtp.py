"""The exact RTP analysis: against a card-by-card brute force, and against known values."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from fractions import Fraction

import pytest

from table_service.rules.baccarat import (
    BET_TYPES,
    default_paytable,
    next_position,
    outcome,
    settle_bet,
)
from table_service.rules.baccarat.rtp import RtpReport, analyse, outcome_classes
from table_service.rules.cards import Card, parse_card

PT = default_paytable()

# A tiny shoe in which every feature occurs: four identical 4S (Tiger Pair 100), perfect
# pairs 4S4S + 4H4H on both sides (only 20), 4S/4H pairs, perfect pairs of KS and 5C,
# K v T (equal value, different rank), naturals, most drawing branches.
SMALL_SHOE = Counter(
    {parse_card(c): n for c, n in {"4S": 4, "4H": 2, "KS": 2, "TD": 1, "5C": 2, "3D": 1}.items()}
)
# Naturals of 9, Player and Banker standing on 6/7, equal-rank queens of two suits.
OTHER_SHOE = Counter(
    {parse_card(c): n for c, n in {"9C": 2, "QS": 2, "QH": 1, "6D": 2, "7S": 2, "2H": 1}.items()}
)


def brute_force(composition: Counter[Card]) -> dict[str, dict[Fraction, Fraction]]:
    """Deal card by card, every physical card distinct: bet -> returns per unit -> probability."""
    total = sum(composition.values())
    stake = 20  # every pay of the default table is exact at this stake
    found: dict[str, Counter[Fraction]] = {bet: Counter() for bet in BET_TYPES}
    grand = math.perm(total, 6)

    def deal(cards: tuple[Card, ...], weight: int, left: Counter[Card]) -> None:
        if next_position(cards) is None:
            result = outcome(cards)
            weight *= math.perm(total - len(cards), 6 - len(cards))
            for bet in BET_TYPES:
                returned = settle_bet(bet, stake, result, PT).returned
                found[bet][Fraction(returned, stake)] += weight
            return
        for card, n in left.items():
            if n > 0:
                left[card] -= 1
                deal((*cards, card), weight * n, left)
                left[card] += 1

    deal((), 1, Counter(composition))
    return {
        bet: {factor: Fraction(w, grand) for factor, w in counts.items()}
        for bet, counts in found.items()
    }


def by_return(report: RtpReport, bet: str) -> dict[Fraction, Fraction]:
    merged: defaultdict[Fraction, Fraction] = defaultdict(Fraction)
    for line in report.bets[bet].outcomes:
        merged[line.returns] += line.probability
    return {factor: p for factor, p in merged.items() if p}


@pytest.mark.parametrize("shoe", [SMALL_SHOE, OTHER_SHOE], ids=["fours", "nines"])
def test_exact_analysis_equals_brute_force_on_small_shoes(shoe: Counter[Card]) -> None:
    expected = brute_force(shoe)
    report = analyse(PT, composition=shoe)
    for bet in BET_TYPES:
        assert by_return(report, bet) == expected[bet], bet
    # The features the shoes were built for really occur.
    assert any(o.case == "half_refund" for o in report.bets["dragon"].outcomes)
    assert any(o.case == "both" for o in report.bets["tiger_pair"].outcomes)
    if shoe is SMALL_SHOE:
        assert report.bets["tiger_pair"].outcomes[0].case == "identical"


@pytest.fixture(scope="module")
def eight_decks() -> RtpReport:
    return analyse(PT, decks=8)


@pytest.mark.parametrize(
    ("bet", "edge_percent"),
    [
        ("banker", 1.0579),  # the well-known 8-deck figures
        ("player", 1.2351),
        ("tie", 14.3596),
        ("player_pair", 10.3614),
        ("perfect_pair", 13.0294),
        ("banker_no_commission", 1.4581),
        ("panda8", 10.1876),
        ("dragon7", 7.6113),
    ],
)
def test_known_eight_deck_edges(eight_decks: RtpReport, bet: str, edge_percent: float) -> None:
    assert float(eight_decks.bets[bet].house_edge) * 100 == pytest.approx(edge_percent, abs=5e-5)


def test_every_bet_is_a_probability_distribution(eight_decks: RtpReport) -> None:
    assert set(eight_decks.bets) == set(BET_TYPES)
    for report in eight_decks.bets.values():
        assert sum(o.probability for o in report.outcomes) == 1
        assert report.rtp + report.house_edge == 1
        assert 0 < report.rtp < 1


def test_main_outcome_probabilities_are_the_classic_ones(eight_decks: RtpReport) -> None:
    player = {o.result: o.probability for o in eight_decks.bets["player"].outcomes}
    assert float(player["win"]) == pytest.approx(0.446247, abs=1e-6)
    assert float(player["lose"]) == pytest.approx(0.458597, abs=1e-6)
    assert float(player["push"]) == pytest.approx(0.095156, abs=1e-6)


def test_paytable_changes_move_the_rtp(eight_decks: RtpReport) -> None:
    from table_service.rules.baccarat import paytable_from_dict

    tie_9 = paytable_from_dict({"bets": {"tie": {"pays": {"win": 9}}}})
    report = analyse(tie_9, decks=8)
    assert list(report.bets) == ["tie"]
    p_tie = next(o.probability for o in eight_decks.bets["tie"].outcomes if o.result == "win")
    assert report.bets["tie"].rtp == 10 * p_tie


def test_classes_cover_every_round_once() -> None:
    classes, total = outcome_classes(SMALL_SHOE)
    assert sum(weight for weight, _ in classes) == total == math.perm(12, 6)
    with pytest.raises(ValueError, match="cannot deal"):
        outcome_classes(Counter({parse_card("AS"): 5}))
