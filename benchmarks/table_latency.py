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
import sys
import time
import uuid
from pathlib import Path

# Run as a script, this folder leads sys.path, and benchmarks/shoe_reader.py would stand in
# for the shoe_reader package the virtual shoe and the reader import.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from sqlalchemy import BigInteger, Column, Integer, MetaData, Table, insert  # noqa: E402

from audit.store import StoredEvent  # noqa: E402
from hardware_sim.virtual_shoe import ShoeLockedError, VirtualShoe  # noqa: E402
from table_service.logs import configure_logging  # noqa: E402
from table_service.runtime import Runtime  # noqa: E402
from table_service.scratch import scratch_runtime  # noqa: E402
from table_service.table import commands as c  # noqa: E402
from table_service.table.config import ShoeConfig, TableConfig  # noqa: E402
from table_service.table.service import TableService  # noqa: E402
from table_service.table.stream import StreamHub  # noqa: E402
from table_service.table.wallet import Transfer, transfer  # noqa: E402

ACTOR = "bench:latency"
TABLE = "bench-latency"
SEATS = {1: "bench-p1", 2: "bench-p2", 3: "bench-p3"}


def commit_cost(runtime: Runtime, samples: int) -> list[float]:
    """Seconds per minimal durable transaction: one small row inserted, committed."""
    meta = MetaData()
    scratch = Table(
        f"bench_commit_{uuid.uuid4().hex[:8]}",
        meta,
        Column("id", Integer, primary_key=True),
        Column("value", BigInteger),
    )
    meta.create_all(runtime.engine)
    times = []
    for i in range(samples):
        start = time.perf_counter()
        with runtime.engine.begin() as conn:
            conn.execute(insert(scratch).values(id=i, value=i))
        times.append(time.perf_counter() - start)
    meta.drop_all(runtime.engine)
    return times


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def synced(service: TableService, event: StoredEvent) -> None:
    """Subscribers hear of a commit before the writer's in-memory state moves on."""
    while service.state.last_seq < event.seq:
        await asyncio.sleep(0.001)


class Bench:
    def __init__(self, runtime: Runtime, shoe: VirtualShoe) -> None:
        self.runtime = runtime
        self.shoe = shoe
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

    def frame_sent(self, card: str) -> float:
        for tx in reversed(self.shoe.transmissions):
            if tx.type == "CRD" and tx.payload == card and tx.reached_host:
                return tx.sent
        raise AssertionError(f"no CRD frame for {card}")

    async def card(self, service: TableService) -> None:
        card, dealt_at = await self.deal()
        event = await self.next_event("card_dealt")
        received = time.monotonic()
        assert event.payload["card"] == card, (event.payload, card)
        self.from_frame.append(received - self.frame_sent(card))
        self.from_deal.append(received - dealt_at)
        await synced(service, event)
        await asyncio.sleep(0.01)  # a dealer's hand is slower than this

    async def decide(self, service: TableService, turn: dict) -> None:  # type: ignore[type-arg]
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
        hub = StreamHub(asyncio.get_running_loop())
        self.runtime.store.subscribe(hub.publish)
        self.queue = hub.subscribe(TABLE)
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
        while not service.state.shoe.ready:  # type: ignore[union-attr]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", choices=("baccarat", "blackjack"), default="baccarat")
    parser.add_argument(
        "--cards", type=int, default=None, help="cards dealt (300; blackjack: decisions, 100)"
    )
    parser.add_argument("--db", default=None, help="database URL (default: SQLite in a temp dir)")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    with scratch_runtime(args.db) as runtime:
        backend = runtime.engine.dialect.name
        commits = commit_cost(runtime, 300)
        blackjack = args.game == "blackjack"
        count = args.cards or (100 if blackjack else 300)
        # blackjack: one shoe without a cut card holds the whole run (416 cards)
        shoe = VirtualShoe("framed", decks=8, seed=11, cut_depth=0 if blackjack else 52).start()
        try:
            bench = Bench(runtime, shoe)
            asyncio.run(bench.run(count, args.game))
        finally:
            shoe.stop()
        commits += commit_cost(runtime, 300)
    ms = 1000.0
    commit_p50 = statistics.median(commits)
    p50, p99 = statistics.median(bench.from_frame), percentile(bench.from_frame, 0.99)
    print(f"backend                   {backend}")
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
    if bench.from_decision:
        d50, d99 = statistics.median(bench.from_decision), percentile(bench.from_decision, 0.99)
        print(f"decisions                 {len(bench.from_decision)}")
        print(
            f"decision -> subscriber    p50 {d50 * ms:7.2f} ms   p99 {d99 * ms:7.2f} ms   "
            f"max {max(bench.from_decision) * ms:7.2f} ms"
        )
        print(f"ratio p50 decision/commit {d50 / commit_p50:7.2f} x  (goal <= 3x)")


if __name__ == "__main__":
    main()
