"""The exact RTP engine: dealer odds, the live-code game tree, Monte-Carlo, known values."""

from __future__ import annotations

import random
import statistics
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from table_service.rules.blackjack.config import (
    DEFAULT_RULES_FILE,
    BlackjackRules,
    load_rules,
)
from table_service.rules.blackjack.errors import RulesConfigError
from table_service.rules.blackjack.exact import (
    BUST_POINTS,
    ExactSolver,
    MainGameReport,
    _same_rank_share,
    insurance_report,
    pair_report,
    solve_main,
)
from table_service.rules.blackjack.hand import card_value
from table_service.rules.blackjack.round_state import (
    Deal,
    Phase,
    RoundState,
    SeatBet,
    apply,
    new_round,
    next_card_target,
)
from table_service.rules.blackjack.settlement import settle
from table_service.rules.blackjack.solver_player import (
    best_decision,
    play_single_seat,
    shuffled_shoe,
    value_card,
)

RULES = BlackjackRules(decks=1)
SMALL_SHOE = (2,) * 9 + (8,)  # two suits: every pair can be split, tiny enough to solve fast


def brute_dealer(up: int, counts: list[int], hits_soft_17: bool) -> dict[str, Fraction]:
    """Independent dealer enumeration with exact fractions (no shared code but card values)."""
    out: dict[str, Fraction] = {}

    def walk(cards: list[int], prob: Fraction) -> None:
        hard = sum(cards)
        soft = 1 in cards and hard + 10 <= 21
        points = hard + 10 if soft else hard
        if len(cards) >= 2 and (points > 17 or (points == 17 and not (soft and hits_soft_17))):
            key = "bj" if len(cards) == 2 and points == 21 else "bust" if points > 21 else points
            out[str(key)] = out.get(str(key), Fraction(0)) + prob
            return
        total = sum(counts)
        for v in range(1, 11):
            if counts[v - 1]:
                p = Fraction(counts[v - 1], total)
                counts[v - 1] -= 1
                walk([*cards, v], prob * p)
                counts[v - 1] += 1

    walk([up], Fraction(1))
    return out


@pytest.mark.parametrize("hits_soft_17", [False, True])
@pytest.mark.parametrize("up", [1, 2, 6, 10])
def test_dealer_distribution_matches_brute_force(up: int, hits_soft_17: bool) -> None:
    shoe = (2, 1, 2, 1, 2, 1, 2, 1, 2, 6)
    solver = ExactSolver(replace(RULES, dealer_hits_soft_17=hits_soft_17), shoe)
    got = solver.dealer_distribution(up, shoe)
    want = brute_dealer(up, list(shoe), hits_soft_17)
    keys = ["17", "18", "19", "20", "21", "bust", "bj"]
    assert got.sum() == pytest.approx(1.0, abs=1e-12)
    for i, key in enumerate(keys):
        assert got[i] == pytest.approx(float(want.get(key, 0)), abs=1e-12)


def test_payoff_table_comes_from_the_settlement_rules() -> None:
    rows = ExactSolver(RULES, SMALL_SHOE).payoff.rows
    assert rows["main"][20][2] == 1  # 20 v 19
    assert rows["main"][19][2] == 0  # push
    assert rows["double"][11][5] == 2  # doubled v dealer bust
    assert rows["double"][BUST_POINTS][6] == -1  # original bets only: double refunded
    assert rows["double"][BUST_POINTS][0] == -2
    assert rows["split"][20][6] == -0.5  # one of two split stakes lost on dealer blackjack
    assert rows["blackjack"][21][6] == 0 and rows["blackjack"][21][4] == 1.5


def tree_value(solver: ExactSolver, state: RoundState) -> float:
    """Expectation of a round walked card by card through the live round and settlement code."""
    memo: dict[RoundState, float] = {}

    def remaining(st: RoundState) -> list[int]:
        counts = list(solver.shoe)
        cards = [c for s in st.seats for h in s.hands for c in h.cards] + list(st.dealer)
        for c in cards:
            counts[card_value(c) - 1] -= 1
        return counts

    def walk(st: RoundState) -> float:
        key = st
        if st.phase is Phase.DEALER:  # only the dealer's total matters from here
            key = replace(st, dealer=(st.dealer[0], *sorted(st.dealer[1:])))
        if key in memo:
            return memo[key]
        if st.phase is Phase.COMPLETE:
            value = float(sum(b.returned - b.stake for b in settle(st).bets))
        elif next_card_target(st) is not None:
            counts = remaining(st)
            n = sum(counts)
            value = sum(
                c / n * walk(apply(st, Deal(value_card(i + 1)))) for i, c in enumerate(counts) if c
            )
        else:
            value = walk(apply(st, best_decision(solver, st)))
        memo[key] = value
        return value

    return walk(state)


@pytest.mark.parametrize(
    ("shoe", "a", "up", "b", "best"),
    [
        ((1, 0, 0, 1, 1, 1, 1, 3, 1, 6), 8, 6, 8, "split"),
        ((1, 0, 0, 1, 1, 1, 1, 3, 1, 6), 8, 10, 8, "stand"),
        ((1, 0, 0, 1, 1, 1, 1, 3, 1, 6), 4, 8, 7, "double"),
        ((3, 0, 0, 0, 1, 1, 1, 1, 1, 8), 1, 6, 1, "split"),
        ((3, 0, 0, 0, 1, 1, 1, 1, 1, 8), 1, 10, 1, "split"),
        ((3, 0, 0, 0, 1, 1, 1, 1, 1, 8), 10, 1, 1, "stand"),
        ((3, 0, 0, 0, 1, 1, 1, 1, 1, 8), 6, 1, 5, "double"),
        (SMALL_SHOE, 9, 10, 9, "stand"),
        (SMALL_SHOE, 10, 9, 6, "hit"),
        ((1, 0, 0, 0, 0, 1, 1, 2, 3, 8), 10, 9, 6, "surrender"),
    ],
)
def test_exact_value_equals_live_round_game_tree(
    shoe: tuple[int, ...], a: int, up: int, b: int, best: str
) -> None:
    """Splits included: the solver's value is exact, not an approximation."""
    solver = ExactSolver(RULES, shoe)
    state = new_round(RULES, [SeatBet(1, "m", 1000)])
    for v in (a, up, b):
        state = apply(state, Deal(value_card(v)))
    rest = list(shoe)
    for v in (a, up, b):
        rest[v - 1] -= 1
    options = solver.options(up, a, b, tuple(rest))
    assert max(options, key=lambda k: options[k]) == best
    assert tree_value(solver, state) / 1000 == pytest.approx(options[best], abs=1e-12)


def test_monte_carlo_through_live_code_agrees_with_exact() -> None:
    exact = solve_main(RULES, SMALL_SHOE).expectation
    solver = ExactSolver(RULES, SMALL_SHOE)
    rng = random.Random(20261129)
    results = [play_single_seat(solver, shuffled_shoe(SMALL_SHOE, rng)) / 1000 for _ in range(3000)]
    mean = statistics.fmean(results)
    stderr = statistics.stdev(results) / len(results) ** 0.5
    assert abs(mean - exact) < 4 * stderr, (mean, exact, stderr)


def test_dealer_hitting_soft_17_costs_the_player() -> None:
    suit = (1,) * 9 + (4,)
    s17 = solve_main(RULES, suit).expectation
    h17 = solve_main(replace(RULES, dealer_hits_soft_17=True), suit).expectation
    six_five = solve_main(replace(RULES, blackjack_pays=Fraction(6, 5)), suit).expectation
    rank_split = solve_main(replace(RULES, split_ten_values=False), suit).expectation
    assert h17 < s17 and six_five < s17 and rank_split <= s17


def test_same_rank_share_of_two_ten_values() -> None:
    # two decks' eight tens (T, J, Q, K x 2), dealer shows one of them: 3 same-rank pairs of 21
    assert _same_rank_share(8, up_is_ten=True) == pytest.approx(1 / 7)
    assert _same_rank_share(8, up_is_ten=False) == pytest.approx(1 / 7)  # 4 pairs of 28
    assert _same_rank_share(4, up_is_ten=False) == 0


def test_pair_and_insurance_exact_values() -> None:
    rules = BlackjackRules()
    pair = pair_report(rules)
    assert pair.outcomes[0][2] == Fraction(31, 415)  # 8 decks: second card of the same rank
    assert pair.rtp == Fraction(12 * 31, 415)
    insurance = insurance_report(rules)
    assert insurance.outcomes[0][2] == Fraction(128, 415)
    assert insurance.rtp == Fraction(3 * 128, 415)
    assert pair_report(BlackjackRules(decks=1)).outcomes[0][2] == Fraction(3, 51)


@pytest.fixture(scope="module")
def eight_decks() -> MainGameReport:
    """The full table of the rules document (about 8 s): the one full-size solve in the tests."""
    return solve_main(BlackjackRules())


@pytest.mark.slow
def test_eight_deck_rtp_and_derived_chart(eight_decks: MainGameReport) -> None:
    report = eight_decks
    assert report.rtp == pytest.approx(0.995169, abs=1e-6)
    assert 0.0045 < report.house_edge < 0.0050  # seed states 99.54 % maximum
    chart = {row: {u: c.action for u, c in cells.items()} for row, cells in report.chart.items()}
    assert chart["hard 11"][10] == "double" and chart["hard 11"][1] == "hit"
    assert chart["hard 16"][9] == "surrender" and chart["hard 16"][10] == "hit"
    assert chart["hard 12"][4] == "stand" and chart["hard 12"][3] == "hit"
    assert chart["soft 18"][2] == "stand" and chart["soft 18"][9] == "hit"
    assert chart["pair A"][1] == "split" and chart["pair 8"][10] == "split"
    assert chart["pair T"][6] == "stand" and chart["pair 5"][9] == "double"
    assert chart["pair 9"][7] == "stand" and chart["pair 9"][8] == "split"


def test_default_rules_file_is_the_rules_document() -> None:
    assert load_rules(DEFAULT_RULES_FILE) == BlackjackRules()
    assert load_rules(None) == BlackjackRules()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[blackjack]\ndecks = 0\n", "decks"),
        ("[blackjack]\nblackjak_pays = '3:2'\n", "unknown rule keys"),
        ("[blackjack]\nblackjack_pays = 'three to two'\n", "ratio"),
        ("[blackjack]\nsurrender = 'yes'\n", "true or false"),
        ("[blackjack\n", "not valid TOML"),
    ],
)
def test_bad_rules_files_are_refused(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    with pytest.raises(RulesConfigError, match=match):
        load_rules(path)


def test_rules_file_changes_payouts(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text("[blackjack]\ndecks = 6\nblackjack_pays = '6:5'\nsurrender = false\n")
    rules = load_rules(path)
    assert (rules.decks, rules.blackjack_pays, rules.surrender) == (6, Fraction(6, 5), False)
