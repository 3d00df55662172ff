"""Hypothesis properties of random legal play through the live round code."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from math import floor
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from table_service.rules.blackjack.config import BlackjackRules
from table_service.rules.blackjack.errors import BlackjackError
from table_service.rules.blackjack.round_state import (
    BehindBet,
    Deal,
    Decision,
    FollowAnswer,
    Move,
    Phase,
    RoundState,
    SeatBet,
    SeatTarget,
    SideBet,
    apply,
    legal_actions,
    new_round,
    next_card_target,
)
from table_service.rules.blackjack.settle_request import handle
from table_service.rules.blackjack.settlement import settle, void_refunds
from table_service.rules.cards import Card, standard_deck

RULES = BlackjackRules()
MAX_STEPS = 400


@dataclass
class Played:
    request: dict[str, Any]
    state: RoundState
    refusals: int = 0
    decisions: list[dict[str, Any]] = field(default_factory=list)


@st.composite
def rounds(draw: st.DrawFn, timeout_bias: bool = False) -> Played:
    seats = draw(st.lists(st.integers(1, 7), min_size=1, max_size=4, unique=True))
    stakes = {n: draw(st.integers(1, 100_000)) for n in seats}
    behind = [
        BehindBet(f"b{i}", draw(st.sampled_from(seats)), draw(st.integers(1, 50_000)))
        for i in range(draw(st.integers(0, 3)))
    ]
    pairs = [
        SideBet(f"p{i}", draw(st.sampled_from(seats)), draw(st.integers(1, 5_000)))
        for i in range(draw(st.integers(0, 2)))
    ]
    rng = draw(st.randoms(use_true_random=False))
    shoe = list(standard_deck()) * 2
    rng.shuffle(shoe)
    mains = [SeatBet(n, f"m{n}", stakes[n]) for n in seats]
    state = new_round(RULES, mains, pairs, behind)
    played = Played(request={}, state=state)
    dealt: list[Card] = []
    for _ in range(MAX_STEPS):
        if state.phase is Phase.COMPLETE:
            break
        target = next_card_target(state)
        if target is not None:
            card = shoe[len(dealt)]
            new = apply(state, Deal(card))
            if isinstance(target, SeatTarget):
                seat = new.seat(target.seat)
                assert seat.hands[target.hand - 1].cards[-1] == card
            else:
                assert new.dealer[-1] == card
            dealt.append(card)
            state = new
            continue
        options = legal_actions(state)
        assert options, "a state with no card target must offer a decision"
        played.refusals += _try_illegal(state, options, rng)
        if timeout_bias and rng.random() < 0.5:
            decisions = [a for a in options if isinstance(a, Decision)]
            moves = [a for a in decisions if a.move is Move.NO_DECISION] or options
            action = moves[0]
        else:
            action = rng.choice(options)
        if isinstance(action, Decision):
            played.decisions.append(
                {"seat": action.seat, "hand": action.hand, "action": action.move.value}
            )
        else:
            played.decisions.append({"behind": action.bet_id, "action": action.answer.value})
        state = apply(state, action)
    played.state = state
    bets: dict[int, list[dict[str, Any]]] = {n: [] for n in seats}
    for n in seats:
        bets[n].append({"id": f"m{n}", "type": "main", "stake": stakes[n]})
    for p in pairs:
        bets[p.seat].append({"id": p.id, "type": "pair", "stake": p.stake})
    for b in behind:
        bets[b.seat].append({"id": b.id, "type": "behind", "stake": b.stake})
    played.request = {
        "seats": [{"seat": n, "bets": bets[n]} for n in seats],
        "cards": [c.code for c in dealt],
        "decisions": played.decisions,
    }
    return played


def _try_illegal(
    state: RoundState, options: list[Decision | FollowAnswer], rng: random.Random
) -> int:
    """Apply one move that is not legal now: it must be refused and change nothing."""
    legal = {(a.seat, a.hand, a.move) for a in options if isinstance(a, Decision)}
    if not legal:
        return 0
    seat, hand, _ = next(iter(legal))
    illegal = [m for m in Move if (seat, hand, m) not in legal]
    if not illegal:
        return 0
    before = (legal_actions(state), next_card_target(state))
    try:
        apply(state, Decision(seat, hand, rng.choice(illegal)))
    except BlackjackError:
        assert (legal_actions(state), next_card_target(state)) == before
        return 1
    raise AssertionError("an illegal decision was accepted")


def _factor_ok(kind: str, result: str, factor: Fraction) -> bool:
    allowed = {
        "lose": {Fraction(0)},
        "push": {Fraction(1)},
        "half_refund": {Fraction(1, 2)},
    }
    wins = {
        "main": {1 + RULES.win_pays, 1 + RULES.blackjack_pays},
        "behind": {1 + RULES.win_pays, 1 + RULES.blackjack_pays},
        "insurance": {1 + RULES.insurance_pays},
        "pair": {1 + RULES.pair_pays},
    }
    return factor in (wins[kind] if result == "win" else allowed[result])


@settings(max_examples=150)
@given(rounds())
def test_random_legal_play_ends_and_money_is_conserved(played: Played) -> None:
    state = played.state
    assert state.phase is Phase.COMPLETE
    settlement = settle(state)
    for line in settlement.bets:
        factors = [
            f
            for f in (Fraction(0), Fraction(1, 2), Fraction(1), 1 + RULES.win_pays,
                      1 + RULES.blackjack_pays, 1 + RULES.insurance_pays, 1 + RULES.pair_pays)
            if floor(line.stake * f) == line.returned
        ]  # fmt: skip
        assert any(_factor_ok(line.type, line.result.value, f) for f in factors), line
    # every stake placed is settled exactly once
    for seat in state.seats:
        mains = [b for b in settlement.bets if b.type == "main" and b.seat == seat.number]
        assert len(mains) == sum(1 + h.doubled for h in seat.hands)
        assert all(b.stake == seat.stake for b in mains)
        insurance = [b for b in settlement.bets if b.type == "insurance" and b.seat == seat.number]
        assert len(insurance) == seat.insured
    for bet in state.behind:
        mine = [b for b in settlement.bets if b.bet_id == bet.id]
        assert len(mine) == len(bet.hands) + len(bet.doubled)
    assert len([b for b in settlement.bets if b.type == "pair"]) == len(state.pairs)


@settings(max_examples=150)
@given(rounds())
def test_a_busted_hand_never_wins(played: Played) -> None:
    state = played.state
    for line in settle(state).bets:
        if line.type in ("main", "behind"):
            assert line.hand is not None  # main and behind lines name their hand
            hand = state.seat(line.seat).hands[line.hand - 1]
            if hand.total.bust:
                assert line.result.value != "win"


@settings(max_examples=100)
@given(rounds(timeout_bias=True))
def test_no_decision_never_busts_and_stops_above_eleven(played: Played) -> None:
    for seat in played.state.seats:
        for hand in seat.hands:
            if hand.auto:
                assert not hand.total.bust
                assert hand.total.points > RULES.auto_play_hit_max or hand.split_aces


@settings(max_examples=100)
@given(rounds())
def test_settle_command_replays_the_live_round(played: Played) -> None:
    """Differential: the recorded cards and decisions, replayed, settle identically."""
    out = handle(played.request, RULES)
    live = settle(played.state).bets
    assert [(b["id"], b["type"], b["part"], b["stake"], b["result"], b["returned"])
            for b in out["bets"]] == [
        (b.bet_id, b.type, b.part, b.stake, b.result.value, b.returned) for b in live
    ]  # fmt: skip
    assert out["unused_cards"] == []


@settings(max_examples=100)
@given(rounds())
def test_void_refunds_every_settled_stake_exactly_once(played: Played) -> None:
    settled = [(b.bet_id, b.type, b.hand, b.part, b.stake) for b in settle(played.state).bets]
    void = void_refunds(played.state)
    assert [(b.bet_id, b.type, b.hand, b.part, b.stake) for b in void.bets] == settled
    assert all(b.returned == b.stake and b.result.value == "push" for b in void.bets)
