"""Helpers for the blackjack tests: build rounds from card codes and decisions."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from table_service.rules.blackjack.config import BlackjackRules
from table_service.rules.blackjack.round_state import (
    BehindBet,
    Deal,
    Decision,
    Move,
    RoundState,
    SeatBet,
    SideBet,
    apply,
    new_round,
)
from table_service.rules.cards import parse_card


class Table:
    """Terse round building: ``t.start([1, 3]).deal("8S 9H 6D 8D 2C")``."""

    def __init__(self, rules: BlackjackRules | None = None) -> None:
        self.rules = rules or BlackjackRules()

    def start(
        self,
        seats: Iterable[int] = (1,),
        stake: int = 1000,
        pairs: Iterable[SideBet] = (),
        behind: Iterable[BehindBet] = (),
    ) -> RoundState:
        mains = [SeatBet(n, f"m{n}", stake) for n in seats]
        return new_round(self.rules, mains, pairs, behind)

    @staticmethod
    def deal(state: RoundState, codes: str) -> RoundState:
        for code in codes.split():
            state = apply(state, Deal(parse_card(code)))
        return state

    @staticmethod
    def do(state: RoundState, seat: int, hand: int, move: str) -> RoundState:
        return apply(state, Decision(seat, hand, Move(move)))


@pytest.fixture
def table() -> Table:
    return Table()


@pytest.fixture
def make_table() -> type[Table]:
    """A table with other rules: ``make_table(BlackjackRules(...))``."""
    return Table
