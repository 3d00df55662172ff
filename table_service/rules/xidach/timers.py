"""Decision timers as data: which clock runs now, for whom, and what its expiry plays.

The engine has no clock; the table records each deadline it starts (so a timer
survives a restart) and, when one expires, applies ``on_expiry``. A shared timer
(``room``: one 30 s timer for all punters together) keeps its ``key`` while the turn
passes from punter to punter, so the table does not restart it; a per-punter timer
(``forced-draw``: 15 s) gets a new key for every turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from table_service.rules.xidach.actions import BANKER, Action, Actor, NoDecision
from table_service.rules.xidach.engine import awaiting, hand_done
from table_service.rules.xidach.state import Phase, RoundState


@dataclass(frozen=True, slots=True)
class Clock:
    key: str  # the same key: the same running timer
    seconds: int
    actors: tuple[Actor, ...]  # whose decisions it covers
    on_expiry: tuple[Action, ...]  # the automatic play, applied in this order


def clock(state: RoundState) -> Clock | None:
    """The timer that runs now, or None (a card is owed, or the round is over)."""
    actor = awaiting(state)
    if actor is None:
        return None
    profile = state.profile
    if actor == BANKER:
        return Clock("banker", profile.banker.timer_s, (BANKER,), (NoDecision(BANKER),))
    if profile.punter.timer_scope == "all_punters":
        open_hands = tuple(h.ref for h in state.hands if not hand_done(h, profile))
        return Clock(
            "punters",
            profile.punter.timer_s,
            open_hands,
            tuple(NoDecision(r) for r in open_hands),
        )
    assert state.phase is Phase.PUNTERS and state.turn is not None
    hand = state.hands[state.turn]
    key = f"seat{hand.seat}.hand{hand.index}.card{len(hand.cards)}"
    return Clock(key, profile.punter.timer_s, (actor,), (NoDecision(actor),))
