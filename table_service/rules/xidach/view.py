"""What the studio stream may show: the privacy flag and the banker's hole card.

The engine state always holds every card (the audit log needs them); this projection
hides what spectators must not see yet: the banker's face-down first card until the
banker reveals, and a hidden seat's cards until that hand is settled.
"""

from __future__ import annotations

from typing import Any

from table_service.rules.xidach.state import Phase, RoundState

FACE_DOWN = "XX"


def public_view(state: RoundState) -> dict[str, Any]:
    profile = state.profile
    revealed = state.banker.revealed or state.phase is Phase.SETTLED
    banker_cards = [
        c.code if (i > 0 or revealed) else FACE_DOWN for i, c in enumerate(state.banker.cards)
    ]
    hidden = {s.seat for s in state.seats if s.hidden}
    hands = []
    for h in state.hands:
        shown = h.seat not in hidden or h.result is not None
        entry: dict[str, Any] = {
            "seat": h.seat,
            "hand": h.index,
            "cards": [c.code if shown else FACE_DOWN for c in h.cards],
        }
        if shown and h.cards:
            value = h.value(profile)
            entry["classification"] = value.kind.value
            entry["total"] = value.total
        if h.result is not None:
            entry["result"] = h.result.result.value
        hands.append(entry)
    return {"phase": state.phase.value, "banker": {"cards": banker_cards}, "hands": hands}
