"""Events handed off on the reader's own thread, in the order read, none to the queue."""

from __future__ import annotations

import threading

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
