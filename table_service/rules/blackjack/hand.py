"""Point values of blackjack hands and the dealer's drawing rule.

These few functions are the only place a card becomes blackjack points, so the
live round, the settle command and the exact RTP engine cannot disagree on a total.
Ranks are counted by *value index* ``1..10`` (Ace = 1, ten-values = 10).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from table_service.rules.cards import Card


def card_value(card: Card) -> int:
    """Blackjack value with the Ace as 1 (J, Q, K count 10)."""
    return min(card.rank, 10)


@dataclass(frozen=True, slots=True)
class Total:
    """A hand's best total; ``soft`` while an Ace is counted as 11."""

    points: int
    soft: bool

    @property
    def bust(self) -> bool:
        return self.points > 21


def total_of_values(values: Iterable[int]) -> Total:
    """Best total of card values (Ace = 1): one Ace counts 11 when that does not bust."""
    hard = 0
    has_ace = False
    for value in values:
        hard += value
        has_ace = has_ace or value == 1
    if has_ace and hard + 10 <= 21:
        return Total(hard + 10, True)
    return Total(hard, False)


def hand_total(cards: Iterable[Card]) -> Total:
    return total_of_values(card_value(c) for c in cards)


def is_natural_values(values: tuple[int, ...]) -> bool:
    """Two cards, an Ace and a ten-value (whether it counts as blackjack depends on splits)."""
    return len(values) == 2 and sorted(values) == [1, 10]


def dealer_must_hit(total: Total, hits_soft_17: bool) -> bool:
    """Dealer draws to 16 and stands on 17 or more; soft 17 too unless the table hits it."""
    if total.points < 17:
        return True
    return hits_soft_17 and total.points == 17 and total.soft


def auto_play_hits(total: Total, threshold: int) -> bool:
    """The no-decision rule: hit while the total (an Ace counted 11 when it fits) is <= 11.

    Counting the best total means a soft hand is never hit, and a hard total of 11
    or less cannot bust on one card, so the automatic play never busts a hand.
    """
    return total.points <= threshold
