"""Baccarat point values.

Kept apart from the generic card codes because the same card is worth different
things in different games: here 10/J/Q/K count 0 and a hand keeps only its last digit.
"""

from __future__ import annotations

from collections.abc import Iterable

from table_service.rules.cards import Card


def baccarat_value(card: Card) -> int:
    """A = 1, 2–9 face value, 10/J/Q/K = 0 (rules/baccarat.md, "Cards and points")."""
    return card.rank if card.rank < 10 else 0


def hand_total(cards: Iterable[Card]) -> int:
    """The hand's total: the sum of the point values modulo 10."""
    return sum(baccarat_value(card) for card in cards) % 10
