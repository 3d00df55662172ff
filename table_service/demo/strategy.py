"""Basic strategy for the demo's blackjack players: what a careful player does.

The table deals European style (no hole card: the dealer's second card comes after the
players have played), the dealer stands on soft 17 and a dealer blackjack takes only the
original bet (seed 000's rules), so the chart is the one for those rules: double 11
against anything, never insure, split Aces and eights always, surrender a hard 16
against a 9 (the table offers surrender only against 2–9) and a hard 15 against a 10
where it is offered. A bot following it alone holds the house to about half a percent;
the demo's players deviate now and then (a person's hunch) and sometimes let the timer
run out, as people do.

Pure functions: the seat bots pass the cards they see and the moves the table offers.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

TEN = 10


def rank_value(code: str) -> int:
    """A card's blackjack value, an Ace as 11 (``"AS"`` → 11, ``"KD"`` → 10)."""
    rank = code[:-1]
    if rank == "A":
        return 11
    if rank in ("T", "J", "Q", "K", "10"):
        return TEN
    return int(rank)


def hand_value(cards: Sequence[str]) -> tuple[int, bool]:
    """The best total and whether it is soft (an Ace still counted as 11)."""
    total = sum(rank_value(c) for c in cards)
    aces = sum(1 for c in cards if c[:-1] == "A")
    while total > 21 and aces:
        total -= 10
        aces -= 1
    return total, aces > 0


def _pair_splits(pair: int, up: int) -> bool:
    if pair in (11, 8):
        return True
    if pair in (2, 3, 7):
        return up <= 7
    if pair == 6:
        return up <= 6
    if pair == 4:
        return up in (5, 6)
    if pair == 9:
        return up in (2, 3, 4, 5, 6, 8, 9)
    return False  # tens and fives are played as totals


def _soft(total: int, up: int) -> str:
    """``double``, ``hit``, ``stand``, or ``double|stand`` (double, else stand)."""
    if total >= 19:
        return "stand"
    if total == 18:
        if 3 <= up <= 6:
            return "double|stand"
        return "stand" if up in (2, 7, 8) else "hit"
    if total == 17:
        return "double" if 3 <= up <= 6 else "hit"
    if total in (15, 16):
        return "double" if 4 <= up <= 6 else "hit"
    return "double" if up in (5, 6) else "hit"


def _hard(total: int, up: int) -> str:
    if total >= 17:
        return "stand"
    if total >= 13:
        return "stand" if up <= 6 else "hit"
    if total == 12:
        return "stand" if 4 <= up <= 6 else "hit"
    if total == 11:
        return "double"
    if total == 10:
        return "double" if up <= 9 else "hit"
    if total == 9:
        return "double" if 3 <= up <= 6 else "hit"
    return "hit"


def basic_move(cards: Sequence[str], dealer_up: str, legal: Collection[str]) -> str | None:
    """The basic-strategy move among ``legal`` for a hand against the dealer's up card
    (None when nothing is legal). Insurance is never taken."""
    moves = set(legal) - {"insurance"}
    if not moves:
        return None
    up = rank_value(dealer_up)
    total, soft = hand_value(cards)
    two = len(cards) == 2
    pair = two and rank_value(cards[0]) == rank_value(cards[1])
    if pair and "split" in moves and _pair_splits(rank_value(cards[0]), up):
        return "split"
    weak = (total == 16 and up >= 9) or (total == 15 and up == TEN)
    if two and "surrender" in moves and not soft and weak:
        return "surrender"
    choice = _soft(total, up) if soft else _hard(total, up)
    for wish in choice.split("|"):
        if wish == "double" and "double" not in moves:
            continue
        if wish in moves:
            return wish
    if choice.startswith("double"):
        fallback = "stand" if choice.endswith("stand") else "hit"
        if fallback in moves:
            return fallback
    for wish in ("hit", "stand"):
        if wish in moves:
            return wish
    return sorted(moves)[0]


def deviation(move: str | None, legal: Collection[str], total: int) -> str | None:
    """A person's hunch: the other of hit and stand on a middling total (never a double
    on 17 nor a surrender of 20, which no player does)."""
    if move == "stand" and total <= 16 and "hit" in legal:
        return "hit"
    if move == "hit" and 12 <= total <= 16 and "stand" in legal:
        return "stand"
    return move
