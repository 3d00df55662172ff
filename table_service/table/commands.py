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
    pass


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


@dataclass(frozen=True)
class VoidRound:
    reason: str
    change_shoe: bool = True


Command = (
    OpenTable
    | InsertShoe
    | ChangeShoe
    | OpenBetting
    | CloseBetting
    | PlaceBets
    | CardScanned
    | CutCard
    | ReaderFault
    | ReaderOnline
    | RaiseIncident
    | ResolveIncident
    | VoidRound
)
