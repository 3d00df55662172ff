"""The exact house edge against a full game-tree walk of the live engine, and known values."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from table_service.rules.cards import Card
from table_service.rules.xidach.actions import Deal, NoDecision
from table_service.rules.xidach.engine import apply, awaiting, new_round, next_card_target
from table_service.rules.xidach.exact import ExactEdge, exact_edge
from table_service.rules.xidach.profile import (
    PROFILE_NAMES,
    Profile,
    load_profile,
    profile_from_dict,
)
from table_service.rules.xidach.settlement import settle
from table_service.rules.xidach.simulate import house_edge
from table_service.rules.xidach.state import Phase, RoundState, SeatBet
from tests.xidach.conftest import profile_data

STAKE = 2000  # every payout and 5 % commission of these profiles is a whole number of units
SUITS = "SHDC"
# the concrete cards of each value, in the order the walk uses them
CONCRETE = [[Card(v, s) for s in SUITS] for v in range(1, 10)] + [
    [Card(r, s) for r in (10, 11, 12, 13) for s in SUITS]
]
# Small decks (cards per value, Ace first, ten-values last): naturals, Xì Bàng, Ngũ Linh,
# busts and every Ace value all occur, and the full tree stays small enough to walk.
SMALL_DECKS = [
    (2, 2, 0, 0, 1, 1, 0, 0, 1, 4),
    (3, 0, 2, 0, 0, 0, 2, 1, 0, 3),
]


def walk(state: RoundState, left: list[int], used: list[int], p: float) -> float:
    """The punter's expected net per unit: every card order, through apply and settle."""
    if state.phase is Phase.SETTLED:
        result = settle(state)
        return p * (result.total_returned - result.total_staked) / STAKE
    if next_card_target(state) is None:
        actor = awaiting(state)
        assert actor is not None
        return walk(apply(state, NoDecision(actor)), left, used, p)
    total, value = sum(left), 0.0
    for i, count in enumerate(left):
        if count:
            card = CONCRETE[i][used[i]]
            left[i] -= 1
            used[i] += 1
            value += walk(apply(state, Deal(card)), left, used, p * count / total)
            left[i] += 1
            used[i] -= 1
    return value


def engine_expectation(profile: Profile, deck: tuple[int, ...]) -> float:
    start = new_round(profile, [SeatBet(1, STAKE)])
    return walk(start, list(deck), [0] * 10, 1.0)


def _variant(name: str, **changes: dict[str, Any]) -> Profile:
    data = profile_data(name)
    for section, values in changes.items():
        data[section].update(values)
    return profile_from_dict(data)


_FULL: dict[str, ExactEdge] = {}


def full(name: str) -> ExactEdge:
    """The full-deck result of a shipped profile, computed once per test run."""
    if name not in _FULL:
        _FULL[name] = exact_edge(load_profile(name))
    return _FULL[name]


VARIANTS = [load_profile(n) for n in PROFILE_NAMES] + [
    _variant("forced-draw", house_policy={"check_before_draw": "beaten"}),
    _variant("classic", payouts={"commission": [1, 20]}),
    _variant("room", payouts={"commission": [1, 20]}, house_policy={"draw_below": 17}),
]


CASES = [(p, d) for p in VARIANTS[:3] for d in SMALL_DECKS] + [
    (p, SMALL_DECKS[1]) for p in VARIANTS[3:]
]


@pytest.mark.parametrize(("profile", "deck"), CASES, ids=[f"{p.name}-{d}" for p, d in CASES])
def test_exact_equals_the_live_engine_on_every_card_order(
    profile: Profile, deck: tuple[int, ...]
) -> None:
    exact = exact_edge(profile, deck)
    assert exact.expectation == pytest.approx(engine_expectation(profile, deck), abs=1e-12)
    assert sum(exact.outcomes.values()) == pytest.approx(1, abs=1e-12)


def test_the_beaten_check_policy_changes_the_figure() -> None:
    """A check before drawing is a real decision: the walk above would catch a no-op."""
    deck = SMALL_DECKS[1]
    plain = exact_edge(load_profile("forced-draw"), deck)
    beaten = exact_edge(VARIANTS[3], deck)
    assert beaten.house_edge > plain.house_edge


# Known values (one 52-card deck), computed by this module and confirmed by the walk
# above on small decks and by the Monte-Carlo run below on the full deck.
EDGES = {"room": -0.02544772, "classic": 0.05075037, "forced-draw": -0.02341573}


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_full_deck_edges(name: str) -> None:
    exact = full(name)
    assert exact.house_edge == pytest.approx(EDGES[name], abs=5e-9)
    assert exact.rtp == pytest.approx(1 - EDGES[name], abs=5e-9)


def test_room_is_symmetric_but_for_the_naturals() -> None:
    """In `room` punter and house play the same policy and a double bust pushes, so each
    wins as often as the other; the house loses exactly the extra half unit a punter
    natural is paid when it wins. Worked by hand from one deck (52 cards, 4 Aces, 16
    ten-values): the punter's Xì Bàng loses only to nothing, its Xì Dách wins unless the
    banker's two cards (from the 50 left) are a natural too."""
    exact = full("room")
    assert exact.outcomes["win"] == pytest.approx(exact.outcomes["lose"], abs=1e-13)
    xi_bang, xi_dach = Fraction(4 * 3, 52 * 51), Fraction(2 * 4 * 16, 52 * 51)
    bang_wins = 1 - Fraction(2 * 1, 50 * 49)  # banker Xì Bàng pushes
    dach_wins = 1 - Fraction(2 * 3 * 15 + 3 * 2, 50 * 49)  # banker Xì Dách or Xì Bàng
    by_hand = Fraction(1, 2) * (xi_bang * bang_wins + xi_dach * dach_wins)
    assert -exact.house_edge == pytest.approx(float(by_hand), abs=1e-13)


def test_commission_is_a_share_of_the_expected_win() -> None:
    exact = full("room")
    five = _variant("room", payouts={"commission": [5, 100]})
    with_five = exact_edge(five)
    assert with_five.expectation_before_commission == exact.expectation_before_commission
    assert with_five.house_edge == pytest.approx(exact.house_edge + 0.05 * exact.gross_win)
    assert with_five.house_edge == pytest.approx(exact.edge_with(Fraction(5, 100)))
    need = exact.commission_for(0.01)
    assert exact.edge_with(need) >= 0.01 > exact.edge_with(need - Fraction(1, 200))
    assert full("classic").commission_for(0.01) == 0


def test_a_deck_too_small_for_a_round_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 10 cards"):
        exact_edge(load_profile("room"), (1,) * 9 + (0,))


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_the_monte_carlo_run_agrees_within_its_confidence_interval(name: str) -> None:
    """Seeded, so deterministic; 6,000 rounds make a CI of about ±2.5 points (the
    benchmark runs 200,000 per profile)."""
    report = house_edge(load_profile(name), 6_000, seed=11)
    exact = full(name)
    low, high = report.ci95
    assert low < exact.house_edge < high
    assert math.isclose(high - low, 2 * 1.959963984540054 * report.std_error)
