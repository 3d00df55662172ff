"""The immutable round state of one Xì Dách round.

A state is a value: every action returns a new state and a refused action leaves the
old one untouched, so the table service can validate a command simply by applying it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from table_service.rules.cards import Card
from table_service.rules.xidach.actions import HandRef
from table_service.rules.xidach.errors import UnknownSeatError
from table_service.rules.xidach.hands import HandValue, classify
from table_service.rules.xidach.profile import Profile

_T = TypeVar("_T")
_new = object.__new__
_set = object.__setattr__


def evolve(obj: _T, **changes: Any) -> _T:
    """A copy of a frozen slots dataclass with ``changes`` applied.

    ``dataclasses.replace`` re-runs the generated ``__init__`` through keyword
    arguments; the engine evolves a state a dozen times per card, and the simulated
    house edge plays hundreds of thousands of rounds, so this copies the slots directly
    (an unknown field still raises ``AttributeError``).
    """
    cls = type(obj)
    new = _new(cls)
    # Every class evolved is a slots dataclass; typeshed's ``type`` has no ``__slots__``.
    for name in cls.__slots__:  # type: ignore[attr-defined]
        _set(new, name, getattr(obj, name))
    for name, value in changes.items():  # slots only: an unknown name raises AttributeError
        _set(new, name, value)
    return new


class Phase(StrEnum):
    DEALING = "dealing"
    PUNTERS = "punters"
    BANKER = "banker"
    SETTLED = "settled"


class Basis(StrEnum):
    """Why a hand was settled when it was (shown in the ledger and the settle output)."""

    NATURAL = "natural"  # punter natural compared at once after the deal
    BANKER_NATURAL = "banker_natural"  # the banker's natural stopped the round
    BUST = "bust"  # a bust that loses at once
    SURRENDER = "surrender"
    CHECK = "check"  # the banker's xét of this seat
    SHOWDOWN = "showdown"  # compared when the banker stood, busted or finished
    LEFT = "left"  # the punter left before the banker revealed
    BANKER_LEFT = "banker_left"  # the banker left before revealing


class Result(StrEnum):
    WIN = "win"
    LOSE = "lose"
    PUSH = "push"
    HALF_REFUND = "half_refund"


@dataclass(frozen=True, slots=True)
class TableLimits:
    """The room's minimum and maximum bet (minor units)."""

    min_bet: int
    max_bet: int


@dataclass(frozen=True, slots=True)
class SeatBet:
    """One punter's bet as the round starts."""

    seat: int
    stake: int
    bet_id: str | None = None
    hidden: bool = False


@dataclass(frozen=True, slots=True)
class HandResult:
    result: Result
    returned: int  # owed back to the punter, before any seated-banker shortfall
    basis: Basis
    banker_value: HandValue | None  # the banker's hand it was compared with, if any


@dataclass(frozen=True, slots=True)
class Hand:
    seat: int
    index: int
    cards: tuple[Card, ...]
    stake: int
    from_split: bool = False
    doubled: bool = False
    stood: bool = False
    auto: bool = False
    result: HandResult | None = None

    @property
    def ref(self) -> HandRef:
        return HandRef(self.seat, self.index)

    def value(self, profile: Profile) -> HandValue:
        return classify(self.cards, profile, natural_eligible=not self.from_split)


@dataclass(frozen=True, slots=True)
class Seat:
    seat: int
    stake: int
    bet_id: str | None
    hidden: bool = False
    left: bool = False
    has_split: bool = False


@dataclass(frozen=True, slots=True)
class BankerHand:
    seat: int | None  # None: the house is the banker
    balance: int | None  # a seated banker's balance before the round
    cards: tuple[Card, ...] = ()
    auto: bool = False
    left: bool = False
    revealed: bool = False

    @property
    def seated(self) -> bool:
        return self.seat is not None

    def value(self, profile: Profile) -> HandValue:
        return classify(self.cards, profile)


@dataclass(frozen=True, slots=True)
class Target:
    """Where the next card out of the shoe belongs."""

    seat: int | None  # None: the banker
    hand: int  # 0 for the banker
    face_up: bool

    @property
    def is_banker(self) -> bool:
        return self.seat is None

    def __str__(self) -> str:
        who = "banker" if self.seat is None else f"seat {self.seat} hand {self.hand}"
        return f"{who} ({'face up' if self.face_up else 'face down'})"


@dataclass(frozen=True, slots=True)
class RoundState:
    profile: Profile
    limits: TableLimits | None
    banker: BankerHand
    seats: tuple[Seat, ...]  # in play order (the profile's draw direction)
    hands: tuple[Hand, ...]  # in play order; a split's left hand before its right
    phase: Phase
    queue: tuple[Target, ...]  # cards owed, in order
    turn: int | None  # index in ``hands`` of the punter hand whose decision is awaited
    dealt: tuple[Card, ...] = ()

    def hand(self, ref: HandRef) -> Hand:
        for h in self.hands:
            if h.seat == ref.seat and h.index == ref.hand:
                return h
        raise UnknownSeatError(f"no {ref} in this round")

    def seat(self, number: int) -> Seat:
        for s in self.seats:
            if s.seat == number:
                return s
        raise UnknownSeatError(f"no punter at seat {number} in this round")
