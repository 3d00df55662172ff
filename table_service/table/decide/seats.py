"""Seats and decisions: a player seated, leaving, reported disconnected; a decision taken
in turn (or out of turn where the game allows it), and the rules' decision when a
player's clock runs out."""

from __future__ import annotations

from datetime import datetime

from audit.chain import utc_timestamp
from table_service.rules.game import (
    Bet,
    Move,
    RulesRefusal,
    Turn,
)
from table_service.table import commands as c
from table_service.table import events as ev
from table_service.table.decide.decision import (
    Decision,
    config_of,
)
from table_service.table.decide.settlement import (
    play_move,
    progress,
)
from table_service.table.errors import (
    NotYourTurn,
    RulesRefused,
    SeatRefused,
    TablePaused,
    WrongPhase,
)
from table_service.table.state import TableState, game_of, game_of_round


def _seat_count(state: TableState) -> int:
    game, rules = game_of(state)
    return game.seats(rules)


def take_seat(d: Decision, cmd: c.TakeSeat, now: datetime, actor: str) -> None:
    config = config_of(d.state)
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


def leave_seat(d: Decision, cmd: c.LeaveSeat, now: datetime, actor: str) -> None:
    config_of(d.state)
    holder = d.state.seats.get(cmd.seat)
    if holder is None:
        raise SeatRefused(f"seat {cmd.seat} is free", seat=cmd.seat)
    if _in_round(d.state, cmd.seat):
        raise WrongPhase(f"seat {cmd.seat} has bets in the round: it leaves after the round")
    d.emit(ev.SeatReleased(seat=cmd.seat, account=holder.account, reason=cmd.reason))


def player_disconnected(d: Decision, cmd: c.PlayerDisconnected, now: datetime, actor: str) -> None:
    config_of(d.state)
    holder = d.state.seats.get(cmd.seat)
    if holder is None:
        raise SeatRefused(f"seat {cmd.seat} is free", seat=cmd.seat)
    rnd = d.state.round
    round_id = rnd.round_id if rnd is not None else None
    d.emit(ev.PlayerDisconnected(seat=cmd.seat, round_id=round_id), round_id=round_id)
    progress(d)
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


def act(d: Decision, cmd: c.Act, now: datetime, actor: str) -> None:
    config_of(d.state)
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
    play_move(d, chosen[0], by=actor, balances=dict(cmd.balances))
    progress(d)
    d.answer = {"round_id": rnd.round_id, "move": chosen[0].to_json()}


def turn_timeout(d: Decision, cmd: c.TurnTimeout, now: datetime, actor: str) -> None:
    config_of(d.state)
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
        play_move(d, move, by=actor, auto="timeout")
        played.append(move.to_json())
    progress(d)
    d.answer = {"round_id": rnd.round_id, "timed_out": played}
