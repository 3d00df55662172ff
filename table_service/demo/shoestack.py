"""The physical cards behind the virtual shoe: one freshly shuffled shoe after another.

A virtual shoe takes its card order once, before the first card. A studio changes shoes
by taking the old cards out and loading new ones into the same device, so the reader
stays connected. We model that by loading the device with shoe after shoe (each a seeded
shuffle of ``decks`` decks with its cut card after ``cut_after`` cards) and, at a shoe
change, pulling whatever is left of the old shoe out *without* passing the reader — which
is what the dealer does with the cards behind the cut card.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from dataclasses import dataclass

from hardware_sim.virtual_shoe import CUT, VirtualShoe
from table_service.rules.cards import standard_deck


class SupplyExhausted(RuntimeError):
    """Every prepared shoe has been used; the demo has no more cards to deal."""


@dataclass(frozen=True)
class Pull:
    card: str
    scanned: bool
    shoe_index: int


def shoe_order(rng: random.Random, decks: int, cut_after: int | None) -> list[str]:
    cards = [c.code for c in standard_deck()] * decks
    rng.shuffle(cards)
    if cut_after is not None:
        cards.insert(cut_after, CUT)
    return cards


class ShoeStack:
    def __init__(
        self, device: VirtualShoe, *, decks: int, seed: int, cut_after: int | None, shoes: int
    ) -> None:
        """``cut_after`` None: no cut card (a one-deck game deals a fresh deck each round;
        the device must then be made with ``cut_depth=0``)."""
        if cut_after is not None:
            self.check_cut_after(decks, cut_after)
        rng = random.Random(seed)
        orders = [shoe_order(rng, decks, cut_after) for _ in range(shoes)]
        self.device = device
        self.starts: list[int] = []
        total = 0
        for order in orders:
            self.starts.append(total)
            total += len(order)
        self.total = total
        self.pulled = 0
        self.cards = [card for order in orders for card in order]
        device.load(self.cards)

    @staticmethod
    def check_cut_after(decks: int, cut_after: int) -> None:
        """The cut card must come after the burn (at most 11 cards) and before the end."""
        if not 20 <= cut_after <= decks * 52 - 10:
            raise ValueError(f"cut_after must be 20..{decks * 52 - 10} cards, got {cut_after}")

    @property
    def shoe_index(self) -> int:
        """Which prepared shoe the next card comes from."""
        return bisect_right(self.starts, self.pulled) - 1

    @property
    def fresh(self) -> bool:
        """No card has left the current shoe yet."""
        return self.pulled in self.starts

    def peek(self) -> str | None:
        """The card the dealer would pull next (a dealer sees the cut card coming)."""
        return self.cards[self.pulled] if self.pulled < self.total else None

    def pull(self, *, scan: bool = True, slid: bool = True) -> Pull:
        index = self.shoe_index
        card = self.device.deal(scan=scan, slid=slid)
        if card is None:
            raise SupplyExhausted(f"all {len(self.starts)} prepared shoes are used up")
        self.pulled += 1
        return Pull(card, scan, index)

    def discard_rest(self) -> int:
        """Take the rest of the current shoe out, unscanned and unseen by a camera over the
        mouth (the rest is lifted out, not dealt); the next card starts a new shoe."""
        if self.fresh:
            return 0
        index = self.shoe_index
        if index + 1 >= len(self.starts):
            raise SupplyExhausted(f"all {len(self.starts)} prepared shoes are used up")
        end = self.starts[index + 1]
        count = 0
        while self.pulled < end:
            self.pull(scan=False, slid=False)
            count += 1
        return count
