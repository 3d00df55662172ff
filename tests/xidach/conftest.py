"""Helpers for the Xì Dách tests: build rounds through the real engine and replay path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from table_service.rules.cards import parse_cards
from table_service.rules.xidach.actions import Deal
from table_service.rules.xidach.engine import apply, new_round
from table_service.rules.xidach.profile import load_profile
from table_service.rules.xidach.replay import handle_line
from table_service.rules.xidach.state import RoundState, SeatBet


@pytest.fixture
def play() -> Callable[..., dict[str, Any]]:
    """Settle one round through the settle command's code and return its output line."""

    def _play(
        profile: str,
        cards: Sequence[str],
        decisions: Sequence[dict[str, Any]] = (),
        stakes: Sequence[int] = (1000,),
        **extra: Any,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "round": "t",
            "profile": profile,
            "cards": list(cards),
            "seats": [{"seat": i + 1, "stake": s} for i, s in enumerate(stakes)],
            "decisions": list(decisions),
            **extra,
        }
        return handle_line(request, None)

    return _play


@pytest.fixture
def dealt() -> Callable[..., RoundState]:
    """A round of ``profile`` with the given cards dealt through the engine."""

    def _dealt(
        profile: str, cards: Sequence[str], stakes: Sequence[int] = (1000,), **kwargs: Any
    ) -> RoundState:
        bets = [SeatBet(i + 1, s) for i, s in enumerate(stakes)]
        state = new_round(load_profile(profile), bets, **kwargs)
        for card in parse_cards(cards):
            state = apply(state, Deal(card))
        return state

    return _dealt
