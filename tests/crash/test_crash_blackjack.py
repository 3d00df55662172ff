"""Crash safety of a live blackjack table: SIGKILL a real `livetable serve` mid-round.

The same harness as the baccarat crash test (``tests/support/crash_harness.py``: a framed
virtual shoe on a pseudo-terminal, the server as a real subprocess, the real HTTP API), with
seats, decisions and the dealer's draw. At seeded points — in betting, after a decision,
while a decision request is in flight, mid-deal, during the dealer's draw, right after the
last card (the settlement commit), between rounds — it kills the server with SIGKILL and
restarts it. Seed 000's rule is checked after every restart: a round that was in play is
voided, every stake of it (original, split, double, insurance, pair, behind) refunded
exactly once, and the shoe must be replaced before the next round; a round whose
settlement committed stays settled. The ledger, the audit chain and "nothing paid twice"
are checked as for baccarat.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.crash_harness import CrashDriver, ShoeTable, shoe_table

TABLE = "crash-bj"
SEATED = {n: f"acct-{n - 1}" for n in range(1, 5)}  # acct-0..acct-3 sit at seats 1..4
BEHIND = "acct-4"
SEED = 20261201
KINDS = ["betting", "bets_mid", "decision", "decision_mid", "deal", "dealer", "settle", "between"]
KILLS = {"sqlite": 12, "postgresql": len(KINDS)}
"""Kills per backend: each kind of point at least once on each (every kill costs an
interpreter start; the crash paths are the table's, not the database's)."""


class BlackjackDriver(CrashDriver):
    def __init__(self, table: ShoeTable, kills: int) -> None:
        self.kill_count = kills
        super().__init__(table, TABLE, SEED)
        self.active_at_kill: str | None = None
        self.voided_after_restart: list[str] = []
        self.decisions = 0

    def make_plan(self) -> list[str]:
        kinds: list[str] = []
        while len(kinds) < self.kill_count:
            batch = KINDS[:]
            self.rng.shuffle(batch)
            kinds.extend(batch)
        return kinds[: self.kill_count]

    def kill_now(self, kind: str) -> None:
        self._note_active()
        super().kill_now(kind)

    def kill_during(self, kind: str, request: Any) -> httpx.Response | None:
        self._note_active()
        return super().kill_during(kind, request)

    def _note_active(self) -> None:
        rnd = self.table()["round"]
        active = rnd is not None and rnd["phase"] in ("betting", "dealing")
        self.active_at_kill = rnd["round_id"] if active else None

    def recover(self) -> None:
        self.server.start()
        self.settle_down()
        if self.pending_bets:
            bets, self.pending_bets = self.pending_bets, []
            response = self.call("operator", "POST", f"{self.path}/bets", json={"bets": bets})
            if response.status_code == 200:  # answered from the database: same bet ids
                self.record(bets, response.json())
        self.check_ledger()
        table = self.table()
        rnd = table["round"]
        round_id = self.active_at_kill
        if round_id is not None:
            detail = self.ok("supervisor", "GET", f"/rounds/{round_id}")
            if detail["phase"] == "settled":  # the kill came after the settlement commit
                return
            # seed 000: server failure mid-round → void, refund everything once, new shoe
            assert rnd is not None and rnd["round_id"] == round_id, rnd
            assert rnd["phase"] == "voided", rnd
            assert table["shoe"] is None, table["shoe"]
            for bet in detail["bets"]:
                assert (bet["status"], bet["returned"]) == ("refunded", bet["stake"]), bet
            self.voided_after_restart.append(round_id)
        self.active_at_kill = None

    # -- the round loop ---------------------------------------------------------------------
    def seat_players(self) -> None:
        seats = {s["seat"]: s["account"] for s in self.table()["seats"]}
        for seat, account in SEATED.items():
            if seats.get(seat) != account:
                self.ok(
                    "operator",
                    "POST",
                    f"{self.path}/seats",
                    json={"seat": seat, "account": account},
                )

    def make_bets(self, round_id: str) -> list[dict[str, Any]]:
        seats = self.rng.sample(sorted(SEATED), k=self.rng.randrange(1, len(SEATED) + 1))
        bets = [
            {"key": f"{round_id}-m{s}", "account": SEATED[s], "type": "main",
             "stake": self.rng.randrange(100, 3000), "seat": s}
            for s in seats
        ]  # fmt: skip
        for s in seats:
            if self.rng.random() < 0.4:
                bets.append({"key": f"{round_id}-p{s}", "account": SEATED[s], "type": "pair",
                             "stake": self.rng.randrange(100, 500), "seat": s})  # fmt: skip
            if self.rng.random() < 0.5:
                bets.append({"key": f"{round_id}-b{s}", "account": BEHIND, "type": "behind",
                             "stake": self.rng.randrange(100, 1000), "seat": s})  # fmt: skip
        return bets

    def act(self, turn: dict[str, Any]) -> dict[str, Any]:
        actor = turn["actors"][0]
        moves = turn["legal_actions"][actor]
        move = self.rng.choice(moves)
        account = BEHIND if actor.startswith("behind:") else SEATED[int(actor.split(":")[1])]
        return {"actor": actor, "action": move["action"], "account": account}

    def step(self) -> None:
        table = self.table()
        shoe, rnd = table["shoe"], table["round"]
        assert not table["paused"], table["incidents"]
        if shoe is None:
            self.ok("supervisor", "POST", f"{self.path}/shoe")
            assert self.table()["shoe"]["ready"]  # seed 000: no burn
            return
        if rnd is None or rnd["phase"] in ("settled", "voided"):
            if self.due("between"):
                self.kill_now("between")
                return
            self.seat_players()
            self.ok("dealer", "POST", f"{self.path}/betting/open")
            return
        round_id = rnd["round_id"]
        if rnd["phase"] == "betting":
            if round_id not in self.bets_done:
                self.bets_done.add(round_id)
                bets = self.make_bets(round_id)
                if self.due("bets_mid"):
                    self.bets_killed_mid_request(bets)
                    return
                response = self.call("operator", "POST", f"{self.path}/bets", json={"bets": bets})
                assert response.status_code == 200, response.text
                self.record(bets, response.json())
                if self.due("betting"):
                    self.kill_now("betting")
                return
            response = self.call("dealer", "POST", f"{self.path}/betting/close")
            assert response.status_code in (200, 409), response.text
            return
        assert rnd["phase"] == "dealing", rnd
        nxt = rnd["next"]
        if nxt["kind"] == "decision":
            body = self.act(rnd["turn"])
            if self.due("decision_mid"):
                self.kill_during(
                    "decision_mid",
                    lambda: self.call("operator", "POST", f"{self.path}/actions", json=body),
                )
                self.recover()
                return
            self.ok("operator", "POST", f"{self.path}/actions", json=body)
            self.decisions += 1
            if self.due("decision"):
                self.kill_now("decision")
            return
        assert nxt["kind"] == "card", nxt
        dealer_draw = nxt["code"] == "DEALER" and len(rnd["view"]["dealer"]["cards"]) >= 1
        self.deal()
        if dealer_draw and self.due("dealer"):
            time.sleep(self.rng.uniform(0.0, 0.02))
            self.kill_now("dealer")
            return
        if not dealer_draw and self.due("deal"):
            time.sleep(self.rng.uniform(0.0, 0.02))
            self.kill_now("deal")
            return
        after = self.wait_seen(table["shoe"]["cards_seen"])
        if after["round"]["phase"] == "settled":
            self.rounds_settled += 1
            if self.due("settle"):
                # the settlement committed: a restart must leave it settled, paid once
                self.kill_now("settle")


pytestmark = pytest.mark.timeout(900)


def test_kill9_mid_blackjack_round_voids_and_refunds_once(tmp_path: Path, db_url: str) -> None:
    settings = """
game = "blackjack"
decks = 8
betting_seconds = 30
game_rules = { decision_seconds = 60, follow_seconds = 60 }
"""
    with shoe_table(tmp_path, db_url, TABLE, settings, seed=SEED, prefix="crash") as table:
        kills = KILLS["sqlite" if db_url.startswith("sqlite") else "postgresql"]
        driver = BlackjackDriver(table, kills)
        table.server.start()
        driver.run([*SEATED.values(), BEHIND], 500_000, max_steps=3000)
    assert len(driver.kills) >= kills
    assert set(driver.kills) == set(KINDS), driver.kills
    assert driver.voided_after_restart, driver.kills
    assert driver.decisions > 0 and driver.rounds_settled >= 2
    assert driver.ledger.bets
