"""Typed refusals of the Xì Dách engine.

Every refusal is its own class so the table service can map it to a dealer-console
message or an incident without parsing text; ``reason`` carries the human explanation.
A refused action never changes the round state (states are immutable values).
"""

from __future__ import annotations

from table_service.rules.refusal import RulesRefusal


class XiDachError(RulesRefusal):
    """Base class: an action, input or configuration the rules refuse."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ProfileError(XiDachError):
    """A rule profile file is missing, malformed or inconsistent."""


class RoundSetupError(XiDachError):
    """The round cannot start as described (seats, stakes, limits, banker)."""


class BankrollError(RoundSetupError):
    """A seated banker does not hold enough to take or keep the bank."""


class RoundOverError(XiDachError):
    """The round is already settled; nothing more can happen in it."""


class RoundNotOverError(XiDachError):
    """Settlement was asked for before the round finished."""


class CardAwaitedError(XiDachError):
    """A decision arrived while the next card still has to be dealt."""


class NoCardAwaitedError(XiDachError):
    """A card was dealt while the round waits for a decision, not a card."""


class NotACardError(XiDachError):
    """Something other than a card was dealt."""


class DuplicateCardError(XiDachError):
    """A card appeared more often than the profile's decks contain it."""


class NotYourTurnError(XiDachError):
    """The actor named is not the one whose decision the round awaits."""


class UnknownSeatError(XiDachError):
    """The seat or hand named does not exist in this round."""


class ActionNotAllowedError(XiDachError):
    """The profile, or the hand's situation, does not offer this action."""


class ForcedDrawError(ActionNotAllowedError):
    """A stand below the profile's minimum: the hand must draw."""


class ForcedStandError(ActionNotAllowedError):
    """A hit at or above the profile's forced-stand total."""


class HitOn21Error(ForcedStandError):
    """A hit on a total of 21 in a profile that refuses it."""


class MaxCardsError(ActionNotAllowedError):
    """A hit on a hand that already holds the maximum number of cards."""


class CheckNotAllowedError(ActionNotAllowedError):
    """A banker check (xét) the profile or the banker's total does not allow."""


class IncompleteRoundError(XiDachError):
    """A recorded round ends (cards or decisions) before the round is complete."""


class HousePolicyError(ActionNotAllowedError):
    """A house-banker move other than the one its published policy prescribes."""
