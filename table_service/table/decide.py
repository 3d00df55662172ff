"""Command → events, by the table procedure. Pure: the clock comes in.

``decide`` either returns the events a command produces (already checked by applying
them to a copy of the state) or raises a typed :class:`~table_service.errors.Refused`.
Everything only the game knows — whether a bet is allowed, where a card goes, what a
decision does, what each stake returns — is asked of the table's game through
:mod:`table_service.rules.game`: the same code as ``livetable settle`` and the RTP report.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from audit.chain import utc_timestamp
from table_service.models import house_account
from table_service.rules.cards import CardError, parse_card
from table_service.rules.game import (
    Bet,
    BettingContext,
    Complete,
    IncidentKind,
    Line,
    Move,
    RulesRefusal,
    Spot,
    Turn,
)
from table_service.table import commands as c
from table_service.table import events as ev
from table_service.table.config import TableConfig, config_from_snapshot
from table_service.table.errors import (
    BadCard,
    BadResolution,
    BettingClosed,
    InsufficientFunds,
    NoShoe,
    NotYourTurn,
    RoomClosed,
    RulesRefused,
    SeatRefused,
    ShoeFinished,
    ShoeNotReady,
    TableNotOpen,
    TablePaused,
    UnknownIncident,
    WrongPhase,
)
from table_service.table.state import Incident, TableState, apply_event, game_of, game_of_round

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


def burn_value(state: TableState, card: str) -> int:
    """How many cards the game burns after ``card``, the first of a new shoe."""
    game, rules = game_of(state)
    return game.burn_count(rules, parse_card(card))


def _card(code: str) -> str:
    try:
        return parse_card(code).code
    except CardError as exc:
        raise BadCard(str(exc), card=code) from exc


def _config(state: TableState) -> TableConfig:
    """The parsed configuration recorded in the state (parsed once per recorded snapshot)."""
    if state.config is None:
        raise TableNotOpen(f"table {state.table_id} is not open")
    return config_from_snapshot(state.config)


def _incident(
    d: Decision,
    kind: str,
    *,
    blocking: bool,
    actor: str,
    details: Mapping[str, Any],
    auto_resolution: str | None = None,
) -> str:
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


def decide(state: TableState, command: c.Command, *, now: datetime, actor: str) -> Decision:
    d = Decision(state, now=now)
    handler = _HANDLERS[type(command)]
    try:
        handler(d, command, now, actor)
    except RulesRefusal as exc:  # one refusal root from every game: a typed answer
        raise RulesRefused(exc.reason, exc.code, **exc.details) from exc
    return d


# -- table and shoe ------------------------------------------------------------------------
def _open_table(d: Decision, cmd: c.OpenTable, now: datetime, actor: str) -> None:
    rnd = d.state.round
    if rnd is not None and rnd.active:
        raise WrongPhase("cannot reconfigure a table while a round is in progress")
    rules = cmd.config.rules  # bad rules are refused before anything is written
    # Xì Dách: the exact house edge of the terms the table opens with
    terms = cmd.config.game_impl.opening_terms(rules)
    d.emit(ev.TableOpened(config=cmd.config.snapshot(), terms=terms or ev.ABSENT))


def _insert_shoe(d: Decision, cmd: c.InsertShoe, now: datetime, actor: str) -> None:
    config = _config(d.state)
    if d.state.shoe is not None:
        raise WrongPhase("a shoe is in use; change the shoe first")
    burn = config.game_impl.shoe_burn
    inserted = ev.ShoeInserted(
        shoe_no=d.state.shoes_inserted + 1,
        decks=config.decks,
        cut_card_depth=config.cut_card_depth,
        burn=ev.ABSENT if burn else False,
    )
    d.emit(inserted)
    d.answer = {
        "shoe_no": d.state.shoes_inserted,
        "next": "burn: deal the indicator card" if burn else "open betting",
    }


def _change_shoe(d: Decision, cmd: c.ChangeShoe, now: datetime, actor: str) -> None:
    _config(d.state)
    if d.state.shoe is None:
        raise NoShoe("no shoe in use")
    rnd = d.state.round
    if rnd is not None and rnd.active:
        raise WrongPhase("a round is in progress; finish or void it first")
    d.emit(ev.ShoeEnded(shoe_no=d.state.shoe.shoe_no, reason=cmd.reason))


# -- betting ---------------------------------------------------------------------------------
def _open_betting(d: Decision, cmd: c.OpenBetting, now: datetime, actor: str) -> None:
    config = _config(d.state)
    shoe = d.state.shoe
    if shoe is None:
        raise NoShoe("insert and burn a shoe before opening betting")
    if not shoe.ready:
        raise ShoeNotReady("the burn procedure is not finished", burn_remaining=shoe.burn_remaining)
    if shoe.cut_card_drawn:
        raise ShoeFinished("the cut card was drawn; change the shoe")
    if d.state.paused:
        raise TablePaused("an incident is open; a supervisor must resolve it")
    rnd = d.state.round
    if rnd is not None and rnd.active:
        raise WrongPhase(f"round {rnd.round_id} is still {rnd.phase}")
    if cmd.balances is not None:
        _room_opens(d, cmd.balances)
    game = shoe.games + 1
    round_id = f"{d.state.table_id}-s{shoe.shoe_no}-g{game}"
    closes_at = utc_timestamp(now + timedelta(seconds=config.betting_seconds))
    opened = ev.BettingOpened(
        round_id=round_id, game_number=game, closes_at=closes_at, shoe_no=shoe.shoe_no
    )
    d.emit(opened, round_id=round_id)
    d.answer = {"round_id": round_id, "game_number": game, "closes_at": closes_at}


def _bank_taker(
    state: TableState, balances: Mapping[str, int]
) -> tuple[int | None, dict[str, Any] | None]:
    """Who may take a seated bank next, or why the room is closed (games without a
    seated bank: nobody in particular, never closed)."""
    game, rules = game_of(state)
    seats = state.seats_for_round()
    return game.bank_taker(
        rules,
        seats,
        state.bank_seat,
        state.bank_from,
        balances,
        joined=state.joined_order(),
        bank_joined=state.bank_joined,
    )


def _room_opens(d: Decision, balances: Mapping[str, int]) -> None:
    """A seated bank that passed with nobody to take it keeps the room closed: no round
    opens until a seated player qualifies (seed 001: "if nobody qualifies, the room
    closes"). Refused with the reason while so; reopened, and recorded, once someone does."""
    seat, closed = _bank_taker(d.state, balances)
    if closed is not None:
        raise RoomClosed(closed["reason"], needs=closed["needs"], passes_from=closed["passes_from"])
    if d.state.room_closed is not None:
        passes_from = d.state.room_closed.get("passes_from")
        d.emit(ev.RoomReopened(seat=seat, passes_from=passes_from))


def _review_room(d: Decision, cmd: c.ReviewRoom, now: datetime, actor: str) -> None:
    """After a round: record the room closed if its bank passes and nobody qualifies."""
    _config(d.state)
    rnd = d.state.round
    if d.state.room_closed is not None or (rnd is not None and rnd.active):
        return
    _, closed = _bank_taker(d.state, cmd.balances)
    if closed is not None:
        room = ev.RoomClosed(
            reason=closed["reason"], needs=closed["needs"], passes_from=closed["passes_from"]
        )
        d.emit(room)


def _bet_refusal(exc: RulesRefusal) -> dict[str, Any]:
    return {"status": "refused", "error": exc.code, "reason": exc.reason}


class _Placed(Sequence[Bet]):
    """The round's bets placed before this command, as the game sees them, built only if
    the game looks (blackjack does, per seat; baccarat does not): building them for every
    batch made a round's intake quadratic in its bets."""

    def __init__(self, bets: Iterable[Any]) -> None:
        self._source = bets
        self._items: list[Bet] | None = None
        self._added: list[Bet] = []  # accepted earlier in this command

    def _all(self) -> list[Bet]:
        if self._items is None:
            self._items = [
                Bet(b.bet_id, b.account, b.bet_type, b.stake, b.seat)
                for b in self._source
                if b.parent is None
            ]
            self._items.extend(self._added)
        return self._items

    def append(self, bet: Bet) -> None:
        (self._items if self._items is not None else self._added).append(bet)

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[Bet]:
        return iter(self._all())


def _place_bets(d: Decision, cmd: c.PlaceBets, now: datetime, actor: str) -> None:
    config = _config(d.state)
    rnd = d.state.round
    if rnd is None or rnd.phase != "betting":
        raise BettingClosed("no round is open for betting")
    if utc_timestamp(now) >= rnd.closes_at:
        raise BettingClosed(f"betting for {rnd.round_id} closed at {rnd.closes_at}")
    if d.state.paused:
        raise TablePaused("an incident is open; betting is suspended")
    balances = dict(cmd.balances)
    accepted: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    game, rules = config.game_impl, config.rules
    placed = _Placed(rnd.bets.values())
    context = BettingContext(
        rnd.game_number,
        dict(d.state.seats_for_round()),
        placed,
        d.state.bank_seat,
        d.state.bank_from,
        dict(cmd.balances),
        d.state.joined_order(),
        d.state.bank_joined,
    )
    for bet in cmd.bets:
        try:
            intent = Bet(bet.bet_id, bet.account, bet.bet_type, bet.stake, bet.seat)
            game.check_bet(rules, intent, context)
            limits = config.limits_for(bet.bet_type)
            if not limits.min_stake <= bet.stake <= limits.max_stake:
                answers.append(
                    {
                        "key": bet.key,
                        "status": "refused",
                        "error": "outside_limits",
                        "reason": f"stake {bet.stake} outside the table limits "
                        f"{limits.min_stake}..{limits.max_stake} for {bet.bet_type}",
                    }
                )
                continue
            if balances.get(bet.account, 0) < bet.stake:
                answers.append(
                    {
                        "key": bet.key,
                        "status": "refused",
                        "error": "insufficient_funds",
                        "reason": f"account {bet.account} balance "
                        f"{balances.get(bet.account, 0)} < stake {bet.stake}",
                    }
                )
                continue
        except RulesRefusal as exc:  # the game's typed refusal; anything else is a defect
            answers.append({"key": bet.key, **_bet_refusal(exc)})
            continue
        balances[bet.account] -= bet.stake
        item: dict[str, Any] = {
            "bet_id": bet.bet_id,
            "key": bet.key,
            "account": bet.account,
            "type": bet.bet_type,
            "stake": bet.stake,
        }
        if bet.seat is not None:
            item["seat"] = bet.seat
        accepted.append(item)
        placed.append(intent)
        answers.append({"key": bet.key, "status": "placed", "bet_id": bet.bet_id})
    d.emit_chunks(ev.BetsPlaced(round_id=rnd.round_id, bets=accepted), rnd.round_id)
    d.answer = {"round_id": rnd.round_id, "results": answers}
    # Xì Dách room: betting closes once every seated player has bet
    if accepted and game.betting_complete(rules, context.seats, placed):
        answer = d.answer
        _close_betting(d, c.CloseBetting("every seated player has bet"), now, actor)
        d.answer = {**answer, "betting_closed": True}


def _close_betting(d: Decision, cmd: c.CloseBetting, now: datetime, actor: str) -> None:
    _config(d.state)
    rnd = d.state.round
    if rnd is None or rnd.phase != "betting":
        raise WrongPhase("no round is open for betting")
    d.emit(ev.BettingClosed(round_id=rnd.round_id, reason=cmd.reason), round_id=rnd.round_id)
    for card in d.state.carried:
        _deal(d, card, source="carried", reader_seq=None)
    _progress(d)
    d.answer = {"round_id": rnd.round_id, "next_position": _next_position(d.state)}


def _next_position(state: TableState) -> str | None:
    rnd = state.round
    if rnd is None or rnd.phase != "dealing":
        return None
    position = rnd.next_position()
    return position.code if position else None


# -- cards -------------------------------------------------------------------------------------
def _deal(d: Decision, card: str, *, source: str, reader_seq: int | None) -> None:
    rnd = d.state.round
    assert rnd is not None
    position = rnd.next_position()
    seat: int | ev.Absent = ev.ABSENT
    hand: int | ev.Absent | None = ev.ABSENT
    if position is not None and position.seat is not None:
        seat, hand = position.seat, position.hand  # seat games: whose card
    dealt = ev.CardDealt(
        round_id=rnd.round_id,
        card=card,
        index=len(rnd.cards),
        position=position.code if position else None,
        source=source,
        reader_seq=reader_seq,
        seat=seat,
        hand=hand,
        face_up=False if position is not None and not position.face_up else ev.ABSENT,
    )
    d.emit(dealt, round_id=rnd.round_id)


def _card_scanned(d: Decision, cmd: c.CardScanned, now: datetime, actor: str) -> None:
    _config(d.state)
    card = _card(cmd.card)
    shoe = d.state.shoe
    if shoe is None:
        d.emit(ev.CardSetAside(card=card, reason="no_shoe", counted=False))
        _incident(
            d,
            "card_without_shoe",
            blocking=False,
            actor=actor,
            details={"card": card},
            auto_resolution="card set aside: no shoe is in use",
        )
        return
    if shoe.seen.get(card, 0) + 1 > shoe.decks:
        d.emit(ev.CardSetAside(card=card, reason="foreign_card", counted=False))
        _incident(
            d,
            "foreign_card",
            blocking=True,
            actor=actor,
            details={"card": card, "copies_before": shoe.seen.get(card, 0), "decks": shoe.decks},
        )
        return
    if not shoe.ready:
        indicator = shoe.burn_remaining is None
        burnt = ev.CardBurnt(
            card=card,
            indicator=indicator,
            shoe_no=shoe.shoe_no,
            burn_count=burn_value(d.state, card) if indicator else ev.ABSENT,
        )
        d.emit(burnt)
        return
    if cmd.burn_mode:
        d.emit(ev.CardSetAside(card=card, reason="burn_mode"))
        return
    rnd = d.state.round
    if rnd is not None and rnd.phase == "betting":
        exposed_card = ev.CardSetAside(
            card=card, reason="exposed_during_betting", exposed=True, round_id=rnd.round_id
        )
        d.emit(exposed_card, rnd.round_id)
        exposed = d.state.round.exposed  # type: ignore[union-attr]
        game, _ = game_of(d.state)
        error = game.incidents.get("cards_exposed")
        if exposed >= 2 and error is not None and "void_on_confirm" in error.effects:
            # a game with seed 000's error rule: the supervisor confirms the void
            if not any(i.kind == "cards_exposed" for i in d.state.incidents.values()):
                details = {"count": exposed, "last_card": card, "procedure": error.procedure}
                _raise_error(d, "cards_exposed", error, details, actor)
            return
        if exposed >= 2:
            _incident(
                d,
                "cards_exposed",
                blocking=False,
                actor=actor,
                details={"count": exposed, "last_card": card},
                auto_resolution="rule 4: round void, every stake refunded; new shoe",
            )
            _void(d, "two or more cards exposed before betting closed", change_shoe=True)
        else:
            _incident(
                d,
                "card_exposed",
                blocking=False,
                actor=actor,
                details={"card": card},
                auto_resolution="card set aside (burnt); a second exposed card voids",
            )
        return
    if rnd is not None and rnd.phase == "dealing":
        if d.state.paused or rnd.next_position() is not None:
            # While paused every card is kept in shoe order for the supervisor's
            # re-arrangement; the round takes it (or not) when dealing resumes.
            _deal(d, card, source="reader", reader_seq=cmd.reader_seq)
        else:
            _stray_card(d, card, actor)
        _progress(d)
        return
    if shoe.cut_card_drawn:
        d.emit(ev.CardSetAside(card=card, reason="after_cut_card"))
        return
    game, _ = game_of(d.state)
    if game.stray_card == "carry":
        d.emit(ev.CardSetAside(card=card, reason="unneeded", carry=True))
        _incident(
            d,
            "unneeded_card",
            blocking=False,
            actor=actor,
            details={"card": card},
            auto_resolution="rule 3: set aside as the first card of the next round",
        )
        return
    if any(
        i.kind == "possible_duplicate" and i.details.get("card") == card
        for i in d.state.incidents.values()
    ):
        # The card the shoe may have sent again, after the round it was read in: whether it
        # was read twice or is a real copy, no hand holds it; set aside (counted, so a copy
        # too many is still caught) under the reader incident, never the error rule.
        d.emit(ev.CardSetAside(card=card, reason="possible_duplicate"))
        return
    d.emit(ev.CardSetAside(card=card, reason="not_owed"))
    _incident(
        d,
        "card_not_owed",
        blocking=True,
        actor=actor,
        details={"card": card, "expected": None, "between_rounds": True},
    )


def _cut_card(d: Decision, cmd: c.CutCard, now: datetime, actor: str) -> None:
    _config(d.state)
    shoe = d.state.shoe
    if shoe is None:
        _incident(
            d,
            "cut_card_without_shoe",
            blocking=False,
            actor=actor,
            details={},
            auto_resolution="ignored: no shoe in use",
        )
        return
    if shoe.cut_card_drawn:
        return
    d.emit(ev.CutCardDrawn(shoe_no=shoe.shoe_no))
    rnd = d.state.round
    if rnd is None or not rnd.active:
        d.emit(ev.ShoeEnded(shoe_no=shoe.shoe_no, reason="cut card"))


SHOW_AGAIN = 2
"""Times in a row the dealer is asked to show the card owed again before an unreadable card
is an incident."""


def _reader_fault(d: Decision, cmd: c.ReaderFault, now: datetime, actor: str) -> None:
    _config(d.state)
    details = dict(cmd.details)
    shoe = d.state.shoe
    rnd = d.state.round
    if cmd.kind == "offline":
        d.emit(ev.ReaderStatus(online=False, detail=details.get("reason", "")))
    if cmd.kind == "unreadable" and shoe is not None and not shoe.ready:
        # A burn card need not be read; an unreadable indicator is burnt too and the next
        # card is shown as the indicator instead.
        d.emit(ev.CardBurnt(card=None, indicator=False, shoe_no=shoe.shoe_no, unreadable=True))
        return
    if cmd.kind == "shoe_empty":
        _incident(
            d,
            "shoe_empty",
            blocking=bool(rnd and rnd.phase == "dealing"),
            actor=actor,
            details=details,
        )
        return
    if rnd is not None and rnd.phase == "dealing":
        details.setdefault("index", len(rnd.cards))
    if cmd.kind == "unreadable" and details.pop("show_again", False) and rnd is not None:
        # A camera that saw the card blurred, covered or only in part: the dealer shows
        # it again, a supervisor is called only if that fails too (or for any other card).
        index = len(rnd.cards)
        asked = rnd.show_again
        times = int(asked["times"]) + 1 if asked and asked.get("index") == index else 1
        if rnd.phase == "dealing" and rnd.next_position() is not None and times <= SHOW_AGAIN:
            again = ev.CardShowAgain(
                round_id=rnd.round_id,
                index=index,
                cause=details.get("cause", ""),
                reason=details.get("reason", ""),
                times=times,
            )
            d.emit(again, rnd.round_id)
            return
    kind = {
        "unreadable": "unreadable_card",
        "missed_card_suspected": "possible_missed_card",
        "offline": "reader_offline",
        "alarm": "hardware_alarm",
    }.get(cmd.kind, cmd.kind)
    _incident(d, kind, blocking=True, actor=actor, details=details)


def _reader_online(d: Decision, cmd: c.ReaderOnline, now: datetime, actor: str) -> None:
    if not d.state.reader_online:
        d.emit(ev.ReaderStatus(online=True, detail=cmd.info))


# -- incidents ---------------------------------------------------------------------------------
def _raise_incident(d: Decision, cmd: c.RaiseIncident, now: datetime, actor: str) -> None:
    _config(d.state)
    game, _ = game_of(d.state)
    catalogue = game.incidents
    if cmd.kind not in catalogue:
        raise BadResolution(f"unknown incident kind {cmd.kind!r}", known=sorted(catalogue))
    kind: IncidentKind = catalogue[cmd.kind]
    blocking, procedure = kind.blocking, kind.procedure
    details = {**cmd.details, "procedure": procedure}
    rnd = d.state.round
    if "void_on_count" in kind.effects:
        count = details.get("count", 1)
        if not isinstance(count, int) or count < 1:
            raise BadResolution("cards_exposed needs a positive integer count")
        if count >= 2 and (not actor.startswith("supervisor:") or _void_needs_approval(d.state)):
            # Only a supervisor may void (above the table's threshold, only two: one requests,
            # another approves): anyone else's report of two exposed cards pauses the table
            # until a supervisor confirms it (void the round) or resolves it.
            incident = _incident(d, cmd.kind, blocking=True, actor=actor, details=details)
            d.answer = {
                "incident_id": incident,
                "blocking": True,
                "procedure": "table paused: a supervisor confirms (void, new shoe) or resolves",
            }
            if _void_needs_approval(d.state):
                d.answer["void_needs_approval"] = True
            return
        if count >= 2:
            incident = _incident(
                d,
                cmd.kind,
                blocking=False,
                actor=actor,
                details=details,
                auto_resolution="rule 4: round void, stakes refunded; new shoe",
            )
            if rnd is not None and rnd.active:
                _void(d, "two or more cards exposed", change_shoe=True)
            elif d.state.shoe is not None:
                ended = ev.ShoeEnded(shoe_no=d.state.shoe.shoe_no, reason="cards exposed: new shoe")
                d.emit(ended)
            d.answer = {"incident_id": incident, "procedure": "round voided; new shoe required"}
            return
    if kind.effects & {"void_on_confirm", "void"}:
        # A void is the supervisor's decision, and above the table's threshold two
        # supervisors': a kind that voids when raised (``void``) is confirmed at once only
        # when a supervisor raises it below the threshold, as an error (``void_on_confirm``).
        _raise_error(d, cmd.kind, kind, details, actor)
        return
    incident = _incident(d, cmd.kind, blocking=blocking, actor=actor, details=details)
    if "refund_insurance" in kind.effects and rnd is not None and rnd.active:
        _refund_insurance(d, f"{cmd.kind}: {procedure}")
    if "forfeit_insurance" in kind.effects and rnd is not None and rnd.active:
        _forfeit_insurance(d, cmd.kind)
    d.answer = {"incident_id": incident, "blocking": blocking, "procedure": procedure}


def _raise_error(
    d: Decision, name: str, kind: IncidentKind, details: Mapping[str, Any], actor: str
) -> None:
    """A system or human error (blackjack, seed 000): reported, it pauses the table until
    the supervisor confirms it by resolving it; raised by a supervisor, it is confirmed at
    once (unless the void needs a second supervisor's approval)."""
    if actor.startswith("supervisor:") and not _void_needs_approval(d.state):
        incident = _incident(
            d,
            name,
            blocking=False,
            actor=actor,
            details=details,
            auto_resolution=f"confirmed by the supervisor who raised it: {kind.procedure}",
        )
        _confirm_error(d, name)
        d.answer = {"incident_id": incident, "procedure": "round voided; new shoe required"}
        return
    incident = _incident(d, name, blocking=True, actor=actor, details=details)
    d.answer = {"incident_id": incident, "blocking": True, "procedure": kind.procedure}
    if _void_needs_approval(d.state):
        d.answer["void_needs_approval"] = True  # one supervisor requests, another approves


def _void_needs_approval(state: TableState) -> bool:
    """Above the table's threshold a void takes two supervisors (the void request and
    approval routes), never one confirmation."""
    limit = _config(state).void_approval_above
    rnd = state.round
    if limit is None or rnd is None or not rnd.active:
        return False
    return sum(b.stake for b in rnd.bets.values()) > limit


def _confirm_error(d: Decision, name: str) -> None:
    """The confirmed error: the round is void (every open stake refunded once) and the
    shoe ends (seed 000: the whole shoe is re-shuffled)."""
    rnd = d.state.round
    reason = f"{name}: system or human error confirmed by the supervisor"
    if rnd is not None and rnd.active:
        _void(d, reason, change_shoe=True)
    elif d.state.shoe is not None:
        d.emit(ev.ShoeEnded(shoe_no=d.state.shoe.shoe_no, reason=reason))


def _refund(d: Decision, reason: str, bet_types: Container[str] | None = None) -> int:
    """Refund the round's open bets (of ``bet_types`` only, if given), each exactly once:
    a refunded bet leaves the round's open bets with the event. Returns how many."""
    rnd = d.state.round
    assert rnd is not None
    refunds = [
        {
            "bet_id": b.bet_id,
            "account": b.account,
            "type": b.bet_type,
            "stake": b.stake,
            "returned": b.stake,
        }
        for b in rnd.bets.values()
        if bet_types is None or b.bet_type in bet_types
    ]
    d.emit_chunks(
        ev.BetsRefunded(round_id=rnd.round_id, refunds=refunds, reason=reason), rnd.round_id
    )
    return len(refunds)


def _refund_insurance(d: Decision, reason: str) -> None:
    _refund(d, reason, _config(d.state).insurance_bet_types)


def _forfeit_insurance(d: Decision, kind: str) -> None:
    """Baccarat rule 8: the round's insurance-type wagers are lost, not refunded. Each is
    closed now with a settled line (result ``forfeited``, nothing returned), so the
    round's settlement skips it and a later void lets it stand (never refunded too)."""
    rnd = d.state.round
    assert rnd is not None
    types = _config(d.state).insurance_bet_types
    results = [
        {
            "bet_id": b.bet_id,
            "account": b.account,
            "type": b.bet_type,
            "stake": b.stake,
            "result": "forfeited",
            "returned": 0,
            "reason": f"{kind}: insurance forfeited (rule 8)",
        }
        for b in rnd.bets.values()
        if b.bet_type in types
    ]
    d.emit_chunks(ev.BetsSettled(round_id=rnd.round_id, results=results, early=True), rnd.round_id)


def _resolve_incident(d: Decision, cmd: c.ResolveIncident, now: datetime, actor: str) -> None:
    _config(d.state)
    incident = d.state.incidents.get(cmd.incident_id)
    if incident is None:
        raise UnknownIncident(f"no open incident {cmd.incident_id!r}")
    if not cmd.note.strip():
        raise BadResolution("a resolution needs a note saying what was done")
    rnd = d.state.round
    game, _ = game_of(d.state)
    kind = game.incidents.get(incident.kind)
    # resolving confirms the error (an open ``void`` kind waits for two supervisors)
    confirms = kind is not None and bool(kind.effects & {"void_on_confirm", "void"})
    if confirms and (cmd.entered or cmd.order is not None):
        raise BadResolution(
            f"{incident.kind} is not put right by entering or re-ordering cards: "
            "resolving it confirms it (the round is void, new shoe)"
        )
    if confirms and _void_needs_approval(d.state):
        raise RulesRefused(
            "this round's stakes are above the table's threshold: one supervisor requests "
            "the void, a different supervisor approves it",
            "void_needs_approval",
        )
    if cmd.read_twice:
        _read_twice(d, incident, cmd)
    elif cmd.entered or cmd.order is not None:
        if rnd is None or rnd.phase != "dealing":
            raise BadResolution("cards can be entered or re-ordered only while dealing")
        cards = list(rnd.cards)
        entered: list[str] = []
        if cmd.order is not None:
            order = [_card(x) for x in cmd.order]
            tail = cards[len(cards) - len(order) :] if order else []
            if not order or sorted(order) != sorted(tail):
                raise BadResolution(
                    "the new order must be a permutation of the last cards dealt",
                    last_cards=cards[-len(order) :] if order else [],
                )
            cards[len(cards) - len(order) :] = order
        shoe = d.state.shoe
        assert shoe is not None
        seen = dict(shoe.seen)
        for item in sorted(cmd.entered, key=lambda e: e.index):
            card = _card(item.card)
            if not 0 <= item.index <= len(cards):
                raise BadResolution(f"index {item.index} outside 0..{len(cards)}")
            if seen.get(card, 0) + 1 > shoe.decks:
                raise BadCard(f"{card}: the shoe holds only {shoe.decks} of it", card=card)
            seen[card] = seen.get(card, 0) + 1
            cards.insert(item.index, card)
            entered.append(card)
        entered_at = sorted(e.index for e in cmd.entered) if rnd.moves else ev.ABSENT
        _rearranged(d, cards, entered=entered, incident_id=cmd.incident_id, entered_at=entered_at)
    resolved = ev.IncidentResolved(
        incident_id=cmd.incident_id, resolution=cmd.note, resolved_by=actor
    )
    d.emit(resolved, round_id=incident.round_id)
    if confirms:
        _confirm_error(d, incident.kind)
        d.answer = {"incident_id": cmd.incident_id, "voided": True, "next_position": None}
        return
    missed = incident.kind == "possible_missed_card" or (
        kind is not None and "refund_insurance_on_resolve" in kind.effects
    )
    if missed and d.state.round is not None and d.state.round.active:
        _refund_insurance(d, "missed scan (rule 6)")
    _progress(d, resumed=incident.blocking)
    d.answer = {"incident_id": cmd.incident_id, "next_position": _next_position(d.state)}


def _rearranged(
    d: Decision,
    cards: list[str],
    *,
    entered: list[str],
    incident_id: str,
    entered_at: list[int] | ev.Absent = ev.ABSENT,
    read_twice: Mapping[str, Any] | ev.Absent = ev.ABSENT,
) -> None:
    """Record the round's cards in their new shoe order, with where each now goes."""
    rnd = d.state.round
    assert rnd is not None
    hidden = _face_down_at(d.state, rnd, cards)  # the public stream shows these as null
    spots = [spot.code for spot in _spots_of(d.state, rnd, cards)]  # where each now goes
    rearranged = ev.CardsRearranged(
        round_id=rnd.round_id,
        cards=cards,
        entered=entered,
        incident_id=incident_id,
        entered_at=entered_at,
        read_twice=read_twice,
        face_down=hidden or ev.ABSENT,
        positions=spots or ev.ABSENT,
    )
    d.emit(rearranged, rnd.round_id)


def _read_twice(d: Decision, incident: Incident, cmd: c.ResolveIncident) -> None:
    """A possible duplicate the supervisor found to be one card read twice (the shoe sent
    it again after a reconnection): the repeat is taken out of the round and out of the
    shoe's count, and the round goes on as if it had never come. No hand changes, so it
    stays a reader incident in every game (seed 000: a card read twice is not blackjack's
    error rule); a real copy is resolved without ``read_twice`` and stays dealt."""
    if incident.kind != "possible_duplicate":
        raise BadResolution(
            f"only a possible duplicate can be resolved as a card read twice, not {incident.kind}"
        )
    if cmd.entered or cmd.order is not None:
        raise BadResolution("a card read twice is taken out alone: enter or re-order cards apart")
    rnd = d.state.round
    card, index = incident.details.get("card"), incident.details.get("index")
    if (
        rnd is None
        or rnd.phase != "dealing"
        or rnd.round_id != incident.round_id
        or not isinstance(index, int)
        or not 0 <= index < len(rnd.cards)
        or rnd.cards[index] != card
    ):
        raise BadResolution(
            "the repeated card is not in the round being dealt: resolve it without read_twice",
            card=card,
            index=index,
        )
    cards = [*rnd.cards[:index], *rnd.cards[index + 1 :]]
    twice = {"card": card, "index": index}
    _rearranged(d, cards, entered=[], incident_id=cmd.incident_id, read_twice=twice)


def _void_round(d: Decision, cmd: c.VoidRound, now: datetime, actor: str) -> None:
    _config(d.state)
    rnd = d.state.round
    if rnd is None or not rnd.active:
        raise WrongPhase("no round in progress to void")
    if not cmd.reason.strip():
        raise BadResolution("voiding a round needs a reason")
    _void(d, cmd.reason, change_shoe=cmd.change_shoe)
    d.answer = {"round_id": rnd.round_id, "voided": True}


def _void(d: Decision, reason: str, *, change_shoe: bool) -> None:
    rnd = d.state.round
    assert rnd is not None
    refunded = _refund(d, reason)
    # A check (xét) is a settlement: the stakes it paid stand, and only the stakes still
    # open are refunded, so no stake is both paid and refunded (rules/xidach.md).
    stood = sorted(rnd.early) if rnd.early else ev.ABSENT
    voided = ev.RoundVoided(round_id=rnd.round_id, reason=reason, refunded=refunded, stood=stood)
    d.emit(voided, rnd.round_id)
    for incident in list(d.state.incidents.values()):
        if incident.round_id == rnd.round_id:
            resolved = ev.IncidentResolved(
                incident_id=incident.incident_id,
                resolution=f"round voided: {reason}",
                resolved_by=SYSTEM,
            )
            d.emit(resolved, round_id=rnd.round_id)
    shoe = d.state.shoe
    if shoe is not None and (change_shoe or shoe.cut_card_drawn):
        d.emit(ev.ShoeEnded(shoe_no=shoe.shoe_no, reason=reason if change_shoe else "cut card"))


# -- the end of a round ----------------------------------------------------------------------
def _stray_card(d: Decision, card: str, actor: str, *, from_round: bool = False) -> None:
    """A card the round owes no position, by the game's rule: carried to the next round
    (baccarat rule 3), or set aside behind a blocking dealing incident for the supervisor
    (never dropped, never guessed into a position)."""
    rnd = d.state.round
    assert rnd is not None
    game = game_of_round(rnd)
    carry = game.stray_card == "carry"
    # a card the round held until now leaves it: the round keeps the cards before it
    kept = len(rnd.cards) - len(rnd.play.leftover) if rnd.play else len(rnd.cards)
    aside = ev.CardSetAside(
        card=card,
        reason="unneeded" if carry else "not_owed",
        counted=False if from_round else ev.ABSENT,
        from_round=rnd.round_id if from_round else ev.ABSENT,
        round_cards=list(rnd.cards[:kept]) if from_round else ev.ABSENT,
        round_id=ev.ABSENT if from_round else rnd.round_id,
        carry=True if carry else ev.ABSENT,
    )
    d.emit(aside, rnd.round_id)
    if from_round:
        return
    if game.stray_card == "carry":
        _incident(
            d,
            "unneeded_card",
            blocking=False,
            actor=actor,
            details={"card": card},
            auto_resolution="rule 3: set aside as the first card of the next round",
        )
    else:
        _incident(
            d,
            "card_not_owed",
            blocking=True,
            actor=actor,
            details={"card": card, "expected": _expected(d.state)},
        )


def _result_item(line: Line, bet: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "bet_id": line.stake_id,
        "account": bet.account,
        "type": bet.bet_type,
        "stake": line.stake,
        "result": line.result,
        "returned": line.returned,
    }
    if line.part != "original":
        item["part"] = line.part
    # one settled line per stake of a round: plain tests, not a loop over names
    if line.seat is not None:
        item["seat"] = line.seat
    if line.hand is not None:
        item["hand"] = line.hand
    if line.reason is not None:
        item["reason"] = line.reason
    if line.commission:
        item["commission"] = line.commission
    return item


def _reveal(d: Decision) -> None:
    """Show the public the face-down cards the game now turns (a Xì Dách banker's hole
    card at its turn, a hidden seat's cards once that hand is settled)."""
    rnd = d.state.round
    assert rnd is not None and rnd.play is not None
    revealed = game_of_round(rnd).revealed(rnd.play.state)
    new = [(i, card) for i, card in revealed if i not in rnd.revealed]
    if new:
        cards = [{"index": i, "card": card} for i, card in new]
        d.emit(ev.CardsRevealed(round_id=rnd.round_id, cards=cards), round_id=rnd.round_id)


def _settle_early(d: Decision) -> None:
    """Pay the stakes a game settles before the round ends (a Xì Dách check) at once."""
    rnd = d.state.round
    assert rnd is not None and rnd.play is not None
    early = game_of_round(rnd).settled_early(rnd.play.state)
    lines = [ln for ln in early if ln.stake_id in rnd.bets]
    if lines:
        results = [_result_item(ln, rnd.bets[ln.stake_id]) for ln in lines]
        settled = ev.BetsSettled(round_id=rnd.round_id, results=results, early=True)
        d.emit_chunks(settled, rnd.round_id)
        _credit_commission(d, results)


def _credit_commission(d: Decision, results: list[dict[str, Any]]) -> None:
    """The commission kept out of these settled lines, credited to the table's house
    account as its own ledger line per bet, with the settlement (the same command, so
    the same transaction)."""
    kept = [
        {"bet_id": r["bet_id"], "commission": r["commission"]}
        for r in results
        if r.get("commission")
    ]
    if not kept:
        return
    rnd = d.state.round
    assert rnd is not None
    commission = ev.CommissionCredited(
        round_id=rnd.round_id,
        account=house_account(d.state.table_id),
        amount=sum(k["commission"] for k in kept),
        lines=kept,
    )
    d.emit(commission, round_id=rnd.round_id)


def _progress(d: Decision, *, resumed: bool = False) -> None:
    """Take the round as far as it goes without a card or a person: cards it cannot take
    by the game's stray-card rule, then settlement once the game says it is complete."""
    rnd = d.state.round
    if rnd is None or rnd.phase != "dealing" or d.state.paused or rnd.play is None:
        return
    game = game_of_round(rnd)
    if rnd.play.leftover:
        leftover = [c.code for c in rnd.play.leftover]
        if game.stray_card == "carry":
            for card in leftover:
                _stray_card(d, card, SYSTEM, from_round=True)
        else:
            for card in leftover:
                _stray_card(d, card, SYSTEM, from_round=True)
            _incident(
                d,
                "card_not_owed",
                blocking=True,
                actor=SYSTEM,
                details={"cards": leftover, "expected": _expected(d.state)},
            )
            return
    fresh = resumed
    _settle_early(d)
    _reveal(d)
    while True:
        rnd = d.state.round
        assert rnd is not None and rnd.play is not None
        nxt = game.next(rnd.play.state)
        if isinstance(nxt, Complete):
            _settle(d)
            return
        if not isinstance(nxt, Turn):
            return
        if fresh or rnd.turn is None or rnd.turn.clock != nxt.clock:
            assert d.now is not None
            awaited = ev.DecisionAwaited(
                round_id=rnd.round_id,
                clock=nxt.clock,
                actors=list(nxt.actors),
                ms=round(nxt.seconds * 1000),  # no floats in the log
                deadline=utc_timestamp(d.now + timedelta(seconds=nxt.seconds)),
            )
            d.emit(awaited, rnd.round_id)
            fresh = False
        gone = [a for a in nxt.actors if _disconnected(d.state, a)]
        if not gone:
            return
        _play(d, game.timeout_action(rnd.play.state, gone[0]), by=SYSTEM, auto="disconnected")


def _disconnected(state: TableState, actor: str) -> bool:
    kind, _, who = actor.partition(":")
    if kind != "seat" or not who.isdigit():
        return False
    holder = state.seats.get(int(who))
    return holder is not None and holder.disconnected


def _play(
    d: Decision,
    move: Move,
    *,
    by: str,
    auto: str | None = None,
    balances: dict[str, int] | None = None,
) -> None:
    """Record a move, and debit every stake it adds (a double, a split, insurance, an
    accepted follow offer) from the account of the bet it belongs to."""
    rnd = d.state.round
    assert rnd is not None and rnd.play is not None
    before = {s.stake_id for s in game_of_round(rnd).placed_stakes(rnd.play.state)}
    taken = ev.ActionTaken(
        round_id=rnd.round_id,
        actor=move.actor,
        action=move.action,
        hand=ev.opt(move.hand),
        target=ev.opt(move.target),
        by=by,
        auto=ev.opt(auto),
    )
    d.emit(taken, rnd.round_id)
    rnd = d.state.round
    assert rnd is not None and rnd.play is not None
    game = game_of_round(rnd)
    added = [  # stakes the move added (not those a check has already settled)
        s
        for s in game.placed_stakes(rnd.play.state)
        if s.stake_id not in before and s.stake_id not in rnd.bets
    ]
    if not added:
        return
    items = []
    for stake in added:
        parent = rnd.bets.get(stake.bet_id)
        if parent is None:
            raise RuntimeError(f"{game.name}: stake {stake.stake_id} of an unknown bet")
        if balances is not None:
            have = balances.get(parent.account, 0)
            if have < stake.amount:
                raise InsufficientFunds(
                    f"account {parent.account} balance {have} < {stake.part} stake {stake.amount}",
                    account=parent.account,
                )
            balances[parent.account] = have - stake.amount
        item: dict[str, Any] = {
            "bet_id": stake.stake_id,
            "key": f"{rnd.round_id}|{stake.stake_id}",
            "account": parent.account,
            "type": stake.bet_type,
            "stake": stake.amount,
            "parent": stake.bet_id,
            "part": stake.part,
        }
        if stake.seat is not None:
            item["seat"] = stake.seat
        if stake.hand is not None:
            item["hand"] = stake.hand
        items.append(item)
    d.emit(ev.BetsPlaced(round_id=rnd.round_id, bets=items), rnd.round_id)


def _face_down_at(state: TableState, rnd: Any, cards: list[str]) -> list[int]:
    """Indexes of ``cards`` that go to a face-down spot (a Xì Dách banker's hole card, a
    hidden seat), as the game places them in this order with the round's moves."""
    if rnd.setup is None:
        return []
    game, rules = game_of(state)
    play = game.new_round(rules, rnd.setup)
    pending = list(rnd.moves)
    hidden: list[int] = []
    for index, code in enumerate(cards):
        while pending and pending[0][0] <= index:
            try:
                play = game.apply(play, pending.pop(0)[1])
            except RulesRefusal:
                return hidden
        spot = game.next(play)
        if not isinstance(spot, Spot):
            break
        if not spot.face_up:
            hidden.append(index)
        try:
            play = game.apply(play, parse_card(code))
        except RulesRefusal:
            break
    return hidden


def _spots_of(state: TableState, rnd: Any, cards: list[str]) -> list[Spot]:
    """Where the game places ``cards`` in this order with the round's moves (as far as it
    takes them): the spot of each card, face up or down."""
    if rnd.setup is None:
        return []
    game, rules = game_of(state)
    play = game.new_round(rules, rnd.setup)
    pending = list(rnd.moves)
    spots: list[Spot] = []
    for code in cards:
        index = len(spots)
        while pending and pending[0][0] <= index:
            try:
                play = game.apply(play, pending.pop(0)[1])
            except RulesRefusal:
                return spots
        spot = game.next(play)
        if not isinstance(spot, Spot):
            break
        spots.append(spot)
        try:
            play = game.apply(play, parse_card(code))
        except RulesRefusal:
            break
    return spots


def _expected(state: TableState) -> Any:
    rnd = state.round
    if rnd is None or rnd.play is None:
        return None
    return game_of_round(rnd).next(rnd.play.state).to_json()


def _settle(d: Decision) -> None:
    rnd = d.state.round
    assert rnd is not None and rnd.play is not None
    game = game_of_round(rnd)
    settlement = game.settle(rnd.play.state)
    result = ev.RoundResult(round_id=rnd.round_id, outcome=dict(settlement.outcome))
    d.emit(result, round_id=rnd.round_id)
    open_bets = dict(rnd.bets)
    results = []
    # The round's totals count every stake it settled once: those a check (xét) paid
    # during the round with their early line, the rest with this settlement.
    early = rnd.early
    staked = sum(x[0] for x in early.values())
    returned = sum(x[1] for x in early.values())
    commission = sum(x[2] for x in early.values())
    for line in settlement.lines:
        bet = open_bets.pop(line.stake_id, None)
        if bet is None:
            continue  # closed already in the round (rule 5/6 refunds, a Xì Dách check)
        staked += line.stake
        returned += line.returned
        commission += line.commission
        results.append(_result_item(line, bet))
    if open_bets:
        raise RuntimeError(f"{game.name} left stakes unsettled: {sorted(open_bets)}")
    d.emit_chunks(ev.BetsSettled(round_id=rnd.round_id, results=results), rnd.round_id)
    _credit_commission(d, results)
    totals = ev.RoundSettled(
        round_id=rnd.round_id,
        bets=len(results) + len(early),
        staked=staked,
        returned=returned,
        settled_early=len(early) if early else ev.ABSENT,
        commission=commission if commission else ev.ABSENT,
    )
    d.emit(totals, rnd.round_id)
    for seat in settlement.released_seats:
        holder = d.state.seats.get(seat)
        if holder is not None:
            released = ev.SeatReleased(
                seat=seat,
                account=holder.account,
                reason="the player took no action during the round",
            )
            d.emit(released, round_id=rnd.round_id)
    shoe = d.state.shoe
    if shoe is not None and shoe.cut_card_drawn:
        d.emit(ev.ShoeEnded(shoe_no=shoe.shoe_no, reason="cut card"))
    elif shoe is not None and game.fresh_deck_each_round(game_of(d.state)[1]):
        reason = "one deck: a fresh deck each round"
        d.emit(ev.ShoeEnded(shoe_no=shoe.shoe_no, reason=reason))


# -- seats and decisions -----------------------------------------------------------------------
def _seat_count(state: TableState) -> int:
    game, rules = game_of(state)
    return game.seats(rules)


def _take_seat(d: Decision, cmd: c.TakeSeat, now: datetime, actor: str) -> None:
    config = _config(d.state)
    count = _seat_count(d.state)
    if count == 0:
        raise SeatRefused("this game has no seats: players bet on the round")
    if isinstance(cmd.seat, bool) or not 1 <= cmd.seat <= count:
        raise SeatRefused(f"seats are numbered 1..{count}", seat=cmd.seat)
    holder = d.state.seats.get(cmd.seat)
    if holder is not None:
        raise SeatRefused(f"seat {cmd.seat} is taken", seat=cmd.seat)
    elsewhere = [n for n, h in d.state.seats.items() if h.account == cmd.account]
    if elsewhere:
        raise SeatRefused(f"{cmd.account} already sits at seat {elsewhere[0]}: one seat a player")
    rnd = d.state.round
    if rnd is not None and rnd.active:
        placed = [Bet(b.bet_id, b.account, b.bet_type, b.stake, b.seat) for b in rnd.bets.values()]
        config.game_impl.check_seat(config.rules, cmd.account, placed)  # blackjack: no behind
    pending = rnd is not None and rnd.phase in ("dealing", "result")
    d.emit(ev.SeatTaken(seat=cmd.seat, account=cmd.account, pending=pending))
    d.answer = {"seat": cmd.seat, "plays_from": "next round" if pending else "this round"}


def _in_round(state: TableState, seat: int) -> bool:
    rnd = state.round
    return (
        rnd is not None
        and rnd.active
        and any(b.seat == seat and b.parent is None for b in rnd.bets.values())
    )


def _leave_seat(d: Decision, cmd: c.LeaveSeat, now: datetime, actor: str) -> None:
    _config(d.state)
    holder = d.state.seats.get(cmd.seat)
    if holder is None:
        raise SeatRefused(f"seat {cmd.seat} is free", seat=cmd.seat)
    if _in_round(d.state, cmd.seat):
        raise WrongPhase(f"seat {cmd.seat} has bets in the round: it leaves after the round")
    d.emit(ev.SeatReleased(seat=cmd.seat, account=holder.account, reason=cmd.reason))


def _player_disconnected(d: Decision, cmd: c.PlayerDisconnected, now: datetime, actor: str) -> None:
    _config(d.state)
    holder = d.state.seats.get(cmd.seat)
    if holder is None:
        raise SeatRefused(f"seat {cmd.seat} is free", seat=cmd.seat)
    rnd = d.state.round
    round_id = rnd.round_id if rnd is not None else None
    d.emit(ev.PlayerDisconnected(seat=cmd.seat, round_id=round_id), round_id=round_id)
    _progress(d)
    d.answer = {"seat": cmd.seat, "auto_play": "the rules play the seat's decisions"}


def _awaited(d: Decision, actor_name: str) -> Turn:
    rnd = d.state.round
    if rnd is None or rnd.phase != "dealing" or rnd.play is None:
        raise WrongPhase("no round is being dealt")
    if d.state.paused:
        raise TablePaused("an incident is open; decisions wait for the supervisor")
    if rnd.play.leftover:
        raise TablePaused("cards are waiting for the supervisor")
    nxt = game_of_round(rnd).next(rnd.play.state)
    if not isinstance(nxt, Turn):
        raise NotYourTurn("no decision is awaited now", expected=nxt.to_json(), actor=actor_name)
    return nxt


def _act(d: Decision, cmd: c.Act, now: datetime, actor: str) -> None:
    _config(d.state)
    turn = _awaited(d, cmd.actor)
    rnd = d.state.round
    assert rnd is not None and rnd.play is not None
    game = game_of_round(rnd)
    legal = game.legal_actions(rnd.play.state, cmd.actor)
    # out of turn only what the game allows anyone at any time (a Xì Dách punter or
    # seated banker leaving, a privacy flag); every other move waits for the actor's turn
    if cmd.actor not in turn.actors and not any(m.action == cmd.action for m in legal):
        raise NotYourTurn(f"{cmd.actor} is not to act", awaited=list(turn.actors))
    # whose player it is (the seat's, the bet's, the bank's account) is the policy's
    # to decide, before this (table_service.table.policy)
    chosen = [
        m
        for m in legal
        if m.action == cmd.action
        and (cmd.hand is None or m.hand == cmd.hand)
        and (cmd.target is None or m.target == cmd.target)
    ]
    if not chosen:
        listed = [m.to_json() for m in legal]
        try:
            game.apply(rnd.play.state, Move(cmd.actor, cmd.action, cmd.hand, cmd.target))
        except RulesRefusal as exc:
            raise RulesRefused(exc.reason, exc.code, legal_actions=listed) from exc
        raise RulesRefused(
            f"{cmd.action} is not a decision {cmd.actor} may take now",
            "illegal_decision",
            legal_actions=listed,
        )
    _play(d, chosen[0], by=actor, balances=dict(cmd.balances))
    _progress(d)
    d.answer = {"round_id": rnd.round_id, "move": chosen[0].to_json()}


def _turn_timeout(d: Decision, cmd: c.TurnTimeout, now: datetime, actor: str) -> None:
    _config(d.state)
    rnd = d.state.round
    turn = _awaited(d, "timer")
    if rnd is None or rnd.turn is None or rnd.turn.clock != cmd.clock or turn.clock != cmd.clock:
        raise WrongPhase("that clock is no longer running", clock=cmd.clock)
    if utc_timestamp(now) < rnd.turn.deadline:
        raise WrongPhase(f"the clock runs until {rnd.turn.deadline}", clock=cmd.clock)
    played = []
    while True:
        rnd = d.state.round
        assert rnd is not None and rnd.play is not None
        nxt = game_of_round(rnd).next(rnd.play.state)
        if not isinstance(nxt, Turn) or nxt.clock != cmd.clock:
            break
        move = game_of_round(rnd).timeout_action(rnd.play.state, nxt.actors[0])
        _play(d, move, by=actor, auto="timeout")
        played.append(move.to_json())
    _progress(d)
    d.answer = {"round_id": rnd.round_id, "timed_out": played}


_HANDLERS: dict[type, Any] = {
    c.OpenTable: _open_table,
    c.InsertShoe: _insert_shoe,
    c.ChangeShoe: _change_shoe,
    c.OpenBetting: _open_betting,
    c.ReviewRoom: _review_room,
    c.CloseBetting: _close_betting,
    c.PlaceBets: _place_bets,
    c.CardScanned: _card_scanned,
    c.CutCard: _cut_card,
    c.ReaderFault: _reader_fault,
    c.ReaderOnline: _reader_online,
    c.RaiseIncident: _raise_incident,
    c.ResolveIncident: _resolve_incident,
    c.VoidRound: _void_round,
    c.TakeSeat: _take_seat,
    c.LeaveSeat: _leave_seat,
    c.PlayerDisconnected: _player_disconnected,
    c.Act: _act,
    c.TurnTimeout: _turn_timeout,
}
