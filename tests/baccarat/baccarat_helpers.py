"""Shared builders for the baccarat tests: rounds from card codes or point values."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from table_service.rules.baccarat import Outcome, next_position, outcome
from table_service.rules.cards import Card, parse_cards

SUITS = "SHDC"


def deal(codes: str) -> Outcome:
    """An outcome from space-separated card codes in shoe order (all must be used)."""
    return outcome(parse_cards(codes.split()))


def value_card(value: int, suit_index: int = 0) -> Card:
    """A card worth ``value`` points (0 -> a ten)."""
    return Card(value if value else 10, SUITS[suit_index % 4])


def value_rounds(cards: tuple[Card, ...] = ()) -> Iterator[Outcome]:
    """Every round by point values, lazily (suits rotate, so no two cards are identical)."""
    if next_position(cards) is None:
        yield outcome(cards)
        return
    for value in range(10):
        yield from value_rounds((*cards, value_card(value, len(cards))))


def find_round(predicate: Callable[[Outcome], bool]) -> Outcome:
    """The first round by point values that satisfies ``predicate``."""
    for candidate in value_rounds():
        if predicate(candidate):
            return candidate
    raise LookupError("no round satisfies the predicate")


def codes(cards: Sequence[Card]) -> list[str]:
    return [card.code for card in cards]
