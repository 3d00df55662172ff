"""Events handed off on the reader's own thread, in the order read, none to the queue,
once the shoe has its ACK and with the reader's lock free."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from hardware_sim.virtual_shoe import VirtualShoe
from shoe_reader.events import CardSeen, ReaderEvent
from shoe_reader.serial_reader import ReaderStateError, open_reader
from table_service.rules.cards import standard_deck
from tests.shoe_reader.conftest import FAST_READER, FAST_SHOE, Rig

pytestmark = pytest.mark.timeout(180)


async def test_handed_off_events_come_on_the_readers_thread_in_order() -> None:
    shoe = VirtualShoe("framed", seed=7, **FAST_SHOE)
    reader = open_reader(shoe.device_path, "framed", "shoe-1", **FAST_READER)
    taken: list[tuple[str, ReaderEvent]] = []
    reader.hand_off(
        lambda events: taken.extend((threading.current_thread().name, e) for e in events)
    )
    rig = Rig(shoe, reader)
    codes = [c.code for c in standard_deck()][:8]
    shoe.load(codes)
    await rig.start()
    try:
        with pytest.raises(ReaderStateError):
            reader.hand_off(lambda events: None)  # started: events may have gone the other way
        await rig.online()
        await rig.deal(8)

        def cards() -> list[str]:
            return [e.card for _, e in taken if isinstance(e, CardSeen)]

        await rig.wait(lambda: len(cards()) == 8 and shoe.idle(), "eight cards handed off")
        assert cards() == codes
        assert {name for name, _ in taken} == {"shoe-reader-shoe-1"}
        assert rig.events == []  # nothing went to the loop's queue
    finally:
        await rig.stop()


async def test_events_are_handed_off_once_acknowledged_and_with_the_port_free() -> None:
    """``take`` may run a card's commit on the reader's thread: by then the shoe has its
    ACK (it sends nothing more until then) and a command to the shoe does not wait for
    it. Handed off before the ACK and under the reader's lock, as they were, the shoe
    would still be waiting for the ACK and the LCK would wait for ``take``."""
    # A card not acknowledged stays in flight for 5 s (no retransmission gives up first).
    shoe = VirtualShoe("framed", seed=7, **{**FAST_SHOE, "retransmit_interval": 5.0})
    reader = open_reader(shoe.device_path, "framed", "shoe-1", **FAST_READER)
    release = threading.Event()
    while_taking: list[tuple[bool, bool]] = []  # (the shoe idle, LCK sent) during take
    loop = asyncio.get_running_loop()

    def take(events: list[ReaderEvent]) -> None:
        if not any(isinstance(e, CardSeen) for e in events):
            return
        # the shoe's thread reads the ACK in its own time: a condition, bounded
        deadline = time.monotonic() + 3
        while not shoe.idle() and time.monotonic() < deadline:
            time.sleep(0.005)
        idle = shoe.idle()
        sent = asyncio.run_coroutine_threadsafe(reader.lock(), loop)
        try:
            locked = sent.result(timeout=10)
        except TimeoutError:
            locked = False
        while_taking.append((idle, locked))
        release.wait(10)

    reader.hand_off(take)
    rig = Rig(shoe, reader)
    shoe.load([c.code for c in standard_deck()][:8])  # (an empty shoe says so: EMP)
    await rig.start()
    try:
        await rig.online()
        await rig.deal(1)
        await rig.wait(lambda: bool(while_taking), "the card handed off")
        release.set()
        assert while_taking == [(True, True)]
    finally:
        release.set()
        await rig.stop()
