"""One contract every registered game passes at a live table (OpenSpiel's random sim test).

Each game plays many rounds at a pure table (``decide``/``apply``, controlled clock) from
random shoes: random bets (refused ones are part of the test), random legal decisions,
some decisions left to their timer, now and then a void. After every round:

- every stake placed (the ones the round added too) is settled or refunded exactly once;
- money is conserved: stakes in = returns + the house result, line by line;
- the live result equals ``recompute`` of the round's ``settle_input`` (the
  ``livetable settle <game>`` code);
- every legal action the table lists for an actor is accepted;

and the table rebuilt from its events equals the live one.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from table_service.rules.cards import standard_deck
from table_service.rules.games import GAMES, find_game
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.decide import Decision, decide
from table_service.table.errors import BettingClosed
from table_service.table.state import settle_input_of
from tests.table.table_helpers import Harness

ROUNDS = {"baccarat": 300, "blackjack": 400, "xidach": 300}
PLAYERS = [f"p{i}" for i in range(9)]
RICH = {p: 10**12 for p in PLAYERS}
STAKES = (100, 250, 1000, 5000)


class Table(Harness):
    def __init__(self, game: str, seed: int) -> None:
        self.rng = random.Random(seed)
        self.game = find_game(game)
        self.shoe: list[str] = []
        self.stats: Counter[str] = Counter()
        config = TableConfig(table_id=f"c-{game}", game=game, betting_seconds=10)
        super().__init__(config=config, now=datetime(2026, 1, 1, tzinfo=UTC))  # opens the table
        self.rules = self.config.rules

    def summary(self) -> dict[str, Any]:
        return self.state.public_summary()

    # -- the shoe ---------------------------------------------------------------------------
    def new_shoe(self) -> None:
        cards = [card.code for card in standard_deck()] * self.config.decks
        self.rng.shuffle(cards)
        self.shoe = cards
        self.run(c.InsertShoe())
        while not self.current_shoe().ready:
            self.scan()

    def scan(self) -> Decision:
        decision = self.run(c.CardScanned(self.shoe.pop()))
        shoe = self.state.shoe
        at_cut = len(self.shoe) == self.config.cut_card_depth
        if at_cut and shoe is not None and not shoe.cut_card_drawn:
            self.run(c.CutCard())  # the cut card comes out where it was placed
        return decision

    # -- a round ----------------------------------------------------------------------------
    def seat_players(self) -> None:
        seats = self.game.seats(self.rules)
        for n in range(1, seats + 1):
            if n not in self.state.seats and self.rng.random() < 0.7:
                free = [
                    p for p in PLAYERS if p not in {h.account for h in self.state.seats.values()}
                ]
                self.run(c.TakeSeat(n, self.rng.choice(free)))

    def place_bets(self) -> None:
        types = self.game.bet_types(self.rules)
        seats = self.game.seats(self.rules)
        requests = []
        for _ in range(self.rng.randrange(2, 12)):
            self.bet_no += 1
            seat = self.rng.randrange(1, seats + 1) if seats else None
            bet_type = types[0] if seats and self.rng.random() < 0.5 else self.rng.choice(types)
            account = self.rng.choice(PLAYERS)
            if seat is not None and bet_type == "main" and seat in self.state.seats:
                account = self.state.seats[seat].account
            requests.append(
                c.BetRequest(
                    f"b{self.bet_no}",
                    f"k{self.bet_no}",
                    account,
                    bet_type,
                    self.rng.choice(STAKES),
                    seat,
                )
            )
        # one at a time: a pair or behind bet needs its seat's main bet placed first
        for request in requests:
            try:
                answer = self.run(c.PlaceBets((request,), RICH)).answer["results"][0]
            except BettingClosed:  # a game that closes once every seat has bet
                break
            self.stats["bets_" + answer["status"]] += 1

    def check_legal_actions(self, turn: dict[str, Any]) -> None:
        for actor, moves in turn["legal_actions"].items():
            for move in moves:
                account = self.account_of(actor)
                decide(
                    self.state,
                    c.Act(
                        actor, move["action"], account, move.get("hand"), move.get("target"), RICH
                    ),
                    now=self.now,
                    actor="test",
                )  # raises if a listed action were refused
                self.stats["legal_checked"] += 1

    def account_of(self, actor: str) -> str:
        kind, _, who = actor.partition(":")
        if kind == "seat":
            return self.state.seats[int(who)].account
        if kind != "behind":  # a banker: the seated bank's player, or the house itself
            bank = self.state.bank_seat
            return (
                self.state.seats[bank].account
                if bank is not None and bank in self.state.seats
                else actor
            )
        rnd = self.state.round
        assert rnd is not None
        return rnd.bets[who].account

    def decide_turn(self, turn: dict[str, Any]) -> None:
        if self.rng.random() < 0.15:
            self.now = datetime.fromisoformat(turn["deadline"].replace("Z", "+00:00"))
            self.run(c.TurnTimeout(turn["clock"]))
            self.stats["timeouts"] += 1
            return
        actor = self.rng.choice(turn["actors"])
        move = self.rng.choice(turn["legal_actions"][actor])
        self.run(c.Act(actor, move["action"], self.account_of(actor), move.get("hand"), None, RICH))
        self.stats["decisions"] += 1

    def play_round(self) -> str:
        if self.state.shoe is None:
            self.new_shoe()
        self.seat_players()
        opened: str = self.run(c.OpenBetting()).answer["round_id"]
        self.place_bets()
        void_at = self.rng.randrange(0, 12) if self.rng.random() < 0.05 else None
        self.now += timedelta(seconds=10)
        with pytest.raises(BettingClosed):
            self.run(c.PlaceBets((c.BetRequest("late", "late", "p0", "main", 100, 1),), RICH))
        if self.state.round is not None and self.state.round.phase == "betting":
            self.run(c.CloseBetting("countdown"))  # (Xì Dách room closes once all have bet)
        steps = 0
        while (
            (rnd := self.state.round) is not None
            and rnd.round_id == opened
            and rnd.phase == "dealing"
        ):
            steps += 1
            assert steps < 500, self.summary()
            if void_at is not None and steps > void_at:
                self.run(c.VoidRound("contract test: a supervisor voids"))
                self.stats["voided"] += 1
                break
            nxt = self.summary()["round"]["next"]
            if nxt["kind"] == "card":
                if not self.shoe:
                    self.run(c.VoidRound("shoe ran dry in the test"))
                    break
                self.scan()
            elif nxt["kind"] == "decision":
                turn = self.summary()["round"]["turn"]
                self.check_legal_actions(turn)
                self.decide_turn(turn)
            else:
                raise AssertionError(f"round stuck: {nxt}")
        return opened

    # -- the checks -------------------------------------------------------------------------
    def check_round(self, round_id: str) -> None:
        events = [d for d in self.log if d.round_id == round_id]
        placed = {
            b["bet_id"]: b for d in events if d.type == "bets_placed" for b in d.payload["bets"]
        }
        closed: Counter[str] = Counter()
        lines: dict[str, dict[str, Any]] = {}
        for d in events:
            key = {"bets_settled": "results", "bets_refunded": "refunds"}.get(d.type)
            for item in d.payload.get(key, ()) if key else ():
                closed[item["bet_id"]] += 1
                lines[item["bet_id"]] = item
        assert set(closed) == set(placed), set(placed) ^ set(closed)
        assert all(n == 1 for n in closed.values()), closed
        staked = sum(b["stake"] for b in placed.values())
        returned = sum(item["returned"] for item in lines.values())
        house = sum(item["stake"] - item["returned"] for item in lines.values())
        assert staked == returned + house
        for item in lines.values():
            assert item["stake"] == placed[item["bet_id"]]["stake"]
            assert item["returned"] >= 0
        rnd = self.state.round
        assert rnd is not None and rnd.round_id == round_id
        if rnd.phase == "settled":
            self.stats["settled"] += 1
            settle_input = settle_input_of(rnd)
            assert settle_input is not None
            if not placed:  # nobody bet: nothing to recompute (a settle line needs a bet)
                assert not lines
                self.stats["empty_rounds"] += 1
                return
            again = self.game.recompute(self.rules, settle_input)
            live = {k: (v["returned"], v["result"]) for k, v in lines.items()}
            assert {ln.stake_id: (ln.returned, ln.result) for ln in again.lines} == live
            self.stats["lines"] += len(live)
        else:
            assert rnd.phase == "voided"
            assert all(item["returned"] == item["stake"] for item in lines.values())


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_game_keeps_the_table_contract(game: str) -> None:
    table = Table(game, seed=11_000 + len(game))
    for n in range(ROUNDS[game]):
        round_id = table.play_round()
        table.check_round(round_id)
        if n % 50 == 49:
            assert table.replayed() == table.state
    assert table.replayed() == table.state
    stats = table.stats
    assert stats["settled"] >= ROUNDS[game] * 0.8, stats
    assert stats["bets_placed"] > 0 and stats["bets_refused"] > 0, stats
    if table.game.seats(table.rules):
        assert stats["decisions"] > 0 and stats["timeouts"] > 0 and stats["legal_checked"] > 0
    print(f"{game}: {dict(stats)}")
