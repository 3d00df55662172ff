"""The things that can happen in a round: a card dealt, or a decision by someone.

Actions are plain frozen values so a round is a fold over them (``state = apply(state,
action)``), exactly as the table service folds its event log and the settle command
folds a recorded round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from table_service.rules.cards import Card

BANKER: Literal["banker"] = "banker"
Banker = Literal["banker"]


@dataclass(frozen=True, slots=True, order=True)
class HandRef:
    """A punter's hand: ``hand`` 1 is the only (or left) hand, 2 the right hand of a split."""

    seat: int
    hand: int = 1

    def __str__(self) -> str:
        return f"seat {self.seat} hand {self.hand}"


Actor = HandRef | Banker


@dataclass(frozen=True, slots=True)
class Deal:
    card: Card


@dataclass(frozen=True, slots=True)
class Hit:
    actor: Actor


@dataclass(frozen=True, slots=True)
class Stand:
    actor: Actor


@dataclass(frozen=True, slots=True)
class Double:
    actor: HandRef


@dataclass(frozen=True, slots=True)
class Split:
    actor: HandRef


@dataclass(frozen=True, slots=True)
class Surrender:
    actor: HandRef


@dataclass(frozen=True, slots=True)
class Check:
    """The banker's xét: settle one punter's hands now (``seat``), or everyone (None)."""

    seat: int | None


@dataclass(frozen=True, slots=True)
class NoDecision:
    """A timeout: the profile's automatic policy plays the rest of this hand."""

    actor: Actor


@dataclass(frozen=True, slots=True)
class Leave:
    """A punter (seat number) or the seated banker leaves mid-round."""

    who: int | Banker


@dataclass(frozen=True, slots=True)
class Hide:
    """The privacy flag: the stream shows this seat's cards face down until settled."""

    seat: int


Action = Deal | Hit | Stand | Double | Split | Surrender | Check | NoDecision | Leave | Hide
