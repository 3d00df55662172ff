"""Exact house edge: one punter against the house banker, both on their automatic policies.

Not a simulation: every probability comes from the finite deck, as in the blackjack
analysis (:mod:`table_service.rules.blackjack.exact`).

Why the enumeration can draw the punter's whole hand first and the banker's after,
although the deal alternates (punter, banker, punter, banker, then the punter's
draws, then the banker's): cards leave a shuffled deck exchangeably, each player's
drawing rule looks only at that player's own cards (the banker's, when its policy
checks before drawing, also at the punter's finished hand, which comes first anyway),
so the joint law of (punter's cards, banker's cards) is the same in either order. A
banker natural that stops the round before the punter draws is no exception: the
payoff then reads only the first two cards of each hand.

- The punter's hands are enumerated card by card from the full deck with their exact
  probabilities and grouped by the cards taken and the two values the payoff reads
  (after the deal, and at the end).
- The banker's draw sequences do not depend on the deck, only their probabilities do:
  they are enumerated once (per finished punter hand when the policy checks before
  drawing), merged by the multiset of cards taken (a probability depends only on how
  many of each value are taken: a product of falling factorials), then evaluated for
  the deck left by each punter group with NumPy.
- Every decision comes from :mod:`policy` (the punter's timeout play, the house's
  published policy), every comparison from :func:`hands.compare`, every payout rate from
  :func:`hands.win_rate`: the functions the live engine runs. A test checks the result
  against a full game-tree walk of the live engine on small decks.

Probabilities are floats (no money is involved); the commission is applied as the exact
share of each net win (the live ledger rounds each commission down, in the punter's
favour, so the live edge with commission is at most one minor unit per win lower).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np

from table_service.rules.cards import Card
from table_service.rules.xidach.hands import HandValue, Kind, Outcome, classify, compare, win_rate
from table_service.rules.xidach.policy import house_checks, house_draws, punter_auto_draws
from table_service.rules.xidach.profile import Profile

Counts = tuple[int, ...]  # cards left per value: index 0 = Ace, 1..8 = 2..9, 9 = ten-values
N_VALUES = 10
# One card per value stands for all its cards: the rules read only the rank's points and
# whether it is an Ace or a ten-value (J, Q, K score and make Xì Dách exactly like a 10).
_CARD = tuple(Card(v, "S") for v in range(1, N_VALUES + 1))
_VALUE_ROWS = np.arange(N_VALUES)[None, :]


def deck_counts(decks: int) -> Counts:
    return (4 * decks,) * 9 + (16 * decks,)


def _value(values: tuple[int, ...], profile: Profile) -> HandValue:
    return classify(tuple(_CARD[v - 1] for v in values), profile)


def _taken(values: tuple[int, ...]) -> Counts:
    return tuple(values.count(v) for v in range(1, N_VALUES + 1))


def _hand_done(value: HandValue, n_cards: int, profile: Profile) -> bool:
    return value.is_natural or value.kind is Kind.QUAC or n_cards >= profile.max_cards


@dataclass(frozen=True, slots=True)
class Payoff:
    """The punter's result for one (punter, banker) pair of finished hands."""

    outcome: Outcome
    rate: Fraction  # net win per unit when the outcome is a win, else 0


def payoff(
    profile: Profile,
    punter_dealt: HandValue,
    punter_final: HandValue,
    banker_dealt: HandValue,
    banker_final: HandValue,
) -> Payoff:
    """Which comparison settles the punter, in the order the live round makes them."""
    if banker_dealt.is_natural and profile.banker.natural_ends_round:
        mine, theirs = punter_dealt, banker_dealt  # the round stops before any draw
    elif punter_dealt.is_natural and profile.punter.natural_settles_at_once:
        mine, theirs = punter_dealt, banker_dealt  # compared at once, after the deal
    elif punter_final.kind is Kind.QUAC and profile.punter.bust_loses_at_once:
        return Payoff(Outcome.LOSE, Fraction(0))
    else:
        mine, theirs = punter_final, banker_final  # a check or the showdown
    outcome = compare(mine, theirs, profile)
    rate = win_rate(mine, profile) if outcome is Outcome.WIN else Fraction(0)
    return Payoff(outcome, rate)


@dataclass(frozen=True)
class _BankerRows:
    """The banker's draw sequences merged by cards taken (see the module docstring)."""

    taken: np.ndarray  # (L, 10) cards of each value taken
    length: np.ndarray  # (L,)
    weight: np.ndarray  # (L,) orderings merged into the row
    summary: np.ndarray  # (L,) index into ``summaries``
    summaries: list[tuple[HandValue, HandValue]]  # (the two dealt cards, the final hand)


def _banker_rows(profile: Profile, punter_final: HandValue | None) -> _BankerRows:
    grouped: dict[tuple[Counts, HandValue, HandValue], int] = {}

    def walk(values: tuple[int, ...], dealt: HandValue | None) -> None:
        n = len(values)
        if n < 2:
            for v in range(1, N_VALUES + 1):
                walk((*values, v), None)
            return
        value = _value(values, profile)
        dealt = dealt or value
        stop = _hand_done(value, n, profile) or not house_draws(n, value.total, profile)
        if not stop and punter_final is not None:
            stop = house_checks(value, punter_final, n, profile)  # checked: compared now
        if stop:
            key = (_taken(values), dealt, value)
            grouped[key] = grouped.get(key, 0) + 1
            return
        for v in range(1, N_VALUES + 1):
            walk((*values, v), dealt)

    walk((), None)
    keys = list(grouped)
    index: dict[tuple[HandValue, HandValue], int] = {}
    for k in keys:
        index.setdefault((k[1], k[2]), len(index))
    return _BankerRows(
        taken=np.array([k[0] for k in keys], dtype=np.intp),
        length=np.array([sum(k[0]) for k in keys], dtype=np.intp),
        weight=np.array([grouped[k] for k in keys], dtype=float),
        summary=np.array([index[(k[1], k[2])] for k in keys], dtype=np.intp),
        summaries=list(index),
    )


def _row_probabilities(rows: _BankerRows, remaining: Counts) -> np.ndarray:
    """P(each row) when the banker draws from ``remaining``: falling factorials."""
    depth = int(rows.length.max())
    steps = np.arange(depth)
    counts = np.array(remaining, dtype=float)
    ones = np.ones((N_VALUES, 1))
    falling_by_value = np.cumprod(
        np.concatenate((ones, np.maximum(counts[:, None] - steps[None, :], 0.0)), axis=1), axis=1
    )
    numerators = falling_by_value[_VALUE_ROWS, rows.taken].prod(axis=1)
    falling = np.cumprod(np.concatenate(([1.0], sum(remaining) - steps)))
    falling[falling <= 0] = np.inf  # longer than the deck: impossible (numerator 0 too)
    probabilities: np.ndarray = rows.weight * numerators / falling[rows.length]
    return probabilities


@dataclass(frozen=True, slots=True)
class _PunterGroup:
    taken: Counts
    dealt: HandValue
    final: HandValue


def _punter_groups(profile: Profile, deck: Counts) -> dict[_PunterGroup, float]:
    """Every finished punter hand (timeout play) with its probability from ``deck``."""
    groups: dict[_PunterGroup, float] = {}

    def walk(values: tuple[int, ...], left: list[int], p: float, dealt: HandValue | None) -> None:
        n = len(values)
        if n >= 2:
            value = _value(values, profile)
            dealt = dealt or value
            if _hand_done(value, n, profile) or not punter_auto_draws(n, value.total, profile):
                key = _PunterGroup(_taken(values), dealt, value)
                groups[key] = groups.get(key, 0.0) + p
                return
        total = sum(left)
        for i, count in enumerate(left):
            if count:
                left[i] -= 1
                walk((*values, i + 1), left, p * count / total, dealt)
                left[i] += 1

    walk((), list(deck), 1.0, None)
    return groups


@dataclass(frozen=True)
class ExactEdge:
    """The exact expectation of one unit staked by one punter against the house."""

    profile: str
    decks: int
    commission: Fraction
    expectation_before_commission: float  # the punter's net per unit staked
    gross_win: float  # expected winnings per unit (what a commission is a share of)
    outcomes: dict[str, float]  # P(win), P(lose), P(push)
    seconds: float = field(default=0.0, compare=False)

    @property
    def expectation(self) -> float:
        """The punter's net per unit staked, after the commission."""
        return self.expectation_before_commission - float(self.commission) * self.gross_win

    @property
    def house_edge(self) -> float:
        return -self.expectation

    @property
    def house_edge_before_commission(self) -> float:
        return -self.expectation_before_commission

    @property
    def rtp(self) -> float:
        return 1.0 + self.expectation

    def edge_with(self, commission: Fraction) -> float:
        """The house edge these rules would have with another commission."""
        return float(commission) * self.gross_win - self.expectation_before_commission

    def commission_for(self, target_edge: float, step: Fraction = Fraction(1, 200)) -> Fraction:
        """The smallest commission, in steps of ``step`` (0.5 %), reaching ``target_edge``."""
        need = (target_edge + self.expectation_before_commission) / self.gross_win
        if need <= 0:
            return Fraction(0)
        steps = math.ceil(need / float(step) - 1e-9)
        while self.edge_with(steps * step) < target_edge:
            steps += 1
        return steps * step


@lru_cache(maxsize=64)
def exact_edge(profile: Profile, deck: Counts | None = None) -> ExactEdge:
    """The exact house edge of ``profile`` (one punter, house banker, automatic play).

    ``deck`` is the composition to deal from (cards per value, Ace first, ten-values
    last); by default the profile's full shoe, as a fresh one-deck round deals it.
    Results are cached per (profile, deck): profiles are frozen values.
    """
    started = time.perf_counter()
    counts = deck if deck is not None else deck_counts(profile.decks)
    if len(counts) != N_VALUES or min(counts) < 0 or sum(counts) < 2 * profile.max_cards:
        raise ValueError(f"a deck of {N_VALUES} value counts holding at least 10 cards: {counts}")
    context_matters = profile.house_policy.check_before_draw != "none"
    rows_by_context: dict[HandValue | None, _BankerRows] = {}
    payoffs: dict[tuple[HandValue, HandValue, HandValue | None], tuple[np.ndarray, ...]] = {}
    by_deck: dict[tuple[HandValue | None, Counts], np.ndarray] = {}
    expectation = gross = 0.0
    outcome_p = dict.fromkeys(("win", "lose", "push"), 0.0)
    for group, p_group in _punter_groups(profile, counts).items():
        context = group.final if context_matters else None
        rows = rows_by_context.get(context)
        if rows is None:
            rows = rows_by_context[context] = _banker_rows(profile, context)
        key = (group.dealt, group.final, context)
        table = payoffs.get(key)
        if table is None:
            results = [payoff(profile, group.dealt, group.final, d, f) for d, f in rows.summaries]
            win = np.array([r.outcome is Outcome.WIN for r in results], dtype=float)
            lose = np.array([r.outcome is Outcome.LOSE for r in results], dtype=float)
            rate = np.array([float(r.rate) for r in results])
            table = payoffs[key] = (win, lose, rate)
        win, lose, rate = table
        banker = by_deck.get((context, group.taken))
        if banker is None:  # the banker's outcomes from the deck this punter hand leaves
            remaining = tuple(c - t for c, t in zip(counts, group.taken, strict=True))
            banker = by_deck[(context, group.taken)] = np.bincount(
                rows.summary,
                weights=_row_probabilities(rows, remaining),
                minlength=len(rows.summaries),
            )
        prob = banker * p_group
        p_win, p_lose = float(prob @ win), float(prob @ lose)
        won = float(prob @ rate)
        expectation += won - p_lose
        gross += won
        outcome_p["win"] += p_win
        outcome_p["lose"] += p_lose
        outcome_p["push"] += float(prob.sum()) - p_win - p_lose
    return ExactEdge(
        profile=profile.name,
        decks=profile.decks,
        commission=profile.payouts.commission,
        expectation_before_commission=expectation,
        gross_win=gross,
        outcomes=outcome_p,
        seconds=time.perf_counter() - started,
    )
