"""Command → events, by the table procedure. Pure: the clock comes in.

``decide`` either returns the events a command produces (already checked by applying
them to a copy of the state) or raises a typed :class:`~table_service.errors.Refused`.
Everything only the game knows — whether a bet is allowed, where a card goes, what a
decision does, what each stake returns — is asked of the table's game through
:mod:`table_service.rules.game`: the same code as ``livetable settle`` and the RTP report.

One module per procedure: :mod:`.shoe` (the table and its shoe), :mod:`.betting`,
:mod:`.cards` (a card from the reader), :mod:`.incidents` (and voids), :mod:`.settlement`
(the end of a round), :mod:`.seats` (and decisions); :mod:`.decision` holds the decision,
its typed events and the steps they share. Here: which procedure takes each command.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from table_service.rules.game import RulesRefusal
from table_service.table import commands as c
from table_service.table.decide.betting import close_betting, open_betting, place_bets, review_room
from table_service.table.decide.cards import card_scanned
from table_service.table.decide.decision import CHUNK, SYSTEM, Decision, Draft
from table_service.table.decide.incidents import raise_incident, resolve_incident, void_round
from table_service.table.decide.seats import (
    act,
    leave_seat,
    player_disconnected,
    take_seat,
    turn_timeout,
)
from table_service.table.decide.shoe import (
    change_shoe,
    cut_card,
    insert_shoe,
    open_table,
    reader_fault,
    reader_online,
)
from table_service.table.errors import RulesRefused
from table_service.table.state import TableState

__all__ = ["CHUNK", "SYSTEM", "Decision", "Draft", "decide"]


def decide(state: TableState, command: c.Command, *, now: datetime, actor: str) -> Decision:
    d = Decision(state, now=now)
    handler = _HANDLERS[type(command)]
    try:
        handler(d, command, now, actor)
    except RulesRefusal as exc:  # one refusal root from every game: a typed answer
        raise RulesRefused(exc.reason, exc.code, **exc.details) from exc
    return d


# The procedure that takes each command: (decision, command, now, actor).
_HANDLERS: Final[dict[type, Callable[[Decision, Any, datetime, str], None]]] = {
    c.OpenTable: open_table,
    c.InsertShoe: insert_shoe,
    c.ChangeShoe: change_shoe,
    c.OpenBetting: open_betting,
    c.ReviewRoom: review_room,
    c.CloseBetting: close_betting,
    c.PlaceBets: place_bets,
    c.CardScanned: card_scanned,
    c.CutCard: cut_card,
    c.ReaderFault: reader_fault,
    c.ReaderOnline: reader_online,
    c.RaiseIncident: raise_incident,
    c.ResolveIncident: resolve_incident,
    c.VoidRound: void_round,
    c.TakeSeat: take_seat,
    c.LeaveSeat: leave_seat,
    c.PlayerDisconnected: player_disconnected,
    c.Act: act,
    c.TurnTimeout: turn_timeout,
}
