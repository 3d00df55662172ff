"""``livetable demo --game xidach --profile P``: a live Xì Dách table with bots.

Everything runs here, through the real paths: SQLite in the data folder, the table
service and its HTTP API on http://HOST:PORT, decisions through
``POST /tables/{t}/actions``, timers as recorded deadlines run by the service. Bots:

- the dealer shuffles a fresh 52-card deck for every round (the table ends the deck
  after each one-deck round) and enters each card the table asks for through the
  supervisor's card entry (this demo does not drive the virtual serial shoe); as the
  house banker it confirms the one move the published policy allows;
- punters bet, some with the privacy flag (``forced-draw``), some skip a round (``room``
  removes them from their seat), some let their timer run out (the rules play for
  them), some leave mid-round (losing the stake); they sit down again next round;
- in ``room`` a seated banker commits a bank of its whole balance every round and
  decides within the rules (hit below 17, stand from 17), sometimes timing out.

After every round the log shows bets, cards, decisions and results, and checks the live
settlement against ``livetable settle xidach`` on the round's ``settle_input``.
Timers: the profile's own, or ``--timer-seconds N`` for every timer so timeouts show
quickly (the rules are otherwise the shipped profile's).
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import uvicorn
from rich.console import Console

from table_service.config import Settings
from table_service.demo.client import ApiClient, ApiError
from table_service.demo.credentials import ensure_principals
from table_service.demo.run import DemoError, _bind, _Server, _wait_started
from table_service.rules.cards import standard_deck
from table_service.rules.xidach.profile import PROFILE_NAMES
from table_service.rules.xidach.replay import handle_line
from table_service.runtime import Runtime
from table_service.table.api import build_app
from table_service.table.config import StakeLimits, TableConfig

MIN_BET, MAX_BET = 100, 2000
BANK_FUNDS = 200_000  # the seated banker's account: comfortably 5x the maximum bet


@dataclass(frozen=True)
class XiDachDemoOptions:
    profile: str = "room"
    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path | None = None
    rounds: int = 10
    seed: int | None = None
    punters: int = 4
    timer_seconds: int | None = 2
    betting_seconds: float = 2.0


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
    problems: list[str] = field(default_factory=list)


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


def table_config(options: XiDachDemoOptions) -> TableConfig:
    seated = options.profile == "room"
    return TableConfig(
        table_id=f"xd-{options.profile}",
        game="xidach",
        betting_seconds=options.betting_seconds,
        game_rules={
            "profile_toml": demo_profile_toml(options.profile, options.timer_seconds),
            "banker": "seated" if seated else "house",
        },
        limits=StakeLimits(min_stake=MIN_BET, max_stake=MAX_BET),
        bet_limits={"bank": StakeLimits(min_stake=MIN_BET, max_stake=10**9)},
    )


class XiDachDemo:
    def __init__(
        self,
        options: XiDachDemoOptions,
        console: Console,
        supervisor: ApiClient,
        operator: ApiClient,
        rng: random.Random,
        report: XiDachReport,
    ) -> None:
        self.o = options
        self.console = console
        self.sup = supervisor
        self.op = operator
        self.rng = rng
        self.report = report
        self.table = f"xd-{options.profile}"
        self.seated_bank = options.profile == "room"
        self.punters = {n: f"punter{n}" for n in range(1, options.punters + 1)}
        self.banker = "banker9"
        self.bank_seat = options.punters + 1

    # -- set-up ------------------------------------------------------------------------------
    async def prepare(self) -> None:
        accounts = list(self.punters.values()) + ([self.banker] if self.seated_bank else [])
        for account in accounts:
            amount = BANK_FUNDS if account == self.banker else 50_000
            await self.op.post(
                f"/accounts/{account}/credit",
                {"amount": amount, "reference": f"demo {account} {self.report.seed}"},
            )

    async def summary(self) -> dict[str, Any]:
        return await self.sup.get(f"/tables/{self.table}")  # type: ignore[no-any-return]

    async def _seat_everyone(self, summary: dict[str, Any]) -> None:
        taken = {s["seat"]: s["account"] for s in summary["seats"]}
        wanted = dict(self.punters)
        if self.seated_bank:
            wanted[self.bank_seat] = self.banker
        for seat, account in wanted.items():
            if seat not in taken:
                await self.op.post(
                    f"/tables/{self.table}/seats", {"seat": seat, "account": account}
                )

    # -- one round ---------------------------------------------------------------------------
    async def round(self, number: int) -> None:
        summary = await self.summary()
        if summary["shoe"] is None:  # a fresh deck for every round
            await self.sup.post(f"/tables/{self.table}/shoe")
        await self._seat_everyone(summary)
        opened = await self.sup.post(f"/tables/{self.table}/betting/open")
        round_id = opened["round_id"]
        deck = [c.code for c in standard_deck()]
        self.rng.shuffle(deck)
        lines = [f"[bold]round {number}[/bold] {round_id}  (deck shuffled, 52 cards)"]
        bets = []
        for seat, account in self.punters.items():
            if self.rng.random() < 0.1:
                removed = " (removed from the seat)" if self.o.profile == "room" else ""
                lines.append(f"  seat {seat} {account}: no bet this round{removed}")
                continue
            kind = "main"
            if self.o.profile == "forced-draw" and self.rng.random() < 0.4:
                kind = "hidden"
            stake = self.rng.randrange(MIN_BET, MAX_BET + 1, 100)
            bets.append(
                {
                    "key": f"{round_id}-{seat}",
                    "account": account,
                    "type": kind,
                    "stake": stake,
                    "seat": seat,
                }
            )
        if self.seated_bank:
            balance = (await self.op.get(f"/accounts/{self.banker}"))["balance"]
            bets.append(
                {
                    "key": f"{round_id}-bank",
                    "account": self.banker,
                    "type": "bank",
                    "stake": balance,
                    "seat": self.bank_seat,
                }
            )
        answer = await self.op.post(f"/tables/{self.table}/bets", {"bets": bets})
        results = answer["results"]
        for bet, result in zip(bets, results, strict=True):
            status = (
                result["status"]
                if result["status"] == "placed"
                else f"refused ({result.get('error')})"
            )
            lines.append(
                f"  seat {bet['seat']} {bet['account']}: {bet['type']} {bet['stake']:,} {status}"
            )
        if answer.get("betting_closed"):
            lines.append("  betting closed: every seated player has bet")
        else:
            await self.sup.post(f"/tables/{self.table}/betting/close")
        decisions = await self._play(deck, lines)
        await self._close(round_id, lines, decisions)
        self.console.print("\n".join(lines))

    async def _play(self, deck: list[str], lines: list[str]) -> list[str]:
        decisions: list[str] = []
        waiting_for: str | None = None
        for _ in range(2000):
            summary = await self.summary()
            rnd = summary["round"]
            if rnd is None or rnd["phase"] in ("settled", "voided"):
                return decisions
            nxt = rnd["next"] or {}
            if summary["paused"]:
                raise DemoError(f"the table paused: {summary['incidents']}")
            if nxt.get("kind") == "card":
                await self.sup.post(f"/tables/{self.table}/cards", {"card": deck.pop()})
                continue
            turn = rnd["turn"]
            if turn is None:
                await asyncio.sleep(0.05)
                continue
            actor = turn["actors"][0]
            key = f"{turn['clock']}:{actor}:{len(rnd['cards'])}"
            if waiting_for == key:  # letting this clock run out: the service plays it
                await asyncio.sleep(0.1)
                continue
            legal = [m for m in turn["legal_actions"].get(actor, [])]
            move = self._choose(actor, legal, rnd)
            if move is None:
                waiting_for = key
                self.report.timeouts += 1
                decisions.append(f"{actor}: lets the {turn['seconds']:.0f} s timer run out")
                continue
            account = self._account(actor)
            body = {"actor": actor, "action": move["action"], "account": account}
            for extra in ("hand", "target"):
                if move.get(extra) is not None:
                    body[extra] = move[extra]
            try:
                await self.op.post(f"/tables/{self.table}/actions", body)
            except ApiError as exc:
                if exc.code in ("not_your_turn", "wrong_phase"):
                    continue  # the clock ran out first
                raise
            if move["action"] == "leave":
                self.report.leaves += 1
            target = f" {move['target']}" if move.get("target") else ""
            decisions.append(f"{actor}: {move['action']}{target}")
        raise DemoError("the round did not finish")

    def _account(self, actor: str) -> str:
        if actor == "banker":
            return self.banker if self.seated_bank else "banker"
        return self.punters[int(actor.partition(":")[2])]

    def _choose(
        self, actor: str, legal: list[dict[str, Any]], rnd: dict[str, Any]
    ) -> dict[str, Any] | None:
        if actor == "banker" and not self.seated_bank:
            return legal[0] if legal else None  # the dealer confirms the house's one move
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
        if actor == "banker":
            return view.get("banker", {}).get("total")
        seat = int(actor.partition(":")[2])
        for hand in view.get("hands", []):
            if hand["seat"] == seat and "result" not in hand:
                return hand.get("total")
        return None

    async def _close(self, round_id: str, lines: list[str], decisions: list[str]) -> None:
        detail = await self.sup.get(f"/rounds/{round_id}")
        summary = await self.summary()
        outcome = (summary["round"] or {}).get("outcome") or {}
        if decisions:
            lines.append("  decisions: " + "; ".join(decisions))
        if detail.get("phase") == "voided" or (summary["round"] or {}).get("phase") == "voided":
            self.report.rounds_voided += 1
            lines.append("  [yellow]voided: every stake refunded[/yellow]")
            return
        banker = outcome.get("banker") or {}
        lines.append(
            f"  banker ({banker.get('seat')}): {' '.join(banker.get('cards', []))} "
            f"= {banker.get('classification')} {banker.get('total')}"
        )
        for hand in outcome.get("hands", []):
            cards = " ".join(hand["cards"])
            lines.append(
                f"  seat {hand['seat']} hand {hand['hand']}: {cards} = {hand['classification']} "
                f"{hand['total']} -> {hand['result']} ({hand['settled_by']})"
            )
        paid: dict[str, int] = {}
        for bet in detail["bets"]:
            parent = bet["bet_id"].partition("~")[0]
            paid[parent] = paid.get(parent, 0) + bet["returned"]
            self.report.staked += bet["stake"]
            self.report.returned += bet["returned"]
            if bet.get("type") == "bank":
                self.report.bank_net += bet["returned"] - bet["stake"]
                lines.append(f"  bank: {bet['stake']:,} in, {bet['returned']:,} out")
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
            lines.append(
                "  [green]settlement = livetable settle xidach on the round's settle_input[/green]"
            )
        else:
            self.report.settle_checks_failed += 1
            self.report.problems.append(f"{round_id}: live {paid} != settle {expected}")
            lines.append(f"  [red]MISMATCH live {paid} != settle {expected}[/red]")


async def run_xidach_demo(options: XiDachDemoOptions, console: Console) -> XiDachReport:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(10**6)
    report = XiDachReport(seed, options.profile)
    config = table_config(options)
    sock = _bind(options.host, options.port)
    settings = Settings(data_dir=options.data_dir) if options.data_dir else Settings()
    runtime = await asyncio.to_thread(Runtime.from_settings, settings, upgrade=True)
    try:
        principals = await asyncio.to_thread(
            ensure_principals, runtime, settings.data_dir, config.table_id
        )
        app = build_app(runtime, [config])
        server = _Server(
            uvicorn.Config(
                app, log_level="warning", access_log=False, log_config=None, lifespan="on"
            )
        )
        task = asyncio.create_task(server.serve(sockets=[sock]), name="api-server")
        port = sock.getsockname()[1]
        base_url = f"http://{options.host}:{port}"
        sup = ApiClient(base_url, principals["supervisor"].token)
        op = ApiClient(base_url, principals["operator"].token)
        try:
            await _wait_started(server, task)
            terms = (await sup.get(f"/tables/{config.table_id}")).get("terms")
            console.rule(f"[bold]Xì Dách '{options.profile}' on {base_url} (seed {seed})")
            edge = config.rules.edge
            console.print(
                f"exact house edge of these terms: {edge.house_edge:+.4%} "
                f"(one punter against the house, automatic play){' ' + str(terms) if terms else ''}"
            )
            demo = XiDachDemo(options, console, sup, op, random.Random(seed), report)
            await demo.prepare()
            for number in range(1, options.rounds + 1):
                await demo.round(number)
        finally:
            await sup.close()
            await op.close()
            server.should_exit = True
            await task
    finally:
        runtime.close()
        sock.close()
    return report
