"""Play real baccarat and blackjack rounds through the table service into a test database
(the audit log's forgery tests and the regulator's bundle, records and CLI tests)."""

from __future__ import annotations

import random
from typing import Any

from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.service import TableService
from table_service.table.wallet import Transfer, transfer

RANKS = "A23456789TJQK"
SUITS = "SHDC"
BET_TYPES = ("player", "banker", "tie", "player_pair", "banker_pair", "big", "small", "lucky6")


def shoe(seed: int, decks: int = 8) -> list[str]:
    cards = [r + s for r in RANKS for s in SUITS] * decks
    random.Random(seed).shuffle(cards)
    return cards


class Session:
    def __init__(self, runtime: Any, table_id: str = "t1", seed: int = 7) -> None:
        self.runtime = runtime
        self.config = TableConfig(table_id=table_id, betting_seconds=600)
        self.service = TableService(runtime, self.config)
        self.rng = random.Random(seed)
        self.cards = iter(shoe(seed))
        self.bets = 0
        self.run(c.OpenTable(self.config), "system:config")
        for account in ("a1", "a2", "a3"):
            transfer(
                runtime, Transfer(account, 10**9, f"fund-{account}", "credit"), actor="operator:op"
            )
        self.run(c.InsertShoe(), "dealer:d1")
        while not self._shoe_ready():
            self.run(c.CardScanned(next(self.cards)), "dealer:d1")

    def _shoe_ready(self) -> bool:
        shoe = self.service.state.shoe
        assert shoe is not None  # InsertShoe ran
        return shoe.ready

    def run(self, command: Any, actor: str = "dealer:d1") -> dict[str, Any]:
        return self.service._execute_sync(command, actor).answer

    def place(self, n: int) -> None:
        requests = []
        for _ in range(n):
            self.bets += 1
            requests.append(
                c.BetRequest(
                    f"{self.config.table_id}-bet{self.bets}",
                    f"{self.config.table_id}-key{self.bets}",
                    self.rng.choice(("a1", "a2", "a3")),
                    self.rng.choice(BET_TYPES),
                    self.rng.randrange(1, 50) * 100,
                )
            )
        answer = self.run(c.PlaceBets(tuple(requests)), "operator:op")
        assert all(r["status"] == "placed" for r in answer["results"]), answer

    def round(self, bets: int = 4, void_after: int | None = None) -> str:
        opened = self.run(c.OpenBetting())
        self.place(bets)
        self.run(c.CloseBetting())
        dealt = 0
        while self.service.state.round is not None and self.service.state.round.active:
            if void_after is not None and dealt == void_after:
                self.run(c.VoidRound("test: dealer error", change_shoe=False), "supervisor:s1")
                break
            self.run(c.CardScanned(next(self.cards)))
            dealt += 1
        return str(opened["round_id"])

    def play(self, rounds: int, bets: int = 4, void: tuple[int, ...] = ()) -> list[str]:
        return [self.round(bets, void_after=2 if i in void else None) for i in range(rounds)]


class BlackjackSession:
    """Blackjack rounds through the table service: seats, bets, every decision a random
    legal move (so doubles, splits and insurance add their own stakes)."""

    def __init__(self, runtime: Any, table_id: str = "bj1", seed: int = 11) -> None:
        self.runtime = runtime
        self.config = TableConfig(table_id=table_id, game="blackjack", betting_seconds=600)
        self.service = TableService(runtime, self.config)
        self.rng = random.Random(seed)
        self.cards = iter(shoe(seed))
        self.bets = 0
        self.run(c.OpenTable(self.config), "system:config")
        for account in ("p1", "p2", "p3"):
            transfer(
                runtime, Transfer(account, 10**9, f"fund-{account}", "credit"), actor="operator:op"
            )
        self.run(c.InsertShoe(), "dealer:d1")
        while not self._shoe_ready():
            self.run(c.CardScanned(next(self.cards)), "dealer:d1")
        for seat, account in ((1, "p1"), (2, "p2"), (3, "p3")):
            self.run(c.TakeSeat(seat, account), "operator:op")

    def _shoe_ready(self) -> bool:
        shoe = self.service.state.shoe
        assert shoe is not None  # InsertShoe ran
        return shoe.ready

    def run(self, command: Any, actor: str = "dealer:d1") -> dict[str, Any]:
        return self.service._execute_sync(command, actor).answer

    def round(self) -> str:
        opened = self.run(c.OpenBetting())
        requests = []
        for seat, account in ((1, "p1"), (2, "p2"), (3, "p3")):
            self.bets += 1
            stake = self.rng.randrange(1, 20) * 100
            key = f"{self.config.table_id}-{self.bets}"
            requests.append(c.BetRequest(key, key, account, "main", stake, seat=seat))
        answer = self.run(c.PlaceBets(tuple(requests)), "operator:op")
        assert all(r["status"] == "placed" for r in answer["results"]), answer
        self.run(c.CloseBetting())
        owner = {"seat:1": "p1", "seat:2": "p2", "seat:3": "p3"}
        for _ in range(200):
            rnd = self.service.state.round
            if rnd is None or not rnd.active:
                break
            turn = self.service.state.public_summary()["round"].get("turn")
            if turn:
                actor = turn["actors"][0]
                legal = [m["action"] for m in turn["legal_actions"][actor]]
                choice = self.rng.choice(legal)  # every legal move: doubles, splits too
                self.run(
                    c.Act(
                        actor,
                        choice,
                        owner.get(actor, "p1"),
                        balances={owner.get(actor, "p1"): 10**9},
                    ),
                    "operator:op",
                )
            else:
                self.run(c.CardScanned(next(self.cards)))
        return str(opened["round_id"])

    def play(self, rounds: int) -> list[str]:
        return [self.round() for _ in range(rounds)]
