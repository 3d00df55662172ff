"""What each audience may see of a round: spectators (the studio stream) and the dealer.

The engine state always holds every card (the audit log needs them). The public view
hides what spectators must not see yet: the banker's face-down card until the banker
reveals, a hidden seat's cards (``forced-draw`` privacy flag) until that hand is
settled, and the result of a hand compared with the banker's two cards while one of
them is still face down (a punter natural's win or push would tell the hole card).
The dealer view shows everything, with the one move the house banker must make.
"""

from __future__ import annotations

from typing import Any, Literal

from table_service.rules.xidach.policy import house_step
from table_service.rules.xidach.state import Basis, Phase, RoundState

FACE_DOWN = "XX"
Audience = Literal["public", "dealer"]


def banker_hidden(state: RoundState) -> bool:
    """Whether a banker card is still face down to spectators."""
    dealt_down = min(len(state.banker.cards), state.profile.banker_face_down)
    return dealt_down > 0 and not state.banker.revealed and state.phase is not Phase.SETTLED


def view(state: RoundState, audience: Audience = "public") -> dict[str, Any]:
    profile = state.profile
    public = audience == "public"
    hide_banker = public and banker_hidden(state)
    face_down = profile.banker_face_down
    banker: dict[str, Any] = {
        "seat": state.banker.seat if state.banker.seated else "house",
        "cards": [
            FACE_DOWN if hide_banker and i < face_down else c.code
            for i, c in enumerate(state.banker.cards)
        ],
    }
    if not hide_banker and len(state.banker.cards) >= 2:
        value = state.banker.value(profile)
        banker["classification"] = value.kind.value
        banker["total"] = value.total
    hidden = {s.seat for s in state.seats if s.hidden}
    hands = []
    for h in state.hands:
        shown = not public or h.seat not in hidden or h.result is not None
        entry: dict[str, Any] = {
            "seat": h.seat,
            "hand": h.index,
            "cards": [c.code if shown else FACE_DOWN for c in h.cards],
        }
        if shown and h.cards:
            value = h.value(profile)
            entry["classification"] = value.kind.value
            entry["total"] = value.total
        if h.result is not None and not (hide_banker and h.result.basis is Basis.NATURAL):
            entry["result"] = h.result.result.value
            entry["settled_by"] = h.result.basis.value
        hands.append(entry)
    out: dict[str, Any] = {"phase": state.phase.value, "banker": banker, "hands": hands}
    if not public:
        step = house_step(state)
        out["house_move"] = step.text if step is not None else None
        out["hidden_seats"] = sorted(hidden)
    return out


def public_view(state: RoundState) -> dict[str, Any]:
    return view(state, "public")
