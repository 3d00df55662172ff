"""The state of one table, and how each event changes it: ``state = fold(apply, events)``.

Pure: no I/O, no clock. The live service, crash recovery and any replay of an export
all rebuild a table through :func:`apply`, so there is one meaning for each event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final, Literal, TypeVar

from table_service.rules.cards import parse_card
from table_service.rules.game import (
    Bet,
    LiveGame,
    Move,
    Replay,
    RoundSetup,
    RulesRefusal,
    Spot,
    Turn,
    drive,
)
from table_service.rules.games import DEFAULT_GAME
from table_service.table import events as ev
from table_service.table.events import event_class

Phase = Literal["betting", "dealing", "result", "settled", "voided"]
ACTIVE_PHASES = ("betting", "dealing", "result")

# Empty, so of every key and value type (Mapping's key is invariant: no narrower type fits).
EMPTY: Mapping[Any, Any] = MappingProxyType({})

K = TypeVar("K")
V = TypeVar("V")


def _empty() -> Mapping[Any, Any]:
    return EMPTY


def _frozen(mapping: dict[K, V]) -> Mapping[K, V]:
    return MappingProxyType(mapping)


@dataclass(frozen=True, slots=True)
class OpenBet:
    """An open stake. A stake the round adds (double, split, insurance) names the bet it
    belongs to in ``parent`` and its ``part``."""

    bet_id: str
    account: str
    bet_type: str
    stake: int
    seat: int | None = None
    parent: str | None = None
    part: str = "original"


@dataclass(frozen=True, slots=True)
class Deadline:
    """A decision clock as recorded in the log: survives a restart with the log."""

    clock: str
    actors: tuple[str, ...]
    deadline: str


@dataclass(frozen=True, slots=True)
class TableRound:
    """One round as the table keeps it: the table's facts (bets, cards in shoe order,
    moves) and the game's state folded from them (``play``)."""

    round_id: str
    game_number: int
    shoe_no: int
    phase: Phase
    closes_at: str
    cards: tuple[str, ...] = ()
    bets: Mapping[str, OpenBet] = field(default_factory=_empty)
    exposed: int = 0
    outcome: Mapping[str, Any] | None = None
    setup: RoundSetup | None = None
    moves: tuple[tuple[int, Move], ...] = ()
    play: Replay | None = None
    game: LiveGame | None = None
    turn: Deadline | None = None
    revealed: tuple[int, ...] = ()  # face-down cards (indexes) the public has been shown
    early: Mapping[str, tuple[int, int, int]] = field(default_factory=_empty)
    """Stakes a game settled before the round ended (a Xì Dách check): stake id →
    (stake, returned, commission), for the round's totals and a later void."""
    show_again: Mapping[str, Any] | None = None
    """The reader could not read the card owed now and the dealer is asked to show it
    again: its index, why (``cause``) and how many times asked (``times``); cleared when a
    card is dealt."""

    @property
    def active(self) -> bool:
        return self.phase in ACTIVE_PHASES

    def next_position(self) -> Spot | None:
        """Where the next card goes (None: no card is owed now)."""
        if self.play is None or self.play.leftover:
            return None
        nxt = game_of_round(self).next(self.play.state)
        return nxt if isinstance(nxt, Spot) else None


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

    def count(self, card: str, n: int = 1) -> ShoeState:
        seen = dict(self.seen)
        seen[card] = seen.get(card, 0) + n
        if not seen[card]:
            del seen[card]
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
class SeatHolder:
    """A player account seated at the table. ``pending``: seated while a round was in
    play, so it plays from the next round; ``disconnected``: reported gone by the
    operator, its decisions this round are played by the rules' no-decision rule."""

    account: str
    pending: bool = False
    disconnected: bool = False
    joined: int = 0
    """The order in which the player came to the table (1 = first seat taken at it): a
    seated Xì Dách bank passes to the player who came in after the banker (seed 001)."""


@dataclass(frozen=True, slots=True)
class TableState:
    table_id: str
    config: Mapping[str, Any] | None = None
    shoe: ShoeState | None = None
    shoes_inserted: int = 0
    round: TableRound | None = None
    carried: tuple[str, ...] = ()
    incidents: Mapping[str, Incident] = field(default_factory=_empty)
    incidents_raised: int = 0
    reader_online: bool = False
    last_seq: int = 0
    seats: Mapping[int, SeatHolder] = field(default_factory=_empty)
    bank_seat: int | None = None  # a seated bank kept from the last round's result
    bank_from: int | None = None  # a seated bank that passes clockwise from this seat
    room_closed: Mapping[str, Any] | None = None  # nobody qualifies for the passing bank
    seats_joined: int = 0  # seats taken at this table so far (each holder's ``joined``)
    bank_joined: int | None = None  # when the last seated banker came to the table

    @property
    def paused(self) -> bool:
        return any(i.blocking for i in self.incidents.values())

    def seats_for_round(self) -> dict[int, str]:
        """Seat → account of the players who play the current (or next) round."""
        return {n: h.account for n, h in sorted(self.seats.items()) if not h.pending}

    def joined_order(self) -> dict[int, int]:
        """Seat → the order in which its player came to the table (seats of this round)."""
        return {n: h.joined for n, h in sorted(self.seats.items()) if not h.pending}

    def public_summary(self) -> dict[str, Any]:
        """What the dealer console and the stream show about where the table stands."""
        rnd = self.round
        return {
            "table_id": self.table_id,
            "game": self.config.get("game", DEFAULT_GAME) if self.config is not None else None,
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
                "next": _next_json(rnd),
                "view": None
                if rnd.play is None
                else game_of_round(rnd).view(rnd.play.state, "public"),
                "dealer_view": None
                if rnd.play is None
                else game_of_round(rnd).view(rnd.play.state, "dealer"),
                "turn": _turn_json(rnd),
                "bets_open": len(rnd.bets),
                "outcome": dict(rnd.outcome) if rnd.outcome else None,
                "show_again": dict(rnd.show_again) if rnd.show_again else None,
            },
            "carried": list(self.carried),
            "seats": [
                {
                    "seat": n,
                    "account": h.account,
                    "pending": h.pending,
                    "disconnected": h.disconnected,
                }
                for n, h in self.seats.items()
            ],
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
            "bank": self._bank_summary(),
        }

    def _bank_summary(self) -> dict[str, Any] | None:
        """A seated bank (Xì Dách ``room``): who keeps it, where it passes from, and
        whether the room is closed because nobody qualifies to take it."""
        if self.bank_seat is None and self.bank_from is None and self.room_closed is None:
            return None
        closed = self.room_closed
        return {
            "seat": self.bank_seat,
            "passes_from": self.bank_from,
            "room_closed": closed is not None,
            "reason": None if closed is None else closed.get("reason"),
            "needs": None if closed is None else closed.get("needs"),
        }


def _next(rnd: TableRound) -> str | None:
    if rnd.phase != "dealing":
        return None
    position = rnd.next_position()
    return position.code if position else None


def _next_json(rnd: TableRound) -> dict[str, Any] | None:
    """What the round waits for: a card for a position, a decision, or nothing more."""
    if rnd.phase != "dealing" or rnd.play is None:
        return None
    if rnd.play.leftover:
        return {"kind": "supervisor", "cards_not_taken": [c.code for c in rnd.play.leftover]}
    return game_of_round(rnd).next(rnd.play.state).to_json()


def _turn_json(rnd: TableRound) -> dict[str, Any] | None:
    """Whose decision is awaited, until when, and what each of them may do."""
    if rnd.phase != "dealing" or rnd.play is None or rnd.play.leftover:
        return None
    game = game_of_round(rnd)
    nxt = game.next(rnd.play.state)
    if not isinstance(nxt, Turn):
        return None
    recorded = rnd.turn if rnd.turn is not None and rnd.turn.clock == nxt.clock else None
    return {
        "clock": nxt.clock,
        "actors": list(nxt.actors),
        "seconds": nxt.seconds,
        "deadline": recorded.deadline if recorded else None,
        "legal_actions": {
            a: [m.to_json() for m in game.legal_actions(rnd.play.state, a)] for a in nxt.actors
        },
    }


def settle_input_of(rnd: TableRound) -> dict[str, Any] | None:
    """The round as ``livetable settle <game>`` takes it (None before dealing began)."""
    if rnd.play is None or rnd.setup is None or rnd.game is None:
        return None
    return rnd.game.settle_input(rnd.play.state, rnd.setup, [m for _, m in rnd.moves])


def game_of(state: TableState) -> tuple[LiveGame, Any]:
    """The game a table runs and its rules, from the configuration recorded in its log."""
    from table_service.table.config import config_from_snapshot

    assert state.config is not None, "a round on a table that was never opened"
    config = config_from_snapshot(state.config)
    return config.game_impl, config.rules


def game_of_round(rnd: TableRound) -> LiveGame:
    assert rnd.game is not None
    return rnd.game


def _replay(game: LiveGame, rules: Any, rnd: TableRound) -> Replay:
    """The round refolded from its recorded cards and moves (after a re-arrangement)."""
    assert rnd.setup is not None
    start = game.new_round(rules, rnd.setup)
    return drive(game, start, [parse_card(c) for c in rnd.cards], rnd.moves)


def _round(state: TableState, payload: Mapping[str, Any]) -> TableRound:
    rnd = state.round
    if rnd is None or rnd.round_id != payload.get("round_id"):
        raise ValueError(f"event for round {payload.get('round_id')} but table has {rnd}")
    return rnd


def apply(
    state: TableState, event_type: str, payload: Mapping[str, Any], seq: int = 0
) -> TableState:
    """The state after one event, read through its typed class: a type the registry does
    not know, or a payload that does not read as its type, is an
    :class:`~table_service.table.events.EventError` (never a silent no-op). Types that
    change nothing of the table (the consoles' records) leave the state as it was."""
    cls = event_class(event_type)
    cls.from_payload(payload)  # every field known, every required one there
    state = replace(state, last_seq=max(state.last_seq, seq))
    handler = _HANDLERS.get(cls)
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
        shoe=ShoeState(
            shoe_no=p["shoe_no"],
            decks=p["decks"],
            burn_remaining=None if p.get("burn", True) else 0,
        ),
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
    shoe = s.shoe
    assert shoe is not None
    if s.seats:
        seats = {n: SeatHolder(h.account, joined=h.joined) for n, h in s.seats.items()}
        s = replace(s, seats=_frozen(seats))
    return replace(
        s,
        round=TableRound(
            round_id=p["round_id"],
            game_number=p["game_number"],
            shoe_no=shoe.shoe_no,
            phase="betting",
            closes_at=p["closes_at"],
        ),
        shoe=replace(shoe, games=p["game_number"]),
    )


def _bets_placed(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    bets = dict(rnd.bets)
    for b in p["bets"]:
        bets[b["bet_id"]] = OpenBet(
            b["bet_id"],
            b["account"],
            b["type"],
            b["stake"],
            b.get("seat"),
            b.get("parent"),
            b.get("part", "original"),
        )
    return replace(s, round=replace(rnd, bets=_frozen(bets)))


def _close_bets(s: TableState, p: Mapping[str, Any], key: str) -> TableState:
    rnd = _round(s, p)
    bets = dict(rnd.bets)
    for item in p[key]:
        bets.pop(item["bet_id"], None)
    early = rnd.early
    if p.get("early"):
        early = dict(early)
        for item in p[key]:
            early[item["bet_id"]] = (item["stake"], item["returned"], item.get("commission", 0))
        early = _frozen(early)
    return replace(s, round=replace(rnd, bets=_frozen(bets), early=early))


def round_setup(rnd: TableRound, seats: Mapping[int, str] | None = None) -> RoundSetup:
    """What the game's round starts from: the bets placed in the window, in order."""
    return RoundSetup(
        round_id=rnd.round_id,
        game_number=rnd.game_number,
        bets=tuple(
            Bet(b.bet_id, b.account, b.bet_type, b.stake, b.seat)
            for b in rnd.bets.values()
            if b.parent is None
        ),
        seats=_frozen(dict(seats or {})),
    )


def _betting_closed(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = replace(_round(s, p), phase="dealing")
    game, rules = game_of(s)
    rnd = replace(rnd, setup=round_setup(rnd, s.seats_for_round()), game=game)
    return replace(s, round=replace(rnd, play=_replay(game, rules, rnd)))


def _card_dealt(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    card = p["card"]
    shoe = s.shoe
    carried = s.carried
    if p.get("source") == "carried":
        carried = carried[1:]
    elif shoe is not None:
        shoe = shoe.count(card)
    play = rnd.play
    if play is not None:
        play = _deal_into(game_of_round(rnd), play, card)
    rnd = replace(rnd, cards=(*rnd.cards, card), play=play, show_again=None)
    return replace(s, round=rnd, shoe=shoe, carried=carried)


def _card_show_again(s: TableState, p: Mapping[str, Any]) -> TableState:
    asked = {k: p[k] for k in ("index", "cause", "times") if k in p}
    return replace(s, round=replace(_round(s, p), show_again=_frozen(asked)))


def _deal_into(game: LiveGame, play: Replay, code: str) -> Replay:
    """One more card into the folded round (what :func:`drive` would make of it)."""
    card = parse_card(code)
    if play.leftover or not isinstance(game.next(play.state), Spot):
        return Replay(play.state, (*play.leftover, card))
    try:
        return Replay(game.apply(play.state, card))
    except RulesRefusal:
        return Replay(play.state, (card,))


def _refold(s: TableState, rnd: TableRound) -> TableRound:
    if rnd.setup is None:
        return rnd
    game, rules = game_of(s)
    return replace(rnd, play=_replay(game, rules, rnd))


def _cards_revealed(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    shown = tuple(sorted({*rnd.revealed, *(c["index"] for c in p["cards"])}))
    return replace(s, round=replace(rnd, revealed=shown))


def _cards_rearranged(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    shoe = s.shoe
    for card in p.get("entered", ()):
        if shoe is not None:
            shoe = shoe.count(card)
    moves = rnd.moves
    for index in sorted(p.get("entered_at", ())):
        # a card entered before a recorded move was dealt before it
        moves = tuple((after + 1 if index < after else after, m) for after, m in moves)
    twice = p.get("read_twice")
    if twice is not None:  # one card read twice: the repeat was never a card of the shoe
        if shoe is not None:
            shoe = shoe.count(twice["card"], -1)
        moves = tuple((after - 1 if twice["index"] < after else after, m) for after, m in moves)
    rnd = replace(rnd, cards=tuple(p["cards"]), moves=moves)
    return replace(s, round=_refold(s, rnd), shoe=shoe)


def _card_set_aside(s: TableState, p: Mapping[str, Any]) -> TableState:
    shoe = s.shoe
    if shoe is not None and p.get("counted", True):
        shoe = shoe.count(p["card"])
    carried = (*s.carried, p["card"]) if p.get("carry") else s.carried
    rnd = s.round
    if rnd is not None and p.get("exposed") and p.get("round_id") == rnd.round_id:
        rnd = replace(rnd, exposed=rnd.exposed + 1)
    if rnd is not None and p.get("from_round") == rnd.round_id:
        rnd = _refold(s, replace(rnd, cards=tuple(p["round_cards"])))
    return replace(s, shoe=shoe, carried=carried, round=rnd)


def _round_result(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    bank = p["outcome"].get("bank") if isinstance(p["outcome"], Mapping) else None
    bank_seat = bank["seat"] if isinstance(bank, Mapping) and bank.get("keeps_bank") else None
    if isinstance(bank, Mapping):  # the bank is kept, or passes clockwise from its seat
        bank_from = None if bank.get("keeps_bank") else bank["seat"]
    else:
        bank_from = s.bank_from  # no seated bank this round: a pending pass still stands
    bank_joined = s.bank_joined
    if isinstance(bank, Mapping) and bank.get("seat") in s.seats:
        bank_joined = s.seats[bank["seat"]].joined
    return replace(
        s,
        round=replace(rnd, phase="result", outcome=_frozen(dict(p["outcome"]))),
        bank_seat=bank_seat,
        bank_from=bank_from,
        bank_joined=bank_joined,
    )


def _round_settled(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(s, round=replace(_round(s, p), phase="settled", bets=EMPTY))


def _round_voided(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(s, round=replace(_round(s, p), phase="voided", bets=EMPTY), carried=())


def _room_closed(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(s, room_closed=_frozen(dict(p)))


def _room_reopened(s: TableState, p: Mapping[str, Any]) -> TableState:
    return replace(s, room_closed=None)


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


def _decision_awaited(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    turn = Deadline(p["clock"], tuple(p["actors"]), p["deadline"])
    return replace(s, round=replace(rnd, turn=turn))


def _action_taken(s: TableState, p: Mapping[str, Any]) -> TableState:
    rnd = _round(s, p)
    move = Move.from_json(p)
    play = rnd.play
    assert play is not None and not play.leftover, "a move recorded while cards were left over"
    play = Replay(game_of_round(rnd).apply(play.state, move))
    moves = (*rnd.moves, (len(rnd.cards), move))
    return replace(s, round=replace(rnd, moves=moves, play=play))


def _seats(s: TableState, seat: int, holder: SeatHolder | None) -> TableState:
    seats = dict(s.seats)
    if holder is None:
        seats.pop(seat, None)
    else:
        seats[seat] = holder
    return replace(s, seats=_frozen(dict(sorted(seats.items()))))


def _seat_taken(s: TableState, p: Mapping[str, Any]) -> TableState:
    joined = s.seats_joined + 1
    holder = SeatHolder(p["account"], pending=bool(p.get("pending")), joined=joined)
    return _seats(replace(s, seats_joined=joined), int(p["seat"]), holder)


def _seat_released(s: TableState, p: Mapping[str, Any]) -> TableState:
    return _seats(s, int(p["seat"]), None)


def _player_disconnected(s: TableState, p: Mapping[str, Any]) -> TableState:
    holder = s.seats.get(int(p["seat"]))
    if holder is None:
        return s
    return _seats(s, int(p["seat"]), replace(holder, disconnected=True))


_HANDLERS: dict[type[ev.TableEvent], Any] = {
    ev.TableOpened: _table_opened,
    ev.ShoeInserted: _shoe_inserted,
    ev.CardBurnt: _card_burnt,
    ev.BettingOpened: _betting_opened,
    ev.BetsPlaced: _bets_placed,
    ev.BettingClosed: _betting_closed,
    ev.CardDealt: _card_dealt,
    ev.CardShowAgain: _card_show_again,
    ev.CardsRearranged: _cards_rearranged,
    ev.CardsRevealed: _cards_revealed,
    ev.CardSetAside: _card_set_aside,
    ev.RoundResult: _round_result,
    ev.BetsSettled: lambda s, p: _close_bets(s, p, "results"),
    ev.BetsRefunded: lambda s, p: _close_bets(s, p, "refunds"),
    ev.RoundSettled: _round_settled,
    ev.RoomClosed: _room_closed,
    ev.RoomReopened: _room_reopened,
    ev.RoundVoided: _round_voided,
    ev.IncidentRaised: _incident_raised,
    ev.IncidentResolved: _incident_resolved,
    ev.CutCardDrawn: _cut_card_drawn,
    ev.ShoeEnded: _shoe_ended,
    ev.ReaderStatus: _reader_status,
    ev.DecisionAwaited: _decision_awaited,
    ev.ActionTaken: _action_taken,
    ev.SeatTaken: _seat_taken,
    ev.SeatReleased: _seat_released,
    ev.PlayerDisconnected: _player_disconnected,
}
# Registered types that change nothing of the table's state: the consoles' records and the
# commission line (the ledger's business). Every other registered type has a handler.
NO_STATE: Final = frozenset(
    {ev.CommissionCredited, ev.VoidRequested, ev.VoidApproved, ev.DealerSignedIn}
)
