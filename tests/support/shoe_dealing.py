"""The dealer's hand on a virtual shoe: the next card, once the shoe releases it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hardware_sim.virtual_shoe import ShoeLockedError, VirtualShoe


def deal_unlocked(
    shoe: VirtualShoe, wait_for: Callable[[Callable[[], Any]], Any], **deal: Any
) -> str | None:
    """Deal the next card as soon as the shoe releases it (its deal light on).

    Closing betting unlocks the shoe, but the table's commands reach it over the serial
    link a moment later, and the LCK of a window opened just before may arrive first: a
    test that looked at the shoe's lock before dealing could see it still unlocked from
    the last round and then be refused. A refused deal releases nothing, so it is tried
    again until the shoe deals (within the caller's bound)."""
    dealt: list[str | None] = []

    def attempt() -> bool:
        try:
            dealt.append(shoe.deal(**deal))
        except ShoeLockedError:
            return False
        return True

    wait_for(attempt)
    return dealt[0]
