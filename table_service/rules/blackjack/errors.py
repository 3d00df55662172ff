"""Typed refusals of the blackjack rules core.

Every refusal names its kind by class and carries a human reason, so the dealer
console, the settle command and the tests can tell a misdeal from an illegal
decision without parsing messages. A refused action never changes the state.
"""

from __future__ import annotations

from table_service.rules.refusal import RulesRefusal


class BlackjackError(RulesRefusal):
    """Base class: the rules core refused something."""

    code = "blackjack_refused"


class RulesConfigError(BlackjackError):
    """A table configuration (TOML) that does not describe a playable table."""


class RoundSetupError(BlackjackError):
    """Seats or bets that cannot start a round (unknown seat, bad stake, duplicate id)."""


class IllegalDecision(BlackjackError):
    """A decision the rules do not allow for this hand now (e.g. double on three cards)."""


class NotYourTurn(BlackjackError):
    """A decision for a seat or hand that is not the one to act."""


class UnexpectedCard(BlackjackError):
    """A card arrived when no position takes a card (a dealing error, see Incidents)."""


class FollowOfferError(BlackjackError):
    """An answer for a bet-behind follow offer that is not open."""


class RoundNotComplete(BlackjackError):
    """Settlement asked for before the dealer has finished."""


class RoundInputError(BlackjackError):
    """A settle request that does not describe a complete, possible round."""
