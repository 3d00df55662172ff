"""The one root of every typed refusal: the rules' and the table's.

A refusal is an answer, not a failure: something asked for (a bet, a card, a decision,
a settle line, a paytable, a command) that the rules or the table procedure refuse, with
a stable ``code`` for machines, a ``reason`` for people and JSON-safe ``details``. Every
game's errors, the card and paytable errors (:class:`RulesRefusal`, here so the rules
core needs nothing above it) and the table service's :class:`~table_service.errors.Refused`
derive from :class:`Refusal`; code that turns a refusal into an answer catches this root
(or a narrower class), never a bare ``ValueError``, so a defect is never reported as a
refusal. It stays a ``ValueError`` because a refusal is one (pydantic reports a refusal
raised in a validator as a validation error, and callers outside the service that catch
``ValueError`` keep working).
"""

from __future__ import annotations

from typing import Any


class Refusal(ValueError):
    """A typed refusal: ``code`` (stable), ``reason`` (for people), ``details`` (JSON)."""

    code: str = "refused"

    def __init__(self, reason: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        if code is not None:
            self.code = code
        self.details = details


class RulesRefusal(Refusal):
    """The one refusal root of every game: a stable ``code`` and a human ``reason``.

    The table turns it into a typed answer (an HTTP 4xx, a refused bet line); a rules
    error never surfaces as a server error. ``details`` are JSON-safe facts for the
    caller (the legal actions, the position owed).
    """

    code: str = "rules_refusal"
