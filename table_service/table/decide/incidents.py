"""Incidents and voids: raised by a person or the reader, resolved by a supervisor (cards
entered, re-ordered, a card read twice taken out), a confirmed error voiding the round,
and the refunds (every open stake once, or insurance only) a void or a rule makes."""

from __future__ import annotations

from collections.abc import Container, Mapping
from datetime import datetime
from typing import Any

from table_service.rules.game import (
    IncidentKind,
)
from table_service.table import commands as c
from table_service.table import events as ev
from table_service.table.decide.decision import (
    SYSTEM,
    Decision,
    card_code,
    config_of,
    next_position,
    open_incident,
)
from table_service.table.decide.settlement import (
    face_down_at,
    progress,
    spots_of,
)
from table_service.table.errors import (
    BadCard,
    BadResolution,
    RulesRefused,
    UnknownIncident,
    WrongPhase,
)
from table_service.table.state import Incident, TableState, game_of


def raise_incident(d: Decision, cmd: c.RaiseIncident, now: datetime, actor: str) -> None:
    config_of(d.state)
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
        if count >= 2 and (not actor.startswith("supervisor:") or void_needs_approval(d.state)):
            # Only a supervisor may void (above the table's threshold, only two: one requests,
            # another approves): anyone else's report of two exposed cards pauses the table
            # until a supervisor confirms it (void the round) or resolves it.
            incident = open_incident(d, cmd.kind, blocking=True, actor=actor, details=details)
            d.answer = {
                "incident_id": incident,
                "blocking": True,
                "procedure": "table paused: a supervisor confirms (void, new shoe) or resolves",
            }
            if void_needs_approval(d.state):
                d.answer["void_needs_approval"] = True
            return
        if count >= 2:
            incident = open_incident(
                d,
                cmd.kind,
                blocking=False,
                actor=actor,
                details=details,
                auto_resolution="rule 4: round void, stakes refunded; new shoe",
            )
            if rnd is not None and rnd.active:
                void(d, "two or more cards exposed", change_shoe=True)
            elif d.state.shoe is not None:
                ended = ev.ShoeEnded(shoe_no=d.state.shoe.shoe_no, reason="cards exposed: new shoe")
                d.emit(ended)
            d.answer = {"incident_id": incident, "procedure": "round voided; new shoe required"}
            return
    if kind.effects & {"void_on_confirm", "void"}:
        # A void is the supervisor's decision, and above the table's threshold two
        # supervisors': a kind that voids when raised (``void``) is confirmed at once only
        # when a supervisor raises it below the threshold, as an error (``void_on_confirm``).
        raise_error(d, cmd.kind, kind, details, actor)
        return
    incident = open_incident(d, cmd.kind, blocking=blocking, actor=actor, details=details)
    if "refund_insurance" in kind.effects and rnd is not None and rnd.active:
        refund_insurance(d, f"{cmd.kind}: {procedure}")
    if "forfeit_insurance" in kind.effects and rnd is not None and rnd.active:
        forfeit_insurance(d, cmd.kind)
    d.answer = {"incident_id": incident, "blocking": blocking, "procedure": procedure}


def raise_error(
    d: Decision, name: str, kind: IncidentKind, details: Mapping[str, Any], actor: str
) -> None:
    """A system or human error (blackjack, seed 000): reported, it pauses the table until
    the supervisor confirms it by resolving it; raised by a supervisor, it is confirmed at
    once (unless the void needs a second supervisor's approval)."""
    if actor.startswith("supervisor:") and not void_needs_approval(d.state):
        incident = open_incident(
            d,
            name,
            blocking=False,
            actor=actor,
            details=details,
            auto_resolution=f"confirmed by the supervisor who raised it: {kind.procedure}",
        )
        confirm_error(d, name)
        d.answer = {"incident_id": incident, "procedure": "round voided; new shoe required"}
        return
    incident = open_incident(d, name, blocking=True, actor=actor, details=details)
    d.answer = {"incident_id": incident, "blocking": True, "procedure": kind.procedure}
    if void_needs_approval(d.state):
        d.answer["void_needs_approval"] = True  # one supervisor requests, another approves


def void_needs_approval(state: TableState) -> bool:
    """Above the table's threshold a void takes two supervisors (the void request and
    approval routes), never one confirmation."""
    limit = config_of(state).void_approval_above
    rnd = state.round
    if limit is None or rnd is None or not rnd.active:
        return False
    return sum(b.stake for b in rnd.bets.values()) > limit


def confirm_error(d: Decision, name: str) -> None:
    """The confirmed error: the round is void (every open stake refunded once) and the
    shoe ends (seed 000: the whole shoe is re-shuffled)."""
    rnd = d.state.round
    reason = f"{name}: system or human error confirmed by the supervisor"
    if rnd is not None and rnd.active:
        void(d, reason, change_shoe=True)
    elif d.state.shoe is not None:
        d.emit(ev.ShoeEnded(shoe_no=d.state.shoe.shoe_no, reason=reason))


def refund(d: Decision, reason: str, bet_types: Container[str] | None = None) -> int:
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


def refund_insurance(d: Decision, reason: str) -> None:
    refund(d, reason, config_of(d.state).insurance_bet_types)


def forfeit_insurance(d: Decision, kind: str) -> None:
    """Baccarat rule 8: the round's insurance-type wagers are lost, not refunded. Each is
    closed now with a settled line (result ``forfeited``, nothing returned), so the
    round's settlement skips it and a later void lets it stand (never refunded too)."""
    rnd = d.state.round
    assert rnd is not None
    types = config_of(d.state).insurance_bet_types
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


def resolve_incident(d: Decision, cmd: c.ResolveIncident, now: datetime, actor: str) -> None:
    config_of(d.state)
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
    if confirms and void_needs_approval(d.state):
        raise RulesRefused(
            "this round's stakes are above the table's threshold: one supervisor requests "
            "the void, a different supervisor approves it",
            "void_needs_approval",
        )
    if cmd.read_twice:
        take_out_read_twice(d, incident, cmd)
    elif cmd.entered or cmd.order is not None:
        if rnd is None or rnd.phase != "dealing":
            raise BadResolution("cards can be entered or re-ordered only while dealing")
        cards = list(rnd.cards)
        entered: list[str] = []
        if cmd.order is not None:
            order = [card_code(x) for x in cmd.order]
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
            card = card_code(item.card)
            if not 0 <= item.index <= len(cards):
                raise BadResolution(f"index {item.index} outside 0..{len(cards)}")
            if seen.get(card, 0) + 1 > shoe.decks:
                raise BadCard(f"{card}: the shoe holds only {shoe.decks} of it", card=card)
            seen[card] = seen.get(card, 0) + 1
            cards.insert(item.index, card)
            entered.append(card)
        entered_at = sorted(e.index for e in cmd.entered) if rnd.moves else ev.ABSENT
        record_rearranged(
            d, cards, entered=entered, incident_id=cmd.incident_id, entered_at=entered_at
        )
    resolved = ev.IncidentResolved(
        incident_id=cmd.incident_id, resolution=cmd.note, resolved_by=actor
    )
    d.emit(resolved, round_id=incident.round_id)
    if confirms:
        confirm_error(d, incident.kind)
        d.answer = {"incident_id": cmd.incident_id, "voided": True, "next_position": None}
        return
    missed = incident.kind == "possible_missed_card" or (
        kind is not None and "refund_insurance_on_resolve" in kind.effects
    )
    if missed and d.state.round is not None and d.state.round.active:
        refund_insurance(d, "missed scan (rule 6)")
    progress(d, resumed=incident.blocking)
    d.answer = {"incident_id": cmd.incident_id, "next_position": next_position(d.state)}


def record_rearranged(
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
    hidden = face_down_at(d.state, rnd, cards)  # the public stream shows these as null
    spots = [spot.code for spot in spots_of(d.state, rnd, cards)]  # where each now goes
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


def take_out_read_twice(d: Decision, incident: Incident, cmd: c.ResolveIncident) -> None:
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
    record_rearranged(d, cards, entered=[], incident_id=cmd.incident_id, read_twice=twice)


def void_round(d: Decision, cmd: c.VoidRound, now: datetime, actor: str) -> None:
    config_of(d.state)
    rnd = d.state.round
    if rnd is None or not rnd.active:
        raise WrongPhase("no round in progress to void")
    if not cmd.reason.strip():
        raise BadResolution("voiding a round needs a reason")
    void(d, cmd.reason, change_shoe=cmd.change_shoe)
    d.answer = {"round_id": rnd.round_id, "voided": True}


def void(d: Decision, reason: str, *, change_shoe: bool) -> None:
    rnd = d.state.round
    assert rnd is not None
    refunded = refund(d, reason)
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
