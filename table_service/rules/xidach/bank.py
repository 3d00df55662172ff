"""Who holds a seated bank: the bankroll requirement and who it passes to.

These are table-level rules between rounds (the round engine only checks that the
banker of a starting round still qualifies), kept pure so the table service and the
tests use the same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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


def succession(
    players: Sequence[tuple[int, int]],
    after_seat: int,
    joined: Mapping[int, int] | None = None,
    after_joined: int | None = None,
) -> list[tuple[int, int]]:
    """``players`` (seat, balance) in the order the bank is offered to them after the
    banker at ``after_seat`` (who came to the table ``after_joined``-th).

    Seed 001: the bank passes "to the player who came in after the banker": first those
    who joined after the banker, in the order they joined, then, wrapping round, those
    who joined before. Clockwise seat order from the banker's seat only breaks a tie
    (players with the same place in the joining order), and is the whole order when the
    joining order is not known (``joined`` None).

    >>> succession([(1, 0), (3, 0), (5, 0)], 4, {1: 2, 3: 4, 5: 3}, 1)
    [(1, 0), (5, 0), (3, 0)]
    >>> succession([(1, 0), (3, 0), (5, 0)], 4)
    [(5, 0), (1, 0), (3, 0)]
    """

    def clockwise(seat: int) -> int:
        return seat - after_seat if seat > after_seat else seat - after_seat + 10_000

    if joined is None:
        return sorted(players, key=lambda p: clockwise(p[0]))
    mark = after_joined if after_joined is not None else 0

    def key(p: tuple[int, int]) -> tuple[int, int, int]:
        order = joined.get(p[0], 0)
        return (0 if order > mark else 1, order, clockwise(p[0]))

    return sorted(players, key=key)


def next_banker(
    profile: Profile,
    limits: TableLimits,
    players: Sequence[tuple[int, int]],
    after_seat: int,
    joined: Mapping[int, int] | None = None,
    after_joined: int | None = None,
) -> int | None:
    """The seat that takes the bank after ``after_seat`` leaves or loses it.

    ``players`` are (seat, balance) of those still at the table; the bank passes to the
    first who qualifies in :func:`succession` order (the order of joining the room,
    clockwise for a tie or when it is unknown). None: nobody qualifies, the room closes.
    """
    ordered = succession(
        [p for p in players if p[0] != after_seat], after_seat, joined, after_joined
    )
    for seat, balance in ordered:
        if can_take_bank(profile, limits, balance):
            return seat
    return None


@dataclass(frozen=True, slots=True)
class BankChange:
    """Who banks the next round, and why."""

    banker: int | None  # None: nobody qualifies and the room closes
    passed: bool  # the bank changed hands (or the room closed)
    reason: str  # "keeps" | "left" | "below_min_bet"

    @property
    def room_closes(self) -> bool:
        return self.banker is None


def after_round(
    profile: Profile,
    limits: TableLimits,
    players: Sequence[tuple[int, int]],
    banker_seat: int,
    banker_balance: int,
    *,
    banker_left: bool = False,
) -> BankChange:
    """The bank after a round: kept, passed on (clockwise: no joining order here), or the
    room closes.

    ``players`` are (seat, balance) of everyone still seated, the banker included or
    not; a banker who left or fell below the minimum bet cannot take it straight back.
    """
    if not banker_left and keeps_bank(profile, limits, banker_balance):
        return BankChange(banker_seat, False, "keeps")
    others = [p for p in players if p[0] != banker_seat]
    reason = "left" if banker_left else "below_min_bet"
    return BankChange(next_banker(profile, limits, others, banker_seat), True, reason)


def unseated_for_not_betting(
    profile: Profile, seated: Sequence[int], betting: Sequence[int]
) -> tuple[int, ...]:
    """Punters removed because they did not bet this round (``room``, seed 001)."""
    if profile.punter.no_bet != "removed":
        return ()
    placed = set(betting)
    return tuple(s for s in seated if s not in placed)
