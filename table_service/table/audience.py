"""The audiences a field may be declared for, and how an event type's declaration reads.

Kept apart from :mod:`table_service.table.view` (the projection) and
:mod:`table_service.table.events` (the typed events that carry the declarations), which
both need it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final


class Audience(StrEnum):
    PUBLIC = "public"
    OWNER = "owner"
    DEALER = "dealer"
    SUPERVISOR = "supervisor"
    REGULATOR = "regulator"
    ADMIN = "admin"


Audiences = frozenset[Audience]
STAFF: Final[Audiences] = frozenset(
    {Audience.DEALER, Audience.SUPERVISOR, Audience.REGULATOR, Audience.ADMIN}
)
PUBLIC: Final[Audiences] = frozenset(Audience)  # everyone
OWNED: Final[Audiences] = STAFF | {Audience.OWNER}  # the owning operator and the staff
RECORDS: Final[Audiences] = frozenset({Audience.SUPERVISOR, Audience.REGULATOR, Audience.ADMIN})
"""Who reads whole records (the audit log, the recall, the pit's money): not a dealer."""
REGULATOR: Final[Audiences] = frozenset({Audience.REGULATOR})
"""The regulator alone: an export bundle carries the complete log (its hashes verify only
over every field of every event), so it is made for a regulator, never projected."""
EVENT_CLASSES: Final = (frozenset({Audience.PUBLIC}), frozenset({Audience.OWNER}), STAFF)


Mask = Callable[[dict[str, Any], Mapping[str, Any]], None]


@dataclass(frozen=True)
class EventSpec:
    """One event type's fields and who sees each. ``public``: whether the public (and an
    operator, outside its own bets) gets the event at all, given its payload; ``owned``:
    the list field whose items each name an account (``account``) and go to its owner;
    ``mask``: what the public view hides of a public field (face-down cards, bet ids)."""

    fields: Mapping[str, Audiences]
    public: Callable[[Mapping[str, Any]], bool] | bool = False
    owned: str | None = None
    mask: Mask | None = None
