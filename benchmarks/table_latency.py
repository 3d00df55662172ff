"""Scan-to-subscriber latency of a live table, next to the cost of one durable commit.

Run: ``python benchmarks/table_latency.py [--game baccarat|blackjack] [--cards N] [--db URL]``.
With ``--game blackjack`` the table also takes player decisions, and the figure that
matters is decision -> subscriber: from the player's decision entering the table service
(``execute(Act)``, what ``POST /actions`` calls) to a stream subscriber receiving its
``action_taken`` event (checked against the legal actions, decided, appended, projected,
committed durably, published). A framed virtual shoe
on a pseudo-terminal, the real serial reader, the table service with its one writer and
the stream hub that feeds WebSocket clients. For each card dealt in a round, the time from
the shoe writing the CRD frame's last byte to a stream subscriber receiving the matching
``card_dealt`` event (parsed, acknowledged, decided, appended to the hash-chained log,
projected, committed durably, published). The yardstick is a minimal durable transaction
(one row, commit) on the same database. Goal: p50 latency <= 3x the commit's p50.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from scratch import one_row_commits, scratch_runtime

from audit.store import StoredEvent
from hardware_sim.virtual_shoe import ShoeLockedError, VirtualShoe
from table_service.logs import configure_logging
from table_service.principals import revoked_among
from table_service.runtime import Runtime
from table_service.table import commands as c
from table_service.table.config import ShoeConfig, TableConfig
from table_service.table.decide import decide as decide_command
from table_service.table.projector import project as project_events
from table_service.table.service import TableService
from table_service.table.stream import StreamHub
from table_service.table.wallet import Transfer, transfer

ACTOR = "bench:latency"
TABLE = "bench-latency"
SEATS = {1: "bench-p1", 2: "bench-p2", 3: "bench-p3"}


PACE = 0.01  # a dealer's hand is slower than this: the pause after each card


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def synced(service: TableService, event: StoredEvent) -> None:
    """Subscribers hear of a commit before the writer's in-memory state moves on."""
    while service.state.last_seq < event.seq:
        await asyncio.sleep(0.001)


def _check(runtime: Runtime, names: frozenset[str]) -> set[str]:
    with runtime.reads() as session:
        return revoked_among(session, names)


def _shoe_ready(service: TableService) -> bool:
    shoe = service.state.shoe
    assert shoe is not None  # InsertShoe ran
    return shoe.ready


class Bench:
    def __init__(
        self,
        runtime: Runtime,
        shoe: VirtualShoe,
        clock: StageClock | None = None,
        staff: bool = False,
    ) -> None:
        self.staff = staff
        self.runtime = runtime
        self.shoe = shoe
        self.clock = clock
        self.from_frame: list[float] = []
        self.from_deal: list[float] = []
        self.from_decision: list[float] = []

    async def next_event(self, wanted: str) -> StoredEvent:
        while True:
            event = await asyncio.wait_for(self.queue.get(), 10)
            assert event is not None, "subscriber dropped"
            if event.type == wanted:
                return event

    async def deal(self) -> tuple[str, float]:
        deadline = time.monotonic() + 5
        while True:
            try:
                card = self.shoe.deal()
                return str(card), time.monotonic()
            except ShoeLockedError:
                assert time.monotonic() < deadline, "shoe stayed locked"
                await asyncio.sleep(0.002)

    async def frame_sent(self, card: str) -> float:
        # The shoe's thread records a frame just after writing it: on a loaded machine the
        # whole path may run before that record lands, so wait a moment for it.
        deadline = time.monotonic() + 2
        while True:
            for tx in reversed(self.shoe.transmissions):
                if tx.type == "CRD" and tx.payload == card and tx.reached_host:
                    return tx.sent
            assert time.monotonic() < deadline, f"no CRD frame for {card}"
            await asyncio.sleep(0.001)

    async def card(self, service: TableService) -> None:
        if self.clock is not None:
            self.clock.start()
        card, dealt_at = await self.deal()
        event = await self.next_event("card_dealt")
        received = time.monotonic()
        assert event.payload["card"] == card, (event.payload, card)
        sent = await self.frame_sent(card)
        self.from_frame.append(received - sent)
        if self.clock is not None:
            self.clock.finish(sent, received)
        self.from_deal.append(received - dealt_at)
        await synced(service, event)
        await asyncio.sleep(PACE)

    async def decide(self, service: TableService, turn: dict[str, Any]) -> None:
        actor = turn["actors"][0]
        moves = [m for m in turn["legal_actions"][actor] if m["action"] in ("hit", "stand")]
        move = moves[0] if len(self.from_decision) % 3 else moves[-1]
        account = SEATS[int(actor.split(":")[1])]
        started = time.monotonic()
        await service.execute(c.Act(actor, move["action"], account), actor=ACTOR)
        event = await self.next_event("action_taken")
        self.from_decision.append(time.monotonic() - started)
        await synced(service, event)

    async def run_blackjack(self, service: TableService, decisions: int) -> None:
        for seat, account in SEATS.items():
            await asyncio.to_thread(
                transfer, self.runtime, Transfer(account, 10**9, f"bench-{account}", "credit"),
                actor=ACTOR,
            )  # fmt: skip
            await service.execute(c.TakeSeat(seat, account), actor=ACTOR)
        while len(self.from_decision) < decisions:
            if service.state.shoe is None:
                await service.execute(c.InsertShoe(), actor=ACTOR)
            opened = await service.execute(c.OpenBetting(), actor=ACTOR)
            round_id = opened.answer["round_id"]
            bets = tuple(
                c.BetRequest(uuid.uuid4().hex, f"{round_id}-{s}", a, "main", 1000, s)
                for s, a in SEATS.items()
            )
            await service.execute(c.PlaceBets(bets), actor=ACTOR)
            await service.execute(c.CloseBetting(), actor=ACTOR)
            while True:
                summary = service.state.public_summary()["round"]
                if summary["phase"] != "dealing":
                    break
                if summary["next"]["kind"] == "card":
                    await self.card(service)
                else:
                    await self.decide(service, summary["turn"])

    async def run(self, cards: int, game: str = "baccarat") -> None:
        if self.staff:
            # a principal's stream, as the service runs it: each batch of events reaches
            # it after one read of its principal's revocation (another process may revoke)
            runtime = self.runtime
            hub = StreamHub(
                asyncio.get_running_loop(),
                revoked_among=lambda names: _check(runtime, names),
            )
        else:
            hub = StreamHub(asyncio.get_running_loop())
        if self.clock is not None:
            self.clock.install(self.runtime, hub)
        self.runtime.store.subscribe(hub.publish)
        self.queue = hub.subscribe(TABLE)
        if self.staff:
            hub.hold("bench-supervisor", self.queue)
        config = TableConfig(
            table_id=TABLE,
            game=game,
            betting_seconds=600,
            game_rules={"decision_seconds": 600} if game == "blackjack" else {},
            shoe=ShoeConfig(port=self.shoe.device_path, dialect="framed"),
        )
        service = TableService(self.runtime, config)
        await service.start(with_reader=True)
        while not (service.reader is not None and self.shoe.host_connected):
            await asyncio.sleep(0.01)
        if game == "blackjack":
            await self.run_blackjack(service, cards)
            await service.stop()
            return
        await service.execute(c.InsertShoe(), actor=ACTOR)
        while not _shoe_ready(service):
            await self.deal()
            await synced(service, await self.next_event("card_burnt"))
        while len(self.from_frame) < cards:
            await service.execute(c.OpenBetting(), actor=ACTOR)
            await service.execute(c.CloseBetting(), actor=ACTOR)
            while True:
                rnd = service.state.round
                assert rnd is not None
                if rnd.phase != "dealing" or rnd.next_position() is None:
                    break
                await self.card(service)
        await service.stop()


STAGES = (
    ("reader", "CRD frame's last byte -> the reader's thread hands the event to the table"),
    ("hop", "-> the command runs in the table's command thread"),
    ("begin", "-> transaction begun, log write lock held"),
    ("decide", "-> decided (rules, state)"),
    ("append", "-> appended to the hash-chained log"),
    ("project", "-> read models written"),
    ("commit", "-> committed durably (fence checked, if any)"),
    ("dispatch", "-> the event loop hands it to the hub"),
    ("subscriber", "-> a subscriber's queue yields it"),
)


class StageClock:
    """Time stamps at each stage of the card path, by wrapping the real functions (the
    path itself is not changed; the wrappers cost a few microseconds each)."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}
        self.samples: list[dict[str, float]] = []
        self._undo: list[tuple[object, str, object]] = []

    def mark(self, name: str) -> None:
        self.marks.setdefault(name, time.monotonic())

    def _patch(self, owner: object, name: str, value: object) -> None:
        self._undo.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, value)

    def install(self, runtime: Runtime, hub: StreamHub) -> None:
        import table_service.table.service as service_module
        from audit.store import EventStore
        from table_service.table.reader_lane import ReaderLane

        clock = self
        take, run_sync = ReaderLane.take, TableService._execute_sync
        lock, append = EventStore.lock, EventStore.append
        decide, project = decide_command, project_events  # as the service module has them
        dispatch = hub._dispatch

        def take_events(self: ReaderLane, events: Any) -> Any:
            clock.mark("reader")
            return take(self, events)

        def execute_sync(self: TableService, command: Any, actor: Any, *seen: Any) -> Any:
            clock.mark("hop")
            return run_sync(self, command, actor, *seen)

        def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                result = function(*args, **kwargs)
                clock.mark(name)
                return result

            return wrapper

        self._patch(ReaderLane, "take", take_events)
        self._patch(TableService, "_execute_sync", execute_sync)
        self._patch(EventStore, "lock", timed("begin", lock))
        self._patch(EventStore, "append", timed("append", append))
        self._patch(service_module, "decide", timed("decide", decide))
        self._patch(service_module, "project", timed("project", project))
        runtime.store.subscribe(lambda _events: clock.mark("commit"))
        # the hub's own method, timed for the run (undone with the hub)
        hub._dispatch = timed("dispatch", dispatch)  # type: ignore[method-assign]

    def uninstall(self) -> None:
        for owner, name, value in reversed(self._undo):
            setattr(owner, name, value)

    def start(self) -> None:
        self.marks = {}

    def finish(self, sent: float, received: float) -> None:
        marks = {**self.marks, "subscriber": received}
        if any(name not in marks for name, _ in STAGES):
            return
        previous, sample = sent, {}
        for name, _ in STAGES:
            sample[name] = marks[name] - previous
            previous = marks[name]
        self.samples.append(sample)


def lease_the_table(runtime: Runtime) -> None:
    """As ``serve`` runs a studio table: leased, and every commit behind the fence."""
    from table_service.studio.lease import Leases

    leases = Leases(runtime.engine, "bench-node", None, ttl_ms=600_000)
    leases.fenced = frozenset({TABLE})
    assert leases.acquire(TABLE) is not None
    leases.install_fence(runtime.sessions)


def measure(
    db: str | None, game: str, cards: int | None, stages: bool, studio: bool, staff: bool = False
) -> dict[str, Any]:
    with scratch_runtime(db) as runtime:
        backend = runtime.engine.dialect.name
        if studio:
            lease_the_table(runtime)
        commits = one_row_commits(runtime.engine, 200, pace=PACE)
        blackjack = game == "blackjack"
        count = cards or (100 if blackjack else 300)
        # blackjack: one shoe without a cut card holds the whole run (416 cards)
        shoe = VirtualShoe("framed", decks=8, seed=11, cut_depth=0 if blackjack else 52).start()
        clock = StageClock() if stages else None
        try:
            bench = Bench(runtime, shoe, clock, staff)
            asyncio.run(bench.run(count, game))
        finally:
            shoe.stop()
            if clock is not None:
                clock.uninstall()
        commits += one_row_commits(runtime.engine, 200, pace=PACE)
    return {"backend": backend, "bench": bench, "commits": commits, "clock": clock}


def report(result: dict[str, Any]) -> float:
    ms = 1000.0
    bench: Bench = result["bench"]
    commits: list[float] = result["commits"]
    commit_p50 = statistics.median(commits)
    p50, p99 = statistics.median(bench.from_frame), percentile(bench.from_frame, 0.99)
    print(f"backend                   {result['backend']}")
    print(f"cards                     {len(bench.from_frame)}")
    print(
        f"CRD frame -> subscriber   p50 {p50 * ms:7.2f} ms   p99 {p99 * ms:7.2f} ms   "
        f"max {max(bench.from_frame) * ms:7.2f} ms"
    )
    print(
        f"deal() -> subscriber      p50 {statistics.median(bench.from_deal) * ms:7.2f} ms   "
        f"p99 {percentile(bench.from_deal, 0.99) * ms:7.2f} ms"
    )
    print(
        f"durable commit (1 row)    p50 {commit_p50 * ms:7.2f} ms   "
        f"p99 {percentile(commits, 0.99) * ms:7.2f} ms"
    )
    print(f"ratio p50 latency/commit  {p50 / commit_p50:7.2f} x  (goal <= 3x)")
    clock: StageClock | None = result["clock"]
    if clock is not None and clock.samples:
        print(f"stages ({len(clock.samples)} cards; each from the one before)   p50      mean")
        for name, text in STAGES:
            values = [s[name] for s in clock.samples]
            p50_ms, mean_ms = statistics.median(values) * ms, statistics.mean(values) * ms
            print(f"  {name:10s} {p50_ms:7.3f} ms {mean_ms:7.3f} ms   {text}")
    if bench.from_decision:
        d50, d99 = statistics.median(bench.from_decision), percentile(bench.from_decision, 0.99)
        print(f"decisions                 {len(bench.from_decision)}")
        print(
            f"decision -> subscriber    p50 {d50 * ms:7.2f} ms   p99 {d99 * ms:7.2f} ms   "
            f"max {max(bench.from_decision) * ms:7.2f} ms"
        )
        print(f"ratio p50 decision/commit {d50 / commit_p50:7.2f} x  (goal <= 3x)")
    return p50 / commit_p50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", choices=("baccarat", "blackjack"), default="baccarat")
    parser.add_argument(
        "--cards", type=int, default=None, help="cards dealt (300; blackjack: decisions, 100)"
    )
    parser.add_argument(
        "--db",
        action="append",
        default=None,
        help="database URL, or 'sqlite' for SQLite in a temp dir (the default); repeat it to "
        "measure several backends side by side in one run",
    )
    parser.add_argument(
        "--stages", action="store_true", help="also time each stage of the card path"
    )
    parser.add_argument(
        "--studio",
        action="store_true",
        help="lease the table and fence every commit, as a studio's serve process does",
    )
    parser.add_argument(
        "--staff",
        action="store_true",
        help="the subscriber is a principal's stream (staff/operator): each batch reaches it "
        "after the hub's revocation check (one read of the database)",
    )
    args = parser.parse_args()
    configure_logging(level="WARNING")
    dbs = [None if d in ("sqlite", "") else d for d in (args.db or ["sqlite"])]
    ratios = []
    for i, db in enumerate(dbs):
        if i:
            print()
        result = measure(db, args.game, args.cards, args.stages, args.studio, args.staff)
        ratios.append((result["backend"], report(result)))
    if len(ratios) > 1:
        print()
        print("side by side              " + "   ".join(f"{b} {r:.2f} x" for b, r in ratios))


if __name__ == "__main__":
    main()
