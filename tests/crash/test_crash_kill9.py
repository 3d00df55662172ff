"""Crash safety: SIGKILL a real `livetable serve` at random points, restart, check the ledger.

The test owns a framed virtual shoe on a pseudo-terminal and points the table's reader at
it, runs the server as a real subprocess, and drives rounds through the real HTTP API
(operator credits and bets with idempotency keys, dealer betting window, supervisor voids
and manual card entry) and through the shoe (cards dealt only when the table says where
the next one goes). At seeded random points — during betting, mid-request, mid-dealing,
right after the last card (the settlement commit), between rounds, during the burn — it
kills the server with SIGKILL and restarts it. After every restart it retries what was
not acknowledged with the same idempotency keys and checks the money: every acknowledged
bet is there with its stake, balances add up, each bet has one stake entry and at most one
return entry, no balance is negative, the audit chain verifies, nothing settled twice.
A round caught dealing either continues from its recorded cards (a card the reader
acknowledged but the dead server never committed is keyed in by the supervisor) or is
voided by the supervisor; both paths are taken.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from table_service.models import BetRow
from table_service.rules.baccarat import next_position
from table_service.rules.cards import parse_card
from tests.support.crash_harness import CrashDriver, ShoeTable, shoe_table

TABLE = "crash-1"
ACCOUNTS = [f"acct-{i}" for i in range(5)]
BET_TYPES = ["player", "banker", "tie", "player_pair", "banker_pair", "big", "small"]
KILLS = {"sqlite": 20, "postgresql": 10}
"""Kills per backend. The crash paths are the table's, not the database's: the PostgreSQL run
hits each kind of point once (it costs an interpreter start a kill), SQLite's twice."""
SEED = 20261129
BETTING_SECONDS = 600
"""The betting window: longer than any round takes on a saturated machine, so the countdown
never closes it under the test's bets (a 3 s window closed between the test reading
"betting" and its bets arriving, at load 15); the dealer closes it once the bets are
answered. A kill during betting (before, mid-request or after the bets, or mid-close)
finds the window still open after the restart."""
# Where a kill may land; the plan is a seeded shuffle, so every kind is hit.
KINDS = [
    "burn",
    "bets_mid",
    "betting",
    "close_mid",
    "deal",
    "deal",
    "settle",
    "between",
    "open_mid",
    "credit_mid",
]

# Twenty interpreter starts: about 50 s on an idle machine, 4-5 min on a saturated one.
pytestmark = pytest.mark.timeout(900)


class BaccaratDriver(CrashDriver):
    def __init__(self, table: ShoeTable, kills: int) -> None:
        self.kill_count = kills
        super().__init__(table, TABLE, SEED)
        self.requests: dict[str, list[dict[str, Any]]] = {}  # round -> its bets request
        self.round_base: dict[str, list[str]] = {}  # cards in the round before dealing
        self.round_dealt: dict[str, list[str]] = {}  # cards the test dealt into the round
        self.paths: Counter[str] = Counter()

    def make_plan(self) -> list[str]:
        kinds = ["burn"]
        rest = [k for k in KINDS if k != "burn"]
        while len(kinds) < self.kill_count:
            batch = rest[:]
            self.rng.shuffle(batch)
            kinds.extend(batch)
        return kinds[: self.kill_count]

    # -- recovery and checks --------------------------------------------------------------
    def recover(self) -> None:
        self.server.start()
        self.settle_down()
        for reference in list(self.pending_credits):
            self.credit(reference, retry=True)
        if self.pending_bets:
            self.send_bets(self.pending_bets, retry=True)
        self.check_ledger()
        table = self.table()
        rnd = table["round"]
        if rnd is not None and rnd["phase"] == "dealing":
            self.resume_or_void(rnd)
            self.check_ledger()

    def resume_or_void(self, rnd: dict[str, Any]) -> None:
        round_id = rnd["round_id"]
        expected = self.round_base.get(round_id, []) + self.round_dealt.get(round_id, [])
        recorded = rnd["cards"]
        # Recorded cards are still there, in shoe order, and nothing was invented.
        assert recorded == expected[: len(recorded)], (recorded, expected)
        lost = expected[len(recorded) :]
        if self.paths["void"] <= self.paths["resume"]:
            self.paths["void"] += 1
            answer = self.ok(
                "supervisor",
                "POST",
                f"{self.path}/round/void",
                json={"reason": "server restarted mid-deal", "change_shoe": False},
            )
            assert answer["voided"] is True
            detail = self.ok("supervisor", "GET", f"/rounds/{round_id}")
            assert detail["phase"] == "voided"
            for bet in detail["bets"]:
                assert (bet["status"], bet["returned"]) == ("refunded", bet["stake"]), bet
            return
        self.paths["resume"] += 1
        for card in lost:  # acknowledged by the reader, never committed: keyed in
            self.ok("supervisor", "POST", f"{self.path}/cards", json={"card": card})
            self.paths["keyed_in"] += 1
        after = self.table()["round"]
        if after["round_id"] == round_id and after["phase"] == "dealing":
            assert after["cards"] == expected, (after["cards"], expected)
        else:
            detail = self.ok("supervisor", "GET", f"/rounds/{round_id}")
            assert detail["phase"] == "settled"
            assert detail["cards"][: len(expected)] == expected[: len(detail["cards"])]

    # -- operator actions -----------------------------------------------------------------
    def credit(self, reference: str, *, retry: bool = False, mid_kill: bool = False) -> None:
        account, amount = self.ledger.credits[reference]

        def request() -> httpx.Response:
            return self.call(
                "operator",
                "POST",
                f"/accounts/{account}/credit",
                json={"amount": amount, "reference": reference},
            )

        if mid_kill:
            response = self.kill_during("credit_mid", request)
            if response is None:
                self.pending_credits.append(reference)
            else:
                self.ledger.acked_credits.add(reference)
            self.recover()
            return
        response = request()
        assert response.status_code == 200, response.text
        if retry:
            self.pending_credits.remove(reference)
        self.ledger.acked_credits.add(reference)

    def make_bets(self, round_id: str) -> list[dict[str, Any]]:
        return [
            {
                "key": f"{round_id}-b{i}",
                "account": self.rng.choice(ACCOUNTS),
                "type": self.rng.choice(BET_TYPES),
                "stake": self.rng.randrange(100, 5000),
            }
            for i in range(self.rng.randrange(3, 8))
        ]

    def send_bets(self, bets: list[dict[str, Any]], *, retry: bool = False) -> None:
        self.requests[bets[0]["key"].rsplit("-b", 1)[0]] = bets
        response = self.call("operator", "POST", f"{self.path}/bets", json={"bets": bets})
        if response.status_code == 200:
            self.record(bets, response.json())
        else:
            # Betting closed while the server was down and the first attempt never
            # committed: the retry is refused as a whole, and none of its bets exist.
            assert retry and response.status_code == 409, response.text
            assert response.json()["error"] == "betting_closed"
            assert not [b for b in bets if b["key"] in self.ledger.bets]
            with self.runtime.sessions() as s:
                keys = [k.split("|", 1)[1] for k in s.scalars(select(BetRow.idempotency_key))]
            assert not {b["key"] for b in bets} & set(keys)
        self.pending_bets = []

    def late_retry(self, round_id: str) -> None:
        """The operator retries a round's request after its window closed: same answers."""
        bets = self.requests.pop(round_id, None)
        if bets is None:
            return
        response = self.call("operator", "POST", f"{self.path}/bets", json={"bets": bets})
        acked = [b for b in bets if b["key"] in self.ledger.bets]
        if response.status_code == 409:
            assert not acked, response.text
            return
        assert response.status_code == 200, response.text
        for item in response.json()["results"]:
            if item["status"] == "duplicate":
                assert self.ledger.bets[item["key"]]["bet_id"] == item["bet_id"]
            else:
                assert item["status"] == "refused" and item["key"] not in self.ledger.bets
        self.paths["late_retry"] += 1

    # -- the round loop -------------------------------------------------------------------
    def step(self) -> None:
        table = self.table()
        shoe, rnd = table["shoe"], table["round"]
        assert not table["paused"], table["incidents"]
        if shoe is None:
            self.ok("supervisor", "POST", f"{self.path}/shoe")
            return
        if not shoe["ready"]:
            self.deal()
            if self.due("burn"):
                time.sleep(self.rng.uniform(0.0, 0.02))
                self.kill_now("burn")
            else:
                self.wait_seen(shoe["cards_seen"])
            return
        if rnd is None or rnd["phase"] in ("settled", "voided"):
            if rnd is not None:
                self.late_retry(rnd["round_id"])
            if self.due("between"):
                self.kill_now("between")
                return
            if self.due("credit_mid"):
                reference = f"top-up-{len(self.ledger.credits)}"
                self.ledger.credits[reference] = (self.rng.choice(ACCOUNTS), 50_000)
                self.credit(reference, mid_kill=True)
                return
            if self.due("open_mid"):
                self.kill_during("open_mid", lambda: self.call("dealer", "POST", self._open))
                self.recover()
                return
            self.ok("dealer", "POST", self._open)
            return
        round_id = rnd["round_id"]
        if rnd["phase"] == "betting":
            if round_id not in self.bets_done:
                self.bets_done.add(round_id)
                bets = self.make_bets(round_id)
                if self.due("bets_mid"):
                    self.requests[round_id] = bets
                    self.bets_killed_mid_request(bets)
                    return
                self.send_bets(bets)
                if self.due("betting"):
                    self.kill_now("betting")
                return
            if self.due("close_mid"):
                self.kill_during("close_mid", lambda: self.call("dealer", "POST", self._close))
                self.recover()
                return
            # The window outlasts any round (BETTING_SECONDS): only the dealer closes it.
            self.ok("dealer", "POST", self._close)
            return
        assert rnd["phase"] == "dealing", rnd
        self.round_base.setdefault(round_id, list(rnd["cards"]))
        assert rnd["next_position"] is not None, rnd
        card = self.deal()
        self.round_dealt.setdefault(round_id, []).append(card)
        cards = [parse_card(x) for x in [*rnd["cards"], card]]
        last = next_position(cards) is None
        kind = "settle" if last else "deal"
        if self.due(kind):
            time.sleep(self.rng.uniform(0.0, 0.03))
            self.kill_now(kind)
            return
        after = self.wait_seen(table["shoe"]["cards_seen"])
        if last:
            assert after["round"]["phase"] == "settled", after["round"]
            self.rounds_settled += 1

    @property
    def _open(self) -> str:
        return f"{self.path}/betting/open"

    @property
    def _close(self) -> str:
        return f"{self.path}/betting/close"


def test_kill9_at_random_points_keeps_the_ledger(tmp_path: Path, db_url: str) -> None:
    settings = f"decks = 8\nbetting_seconds = {BETTING_SECONDS}"
    with shoe_table(tmp_path, db_url, TABLE, settings, seed=SEED, prefix="crash") as table:
        kills = KILLS["sqlite" if db_url.startswith("sqlite") else "postgresql"]
        driver = BaccaratDriver(table, kills)
        table.server.start()
        driver.run(ACCOUNTS, 200_000, max_steps=2000)
    assert len(driver.kills) >= kills
    assert set(driver.kills) == set(KINDS), driver.kills
    assert driver.paths["void"] >= 1 and driver.paths["resume"] >= 1, driver.paths
    # A quarter of the kills at least land where a request was sent but not acknowledged.
    assert driver.paths["late_retry"] >= -(-kills // 4), driver.paths
    assert driver.ledger.bets
