"""Exact return-to-player of every bet, by enumeration over the shoe's composition.

No simulation: every way the round's cards can leave the shoe is counted with its exact
multiplicity, and each distinct outcome class is settled once through
:func:`~table_service.rules.baccarat.settlement.settle_bet` (the code that pays live
bets), weighted exactly.

How the enumeration stays small:

* The first four cards (P1 B1 P2 B2) are enumerated by rank; where ranks coincide, the
  suits are enumerated too, so pairs, perfect pairs and four identical cards are exact
  for any composition. What the bets can see of them is kept: point values, whether
  each side's first two cards pair by rank or are the same card, whether all four are
  the same card, and how the two sides' first cards compare in rank (Dragon/Tiger).
* Third cards matter only by point value (no bet reads their rank or suit), and the
  remaining composition by value depends only on the values already dealt, so the draws
  are enumerated by value once per value pattern and combined.

Weights are integers: a sequence of k cards dealt from N counts
``n1 · n2 · … · nk · (N-k) · … · (N-5)`` so every round is measured in ordered six-card
draws, and the probability of a class is its weight over ``N · (N-1) · … · (N-5)``.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from table_service.rules.baccarat.dealing import banker_draws, is_natural, player_draws
from table_service.rules.baccarat.outcome import Outcome, outcome
from table_service.rules.baccarat.paytable import BET_TYPES, Paytable
from table_service.rules.baccarat.points import baccarat_value
from table_service.rules.baccarat.settlement import settle_bet
from table_service.rules.cards import SUITS, Card, shoe_composition

Progress = Callable[[float], None]
ROUND_CARDS = 6  # rounds are weighed as ordered draws of this many cards

# (player pair kind, banker pair kind, four identical, first-rank comparison):
# pair kind 0 = none, 1 = same rank, 2 = same card; comparison = sign(banker - player).
Features = tuple[int, int, bool, int]
# (player total, banker total, player cards, banker cards)
MainKey = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class OutcomeClass:
    """One way a bet can end, with its exact probability per unit stake."""

    case: str
    result: str
    pays: Fraction | None
    returns: Fraction  # money returned per unit of stake
    probability: Fraction


@dataclass(frozen=True, slots=True)
class BetRtp:
    bet_type: str
    outcomes: tuple[OutcomeClass, ...]
    closes_after: int | None

    @property
    def rtp(self) -> Fraction:
        return sum((o.probability * o.returns for o in self.outcomes), Fraction(0))

    @property
    def house_edge(self) -> Fraction:
        return 1 - self.rtp


@dataclass(frozen=True, slots=True)
class RtpReport:
    decks: int | None
    cards: int
    classes: int  # distinct outcome classes settled
    bets: Mapping[str, BetRtp]

    method: str = "exact"

    def to_json(self) -> dict[str, Any]:
        """The ``rtp --json`` document of shared/specs/settle-jsonl.md, plus exact fractions."""
        return {
            "game": "baccarat",
            "decks": self.decks,
            "cards": self.cards,
            "method": self.method,
            "bets": {
                bet: {
                    "house_edge": float(report.house_edge),
                    "rtp": float(report.rtp),
                    "house_edge_exact": str(report.house_edge),
                    "rtp_exact": str(report.rtp),
                    "closes_after": report.closes_after,
                    "outcomes": [
                        {
                            "case": o.case,
                            "result": o.result,
                            "pays": None if o.pays is None else float(o.pays),
                            "pays_exact": None if o.pays is None else str(o.pays),
                            "returns": float(o.returns),
                            "probability": str(o.probability),
                            "probability_decimal": float(o.probability),
                        }
                        for o in report.outcomes
                    ],
                }
                for bet, report in self.bets.items()
            },
        }


def _falling(n: int, k: int) -> int:
    return math.perm(n, k) if n >= k >= 0 else 0


def _value_card(value: int) -> Card:
    """A representative card of a point value (draws are read only by value)."""
    return Card(value if value else 10, "S")


class _FirstFour:
    """Exact weights of the first four cards, by rank, with suits where ranks coincide."""

    def __init__(self, composition: Mapping[Card, int]) -> None:
        self.count = {(c.rank, c.suit): n for c, n in composition.items() if n > 0}
        self.rank_count = Counter[int]()
        for (rank, _), n in self.count.items():
            self.rank_count[rank] += n
        self.some_card = {
            rank: Card(rank, next(s for s in SUITS if self.count.get((rank, s), 0) > 0))
            for rank in self.rank_count
        }
        self._groups: dict[tuple[int, tuple[int, ...]], dict[tuple[bool, bool, bool], Any]] = {}

    def group(
        self, rank: int, places: tuple[int, ...]
    ) -> dict[tuple[bool, bool, bool], tuple[int, dict[int, str]]]:
        """Suit patterns of the cards of one rank at the given places (0=P1 1=B1 2=P2 3=B2):
        (P1 & P2 same card, B1 & B2 same card, all four same card) -> (weight, suits)."""
        key = (rank, places)
        cached = self._groups.get(key)
        if cached is not None:
            return cached
        patterns: dict[tuple[bool, bool, bool], tuple[int, dict[int, str]]] = {}
        for suits in itertools.product(SUITS, repeat=len(places)):
            weight = 1
            taken: Counter[str] = Counter()
            for suit in suits:
                weight *= self.count.get((rank, suit), 0) - taken[suit]
                taken[suit] += 1
                if weight <= 0:
                    break
            if weight <= 0:
                continue
            by_place = dict(zip(places, suits, strict=True))
            flags = (
                0 in by_place and 2 in by_place and by_place[0] == by_place[2],
                1 in by_place and 3 in by_place and by_place[1] == by_place[3],
                len(places) == 4 and len(set(suits)) == 1,
            )
            if flags in patterns:
                patterns[flags] = (patterns[flags][0] + weight, patterns[flags][1])
            else:
                patterns[flags] = (weight, by_place)
        self._groups[key] = patterns
        return patterns


def _first_four_states(
    composition: Mapping[Card, int], progress: Progress | None
) -> dict[tuple[int, int, int, int], dict[Features, list[Any]]]:
    """values (P1 B1 P2 B2) -> features -> [weight, representative four cards]."""
    first = _FirstFour(composition)
    ranks = sorted(first.rank_count)
    count = first.rank_count
    states: dict[tuple[int, int, int, int], dict[Features, list[Any]]] = {}
    for index, r0 in enumerate(ranks):
        if progress is not None:
            progress(0.5 * index / len(ranks))
        for r1, r2, r3 in itertools.product(ranks, repeat=3):
            rank_of = (r0, r1, r2, r3)
            values = (r0 if r0 < 10 else 0, r1 if r1 < 10 else 0,
                      r2 if r2 < 10 else 0, r3 if r3 < 10 else 0)  # fmt: skip
            by_features = states.setdefault(values, {})
            compare = (r1 > r0) - (r1 < r0)
            if r0 != r1 and r0 != r2 and r0 != r3 and r1 != r2 and r1 != r3 and r2 != r3:
                # Four different ranks (most of the work): suits cannot matter.
                weight = count[r0] * count[r1] * count[r2] * count[r3]
                entry = by_features.get((0, 0, False, compare))
                if entry is None:
                    cards = tuple(first.some_card[rank] for rank in rank_of)
                    by_features[(0, 0, False, compare)] = [weight, cards]
                else:
                    entry[0] += weight
                continue
            places: dict[int, list[int]] = {}
            for place, rank in enumerate(rank_of):
                places.setdefault(rank, []).append(place)
            combos: list[tuple[int, tuple[bool, bool, bool], dict[int, str]]] = [
                (1, (False, False, False), {})
            ]
            for rank, group_places in places.items():
                patterns = first.group(rank, tuple(group_places))
                combos = [
                    (
                        weight * group_weight,
                        (flags[0] or g[0], flags[1] or g[1], flags[2] or g[2]),
                        {**suits, **group_suits},
                    )
                    for weight, flags, suits in combos
                    for g, (group_weight, group_suits) in patterns.items()
                ]
            for weight, (same_p, same_b, identical), suits in combos:
                if weight <= 0:
                    continue
                features: Features = (
                    0 if r0 != r2 else 2 if same_p else 1,
                    0 if r1 != r3 else 2 if same_b else 1,
                    identical,
                    compare,
                )
                entry = by_features.get(features)
                if entry is None:
                    cards = tuple(Card(rank_of[p], suits[p]) for p in range(4))
                    by_features[features] = [weight, cards]
                else:
                    entry[0] += weight
    return states


def _draws(
    values: tuple[int, int, int, int], value_count: list[int], total: int
) -> dict[MainKey, list[Any]]:
    """Third cards by value after these first four: main key -> [weight, drawn values].

    Weights count the ordered draws of the remaining ``ROUND_CARDS - 4`` cards."""
    left = list(value_count)
    for value in values:
        left[value] -= 1
    rest = total - 4
    player = (values[0] + values[2]) % 10
    banker = (values[1] + values[3]) % 10
    out: dict[MainKey, list[Any]] = {}

    def add(key: MainKey, weight: int, drawn: tuple[int, ...]) -> None:
        if weight <= 0:
            return
        entry = out.get(key)
        if entry is None:
            out[key] = [weight, drawn]
        else:
            entry[0] += weight

    if is_natural(player) or is_natural(banker):
        add((player, banker, 2, 2), rest * (rest - 1), ())
    elif player_draws(player):
        for third in range(10):
            if left[third] <= 0:
                continue
            player_final = (player + third) % 10
            if banker_draws(banker, third):
                left[third] -= 1
                for fourth in range(10):
                    add(
                        (player_final, (banker + fourth) % 10, 3, 3),
                        (left[third] + 1) * left[fourth],
                        (third, fourth),
                    )
                left[third] += 1
            else:
                add((player_final, banker, 3, 2), left[third] * (rest - 1), (third,))
    elif banker_draws(banker, None):
        for third in range(10):
            add((player, (banker + third) % 10, 2, 3), left[third] * (rest - 1), (third,))
    else:
        add((player, banker, 2, 2), rest * (rest - 1), ())
    return out


def outcome_classes(
    composition: Mapping[Card, int], progress: Progress | None = None
) -> tuple[list[tuple[int, Outcome]], int]:
    """Every distinct outcome class with its integer weight, and the total weight.

    The classes are represented by real rounds (built with :func:`outcome`, so they obey
    the dealing rules); every class is distinct in what any bet can read."""
    total = sum(n for n in composition.values() if n > 0)
    if total < ROUND_CARDS:
        raise ValueError(f"a shoe of {total} cards cannot deal a full round")
    value_count = [0] * 10
    for card, n in composition.items():
        if n > 0:
            value_count[baccarat_value(card)] += n
    states = _first_four_states(composition, progress)
    # The draws depend only on the values dealt (as a multiset) and the two-card totals:
    # merge the first-four states that share them before combining with the draws.
    merged: dict[tuple[Any, ...], tuple[tuple[int, int, int, int], dict[Features, list[Any]]]] = {}
    for values, by_features in states.items():
        draw_key = (
            tuple(sorted(values)),
            (values[0] + values[2]) % 10,
            (values[1] + values[3]) % 10,
        )
        if draw_key not in merged:
            merged[draw_key] = (values, {f: list(e) for f, e in by_features.items()})
            continue
        into = merged[draw_key][1]
        for features, (weight, cards) in by_features.items():
            entry = into.get(features)
            if entry is None:
                into[features] = [weight, cards]
            else:
                entry[0] += weight
    classes: dict[tuple[MainKey, Features], list[Any]] = {}
    for index, (values, by_features) in enumerate(merged.values()):
        if progress is not None and index % 200 == 0:
            progress(0.5 + 0.3 * index / len(merged))
        draws = _draws(values, value_count, total)
        for features, (weight, cards) in by_features.items():
            for main, (draw_weight, drawn) in draws.items():
                key = (main, features)
                entry = classes.get(key)
                if entry is None:
                    classes[key] = [weight * draw_weight, cards, drawn]
                else:
                    entry[0] += weight * draw_weight
    result: list[tuple[int, Outcome]] = []
    for (main, _), (weight, cards, drawn) in classes.items():
        representative = outcome((*cards, *(_value_card(v) for v in drawn)))
        shape = (
            representative.player_total,
            representative.banker_total,
            len(representative.player_cards),
            len(representative.banker_cards),
        )
        if shape != main:  # the enumeration and the dealing rules must agree
            raise AssertionError(f"enumerated {main} but the rules deal {shape}")
        result.append((weight, representative))
    grand_total = _falling(total, ROUND_CARDS)
    if sum(w for w, _ in result) != grand_total:
        raise AssertionError("the enumeration does not cover every round exactly once")
    return result, grand_total


def _unit_stake(paytable: Paytable, bet_type: str) -> int:
    """A stake at which every pay of the bet, and a half refund, is a whole amount."""
    stake = 2
    for pay in paytable.pays(bet_type).values():
        stake = math.lcm(stake, pay.denominator)
    return stake


def analyse(
    paytable: Paytable,
    composition: Mapping[Card, int] | None = None,
    decks: int | None = None,
    bet_types: tuple[str, ...] | None = None,
    progress: Progress | None = None,
) -> RtpReport:
    """The exact RTP of every offered bet for a fresh shoe (``decks``, default the
    paytable's) or any given composition."""
    if composition is None:
        decks = decks if decks is not None else paytable.decks
        composition = shoe_composition(decks)
    else:
        decks = None
    classes, grand_total = outcome_classes(composition, progress)
    bets = bet_types if bet_types is not None else paytable.offered
    reports: dict[str, BetRtp] = {}
    for index, bet in enumerate(bets):
        if progress is not None:
            progress(0.8 + 0.2 * index / len(bets))
        stake = _unit_stake(paytable, bet)
        weights: dict[tuple[str, str, Fraction | None, int], int] = {}
        for weight, representative in classes:
            settled = settle_bet(bet, stake, representative, paytable)
            key = (settled.case, settled.result, settled.pays, settled.returned)
            weights[key] = weights.get(key, 0) + weight
        outcomes = tuple(
            OutcomeClass(
                case=case,
                result=result,
                pays=pays,
                returns=Fraction(returned, stake),
                probability=Fraction(weight, grand_total),
            )
            for (case, result, pays, returned), weight in sorted(
                weights.items(), key=lambda item: (-item[0][3], item[0][0])
            )
        )
        reports[bet] = BetRtp(bet, outcomes, paytable.closes_after(bet))
    if progress is not None:
        progress(1.0)
    cards = sum(n for n in composition.values() if n > 0)
    return RtpReport(decks=decks, cards=cards, classes=len(classes), bets=reports)


__all__ = ["BET_TYPES", "BetRtp", "OutcomeClass", "RtpReport", "analyse", "outcome_classes"]
