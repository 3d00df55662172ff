"""Typed refusals. Every refused command names its reason and leaves the state unchanged.

Each error carries a stable ``code`` (for API clients and the audit log) and the HTTP
status the API answers with.
"""

from __future__ import annotations

from typing import Any

from table_service.rules.refusal import Refusal


class Refused(Refusal):
    """A refusal of the table service, with the HTTP status the API answers it with."""

    code = "refused"
    status = 409

    def __init__(self, reason: str, **details: Any) -> None:
        super().__init__(reason, **details)

    def to_json(self) -> dict[str, Any]:
        return {"error": self.code, "reason": self.reason, **self.details}


class NotFound(Refused):
    code = "not_found"
    status = 404


class InvalidRequest(Refused):
    code = "invalid_request"
    status = 422


class Conflict(Refused):
    code = "conflict"
    status = 409


class Forbidden(Refused):
    """The principal may not do this (its role, its table binding, whose player it is)."""

    code = "forbidden"
    status = 403
