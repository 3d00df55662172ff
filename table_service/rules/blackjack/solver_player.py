"""The exact solver as a seated player: drives the live round code with best play.

This closes the loop between the RTP figure and the code that settles live bets:
rounds played through ``round_state.apply`` with these decisions and settled by
``settlement.settle`` must average to the exact expectation (checked by a full
game-tree walk and a Monte-Carlo run in the tests and the benchmark).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from table_service.rules.blackjack.exact import ExactSolver
from table_service.rules.blackjack.hand import card_value
from table_service.rules.blackjack.round_state import (
    Deal,
    Decision,
    Move,
    RoundState,
    SeatBet,
    apply,
    legal_actions,
    new_round,
    next_card_target,
)
from table_service.rules.blackjack.settlement import settle
from table_service.rules.cards import Card

NOT_PLAYED = {Move.INSURANCE, Move.NO_DECISION}


def best_decision(solver: ExactSolver, state: RoundState) -> Decision:
    """The solver's move for the hand to act (never insurance, never a timeout)."""
    options = [a for a in legal_actions(state) if isinstance(a, Decision)]
    if not options:
        raise ValueError("no player decision is awaited")
    seat = state.seat(options[0].seat)
    hand = seat.hands[options[0].hand - 1]
    split_pair = hand.values[0] if seat.split else None
    allowed = {a.move.value for a in options if a.move not in NOT_PLAYED}
    values = solver.move_values(card_value(state.dealer[0]), hand.values, split_pair, allowed)
    move = max(values, key=lambda k: values[k])
    return Decision(options[0].seat, options[0].hand, Move(move))


def value_card(value: int) -> Card:
    """A card of the given value (ten-values as T); suits do not matter to the main bet."""
    return Card(value, "S")


def play_single_seat(solver: ExactSolver, cards: Sequence[Card], stake: int = 1000) -> int:
    """Play one seat with best play on ``cards`` (shoe order); net result in minor units."""
    state = new_round(solver.rules, [SeatBet(1, "main", stake)])
    position = 0
    while (target := next_card_target(state)) is not None or state.phase.value != "complete":
        if target is not None:
            state = apply(state, Deal(cards[position]))
            position += 1
        else:
            state = apply(state, best_decision(solver, state))
    return sum(b.returned - b.stake for b in settle(state).bets)


def shuffled_shoe(counts: Sequence[int], rng: random.Random) -> list[Card]:
    cards = [value_card(v + 1) for v, n in enumerate(counts) for _ in range(n)]
    rng.shuffle(cards)
    return cards
