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

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from audit.store import EventStore
from audit.verify import verify_database
from hardware_sim.virtual_shoe import ShoeLockedError, VirtualShoe
from table_service.config import Settings
from table_service.models import Account, BetRow, LedgerEntry, RoundRow
from table_service.principals import add_principal
from table_service.rules.baccarat import next_position
from table_service.rules.cards import parse_card
from table_service.runtime import Runtime

TABLE = "crash-1"
ACCOUNTS = [f"acct-{i}" for i in range(5)]
BET_TYPES = ["player", "banker", "tie", "player_pair", "banker_pair", "big", "small"]
KILLS = 20
SEED = 20261129
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """`python -m table_service.cli serve` as a child process that can be SIGKILLed."""

    def __init__(self, env: dict[str, str], table_file: Path, log_file: Path) -> None:
        self.env = env
        self.table_file = table_file
        self.log_file = log_file
        self.port = int(env["LIVETABLE_PORT"])
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.starts += 1
        with self.log_file.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "table_service.cli", "serve", "--tables", self.table_file],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, f"server exited: {self.tail()}"
            try:
                if httpx.get(f"{self.base}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"server not ready: {self.tail()}"
            time.sleep(0.03)

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()

    def tail(self) -> str:
        return self.log_file.read_text(errors="replace")[-3000:]


@dataclass
class Ledger:
    """What the test knows for certain: what the server acknowledged."""

    acked_bets: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> bet
    credits: dict[str, tuple[str, int]] = field(default_factory=dict)  # reference -> (acct, n)
    acked_credits: set[str] = field(default_factory=set)


class Driver:
    def __init__(self, server: Server, shoe: VirtualShoe, runtime: Runtime, tokens: dict) -> None:
        self.server = server
        self.shoe = shoe
        self.runtime = runtime
        self.http = httpx.Client(base_url=f"{server.base}/api/v1", timeout=10)
        self.headers = {role: {"Authorization": f"Bearer {t}"} for role, t in tokens.items()}
        self.ledger = Ledger()
        self.rng = random.Random(SEED)
        self.plan = self._plan()
        self.kills: list[str] = []
        self.pending_bets: list[dict[str, Any]] = []
        self.requests: dict[str, list[dict[str, Any]]] = {}  # round -> its bets request
        self.pending_credits: list[str] = []
        self.bets_done: set[str] = set()  # rounds whose bets were sent
        self.round_base: dict[str, list[str]] = {}  # cards in the round before dealing
        self.round_dealt: dict[str, list[str]] = {}  # cards the test dealt into the round
        self.paths: Counter[str] = Counter()
        self.rounds_settled = 0

    def _plan(self) -> list[str]:
        kinds = ["burn"]
        rest = [k for k in KINDS if k != "burn"]
        while len(kinds) < KILLS:
            batch = rest[:]
            self.rng.shuffle(batch)
            kinds.extend(batch)
        return kinds[:KILLS]

    # -- http helpers ---------------------------------------------------------------------
    def call(self, role: str, method: str, path: str, **kw: Any) -> httpx.Response:
        return self.http.request(method, path, headers=self.headers[role], **kw)

    def ok(self, role: str, method: str, path: str, **kw: Any) -> dict[str, Any]:
        response = self.call(role, method, path, **kw)
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()

    def table(self) -> dict[str, Any]:
        return self.ok("supervisor", "GET", f"/tables/{TABLE}")

    def due(self, kind: str) -> bool:
        return bool(self.plan) and self.plan[0] == kind

    # -- killing ------------------------------------------------------------------------
    def kill_now(self, kind: str) -> None:
        self.plan.pop(0)
        self.kills.append(kind)
        self.server.kill()
        self.recover()

    def kill_during(self, kind: str, request: Any) -> httpx.Response | None:
        """Send a request and SIGKILL the server while it may still be answering it."""
        box: dict[str, Any] = {}

        def send() -> None:
            try:
                box["response"] = request()
            except httpx.HTTPError as exc:
                box["error"] = exc

        thread = threading.Thread(target=send)
        thread.start()
        time.sleep(self.rng.uniform(0.0, 0.012))
        self.plan.pop(0)
        self.kills.append(kind)
        self.server.kill()
        thread.join(15)
        response = box.get("response")
        acked = response if response is not None and response.status_code == 200 else None
        return acked

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

    def settle_down(self) -> None:
        """Wait until the shoe has delivered what it held and the table is quiet."""
        deadline = time.monotonic() + 15
        last, stable_since = -1, time.monotonic()
        while time.monotonic() < deadline:
            seq = self.table()["last_seq"]
            busy = not (self.shoe.host_connected and self.shoe.idle())
            if seq != last or busy:
                last, stable_since = seq, time.monotonic()
            elif time.monotonic() - stable_since > 0.25:
                return
            time.sleep(0.02)
        raise AssertionError("table did not settle after restart")

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
                f"/tables/{TABLE}/round/void",
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
            self.ok("supervisor", "POST", f"/tables/{TABLE}/cards", json={"card": card})
            self.paths["keyed_in"] += 1
        after = self.table()["round"]
        if after["round_id"] == round_id and after["phase"] == "dealing":
            assert after["cards"] == expected, (after["cards"], expected)
        else:
            detail = self.ok("supervisor", "GET", f"/rounds/{round_id}")
            assert detail["phase"] == "settled"
            assert detail["cards"][: len(expected)] == expected[: len(detail["cards"])]

    def check_ledger(self) -> None:
        with self.runtime.sessions() as s:
            accounts = {a: b for a, b in s.execute(select(Account.account_id, Account.balance))}
            bets = {b.bet_id: b for b in s.scalars(select(BetRow))}
            entries = list(s.scalars(select(LedgerEntry)))
            rounds = {r.round_id: r for r in s.scalars(select(RoundRow))}
            events = EventStore.read(s, table_id=TABLE)
            signer = self.runtime.signer
            report = verify_database(s, {signer.key_id: signer.public_key})
        assert report.ok, report.problem
        assert all(balance >= 0 for balance in accounts.values()), accounts
        by_key = {b.idempotency_key.split("|", 1)[1]: b for b in bets.values()}
        for key, bet in self.ledger.acked_bets.items():
            row = by_key.get(key)
            assert row is not None, f"acknowledged bet {key} lost"
            assert (row.bet_id, row.account_id, row.bet_type, row.stake) == (
                bet["bet_id"],
                bet["account"],
                bet["type"],
                bet["stake"],
            )
        kinds: Counter[tuple[str, str]] = Counter()
        for entry in entries:
            if entry.bet_id is not None:
                kinds[(entry.bet_id, entry.kind)] += 1
                bet = bets[entry.bet_id]
                if entry.kind == "stake":
                    assert entry.amount == -bet.stake
                else:
                    assert entry.amount == bet.returned
        credits = sum(e.amount for e in entries if e.kind == "credit")
        for bet in bets.values():
            assert kinds[(bet.bet_id, "stake")] == 1, bet.bet_id
            closed = bet.status in ("settled", "refunded")
            assert kinds[(bet.bet_id, "return")] == (1 if closed else 0), bet.bet_id
            if bet.status == "open":
                assert rounds[bet.round_id].phase in ("betting", "dealing", "result")
            else:
                assert rounds[bet.round_id].phase in ("settled", "voided")
        stakes = sum(b.stake for b in bets.values())
        returns = sum(b.returned or 0 for b in bets.values() if b.status != "open")
        assert sum(accounts.values()) == credits - stakes + returns
        acked_credit_total = sum(self.ledger.credits[r][1] for r in self.ledger.acked_credits)
        if not self.pending_credits:
            assert credits == acked_credit_total
        # Nothing closed twice: one settlement or void per round, one closing per bet.
        closings: Counter[str] = Counter()
        ends: Counter[str] = Counter()
        for event in events:
            if event.type in ("bets_settled", "bets_refunded"):
                for item in event.payload.get("results") or event.payload.get("refunds"):
                    closings[item["bet_id"]] += 1
            if event.type in ("round_settled", "round_voided"):
                ends[event.payload["round_id"]] += 1
        assert not [b for b, n in closings.items() if n > 1]
        assert not [r for r, n in ends.items() if n > 1]

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

    def record(self, bets: list[dict[str, Any]], answer: dict[str, Any]) -> None:
        by_key = {b["key"]: b for b in bets}
        for item in answer["results"]:
            if item["status"] in ("placed", "duplicate"):
                bet = {**by_key[item["key"]], "bet_id": item["bet_id"]}
                known = self.ledger.acked_bets.get(item["key"])
                assert known is None or known["bet_id"] == item["bet_id"], (known, item)
                self.ledger.acked_bets[item["key"]] = bet

    def send_bets(self, bets: list[dict[str, Any]], *, retry: bool = False) -> None:
        self.requests[bets[0]["key"].rsplit("-b", 1)[0]] = bets
        response = self.call("operator", "POST", f"/tables/{TABLE}/bets", json={"bets": bets})
        if response.status_code == 200:
            self.record(bets, response.json())
        else:
            # Betting closed while the server was down and the first attempt never
            # committed: the retry is refused as a whole, and none of its bets exist.
            assert retry and response.status_code == 409, response.text
            assert response.json()["error"] == "betting_closed"
            assert not [b for b in bets if b["key"] in self.ledger.acked_bets]
            with self.runtime.sessions() as s:
                keys = [k.split("|", 1)[1] for k in s.scalars(select(BetRow.idempotency_key))]
            assert not {b["key"] for b in bets} & set(keys)
        self.pending_bets = []

    def late_retry(self, round_id: str) -> None:
        """The operator retries a round's request after its window closed: same answers."""
        bets = self.requests.pop(round_id, None)
        if bets is None:
            return
        response = self.call("operator", "POST", f"/tables/{TABLE}/bets", json={"bets": bets})
        acked = [b for b in bets if b["key"] in self.ledger.acked_bets]
        if response.status_code == 409:
            assert not acked, response.text
            return
        assert response.status_code == 200, response.text
        for item in response.json()["results"]:
            if item["status"] == "duplicate":
                assert self.ledger.acked_bets[item["key"]]["bet_id"] == item["bet_id"]
            else:
                assert item["status"] == "refused" and item["key"] not in self.ledger.acked_bets
        self.paths["late_retry"] += 1

    # -- the round loop -------------------------------------------------------------------
    def deal(self) -> str:
        deadline = time.monotonic() + 5
        while True:
            try:
                card = self.shoe.deal()
            except ShoeLockedError:
                assert time.monotonic() < deadline, "shoe stayed locked"
                time.sleep(0.01)
                continue
            assert card not in (None, "CUT"), "the test shoe ran out"
            return str(card)

    def wait_seen(self, before: int) -> dict[str, Any]:
        deadline = time.monotonic() + 5
        while True:
            table = self.table()
            if table["shoe"] is not None and table["shoe"]["cards_seen"] > before:
                return table
            assert time.monotonic() < deadline, f"card not recorded: {table}"
            time.sleep(0.005)

    def step(self) -> None:
        table = self.table()
        shoe, rnd = table["shoe"], table["round"]
        assert not table["paused"], table["incidents"]
        if shoe is None:
            self.ok("supervisor", "POST", f"/tables/{TABLE}/shoe")
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
                    self.pending_bets = bets
                    self.requests[round_id] = bets
                    response = self.kill_during(
                        "bets_mid",
                        lambda: self.call(
                            "operator", "POST", f"/tables/{TABLE}/bets", json={"bets": bets}
                        ),
                    )
                    if response is not None:
                        self.record(bets, response.json())
                        self.pending_bets = []
                    self.recover()
                    return
                self.send_bets(bets)
                if self.due("betting"):
                    self.kill_now("betting")
                return
            if self.due("close_mid"):
                self.kill_during("close_mid", lambda: self.call("dealer", "POST", self._close))
                self.recover()
                return
            response = self.call("dealer", "POST", self._close)
            # 409: the countdown closed it first.
            assert response.status_code in (200, 409), response.text
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
        return f"/tables/{TABLE}/betting/open"

    @property
    def _close(self) -> str:
        return f"/tables/{TABLE}/betting/close"

    def run(self) -> None:
        for account in ACCOUNTS:
            reference = f"initial-{account}"
            self.ledger.credits[reference] = (account, 200_000)
            self.credit(reference)
        steps = 0
        while self.plan or self.rounds_settled < 2:
            steps += 1
            assert steps < 2000, f"stuck; plan left {self.plan}"
            self.step()
        self.check_ledger()


def _principals(runtime: Runtime) -> dict[str, str]:
    tokens = {}
    with runtime.sessions.begin() as session:
        for role in ("operator", "dealer", "supervisor"):
            tokens[role] = add_principal(
                session, runtime.store, f"crash-{role}", role, actor="test:crash"
            )
    return tokens


def test_kill9_at_random_points_keeps_the_ledger(tmp_path: Path, db_url: str) -> None:
    data_dir = tmp_path / "data"
    env = {
        **os.environ,
        "LIVETABLE_DATA_DIR": str(data_dir),
        "LIVETABLE_PORT": str(_free_port()),
        "LIVETABLE_LOG_LEVEL": "WARNING",
    }
    env.pop("LIVETABLE_CONFIG", None)
    env.pop("LIVETABLE_TABLE_CONFIG", None)
    if db_url.startswith("sqlite"):
        env.pop("LIVETABLE_DATABASE_URL", None)  # the embedded default: <data_dir>/livetable.db
        database_url = None
    else:
        env["LIVETABLE_DATABASE_URL"] = database_url = db_url
    runtime = Runtime.from_settings(
        Settings(data_dir=data_dir, database_url=database_url), upgrade=True
    )
    shoe = VirtualShoe("framed", decks=8, seed=SEED, cut_depth=52, link_path=str(tmp_path / "shoe"))
    shoe.start()
    table_file = tmp_path / "tables.toml"
    table_file.write_text(
        f"""
[[tables]]
table_id = "{TABLE}"
decks = 8
betting_seconds = 3
shoe = {{ port = "{shoe.device_path}", dialect = "framed" }}
"""
    )
    server = Server(env, table_file, tmp_path / "server.log")
    try:
        driver = Driver(server, shoe, runtime, _principals(runtime))
        server.start()
        driver.run()
    finally:
        server.stop()
        shoe.stop()
        runtime.close()
    assert len(driver.kills) >= 20
    assert set(driver.kills) == set(KINDS), driver.kills
    assert driver.paths["void"] >= 1 and driver.paths["resume"] >= 1, driver.paths
    assert driver.paths["late_retry"] >= 5, driver.paths
    assert driver.ledger.acked_bets
