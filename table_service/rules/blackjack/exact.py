"""Exact return to player of the blackjack main game, the pair bet and insurance.

Not a simulation: every probability is computed from the finite shoe.

- The dealer's outcome (17..21, bust, blackjack) is enumerated over all draw
  sequences and evaluated for the exact remaining composition after the player's
  cards (memoised on the composition).
- The player plays the best composition-dependent strategy: every decision
  (hit, stand, double, split, surrender) maximises the exact expectation given the
  dealer's card and the cards of the hand itself.
- A split hand is played on its own cards only. Cards leave the shoe
  exchangeably, so with such a strategy the two split hands have the same
  expectation, and the dealer's cards, given one hand's cards, are a random draw
  from what remains; ``2 * E[hand 1]`` is then the exact split value, not an
  approximation (the tests check it against a full game-tree walk of the live
  round code).
- Every payoff comes from :func:`settlement.hand_outcomes`, the function that
  settles live bets; the dealer's drawing rule from :mod:`hand`.

Probabilities are floats; no money is involved.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache

import numpy as np

from table_service.rules.blackjack.config import BlackjackRules
from table_service.rules.blackjack.hand import (
    dealer_must_hit,
    is_natural_values,
    total_of_values,
)
from table_service.rules.blackjack.settlement import (
    DealerFacts,
    HandFacts,
    hand_outcomes,
    insurance_outcome,
    pair_outcome,
)

Counts = tuple[int, ...]  # cards left per value: index 0 = Ace, 1..8 = 2..9, 9 = ten-values
N_OUTCOMES = 7  # dealer 17, 18, 19, 20, 21, bust, blackjack
BUST_POINTS = 22
KINDS = ("main", "double", "split", "split_double", "blackjack")
_ONES = np.ones((10, 1))
_ONES.flags.writeable = False


def shoe_counts(decks: int) -> Counts:
    return (4 * decks,) * 9 + (16 * decks,)


def _remove(counts: Counts, value: int) -> Counts:
    i = value - 1
    return (*counts[:i], counts[i] - 1, *counts[i + 1 :])


def _dealer_facts(outcome: int) -> DealerFacts:
    if outcome == 6:
        return DealerFacts(21, blackjack=True)
    if outcome == 5:
        return DealerFacts(BUST_POINTS)
    return DealerFacts(17 + outcome)


@dataclass(frozen=True)
class PayoffTable:
    """Net win per unit of original stake, by hand kind, player points and dealer outcome.

    Built by asking the live settlement function about every case. A split hand's
    row is the mean of the first and second hand of a split, because the two hands
    are exchangeable (see the module docstring).
    """

    rows: dict[str, np.ndarray]  # kind -> array[points 0..22, outcome]

    @classmethod
    def build(cls, rules: BlackjackRules) -> PayoffTable:
        def net(facts: HandFacts, outcome: int) -> float:
            outs = hand_outcomes(facts, _dealer_facts(outcome), rules)
            return float(sum(o.factor - 1 for o in outs))

        rows: dict[str, np.ndarray] = {}
        for kind in KINDS:
            table = np.zeros((BUST_POINTS + 1, N_OUTCOMES))
            for points in range(2, BUST_POINTS + 1):
                for outcome in range(N_OUTCOMES):
                    doubled = kind in ("double", "split_double")
                    if kind == "blackjack":
                        value = net(HandFacts(21, blackjack=True), outcome)
                    elif kind.startswith("split"):
                        value = 0.5 * (
                            net(HandFacts(points, doubled=doubled), outcome)
                            + net(HandFacts(points, doubled=doubled, second_of_split=True), outcome)
                        )
                    else:
                        value = net(HandFacts(points, doubled=doubled), outcome)
                    table[points, outcome] = value
            rows[kind] = table
        return cls(rows)


@dataclass(frozen=True)
class _DealerSequences:
    """The dealer's draws after the up card, grouped by the multiset of cards drawn.

    An ordered draw's probability depends only on how many of each value it takes
    (a product of falling factorials), so orderings are merged into one row with
    a ``weight`` (how many valid orderings): far fewer rows to evaluate.

    A row's numerator is the product, over the values it takes, of that value's falling
    factorial: ``factors`` are those factors' places in the (value, count) table of
    falling factorials, the values a row takes in ascending order, and ``starts`` where
    each row's begin. A row takes three or four of the ten values, so the product over
    them alone multiplies a third of the factors a product over all ten would (the others
    are 1: the same product, in the same order); with the arrays made once, a full solve
    takes half the time it did (it spent most of it here).
    """

    taken: np.ndarray  # (L, 10) cards of each value drawn
    length: np.ndarray  # (L,) cards drawn
    weight: np.ndarray  # (L,) valid orderings
    outcome: np.ndarray  # (L,)
    steps: np.ndarray  # 0, 1, ... up to the most cards a draw takes, less one
    factors: np.ndarray  # (M,) places in the flattened (10, steps + 1) falling factorials
    starts: np.ndarray  # (L,) each row's first factor


@cache
def _dealer_sequences(up: int, hits_soft_17: bool) -> _DealerSequences:
    """The dealer's draws after ``up`` (the same for every shoe: made once, and shared, read
    only, by every solver; making them cost a small shoe's solver most of its time)."""
    grouped: dict[tuple[tuple[int, ...], int], int] = {}

    def walk(values: tuple[int, ...]) -> None:
        total = total_of_values(values)
        if len(values) >= 2 and not dealer_must_hit(total, hits_soft_17):
            if is_natural_values(values):
                outcome = 6
            elif total.bust:
                outcome = 5
            else:
                outcome = total.points - 17
            taken = tuple(values[1:].count(v) for v in range(1, 11))
            grouped[(taken, outcome)] = grouped.get((taken, outcome), 0) + 1
            return
        for value in range(1, 11):
            walk((*values, value))

    walk((up,))
    keys = list(grouped)
    taken = np.array([k[0] for k in keys], dtype=np.intp)
    length = taken.sum(axis=1)
    rows, values = np.nonzero(taken)  # row by row, each row's values ascending
    arrays = {
        "taken": taken,
        "length": length,
        "weight": np.array([grouped[k] for k in keys], dtype=float),
        "outcome": np.array([k[1] for k in keys], dtype=np.intp),
        "steps": np.arange(int(length.max())),
        "factors": values * (int(length.max()) + 1) + taken[rows, values],
        "starts": np.searchsorted(rows, np.arange(len(keys))),
    }
    for array in arrays.values():
        array.flags.writeable = False
    return _DealerSequences(**arrays)


@dataclass
class ExactSolver:
    """Best-play expectations for one table configuration and one starting shoe."""

    rules: BlackjackRules
    shoe: Counts = ()
    payoff: PayoffTable = field(init=False)
    _sequences: dict[int, _DealerSequences] = field(init=False, default_factory=dict)
    _dist: dict[tuple[int, Counts], np.ndarray] = field(init=False, default_factory=dict)
    # each draw's denominator (the shoe's falling factorial), by up card and cards left
    _falling: dict[tuple[int, int], np.ndarray] = field(init=False, default_factory=dict)
    _best: dict[tuple[str, int, Counts, int, bool], float] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        if not self.shoe:
            self.shoe = shoe_counts(self.rules.decks)
        self.payoff = PayoffTable.build(self.rules)
        for up in range(1, 11):
            self._sequences[up] = _dealer_sequences(up, self.rules.dealer_hits_soft_17)

    # -- dealer ---------------------------------------------------------------------
    def dealer_distribution(self, up: int, remaining: Counts) -> np.ndarray:
        """P(dealer 17, 18, 19, 20, 21, bust, blackjack) drawing from ``remaining``."""
        key = (up, remaining)
        dist = self._dist.get(key)
        if dist is None:
            seqs = self._sequences[up]
            steps = seqs.steps
            counts = np.array(remaining, dtype=float)
            falling_by_value = np.cumprod(
                np.concatenate((_ONES, counts[:, None] - steps[None, :]), axis=1), axis=1
            )
            numerators = np.multiply.reduceat(falling_by_value.ravel()[seqs.factors], seqs.starts)
            total = sum(remaining)
            denominators = self._falling.get((up, total))
            if denominators is None:
                falling = np.cumprod(np.concatenate(([1.0], total - steps)))
                falling[falling <= 0] = np.inf  # longer than the shoe: impossible, numerator 0
                denominators = self._falling[(up, total)] = falling[seqs.length]
            prob = seqs.weight * numerators / denominators
            dist = np.bincount(seqs.outcome, weights=prob, minlength=N_OUTCOMES)
            self._dist[key] = dist
        return dist

    def _p_blackjack(self, up: int, remaining: Counts) -> float:
        if up == 1:
            return remaining[9] / sum(remaining)
        if up == 10:
            return remaining[0] / sum(remaining)
        return 0.0

    # -- values of the player's options -------------------------------------------------
    def stand(self, kind: str, up: int, remaining: Counts, points: int) -> float:
        if points > 21:
            p = self._p_blackjack(up, remaining)
            row = self.payoff.rows[kind][BUST_POINTS]
            return float(p * row[6] + (1 - p) * row[0])
        return float(self.dealer_distribution(up, remaining) @ self.payoff.rows[kind][points])

    def _draws(self, remaining: Counts) -> Iterator[tuple[int, float, Counts]]:
        total = sum(remaining)
        for i, n in enumerate(remaining):
            if n:
                yield i + 1, n / total, _remove(remaining, i + 1)

    def play_on(self, kind: str, up: int, remaining: Counts, hard: int, ace: bool) -> float:
        """Best value of a hand that may only hit or stand from here (21 stands)."""
        key = (kind, up, remaining, hard, ace)
        value = self._best.get(key)
        if value is None:
            points = hard + 10 if ace and hard <= 11 else hard
            value = self.stand(kind, up, remaining, points)
            if points < 21:
                value = max(value, self.hit(kind, up, remaining, hard, ace))
            self._best[key] = value
        return value

    def hit(self, kind: str, up: int, remaining: Counts, hard: int, ace: bool) -> float:
        if not any(remaining):
            return float("-inf")  # an empty shoe (only in tiny test shoes): no card to take
        return sum(
            p * self.play_on(kind, up, rest, hard + v, ace or v == 1)
            for v, p, rest in self._draws(remaining)
        )

    def double(self, kind: str, up: int, remaining: Counts, hard: int, ace: bool) -> float:
        doubled = "split_double" if kind == "split" else "double"
        if not any(remaining):
            return float("-inf")
        value = 0.0
        for v, p, rest in self._draws(remaining):
            h, a = hard + v, ace or v == 1
            value += p * self.stand(doubled, up, rest, h + 10 if a and h <= 11 else h)
        return value

    def split_hand(self, up: int, pair: int, remaining: Counts) -> float:
        """Value of one hand of a split pair (``remaining`` excludes both pair cards)."""
        rules = self.rules
        value = 0.0
        for v, p, rest in self._draws(remaining):
            hard, ace = pair + v, pair == 1 or v == 1
            points = hard + 10 if ace and hard <= 11 else hard
            if (pair == 1 and not rules.hit_split_aces) or points == 21:
                best = self.stand("split", up, rest, points)
            else:
                best = self.play_on("split", up, rest, hard, ace)
                if rules.double_after_split and (pair != 1 or rules.double_split_aces):
                    best = max(best, self.double("split", up, rest, hard, ace))
            value += p * best
        return value

    def options(self, up: int, a: int, b: int, remaining: Counts) -> dict[str, float]:
        """Value of every first decision on the two cards ``a``, ``b`` (dealer shows ``up``).

        ``remaining`` is the shoe without the three dealt cards. A blackjack has no
        decision: its only entry is ``stand``.
        """
        rules = self.rules
        if is_natural_values((a, b)):
            return {
                "stand": float(
                    self.dealer_distribution(up, remaining) @ self.payoff.rows["blackjack"][21]
                )
            }
        hard, ace = a + b, a == 1 or b == 1
        points = hard + 10 if ace and hard <= 11 else hard
        values = {"stand": self.stand("main", up, remaining, points)}
        if points < 21:
            values["hit"] = self.hit("main", up, remaining, hard, ace)
        values["double"] = self.double("main", up, remaining, hard, ace)
        if a == b:
            values["split"] = 2 * self.split_hand(up, a, remaining)
        if rules.surrender and up in rules.surrender_dealer_values:
            values["surrender"] = self.surrender_value(points)
        return values

    def move_values(
        self, up: int, hand: tuple[int, ...], split_pair: int | None, allowed: set[str]
    ) -> dict[str, float]:
        """Values of the ``allowed`` moves for a hand in play: the solver as a player.

        ``hand`` holds the hand's card values (for a split hand, the pair card first);
        ``split_pair`` is set for a split hand, whose sibling's first card is also
        out of the shoe. Used to drive the live round code with the solver's
        strategy (Monte-Carlo and game-tree cross-checks).
        """
        remaining = _remove(self.shoe, up)
        for value in (*hand, *([split_pair] if split_pair else [])):
            remaining = _remove(remaining, value)
        if split_pair is None and len(hand) == 2 and "split" in allowed:
            return {
                k: v
                for k, v in self.options(up, hand[0], hand[1], remaining).items()
                if k in allowed
            }
        kind = "split" if split_pair else "main"
        hard, ace = sum(hand), 1 in hand
        points = hard + 10 if ace and hard <= 11 else hard
        values: dict[str, float] = {}
        if "stand" in allowed:
            values["stand"] = self.stand(kind, up, remaining, points)
        if "hit" in allowed and points < 21:
            values["hit"] = self.hit(kind, up, remaining, hard, ace)
        if "double" in allowed:
            values["double"] = self.double(kind, up, remaining, hard, ace)
        if "surrender" in allowed:
            values["surrender"] = self.surrender_value(points)
        return values

    def surrender_value(self, points: int) -> float:
        outs = hand_outcomes(HandFacts(points, surrendered=True), DealerFacts(17), self.rules)
        return float(sum(o.factor - 1 for o in outs))


def _initial_hands(shoe: Counts) -> Iterator[tuple[int, int, int, float, Counts]]:
    """(up, a, b, probability, rest): every first deal, player cards unordered a <= b."""
    total = sum(shoe)
    for up in range(1, 11):
        after_up = _remove(shoe, up)
        p_up = shoe[up - 1] / total
        for a in range(1, 11):
            if not after_up[a - 1]:
                continue
            after_a = _remove(after_up, a)
            p_a = after_up[a - 1] / (total - 1)
            for b in range(a, 11):
                if not after_a[b - 1]:
                    continue
                p_b = after_a[b - 1] / (total - 2)
                weight = 1 if a == b else 2
                yield up, a, b, p_up * p_a * p_b * weight, _remove(after_a, b)


def _same_rank_share(shoe_tens: int, up_is_ten: bool) -> float:
    """Of the player's two ten-value cards, the share of the same rank (T-T, J-J, ...).

    Needed only for tables that split ten-values by rank: the value-level composition
    does not see ranks, but the four ten ranks are equally represented in the shoe.
    """
    r = shoe_tens / 4
    if not up_is_ten:
        return (r - 1) / (4 * r - 1)
    same = 4 * r * (r - 1) * (r - 2) + 12 * r * r * (r - 1)
    return same / (4 * r * (4 * r - 1) * (4 * r - 2))


@dataclass(frozen=True)
class ChartCell:
    action: str
    values: dict[str, float]


@dataclass(frozen=True)
class MainGameReport:
    expectation: float  # net win per unit of initial main bet
    by_up_card: dict[int, float]
    chart: dict[str, dict[int, ChartCell]]  # row label -> dealer value -> best first action

    @property
    def rtp(self) -> float:
        return 1.0 + self.expectation

    @property
    def house_edge(self) -> float:
        return -self.expectation


def _row_label(a: int, b: int) -> str:
    if a == b:
        return "pair " + ("A" if a == 1 else "T" if a == 10 else str(a))
    if a == 1 or b == 1:
        return f"soft {a + b + 10}"
    return f"hard {a + b}"


def solve_main(rules: BlackjackRules, shoe: Counts | None = None) -> MainGameReport:
    """Exact expectation of the main bet under the best composition-dependent strategy."""
    solver = ExactSolver(rules, shoe or shoe_counts(rules.decks))
    total = 0.0
    by_up: dict[int, float] = {}
    up_weight: dict[int, float] = {}
    row_sums: dict[tuple[str, int], dict[str, float]] = {}
    row_weights: dict[tuple[str, int], float] = {}
    for up, a, b, prob, rest in _initial_hands(solver.shoe):
        values = solver.options(up, a, b, rest)
        best = max(values.values())
        if a == b == 10 and not rules.split_ten_values:
            share = _same_rank_share(solver.shoe[9], up == 10)
            without = max(v for k, v in values.items() if k != "split")
            best = share * best + (1 - share) * without
        total += prob * best
        by_up[up] = by_up.get(up, 0.0) + prob * best
        up_weight[up] = up_weight.get(up, 0.0) + prob
        if is_natural_values((a, b)):
            continue
        key = (_row_label(a, b), up)
        sums = row_sums.setdefault(key, {})
        for action, value in values.items():
            sums[action] = sums.get(action, 0.0) + prob * value
        row_weights[key] = row_weights.get(key, 0.0) + prob
    chart: dict[str, dict[int, ChartCell]] = {}
    for (label, up), sums in row_sums.items():
        weight = row_weights[(label, up)]
        means = {k: v / weight for k, v in sums.items()}
        action = max(means, key=lambda k: means[k])
        chart.setdefault(label, {})[up] = ChartCell(action, means)
    return MainGameReport(
        expectation=total,
        by_up_card={up: by_up[up] / up_weight[up] for up in sorted(by_up)},
        chart=chart,
    )


@dataclass(frozen=True)
class SideBetReport:
    """Exact expectation of a side bet: ``rtp = sum(p * factor)``; pays are winnings per unit."""

    outcomes: tuple[tuple[str, Fraction, Fraction], ...]  # (result, pays, probability)

    @property
    def rtp(self) -> Fraction:
        return sum(
            (p * (1 + pays) for result, pays, p in self.outcomes if result != "lose"), Fraction(0)
        )

    @property
    def house_edge(self) -> Fraction:
        return 1 - self.rtp


def pair_report(rules: BlackjackRules, shoe: Counts | None = None) -> SideBetReport:
    """The pair bet: the seat's first two cards of the same rank (ten-values by rank)."""
    shoe = shoe or shoe_counts(rules.decks)
    total = sum(shoe)
    ranks = [shoe[i] for i in range(9)] + [Fraction(shoe[9], 4)] * 4
    p_pair = sum((Fraction(n) * (n - 1) for n in ranks), Fraction(0)) / (total * (total - 1))
    win = pair_outcome(1, 1, rules).factor - 1
    return SideBetReport((("win", win, p_pair), ("lose", Fraction(-1), 1 - p_pair)))


def insurance_report(rules: BlackjackRules, shoe: Counts | None = None) -> SideBetReport:
    """Insurance against an Ace up, off the top (player's two cards unseen)."""
    shoe = shoe or shoe_counts(rules.decks)
    total = sum(shoe)
    p_bj = Fraction(shoe[9], total - 1)
    win = insurance_outcome(DealerFacts(21, blackjack=True), rules).factor - 1
    return SideBetReport((("win", win, p_bj), ("lose", Fraction(-1), 1 - p_bj)))
