"""One line of ``livetable settle blackjack``: a round rebuilt from its cards and decisions.

The request is folded through the live round state machine (``round_state.apply``)
and settled by the live settlement code, so a replay can only agree with the table
or expose a genuine discrepancy. Format: the manual, docs/regulator/blackjack.md.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from table_service.rules.blackjack.config import BlackjackRules
from table_service.rules.blackjack.errors import RoundInputError
from table_service.rules.blackjack.round_state import (
    Answer,
    BehindBet,
    Deal,
    DealerTarget,
    Decision,
    FollowAnswer,
    Hand,
    Move,
    Phase,
    RoundState,
    SeatBet,
    SideBet,
    apply,
    insurance_owed,
    new_round,
    next_card_target,
)
from table_service.rules.blackjack.settlement import settle
from table_service.rules.cards import parse_card


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RoundInputError(f"{what} must be an integer, got {value!r}")
    return value


def _parse_seats(
    request: dict[str, Any],
) -> tuple[list[SeatBet], list[SideBet], list[BehindBet], dict[int, tuple[str, int]]]:
    seats = request.get("seats")
    if not isinstance(seats, list) or not seats:
        raise RoundInputError("'seats' must be a non-empty list")
    mains: list[SeatBet] = []
    pairs: list[SideBet] = []
    behind: list[BehindBet] = []
    insurance: dict[int, tuple[str, int]] = {}
    for entry in seats:
        if not isinstance(entry, dict):
            raise RoundInputError("each seat must be an object")
        number = _int(entry.get("seat"), "seat")
        bets = entry.get("bets")
        if not isinstance(bets, list):
            raise RoundInputError(f"seat {number}: 'bets' must be a list")
        main_count = 0
        for bet in bets:
            if not isinstance(bet, dict):
                raise RoundInputError(f"seat {number}: each bet must be an object")
            bet_id, kind = bet.get("id"), bet.get("type")
            stake = _int(bet.get("stake"), f"bet {bet_id!r} stake")
            if not isinstance(bet_id, str):
                raise RoundInputError(f"seat {number}: bet id must be a string")
            if kind == "main":
                main_count += 1
                mains.append(SeatBet(number, bet_id, stake))
            elif kind == "pair":
                pairs.append(SideBet(bet_id, number, stake))
            elif kind == "behind":
                behind.append(BehindBet(bet_id, number, stake))
            elif kind == "insurance" and number not in insurance:
                insurance[number] = (bet_id, stake)
            else:
                raise RoundInputError(
                    f"bet {bet_id!r}: unknown or repeated type {kind!r} "
                    "(main, pair, behind, insurance)"
                )
        if main_count != 1:
            raise RoundInputError(f"seat {number} needs exactly one main bet, got {main_count}")
    return mains, pairs, behind, insurance


def _parse_decision(entry: Any) -> Decision | FollowAnswer:
    if not isinstance(entry, dict):
        raise RoundInputError(f"a decision must be an object, got {entry!r}")
    action = entry.get("action")
    if "behind" in entry:
        if action not in {a.value for a in Answer}:
            raise RoundInputError(
                f"bet-behind answer must be accept, decline or timeout: {action!r}"
            )
        return FollowAnswer(str(entry["behind"]), Answer(action))
    if action not in {m.value for m in Move}:
        raise RoundInputError(f"unknown decision {action!r}")
    return Decision(
        _int(entry.get("seat"), "decision seat"), _int(entry.get("hand", 1), "hand"), Move(action)
    )


def play_round(
    request: dict[str, Any], rules: BlackjackRules
) -> tuple[RoundState, list[str], dict[int, tuple[str, int]]]:
    """Fold cards and decisions through the round; returns the final state and unused cards.

    A follow offer left unanswered when the round must go on is answered ``timeout``
    (the 5 s window closed); a missing player decision or card is an error.
    """
    mains, pairs, behind, insurance = _parse_seats(request)
    state = new_round(rules, mains, pairs, behind)
    codes = request.get("cards")
    if not isinstance(codes, list):
        raise RoundInputError("'cards' must be a list of card codes")
    cards = deque(parse_card(c) for c in codes)
    raw_decisions = request.get("decisions", [])
    if not isinstance(raw_decisions, list):
        raise RoundInputError("'decisions' must be a list")
    decisions = deque(_parse_decision(d) for d in raw_decisions)
    while state.phase is not Phase.COMPLETE:
        target = next_card_target(state)
        if target is not None:
            if not cards:
                where = (
                    "the dealer"
                    if isinstance(target, DealerTarget)
                    else f"seat {target.seat} hand {target.hand}"
                )
                raise RoundInputError(f"too few cards: {where} needs the next card")
            state = apply(state, Deal(cards.popleft()))
            continue
        if state.offers and not (decisions and isinstance(decisions[0], FollowAnswer)):
            state = apply(state, FollowAnswer(state.offers[0].bet_id, Answer.TIMEOUT))
            continue
        if not decisions:
            seat = state.seats[state.turn]
            if insurance_owed(state, seat):
                # even money the input does not answer (a round recorded before the offer
                # existed, a hand-written line): declined, as an unanswered follow offer is
                state = apply(state, Decision(seat.number, 1, Move.STAND))
                continue
            raise RoundInputError(f"the decisions end while seat {seat.number} is to act")
        state = apply(state, decisions.popleft())
    if decisions:
        raise RoundInputError(f"{len(decisions)} decision(s) after the round was complete")
    for seat in state.seats:
        declared = insurance.get(seat.number)
        if declared and not seat.insured:
            raise RoundInputError(f"insurance bet {declared[0]!r} without an insurance decision")
        if declared and declared[1] != seat.insurance_stake:
            raise RoundInputError(
                f"insurance bet {declared[0]!r}: stake must be half the main bet "
                f"({seat.insurance_stake}), got {declared[1]}"
            )
    return state, [c.code for c in cards], insurance


def _classification(hand: Hand) -> str:
    if hand.surrendered:
        return "surrendered"
    if hand.blackjack:
        return "blackjack"
    total = hand.total
    if total.bust:
        return "bust"
    return "soft" if total.soft else "hard"


def handle(request: dict[str, Any], rules: BlackjackRules) -> dict[str, Any]:
    state, unused, insurance = play_round(request, rules)
    settlement = settle(state)
    main_result = {
        (b.seat, b.hand): b.result.value
        for b in settlement.bets
        if b.type == "main" and b.part in ("original", "split")
    }
    dealer_total = state.dealer_total
    dealer_class = (
        "blackjack"
        if state.dealer_blackjack
        else "bust"
        if dealer_total.bust
        else ("soft" if dealer_total.soft else "hard")
    )
    out: dict[str, Any] = {}
    if "round" in request:
        out["round"] = request["round"]
    out["dealer"] = {
        "cards": [c.code for c in state.dealer],
        "total": dealer_total.points,
        "classification": dealer_class,
    }
    out["seats"] = [
        {
            "seat": seat.number,
            "insured": seat.insured,
            "removed": seat.number in settlement.removed_seats,
            "hands": [
                {
                    "hand": i + 1,
                    "cards": [c.code for c in hand.cards],
                    "total": hand.total.points,
                    "classification": _classification(hand),
                    "doubled": hand.doubled,
                    "result": main_result[(seat.number, i + 1)],
                }
                for i, hand in enumerate(seat.hands)
            ],
        }
        for seat in state.seats
    ]
    out["unused_cards"] = unused
    out["bets"] = [
        {
            "id": insurance[b.seat][0]
            if b.type == "insurance" and b.seat in insurance
            else b.bet_id,
            "type": b.type,
            "seat": b.seat,
            "hand": b.hand,
            "part": b.part,
            "stake": b.stake,
            "result": b.result.value,
            "returned": b.returned,
            "reason": b.reason,
        }
        for b in settlement.bets
    ]
    return out
