"""``livetable demo --game xidach --profile P``: a live Xì Dách table with bots.

Everything runs here, through the real paths: SQLite in the data folder, a virtual framed
shoe on a pseudo-terminal read by the real serial reader (``reader="camera"``: by a
synthetic camera over the shoe and real recognition of a published deck; ``"both"``: the
serial reader, every card cross-checked by the camera), the table service and its HTTP
API on http://HOST:PORT, decisions through ``POST /tables/{t}/actions``, timers as
recorded deadlines run by the service. Bots:

- the dealer pulls every card the table asks for out of the virtual shoe, past the
  reader (the table locks the shoe while betting is open); every profile deals from one
  deck, which the table ends after each round, so before the next round the dealer takes
  the rest of the old deck out unscanned and the supervisor inserts a freshly shuffled
  one (the shoe-change procedure); as the house banker the dealer confirms the one move
  the published policy allows;
- punters bet, some with the privacy flag (``forced-draw``), some skip a round (``room``
  removes them from their seat), some let their timer run out (the rules play for
  them), some leave mid-round (losing the stake); they sit down again next round;
- in ``room`` the bank follows the rules: the first banker takes it holding 5x the
  maximum bet and commits its whole balance; it keeps the bank while the bank holds the
  minimum bet; after a few rounds it leaves the table at its turn (its hand, already
  revealed, is then played out by the rules), and the bank passes to the next
  seated player who qualifies, who takes it. The
  banker decides within the rules (hit below 17, stand from 17), sometimes timing out.

After every round the log shows bets, cards, decisions and results, and checks the live
settlement against ``livetable settle xidach`` on the round's ``settle_input``.
Timers: the profile's own, or ``--timer-seconds N`` for every timer so timeouts show
quickly (the rules are otherwise the shipped profile's).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import random
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, cast

import structlog
import uvicorn
from rich.console import Console

from audit.store import EventStore
from hardware_sim.virtual_shoe import VirtualShoe
from table_service.app import build_app
from table_service.config import Settings
from table_service.demo.bots import (
    MISTAKES_BY_GAME,
    SUPERVISORS,
    DealerBot,
    MistakeBag,
    PlayerBots,
    SupervisorBot,
    Table,
)
from table_service.demo.client import ApiClient, ApiError
from table_service.demo.credentials import TOKENS_FILE, ensure_principals
from table_service.demo.feed import TableFeed
from table_service.demo.roundlog import LogTotals, RoundLog, plural
from table_service.demo.run import (
    READERS,
    SHOES_UNBOUNDED,
    DemoError,
    _bind,
    _console_banner,
    _reader_online,
    _seal,
    _Server,
    _wait_started,
    demo_camera,
    read_by_text,
    rounds_played,
    sign_in_dealer,
)
from table_service.demo.shoestack import ShoeStack, SupplyExhausted
from table_service.rules.xidach.bank import bank_requirement, next_banker
from table_service.rules.xidach.profile import PROFILE_NAMES, load_profile
from table_service.rules.xidach.replay import handle_line
from table_service.rules.xidach.state import TableLimits
from table_service.runtime import Runtime
from table_service.table.config import CameraConfig, ShoeConfig, StakeLimits, TableConfig

log = structlog.get_logger(__name__)

MIN_BET, MAX_BET = 100, 2000
BANK_FUNDS = 200_000  # the first seated banker's account: comfortably 5x the maximum bet
PUNTER_FUNDS = 50_000  # each punter's: enough to take the bank when it passes
THROUGH = {
    "serial": "through the serial reader",
    "camera": "through the camera",
    "both": "through the serial reader and the camera",
}
BANK_TERM = 3
"""Rounds a seated banker holds the bank before leaving the table at its turn."""


@dataclass(frozen=True)
class XiDachDemoOptions:
    profile: str = "room"
    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path | None = None
    rounds: int = 10
    """0: until stopped."""
    seed: int | None = None
    punters: int = 4
    timer_seconds: int | None = 2
    betting_seconds: float = 2.0
    heartbeat: float = 0.5
    mistakes: float = 0.0
    """Share of rounds in which the dealer makes one of its mistakes."""
    supervisor: str = "bot"
    """bot: the supervisor bot resolves incidents; human: a person does, at the console."""
    log_file: Path | None = None
    metrics_url: str | None = None
    """Where this process's Prometheus metrics are (said in the banner)."""
    reader: str = "serial"
    """serial, camera (a synthetic camera over the shoe, real recognition) or both (the
    serial reader, every card cross-checked by the camera)."""
    camera_deck: str = "plastic"
    """The published deck the synthetic camera renders (hardware_sim.camera.published)."""
    camera_window_seconds: float | None = None
    """reader both: the readers' cross-check window (see ``DemoOptions``); None: default."""


@dataclass
class XiDachReport:
    seed: int
    profile: str
    rounds_settled: int = 0
    rounds_voided: int = 0
    settle_checks_passed: int = 0
    settle_checks_failed: int = 0
    timeouts: int = 0
    leaves: int = 0
    staked: int = 0
    returned: int = 0
    bank_net: int = 0
    bank_passes: int = 0
    banker_leaves: int = 0
    bank_refusals: int = 0
    rooms_closed: int = 0
    cards_pulled: int = 0
    decks: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    mistakes: list[tuple[str, str]] = field(default_factory=list)
    stopped_by: str = "rounds"
    interrupted_round_voided: bool = False
    totals: LogTotals = field(default_factory=LogTotals)


def demo_profile_toml(profile: str, timer_seconds: int | None) -> str:
    """The shipped profile, with every timer set to ``timer_seconds`` when given."""
    if profile not in PROFILE_NAMES:
        raise DemoError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILE_NAMES)}")
    text = (
        resources.files("table_service.rules.xidach")
        .joinpath("profiles", f"{profile}.toml")
        .read_text("utf-8")
    )
    if timer_seconds is not None:
        text = re.sub(r"(?m)^timer_s = \d+", f"timer_s = {timer_seconds}", text)
    return text


def demo_table_id(options: XiDachDemoOptions) -> str:
    """One table per profile: its log and calibration camera are named by it."""
    return f"xd-{options.profile}"


def table_config(
    options: XiDachDemoOptions,
    shoe_port: str | None = None,
    camera: CameraConfig | None = None,
) -> TableConfig:
    """The demo table; with ``shoe_port`` it reads a framed serial shoe on that device
    (unless ``options.reader`` is the camera alone), with ``camera`` a camera too."""
    serial = shoe_port is not None and options.reader != "camera"
    seated = options.profile == "room"
    return TableConfig(
        table_id=demo_table_id(options),
        game="xidach",
        betting_seconds=options.betting_seconds,
        game_rules={
            "profile_toml": demo_profile_toml(options.profile, options.timer_seconds),
            "banker": "seated" if seated else "house",
        },
        limits=StakeLimits(min_stake=MIN_BET, max_stake=MAX_BET),
        bet_limits={"bank": StakeLimits(min_stake=MIN_BET, max_stake=10**9)},
        shoe=ShoeConfig(port=shoe_port, dialect="framed") if serial else None,
        camera=camera,
    )


class XiDachDemo:
    """The punters, the seated banker and the bank's passing; the dealer bot works the
    shoe (and makes its mistakes), the supervisor bot (or a person) the incidents."""

    def __init__(
        self,
        options: XiDachDemoOptions,
        roundlog: RoundLog,
        supervisor: ApiClient,
        operator: ApiClient,
        rng: random.Random,
        report: XiDachReport,
        dealer: DealerBot,
        dealer_api: ApiClient,
    ) -> None:
        self.o = options
        self.log = roundlog
        self.sup = supervisor
        self.op = operator
        self.dealer = dealer
        self.dealer_api = dealer_api
        self.rng = rng
        self.report = report
        self.table = demo_table_id(options)
        self.seated_bank = options.profile == "room"
        self.banker = "banker9"
        self.bank_seat = options.punters + 1  # where the first seated banker sits
        self.players = {n: f"punter{n}" for n in range(1, options.punters + 1)}
        if self.seated_bank:
            self.players[self.bank_seat] = self.banker
        self.profile = load_profile(options.profile)
        self.limits = TableLimits(MIN_BET, MAX_BET)
        self.holder: tuple[int, str] | None = None  # the bank this round: seat, account
        self.last_holder: int | None = None
        self.held_for = 0  # rounds the current holder has banked
        self.round_id: str | None = None
        # the order players came to the table (the table's own rule for who takes a bank
        # that passes: the next to have joined after the banker, seed 001)
        self.joined: dict[int, int] = {}
        self.joins = 0
        self.bank_joined: int | None = None

    def note(self, who: str, message: str) -> None:
        self.log.note(who, message, self.round_id)

    # -- set-up ------------------------------------------------------------------------------
    async def prepare(self) -> None:
        for account in self.players.values():
            amount = BANK_FUNDS if account == self.banker else PUNTER_FUNDS
            await self.op.post(
                f"/accounts/{account}/credit",
                {"amount": amount, "reference": f"demo {account} {self.report.seed}"},
            )

    async def summary(self) -> dict[str, Any]:
        """The table as of at least the last event the feed brought: the stream announces an
        event when it is committed, a moment before the table's summary shows it, and a
        summary from that moment would still ask for the card just dealt."""
        table = self.dealer.table
        return (await table.view(self.sup, at_least_seq=table.feed.last_seq)).data

    async def _seat_everyone(self, summary: dict[str, Any]) -> None:
        taken = {s["seat"]: s["account"] for s in summary["seats"]}
        for seat in taken:  # seated before this demo saw them: in the summary's order
            if seat not in self.joined:
                self.joins += 1
                self.joined[seat] = self.joins
        for seat, account in self.players.items():
            if seat not in taken:
                await self.op.post(
                    f"/tables/{self.table}/seats", {"seat": seat, "account": account}
                )
                self.joins += 1
                self.joined[seat] = self.joins

    async def _fresh_deck(self) -> None:
        """The shoe-change procedure between one-deck rounds: the rest of the old deck out
        unscanned, a freshly shuffled deck in (the supervisor inserts it)."""
        if (await self.summary())["shoe"] is not None:
            return
        await self.dealer.ensure_shoe()  # rest of the old deck out, the supervisor inserts
        self.report.decks += 1

    # -- the bank (room) ---------------------------------------------------------------------
    async def _balances(self) -> dict[str, int]:
        out = {}
        for account in self.players.values():
            out[account] = (await self.op.get(f"/accounts/{account}"))["balance"]
        return out

    async def _bank_holder(self, summary: dict[str, Any]) -> None:
        """Who banks this round, by the rules: the keeper; else, after a lost or left
        bank, the first seated player to have joined after the banker (clockwise for a tie)
        who holds 5x the maximum bet; else (no
        bank yet) the table's first banker if it qualifies."""
        self.holder = None
        if not self.seated_bank:
            return
        seated = {s["seat"]: s["account"] for s in summary["seats"] if not s["pending"]}
        balances = await self._balances()
        bank = summary.get("bank") or {}
        keeper, passes_from = bank.get("seat"), bank.get("passes_from")
        if keeper is not None and keeper in seated:
            self.holder = (keeper, seated[keeper])
            self.held_for += 1
            self.bank_joined = self.joined.get(keeper)
            return
        if keeper is not None:
            passes_from = keeper  # the banker left between rounds
        players = [(seat, balances.get(a, 0)) for seat, a in seated.items() if seat != passes_from]
        need = bank_requirement(self.profile, self.limits)
        if passes_from is None:
            first = balances.get(self.banker, 0) >= need and self.bank_seat in seated
            seat = self.bank_seat if first else next_banker(self.profile, self.limits, players, 0)
        else:
            joined = {n: self.joined.get(n, 0) for n in seated}
            seat = next_banker(
                self.profile, self.limits, players, passes_from, joined, self.bank_joined
            )
        if seat is None:
            self.note("players", f"nobody seated holds {need:,} to take the bank")
            return
        self.holder = (seat, seated[seat])
        self.held_for = 1
        self.bank_joined = self.joined.get(seat)
        if passes_from is not None:
            self.report.bank_passes += 1
            self.note(
                "players",
                f"the bank passes from seat {passes_from} to seat {seat}, the next to have "
                f"joined after the banker ({seated[seat]}, {balances[seated[seat]]:,} >= {need:,})",
            )

    # -- one round ---------------------------------------------------------------------------
    async def round(self, mistake: str | None) -> None:
        self.round_id = None
        await self._fresh_deck()
        await self.dealer._until(lambda v: not v.paused, timeout=self.dealer.supervisor.patience)
        summary = await self.summary()
        await self._seat_everyone(summary)
        summary = await self.summary()
        await self._bank_holder(summary)
        try:
            try:
                opened = await self.dealer_api.post(f"/tables/{self.table}/betting/open")
            except ApiError as exc:
                if exc.code != "table_paused":
                    raise
                # paused again between the look and the call (an incident just raised)
                await self.dealer._until(
                    lambda v: not v.paused, timeout=self.dealer.supervisor.patience
                )
                opened = await self.dealer_api.post(f"/tables/{self.table}/betting/open")
        except ApiError as exc:
            if exc.code != "room_closed":
                raise
            self.report.rooms_closed += 1
            self.note("players", f"no round: {exc.reason}")
            return
        self.round_id = round_id = opened["round_id"]
        mark = opened["seq"]
        window = self.o.betting_seconds
        bets: list[tuple[float, dict[str, Any]]] = []
        bank_seat = self.holder[0] if self.holder else None
        for seat, account in self.players.items():
            if seat == bank_seat:
                continue
            if self.seated_bank and seat == self.bank_seat and self.holder is None:
                continue  # the first banker waits for the bank
            if self.rng.random() < 0.1:
                removed = " (the rules remove it from the seat)" if self.o.profile == "room" else ""
                self.note("players", f"{account} at seat {seat} sits this round out{removed}")
                continue
            kind = "main"
            if self.o.profile == "forced-draw" and self.rng.random() < 0.4:
                kind = "hidden"
            stake = self.rng.randrange(MIN_BET, MAX_BET + 1, 100)
            delay = self.rng.uniform(0.1, 0.6) * window
            bet = {"key": f"{round_id}-{seat}", "account": account, "type": kind}
            bets.append((delay, {**bet, "stake": stake, "seat": seat}))
        if self.holder is not None:
            seat, account = self.holder
            balance = (await self.op.get(f"/accounts/{account}"))["balance"]
            # the banker commits its whole balance, first: the punters bet against it
            await self._bet(
                {
                    "key": f"{round_id}-bank",
                    "account": account,
                    "type": "bank",
                    "stake": balance,
                    "seat": seat,
                }
            )
        started = time.monotonic()
        expose = 2 if mistake == "double_exposure" else 1 if mistake == "exposed_card" else 0
        for n, (delay, bet) in enumerate(sorted(bets, key=lambda b: b[0])):
            await asyncio.sleep(max(0.0, delay - (time.monotonic() - started)))
            if expose and n == len(bets) - 1:  # before the last punter bets: still betting
                await self.dealer.expose(round_id, expose)
                expose = 0
            if not await self._bet(bet):
                break
        if expose:
            await self.dealer.expose(round_id, expose)
        end = await self.dealer.table.wait(
            lambda e: (
                e.get("round_id") == round_id and e["type"] in ("betting_closed", "round_voided")
            ),
            after_seq=mark,
            timeout=window + self.dealer._slack,
            what=f"end of betting for {round_id}",
        )
        if end["type"] == "betting_closed":
            await self._play(round_id, mistake)
        await self.dealer.table.wait(
            lambda e: (
                e.get("round_id") == round_id and e["type"] in ("round_settled", "round_voided")
            ),
            after_seq=mark,
            timeout=self.dealer.supervisor.patience,
            what=f"settlement of {round_id}",
        )
        await self._close(round_id)

    async def _bet(self, bet: dict[str, Any]) -> bool:
        """Place one bet (False once betting has closed)."""
        if bet["type"] == "bank":
            self.note(
                "players",
                f"{bet['account']} takes the bank at seat {bet['seat']} "
                f"and commits its balance, {bet['stake']:,}",
            )
        else:
            hidden = " (cards hidden from the stream)" if bet["type"] == "hidden" else ""
            self.note(
                "players", f"{bet['account']} bets {bet['stake']:,} on seat {bet['seat']}{hidden}"
            )
        try:
            answer = await self.op.post(f"/tables/{self.table}/bets", {"bets": [bet]})
        except ApiError as exc:
            if exc.code in ("wrong_phase", "betting_closed", "no_round"):
                self.note("players", f"{bet['account']}: too late, betting has closed")
                return False
            if exc.code == "table_paused":
                # a dealer's mistake during betting (cards exposed) paused the table until
                # the supervisor confirms it: the player's bet is refused, nothing placed
                self.note("players", f"{bet['account']}: refused, {exc.reason}")
                return False
            raise
        result = answer["results"][0]
        if result["status"] != "placed":
            if bet["type"] == "bank":
                self.report.bank_refusals += 1
                self.report.problems.append(f"{bet['key']}: bank bid refused {result}")
            self.note(
                "players",
                f"{bet['account']}: {bet['type']} {bet['stake']:,} refused "
                f"({result.get('error')}: {result.get('reason')})",
            )
        return True

    async def _play(self, round_id: str, mistake: str | None) -> None:
        """Cards out of the shoe when the table asks for one, decisions when a punter or
        the banker is awaited, and the dealer's one mistake, if this round has one."""
        waiting_for: str | None = None
        stray = mistake == "card_not_owed"
        idle_since = time.monotonic()
        while True:
            summary = await self.summary()
            rnd = summary["round"]
            if rnd is None or rnd["round_id"] != round_id or rnd["phase"] in ("settled", "voided"):
                return
            nxt = rnd["next"] or {}
            if summary["paused"]:  # the supervisor (bot or person) applies the procedure
                await asyncio.sleep(0.1)
                idle_since = time.monotonic()
                continue
            if nxt.get("kind") == "card":
                await self.dealer.pull()  # out of the virtual shoe, read by the reader
                self.report.cards_pulled += 1
                idle_since = time.monotonic()
                continue
            turn = rnd["turn"]
            if turn is None:
                if time.monotonic() - idle_since > 60:
                    raise DemoError(f"round {round_id} awaits neither a card nor a decision")
                await asyncio.sleep(0.05)
                continue
            idle_since = time.monotonic()
            if stray:
                stray = False
                await self.dealer.card_not_owed(round_id)
                self.report.cards_pulled += 1
                continue
            actor = turn["actors"][0]
            key = f"{turn['clock']}:{actor}:{len(rnd['cards'])}"
            if waiting_for == key:  # letting this clock run out: the service plays it
                await asyncio.sleep(0.1)
                continue
            legal = list(turn["legal_actions"].get(actor, []))
            move = self._choose(actor, legal, rnd)
            if move is None:
                waiting_for = key
                self.report.timeouts += 1
                who = "the banker" if actor == "banker" else actor.replace(":", " ")
                self.note("players", f"{who} looks away: the {turn['seconds']:g} s timer runs out")
                continue
            account = self._account(actor)
            body = {"actor": actor, "action": move["action"], "account": account}
            for extra in ("hand", "target"):
                if move.get(extra) is not None:
                    body[extra] = move[extra]
            # the house banker's published move is the dealer's to confirm (the policy
            # refuses it from an operator); a player's, and a seated banker's, the operator's
            house = actor == "banker" and not self.seated_bank
            try:
                await (self.dealer_api if house else self.op).post(
                    f"/tables/{self.table}/actions", body
                )
            except ApiError as exc:
                if exc.code in ("not_your_turn", "wrong_phase", "table_paused"):
                    continue  # the clock ran out first, or an incident paused the table
                raise
            if move["action"] == "leave":
                if actor == "banker":
                    self.report.banker_leaves += 1
                    self.held_for = 0
                    self.note("players", "the banker has held the bank long enough: leaves")
                else:
                    self.report.leaves += 1
                    self.note("players", f"{actor.replace(':', ' ')} gets up and leaves mid-round")

    def _account(self, actor: str) -> str:
        if actor == "banker":
            return self.holder[1] if self.holder is not None else "banker"
        return self.players[int(actor.partition(":")[2])]

    def _choose(
        self, actor: str, legal: list[dict[str, Any]], rnd: dict[str, Any]
    ) -> dict[str, Any] | None:
        if actor == "banker" and not self.seated_bank:
            return legal[0] if legal else None  # the dealer confirms the house's one move
        if actor == "banker" and self.held_for >= BANK_TERM:
            # the banker has held the bank long enough: it leaves at its turn (the hole
            # card is up by then, so the rules play its hand out) and the bank passes
            return {"actor": "banker", "action": "leave"}
        if not legal or self.rng.random() < 0.15:
            return None  # a timeout
        if actor != "banker" and self.rng.random() < 0.04:
            leave = [m for m in legal if m["action"] == "leave"]
            if leave:
                return leave[0]
        total = self._total(actor, rnd)
        moves = {m["action"]: m for m in legal if m["action"] != "leave"}
        for wish in ("hit", "stand") if total is not None and total < 17 else ("stand", "hit"):
            if wish in moves:
                if (
                    wish == "hit"
                    and "double" in moves
                    and total in (10, 11)
                    and self.rng.random() < 0.5
                ):
                    return moves["double"]
                return moves[wish]
        return self.rng.choice(list(moves.values())) if moves else None

    @staticmethod
    def _total(actor: str, rnd: dict[str, Any]) -> int | None:
        view = rnd.get("dealer_view") or {}
        total: int | None
        if actor == "banker":
            total = view.get("banker", {}).get("total")
            return total
        seat = int(actor.partition(":")[2])
        for hand in view.get("hands", []):
            if hand["seat"] == seat and "result" not in hand:
                total = hand.get("total")
                return total
        return None

    async def _close(self, round_id: str) -> None:
        """The books of the round, checked against ``livetable settle xidach``."""
        detail = await self.sup.get(f"/rounds/{round_id}")
        if detail.get("phase") == "voided":
            self.report.rounds_voided += 1
            return
        paid: dict[str, int] = {}
        for bet in detail["bets"]:
            parent = bet["bet_id"].partition("~")[0]
            paid[parent] = paid.get(parent, 0) + bet["returned"]
            if bet.get("type") == "bank":  # the banker's balance: not a punter's stake
                self.report.bank_net += bet["returned"] - bet["stake"]
                continue
            self.report.staked += bet["stake"]
            self.report.returned += bet["returned"]
        self.report.rounds_settled += 1
        settle_input = detail.get("settle_input")
        if settle_input is None:
            return
        offline = handle_line(dict(settle_input), None)  # `livetable settle xidach`
        expected = {b["id"]: b["returned"] for b in offline["bets"]}
        if offline.get("bank") is not None:
            bank_id = settle_input["banker"]["id"]
            expected[bank_id] = offline["bank"]["balance_after"]
        if expected == paid:
            self.report.settle_checks_passed += 1
            self.log.note(
                "demo", "settlement = livetable settle xidach on the round's settle_input", round_id
            )
        else:
            self.report.settle_checks_failed += 1
            self.report.problems.append(f"{round_id}: live {paid} != settle {expected}")
            self.log.note("demo", f"MISMATCH live {paid} != settle {expected}", round_id)


async def run_xidach_demo(
    options: XiDachDemoOptions, console: Console, *, stop: asyncio.Event | None = None
) -> XiDachReport:
    """Start the API (whose table opens the serial reader on the shoe's device path), the
    virtual shoe on its pseudo-terminal, the stream follower and the bots; play
    ``options.rounds`` rounds (0: until ``stop`` is set); stop in the reverse order (a
    round left half-played is voided, every stake refunded) and sign a checkpoint."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    started = time.monotonic()
    stop = stop or asyncio.Event()
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(10**6)
    report = XiDachReport(seed, options.profile)
    if options.reader not in READERS:
        raise DemoError(f"unknown reader {options.reader!r}; expected one of {', '.join(READERS)}")
    if options.supervisor not in SUPERVISORS:
        raise DemoError(f"--supervisor is one of {', '.join(SUPERVISORS)}")
    seats = load_profile(options.profile).max_punters
    if not 1 <= options.punters <= seats:
        raise DemoError(
            f"the '{options.profile}' profile seats 1 to {seats} punters; "
            f"{options.punters} asked for"
        )
    sock = _bind(options.host, options.port)
    shoes = _Shoes(seed, options.heartbeat)
    settings = Settings(data_dir=options.data_dir) if options.data_dir else Settings()
    runtime: Runtime | None = None
    camera: Any = None
    try:
        camera_config = None
        if options.reader != "serial":
            camera, camera_config = await asyncio.to_thread(
                demo_camera,
                options.camera_deck,
                demo_table_id(options),
                settings,
                seed,
                options.camera_window_seconds,
            )
            shoes.observers.append(camera.card_dealt)
        config = table_config(options, shoes.path, camera_config)
        _ = config.rules.edge  # the exact edge (seconds for a custom profile), before the shoe
        runtime = await asyncio.to_thread(Runtime.from_settings, settings, upgrade=True)
        try:
            await _serve_and_play(
                runtime, settings, options, config, console, report, shoes, sock, stop
            )
        finally:
            size = await asyncio.to_thread(_seal, runtime)
            if size is not None:
                console.print(f"audit log sealed: signed checkpoint at event {size}")
    finally:
        if runtime is not None:
            runtime.close()
        sock.close()
        shoes.stop()
        if camera is not None:
            camera.stop()
    report.seconds = time.monotonic() - started
    return report


class _Shoes:
    """The virtual shoe behind a stable device path (a symlink to its pseudo-terminal).

    A process elsewhere on the machine may hold a device path of its own that still
    points at an old ``/dev/pts/N`` (a server left running after its shoe was killed):
    its reader reopens that name and locks whatever terminal the kernel hands the number
    to next, so this table's reader can never lock it. Such a terminal is kept open (its
    number is not handed out again while we hold it) and a fresh one put behind the same
    device path, which the table's reader is retrying."""

    def __init__(self, seed: int, heartbeat: float) -> None:
        self.seed, self.heartbeat = seed, heartbeat
        self._dir = tempfile.mkdtemp(prefix="livetable-xd-shoe-")
        self.path = str(Path(self._dir) / "shoe")
        self.passed_over: list[VirtualShoe] = []
        self.device: VirtualShoe | None = None
        # Told of every card slid out of whichever shoe is current (a camera over it).
        self.observers: list[Callable[[str], None]] = []

    def start(self) -> VirtualShoe:
        if self.device is not None:
            self.passed_over.append(self.device)
        self.device = VirtualShoe(
            "framed",
            decks=1,
            seed=self.seed,
            heartbeat=self.heartbeat,
            cut_depth=0,
            link_path=self.path,
        )
        self.device.observers.extend(self.observers)
        return self.device.start()

    def locked_elsewhere(self) -> bool:
        """Someone else holds the current terminal's lock (our reader is not on it)."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        except OSError:
            return True
        finally:
            os.close(fd)

    def stop(self) -> None:
        for device in [self.device, *self.passed_over]:
            if device is not None:
                device.stop()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(self._dir)


async def _shoe_online(shoes: _Shoes, table: Table, api: ApiClient) -> VirtualShoe:
    """Wait for the table's reader to come online on the shoe (started before the API),
    putting a fresh terminal behind the device path if another process took this one."""
    device = shoes.device or shoes.start()
    for _ in range(4):
        try:
            await _reader_online(table, api, timeout=8.0)
            return device
        except DemoError:
            if not shoes.locked_elsewhere():
                raise
            log.warning("demo.shoe_terminal_taken", pty=device.pty_path)
            device = shoes.start()
    raise DemoError("every pseudo-terminal for the shoe was taken by another process")


async def _serve_and_play(
    runtime: Runtime,
    settings: Settings,
    options: XiDachDemoOptions,
    config: TableConfig,
    console: Console,
    report: XiDachReport,
    shoes: _Shoes,
    sock: Any,
    stop: asyncio.Event,
) -> None:
    principals = await asyncio.to_thread(
        ensure_principals, runtime, settings.data_dir, config.table_id
    )
    with runtime.sessions() as session:
        session_start_seq = EventStore.head(session)[0]
        played_before = rounds_played(session, config.table_id)
    app = build_app(runtime, [config])
    server = _Server(
        uvicorn.Config(app, log_level="warning", access_log=False, log_config=None, lifespan="on")
    )
    shoes.start()  # the shoe first: the table's reader opens it as the API starts
    task = asyncio.create_task(server.serve(sockets=[sock]), name="api-server")
    base_url = f"http://{options.host}:{sock.getsockname()[1]}"
    sup, op, dealer_api = (
        ApiClient(base_url, principals[role].token) for role in ("supervisor", "operator", "dealer")
    )
    feed = TableFeed(
        base_url.replace("http://", "ws://"),
        config.table_id,
        principals["supervisor"].token,
        after_seq=session_start_seq,
    )
    roundlog = RoundLog(console, rounds_before=played_before)
    supervisor_task: asyncio.Task[None] | None = None
    supervisor: SupervisorBot | None = None
    try:
        await _wait_started(server, task)
        table = Table(config.table_id, feed, roundlog)
        _xidach_banner(roundlog, options, config, base_url, settings, report.seed)
        _console_banner(roundlog, base_url, config.table_id, principals)
        supervisor = SupervisorBot(sup, table, human=options.supervisor == "human")
        feed.listeners.append(roundlog.on_event)
        feed.listeners.append(supervisor.on_event)
        feed.start()
        await asyncio.wait_for(feed.connected.wait(), 15)
        await sign_in_dealer(dealer_api, config.table_id)
        device = await _shoe_online(shoes, table, sup)
        decks = options.rounds + 2 if options.rounds else SHOES_UNBOUNDED * 10
        stack = ShoeStack(device, decks=1, seed=report.seed, cut_after=None, shoes=decks)
        await supervisor.recover()
        supervisor_task = asyncio.create_task(supervisor.run(), name="supervisor")
        # The Xì Dách bots place bets themselves: the dealer bot works the shoe.
        dealer = DealerBot(
            dealer_api, table, stack, supervisor, cast(PlayerBots, None), random.Random(0), 0
        )
        rng = random.Random(report.seed)
        demo = XiDachDemo(options, roundlog, sup, op, rng, report, dealer, dealer_api)
        bag = MistakeBag(options.mistakes, random.Random(rng.random()), MISTAKES_BY_GAME["xidach"])
        await demo.prepare()

        async def rounds() -> None:
            played = 0
            while options.rounds == 0 or played < options.rounds:
                # A mistake drawn but not made (the cut card came out instead of the
                # exposed card, betting closed before a second one) is owed.
                mistake, made = bag.draw(), len(dealer.mistakes)
                await demo.round(mistake)
                bag.made(mistake, (k for _r, k in dealer.mistakes[made:]))
                played += 1

        play = asyncio.create_task(rounds(), name="rounds")
        stopping = asyncio.create_task(stop.wait(), name="stop")
        done, _ = await asyncio.wait({play, stopping, task}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        error: BaseException | None = None
        if play in done:
            error = play.exception()
            if isinstance(error, SupplyExhausted):
                roundlog.banner(f"stopping: {error}")
                error = None
        else:
            report.stopped_by = "interrupt" if stop.is_set() else "server"
            play.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await play
        report.mistakes = list(dealer.mistakes)
        if not task.done():
            # Whatever stopped the bots, no stake stays open: the round in play is voided.
            report.interrupted_round_voided = await supervisor.void_active(
                "demo stopped mid-round: every stake refunded"
                if error is None
                else f"demo failed mid-round ({type(error).__name__}): every stake refunded"
            )
            await asyncio.sleep(0.2)  # let the log print the void's events
            if report.interrupted_round_voided:
                report.rounds_voided += 1
        report.totals = roundlog.totals
        if error is not None:
            raise error
    finally:
        if supervisor_task is not None:
            supervisor_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await supervisor_task
        await feed.close()
        for client in (sup, op, dealer_api):
            await client.close()
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(task, 15)


def _xidach_banner(
    roundlog: RoundLog,
    options: XiDachDemoOptions,
    config: TableConfig,
    base_url: str,
    settings: Settings,
    seed: int,
) -> None:
    """What runs where, as the baccarat and blackjack demos say it."""
    ws = base_url.replace("http://", "ws://")
    table_id = config.table_id
    bank = "a seated banker" if options.profile == "room" else "the house banks"
    roundlog.banner(
        f"livetable demo · Xì Dách '{options.profile}' · table {table_id} · seed {seed} "
        "· clock in UTC"
    )
    roundlog.banner(f"API     {base_url}  (OpenAPI docs at {base_url}/docs)")
    roundlog.banner(f"stream  {ws}/api/v1/public/tables/{table_id}/stream")
    if options.metrics_url is not None:
        roundlog.banner(f"metrics {options.metrics_url}  (Prometheus)")
    roundlog.banner(
        f"shoe    virtual framed shoe, {read_by_text(options.reader, options.camera_deck)}; "
        "one deck, a freshly shuffled deck every round"
    )
    roundlog.banner(
        f"data    {settings.resolved_database_url}; bot tokens in {settings.data_dir / TOKENS_FILE}"
    )
    if options.log_file is not None:
        roundlog.banner(f"log     {options.log_file} (warnings and errors also on stderr)")
    edge = config.rules.edge
    roundlog.banner(
        f"terms   exact house edge {edge.house_edge:+.4%} (one punter against the house, "
        f"automatic play); {bank}; stakes {MIN_BET:,}..{MAX_BET:,}"
    )
    timers = (
        f"every timer {options.timer_seconds} s"
        if options.timer_seconds
        else "the profile's own timers"
    )
    supervisor = (
        "incidents left to you at the supervisor console"
        if options.supervisor == "human"
        else "the supervisor bot resolves incidents"
    )
    roundlog.banner(
        f"rounds  {options.rounds or 'until Ctrl-C'} · betting {options.betting_seconds:g} s · "
        f"{plural(options.punters, 'punter')} · mistakes {options.mistakes:.0%} of rounds · "
        f"{timers} · {supervisor}"
    )
