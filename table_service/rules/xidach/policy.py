"""The automatic policies: a punter's timeout play and the house banker's published policy.

Pure functions of the hand (or the round state), shared by the engine (which enforces
them), the dealer console (which shows the house's next move), the Monte-Carlo run and
the exact house edge, so the policy a studio publishes is the policy every figure uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from table_service.rules.xidach.actions import BANKER, Check, Hit, Stand
from table_service.rules.xidach.errors import (
    ForcedStandError,
    HitOn21Error,
    MaxCardsError,
    XiDachError,
)
from table_service.rules.xidach.hands import HandValue, Outcome, compare
from table_service.rules.xidach.profile import Profile
from table_service.rules.xidach.state import Basis, Phase, RoundState

StepKind = Literal["draw", "stand", "check", "check_all"]


def hit_refusal(
    n_cards: int, total: int, profile: Profile, must_stand_from: int
) -> XiDachError | None:
    """Why a hand may not take a card now, or None if it may (punter or banker)."""
    if n_cards >= profile.max_cards:
        return MaxCardsError(f"a hand holds at most {profile.max_cards} cards")
    if total == 21 and not profile.hit_on_21:
        return HitOn21Error(f"profile {profile.name} refuses a hit on 21")
    if total >= must_stand_from:
        return ForcedStandError(f"total {total}: must stand from {must_stand_from}")
    return None


def punter_auto_draws(n_cards: int, total: int, profile: Profile) -> bool:
    """The timeout play: hit until the profile's total, within the forced rules."""
    rules = profile.punter
    return total < rules.auto_stand_at and (
        hit_refusal(n_cards, total, profile, rules.must_stand_from) is None
    )


def house_draws(n_cards: int, total: int, profile: Profile) -> bool:
    """The house banker draws while under ``house_policy.draw_below`` (and a card may come)."""
    return total < profile.house_policy.draw_below and (
        hit_refusal(n_cards, total, profile, profile.banker.must_stand_from) is None
    )


def house_checks(
    banker: HandValue, punter: HandValue, n_banker_cards: int, profile: Profile
) -> bool:
    """Whether the policy checks a punter hand before drawing on (``check_before_draw``)."""
    policy = profile.house_policy
    return (
        policy.check_before_draw == "beaten"
        and profile.banker.check_from <= banker.total
        and house_draws(n_banker_cards, banker.total, profile)
        and compare(punter, banker, profile) is Outcome.LOSE
    )


@dataclass(frozen=True, slots=True)
class HouseStep:
    """The one move the house banker must make now, as the console shows it."""

    kind: StepKind
    seat: int | None = None  # the seat to check (kind "check")
    total: int = 0  # the banker's total it was decided on

    @property
    def action(self) -> Hit | Stand | Check:
        if self.kind == "draw":
            return Hit(BANKER)
        if self.kind == "stand":
            return Stand(BANKER)
        return Check(self.seat if self.kind == "check" else None)

    @property
    def text(self) -> str:
        if self.kind == "check":
            return f"check seat {self.seat}"
        return {"draw": "draw", "stand": "stand", "check_all": "check all"}[self.kind]


def house_step(state: RoundState) -> HouseStep | None:
    """The house banker's next move under the published policy.

    None when the banker is seated (a player decides) or no banker decision is awaited.
    """
    if state.banker.seated or state.phase is not Phase.BANKER or state.queue:
        return None
    profile = state.profile
    value = state.banker.value(profile)
    n = len(state.banker.cards)
    checked = any(h.result is not None and h.result.basis is Basis.CHECK for h in state.hands)
    may_draw = not checked or profile.banker.draw_after_check
    if may_draw and house_draws(n, value.total, profile):
        for seat in state.seats:
            open_hands = [h for h in state.hands if h.seat == seat.seat and h.result is None]
            if open_hands and all(
                house_checks(value, h.value(profile), n, profile) for h in open_hands
            ):
                return HouseStep("check", seat.seat, value.total)
        return HouseStep("draw", None, value.total)
    if profile.house_policy.then == "check_all" and value.total >= profile.banker.check_from:
        return HouseStep("check_all", None, value.total)
    return HouseStep("stand", None, value.total)
