"""Live Xì Dách behind the LiveGame interface, over the three profiles.

Random rounds are played through the interface only (``next``, ``legal_actions``,
``apply``, ``timeout_action``), the way a table and its bots do; every round's
settlement must equal what ``livetable settle xidach`` computes from its
``settle_input`` and what ``recompute`` gives.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from table_service.rules.cards import parse_cards, standard_deck
from table_service.rules.game import (
    Bet,
    BettingContext,
    Complete,
    Move,
    RoundSetup,
    RulesRefusal,
    Spot,
    Turn,
)
from table_service.rules.xidach.live import GAME, XiDachRound, XiDachRules, rules_from_settings
from table_service.rules.xidach.profile import PROFILE_NAMES
from table_service.rules.xidach.replay import handle_line


def table_rules(profile: str, banker: str = "house", **extra: int) -> XiDachRules:
    decks = 1
    return GAME.load_rules(
        {
            "decks": decks,
            "game_rules": {
                "profile": profile,
                "banker": banker,
                "min_bet": 100,
                "max_bet": 2000,
                **extra,
            },
        }
    )


def play(
    rules: XiDachRules, bets: list[Bet], rng: random.Random, timeouts: float = 0.2
) -> tuple[XiDachRound, RoundSetup, list[Move]]:
    setup = RoundSetup(
        "r1", 1, tuple(bets), {b.seat: b.account for b in bets if b.seat is not None}
    )
    state = GAME.new_round(rules, setup)
    deck = list(standard_deck())
    rng.shuffle(deck)
    moves: list[Move] = []
    for _ in range(300):
        nxt = GAME.next(state)
        if isinstance(nxt, Complete):
            return state, setup, moves
        if isinstance(nxt, Spot):
            state = GAME.apply(state, deck.pop())
            continue
        assert isinstance(nxt, Turn) and len(nxt.actors) == 1
        actor = nxt.actors[0]
        legal = [m for m in GAME.legal_actions(state, actor) if m.action != "leave"]
        if actor == "banker" and rules.banker == "house":
            assert len(legal) == 1  # the house has exactly one move: its published policy
        if not legal or rng.random() < timeouts:
            move = GAME.timeout_action(state, actor)
        else:
            move = rng.choice(legal)
        state = GAME.apply(state, move)
        moves.append(move)
    raise AssertionError("the round did not end")


def _bets(n: int, stakes: list[int], hidden: bool) -> list[Bet]:
    return [
        Bet(f"b{s}", f"acct{s}", "hidden" if hidden and s % 2 else "main", stakes[s - 1], s)
        for s in range(1, n + 1)
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(PROFILE_NAMES),
    st.integers(1, 5),
    st.lists(st.integers(100, 2000), min_size=5, max_size=5),
    st.booleans(),
    st.integers(0, 2**32),
)
def test_random_live_rounds_settle_as_the_settle_command_does(
    profile: str, n: int, stakes: list[int], hidden: bool, seed: int
) -> None:
    rules = table_rules(profile)
    hidden = hidden and rules.profile.punter.privacy
    state, setup, moves = play(rules, _bets(n, stakes, hidden), random.Random(seed))
    live = GAME.settle(state)
    placed = {s.stake_id: s for s in GAME.placed_stakes(state)}
    assert sorted(line.stake_id for line in live.lines) == sorted(placed)  # each exactly once
    for line in live.lines:
        assert line.stake == placed[line.stake_id].amount
        assert 0 <= line.returned <= line.stake * 5 // 2
    request = GAME.settle_input(state, setup, moves)
    answer = handle_line(request, None)
    by_bet: dict[str, int] = {}
    for line in live.lines:
        by_bet[line.bet_id] = by_bet.get(line.bet_id, 0) + line.returned
    assert {b["id"]: b["returned"] for b in answer["bets"]} == by_bet
    again = GAME.recompute(rules, request)
    assert again.lines == live.lines
    assert again.outcome == live.outcome


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 4),
    st.lists(st.integers(100, 2000), min_size=4, max_size=4),
    st.integers(10_000, 30_000),
    st.integers(0, 2**32),
)
def test_a_seated_bank_is_a_ledger_line_and_money_is_conserved(
    n: int, stakes: list[int], bank: int, seed: int
) -> None:
    rules = table_rules("room", "seated")
    bets = [*_bets(n, stakes, False), Bet("bank", "banker-acct", "bank", bank, 9)]
    state, setup, moves = play(rules, bets, random.Random(seed))
    live = GAME.settle(state)
    staked = sum(s.amount for s in GAME.placed_stakes(state))
    returned = sum(line.returned for line in live.lines)
    assert returned == staked  # the house takes nothing from a seated bank (no commission)
    bank_line = next(line for line in live.lines if line.bet_type == "bank")
    assert live.bank_net == bank_line.returned - bank_line.stake
    again = GAME.recompute(rules, GAME.settle_input(state, setup, moves))
    assert again.lines == live.lines and again.bank_net == live.bank_net


def test_a_bank_that_cannot_cover_pays_pro_rata_and_the_shortfall_is_on_the_lines() -> None:
    rules = table_rules("room", "seated", max_bet=200)
    bets = [Bet(f"b{s}", f"a{s}", "main", 200, s) for s in range(1, 7)]
    bets.append(Bet("bank", "banker", "bank", 1000, 9))  # 5x the maximum bet: just enough
    state = GAME.new_round(rules, RoundSetup("r", 1, tuple(bets)))
    # seats 1-4: T+9 = 19, seats 5-6: J+Q = 20, banker 7+K = 17
    codes = ["TS", "TD", "TH", "TC", "JS", "JD", "7D", "9S", "9D", "9H", "9C", "QS", "QD", "KH"]
    for card in parse_cards(codes):
        state = GAME.apply(state, card)
    for seat in range(1, 7):
        state = GAME.apply(state, Move(f"seat:{seat}", "stand"))
    state = GAME.apply(state, Move("banker", "stand"))
    live = GAME.settle(state)
    lines = {line.stake_id: line for line in live.lines}
    # 1200 owed in wins against a cover of 1000: each paid 200 * 1000 // 1200 = 166
    assert [lines[f"b{s}"].returned for s in range(1, 7)] == [366] * 6
    assert all("shortfall 34" in (lines[f"b{s}"].reason or "") for s in range(1, 7))
    assert (lines["bank"].returned, lines["bank"].result, live.bank_net) == (4, "lose", -996)
    assert "shortfall 204" in (lines["bank"].reason or "")
    assert live.outcome["bank"] == {"seat": 9, "keeps_bank": False, "left": False}
    with pytest.raises(RulesRefusal) as refused:
        GAME.check_bet(
            rules, Bet("bank", "banker", "bank", 999, 9), BettingContext(1, {9: "banker"}, ())
        )
    assert refused.value.code == "bankroll"


def test_the_banker_face_down_card_and_hidden_seats_are_dealt_face_down() -> None:
    rules = table_rules("forced-draw")
    bets = [Bet("b1", "a1", "hidden", 100, 1), Bet("b2", "a2", "main", 100, 2)]
    state = GAME.new_round(rules, RoundSetup("r", 1, tuple(bets)))
    spots: list[Spot] = []
    for card in parse_cards(["TS", "9D", "TC", "7H", "8S", "7D"]):
        spot = GAME.next(state)
        assert isinstance(spot, Spot)  # the deal: each card goes to a spot
        spots.append(spot)
        state = GAME.apply(state, card)
    assert [(s.code, s.face_up) for s in spots] == [
        ("S2H1", True),  # counter-clockwise: seat 2 first
        ("S1H1", False),  # seat 1 hides its cards
        ("BANKER", False),
        ("S2H1", True),
        ("S1H1", False),
        ("BANKER", True),
    ]
    public = GAME.view(state, "public")
    assert public["banker"]["cards"] == ["XX", "7D"]
    assert public["hands"][1]["cards"] == ["XX", "XX"]
    assert GAME.view(state, "dealer")["banker"]["cards"] == ["TC", "7D"]


@pytest.mark.parametrize(
    ("bet", "context", "code"),
    [
        (Bet("x", "a1", "main", 100, 1), BettingContext(1, {}, ()), "seat_free"),
        (Bet("x", "a2", "main", 100, 1), BettingContext(1, {1: "a1"}, ()), "not_your_seat"),
        (Bet("x", "a1", "main", 99, 1), BettingContext(1, {1: "a1"}, ()), "stake_limits"),
        (Bet("x", "a1", "hidden", 100, 1), BettingContext(1, {1: "a1"}, ()), "no_privacy"),
        (Bet("x", "a1", "bank", 10_000, 1), BettingContext(1, {1: "a1"}, ()), "house_banks"),
        (Bet("x", "a1", "side", 100, 1), BettingContext(1, {1: "a1"}, ()), "unknown_bet_type"),
        (Bet("x", "a1", "main", 100, 9), BettingContext(1, {9: "a1"}, ()), "bad_seat"),
    ],
)
def test_bets_are_refused_with_stable_codes(bet: Bet, context: BettingContext, code: str) -> None:
    with pytest.raises(RulesRefusal) as refused:
        GAME.check_bet(table_rules("room"), bet, context)
    assert refused.value.code == code


def test_the_house_banker_cannot_deviate_through_the_interface() -> None:
    rules = table_rules("classic")
    state = GAME.new_round(rules, RoundSetup("r", 1, (Bet("b1", "a1", "main", 100, 1),)))
    for card in parse_cards(["TS", "TC", "9H", "5D"]):
        state = GAME.apply(state, card)
    state = GAME.apply(state, Move("seat:1", "stand"))
    assert GAME.legal_actions(state, "banker") == (Move("banker", "hit"),)
    with pytest.raises(RulesRefusal) as refused:
        GAME.apply(state, Move("banker", "stand"))
    assert refused.value.code == "house_policy"
    turn = GAME.next(state)
    assert isinstance(turn, Turn) and (turn.actors, turn.clock) == (("banker",), "banker")
    assert GAME.view(state, "dealer")["house_move"] == "draw"


@pytest.mark.parametrize(
    ("game_rules", "decks", "message"),
    [
        ({"profile": "vegas"}, 1, "unknown profile"),
        ({"profile": "room"}, 8, "deals from 1 deck"),
        ({"profile": "classic", "banker": "seated"}, 1, "the banker is house"),
        ({"profile": "room", "colour": "red"}, 1, "unknown xidach game_rules"),
        ({"profile": "room", "min_bet": 500, "max_bet": 100}, 1, "min_bet"),
    ],
)
def test_bad_table_rules_are_refused(
    game_rules: dict[str, object], decks: int, message: str
) -> None:
    with pytest.raises(RulesRefusal, match=message) as refused:
        rules_from_settings({"decks": decks, "game_rules": game_rules})
    assert refused.value.code == "bad_rules"


def test_opening_terms_carry_the_exact_edge() -> None:
    terms = GAME.opening_terms(table_rules("forced-draw"))
    assert terms["house_edge_ppm"] == -23416 and terms["house_edge"] == "-2.3416%"
    assert (terms["profile"], terms["commission"], terms["decks"]) == ("forced-draw", "0", 1)
