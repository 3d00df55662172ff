"""A card from the reader: into the round at the position the game owes it, or set aside
by the procedure for where the table stands (no shoe, a copy too many, betting open, no
card owed, after the cut card)."""

from __future__ import annotations

from datetime import datetime

from table_service.table import commands as c
from table_service.table import events as ev
from table_service.table.decide.decision import (
    Decision,
    Raise,
    card_code,
    config_of,
    set_aside,
)
from table_service.table.decide.incidents import (
    raise_error,
    void,
)
from table_service.table.decide.settlement import (
    progress,
    stray_card,
)
from table_service.table.decide.shoe import burn_value
from table_service.table.state import (
    ShoeState,
    TableRound,
    game_of,
)


def deal(d: Decision, card: str, *, source: str, reader_seq: int | None) -> None:
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


def card_scanned(d: Decision, cmd: c.CardScanned, now: datetime, actor: str) -> None:
    """A card the reader reports, by the procedure for where the table stands."""
    config_of(d.state)
    card = card_code(cmd.card)
    shoe = d.state.shoe
    if shoe is None:
        aside = ev.CardSetAside(card=card, reason="no_shoe", counted=False)
        resolution = "card set aside: no shoe is in use"
        set_aside(
            d,
            aside,
            then=Raise("card_without_shoe", False, {"card": card}, resolution),
            actor=actor,
        )
        return
    if shoe.seen.get(card, 0) + 1 > shoe.decks:
        aside = ev.CardSetAside(card=card, reason="foreign_card", counted=False)
        copies = {"card": card, "copies_before": shoe.seen.get(card, 0), "decks": shoe.decks}
        set_aside(d, aside, then=Raise("foreign_card", True, copies), actor=actor)
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
        set_aside(d, ev.CardSetAside(card=card, reason="burn_mode"))
        return
    rnd = d.state.round
    if rnd is not None and rnd.phase == "betting":
        _exposed_while_betting(d, rnd, card, actor)
        return
    if rnd is not None and rnd.phase == "dealing":
        if d.state.paused or rnd.next_position() is not None:
            # While paused every card is kept in shoe order for the supervisor's
            # re-arrangement; the round takes it (or not) when dealing resumes.
            deal(d, card, source="reader", reader_seq=cmd.reader_seq)
        else:
            stray_card(d, card, actor)
        progress(d)
        return
    _between_rounds(d, shoe, card, actor)


def _exposed_while_betting(d: Decision, rnd: TableRound, card: str, actor: str) -> None:
    """A card out of the shoe while betting is open: set aside as exposed; the first is
    burnt, a second voids the round (rule 4) or, where the game has seed 000's error rule,
    pauses the table until the supervisor confirms the void."""
    exposed = rnd.exposed + 1  # this card and those exposed before it in the window
    aside = ev.CardSetAside(
        card=card, reason="exposed_during_betting", exposed=True, round_id=rnd.round_id
    )
    game, _ = game_of(d.state)
    error = game.incidents.get("cards_exposed")
    if exposed >= 2 and error is not None and "void_on_confirm" in error.effects:
        # a game with seed 000's error rule: the supervisor confirms the void
        set_aside(d, aside, round_id=rnd.round_id)
        if not any(i.kind == "cards_exposed" for i in d.state.incidents.values()):
            details = {"count": exposed, "last_card": card, "procedure": error.procedure}
            raise_error(d, "cards_exposed", error, details, actor)
        return
    if exposed >= 2:
        resolution = "rule 4: round void, every stake refunded; new shoe"
        two = Raise("cards_exposed", False, {"count": exposed, "last_card": card}, resolution)
        set_aside(d, aside, round_id=rnd.round_id, then=two, actor=actor)
        void(d, "two or more cards exposed before betting closed", change_shoe=True)
        return
    resolution = "card set aside (burnt); a second exposed card voids"
    one = Raise("card_exposed", False, {"card": card}, resolution)
    set_aside(d, aside, round_id=rnd.round_id, then=one, actor=actor)


def _between_rounds(d: Decision, shoe: ShoeState, card: str, actor: str) -> None:
    """A card while no round is being dealt: after the cut card it is set aside; otherwise
    carried to the next round (baccarat rule 3) or set aside for the supervisor."""
    if shoe.cut_card_drawn:
        set_aside(d, ev.CardSetAside(card=card, reason="after_cut_card"))
        return
    game, _ = game_of(d.state)
    if game.stray_card == "carry":
        aside = ev.CardSetAside(card=card, reason="unneeded", carry=True)
        resolution = "rule 3: set aside as the first card of the next round"
        carried = Raise("unneeded_card", False, {"card": card}, resolution)
        set_aside(d, aside, then=carried, actor=actor)
        return
    if any(
        i.kind == "possible_duplicate" and i.details.get("card") == card
        for i in d.state.incidents.values()
    ):
        # The card the shoe may have sent again, after the round it was read in: whether it
        # was read twice or is a real copy, no hand holds it; set aside (counted, so a copy
        # too many is still caught) under the reader incident, never the error rule.
        set_aside(d, ev.CardSetAside(card=card, reason="possible_duplicate"))
        return
    details = {"card": card, "expected": None, "between_rounds": True}
    aside = ev.CardSetAside(card=card, reason="not_owed")
    set_aside(d, aside, then=Raise("card_not_owed", True, details), actor=actor)
