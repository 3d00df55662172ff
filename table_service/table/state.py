"""The state of one table, and how each event changes it: ``state = fold(apply, events)``.

Pure: no I/O, no clock. The live service, crash recovery and any replay of an export
all rebuild a table through :func:`apply`, so there is one meaning for each event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from table_service.rules.baccarat import Position, next_position, round_length
from table_service.rules.baccarat.dealing import IncompleteRound
from table_service.rules.cards import parse_card

Phase = Literal["betting", "dealing", "result", "settled", "voided"]
ACTIVE_PHASES = ("betting", "dealing", "result")

EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    return EMPTY


def _frozen(mapping: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(mapping)


@dataclass(frozen=True, slots=True)
class OpenBet:
    bet_id: str
    account: str
    bet_type: str
    stake: int


@dataclass(frozen=True, slots=True)
class RoundState:
    round_id: str
    game_number: int
    shoe_no: int
    phase: Phase
    closes_at: str
    cards: tuple[str, ...] = ()
    bets: Mapping[str, OpenBet] = field(default_factory=_empty)
    exposed: int = 0
    outcome: Mapping[str, Any] | None = None

    @property
    def active(self) -> bool:
        return self.phase in ACTIVE_PHASES

    def next_position(self) -> Position | None:
        """Where the next card goes (None: the round has all its cards)."""
        return next_position([parse_card(c) for c in self.cards])

    def complete_length(self) -> int | None:
        """How many of the recorded cards the round takes, if they complete it."""
        try:
            return round_length([parse_card(c) for c in self.cards])
        except IncompleteRound:
            return None


@dataclass(frozen=True, slots=True)
class ShoeState:
    shoe_no: int
    decks: int
    seen: Mapping[str, int] = field(default_factory=_empty)
    burn_remaining: int | None = None  # None: waiting for the burn indicator card
    cut_card_drawn: bool = False
    games: int = 0

    @property
    def ready(self) -> bool:
        return self.burn_remaining == 0

    def count(self, card: str) -> ShoeState:
        seen = dict(self.seen)
        seen[card] = seen.get(card, 0) + 1
        return replace(self, seen=_frozen(seen))


@dataclass(frozen=True, slots=True)
class Incident:
    incident_id: str
    kind: str
    blocking: bool
    round_id: str | None
    details: Mapping[str, Any]
    raised_by: str


@dataclass(frozen=True, slots=True)
class TableState:
    table_id: str
    config: Mapping[str, Any] | None = None
    shoe: ShoeState | None = None
    shoes_inserted: int = 0
    round: RoundState | None = None
    carried: tuple[str, ...] = ()
    incidents: Mapping[str, Incident] = field(default_factory=_empty)
    incidents_raised: int = 0
    reader_online: bool = False
    last_seq: int = 0

    @property
    def paused(self) -> bool:
        return any(i.blocking for i in self.incidents.values())

    def public_summary(self) -> dict[str, Any]:
        """What the dealer console and the stream show about where the table stands."""
        rnd = self.round
        return {
            "table_id": self.table_id,
            "opened": self.config is not None,
            "shoe": None
            if self.shoe is None
            else {
                "shoe_no": self.shoe.shoe_no,
                "ready": self.shoe.ready,
                "burn_remaining": self.shoe.burn_remaining,
                "cut_card_drawn": self.shoe.cut_card_drawn,
                "games": self.shoe.games,
                "cards_seen": sum(self.shoe.seen.values()),
            },
            "round": None
            if rnd is None
            else {
                "round_id": rnd.round_id,
                "game_number": rnd.game_number,
                "phase": rnd.phase,
                "closes_at": rnd.closes_at,
                "cards": list(rnd.cards),
                "next_position": _next(rnd),
                "bets_open": len(rnd.bets),
                "outcome": dict(rnd.outcome) if rnd.outcome else None,
            },
            "carried": list(self.carried),
            "paused": self.paused,
            "incidents": [
                {
                    "incident_id": i.incident_id,
                    "kind": i.kind,
                    "blocking": i.blocking,
                    "round_id": i.round_id,
                    "details": dict(i.details),
                }
                for i in self.incidents.values()
            ],
            "reader_online": self.reader_online,
            "last_seq": self.last_seq,
        }


def _next(rnd: RoundState) -> str | None:
    if rnd.phase != "dealing":
        return None
    position = rnd.next_position()
    return position.value if position else None


def _round(state: TableState, payload: Mapping[str, Any]) -> RoundState:
    rnd = state.round
    if rnd is None or rnd.round_id != payload.get("round_id"):
        raise ValueError(f"event for round {payload.get('round_id')} but table has {rnd}")
    return rnd


def apply(
    state: TableState, event_type: str, payload: Mapping[str, Any], seq: int = 0
) -> TableState:
    """The state after one event. Unknown types leave the state as it was (forward compat)."""
    state = replace(state, last_seq=max(state.last_seq, seq))
    handler = _HANDLERS.get(event_type)
    return handler(state, payload) if handler else state


_LIST_KEYS = {"bets_placed": "bets", "bets_settled": "results", "bets_refunded": "refunds"}


def fold(state: TableState, events: Iterable[tuple[str, Mapping[str, Any], int]]) -> TableState:
    """Apply events in order. Consecutive chunks of one bet event (a 100k-bet round is
    logged as 100 of them) are applied together: the same state, without copying the
    round's bets once per chunk."""
    pending: tuple[str, dict[str, Any], int] | None = None
    for event_type, payload, seq in events:
        key = _LIST_KEYS.get(event_type)
        if (
            pending is not None
            and key is not None
            and pending[0] == event_type
            and pending[1].get("round_id") == payload.get("round_id")
        ):
            pending[1][key].extend(payload[key])
            pending = (event_type, pending[1], seq)
            continue
        if pending is not None:
            state = apply(state, *pending)
            pending = None
        if key is not None:
            pending = (event_type, {**payload, key: list(payload[key])}, seq)
            continue
        state = apply(state, event_type, payload, seq)
    if pending is not None:
        state = apply(state, *pending)
    return state


def _table_opened(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(s, config=_frozen(dict(p["config"])))


def _shoe_inserted(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(
        s,
        shoe=ShoeState(shoe_no=p["shoe_no"], decks=p["decks"]),
        shoes_inserted=p["shoe_no"],
        carried=(),
    )


def _card_burnt(s: TableState, p: Mapping[str, Any]) -> TableState:
    assert s.shoe is not None
    shoe = s.shoe.count(p["card"]) if p.get("card") else s.shoe
    if p.get("indicator"):
        remaining: int | None = int(p["burn_count"])
    elif shoe.burn_remaining is None:
        remaining = None  # an unreadable indicator: the next card is the indicator
    else:
        remaining = max(0, shoe.burn_remaining - 1)
    return replace(s, shoe=replace(shoe, burn_remaining=remaining))


def _betting_opened(s: TableState, p: Mapping[str, Any]) -> TableState:
    assert s.shoe is not None
    return replace(
        s,
        round=RoundState(
            round_id=p["round_id"],
            game_number=p["game_number"],
            shoe_no=s.shoe.shoe_no,
            phase="betting",
            closes_at=p["closes_at"],
        ),
        shoe=replace(s.shoe, games=p["game_number"]),
    )


def _bets_placed(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    bets = dict(rnd.bets)
    for b in p["bets"]:
        bets[b["bet_id"]] = OpenBet(b["bet_id"], b["account"], b["type"], b["stake"])
    return replace(s, round=replace(rnd, bets=_frozen(bets)))


def _close_bets(s: TableState, p: Mapping[str, Any], key: str) -> TableState:
    rnd = _round(s, p)
    bets = dict(rnd.bets)
    for item in p[key]:
        bets.pop(item["bet_id"], None)
    return replace(s, round=replace(rnd, bets=_frozen(bets)))


def _betting_closed(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(s, round=replace(_round(s, p), phase="dealing"))


def _card_dealt(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    card = p["card"]
    shoe = s.shoe
    carried = s.carried
    if p.get("source") == "carried":
        carried = carried[1:]
    elif shoe is not None:
        shoe = shoe.count(card)
    return replace(s, round=replace(rnd, cards=(*rnd.cards, card)), shoe=shoe, carried=carried)


def _cards_rearranged(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    shoe = s.shoe
    for card in p.get("entered", ()):
        if shoe is not None:
            shoe = shoe.count(card)
    return replace(s, round=replace(rnd, cards=tuple(p["cards"])), shoe=shoe)


def _card_set_aside(s: TableState, p: Mapping[str, Any]) -> TableState:
    shoe = s.shoe
    if shoe is not None and p.get("counted", True):
        shoe = shoe.count(p["card"])
    carried = (*s.carried, p["card"]) if p.get("carry") else s.carried
    rnd = s.round
    if rnd is not None and p.get("exposed") and p.get("round_id") == rnd.round_id:
        rnd = replace(rnd, exposed=rnd.exposed + 1)
    if rnd is not None and p.get("from_round") == rnd.round_id:
        rnd = replace(rnd, cards=tuple(p["round_cards"]))
    return replace(s, shoe=shoe, carried=carried, round=rnd)


def _round_result(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    return replace(s, round=replace(rnd, phase="result", outcome=_frozen(dict(p["outcome"]))))


def _round_settled(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(s, round=replace(_round(s, p), phase="settled", bets=EMPTY))


def _round_voided(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(s, round=replace(_round(s, p), phase="voided", bets=EMPTY), carried=())


def _incident_raised(s: TableState, p: Mapping[str, Any]) -> TableState:
    incidents = dict(s.incidents)
    incidents[p["incident_id"]] = Incident(
        p["incident_id"],
        p["kind"],
        bool(p["blocking"]),
        p.get("round_id"),
        _frozen(dict(p.get("details", {}))),
        p.get("raised_by", ""),
    )
    return replace(s, incidents=_frozen(incidents), incidents_raised=s.incidents_raised + 1)


def _incident_resolved(s: TableState, p: Mapping[str, Any]) -> TableState:
    incidents = dict(s.incidents)
    incidents.pop(p["incident_id"], None)
    return replace(s, incidents=_frozen(incidents))


def _cut_card_drawn(s: TableState, p: Mapping[str, Any]) -> TableState:
    assert s.shoe is not None
    return replace(s, shoe=replace(s.shoe, cut_card_drawn=True))


def _shoe_ended(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(s, shoe=None, carried=())


def _reader_status(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(s, reader_online=bool(p["online"]))


_HANDLERS = {
    "table_opened": _table_opened,
    "shoe_inserted": _shoe_inserted,
    "card_burnt": _card_burnt,
    "betting_opened": _betting_opened,
    "bets_placed": _bets_placed,
    "betting_closed": _betting_closed,
    "card_dealt": _card_dealt,
    "cards_rearranged": _cards_rearranged,
    "card_set_aside": _card_set_aside,
    "round_result": _round_result,
    "bets_settled": lambda s, p: _close_bets(s, p, "results"),
    "bets_refunded": lambda s, p: _close_bets(s, p, "refunds"),
    "round_settled": _round_settled,
    "round_voided": _round_voided,
    "incident_raised": _incident_raised,
    "incident_resolved": _incident_resolved,
    "cut_card_drawn": _cut_card_drawn,
    "shoe_ended": _shoe_ended,
    "reader_status": _reader_status,
}
