"""Who holds a seated bank: the bankroll requirement and the clockwise rotation.

These are table-level rules between rounds (the round engine only checks that the
banker of a starting round still qualifies), kept pure so the table service and the
tests use the same code.
"""

from __future__ import annotations

from collections.abc import Sequence

from table_service.rules.xidach.errors import BankrollError
from table_service.rules.xidach.profile import Profile
from table_service.rules.xidach.state import TableLimits


def bank_requirement(profile: Profile, limits: TableLimits) -> int:
    """The balance needed to take the bank (seed 001: 5× the room's maximum bet)."""
    return profile.seated_banker.bankroll_multiple_of_max_bet * limits.max_bet


def can_take_bank(profile: Profile, limits: TableLimits, balance: int) -> bool:
    return "seated" in profile.banker_modes and balance >= bank_requirement(profile, limits)


def keeps_bank(profile: Profile, limits: TableLimits, balance: int) -> bool:
    """A banker keeps the bank until their balance falls below the minimum bet."""
    if not profile.seated_banker.keep_while_at_least_min_bet:
        return can_take_bank(profile, limits, balance)
    return balance >= limits.min_bet


def take_bank(profile: Profile, limits: TableLimits, balance: int) -> None:
    """Refuse, with the reason, a player who may not take the bank."""
    if "seated" not in profile.banker_modes:
        raise BankrollError(f"profile {profile.name} has no seated banker; the house banks")
    need = bank_requirement(profile, limits)
    if balance < need:
        raise BankrollError(
            f"taking the bank needs {need} ({profile.seated_banker.bankroll_multiple_of_max_bet}× "
            f"the maximum bet {limits.max_bet}); balance is {balance}"
        )


def next_banker(
    profile: Profile,
    limits: TableLimits,
    players: Sequence[tuple[int, int]],
    after_seat: int,
) -> int | None:
    """The seat that takes the bank after ``after_seat`` leaves or loses it.

    ``players`` are (seat, balance) of those still at the table; the bank passes
    clockwise to the first who qualifies. None: nobody qualifies, the room closes.
    """
    seats = sorted(players)
    ordered = [p for p in seats if p[0] > after_seat] + [p for p in seats if p[0] < after_seat]
    for seat, balance in ordered:
        if can_take_bank(profile, limits, balance):
            return seat
    return None
