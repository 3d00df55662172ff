"""Which position the next card leaving the shoe belongs to.

The dealer console, the live table and the settle command all need the same answer
to "where does this card go, or is the round complete?", so it is computed here, from
the cards alone, by the drawing rules of rules/baccarat.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from table_service.rules.baccarat.points import baccarat_value, hand_total
from table_service.rules.cards import Card
from table_service.rules.refusal import RulesRefusal


class Position(StrEnum):
    """A place on the layout; the value is the code shown on the consoles."""

    P1 = "P1"
    B1 = "B1"
    P2 = "P2"
    B2 = "B2"
    P3 = "P3"
    B3 = "B3"

    @property
    def side(self) -> str:
        return "player" if self.value[0] == "P" else "banker"


_INITIAL = (Position.P1, Position.B1, Position.P2, Position.B2)
MIN_ROUND_CARDS = 4
MAX_ROUND_CARDS = 6


class IncompleteRound(RulesRefusal):
    """Fewer cards than the drawing rules need to finish the round."""

    code = "incomplete_round"


class ExtraCards(RulesRefusal):
    """More cards than the drawing rules take (split them off first with ``split_round``)."""

    code = "extra_cards"


def is_natural(two_card_total: int) -> bool:
    return two_card_total >= 8


def player_draws(player_total: int) -> bool:
    """Player draws on 0–5 and stands on 6–7 (naturals are checked before this)."""
    return player_total <= 5


# Banker total -> the player's third-card values on which the Banker draws.
_BANKER_DRAWS_ON: dict[int, frozenset[int]] = {
    0: frozenset(range(10)),
    1: frozenset(range(10)),
    2: frozenset(range(10)),
    3: frozenset(range(10)) - {8},
    4: frozenset(range(2, 8)),
    5: frozenset(range(4, 8)),
    6: frozenset({6, 7}),
    7: frozenset(),
}


def banker_draws(banker_total: int, player_third_value: int | None) -> bool:
    """The Banker's third-card rule; ``None`` means the Player stood on two cards."""
    if player_third_value is None:
        return banker_total <= 5
    return player_third_value in _BANKER_DRAWS_ON.get(banker_total, frozenset())


def next_position(cards: Sequence[Card]) -> Position | None:
    """The position the next card takes, given the round's cards so far in shoe order.

    ``None`` means the round is complete: any further card is not part of it
    (rules/baccarat.md, incident 3: it becomes the first card of the next round).
    """
    count = len(cards)
    if count < MIN_ROUND_CARDS:
        return _INITIAL[count]
    player = hand_total((cards[0], cards[2]))
    banker = hand_total((cards[1], cards[3]))
    if is_natural(player) or is_natural(banker):
        return None
    if player_draws(player):
        if count == 4:
            return Position.P3
        if count == 5 and banker_draws(banker, baccarat_value(cards[4])):
            return Position.B3
        return None
    if count == 4 and banker_draws(banker, None):
        return Position.B3
    return None


def round_length(cards: Sequence[Card]) -> int:
    """How many cards the round takes (4–6). Raises :class:`IncompleteRound` if the
    cards given do not yet decide it."""
    for count in range(MIN_ROUND_CARDS, MAX_ROUND_CARDS + 1):
        if count > len(cards):
            raise IncompleteRound(f"{len(cards)} card(s) given; the round needs at least {count}")
        if next_position(cards[:count]) is None:
            return count
    raise AssertionError("a baccarat round never takes more than six cards")


def split_round(cards: Sequence[Card]) -> tuple[tuple[Card, ...], tuple[Card, ...]]:
    """Split cards in shoe order into (cards of the round, cards the rules did not take)."""
    length = round_length(cards)
    return tuple(cards[:length]), tuple(cards[length:])


def positions(cards: Sequence[Card]) -> tuple[Position, ...]:
    """The position of each card of a round (or of its beginning), in shoe order."""
    taken: list[Position] = []
    for index in range(len(cards)):
        position = next_position(cards[:index])
        if position is None:
            break
        taken.append(position)
    return tuple(taken)
