"""Why a table command is refused (state unchanged, nothing written)."""

from __future__ import annotations

from table_service.errors import Conflict, InvalidRequest, NotFound, Refused


class TableNotOpen(Refused):
    code = "table_not_open"


class WrongPhase(Refused):
    code = "wrong_phase"


class TablePaused(Refused):
    code = "table_paused"


class NoShoe(Refused):
    code = "no_shoe"


class ShoeNotReady(Refused):
    code = "shoe_not_ready"


class ShoeFinished(Refused):
    code = "shoe_finished"


class BettingClosed(Refused):
    code = "betting_closed"


class RoomClosed(Refused):
    """A seated bank passed and nobody seated holds what taking it needs (Xì Dách
    ``room``): no round opens until someone does."""

    code = "room_closed"


class UnknownIncident(NotFound):
    code = "unknown_incident"


class BadCard(InvalidRequest):
    code = "bad_card"


class BadResolution(InvalidRequest):
    code = "bad_resolution"


class UnknownTable(NotFound):
    code = "unknown_table"


class IdempotencyConflict(Conflict):
    code = "idempotency_conflict"


class InsufficientFunds(Refused):
    code = "insufficient_funds"
    status = 402


class NotYourTurn(Refused):
    code = "not_your_turn"


class SeatRefused(Refused):
    code = "seat_refused"


class RulesRefused(Refused):
    """A refusal of the game's rules (its ``code`` is the game's stable code)."""

    code = "rules_refused"

    def __init__(self, reason: str, code: str | None = None, **details: object) -> None:
        super().__init__(reason, **details)
        if code is not None:
            self.code = code
