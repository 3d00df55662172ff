"""The LiveGame contract over Xì Dách's three profiles (house and seated banks), in the
manner of OpenSpiel's random_sim_test: random rounds through the interface only, and at
every step the answers must agree with each other."""

from __future__ import annotations

import random

import pytest

from table_service.rules.cards import standard_deck
from table_service.rules.game import (
    Bet,
    Complete,
    Move,
    RoundSetup,
    RulesRefusal,
    Spot,
    Turn,
    drive,
)
from table_service.rules.games import GAMES, find_game
from table_service.rules.xidach.live import XiDachRules

GAME = find_game("xidach")
TERMS = [
    ("room", "house"),
    ("room", "seated"),
    ("classic", "house"),
    ("forced-draw", "house"),
]


def _rules(profile: str, banker: str) -> XiDachRules:
    rules: XiDachRules = GAME.load_rules(
        {"game_rules": {"profile": profile, "banker": banker}, "limits": (100, 2000), "decks": 1}
    )
    return rules


def _setup(rules: XiDachRules, rng: random.Random, n: int) -> RoundSetup:
    bets = []
    for seat in range(1, n + 1):
        kind = "hidden" if rules.profile.punter.privacy and rng.random() < 0.5 else "main"
        bets.append(Bet(f"b{seat}", f"a{seat}", kind, rng.randrange(100, 2001, 100), seat))
    if rules.banker == "seated":
        bank = rules.seats
        bets.append(Bet("bank", "banker", "bank", rng.randrange(10_000, 20_000), bank))
    return RoundSetup("r", 1, tuple(bets), {b.seat: b.account for b in bets if b.seat is not None})


@pytest.mark.parametrize(("profile", "banker"), TERMS)
@pytest.mark.parametrize("seed", range(12))
def test_random_rounds_keep_the_interface_consistent(profile: str, banker: str, seed: int) -> None:
    assert GAMES["xidach"] is GAME
    rng = random.Random(f"{profile}/{banker}/{seed}")
    rules = _rules(profile, banker)
    setup = _setup(rules, rng, rng.randint(1, min(4, rules.profile.max_punters)))
    start = state = GAME.new_round(rules, setup)
    deck = list(standard_deck())
    rng.shuffle(deck)
    cards, moves = [], []
    while True:
        nxt = GAME.next(state)
        if isinstance(nxt, Complete):
            break
        if isinstance(nxt, Spot):
            with pytest.raises(RulesRefusal):  # no decision is taken while a card is owed
                GAME.apply(state, Move("banker", "stand"))
            card = deck.pop()
            cards.append(card)
            state = GAME.apply(state, card)
            continue
        assert isinstance(nxt, Turn) and nxt.actors and nxt.seconds > 0 and nxt.clock
        actor = nxt.actors[0]
        legal = GAME.legal_actions(state, actor)
        for move in legal:  # every listed move is accepted as it stands
            GAME.apply(state, move)
        with pytest.raises(RulesRefusal):  # a card is not taken while a decision is owed
            GAME.apply(state, deck[-1])
        others = [f"seat:{b.seat}" for b in setup.bets if f"seat:{b.seat}" != actor]
        for other in others:
            if other != "seat:0":
                assert all(m.action in ("leave", "hide") for m in GAME.legal_actions(state, other))
        move = (
            rng.choice(legal) if legal and rng.random() > 0.2 else GAME.timeout_action(state, actor)
        )
        moves.append((len(cards), move))
        state = GAME.apply(state, move)
    settled = GAME.settle(state)
    placed = GAME.placed_stakes(state)
    assert sorted(ln.stake_id for ln in settled.lines) == sorted(s.stake_id for s in placed)
    assert sum(ln.returned for ln in settled.lines) <= sum(s.amount for s in placed) * 5 // 2
    replay = drive(GAME, start, cards, moves)  # the table's own fold of the recorded round
    assert replay.leftover == () and replay.state == state
    request = GAME.settle_input(state, setup, [m for _, m in moves])
    assert GAME.recompute(rules, request) == GAME.settle(state)
    public, dealer = GAME.view(state, "public"), GAME.view(state, "dealer")
    assert public["game"] == dealer["game"] == "xidach"
