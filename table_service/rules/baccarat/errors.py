"""Why a bet is refused: one exception class per kind of refusal.

Each carries a stable ``code`` (for API responses, exports and the settle command) and a
human ``reason``; callers catch :class:`BetRefused` and leave their state unchanged.
"""

from __future__ import annotations

from table_service.rules.refusal import RulesRefusal


class BetRefused(RulesRefusal):
    """Base of every bet refusal."""

    code = "bet_refused"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UnknownBetType(BetRefused):
    """The bet id is not one of rules/baccarat.md."""

    code = "unknown_bet_type"


class BetNotOffered(UnknownBetType):
    """A bet of the rules document that this table's paytable does not offer."""

    code = "bet_not_offered"


class InvalidStake(BetRefused):
    """The stake is not an integer amount of minor units."""

    code = "invalid_stake"


class NonPositiveStake(InvalidStake):
    """A stake of zero or less."""

    code = "non_positive_stake"


class InvalidGameNumber(BetRefused):
    """The game number a bet is checked against is not a positive integer."""

    code = "invalid_game_number"


class BetClosed(BetRefused):
    """The bet closes after a game number that this round is past."""

    code = "bet_closed"

    def __init__(self, bet_type: str, game_number: int, closes_after: int) -> None:
        super().__init__(
            f"bet {bet_type!r} closes after game {closes_after}; this is game {game_number}"
        )
        self.bet_type = bet_type
        self.game_number = game_number
        self.closes_after = closes_after


class PaytableError(RulesRefusal):
    """A paytable file that does not describe a valid table."""

    code = "bad_paytable"
