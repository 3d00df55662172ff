"""The result of a round, computed from its cards alone.

Every feature any bet reads (totals, naturals, pairs, first-card ranks, card counts)
is derived once here, so settlement never looks at raw cards and the RTP analysis can
settle one representative outcome per class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from table_service.rules.baccarat.dealing import (
    ExtraCards,
    IncompleteRound,
    Position,
    positions,
    round_length,
)
from table_service.rules.baccarat.points import hand_total
from table_service.rules.cards import Card

Winner = Literal["player", "banker", "tie"]
PLAYER: Winner = "player"
BANKER: Winner = "banker"
TIE: Winner = "tie"


@dataclass(frozen=True, slots=True)
class Outcome:
    """A complete round. Build it with :func:`outcome` so the drawing rules are checked."""

    player_cards: tuple[Card, ...]
    banker_cards: tuple[Card, ...]
    player_total: int = field(init=False)
    banker_total: int = field(init=False)
    winner: Winner = field(init=False)
    player_natural: bool = field(init=False)
    banker_natural: bool = field(init=False)
    player_pair: bool = field(init=False)
    banker_pair: bool = field(init=False)
    player_perfect_pair: bool = field(init=False)
    banker_perfect_pair: bool = field(init=False)

    def __post_init__(self) -> None:
        if len(self.player_cards) < 2 or len(self.banker_cards) < 2:
            raise IncompleteRound("each side needs at least two cards")
        player_total = hand_total(self.player_cards)
        banker_total = hand_total(self.banker_cards)
        if player_total > banker_total:
            winner: Winner = PLAYER
        elif banker_total > player_total:
            winner = BANKER
        else:
            winner = TIE
        p1, p2 = self.player_cards[0], self.player_cards[1]
        b1, b2 = self.banker_cards[0], self.banker_cards[1]
        values = {
            "player_total": player_total,
            "banker_total": banker_total,
            "winner": winner,
            "player_natural": len(self.player_cards) == 2 and player_total >= 8,
            "banker_natural": len(self.banker_cards) == 2 and banker_total >= 8,
            "player_pair": p1.rank == p2.rank,
            "banker_pair": b1.rank == b2.rank,
            "player_perfect_pair": p1 == p2,
            "banker_perfect_pair": b1 == b2,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def card_count(self) -> int:
        return len(self.player_cards) + len(self.banker_cards)

    @property
    def player_first_rank(self) -> int:
        return self.player_cards[0].rank

    @property
    def banker_first_rank(self) -> int:
        return self.banker_cards[0].rank

    @property
    def natural(self) -> bool:
        return self.player_natural or self.banker_natural

    @property
    def margin(self) -> int:
        """Winner total minus loser total (0 on a tie)."""
        return abs(self.player_total - self.banker_total)

    @property
    def winning_total(self) -> int | None:
        if self.winner == PLAYER:
            return self.player_total
        if self.winner == BANKER:
            return self.banker_total
        return None

    @property
    def cards(self) -> tuple[Card, ...]:
        """The round's cards back in shoe order (P1 B1 P2 B2 [P3] [B3])."""
        order = [self.player_cards[0], self.banker_cards[0]]
        order += [self.player_cards[1], self.banker_cards[1]]
        order += list(self.player_cards[2:]) + list(self.banker_cards[2:])
        return tuple(order)

    def to_json(self) -> dict[str, Any]:
        """The outcome part of a settle output line (shared/specs/settle-jsonl.md)."""
        return {
            "player": {"cards": [c.code for c in self.player_cards], "total": self.player_total},
            "banker": {"cards": [c.code for c in self.banker_cards], "total": self.banker_total},
            "winner": self.winner,
        }


def outcome(cards: Sequence[Card]) -> Outcome:
    """The outcome of a round from its cards in shoe order.

    Raises :class:`IncompleteRound` for too few cards and :class:`ExtraCards` for cards the
    rules would not take (split them off first with ``split_round``).
    """
    length = round_length(cards)
    if len(cards) > length:
        raise ExtraCards(
            f"{len(cards)} cards given but the round takes {length}; "
            "use split_round to set the extra cards aside"
        )
    player: list[Card] = []
    banker: list[Card] = []
    for card, position in zip(cards, positions(cards), strict=True):
        (player if position.side == "player" else banker).append(card)
    return Outcome(tuple(player), tuple(banker))


__all__ = ["BANKER", "PLAYER", "TIE", "Outcome", "Position", "Winner", "outcome"]
