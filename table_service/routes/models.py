"""The tables' request bodies and answers, as the OpenAPI document names them.

Bodies are strict (an unknown key is refused); answers whose members depend on the game
and the command are open, with the members that are always there named.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from table_service.api.types import (
    AccountId,
    BoundedJson,
    Ident,
    Key,
    Money,
    Note,
    Reason,
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReasonIn(Strict):
    reason: Reason = "shoe change"


class IncidentIn(Strict):
    kind: Ident
    details: BoundedJson = Field(default_factory=dict)


ROUND_CARDS_MAX = 64  # the most cards any game's round takes (blackjack: 7 seats, splits)
CardText = Annotated[str, Field(min_length=2, max_length=3, pattern=r"^[0-9A-Za-z]+$")]


class EnteredCardIn(Strict):
    card: CardText
    index: int = Field(ge=0, le=ROUND_CARDS_MAX, strict=True)


class ResolveIn(Strict):
    note: Note
    entered: list[EnteredCardIn] = Field(default_factory=list, max_length=ROUND_CARDS_MAX)
    order: list[CardText] | None = Field(None, max_length=ROUND_CARDS_MAX)
    read_twice: bool = Field(
        False,
        strict=True,
        description="possible_duplicate only: the repeated card was one card read twice; "
        "it is taken out of the round",
    )


class VoidIn(Strict):
    reason: Reason
    change_shoe: bool = Field(True, strict=True)


class CardIn(Strict):
    card: str | None = Field(None, min_length=2, max_length=3, pattern=r"^[0-9A-Za-z]+$")
    cut_card: bool = Field(False, strict=True)


class BetIn(Strict):
    key: Key
    account: AccountId
    type: Ident
    stake: Money
    seat: int | None = Field(
        None, ge=1, le=64, strict=True, description="seat games: the seat bet on"
    )


class LeaveIn(Strict):
    reason: Reason = "player left"


class SeatIn(Strict):
    seat: int = Field(ge=1, le=64, strict=True)
    account: AccountId


class ActionIn(Strict):
    actor: str = Field(
        min_length=1,
        max_length=80,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9:._-]*$",
        description="seat:N, behind:<bet id>, banker (by game)",
    )
    action: Ident = Field(description="hit, stand, double, accept…")
    account: AccountId | None = Field(
        None,
        description="the player answering (a seat's or bet's account, the seated banker's); "
        "none for the house banker's move, which the table's dealer confirms",
    )
    hand: int | None = Field(None, ge=1, le=8, strict=True)
    target: str | None = Field(
        None, min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9:._-]*$"
    )


class BetsIn(Strict):
    bets: list[BetIn] = Field(min_length=1, max_length=5000)


class TransferIn(Strict):
    amount: Money
    reference: Key


# -- answers -----------------------------------------------------------------------------------
class Open(BaseModel):
    """Answers whose exact members depend on the game and command; the named ones are
    always there."""

    model_config = ConfigDict(extra="allow")


class TableSummary(Open):
    table_id: str
    opened: bool | None = None
    paused: bool | None = None
    last_seq: int | None = None


class CommandAnswer(Open):
    seq: int
    table: TableSummary


class BetResult(Open):
    key: str
    status: str
    bet_id: str | None = None
    error: str | None = None
    reason: str | None = None


class BetsAnswer(Open):
    round_id: str | None = None
    results: list[BetResult] = Field(default_factory=list)
    seq: int


class RoundOut(BaseModel):
    round_id: str
    table_id: str
    shoe_no: int
    game_number: int
    phase: str
    cards: list[Any]
    outcome: dict[str, Any] | None
    void_reason: str | None
    opened_seq: int
    closed_seq: int | None


class BetOut(BaseModel):
    bet_id: str
    key: str
    account: str
    type: str
    stake: int
    status: str
    result: str | None
    returned: int | None
    commission: int = Field(
        0,
        description="the house's share of this bet's win, already out of returned; "
        "its own ledger line to the table's house account",
    )


class RoundDetail(RoundOut):
    game: str | None = None
    settle_input: Any = Field(None, description="the round as the game's settle command reads it")
    bets: list[BetOut]


class IncidentOut(BaseModel):
    incident_id: str
    table_id: str
    round_id: str | None
    kind: str
    blocking: bool
    status: str
    details: dict[str, Any]
    raised_by: str
    resolution: str | None
    resolved_by: str | None


class TransferOut(BaseModel):
    account: str
    balance: int
    duplicate: bool
    seq: int


class LedgerOut(BaseModel):
    amount: int
    kind: str
    bet_id: str | None
    reference: str | None
    seq: int


class AccountOut(BaseModel):
    account: str
    balance: int
    entries: list[LedgerOut]
