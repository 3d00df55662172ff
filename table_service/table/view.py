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
everything) and, as the rules let a player see its own hand, to the operator of the
account that plays that hand (a hidden seat's player; a seated banker, its hole card), and
to nobody else until the game reveals it (a ``cards_revealed`` event). The house banker's
hole card is nobody's hand: no operator sees it before it is turned. A seated banker's
face-down card is the banker's alone (the rules: "seen only by the banker"): its operator
and the oversight audiences (supervisor, regulator, admin) see it, the dealer does not (a
third party there, who could signal it; :func:`seated_bank_hidden`); the house's hole card
the dealer sees, as it plays the house's hand by the published policy. An operator sees its
own face-down cards alike in the cards and in the game's layout (:func:`own_layout`).

Whole records: the audit log (``GET /audit/events``), the recall and the pit's money are
declared for :data:`~table_service.table.audience.RECORDS` (supervisor, regulator, admin);
an export bundle for the regulator alone (:data:`BUNDLE`: it carries the complete log,
whose hashes verify only over every field, so it is never projected).

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
    RECORDS,
    REGULATOR,
    STAFF,
    Audience,
    Audiences,
    EventSpec,
)
from table_service.table.events import (
    REGISTRY,
    CardDealt,
    CardsRearranged,
    IncidentRaised,
    spec_of,
)
from table_service.table.policy import BANK_BET

FACE_DOWN = "XX"  # a face-down card in a game's public layout


class UndeclaredField(LookupError):
    """A record carries a field (or is of a type) nobody declared an audience for."""


def strict() -> bool:
    """Undeclared fields raise (tests), instead of being left out (production)."""
    return os.environ.get("LIVETABLE_STRICT_VIEW", "") not in ("", "0")


def _nobody(_: str) -> bool:
    return False


def no_hand(_round: str | None, _seat: int | None) -> bool:
    return False


@dataclass(frozen=True)
class Viewer:
    """Who reads: ``role`` is the audience the principal belongs to (``public`` for an
    anonymous client, ``owner`` for an operator, else its staff role); ``owns`` says which
    accounts belong to an operator (memoised by the caller); ``holds(round, seat)`` whether
    an operator's account plays that hand of that round (seat None: a seated banker), for
    the stream's face-down cards (a table's summary and a round's detail know the hands)."""

    role: Audience
    operator: str | None = None
    owns: Callable[[str], bool] = field(default=_nobody, compare=False)
    holds: Callable[[str | None, int | None], bool] = field(default=no_hand, compare=False)

    @property
    def staff(self) -> bool:
        return self.role in STAFF

    @property
    def sees_face_down(self) -> bool:
        """Sees every face-down card: the staff, but a dealer not a seated banker's (a
        read model's context then names the cards it may not see)."""
        return self.staff and self.role is not Audience.DEALER

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


def viewer_of(
    who: Any,
    owns: Callable[[str], bool] | None = None,
    holds: Callable[[str | None, int | None], bool] | None = None,
) -> Viewer:
    """The viewer of an authenticated principal (an ``Identity``): operators own accounts."""
    role = getattr(getattr(who, "role", None), "value", None)
    if role == "operator":
        return Viewer(Audience.OWNER, str(who.actor), owns or _nobody, holds or no_hand)
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
        dealer = viewer.role is Audience.DEALER
        if spec.mask is not None and dealer and _seated_bank_hole(event, viewer):
            record["payload"] = dict(record["payload"])
            spec.mask(record["payload"], payload)
        if dealer and _names_cards(event) and viewer.holds(event.round_id, None):
            record["payload"] = bank_cards_unnamed(event.type, record["payload"])
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
        if data.get("card") is None and _own_face_down(event, viewer):
            data["card"] = payload.get("card")  # its own player's hand: as the player sees it
    return _envelope(event, data)


def _seated_bank_hole(event: StoredEvent, viewer: Viewer) -> bool:
    """Cards dealt face down at a round a seated banker plays (``holds(round, None)``: the
    dealer's stream asks the round's bets): the banker's, which the dealer does not see
    before they are turned (:func:`seated_bank_hidden`)."""
    p = event.payload
    if event.type == CardDealt.TYPE:
        down = p.get("face_up") is False and p.get("seat") is None
    else:
        down = event.type == "cards_rearranged" and bool(p.get("face_down"))
    return down and viewer.holds(event.round_id, None)


# What an incident's details may say of a card (the reader's and the rules' incidents: a
# card read again, the shoe's and the camera's readings, an exposed card, the message).
CARD_DETAILS: Final = frozenset({"card", "last_card", "serial", "camera", "text", "cards"})


def _names_cards(event: StoredEvent) -> bool:
    """An event that may name, outside the dealt card's own event, a card in a hand: an
    incident's details, a re-arrangement's entered and read-twice cards."""
    p = event.payload
    if event.type == IncidentRaised.TYPE:
        details = p.get("details")
        return isinstance(details, Mapping) and not CARD_DETAILS.isdisjoint(details)
    return event.type == CardsRearranged.TYPE and bool(p.get("entered") or p.get("read_twice"))


def unnamed_details(details: Any) -> Any:
    """An incident's details without the cards they name (a dealer at a seated bank)."""
    if not isinstance(details, Mapping):
        return details
    return {k: (None if k in CARD_DETAILS else v) for k, v in details.items()}


def bank_cards_unnamed(event_type: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """A dealer's view, at a round a seated player banks, of an event that names cards
    outside their own dealing: an incident's details (a possible duplicate of the card
    before it, the shoe's and the camera's reading of the card owed, which may be the
    banker's face-down card) and a re-arrangement's entered and read-twice cards (a
    missed card entered where the banker's face-down card goes) name no card. The dealt
    cards' own events say which are face up; these do not, so none is named to a dealer
    there (the supervisor, who resolves the incident, and the regulator see them)."""
    out = dict(payload)
    if event_type == IncidentRaised.TYPE:
        out["details"] = unnamed_details(out.get("details"))
    if out.get("entered"):
        out["entered"] = [None for _ in out["entered"]]
    twice = out.get("read_twice")
    if isinstance(twice, Mapping) and "card" in twice:
        out["read_twice"] = {**twice, "card": None}
    return out


def _own_face_down(event: StoredEvent, viewer: Viewer) -> bool:
    """A card dealt face down into a hand the operator's account plays (a hidden seat's
    player sees its own cards; a seated banker its hole card): not the house's hand."""
    p = event.payload
    if viewer.role is not Audience.OWNER or event.type != CardDealt.TYPE:
        return False
    if p.get("face_up") is not False or p.get("card") is None:
        return False
    seat = p.get("seat")
    return viewer.holds(event.round_id, seat if isinstance(seat, int) else None)


def staff_record(event: StoredEvent) -> dict[str, Any]:
    """The staff's view of a stored record for the NATS table subjects: its declared
    fields. An undeclared field (or type) is refused under ``LIVETABLE_STRICT_VIEW=1`` as on
    every other outward path (the publisher stops on it, loudly); in production it is left
    out, so a feed that replicates the log never stops on a field nobody declared."""
    spec = event_spec(event.type)
    record = event.to_json()
    if spec is None:
        record["payload"] = {}
    elif _undeclared(spec, event.payload, event.type):
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
    face down, those of them the viewer may see (its own player's hand), and the bets the
    viewer owns (by id: a stake id ``<bet>~double1`` is its bet's)."""

    hidden: Collection[int] = ()
    bets: Collection[str] = ()
    shown: Collection[int] = ()


def _owns_bet(ctx: Context, bet_id: Any) -> bool:
    text = str(bet_id)
    return text in ctx.bets or text.split("~", 1)[0] in ctx.bets


def _project(value: Any, shape: Any, viewer: Viewer, ctx: Context, owned: bool, path: str) -> Any:
    if value is None:
        return None
    if isinstance(shape, frozenset):
        return value
    if shape is Cards:
        if viewer.sees_face_down or not ctx.hidden:
            return list(value)
        down = set(ctx.hidden) - set(ctx.shown)
        return [None if i in down else c for i, c in enumerate(value)]
    if shape is Behind:
        return _mask_behind(value, viewer, ctx)
    if isinstance(shape, Each):
        out = []
        for item in value:
            # items that name no owner are the record's: its owner's if the record is
            mine = (
                owned if shape.by is None else _item_owned(item, shape.by, shape.bet, viewer, ctx)
            )
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


def refusal_details(details: Mapping[str, Any]) -> dict[str, Any]:
    """A refusal's details as its caller, whoever that is, may see them: a bet behind that
    the refusal names (an awaited actor, the turn expected) is ``behind``, as in every read;
    the caller's own actor and its own legal moves stay as they are."""
    return {
        k: v if k in ("actor", "legal_actions") else _mask_behind(v, PUBLIC_VIEWER, Context())
        for k, v in details.items()
    }


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

# ``GET /incidents``: an incident as its row keeps it (the route is the staff's; what the
# public may know of one is in the table's summary).
INCIDENT_ROW: Final[Mapping[str, Any]] = {
    **{k: P for k in ("incident_id", "table_id", "round_id", "kind", "blocking", "status")},
    **{k: S for k in ("details", "raised_by", "resolution", "resolved_by")},
}

# ``GET /accounts/{account}``: the account's owner and the staff who read money.
ACCOUNT: Final = Owned(
    {
        "account": OWN,
        "balance": OWN,
        "entries": Each({k: OWN for k in ("amount", "kind", "bet_id", "reference", "seq")}),
    },
    "account",
)

# ``GET /recall/search``: a round found, with the searched account's own bets (an operator
# searches by an account of its own only). ``bets``/``staked`` are the round's count and
# sum of stakes, as public as the consoles' stake totals; no other account is named.
FOUND_ROUND: Final[Mapping[str, Any]] = {
    **{
        k: P
        for k in (
            "round_id",
            "table_id",
            "shoe_no",
            "game_number",
            "phase",
            "opened_at",
            "closed_at",
            "outcome",
            "void_reason",
            "bets",
            "staked",
        )
    },
    "account": OWN,
    "account_bets": Each(
        {k: OWN for k in ("bet_id", "type", "stake", "status", "result", "returned")}
    ),
}
SEARCH: Final[Mapping[str, Any]] = {"rounds": Each(FOUND_ROUND, "account", keep=True), "more": P}

# The regulator's recall (``GET /tables/{t}/recall…``): whole records, every step, every
# bet and card (face-down ones too), for the supervisor, the regulator and an admin.
RECALL_ROUND: Final[Mapping[str, Any]] = {
    k: RECORDS
    for k in (
        "round_id",
        "table_id",
        "game",
        "game_number",
        "shoe_no",
        "phase",
        "dealer",
        "cards",
        "outcome",
        "void_reason",
        "steps",
        "bets",
        "bets_total",
        "bets_next",
        "settlement",
        "settlement_total",
        "settlement_next",
        "incidents",
        "settle_input",
        "table_round",
        "opened_seq",
        "closed_seq",
        "opened_at",
        "closed_at",
    )
}
RECALL: Final[Mapping[str, Any]] = {"table_id": RECORDS, "rounds": Each(RECALL_ROUND)}
RECALL_PAGE: Final[Mapping[str, Any]] = {
    k: RECORDS for k in ("table_id", "round_id", "section", "items", "next")
}

# ``GET /audit/events``: the stored record itself (what the chain hashes).
AUDIT_EVENT: Final[Mapping[str, Any]] = {
    k: RECORDS
    for k in ("seq", "table_id", "round_id", "type", "actor", "ts", "payload", "prev_hash", "hash")
}

# An export bundle's files: the complete log and what is derived from it, for a regulator.
BUNDLE: Final[Mapping[str, Any]] = {
    k: REGULATOR
    for k in (
        "bundle.json",
        "events.jsonl",
        "checkpoints",
        "verifier.key",
        "rules",
        "shoes.jsonl",
        "rounds.jsonl",
        "MANIFEST.sha256",
    )
}


def bundle_files(names: Collection[str]) -> list[str]:
    """The files of an export bundle that nobody declared (by their first path segment):
    an error under ``LIVETABLE_STRICT_VIEW=1``. A bundle is the regulator's: it carries the
    complete log, never a projection of it, so what goes in it is declared here."""
    extra = sorted({name.split("/", 1)[0] for name in names} - set(BUNDLE))
    if extra and strict():
        raise UndeclaredField(f"bundle: file(s) {extra} declare no audience")
    return extra


# The consoles' table data. The public console (studio graphics, ``/public/tables/{t}/view``):
CONSOLE_ROUND: Final[Mapping[str, Any]] = {
    k: P
    for k in (
        "round_id",
        "game_number",
        "phase",
        "deadline",
        "closes_at",
        "next",
        "turn",  # from the projected summary: a bet behind's id already masked
        "outcome",
        "layout",  # the game's public view: face-down cards as the game hides them
        "stakes",  # players, bets and the sum staked: counts and a sum, no account
        "table_round",
    )
}
CONSOLE: Final[Mapping[str, Any]] = {
    **{k: P for k in ("table_id", "game", "opened", "paused", "reader_online", "last_seq")},
    "shoe": SHOE,
    "round": CONSOLE_ROUND,
    "incidents": Each({"kind": P, "blocking": P}),
    "server_time": P,
    "reader": {"kind": P},
    "seats": Each({"seat": P, "pending": P}),
}
# The dealer console (``/console/tables/{t}/view``: every card, the incidents' details, the
# seats' stakes) and the pit's overview (``/console/overview``: also who holds each seat,
# the money in play, large bets by account, void approvals): the staff's, the pit's money
# for those who read whole records (not a dealer).
PIT = RECORDS
CONSOLE_STAFF: Final[Mapping[str, Any]] = {
    **{k: S for k in CONSOLE},
    **{
        k: S
        for k in ("dealer_incidents", "house_banker", "bank_seat", "dealer_on_duty", "last_card")
    },
    **{k: PIT for k in ("money", "void_approval")},
}
# The pit's incident timeline (``/console/timeline``): who raised and resolved each.
TIMELINE_ITEM: Final[Mapping[str, Any]] = {
    **{k: P for k in ("incident_id", "table_id", "round_id", "kind", "blocking", "status")},
    **{
        k: S
        for k in (
            "procedure",
            "procedure_key",
            "raised_by",
            "raised_at",
            "resolved_by",
            "resolved_at",
            "resolution",
        )
    },
}
# ``/tables/{t}/roads``: the shoe's scoreboards, from settled rounds' public outcomes.
ROADS: Final[Mapping[str, Any]] = {
    k: P
    for k in (
        "table_id",
        "shoe_no",
        "last_seq",
        "rows",
        "bead_plate",
        "big_road",
        "big_eye_boy",
        "small_road",
        "cockroach_pig",
        "counts",
        "predictions",
    )
}

# A command's answer to its caller (every table command, ``POST …/bets`` included): what
# the command did, in the caller's own terms (its own bets' keys, ids and refusals), the
# log's head, and the table's summary already projected for the caller (``table_view``).
BET_RESULT: Final[Mapping[str, Any]] = {
    k: P for k in ("key", "status", "bet_id", "error", "reason", "bet_status", "round_id")
}
ANSWER: Final[Mapping[str, Any]] = {
    **{
        k: P
        for k in (
            "seq",
            "table",  # table_view(state, caller): projected already
            "shoe_no",
            "next",
            "round_id",
            "game_number",
            "closes_at",
            "betting_closed",
            "next_position",
            "incident_id",
            "blocking",
            "procedure",
            "void_needs_approval",
            "voided",
            "seat",
            "plays_from",
            "auto_play",
            "move",
            "timed_out",
        )
    },
    "results": Each(BET_RESULT),
}

# The two-person void (``POST …/round/void-requests`` and ``…/approve``, the supervisors'
# routes): the request as the log records it (the stake in play, who asked) and the
# approval with the void's own answer. The pit's records: not a dealer's, not an operator's.
VOID_REQUEST: Final[Mapping[str, Any]] = {
    k: RECORDS
    for k in (
        "request_id",
        "round_id",
        "reason",
        "change_shoe",
        "stake",
        "threshold",
        "requested_by",
        "seq",
        "approved",
    )
}
VOID_APPROVAL: Final[Mapping[str, Any]] = {
    k: RECORDS
    for k in ("request_id", "round_id", "requested_by", "approved_by", "approved", "voided")
}
# ``POST …/duty``: the dealer signed in (its name is the staff's, as in the consoles).
DUTY: Final[Mapping[str, Any]] = {"table_id": P, "dealer": S, "seq": P}
# ``POST /accounts/{a}/credit|debit``: the account's owner (and the staff) see its balance.
TRANSFER: Final = Owned({"account": OWN, "balance": OWN, "duplicate": OWN, "seq": P}, "account")
# ``GET /whoami``: the caller's own identity, to the caller (it never names anyone else).
WHOAMI: Final[Mapping[str, Any]] = {k: P for k in ("name", "role", "table_id")}
# The principals (``GET``/``POST``/``DELETE /principals``): an admin's; a token is shown once.
ADMIN: Final = frozenset({Audience.ADMIN})
PRINCIPAL: Final[Mapping[str, Any]] = {
    k: ADMIN for k in ("name", "role", "table_id", "created_at", "revoked_at")
}
PRINCIPAL_CREATED: Final[Mapping[str, Any]] = {k: ADMIN for k in ("name", "role", "token")}
PRINCIPAL_REVOKED: Final[Mapping[str, Any]] = {k: ADMIN for k in ("name", "revoked")}
# The log's signed head and its proofs: hashes only, published (the transparency log).
CHECKPOINT: Final[Mapping[str, Any]] = {k: P for k in ("size", "root_hash", "key_id")}
INCLUSION_PROOF: Final[Mapping[str, Any]] = {
    k: P for k in ("seq", "index", "size", "leaf_hash", "root", "hashes")
}
CONSISTENCY_PROOF: Final[Mapping[str, Any]] = {
    k: P for k in ("old", "new", "old_root", "new_root", "hashes")
}
COSIGNATURE: Final[Mapping[str, Any]] = {"size": P, "stored": P}
# ``GET /studio/tables``: where each table runs (any principal routes its requests by it).
STUDIO_TABLES: Final[Mapping[str, Any]] = {
    "node": P,
    "url": P,
    "tables": Each({k: P for k in ("table_id", "owner", "owner_url", "token", "here")}),
}
# The clock the consoles count down on, and the process's health (no table data).
SERVER_TIME: Final[Mapping[str, Any]] = {"now": P}
HEALTH: Final[Mapping[str, Any]] = {"status": P, "reason": P}

READ_MODELS: Final[Mapping[str, Any]] = {
    "answer": ANSWER,
    "table": TABLE,
    "round": ROUND,
    "round_detail": ROUND_DETAIL,
    "settle_input": SETTLE_INPUT,
    "incident": INCIDENT_ROW,
    "account": ACCOUNT,
    "search": SEARCH,
    "recall": RECALL,
    "recall_round": RECALL_ROUND,
    "recall_page": RECALL_PAGE,
    "audit_event": AUDIT_EVENT,
    "bundle": BUNDLE,
    "console": CONSOLE,
    "console_staff": CONSOLE_STAFF,
    "timeline": TIMELINE_ITEM,
    "roads": ROADS,
    "void_request": VOID_REQUEST,
    "void_approval": VOID_APPROVAL,
    "duty": DUTY,
    "transfer": TRANSFER,
    "whoami": WHOAMI,
    "principal": PRINCIPAL,
    "principal_created": PRINCIPAL_CREATED,
    "principal_revoked": PRINCIPAL_REVOKED,
    "checkpoint": CHECKPOINT,
    "inclusion_proof": INCLUSION_PROOF,
    "consistency_proof": CONSISTENCY_PROOF,
    "cosignature": COSIGNATURE,
    "studio_tables": STUDIO_TABLES,
    "server_time": SERVER_TIME,
    "health": HEALTH,
}

EVENTS_OUT: Final = "events"
"""A stream's frames: each the projection of a logged event (:data:`EVENTS`)."""
TLOG: Final = "tlog"
"""The transparency log's signed checkpoint and tiles: bytes of the log's hashes (C2SP
tlog-tiles), served as they are signed; no table data."""

# Every route and what it answers, by the read model it is built from (its fields declared
# above), a stream's projected events, or the transparency log's bytes. A route missing
# here fails the routes' test (tests/hardening/test_hardening_answers.py): a new route is
# not done until its answer is declared, as a new field is not.
ANSWERS: Final[Mapping[str, str]] = {
    "GET /healthz": "health",
    "GET /readyz": "health",
    "GET /api/v1/whoami": "whoami",
    "GET /api/v1/principals": "principal",
    "POST /api/v1/principals": "principal_created",
    "DELETE /api/v1/principals/{name}": "principal_revoked",
    "GET /api/v1/audit/events": "audit_event",
    "POST /api/v1/audit/checkpoint": "checkpoint",
    "GET /tlog/checkpoint": TLOG,
    "GET /tlog/tile/{tile_path}": TLOG,
    "GET /api/v1/audit/proof/inclusion": "inclusion_proof",
    "GET /api/v1/audit/proof/consistency": "consistency_proof",
    "POST /api/v1/audit/cosignatures": "cosignature",
    "GET /api/v1/tables": "table",
    "GET /api/v1/tables/{table_id}": "table",
    "POST /api/v1/tables/{table_id}/betting/open": "answer",
    "POST /api/v1/tables/{table_id}/betting/close": "answer",
    "POST /api/v1/tables/{table_id}/incidents": "answer",
    "POST /api/v1/tables/{table_id}/incidents/{incident_id}/resolve": "answer",
    "POST /api/v1/tables/{table_id}/round/void": "answer",
    "POST /api/v1/tables/{table_id}/shoe": "answer",
    "POST /api/v1/tables/{table_id}/shoe/change": "answer",
    "POST /api/v1/tables/{table_id}/cards": "answer",
    "POST /api/v1/tables/{table_id}/bets": "answer",
    "POST /api/v1/tables/{table_id}/seats": "answer",
    "POST /api/v1/tables/{table_id}/seats/{seat}/leave": "answer",
    "POST /api/v1/tables/{table_id}/seats/{seat}/disconnected": "answer",
    "POST /api/v1/tables/{table_id}/actions": "answer",
    "GET /api/v1/tables/{table_id}/rounds": "round",
    "GET /api/v1/rounds/{round_id}": "round_detail",
    "GET /api/v1/incidents": "incident",
    "POST /api/v1/accounts/{account}/credit": "transfer",
    "POST /api/v1/accounts/{account}/debit": "transfer",
    "GET /api/v1/accounts/{account}": "account",
    "GET /api/v1/console/time": "server_time",
    "GET /api/v1/public/tables/{table_id}/view": "console",
    "GET /api/v1/console/tables/{table_id}/view": "console_staff",
    "GET /api/v1/console/overview": "console_staff",
    "POST /api/v1/tables/{table_id}/round/void-requests": "void_request",
    "POST /api/v1/tables/{table_id}/round/void-requests/{request_id}/approve": "void_approval",
    "POST /api/v1/tables/{table_id}/duty": "duty",
    "GET /api/v1/tables/{table_id}/roads": "roads",
    "GET /api/v1/tables/{table_id}/recall": "recall",
    "GET /api/v1/tables/{table_id}/recall/{round_id}/{section}": "recall_page",
    "GET /api/v1/tables/{table_id}/recall/{round_id}": "recall_round",
    "GET /api/v1/recall/search": "search",
    "GET /api/v1/console/timeline": "timeline",
    "POST /api/v1/tables/{table_id}/house-move": "answer",
    "GET /api/v1/studio/tables": "studio_tables",
    "WS /api/v1/tables/{table_id}/stream": EVENTS_OUT,
    "WS /api/v1/public/tables/{table_id}/stream": EVENTS_OUT,
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


def hand_account(rnd: Any, seat: int | None) -> str | None:
    """The account that plays a round's hand: the stake at ``seat`` (not a bet behind it,
    nor a stake the round added), or for the banker's hand (None) the seated bank's."""
    for bet in rnd.bets.values():
        if bet.parent is not None:
            continue
        if seat is None and bet.bet_type == BANK_BET:
            return str(bet.account)
        if seat is not None and bet.seat == seat and bet.bet_type not in (BANK_BET, "behind"):
            return str(bet.account)
    return None  # the house's hand, or nobody's: nobody sees its face-down cards


def own_face_down(rnd: Any, hidden: Collection[int], viewer: Viewer) -> frozenset[int]:
    """Which of the face-down cards ``hidden`` are in a hand the operator's account plays
    (it sees them as its player does); none for anyone else (the staff see all anyway)."""
    if viewer.role is not Audience.OWNER or not hidden or rnd is None:
        return frozenset()
    if rnd.play is None or rnd.game is None:
        return frozenset()
    hands = rnd.game.face_down_hands(rnd.play.state)
    mine = set()
    for index in hidden:
        if index in hands:
            account = hand_account(rnd, hands[index])
            if account is not None and viewer.owns(account):
                mine.add(index)
    return frozenset(mine)


def seated_bank_hidden(rnd: Any) -> frozenset[int]:
    """A seated banker's face-down cards not revealed yet: the rules show them to the
    banker alone, so the dealer (a third party at a seated bank, who could signal them)
    does not see them; the oversight audiences do. The house's hand is the dealer's to
    play by its published policy: at a house-banked table the dealer sees its hole card."""
    if rnd is None or rnd.play is None or rnd.game is None:
        return frozenset()
    # the round's bank (kept by the game's state when a void refunds its bets too)
    seated = getattr(rnd.play.state, "bank_bet", None) is not None
    if not seated and hand_account(rnd, None) is None:
        return frozenset()
    hands = rnd.game.face_down_hands(rnd.play.state)
    return frozenset(i for i in hidden_cards(rnd) if i in hands and hands[i] is None)


def seated_bank(rnd: Any) -> bool:
    """Whether a seated player banks the round (its bank is kept by the game's state when a
    void refunds its bets too)."""
    if rnd is None:
        return False
    play = getattr(rnd, "play", None)
    if play is not None and getattr(play.state, "bank_bet", None) is not None:
        return True
    return hand_account(rnd, None) is not None


def _incidents_unnamed(summary: dict[str, Any], round_id: str) -> dict[str, Any]:
    """The summary for a dealer at a round a seated player banks: the round's incidents'
    details name no card (:func:`bank_cards_unnamed`)."""
    items = summary.get("incidents")
    if not items:
        return summary
    unnamed = [
        {**i, "details": unnamed_details(i.get("details"))} if i.get("round_id") == round_id else i
        for i in items
    ]
    return {**summary, "incidents": unnamed}


def incident_model(row: Mapping[str, Any], viewer: Viewer) -> ReadModel:
    """An incident as its row keeps it (``GET /incidents``); for a dealer, an incident of a
    round a seated player banked names no card in its details (``holds(round, None)``)."""
    if viewer.role is Audience.DEALER and viewer.holds(row.get("round_id"), None):
        row = {**row, "details": unnamed_details(row.get("details"))}
    return ReadModel("incident", row)


def face_down(rnd: Any, viewer: Viewer) -> tuple[frozenset[int], frozenset[int]]:
    """A round's cards still face down, and those of them ``viewer`` may see."""
    if viewer.role is Audience.DEALER:
        return seated_bank_hidden(rnd), frozenset()
    if viewer.staff:
        return frozenset(), frozenset()
    hidden = hidden_cards(rnd)
    return hidden, own_face_down(rnd, hidden, viewer)


def table_model(state: Any, viewer: Viewer) -> ReadModel:
    """A table's state as the summary read model, with the cards still face down (and
    those of them in the viewer's own player's hand) and the bets ``viewer`` owns."""
    rnd = state.round
    bets: Collection[str] = ()
    if rnd is not None and viewer.role is Audience.OWNER:
        bets = {b.bet_id for b in rnd.bets.values() if viewer.owns(b.account)}
    hidden, shown = face_down(rnd, viewer) if viewer.staff else (hidden_cards(rnd), None)
    if shown is None:
        shown = own_face_down(rnd, hidden, viewer)
    summary = state.public_summary()
    if hidden and viewer.role is Audience.DEALER:
        summary = _without_bank_hole(summary)
    if viewer.role is Audience.DEALER and seated_bank(rnd):
        summary = _incidents_unnamed(summary, rnd.round_id)
    if shown and summary.get("round") and isinstance(summary["round"].get("view"), Mapping):
        layout = own_layout(summary["round"]["view"], rnd, shown)
        summary = {**summary, "round": {**summary["round"], "view": layout}}
    return ReadModel("table", summary, Context(hidden, bets, shown))


def own_layout(layout: Mapping[str, Any], rnd: Any, shown: Collection[int]) -> dict[str, Any]:
    """The game's public layout with the face-down cards ``shown`` (the viewer's own
    player's hand: a hidden seat's cards, a seated banker's hole card) in place of their
    ``XX``, as its ``cards`` show them: each hand's face-down cards in dealing order."""
    hands = rnd.game.face_down_hands(rnd.play.state)
    codes: dict[int | None, list[str]] = {}
    for index in sorted(shown):
        codes.setdefault(hands.get(index), []).append(str(rnd.cards[index]))
    out = dict(layout)

    def fill(cards: Any, seat: int | None) -> Any:
        queue = codes.get(seat)
        if not queue or not isinstance(cards, list):
            return cards
        return [queue.pop(0) if c == FACE_DOWN and queue else c for c in cards]

    banker = out.get("banker")
    if isinstance(banker, Mapping):
        out["banker"] = {**banker, "cards": fill(banker.get("cards"), None)}
    if isinstance(out.get("hands"), list):
        out["hands"] = [
            {**h, "cards": fill(h.get("cards"), h.get("seat"))} if isinstance(h, Mapping) else h
            for h in out["hands"]
        ]
    return out


def _without_bank_hole(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary for a dealer at a seated bank: the game's dealer layout shows the
    banker's hand as the public layout does (its face-down card as the game hides it)."""
    rnd = summary.get("round")
    if not rnd or not isinstance(rnd.get("dealer_view"), dict):
        return summary
    layout = bank_hole_hidden(rnd["dealer_view"], rnd.get("view"))
    return {**summary, "round": {**rnd, "dealer_view": layout}}


def bank_hole_hidden(layout: Mapping[str, Any], public: Any) -> dict[str, Any]:
    """A game's dealer layout with the banker's hand as its public layout shows it (for a
    dealer at a seated bank, before the banker's face-down card is turned)."""
    out = dict(layout)
    if isinstance(public, Mapping) and "banker" in public:
        out["banker"] = public["banker"]
    return out


def table_view(state: Any, viewer: Viewer) -> dict[str, Any]:
    """What ``viewer`` may see of a table's state (its summary)."""
    return model_view(table_model(state, viewer), viewer)
