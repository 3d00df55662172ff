"""The table and its shoe: opening the table, a shoe in and out, its burn, the cut card,
and what the reader says of itself (offline, online, a card it could not read)."""

from __future__ import annotations

from datetime import datetime

from table_service.rules.cards import parse_card
from table_service.table import commands as c
from table_service.table import events as ev
from table_service.table.decide.decision import (
    Decision,
    config_of,
    open_incident,
)
from table_service.table.errors import (
    NoShoe,
    WrongPhase,
)
from table_service.table.state import TableState, game_of


def burn_value(state: TableState, card: str) -> int:
    """How many cards the game burns after ``card``, the first of a new shoe."""
    game, rules = game_of(state)
    return game.burn_count(rules, parse_card(card))


def open_table(d: Decision, cmd: c.OpenTable, now: datetime, actor: str) -> None:
    rnd = d.state.round
    if rnd is not None and rnd.active:
        raise WrongPhase("cannot reconfigure a table while a round is in progress")
    rules = cmd.config.rules  # bad rules are refused before anything is written
    # Xì Dách: the exact house edge of the terms the table opens with
    terms = cmd.config.game_impl.opening_terms(rules)
    d.emit(ev.TableOpened(config=cmd.config.snapshot(), terms=terms or ev.ABSENT))


def insert_shoe(d: Decision, cmd: c.InsertShoe, now: datetime, actor: str) -> None:
    config = config_of(d.state)
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


def change_shoe(d: Decision, cmd: c.ChangeShoe, now: datetime, actor: str) -> None:
    config_of(d.state)
    if d.state.shoe is None:
        raise NoShoe("no shoe in use")
    rnd = d.state.round
    if rnd is not None and rnd.active:
        raise WrongPhase("a round is in progress; finish or void it first")
    d.emit(ev.ShoeEnded(shoe_no=d.state.shoe.shoe_no, reason=cmd.reason))


def cut_card(d: Decision, cmd: c.CutCard, now: datetime, actor: str) -> None:
    config_of(d.state)
    shoe = d.state.shoe
    if shoe is None:
        open_incident(
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


def reader_fault(d: Decision, cmd: c.ReaderFault, now: datetime, actor: str) -> None:
    config_of(d.state)
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
        open_incident(
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
    open_incident(d, kind, blocking=True, actor=actor, details=details)


def reader_online(d: Decision, cmd: c.ReaderOnline, now: datetime, actor: str) -> None:
    if not d.state.reader_online:
        d.emit(ev.ReaderStatus(online=True, detail=cmd.info))
