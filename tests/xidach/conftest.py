"""Helpers for the Xì Dách tests: build rounds through the real engine and replay path."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from table_service.rules.cards import parse_cards
from table_service.rules.xidach.actions import Deal
from table_service.rules.xidach.engine import apply, new_round
from table_service.rules.xidach.policy import HouseStep, house_step
from table_service.rules.xidach.profile import Profile, load_profile, profile_from_dict
from table_service.rules.xidach.replay import handle_line
from table_service.rules.xidach.state import Hand, HandResult, RoundState, SeatBet, TableLimits
from table_service.rules.xidach.timers import Clock, clock

PROFILES_DIR = Path(__file__).parents[2] / "table_service/rules/xidach/profiles"
# A seated banker for profile variants: the banker's own rules (stand at 15, checks) are
# choices only a seated banker makes; the house follows its published policy.
SEATED = {"seat": 9, "balance": 1_000_000}
TABLE = {"min_bet": 100, "max_bet": 10_000}
SEATED_KW: dict[str, Any] = {
    "banker_seat": 9,
    "banker_balance": 1_000_000,
    "limits": TableLimits(100, 10_000),
}


def profile_data(name: str) -> dict[str, Any]:
    return tomllib.loads((PROFILES_DIR / f"{name}.toml").read_text("utf-8"))


def seated_variant(name: str, **banker: Any) -> Profile:
    """A shipped profile that also allows a seated banker (same name, same rules)."""
    data = profile_data(name)
    data["banker_modes"] = ["house", "seated"]
    data["banker"].update(banker)
    return profile_from_dict(data)


def _profile(profile: str | Profile) -> Profile:
    return profile if isinstance(profile, Profile) else load_profile(profile)


@pytest.fixture
def play() -> Callable[..., dict[str, Any]]:
    """Settle one round through the settle command's code and return its output line."""

    def _play(
        profile: str | Profile,
        cards: Sequence[str],
        decisions: Sequence[dict[str, Any]] = (),
        stakes: Sequence[int] = (1000,),
        **extra: Any,
    ) -> dict[str, Any]:
        chosen = _profile(profile)
        if (
            chosen.banker_modes == {"house", "seated"}
            and "seated" not in load_profile(chosen.name).banker_modes
        ):
            extra = {"banker": SEATED, "table": TABLE, **extra}
        request: dict[str, Any] = {
            "round": "t",
            "profile": chosen.name,
            "cards": list(cards),
            "seats": [{"seat": i + 1, "stake": s} for i, s in enumerate(stakes)],
            "decisions": list(decisions),
            **extra,
        }
        return handle_line(request, chosen)

    return _play


@pytest.fixture
def dealt() -> Callable[..., RoundState]:
    """A round of ``profile`` with the given cards dealt through the engine."""

    def _dealt(
        profile: str | Profile,
        cards: Sequence[str],
        stakes: Sequence[int] = (1000,),
        **kwargs: Any,
    ) -> RoundState:
        chosen = _profile(profile)
        if (
            chosen.banker_modes == {"house", "seated"}
            and "seated" not in load_profile(chosen.name).banker_modes
        ):
            kwargs = {**SEATED_KW, **kwargs}
        bets = [SeatBet(i + 1, s) for i, s in enumerate(stakes)]
        state = new_round(chosen, bets, **kwargs)
        for card in parse_cards(cards):
            state = apply(state, Deal(card))
        return state

    return _dealt


def running_clock(state: RoundState) -> Clock:
    """The timer that runs now: a test that reads it expects one (a decision is awaited)."""
    running = clock(state)
    assert running is not None, "no timer runs: a card is owed or the round is over"
    return running


def house_move(state: RoundState) -> HouseStep:
    """The house banker's next move: a test that reads it expects one."""
    step = house_step(state)
    assert step is not None, "the house banker has no move now"
    return step


def result_of(hand: Hand) -> HandResult:
    """A settled hand's result: a test that reads it expects the hand settled."""
    assert hand.result is not None, "the hand has no result yet"
    return hand.result
