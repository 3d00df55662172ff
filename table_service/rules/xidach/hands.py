"""Hand values: points, the profile's Ace rule, classification and the ranking.

Why a rank *key*: every comparison in the game (punter against banker, a check, the
showdown) is "who ranks higher under this profile", so the profile's ranking is folded
into one sortable tuple per hand. Comparing keys is then a total preorder by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from functools import lru_cache

from table_service.rules.cards import Card
from table_service.rules.xidach.profile import AceRule, Profile


class Kind(StrEnum):
    XI_BANG = "xi_bang"  # two Aces dealt
    XI_DACH = "xi_dach"  # Ace + ten-value dealt
    NGU_LINH = "ngu_linh"  # five cards, 21 or less
    DU_TUOI = "du_tuoi"  # 16–21
    NON = "non"  # under 16
    QUAC = "quac"  # over 21 (bust)


class Outcome(StrEnum):
    WIN = "win"
    LOSE = "lose"
    PUSH = "push"


NATURALS = frozenset({Kind.XI_BANG, Kind.XI_DACH})


@dataclass(frozen=True, slots=True)
class HandValue:
    kind: Kind
    total: int

    @property
    def is_natural(self) -> bool:
        return self.kind in NATURALS


def card_points(card: Card) -> int:
    """Points with the Ace at its base value 1; J, Q, K count 10."""
    return min(card.rank, 10)


def hand_total(cards: Sequence[Card], ace: AceRule) -> int:
    """The best total: the highest not over 21, or the lowest if every choice busts."""
    aces = sum(1 for c in cards if c.rank == 1)
    base = sum(card_points(c) for c in cards)
    return _best_total(base, aces, ace.values_for(len(cards)))


@lru_cache(maxsize=4096)
def _best_total(base: int, aces: int, values: tuple[int, ...]) -> int:
    if aces == 0:
        return base
    extras = {0}
    for _ in range(aces):  # each Ace chooses its own value
        extras = {e + v - 1 for e in extras for v in values}
    totals = sorted(base + e for e in extras)
    fitting = [t for t in totals if t <= 21]
    return fitting[-1] if fitting else totals[0]


def is_pair_natural(cards: Sequence[Card]) -> Kind | None:
    """Xì Bàng / Xì Dách from the first two cards, regardless of profile."""
    if len(cards) != 2:
        return None
    a, b = cards
    if a.rank == 1 and b.rank == 1:
        return Kind.XI_BANG
    if (a.rank == 1 and b.rank >= 10) or (b.rank == 1 and a.rank >= 10):
        return Kind.XI_DACH
    return None


def classify(
    cards: Sequence[Card], profile: Profile, *, natural_eligible: bool = True
) -> HandValue:
    """Classify a hand; hands made by a split are not eligible for the naturals."""
    ace = profile.ace
    return _classify(tuple(cards), natural_eligible, ace.values, ace.flexible_up_to_cards)


@lru_cache(maxsize=1 << 16)
def _classify(
    cards: tuple[Card, ...], natural_eligible: bool, values: tuple[int, ...], flexible_up_to: int
) -> HandValue:
    total = hand_total(cards, AceRule(values, flexible_up_to))
    if natural_eligible:
        natural = is_pair_natural(cards)
        if natural is not None:
            return HandValue(natural, total)
    if total > 21:
        return HandValue(Kind.QUAC, total)
    if len(cards) == 5:
        return HandValue(Kind.NGU_LINH, total)
    if total >= 16:
        return HandValue(Kind.DU_TUOI, total)
    return HandValue(Kind.NON, total)


def rank_key(value: HandValue, profile: Profile) -> tuple[int, int]:
    """Sortable strength of a hand under the profile's ranking (higher is stronger)."""
    kind = value.kind
    if kind is Kind.XI_BANG:
        return (7, 0)
    if kind is Kind.XI_DACH:
        return (6, 0)
    if kind is Kind.NGU_LINH:
        return (5, -value.total)  # two Ngũ Linh: the lower total wins
    if kind is Kind.DU_TUOI:
        return (4, value.total)
    if kind is Kind.QUAC:
        return (2, 0)
    # under 16, by total; where it sits against a bust is the profile's choice
    return (3, value.total) if profile.ranking.under_16 == "above_bust" else (1, value.total)


def compare(punter: HandValue, banker: HandValue, profile: Profile) -> Outcome:
    """The punter's result against the banker under the profile's ranking."""
    if punter.kind is Kind.QUAC and banker.kind is Kind.QUAC:
        return Outcome.PUSH if profile.ranking.bust_vs_bust == "push" else Outcome.LOSE
    p, b = rank_key(punter, profile), rank_key(banker, profile)
    if p > b:
        return Outcome.WIN
    if p < b:
        return Outcome.LOSE
    return Outcome.PUSH


def win_rate(value: HandValue, profile: Profile) -> Fraction:
    """Winnings per unit staked when ``value`` wins (before any commission)."""
    if value.is_natural:
        return profile.payouts.natural
    if value.kind is Kind.NGU_LINH:
        return profile.payouts.ngu_linh
    return profile.payouts.win
