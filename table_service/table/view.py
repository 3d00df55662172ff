"""Who may see what: audiences declared with the data, and the one projection that applies them.

Every field of every table event (on its typed class, :mod:`table_service.table.events`),
and every field of every read model a route returns (the table's summary, a round, a
round's detail and its ``settle_input``, here) is declared with its audience: ``public``;
``owner`` (the operator owning the account the record names); the table's ``dealer``;
``supervisor``; ``regulator``; ``admin``. :func:`view` is the only way
such data leaves the service: the REST reads, the command answers, the staff, operator and
public streams, the NATS subjects, the consoles. A field nobody declared is left out (so a
new field is private until someone says who may see it), and with ``LIVETABLE_STRICT_VIEW=1``
(the test suite) it is an error, so a new field cannot slip by unnoticed.

Face-down cards: a card dealt face down (the Xì Dách banker's hole card, a hidden seat's
cards) is shown to the table's staff (the dealer deals it, a supervisor or regulator sees
everything) and to nobody else until the game reveals it (a ``cards_revealed`` event).

Events are projected for three classes of viewer only (:attr:`Viewer.key`): the public,
each operator, and the staff; the event declarations use only ``public``, ``owner`` and the
whole staff, so every subscriber of a class gets the same bytes and the stream renders each
event once per class, never once per subscriber.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from audit.store import StoredEvent
from table_service.table.audience import (
    OWNED,
    PUBLIC,
    STAFF,
    Audience,
    Audiences,
    EventSpec,
)
from table_service.table.events import REGISTRY, spec_of


class UndeclaredField(LookupError):
    """A record carries a field (or is of a type) nobody declared an audience for."""


def strict() -> bool:
    """Undeclared fields raise (tests), instead of being left out (production)."""
    return os.environ.get("LIVETABLE_STRICT_VIEW", "") not in ("", "0")


def _nobody(_: str) -> bool:
    return False


@dataclass(frozen=True)
class Viewer:
    """Who reads: ``role`` is the audience the principal belongs to (``public`` for an
    anonymous client, ``owner`` for an operator, else its staff role); ``owns`` says which
    accounts belong to an operator (memoised by the caller)."""

    role: Audience
    operator: str | None = None
    owns: Callable[[str], bool] = field(default=_nobody, compare=False)

    @property
    def staff(self) -> bool:
        return self.role in STAFF

    @property
    def key(self) -> str:
        """The projection class: every viewer with the same key sees the same bytes of an
        event (public, one operator, or the staff)."""
        if self.role is Audience.OWNER:
            return f"operator:{self.operator}"
        return "staff" if self.staff else "public"

    def sees(self, audience: Audiences, owned: bool = False) -> bool:
        """Whether a field of ``audience`` is shown (``owned``: the record is the viewer's:
        an operator sees an ``owner`` field of its own records only)."""
        if Audience.PUBLIC in audience:
            return True
        if self.role is Audience.OWNER:
            return owned and Audience.OWNER in audience
        return self.role in audience


PUBLIC_VIEWER: Final = Viewer(Audience.PUBLIC)
STAFF_VIEWER: Final = Viewer(Audience.SUPERVISOR)
DEALER_VIEWER: Final = Viewer(Audience.DEALER)


def viewer_of(who: Any, owns: Callable[[str], bool] | None = None) -> Viewer:
    """The viewer of an authenticated principal (an ``Identity``): operators own accounts."""
    role = getattr(getattr(who, "role", None), "value", None)
    if role == "operator":
        return Viewer(Audience.OWNER, str(who.actor), owns or _nobody)
    if role in ("dealer", "supervisor", "regulator", "admin"):
        return Viewer(Audience(role))
    return PUBLIC_VIEWER


# -- events ----------------------------------------------------------------------------------
# Every table event type, every payload field, as the typed events declare them.
EVENTS: Final[Mapping[str, EventSpec]] = {t: spec_of(cls) for t, cls in REGISTRY.items()}


def event_spec(event_type: str) -> EventSpec | None:
    spec = EVENTS.get(event_type)
    if spec is None and strict():
        raise UndeclaredField(f"event type {event_type!r} declares no audiences")
    return spec


def _undeclared(spec: EventSpec, payload: Mapping[str, Any], what: str) -> list[str]:
    extra = [k for k in payload if k not in spec.fields]
    if extra and strict():
        raise UndeclaredField(f"{what}: field(s) {extra} declare no audience")
    return extra


def _envelope(event: StoredEvent, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "table_id": event.table_id,
        "round_id": event.round_id,
        "type": event.type,
        "ts": event.ts,
        "data": data,
    }


def _event_view(event: StoredEvent, viewer: Viewer) -> dict[str, Any] | None:
    spec = event_spec(event.type)
    payload = event.payload
    if viewer.staff:
        if spec is None:
            return None
        extra = _undeclared(spec, payload, event.type)
        record = event.to_json()
        if extra:  # a field nobody declared stays in the log, not in a view
            record["payload"] = {k: v for k, v in payload.items() if k in spec.fields}
        return record
    if spec is None:
        return None
    _undeclared(spec, payload, event.type)
    if spec.owned is not None:
        if viewer.role is not Audience.OWNER:
            return None
        mine = [b for b in payload.get(spec.owned, ()) if viewer.owns(str(b.get("account")))]
        if not mine:
            return None
        data = {k: payload.get(k) for k, aud in spec.fields.items() if aud is PUBLIC}
        data.update(owner_fields(event))
        data[spec.owned] = mine
        return _envelope(event, data)
    shown = spec.public(payload) if callable(spec.public) else spec.public
    if not shown:
        return None
    data = {k: payload.get(k) for k, aud in spec.fields.items() if viewer.sees(aud)}
    if spec.mask is not None:
        spec.mask(data, payload)
    return _envelope(event, data)


def staff_record(event: StoredEvent) -> dict[str, Any]:
    """The staff's view of a stored record for a feed that must never stop (the NATS table
    subjects): its declared fields, an undeclared one left out even in strict mode (the
    publisher replicates the log; the streams and the suite's property test are where an
    undeclared field is an error)."""
    spec = EVENTS.get(event.type)
    record = event.to_json()
    if spec is None:
        record["payload"] = {}
    elif any(k not in spec.fields for k in event.payload):
        record["payload"] = {k: v for k, v in event.payload.items() if k in spec.fields}
    return record


def owner_fields(event: StoredEvent) -> dict[str, Any]:
    """The fields of an event with owned items (bets, results, refunds) that the owner of
    those items sees besides them and the public fields (a refund's reason, an early
    settlement's flag): for the operator stream and the operator feeds on NATS."""
    spec = event_spec(event.type)
    if spec is None or spec.owned is None:
        return {}
    _undeclared(spec, event.payload, event.type)
    return {k: v for k, v in event.payload.items() if k != spec.owned and spec.fields[k] is OWNED}


# -- read models --------------------------------------------------------------------------------
class Cards:
    """A list of cards in shoe order whose face-down ones (by index) only the staff see."""


class Behind:
    """A value that may name a bet-behind bet (``behind:<bet id>``): its bet id is seen by
    the staff and the bet's owner; others see ``behind``."""


@dataclass(frozen=True)
class Each:
    """A list of records of one shape. ``by``: each item names its owner in this field
    (``account``: an account; ``id``/``bet_id``: a bet): items the viewer does not own are
    left out, unless ``keep`` (then its owner-only fields are)."""

    shape: Mapping[str, Any]
    by: str | None = None
    bet: bool = False
    keep: bool = False


@dataclass(frozen=True)
class Owned:
    """One record whose owner-only fields go to its owner (``by``: the field naming it)."""

    shape: Mapping[str, Any]
    by: str
    bet: bool = False


@dataclass(frozen=True)
class Context:
    """What a read model's projection needs besides the viewer: the indexes of cards still
    face down, and the bets the viewer owns (by id: a stake id ``<bet>~double1`` is its
    bet's)."""

    hidden: Collection[int] = ()
    bets: Collection[str] = ()


def _owns_bet(ctx: Context, bet_id: Any) -> bool:
    text = str(bet_id)
    return text in ctx.bets or text.split("~", 1)[0] in ctx.bets


def _project(value: Any, shape: Any, viewer: Viewer, ctx: Context, owned: bool, path: str) -> Any:
    if value is None:
        return None
    if isinstance(shape, frozenset):
        return value
    if shape is Cards:
        if viewer.staff or not ctx.hidden:
            return list(value)
        return [None if i in ctx.hidden else c for i, c in enumerate(value)]
    if shape is Behind:
        return _mask_behind(value, viewer, ctx)
    if isinstance(shape, Each):
        out = []
        for item in value:
            mine = _item_owned(item, shape.by, shape.bet, viewer, ctx)
            foreign = shape.by is not None and not mine and not viewer.staff
            named = isinstance(item, Mapping) and shape.by in item
            if foreign and named and not shape.keep:
                continue  # someone else's: left out
            out.append(_project(item, shape.shape, viewer, ctx, mine, path + "[]"))
        return out
    if isinstance(shape, Owned):
        mine = _item_owned(value, shape.by, shape.bet, viewer, ctx)
        return _project(value, shape.shape, viewer, ctx, mine, path)
    if isinstance(shape, Mapping):
        if not isinstance(value, Mapping):
            return value
        extra = [k for k in value if k not in shape]
        if extra and strict():
            raise UndeclaredField(f"{path}: field(s) {extra} declare no audience")
        result: dict[str, Any] = {}
        for key, item in value.items():
            sub = shape.get(key)
            if sub is None:
                continue
            audience = sub if isinstance(sub, frozenset) else PUBLIC
            if viewer.sees(audience, owned):
                result[key] = _project(item, sub, viewer, ctx, owned, f"{path}.{key}")
            elif isinstance(sub, frozenset) and Audience.OWNER in sub:
                result[key] = None  # someone else's: the field is there, its value is not
        return result
    raise TypeError(f"{path}: unknown shape {shape!r}")


def _item_owned(item: Any, by: str | None, bet: bool, viewer: Viewer, ctx: Context) -> bool:
    if by is None or viewer.role is not Audience.OWNER or not isinstance(item, Mapping):
        return False
    named = item.get(by)
    if named is None:
        return False
    return _owns_bet(ctx, named) if bet else viewer.owns(str(named))


def _mask_behind(value: Any, viewer: Viewer, ctx: Context) -> Any:
    if viewer.staff:
        return value
    if isinstance(value, str):
        kind, sep, bet = value.partition(":")
        if sep and kind == "behind" and not _owns_bet(ctx, bet):
            return "behind"
        return value
    if isinstance(value, list):
        return [_mask_behind(v, viewer, ctx) for v in value]
    if isinstance(value, Mapping):
        return {
            _mask_behind(k, viewer, ctx): _mask_behind(v, viewer, ctx) for k, v in value.items()
        }
    return value


P, S, OWN = PUBLIC, STAFF, OWNED

SHOE: Final = {
    k: P for k in ("shoe_no", "ready", "burn_remaining", "cut_card_drawn", "games", "cards_seen")
}
INCIDENT: Final = {
    "incident_id": P,
    "kind": P,
    "blocking": P,
    "round_id": P,
    "details": S,
}

# The table's summary (``GET /tables``, ``GET /tables/{t}``, every command's answer).
TABLE: Final[Mapping[str, Any]] = {
    "table_id": P,
    "game": P,
    "opened": P,
    "shoe": SHOE,
    "round": {
        "round_id": P,
        "game_number": P,
        "phase": P,
        "closes_at": P,
        "cards": Cards,
        "next_position": P,
        "next": Behind,
        "view": P,  # the game's own public view (face-down cards as XX)
        "dealer_view": S,
        "turn": Behind,
        "bets_open": P,
        "outcome": P,
        "show_again": P,
    },
    "carried": S,
    "seats": Each(
        {"seat": P, "account": OWN, "pending": P, "disconnected": P}, "account", keep=True
    ),
    "paused": P,
    "incidents": Each(INCIDENT),
    "reader_online": P,
    "last_seq": P,
    "bank": {k: P for k in ("seat", "passes_from", "room_closed", "reason", "needs")},
}

BET_LINE: Final = {"id": OWN, "type": P, "stake": OWN}

# A round's ``settle_input`` (the game's settle command's input), every game's shape.
SETTLE_INPUT: Final[Mapping[str, Any]] = {
    "round": P,
    "game_number": P,
    "profile": P,
    "table": P,
    "room_closed": P,
    "cards": Cards,
    "bets": Each(BET_LINE, "id", bet=True),  # baccarat
    "seats": Each(  # blackjack: bets by seat; Xì Dách: one stake per seat
        {
            "seat": P,
            "stake": OWN,
            "id": OWN,
            "hidden": P,
            "bets": Each(BET_LINE, "id", bet=True),
        },
        "id",
        bet=True,
    ),
    "decisions": Each(
        {"seat": P, "hand": P, "action": P, "target": P, "behind": OWN},
        "behind",
        bet=True,
        keep=True,
    ),
    "banker": Owned({"seat": P, "balance": OWN, "id": OWN}, "id", bet=True),
}

ROUND: Final[Mapping[str, Any]] = {
    "round_id": P,
    "table_id": P,
    "shoe_no": P,
    "game_number": P,
    "phase": P,
    "cards": Cards,
    "outcome": P,
    "void_reason": P,
    "opened_seq": P,
    "closed_seq": P,
}

BET: Final = {
    k: OWN for k in ("bet_id", "key", "account", "type", "stake", "status", "result", "returned")
} | {"commission": OWN}

ROUND_DETAIL: Final[Mapping[str, Any]] = {
    **ROUND,
    "game": P,
    "settle_input": SETTLE_INPUT,
    "bets": Each(BET, "account"),
}

READ_MODELS: Final[Mapping[str, Mapping[str, Any]]] = {
    "table": TABLE,
    "round": ROUND,
    "round_detail": ROUND_DETAIL,
    "settle_input": SETTLE_INPUT,
}


@dataclass(frozen=True)
class ReadModel:
    """A read model as it is about to leave: its kind (a key of :data:`READ_MODELS`), its
    data, and the context the projection needs."""

    kind: str
    data: Mapping[str, Any]
    context: Context = Context()


def view(record: StoredEvent | ReadModel | Any, viewer: Viewer) -> dict[str, Any] | None:
    """What ``viewer`` may see of ``record`` (None: nothing of it): a stored event, a
    :class:`ReadModel`, or a table's state (its summary)."""
    if isinstance(record, StoredEvent):
        return _event_view(record, viewer)
    if not isinstance(record, ReadModel):
        record = table_model(record, viewer)
    return model_view(record, viewer)


def model_view(model: ReadModel, viewer: Viewer) -> dict[str, Any]:
    """What ``viewer`` may see of a read model (always something: its public fields)."""
    out = _project(model.data, READ_MODELS[model.kind], viewer, model.context, False, model.kind)
    assert isinstance(out, dict)
    return out


# -- the table's state as a read model ----------------------------------------------------------
def hidden_cards(rnd: Any) -> frozenset[int]:
    """Indexes of a round's cards dealt face down and not revealed yet (by the game)."""
    if rnd is None or rnd.play is None or rnd.game is None:
        return frozenset()
    down = getattr(rnd.game, "face_down", None)
    if down is None:
        return frozenset()
    return frozenset(down(rnd.play.state)) - frozenset(rnd.revealed)


def table_model(state: Any, viewer: Viewer) -> ReadModel:
    """A table's state as the summary read model, with the cards still face down and the
    bets ``viewer`` owns."""
    rnd = state.round
    bets: Collection[str] = ()
    if rnd is not None and viewer.role is Audience.OWNER:
        bets = {b.bet_id for b in rnd.bets.values() if viewer.owns(b.account)}
    return ReadModel("table", state.public_summary(), Context(hidden_cards(rnd), bets))


def table_view(state: Any, viewer: Viewer) -> dict[str, Any]:
    """What ``viewer`` may see of a table's state (its summary)."""
    return model_view(table_model(state, viewer), viewer)
