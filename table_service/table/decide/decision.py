"""A decision and what every procedure records with it.

:class:`Decision` collects the typed events a command produces, applying each to the
state as it goes (so the next step of the procedure sees it); :class:`Draft` is one of
them as the log will store it. The steps every procedure shares live here too: the
table's configuration, a card's code, an incident raised (and resolved by the rules at
once where they say so), and :func:`set_aside`, the one way a card is set aside and, where
the rules call for it, an incident raised about it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

from table_service.rules.cards import CardError, parse_card
from table_service.table import events as ev
from table_service.table.config import TableConfig, config_from_snapshot
from table_service.table.errors import (
    BadCard,
    TableNotOpen,
)
from table_service.table.state import TableState, apply_event, game_of_round

CHUNK = 1000


SYSTEM = "system:rules"


@dataclass(frozen=True)
class Draft:
    """One event a decision writes: the typed event, and the stored form the log keeps
    (its type name and payload, written by the event's class)."""

    event: ev.TableEvent
    round_id: str | None = None

    @property
    def type(self) -> str:
        return self.event.TYPE

    @cached_property
    def payload(self) -> dict[str, Any]:
        return self.event.to_payload()


@dataclass
class Decision:
    """Events produced, the state they lead to, and the answer for the caller."""

    state: TableState
    drafts: list[Draft] = field(default_factory=list)
    answer: dict[str, Any] = field(default_factory=dict)
    now: datetime | None = None

    def emit(self, event: ev.TableEvent, round_id: str | None = None) -> None:
        """Record one typed event: applied to the state (dispatched on its class), then
        kept to be written (its class writes the payload the log stores)."""
        if not isinstance(event, ev.TableEvent):
            raise TypeError(f"decide records typed table events, not {event!r}")
        self.state = apply_event(self.state, event)
        self.drafts.append(Draft(event, round_id))

    def emit_chunks(self, event: ev.TableEvent, round_id: str | None) -> None:
        """A bet event whose list (bets, results, refunds: the list its class names as its
        owner's) may be large goes into the log in chunks of ``CHUNK``; the state applies
        it as one event, which is the same state (the bet handlers are set operations)
        without copying the round's bets once per chunk. An empty list writes nothing."""
        key = event.OWNED
        assert key is not None, event.TYPE
        items = getattr(event, key)
        if not items:
            return
        self.state = apply_event(self.state, event)
        if len(items) <= CHUNK:
            self.drafts.append(Draft(event, round_id))
            return
        for start in range(0, len(items), CHUNK):
            chunk = replace(event, **{key: items[start : start + CHUNK]})
            self.drafts.append(Draft(chunk, round_id))


def card_code(code: str) -> str:
    try:
        return parse_card(code).code
    except CardError as exc:
        raise BadCard(str(exc), card=code) from exc


def config_of(state: TableState) -> TableConfig:
    """The parsed configuration recorded in the state (parsed once per recorded snapshot)."""
    if state.config is None:
        raise TableNotOpen(f"table {state.table_id} is not open")
    return config_from_snapshot(state.config)


def open_incident(
    d: Decision,
    kind: str,
    *,
    blocking: bool,
    actor: str,
    details: Mapping[str, Any],
    auto_resolution: str | None = None,
) -> str:
    """Raise an incident (about the round in play, if any): blocking pauses the table for
    a supervisor; ``auto_resolution`` is the rules resolving it at once, as they say."""
    rnd = d.state.round
    round_id = rnd.round_id if rnd is not None and rnd.active else None
    incident_id = f"{d.state.table_id}-i{d.state.incidents_raised + 1}"
    raised = ev.IncidentRaised(
        incident_id=incident_id,
        kind=kind,
        blocking=blocking,
        round_id=round_id,
        details=dict(details),
        raised_by=actor,
    )
    d.emit(raised, round_id=round_id)
    if auto_resolution is not None:
        resolved = ev.IncidentResolved(
            incident_id=incident_id, resolution=auto_resolution, resolved_by=SYSTEM
        )
        d.emit(resolved, round_id=round_id)
    return incident_id


def next_position(state: TableState) -> str | None:
    rnd = state.round
    if rnd is None or rnd.phase != "dealing":
        return None
    position = rnd.next_position()
    return position.code if position else None


def expected_next(state: TableState) -> Any:
    rnd = state.round
    if rnd is None or rnd.play is None:
        return None
    return game_of_round(rnd).next(rnd.play.state).to_json()


@dataclass(frozen=True)
class Raise:
    """The incident a set-aside card raises: its kind, whether it pauses the table, what
    it records (``details``: given, or read from the table once the card is set aside,
    where the set-aside changes what the round expects) and, for an incident the rules
    settle themselves, how they resolve it at once."""

    kind: str
    blocking: bool
    details: Mapping[str, Any] | Callable[[TableState], Mapping[str, Any]]
    resolution: str | None = None


def set_aside(
    d: Decision,
    *asides: ev.CardSetAside,
    round_id: str | None = None,
    then: Raise | None = None,
    actor: str = SYSTEM,
) -> str | None:
    """Set cards aside (each counted, carried or taken out of its round as its event says),
    then raise the incident the procedure calls for, if any: the one way every procedure
    does it. Returns the incident's id (None when nothing is raised)."""
    for aside in asides:
        d.emit(aside, round_id)
    if then is None:
        return None
    details = then.details(d.state) if callable(then.details) else then.details
    return open_incident(
        d,
        then.kind,
        blocking=then.blocking,
        actor=actor,
        details=details,
        auto_resolution=then.resolution,
    )
