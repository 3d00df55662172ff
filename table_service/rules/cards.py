"""Playing cards as the whole product names them.

A card is identified by its two-character code (rank then suit, ``TD`` = ten of
diamonds) everywhere: reader events, the audit log, exports and the settle/rtp
commands. Game-specific point values live in each game's module, never here,
because the same card is worth different things in different games.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from table_service.rules.refusal import RulesRefusal

RANKS = "A23456789TJQK"
SUITS = "SHDC"


class CardError(RulesRefusal):
    """A card code that does not name a card of a standard 52-card deck."""

    code = "bad_card"


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """One card; ``rank`` is 1 (Ace) … 13 (King) so rank comparisons are plain ints."""

    rank: int
    suit: str

    def __post_init__(self) -> None:
        if not 1 <= self.rank <= 13:
            raise CardError(f"rank out of range: {self.rank}")
        if self.suit not in SUITS:
            raise CardError(f"unknown suit: {self.suit!r}")

    @property
    def rank_char(self) -> str:
        return RANKS[self.rank - 1]

    @property
    def code(self) -> str:
        return f"{self.rank_char}{self.suit}"

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"Card({self.code})"


def parse_card(text: str) -> Card:
    """Parse ``AS``, ``TD``, ``10D`` (rank then suit). Raises :class:`CardError`."""
    if not isinstance(text, str):
        raise CardError(f"card code must be a string, got {type(text).__name__}")
    code = text.strip().upper()
    if len(code) == 3 and code.startswith("10"):
        code = "T" + code[2]
    if len(code) != 2:
        raise CardError(f"not a card code: {text!r}")
    rank_char, suit = code[0], code[1]
    if rank_char not in RANKS:
        raise CardError(f"unknown rank in {text!r}")
    if suit not in SUITS:
        raise CardError(f"unknown suit in {text!r}")
    return Card(RANKS.index(rank_char) + 1, suit)


def parse_cards(codes: Iterable[str]) -> tuple[Card, ...]:
    return tuple(parse_card(c) for c in codes)


def standard_deck() -> tuple[Card, ...]:
    """The 52 cards of one deck, in a fixed order (suits S H D C, ranks A..K)."""
    return tuple(Card(rank, suit) for suit in SUITS for rank in range(1, 14))


def shoe_composition(decks: int) -> Counter[Card]:
    """How many copies of each card an N-deck shoe holds."""
    if decks < 1:
        raise CardError(f"a shoe needs at least one deck, got {decks}")
    return Counter({card: decks for card in standard_deck()})
