"""Commands a table accepts. Each is a plain value; :mod:`decide` turns it into events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from table_service.table.config import TableConfig


@dataclass(frozen=True)
class OpenTable:
    config: TableConfig


@dataclass(frozen=True)
class InsertShoe:
    pass


@dataclass(frozen=True)
class ChangeShoe:
    reason: str = "shoe change"


@dataclass(frozen=True)
class OpenBetting:
    balances: Mapping[str, int] | None = None
    """The seated players' balances, read by the service (a seated bank: does anyone
    qualify to take it?). None: not read, no such check."""


@dataclass(frozen=True)
class ReviewRoom:
    """After a round: with the seated players' balances, does the room stay open?"""

    balances: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CloseBetting:
    reason: str = "dealer"


@dataclass(frozen=True)
class BetRequest:
    bet_id: str
    key: str
    account: str
    bet_type: str
    stake: Any  # validated by the rules: an int of minor units
    seat: int | None = None  # seat games: the seat the bet is on (main, pair, behind)


@dataclass(frozen=True)
class PlaceBets:
    bets: tuple[BetRequest, ...]
    balances: Mapping[str, int] = field(default_factory=dict)
    scope: str = ""
    """The caller's namespace of idempotency keys (an operator's ``"actor|"``): a bet's
    key is recorded as ``scope + key``, and answered as the caller's own ``key``."""


@dataclass(frozen=True)
class CardScanned:
    card: str
    reader_seq: int | None = None
    burn_mode: bool = False  # read while the shoe itself was in burn mode (ascii shoes)


@dataclass(frozen=True)
class CutCard:
    pass


@dataclass(frozen=True)
class ReaderFault:
    """Something the reader reported that a person must look at."""

    kind: str  # unreadable | missed_card_suspected | offline | alarm | shoe_empty
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReaderOnline:
    info: str = ""


@dataclass(frozen=True)
class RaiseIncident:
    kind: str
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EnteredCard:
    card: str
    index: int


@dataclass(frozen=True)
class ResolveIncident:
    incident_id: str
    note: str
    entered: tuple[EnteredCard, ...] = ()
    order: tuple[str, ...] | None = None
    read_twice: bool = False
    """For a ``possible_duplicate``: the repeated card was the shoe re-sending a card it
    had already sent (one physical card, read twice), so it is taken out of the round."""


@dataclass(frozen=True)
class VoidRound:
    reason: str
    change_shoe: bool = True


@dataclass(frozen=True)
class TakeSeat:
    """An operator seats a player account at a free seat (one seat per player)."""

    seat: int
    account: str


@dataclass(frozen=True)
class LeaveSeat:
    seat: int
    reason: str = "player left"


@dataclass(frozen=True)
class PlayerDisconnected:
    """The operator reports a seated player gone: the rules play the rest of the round."""

    seat: int


@dataclass(frozen=True)
class Act:
    """A player's decision: ``actor`` as the game names it (``seat:3``, ``behind:<bet>``,
    ``banker``), ``account`` the player's account, checked by the policy against the seat
    or the bet (None, or ``banker``, for the house banker's move)."""

    actor: str
    action: str
    account: str | None
    hand: int | None = None
    target: str | None = None
    balances: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnTimeout:
    """A recorded decision deadline has passed: the rules play the timeout action."""

    clock: str


Command = (
    OpenTable
    | InsertShoe
    | ChangeShoe
    | OpenBetting
    | ReviewRoom
    | CloseBetting
    | PlaceBets
    | CardScanned
    | CutCard
    | ReaderFault
    | ReaderOnline
    | RaiseIncident
    | ResolveIncident
    | VoidRound
    | TakeSeat
    | LeaveSeat
    | PlayerDisconnected
    | Act
    | TurnTimeout
)
