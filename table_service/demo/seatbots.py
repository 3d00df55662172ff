"""The demo's players at a seat game (live blackjack): seated players, bet-behind players,
and the decisions they take.

Every action is the operator API a player's client would call: ``POST /seats`` seats a
player, ``POST /bets`` places main, pair and behind bets, ``POST /actions`` answers a
decision. A player bot knows what its screen shows — the public view's hands, the
dealer's up card, whose turn it is and the legal moves — and plays basic strategy
(``strategy.basic_move``); now and then it follows a hunch instead (hit or stand the
other way on a middling total) and one decision in sixteen it looks away and lets its
timer run out, so the table's auto-play is seen. Bet-behind players follow a split or double the
strategy would make, decline the others, or let the 5 s window close (declined).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

import structlog

from table_service.demo.bots import STAKES, PlayerStats, Table, top_up, welcome
from table_service.demo.client import ApiClient, ApiError
from table_service.demo.feed import Event
from table_service.demo.strategy import basic_move, deviation, hand_value

log = structlog.get_logger(__name__)

LET_TIMER_RUN = 16
"""One decision in every 16 (at a random place in each run of 16) is left to the timer,
so the rules' auto-play is seen in every demo of a few rounds, never in bursts."""
HUNCH = 0.05
"""Share of decisions a player takes on a hunch rather than by basic strategy."""


@dataclass
class SeatStats(PlayerStats):
    decisions: int = 0
    timers_left: int = 0
    follow_answers: int = 0
    seated: int = 0
    actions_refused: list[str] = field(default_factory=list)


class SeatPlayers:
    """Seated players (one per seat, seats 1..n) and bet-behind players."""

    def __init__(
        self, api: ApiClient, table: Table, count: int, rng: random.Random, behind: int = 1
    ) -> None:
        self.api = api
        self.table = table
        self.t = table.table_id
        self.seats = {n: f"demo-player-{n}" for n in range(1, count + 1)}
        self.behind = [f"demo-behind-{i}" for i in range(1, behind + 1)]
        self.accounts = [*self.seats.values(), *self.behind]
        self.rng = rng
        self.stats = SeatStats()
        self._wake = asyncio.Event()
        self._handled: set[tuple[str, str, str]] = set()
        self.behind_bets: dict[str, str] = {}  # bet id -> the bet-behind player's account
        self._away: list[bool] = []

    async def fund(self) -> None:
        self.stats.credited += await welcome(self.api, self.accounts)

    async def prepare_round(self) -> None:
        await self.take_seats()

    async def take_seats(self) -> None:
        """Seat every player whose seat is free (a seat released by the rules is taken
        again by its player for the next round)."""
        view = await self.table.view(self.api)
        taken = {s["seat"]: s["account"] for s in view.data.get("seats", [])}
        for seat, account in self.seats.items():
            if taken.get(seat) == account:
                continue
            if seat in taken or account in taken.values():
                continue
            try:
                await self.api.post(f"/tables/{self.t}/seats", {"seat": seat, "account": account})
            except ApiError as exc:
                self.table.log.note("players", f"{account} cannot sit at seat {seat}: {exc.reason}")
                continue
            self.stats.seated += 1
            self.table.log.note("players", f"{account} sits down at seat {seat}")

    async def _top_up(self, account: str, round_id: str) -> None:
        self.stats.credited += await top_up(self.api, account, round_id)

    async def bet_round(self, round_id: str, window: float) -> None:
        """Main bets first (a pair or behind bet needs a confirmed main bet), then the rest."""
        await asyncio.sleep(self.rng.uniform(0.05, 0.2) * window)
        mains = []
        for seat, account in self.seats.items():
            if self.rng.random() < 0.85:
                await self._top_up(account, round_id)
                mains.append(self._bet(round_id, account, "main", seat, "main"))
        placed_seats = [s for s in await asyncio.gather(*mains) if s is not None]
        await asyncio.sleep(self.rng.uniform(0.05, 0.2) * window)
        extra = []
        for seat in placed_seats:
            if self.rng.random() < 0.3:
                extra.append(self._bet(round_id, self.seats[seat], "pair", seat, "pair"))
        for account in self.behind:
            await self._top_up(account, round_id)
            for seat in self.rng.sample(placed_seats, k=min(len(placed_seats), 2)):
                extra.append(self._bet(round_id, account, "behind", seat, f"behind{seat}"))
        await asyncio.gather(*extra)

    async def _bet(
        self, round_id: str, account: str, bet_type: str, seat: int, tag: str
    ) -> int | None:
        bet = {
            "key": f"{round_id}/{account}/{tag}",
            "account": account,
            "type": bet_type,
            "stake": self.rng.choice(STAKES),
            "seat": seat,
        }
        self.stats.requests += 1
        try:
            answer = await self.api.post(f"/tables/{self.t}/bets", {"bets": [bet]})
        except ApiError as exc:
            self.stats.refused += 1
            self.table.log.note("players", f"{account}: refused: {exc.reason}", round_id)
            return None
        result = answer["results"][0]
        if result["status"] != "placed":
            self.stats.refused += 1
            self.stats.refusals.append(result.get("error", "refused"))
            self.table.log.note(
                "players",
                f"{account}: {bet_type} on seat {seat} refused ({result.get('reason')})",
                round_id,
            )
            return None
        self.stats.placed += 1
        if bet_type == "behind":
            self.behind_bets[result["bet_id"]] = account
        self.table.log.note(
            "players", f"{account}: {bet_type} {bet['stake']:,} on seat {seat}", round_id
        )
        return seat

    # -- decisions -------------------------------------------------------------------------
    def on_event(self, event: Event) -> None:
        if event["type"] in ("decision_awaited", "action_taken", "incident_resolved"):
            self._wake.set()

    async def run(self) -> None:
        """Answer whatever the table awaits, as the players whose turn it is."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._answer()
            except ApiError as exc:
                log.info("demo.action_refused", code=exc.code, reason=exc.reason)
                self.stats.actions_refused.append(exc.code)
                await asyncio.sleep(0.1)
                self._wake.set()

    async def _answer(self) -> None:
        view = await self.table.view(self.api, at_least_seq=self.table.feed.last_seq)
        rnd = view.round
        if not rnd:
            return
        turn = rnd.get("turn")
        if not turn or view.paused:
            return
        for actor in turn["actors"]:
            key = (rnd["round_id"], turn["clock"], actor)  # clocks are per round
            if key in self._handled:
                continue
            self._handled.add(key)
            moves = turn["legal_actions"].get(actor) or []
            if not moves or self._looks_away():
                self.stats.timers_left += 1
                who = (
                    "bet-behind player" if actor.startswith("behind:") else actor.replace(":", " ")
                )
                self.table.log.note(
                    "players",
                    f"{who} looks away: the {turn['seconds']:g} s timer runs out",
                    rnd["round_id"],
                )
                continue
            move = self._choose(actor, moves, rnd)
            if move is None:
                continue
            await asyncio.sleep(self.rng.uniform(0.05, 0.3))
            await self.api.post(
                f"/tables/{self.t}/actions",
                {
                    "actor": actor,
                    "action": move["action"],
                    "account": self._account(actor, view.data),
                    **({"hand": move["hand"]} if move.get("hand") else {}),
                },
            )
            if actor.startswith("behind:"):
                self.stats.follow_answers += 1
            else:
                self.stats.decisions += 1
            return  # one answer per look: the next event wakes the bot again

    def _looks_away(self) -> bool:
        """Whether this decision is left to the timer (one in each run of LET_TIMER_RUN)."""
        if not self._away:
            self._away = [True] + [False] * (LET_TIMER_RUN - 1)
            self.rng.shuffle(self._away)
        return self._away.pop()

    def _choose(
        self, actor: str, moves: list[dict[str, Any]], rnd: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Basic strategy on what the player sees, now and then a hunch instead."""
        view = rnd.get("view") or {}
        dealer = [c for c in (view.get("dealer") or {}).get("cards", []) if c]
        kind, _, who = actor.partition(":")
        by_action = {m["action"]: m for m in moves}
        if kind == "behind":
            # a follow offer: follow the split or double the strategy would make
            offer = next(
                (
                    o
                    for o in (rnd.get("dealer_view") or {}).get("follow_offers", [])
                    if o.get("actor") == actor
                ),
                None,
            )
            wanted = "decline"
            if offer is not None and dealer:
                cards = self._hand_cards(view, rnd, offer)
                if offer["kind"] == "split" and cards:
                    cards = [cards[0], cards[0]]  # the pair the seat split
                legal = {offer["kind"], "hit", "stand"}
                if cards and basic_move(cards, dealer[0], legal) == offer["kind"]:
                    wanted = "accept"
            return by_action.get(wanted) or moves[0]
        hand_no = next((m.get("hand") for m in moves if m.get("hand")), 1)
        seat = next((s for s in view.get("seats", []) if str(s.get("seat")) == who), None)
        hands = (seat or {}).get("hands") or []
        cards = next((h["cards"] for h in hands if h.get("hand") == hand_no), [])
        if not cards or not dealer:
            return by_action.get("stand") or moves[0]
        legal = set(by_action)
        move = basic_move(cards, dealer[0], legal)
        if self.rng.random() < HUNCH:
            move = deviation(move, legal, hand_value(cards)[0])
        return by_action.get(move) if move else None

    @staticmethod
    def _hand_cards(view: dict[str, Any], rnd: dict[str, Any], offer: dict[str, Any]) -> list[str]:
        """The cards of the hand a follow offer is about (its seat from the offer's clock)."""
        clock = str((rnd.get("turn") or {}).get("clock", ""))
        seat = clock.rsplit(":", 1)[-1].partition("H")[0].lstrip("S")
        for s in view.get("seats", []):
            if str(s.get("seat")) == seat:
                for h in s.get("hands", []):
                    if h.get("hand") == offer.get("hand"):
                        return list(h.get("cards", []))
        return []

    def _account(self, actor: str, summary: dict[str, Any]) -> str:
        kind, _, who = actor.partition(":")
        if kind == "seat":
            return self.seats[int(who)]
        # a follow offer: the bet-behind player who placed that bet
        return self.behind_bets.get(who, self.behind[0])
