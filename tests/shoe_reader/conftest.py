"""A virtual shoe on a real pseudo-terminal, read by the real reader, with fast timings."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from hardware_sim.virtual_shoe import VirtualShoe
from shoe_reader.events import CardSeen, MissedCardSuspected, ReaderEvent
from shoe_reader.serial_reader import Dialect, ShoeReader, open_reader

FAST_SHOE: dict[str, Any] = {"heartbeat": 0.05, "retransmit_interval": 0.04, "outage": 0.3}
FAST_READER: dict[str, Any] = {
    "offline_timeout": 0.4,
    "read_timeout": 0.02,
    "reconnect_initial": 0.05,
    "reconnect_max": 0.4,
}

# The bound of every wait on a condition: generous, so a loaded machine makes a test
# slower, never red (a quiet one meets each condition in well under a second).
WAIT = 60.0


class Rig:
    """One shoe, one reader, and every event the reader produced, in order."""

    def __init__(self, shoe: VirtualShoe, reader: ShoeReader) -> None:
        self.shoe = shoe
        self.reader = reader
        self.events: list[ReaderEvent] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> Rig:
        self.shoe.start()
        await self.reader.start()
        self._task = asyncio.create_task(self._consume())
        return self

    async def _consume(self) -> None:
        async for event in self.reader.events():
            self.events.append(event)

    async def stop(self) -> None:
        await self.reader.close()
        if self._task is not None:
            await asyncio.wait_for(self._task, 30)
        self.shoe.stop()

    async def wait(self, predicate: Callable[[], object], what: str, timeout: float = WAIT) -> None:
        """Bounded wait: fails the test with ``what`` instead of hanging."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                kinds = [e.event for e in self.events]
                raise AssertionError(f"timed out waiting for {what}; events: {kinds}")
            await asyncio.sleep(0.01)

    def of(self, cls: type[ReaderEvent]) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]

    def cards(self) -> list[str]:
        return [e.card for e in self.of(CardSeen)]

    def kinds(self) -> list[str]:
        return [e.event for e in self.events]

    async def online(self) -> None:
        await self.wait(lambda: self.reader.online, "the shoe to come online")

    async def deal(self, n: int = 1, pause: float = 0.0) -> list[str | None]:
        dealt = []
        for _ in range(n):
            dealt.append(self.shoe.deal())
            if pause:
                await asyncio.sleep(pause)
        return dealt

    async def settled(self, cards: int, timeout: float = WAIT) -> None:
        """Wait until ``cards`` cards were delivered and the shoe has nothing pending."""
        await self.wait(
            lambda: len(self.cards()) >= cards and self.shoe.idle(),
            f"{cards} cards delivered and the shoe idle",
            timeout,
        )

    def dealt_cards(self) -> list[str]:
        return [c for c in self.shoe.dealt if c != "CUT"]

    def assert_visible_gaps_flagged(self) -> None:
        """Every SEQ that never reached the host intact, and was followed by one that did,
        lies inside a flagged gap (one shoe epoch: no reboot or reconnection in the test)."""
        epoch = max(t.epoch for t in self.shoe.transmissions)
        sent = [t for t in self.shoe.transmissions if t.seq is not None and t.epoch == epoch]
        reached = {t.seq for t in sent if t.reached_host and t.seq is not None}
        lost = {t.seq for t in sent if t.seq is not None} - reached
        visible = {s for s in lost if any(r is not None and r > s for r in reached)}
        flagged: set[int] = set()
        for gap in self.of(MissedCardSuspected):
            flagged |= {(gap.expected_seq + i) % 1000 for i in range(gap.missing)}
        assert visible <= flagged, f"unflagged losses: {sorted(visible - flagged)}"


RigFactory = Callable[..., Awaitable[Rig]]


@pytest.fixture
async def rig() -> AsyncIterator[RigFactory]:
    rigs: list[Rig] = []

    async def make(
        dialect: Dialect = "framed", reader: dict[str, Any] | None = None, **shoe: Any
    ) -> Rig:
        seed = shoe.pop("seed", 7)
        options = {**FAST_SHOE, **shoe} if dialect == "framed" else shoe
        vs = VirtualShoe(dialect, seed=seed, **options)
        r = open_reader(vs.device_path, dialect, "shoe-1", **{**FAST_READER, **(reader or {})})
        made = Rig(vs, r)
        rigs.append(made)
        return await made.start()

    yield make
    for made in rigs:
        await made.stop()
