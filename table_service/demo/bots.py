"""The demo's people: a dealer who sometimes makes mistakes, a supervisor, and players.

Every action goes through the real paths: cards leave the virtual shoe and reach the
table only through the serial reader; dealing, incidents, resolutions and bets are HTTP
requests with each bot's own token. The bots know what a person at the table would know
(the dealer knows which card slipped past the reader) and nothing the table did not say.

The dealer's mistakes are the ones the rules document has procedures for:

* ``exposed_card``: a card comes out while betting is open. The table locks the shoe
  (LCK) when betting opens; a real shoe's lock is a deal light and cannot stop a hand, so
  for that one pull the virtual shoe is told to ignore its lock (``honours_lock=False``).
  The reader reports the card; the table sets it aside (rule 4, one card).
* ``double_exposure``: two cards come out that way: the table voids the round, refunds
  every stake, and ends the shoe (rule 4).
* ``missed_scan``: a card leaves the shoe without passing the reader
  (``deal(scan=False)``); the dealer reports it (rule 6) and the supervisor enters it at
  its index, which puts the cards back in their shoe-order positions.
* ``unneeded_card``: one card more than the round took, pulled after it settled; the
  table sets it aside as the next round's first card (rule 3).
* ``card_not_owed`` (blackjack, Xì Dách): a card pulled while a player's decision is
  awaited; the table sets it aside behind a blocking dealing incident; the supervisor
  confirms the dealing error: the round is void, every stake refunded, and a new shoe
  comes (seed 000; Xì Dách follows live blackjack's procedure). Neither game puts a card
  right by re-arranging, so their dealers make no missed-scan mistake.

The cut card is not a mistake: it comes out of the shoe where it was placed.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from hardware_sim.virtual_shoe import CUT, ShoeLockedError
from table_service.demo.client import ApiClient, ApiError
from table_service.demo.feed import Event, TableFeed
from table_service.demo.roundlog import RoundLog, card_text
from table_service.demo.shoestack import Pull, ShoeStack

log = structlog.get_logger(__name__)

MISTAKE_KINDS = ("exposed_card", "missed_scan", "unneeded_card", "double_exposure")
MISTAKES_BY_GAME = {
    "baccarat": MISTAKE_KINDS,
    "blackjack": ("exposed_card", "card_not_owed", "double_exposure"),
    "xidach": ("exposed_card", "card_not_owed", "double_exposure"),
}
SUPERVISORS = ("bot", "human")
"""Who resolves the demo's incidents (``--supervisor``): the bot, or a person at the
supervisor console (the bot then only inserts shoes)."""
HUMAN_PATIENCE = 24 * 3600.0
"""Seconds the bots wait for a person to resolve an incident (a day: as long as it takes)."""
READER_TIMEOUT = 10.0
"""Seconds a card may take from the shoe, over the serial line, to a committed event."""
LOCK_WAIT = 5.0
"""Seconds the dealer waits for the deal light (the table's ULK) before giving up."""

CARD_EVENTS = ("card_burnt", "card_dealt", "card_set_aside")


def plain(code: str) -> str:
    return card_text(code).plain


class MistakeBag:
    """Whether the dealer errs this round, and how.

    With probability ``rate`` a round gets one mistake, drawn from a seeded bag holding
    each kind once (refilled when empty), so every kind comes up before any repeats.
    """

    def __init__(
        self, rate: float, rng: random.Random, kinds: tuple[str, ...] = MISTAKE_KINDS
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"mistake rate must be within 0..1, got {rate}")
        self.rate = rate
        self.rng = rng
        self.kinds = kinds
        self._bag: list[str] = []

    def draw(self) -> str | None:
        if self.rate == 0 or self.rng.random() >= self.rate:
            return None
        if not self._bag:
            self._bag = list(self.kinds)
            self.rng.shuffle(self._bag)
        return self._bag.pop()

    def owe(self, kind: str) -> None:
        """``kind`` was drawn but could not be made (the shoe was ending when an extra card was
        due, betting closed before a card could slip out): it is drawn again next, so that a
        run with a mistake every round still shows every kind however the timing falls."""
        self._bag.append(kind)

    def made(self, drawn: str | None, mistakes: Iterable[str]) -> None:
        """The round drawn ``drawn`` is over and the dealer made ``mistakes`` in it: a
        mistake drawn and not among them is owed (see :meth:`owe`)."""
        if drawn is not None and drawn not in set(mistakes):
            self.owe(drawn)


def consumes(card: str, event: Event) -> bool:
    """Is this the table's record of the card the reader just delivered?"""
    if not str(event.get("actor", "")).startswith("reader:"):
        return False
    kind = event["type"]
    if card == CUT:
        return kind in ("cut_card_drawn", "shoe_ended", "incident_raised")
    return kind in CARD_EVENTS and event["payload"].get("card") == card


@dataclass
class TableView:
    """What the dealer console shows (GET /tables/{id})."""

    data: dict[str, Any]

    @property
    def round(self) -> dict[str, Any] | None:
        return self.data.get("round")

    @property
    def shoe(self) -> dict[str, Any] | None:
        return self.data.get("shoe")

    @property
    def paused(self) -> bool:
        return bool(self.data.get("paused"))

    @property
    def last_seq(self) -> int:
        return int(self.data.get("last_seq", 0))

    def round_phase(self, round_id: str) -> str | None:
        rnd = self.round
        return rnd["phase"] if rnd and rnd["round_id"] == round_id else None


@dataclass
class Table:
    """The table as the bots reach it: its id, the stream, and the log they narrate to."""

    table_id: str
    feed: TableFeed
    log: RoundLog

    async def view(self, api: ApiClient, *, at_least_seq: int = 0) -> TableView:
        """The console's view, at least as new as an event the caller has seen."""
        deadline = time.monotonic() + 5.0
        while True:
            view = TableView(await api.get(f"/tables/{self.table_id}"))
            if view.last_seq >= at_least_seq or time.monotonic() > deadline:
                return view
            await asyncio.sleep(0.01)

    async def wait(
        self,
        predicate: Callable[[Event], bool],
        *,
        after_seq: int,
        timeout: float,
        what: str,
    ) -> Event:
        return await self.feed.wait_for(predicate, after_seq=after_seq, timeout=timeout, what=what)


# -- supervisor ------------------------------------------------------------------------------
class SupervisorBot:
    """Inserts shoes and applies the rules' procedure to every incident left open; with
    ``human=True`` it leaves every incident to a person at the supervisor console and
    says in the log what the rule asks of them."""

    def __init__(self, api: ApiClient, table: Table, *, human: bool = False) -> None:
        self.api = api
        self.table = table
        self.t = table.table_id
        self.human = human
        self._wake = asyncio.Event()
        self._handled: set[str] = set()
        self.resolved: list[tuple[str, str]] = []

    @property
    def patience(self) -> float:
        """Seconds the other bots wait for an incident's resolution."""
        return HUMAN_PATIENCE if self.human else 60.0

    def on_event(self, event: Event) -> None:
        if event["type"] == "incident_raised":
            self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(0.05)  # let an auto-resolution in the same command land
            if self.human:
                await self.hand_over()
                continue
            try:
                await self.review()
            except ApiError as exc:
                log.warning("demo.supervisor_refused", code=exc.code, reason=exc.reason)
                self._wake.set()
                await asyncio.sleep(0.5)

    async def hand_over(self) -> None:
        """Say once, for each incident left open, that a person is to resolve it."""
        view = await self.table.view(self.api, at_least_seq=self.table.feed.last_seq)
        for incident in view.data["incidents"]:
            incident_id = incident["incident_id"]
            if incident_id in self._handled:
                continue
            self._handled.add(incident_id)
            details = incident.get("details") or {}
            card = details.get("card")
            hint = (
                f" (the card was {plain(card)}, at index {details.get('index')})"
                if incident["kind"] == "missed_scan" and card
                else ""
            )
            self.table.log.note(
                "supervisor",
                f"{incident_id} {incident['kind']} is yours: resolve it at the pit supervisor "
                f"console{hint}",
                incident.get("round_id"),
            )

    async def review(self) -> None:
        view = await self.table.view(self.api, at_least_seq=self.table.feed.last_seq)
        for incident in view.data["incidents"]:
            if incident["incident_id"] not in self._handled:
                await self.resolve(incident, view)

    async def resolve(self, incident: dict[str, Any], view: TableView) -> None:
        incident_id, kind = incident["incident_id"], incident["kind"]
        details = incident.get("details", {})
        rnd = view.round
        dealing = rnd is not None and rnd["phase"] == "dealing"
        path = f"/tables/{self.t}/incidents/{incident_id}/resolve"
        if kind == "missed_scan" and dealing and details.get("card"):
            card, index = details["card"], int(details["index"])
            self.table.log.note(
                "supervisor",
                f"rule 6: enters the missed card {plain(card)} by hand at index {index}",
                rnd["round_id"] if rnd else None,
            )
            body = {
                "note": f"missed card {card} entered at index {index}; cards re-arranged "
                "to their shoe-order positions",
                "entered": [{"card": card, "index": index}],
            }
            await self.api.post(path, body)
        elif kind == "card_not_owed":
            answer = await self.api.post(
                path, {"note": "confirmed: a card came out that no position was owed"}
            )
            # what the game's rule made of it, as the table answered
            done = (
                "the round is void, every stake refunded, and the shoe is replaced"
                if answer.get("voided")
                else "the card is set aside (burnt); the round goes on"
            )
            self.table.log.note(
                "supervisor",
                f"a card no position was owed: confirms the dealing error; {done}",
                rnd["round_id"] if rnd else None,
            )
        elif (
            kind == "reader_disagreement"
            and dealing
            and not details.get("serial")
            and rnd is not None
            and rnd["cards"][-1:] == [details.get("camera")]
        ):
            # The camera saw, late, the card the supervisor has just entered from the shoe's
            # read: nothing more is on the table.
            self.table.log.note(
                "supervisor",
                f"readers disagree ({details.get('text', '')}): the card already entered; "
                "nothing more on the table",
                rnd["round_id"],
            )
            await self.api.post(
                path, {"note": f"camera's late sight of {details.get('camera')}, already entered"}
            )
        elif kind == "reader_disagreement" and dealing:
            # The supervisor looks at the card on the table: the shoe's read, if it had one.
            card = details.get("serial") or details.get("camera")
            index = int(details.get("index", len(rnd["cards"]) if rnd else 0))
            self.table.log.note(
                "supervisor",
                f"readers disagree ({details.get('text', '')}); enters {plain(card)} at {index}",
                rnd["round_id"] if rnd else None,
            )
            await self.api.post(
                path,
                {
                    "note": f"card checked on the table: {card}",
                    "entered": [{"card": card, "index": index}],
                },
            )
        elif kind == "reader_offline":
            await self._reader_back()
            await self.api.post(path, {"note": "reader back online; table checked"})
        elif dealing and kind in ("unreadable_card", "possible_missed_card", "shoe_empty"):
            self.table.log.note(
                "supervisor",
                f"{kind}: the round's cards cannot be trusted; voids the round",
                rnd["round_id"] if rnd else None,
            )
            await self.void(f"{kind}: round cards uncertain")
        else:
            await self.api.post(path, {"note": f"{kind}: checked at the table, nothing to do"})
        self._handled.add(incident_id)
        self.resolved.append((incident_id, kind))

    async def _reader_back(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            view = await self.table.view(self.api)
            if view.data.get("reader_online"):
                return
            await asyncio.sleep(0.2)

    async def insert_shoe(self) -> dict[str, Any]:
        inserted: dict[str, Any] = await self.api.post(f"/tables/{self.t}/shoe")
        return inserted

    async def void(self, reason: str, *, change_shoe: bool = True) -> None:
        await self.api.post(
            f"/tables/{self.t}/round/void", {"reason": reason, "change_shoe": change_shoe}
        )

    async def void_active(self, reason: str) -> bool:
        """Void a round left in progress (a stopped or restarted demo), refunding stakes."""
        view = await self.table.view(self.api)
        rnd = view.round
        if rnd is None or rnd["phase"] not in ("betting", "dealing", "result"):
            return False
        try:
            await self.void(reason)
        except ApiError as exc:
            if exc.code != "wrong_phase":
                raise
            return False  # it ended meanwhile: an incident's procedure voided it, or it settled
        return True

    async def recover(self) -> None:
        """Bring a table left by an earlier run to a clean start for a new physical shoe."""
        if await self.void_active("demo restarted: the round was interrupted"):
            self.table.log.note("supervisor", "voided the round an earlier run left open")
        view = await self.table.view(self.api)
        for incident in view.data["incidents"]:
            await self.api.post(
                f"/tables/{self.t}/incidents/{incident['incident_id']}/resolve",
                {"note": "demo restarted: cleared before the new session"},
            )
            self._handled.add(incident["incident_id"])
        view = await self.table.view(self.api)
        if view.shoe is not None:
            await self.api.post(
                f"/tables/{self.t}/shoe/change", {"reason": "demo restarted: new physical shoe"}
            )


# -- players ---------------------------------------------------------------------------------
BET_MENU: tuple[tuple[str, int], ...] = (
    ("player", 8),
    ("banker", 8),
    ("banker_no_commission", 2),
    ("tie", 3),
    ("player_pair", 2),
    ("banker_pair", 2),
    ("any_pair", 1),
    ("lucky6", 1),
    ("dragon", 1),
    ("tiger", 1),
    ("player_dragon_bonus", 1),
    ("banker_dragon_bonus", 1),
    ("big", 1),
    ("small", 1),
)
STAKES = (100, 200, 500, 1_000, 2_000, 5_000)
WELCOME_CREDIT = 200_000
TOP_UP_BELOW = 20_000


@dataclass
class PlayerStats:
    requests: int = 0
    placed: int = 0
    refused: int = 0
    credited: int = 0
    refusals: list[str] = field(default_factory=list)


async def welcome(api: ApiClient, accounts: Iterable[str]) -> int:
    """A welcome credit once per account (a retried reference is a no-op): what it credited."""
    credited = 0
    for account in accounts:
        answer = await api.post(
            f"/accounts/{account}/credit",
            {"amount": WELCOME_CREDIT, "reference": f"demo-welcome-{account}"},
        )
        if not answer["duplicate"]:
            credited += WELCOME_CREDIT
    return credited


async def top_up(api: ApiClient, account: str, round_id: str) -> int:
    """A credit for a player running low before a round (once per round): what it credited."""
    balance = (await api.get(f"/accounts/{account}"))["balance"]
    if balance >= TOP_UP_BELOW:
        return 0
    await api.post(
        f"/accounts/{account}/credit",
        {"amount": WELCOME_CREDIT, "reference": f"demo-topup-{round_id}-{account}"},
    )
    return WELCOME_CREDIT


class Players(Protocol):
    """The players a dealer deals to: betting players (:class:`PlayerBots`) or seated ones
    (``seatbots.SeatPlayers``)."""

    async def prepare_round(self) -> None: ...

    async def bet_round(self, round_id: str, window: float) -> None: ...


class PlayerBots:
    """Players betting through the operator API, one request per player per round."""

    def __init__(self, api: ApiClient, table: Table, count: int, rng: random.Random) -> None:
        self.api = api
        self.table = table
        self.accounts = [f"demo-player-{i}" for i in range(1, count + 1)]
        self.rng = rng
        self.stats = PlayerStats()
        self._types = [t for t, _ in BET_MENU]
        self._weights = [w for _, w in BET_MENU]

    async def fund(self) -> None:
        self.stats.credited += await welcome(self.api, self.accounts)

    async def prepare_round(self) -> None:
        """Nothing to do before a baccarat round: players bet on the round, not a seat."""

    async def bet_round(self, round_id: str, window: float) -> None:
        jobs = [
            self._bet(account, round_id, self.rng.uniform(0.05, 0.4) * window)
            for account in self.accounts
        ]
        await asyncio.gather(*jobs)

    async def _bet(self, account: str, round_id: str, delay: float) -> None:
        await asyncio.sleep(delay)
        try:
            self.stats.credited += await top_up(self.api, account, round_id)
            count = self.rng.randint(1, 3)
            types = self.rng.choices(self._types, self._weights, k=count)
            bets = [
                {
                    "key": f"{round_id}/{account}/{i}",
                    "account": account,
                    "type": bet_type,
                    "stake": self.rng.choice(STAKES),
                }
                for i, bet_type in enumerate(types)
            ]
            self.stats.requests += 1
            answer = await self.api.post(f"/tables/{self.table.table_id}/bets", {"bets": bets})
        except ApiError as exc:
            self.stats.refused += 1
            self.table.log.note("players", f"{account}: refused: {exc.reason}", round_id)
            return
        placed = []
        for bet, result in zip(bets, answer["results"], strict=True):
            if result["status"] == "placed":
                self.stats.placed += 1
                placed.append(f"{bet['type']} {bet['stake']:,}")
            else:
                self.stats.refused += 1
                self.stats.refusals.append(result.get("error", "refused"))
                placed.append(f"{bet['type']} refused ({result.get('reason')})")
        self.table.log.note("players", f"{account}: " + ", ".join(placed), round_id)


# -- dealer ----------------------------------------------------------------------------------
class DealerBot:
    def __init__(
        self,
        api: ApiClient,
        table: Table,
        stack: ShoeStack,
        supervisor: SupervisorBot,
        players: Players,
        rng: random.Random,
        betting_seconds: float,
    ) -> None:
        self.api = api
        self.table = table
        self.t = table.table_id
        self.stack = stack
        self.supervisor = supervisor
        self.players = players
        self.rng = rng
        self.betting_seconds = betting_seconds
        self.mistakes: list[tuple[str, str]] = []
        """(round id, kind) of every mistake actually made (not merely planned)."""

    def note(self, message: str, round_id: str | None = None) -> None:
        self.table.log.note("dealer", message, round_id)

    @property
    def _slack(self) -> float:
        """Seconds past a deadline the table may take (a person may hold it up)."""
        return self.supervisor.patience if self.supervisor.human else 15.0

    # -- the hand on the shoe ----------------------------------------------------------------
    async def _take(self, *, scan: bool = True, bypass_lock: bool = False) -> Pull:
        device = self.stack.device
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                if bypass_lock:
                    device.honours_lock = False
                return self.stack.pull(scan=scan)
            except ShoeLockedError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.02)  # the deal light is still off: wait for ULK
            finally:
                device.honours_lock = True

    async def pull(self, *, bypass_lock: bool = False) -> tuple[Pull, Event]:
        """One card out past the reader; returns it with the table's record of it."""
        mark = self.table.feed.last_seq
        taken = await self._take(bypass_lock=bypass_lock)
        event = await self.table.wait(
            lambda e: consumes(taken.card, e),
            after_seq=mark,
            timeout=READER_TIMEOUT,
            what=f"table record of {taken.card} from the reader",
        )
        return taken, event

    async def _until(self, check: Callable[[TableView], bool], timeout: float = 30.0) -> TableView:
        deadline = time.monotonic() + timeout
        while True:
            view = await self.table.view(self.api, at_least_seq=self.table.feed.last_seq)
            if check(view) or time.monotonic() > deadline:
                return view
            await asyncio.sleep(0.05)

    # -- shoe --------------------------------------------------------------------------------
    async def ensure_shoe(self) -> None:
        view = await self.table.view(self.api)
        if view.shoe is None:
            await self._until_unlocked()
            removed = self.stack.discard_rest()
            if removed:
                self.note(
                    f"shoe change: takes the {removed} cards left in the old shoe out "
                    "(not scanned) and loads a freshly shuffled shoe"
                )
            await self.supervisor.insert_shoe()
            view = await self.table.view(self.api)
        assert view.shoe is not None
        while not view.shoe["ready"]:
            _, event = await self.pull()
            view = await self.table.view(self.api, at_least_seq=event["seq"])
            if view.shoe is None:
                return await self.ensure_shoe()

    async def _until_unlocked(self) -> None:
        deadline = time.monotonic() + LOCK_WAIT
        while self.stack.device.locked and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    # -- a round -----------------------------------------------------------------------------
    async def play_round(self, mistake: str | None) -> str:
        await self.ensure_shoe()
        await self._until(lambda v: not v.paused, timeout=self.supervisor.patience)
        await self.players.prepare_round()
        opened = await self.api.post(f"/tables/{self.t}/betting/open")
        round_id: str = opened["round_id"]
        mark = opened["seq"]
        bets = asyncio.create_task(self.players.bet_round(round_id, self.betting_seconds))
        try:
            if mistake in ("exposed_card", "double_exposure"):
                await asyncio.sleep(self.betting_seconds * 0.5)  # after the players bet
                await self.expose(round_id, 2 if mistake == "double_exposure" else 1)
            end = await self.table.wait(
                lambda e: (
                    e.get("round_id") == round_id
                    and e["type"] in ("betting_closed", "round_voided")
                ),
                after_seq=mark,
                timeout=self.betting_seconds + 15,
                what=f"end of betting for {round_id}",
            )
        finally:
            await bets
        if end["type"] == "betting_closed":
            await self.deal_round(round_id, mistake)
        await self.table.wait(
            lambda e: (
                e.get("round_id") == round_id and e["type"] in ("round_settled", "round_voided")
            ),
            after_seq=mark,
            timeout=self.supervisor.patience,
            what=f"settlement of {round_id}",
        )
        if mistake == "unneeded_card":
            await self.extra_card(round_id)
        return round_id

    async def expose(self, round_id: str, count: int) -> None:
        exposed = 0
        while exposed < count:
            self.note(
                "mistake: a card slips out while betting is open (the shoe's lock is only "
                "a deal light; the virtual shoe ignores it for this pull)"
                if exposed == 0
                else "mistake again: a second card comes out before betting closed",
                round_id,
            )
            taken, event = await self.pull(bypass_lock=True)
            if taken.card == CUT:
                self.note("it was the cut card: no card exposed, the shoe ends after this round")
                continue
            if event["type"] == "card_dealt":
                self.note(f"too late: betting had closed, {plain(taken.card)} was dealt", round_id)
                break
            exposed += 1
            view = await self.table.view(self.api, at_least_seq=event["seq"])
            if view.round_phase(round_id) != "betting":
                break
        if exposed:
            self.mistakes.append((round_id, "double_exposure" if exposed > 1 else "exposed_card"))

    async def deal_round(self, round_id: str, mistake: str | None) -> None:
        view = await self.table.view(self.api, at_least_seq=self.table.feed.last_seq)
        initial = _initial_cards(view)
        miss_at = self.rng.randint(0, initial - 1) if mistake == "missed_scan" else None
        stray = mistake == "card_not_owed"
        while True:
            view = await self.table.view(self.api, at_least_seq=self.table.feed.last_seq)
            if view.round_phase(round_id) != "dealing":
                return
            if view.paused:
                await self._until(lambda v: not v.paused, timeout=self.supervisor.patience)
                continue
            rnd = view.round
            assert rnd is not None
            if rnd["next_position"] is None:
                if stray and rnd.get("turn") and self.stack.peek() != CUT:
                    stray = False
                    await self.card_not_owed(round_id)
                    continue
                await asyncio.sleep(0.05)  # a decision is awaited: the players answer
                continue
            index = len(rnd["cards"])
            if miss_at is not None and index >= miss_at and self.stack.peek() != CUT:
                miss_at = None
                await self.missed_scan(round_id, index, initial)
                continue
            taken, _ = await self.pull()
            if taken.card == CUT:
                self.note(
                    "the cut card comes out; this round is finished normally, then the shoe ends",
                    round_id,
                )

    async def card_not_owed(self, round_id: str) -> None:
        self.note(
            "mistake: pulls a card while a player is still deciding (no position is owed)",
            round_id,
        )
        taken, event = await self.pull()
        if event["type"] == "card_dealt":
            # The decision came (or its timer ran out) between the look and the pull: the card
            # was owed by the time it was read, and dealt. No mistake was made; it is owed.
            self.note(f"too late: a card was owed by then, {plain(taken.card)} was dealt", round_id)
            return
        self.mistakes.append((round_id, "card_not_owed"))

    async def missed_scan(self, round_id: str, index: int, initial: int = 4) -> None:
        taken = await self._take(scan=False)
        self.mistakes.append((round_id, "missed_scan"))
        self.note(
            f"mistake: {plain(taken.card)} leaves the shoe without passing the reader "
            f"(it belongs at index {index} of the round)",
            round_id,
        )
        if index + 1 < initial and self.stack.peek() != CUT:
            # Only among the first cards, which every round takes (baccarat's four, a
            # blackjack deal's two a seat and the dealer's one): the next card cannot
            # complete the round in its wrong position before anyone notices.
            follower, _ = await self.pull()
            self.note(
                f"the next card {plain(follower.card)} lands in the missed card's position; "
                "the dealer notices and calls the supervisor",
                round_id,
            )
        else:
            self.note("the dealer notices at once and calls the supervisor", round_id)
        answer = await self.api.post(
            f"/tables/{self.t}/incidents",
            {"kind": "missed_scan", "details": {"index": index, "card": taken.card}},
        )
        incident_id = answer["incident_id"]
        await self.table.wait(
            lambda e: (
                e["type"] == "incident_resolved" and e["payload"].get("incident_id") == incident_id
            ),
            after_seq=answer["seq"],
            timeout=self.supervisor.patience if self.supervisor.human else 30.0,
            what=f"resolution of {incident_id}",
        )

    async def extra_card(self, round_id: str) -> None:
        view = await self.table.view(self.api, at_least_seq=self.table.feed.last_seq)
        if view.shoe is None or view.shoe["cut_card_drawn"] or self.stack.peek() == CUT:
            self.note("(no extra card now: the shoe is ending)", round_id)
            return
        self.note("mistake: pulls one card more than the round needed", round_id)
        await self.pull()
        self.mistakes.append((round_id, "unneeded_card"))


def _initial_cards(view: TableView) -> int:
    """Cards every round of this game takes before anything depends on them."""
    rnd = view.round or {}
    game_view = rnd.get("view") or {}
    if game_view.get("game") == "blackjack":
        return 2 * len(game_view.get("seats", [])) + 1
    return 4
