# ruff: noqa: RUF009 - public()/staff()/owned() return dataclasses.field(...) with metadata
"""The table's events, typed: one frozen dataclass per stored event type, in one registry.

Each class names the type the log stores (``TYPE``) and its schema version (``VERSION``);
:meth:`TableEvent.from_payload` reads a stored payload (upcasting an older version first,
refusing a field the class does not know) and :meth:`TableEvent.to_payload` writes back
exactly the payload it came from, so the canonical JSON, the hashes, checkpoints, exports
and bundles are what they were. A field that may be absent from the log (an optional one)
is :data:`ABSENT` when it is, and left out again when written.

Who may see each field is declared here, with the field (``audience`` in its metadata:
``public``, ``owner`` or ``staff``), and :mod:`table_service.table.view` reads it from
these classes: a field without one is a test failure and, in strict mode, an error.

:func:`parse` is how everything that reads the log turns a stored event into its class:
the table's fold (:func:`table_service.table.state.apply`), recall, the regulator's
replay, the projection for the streams, NATS and the feeds. A type the registry does not
know is an error (:class:`UnknownEvent`), never a silent no-op.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar

from table_service.table.audience import OWNED, PUBLIC, STAFF, Audiences, EventSpec


class _Absent:
    """A field the stored payload does not have (not the same as a recorded null)."""

    _instance: ClassVar[_Absent | None] = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
Absent = _Absent  # the type of an optional field that may be absent


class EventError(ValueError):
    """A stored event that does not read as its type (an integrity problem of the log)."""


class UnknownEvent(EventError):
    """A stored event type the registry does not know."""


def _field(audience: Audiences, *, required: bool) -> Any:
    metadata = {"audience": audience}
    if required:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=ABSENT, metadata=metadata)


def public(*, required: bool = False) -> Any:
    """A field everyone may see."""
    return _field(PUBLIC, required=required)


def staff(*, required: bool = False) -> Any:
    """A field the table's dealer, supervisors, regulators and admins see."""
    return _field(STAFF, required=required)


def owned(*, required: bool = False) -> Any:
    """A field the operator owning the account it names sees (and the staff)."""
    return _field(OWNED, required=required)


if TYPE_CHECKING:  # staticmethods: a plain callable class attribute is bound as a method
    Shown = bool | staticmethod[[Mapping[str, Any]], bool] | None
    MaskRule = staticmethod[[dict[str, Any], Mapping[str, Any]], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableEvent:
    """One table event. ``TYPE``: the stored type name; ``VERSION``: its schema version;
    ``SHOWN``: whether the public gets the event at all (given its payload); ``OWNED``: the
    list field whose items each name an account and go to its owner; ``MASK``: what the
    public view hides of a public field (a face-down card, a bet-behind bet id).

    The stored form is read and written by one codec for every class (:func:`decode`,
    :func:`encode`), from the dataclass's own fields: no class writes its payload by hand."""

    TYPE: ClassVar[str]
    VERSION: ClassVar[int] = 1
    SHOWN: ClassVar[Shown] = None
    OWNED: ClassVar[str | None] = None
    MASK: ClassVar[MaskRule | None] = None

    @classmethod
    def from_payload(cls: type[E], payload: Mapping[str, Any], version: int | None = None) -> E:
        """The event from its stored payload (of ``version``, the current one if None)."""
        return decode(cls, payload, version)

    def to_payload(self) -> dict[str, Any]:
        """The stored payload: the fields present, as they were read or built."""
        return encode(self)


E = TypeVar("E", bound=TableEvent)
T = TypeVar("T")
D = TypeVar("D")

_NAMES: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


# -- the one codec: a frozen dataclass <-> the payload the log stores -------------------------
def encode(event: TableEvent) -> dict[str, Any]:
    """The payload ``event`` stores: each field present (not :data:`ABSENT`), its value as it
    was read or built (the same objects: nothing is copied or converted, so the canonical
    JSON, and every hash over it, is what it was)."""
    out = {}
    for name in _names(type(event)):
        value = getattr(event, name)
        if value is not ABSENT:
            out[name] = value
    return out


def decode(cls: type[E], payload: Mapping[str, Any], version: int | None = None) -> E:
    """``cls`` from a stored payload of ``version`` (the current one if None), upcast first:
    a field the class does not declare, or a required one missing, is an :class:`EventError`."""
    if version is not None and version != cls.VERSION:
        payload = upcast(cls, payload, version)
    names = _names(cls)
    extra = [k for k in payload if k not in names]
    if extra:
        raise EventError(f"{cls.TYPE}: unknown field(s) {extra}")
    try:
        return cls(**payload)
    except TypeError as exc:
        raise EventError(f"{cls.TYPE}: {exc}") from exc


# Older stored versions of a type, step by step to the current one: (type, version) → a
# function from that version's payload to the next version's.
UPCASTERS: dict[tuple[str, int], Callable[[Mapping[str, Any]], dict[str, Any]]] = {}


def upcast(cls: type[TableEvent], payload: Mapping[str, Any], version: int) -> Mapping[str, Any]:
    while version < cls.VERSION:
        step = UPCASTERS.get((cls.TYPE, version))
        if step is None:
            raise EventError(f"{cls.TYPE}: no upcaster from version {version}")
        payload, version = step(payload), version + 1
    if version != cls.VERSION:
        raise EventError(f"{cls.TYPE}: version {version} is newer than {cls.VERSION}")
    return payload


def given(value: T | Absent, default: D) -> T | D:
    """An optional field's value, or ``default`` where the stored payload has none."""
    return default if isinstance(value, Absent) else value


def required(value: T | Absent) -> T:
    """An optional field the reader needs here (absent: the log does not read as its type)."""
    if isinstance(value, Absent):
        raise EventError("a field this event needs here is absent")
    return value


def opt(value: T | None) -> T | Absent:
    """A value written only when there is one (None: the field is left out of the payload)."""
    return ABSENT if value is None else value


# -- masks: what the public view hides of a public field ------------------------------------
def _face_down_card(data: dict[str, Any], payload: Mapping[str, Any]) -> None:
    if payload.get("face_up") is False:
        data["card"] = None  # dealt face down: the public sees it when it is turned


def _face_down_cards(data: dict[str, Any], payload: Mapping[str, Any]) -> None:
    down = set(payload.get("face_down") or ())
    if down and data.get("cards") is not None:
        data["cards"] = [None if i in down else c for i, c in enumerate(data["cards"])]


def _behind(actor: Any) -> Any:
    return "behind" if str(actor).startswith("behind:") else actor


def _mask_actor(data: dict[str, Any], payload: Mapping[str, Any]) -> None:
    data["actor"] = _behind(data.get("actor"))  # a bet-behind answer: the bet id is private


def _mask_actors(data: dict[str, Any], payload: Mapping[str, Any]) -> None:
    data["actors"] = [_behind(a) for a in data.get("actors") or ()]


# -- the table and its shoe ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class TableOpened(TableEvent):
    TYPE = "table_opened"
    SHOWN = True
    config: Mapping[str, Any] = staff(required=True)
    terms: Mapping[str, Any] | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeInserted(TableEvent):
    TYPE = "shoe_inserted"
    shoe_no: int = public(required=True)
    decks: int = public(required=True)
    cut_card_depth: object | Absent = staff()
    burn: bool | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class CardBurnt(TableEvent):
    TYPE = "card_burnt"
    SHOWN = staticmethod(lambda p: bool(p.get("indicator")))  # only the shown indicator
    card: str | None = public(required=True)
    indicator: bool | Absent = staff()
    shoe_no: int | Absent = staff()
    burn_count: int | Absent = staff()
    unreadable: bool | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class CutCardDrawn(TableEvent):
    TYPE = "cut_card_drawn"
    shoe_no: int = public(required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeEnded(TableEvent):
    TYPE = "shoe_ended"
    shoe_no: int = public(required=True)
    reason: str | Absent = public()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReaderStatus(TableEvent):
    TYPE = "reader_status"
    SHOWN = False
    online: bool = staff(required=True)
    detail: str | Absent = staff()


# -- betting ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class BettingOpened(TableEvent):
    TYPE = "betting_opened"
    round_id: str = public(required=True)
    game_number: int = public(required=True)
    closes_at: str = public(required=True)
    shoe_no: int | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class BetsPlaced(TableEvent):
    TYPE = "bets_placed"
    OWNED = "bets"
    round_id: str = public(required=True)
    bets: Sequence[dict[str, Any]] = owned(required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class BettingClosed(TableEvent):
    TYPE = "betting_closed"
    round_id: str = public(required=True)
    reason: str | Absent = staff()


# -- cards ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class CardDealt(TableEvent):
    TYPE = "card_dealt"
    MASK = staticmethod(_face_down_card)
    round_id: str = public(required=True)
    card: str = public(required=True)
    position: str | Absent | None = public()
    index: int | Absent = public()
    seat: int | Absent = public()
    hand: int | Absent | None = public()
    source: str | Absent = staff()
    reader_seq: int | Absent | None = staff()
    face_up: bool | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class CardShowAgain(TableEvent):
    TYPE = "card_show_again"
    SHOWN = False
    round_id: str = staff(required=True)
    index: int | Absent = staff()
    cause: str | Absent = staff()
    reason: str | Absent = staff()
    times: int | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class CardsRearranged(TableEvent):
    TYPE = "cards_rearranged"
    MASK = staticmethod(_face_down_cards)
    round_id: str = public(required=True)
    cards: Sequence[str] = public(required=True)
    entered: Sequence[str] | Absent = staff()
    incident_id: str | Absent = staff()
    entered_at: Sequence[int] | Absent = staff()
    face_down: Sequence[int] | Absent = staff()
    positions: Sequence[str] | Absent = staff()
    read_twice: Mapping[str, Any] | Absent = staff()  # the repeat taken out: card, index


@dataclass(frozen=True, slots=True, kw_only=True)
class CardsRevealed(TableEvent):
    """Face-down cards turned for the public (Xì Dách)."""

    TYPE = "cards_revealed"
    round_id: str = public(required=True)
    cards: Sequence[dict[str, Any]] = public(required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class CardSetAside(TableEvent):
    TYPE = "card_set_aside"
    SHOWN = False
    card: str = staff(required=True)
    reason: str | Absent = staff()
    counted: bool | Absent = staff()
    exposed: bool | Absent = staff()
    round_id: str | Absent = staff()
    carry: bool | Absent = staff()
    from_round: str | Absent = staff()
    round_cards: Sequence[str] | Absent = staff()
    index: int | Absent = staff()
    incident_id: str | Absent = staff()


# -- results and money ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class RoundResult(TableEvent):
    TYPE = "round_result"
    round_id: str = public(required=True)
    outcome: Mapping[str, Any] = public(required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class BetsSettled(TableEvent):
    TYPE = "bets_settled"
    OWNED = "results"
    round_id: str = public(required=True)
    results: Sequence[dict[str, Any]] = owned(required=True)
    early: bool | Absent = owned()


@dataclass(frozen=True, slots=True, kw_only=True)
class BetsRefunded(TableEvent):
    TYPE = "bets_refunded"
    OWNED = "refunds"
    round_id: str = public(required=True)
    refunds: Sequence[dict[str, Any]] = owned(required=True)
    reason: str | Absent = owned()


@dataclass(frozen=True, slots=True, kw_only=True)
class CommissionCredited(TableEvent):
    TYPE = "commission_credited"
    SHOWN = False
    round_id: str = staff(required=True)
    account: str | Absent = staff()
    amount: int | Absent = staff()
    lines: Sequence[dict[str, Any]] | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundSettled(TableEvent):
    TYPE = "round_settled"
    round_id: str = public(required=True)
    bets: int | Absent = staff()
    staked: int | Absent = staff()
    returned: int | Absent = staff()
    commission: int | Absent = staff()
    house_net: int | Absent = staff()
    refunded: int | Absent = staff()
    settled_early: int | Absent = staff()  # stakes a check (Xì Dách) settled during the round


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundVoided(TableEvent):
    TYPE = "round_voided"
    round_id: str = public(required=True)
    reason: str | Absent = public()
    refunded: int | Absent = staff()
    change_shoe: bool | Absent = staff()
    refunds: object | Absent = staff()
    stood: Sequence[str] | Absent = staff()  # stakes a check settled before the void: they stand


# -- the seated bank (Xì Dách room) -------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class RoomClosed(TableEvent):
    """A seated bank nobody qualifies to take: the room is closed until one does."""

    TYPE = "room_closed"
    reason: str | Absent = public()
    needs: int | Absent = public()
    passes_from: int | Absent = staff()
    round_id: str | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class RoomReopened(TableEvent):
    TYPE = "room_reopened"
    seat: int | Absent | None = public()
    passes_from: int | Absent | None = staff()


# -- incidents ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentRaised(TableEvent):
    TYPE = "incident_raised"
    kind: str = public(required=True)
    blocking: bool = public(required=True)
    incident_id: str = staff(required=True)
    round_id: str | Absent | None = staff()
    details: Mapping[str, Any] | Absent = staff()
    raised_by: str | Absent = staff()
    procedure: str | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentResolved(TableEvent):
    TYPE = "incident_resolved"
    SHOWN = True
    incident_id: str = staff(required=True)
    resolution: str | Absent = staff()
    resolved_by: str | Absent = staff()


# -- seats and decisions ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionAwaited(TableEvent):
    """Whose turn, until when (seats, never accounts)."""

    TYPE = "decision_awaited"
    MASK = staticmethod(_mask_actors)
    round_id: str = public(required=True)
    clock: str = public(required=True)
    actors: Sequence[str] = public(required=True)
    ms: int | Absent = public()
    deadline: str = public(required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionTaken(TableEvent):
    TYPE = "action_taken"
    MASK = staticmethod(_mask_actor)
    round_id: str = public(required=True)
    actor: str = public(required=True)
    action: str = public(required=True)
    hand: int | Absent | None = public()
    auto: str | Absent = public()  # why the rules played it: timeout, disconnected
    target: str | Absent | None = staff()
    account: str | Absent | None = staff()
    by: str | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatTaken(TableEvent):
    TYPE = "seat_taken"
    seat: int = public(required=True)
    pending: bool | Absent = public()
    account: str = staff(required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatReleased(TableEvent):
    TYPE = "seat_released"
    seat: int = public(required=True)
    account: str | Absent = staff()
    reason: str | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerDisconnected(TableEvent):
    TYPE = "player_disconnected"
    seat: int = public(required=True)
    round_id: str | Absent | None = staff()


# -- the consoles' records on a table's log (no change to the table's state) ------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class VoidRequested(TableEvent):
    TYPE = "void_requested"
    SHOWN = False
    request_id: str = staff(required=True)
    round_id: str | Absent = staff()
    reason: str | Absent = staff()
    change_shoe: bool | Absent = staff()
    stake: int | Absent = staff()
    threshold: int | Absent | None = staff()
    requested_by: str | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class VoidApproved(TableEvent):
    TYPE = "void_approved"
    SHOWN = False
    request_id: str = staff(required=True)
    round_id: str | Absent = staff()
    requested_by: str | Absent = staff()
    approved_by: str | Absent = staff()


@dataclass(frozen=True, slots=True, kw_only=True)
class DealerSignedIn(TableEvent):
    TYPE = "dealer_signed_in"
    SHOWN = False
    dealer: str = staff(required=True)


CLASSES: Final[tuple[type[TableEvent], ...]] = (
    TableOpened,
    ShoeInserted,
    CardBurnt,
    CutCardDrawn,
    ShoeEnded,
    ReaderStatus,
    BettingOpened,
    BetsPlaced,
    BettingClosed,
    CardDealt,
    CardShowAgain,
    CardsRearranged,
    CardsRevealed,
    CardSetAside,
    RoundResult,
    BetsSettled,
    BetsRefunded,
    CommissionCredited,
    RoundSettled,
    RoundVoided,
    RoomClosed,
    RoomReopened,
    IncidentRaised,
    IncidentResolved,
    DecisionAwaited,
    ActionTaken,
    SeatTaken,
    SeatReleased,
    PlayerDisconnected,
    VoidRequested,
    VoidApproved,
    DealerSignedIn,
)

REGISTRY: Final[Mapping[str, type[TableEvent]]] = {cls.TYPE: cls for cls in CLASSES}


def event_class(event_type: str) -> type[TableEvent]:
    cls = REGISTRY.get(event_type)
    if cls is None:
        raise UnknownEvent(f"unknown table event type {event_type!r}")
    return cls


def parse(event_type: str, payload: Mapping[str, Any]) -> TableEvent:
    """A stored event as its class (an unknown type or field is an :class:`EventError`)."""
    return event_class(event_type).from_payload(payload)


def parse_known(event_type: str, payload: Mapping[str, Any]) -> TableEvent | None:
    """A stored event as its class if it is a table event (None for another log's type,
    such as the wallet's credits on a full export); a table event that does not read as
    its class is an :class:`EventError`."""
    cls = REGISTRY.get(event_type)
    return None if cls is None else cls.from_payload(payload)


def audiences(cls: type[TableEvent]) -> dict[str, Audiences]:
    """Each field of ``cls`` and who may see it (a field without one: a KeyError)."""
    return {f.name: f.metadata["audience"] for f in dataclasses.fields(cls)}


def spec_of(cls: type[TableEvent]) -> EventSpec:
    """The projection's reading of a class: its fields' audiences, whether the public gets
    it, its owned list and its mask."""
    fields = audiences(cls)
    shown = cls.SHOWN
    if shown is None:
        shown = any(a is PUBLIC for a in fields.values()) and cls.OWNED is None
    return EventSpec(fields, shown, cls.OWNED, cls.MASK)
