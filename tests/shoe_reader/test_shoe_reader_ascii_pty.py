"""The ascii reader against the virtual shoe through a real pseudo-terminal: every line
the shoe sent intact is delivered once, whatever happened to the others."""

from __future__ import annotations

import asyncio

import pytest

from hardware_sim.virtual_shoe import ShoeNotRunningError
from shoe_reader.ascii_protocol import NEW_GAME
from shoe_reader.events import (
    BurnCard,
    CardSeen,
    HardwareAlarm,
    HardwareWarning,
    ReaderOffline,
    ReaderOnline,
    ShoeEmpty,
    UnknownMessage,
    UnreadableCard,
)
from tests.shoe_reader.conftest import Rig, RigFactory

pytestmark = pytest.mark.timeout(180)  # waits are bounded at 60 s each (conftest.WAIT)

NOT_LINES = (UnknownMessage, ReaderOnline, ReaderOffline)


def assert_intact_lines_delivered_once(r: Rig) -> None:
    expected: list[bytes] = []
    for t in r.shoe.transmissions:
        if t.reached_host:
            line = t.data.rstrip(b"\r\n")
            expected += [line, line] if t.fate == "duplicated" else [line]
    delivered = [e.raw for e in r.events if not isinstance(e, NOT_LINES)]
    assert delivered == expected


async def until_lines(r: Rig, n: int, timeout: float = 60.0) -> None:
    """Wait until every transmission that reached the host has come out as an event."""

    def done() -> bool:
        want = sum(
            2 if t.fate == "duplicated" else 1 for t in r.shoe.transmissions if t.reached_host
        )
        got = len([e for e in r.events if not isinstance(e, NOT_LINES)])
        return r.shoe.idle() and len(r.shoe.transmissions) >= n and got >= want

    await r.wait(done, f"{n} lines through", timeout)
    await asyncio.sleep(0.05)  # nothing more may come: a duplicate would show now


async def test_clean_ascii_deal_every_form(rig: RigFactory) -> None:
    r = await rig("ascii", seed=3)
    r.shoe.load(["TD", "TS", "TH", "4S", "3H", "AC", "KD", "TC"])
    await r.online()
    await r.deal(4)
    r.shoe.set_burn_mode(True)
    await r.deal(1)
    r.shoe.set_burn_mode(False)
    r.shoe.new_game()
    r.shoe.warn(1)
    r.shoe.alarm("E7", "Card Jam")
    r.shoe.unread_next()
    await r.deal(3)
    await until_lines(r, 12)
    assert [e.card for e in r.of(CardSeen)] == ["TD", "TS", "TH", "4S", "KD", "TC"]
    assert [e.card for e in r.of(BurnCard)] == ["3H"]
    assert r.of(HardwareWarning)[0].code == NEW_GAME
    assert r.of(HardwareWarning)[1].code == "W0x01"
    assert r.of(HardwareAlarm)[0].code == "E7"
    assert len(r.of(UnreadableCard)) == 1
    assert len(r.of(ShoeEmpty)) == 1
    # Tens were sent as T, 10 and 0, in both orders (the seed decides): all read as T.
    sent = b" ".join(t.data for t in r.shoe.transmissions if t.type == "CRD")
    assert b"10" in sent or b":0" in sent or b"0>" in sent
    assert_intact_lines_delivered_once(r)
    assert not r.of(UnknownMessage)


@pytest.mark.parametrize("fault", ["corrupt", "drop", "dup", "dribble", "noise"])
async def test_ascii_wire_fault(rig: RigFactory, fault: str) -> None:
    r = await rig("ascii", seed=5)
    await r.online()
    for i in range(4):
        r.shoe.faults.force(fault, 1, "CRD")
        await r.deal(2)
        await until_lines(r, 2 * (i + 1))
    assert r.shoe.faults.struck[fault] == 4
    assert_intact_lines_delivered_once(r)
    cards = [e.card for e in r.of(CardSeen)]
    dealt = r.dealt_cards()
    if fault in ("dribble", "noise"):
        assert cards == dealt
    elif fault == "dup":
        assert len(cards) == 12
    else:
        assert cards == dealt[1::2]  # the damaged lines are lost: ascii cannot ask again
    if fault == "corrupt":
        assert len(r.of(UnknownMessage)) >= 4


async def test_ascii_random_faults_seeded(rig: RigFactory) -> None:
    r = await rig("ascii", seed=9, faults="corrupt=0.2,drop=0.1,dup=0.1,dribble=0.1,noise=0.2")
    await r.online()
    await r.deal(40, pause=0.005)
    await until_lines(r, 40, timeout=15)
    assert_intact_lines_delivered_once(r)


async def test_ascii_cable_pulled_and_plugged_back(rig: RigFactory) -> None:
    r = await rig("ascii")
    await r.online()
    await r.deal(2)
    await until_lines(r, 2)
    r.shoe.unplug()
    await r.wait(lambda: r.of(ReaderOffline), "offline")
    await r.deal(2)  # held by the shoe until a host is there again
    r.shoe.replug()
    await r.wait(lambda: len(r.of(ReaderOnline)) == 2, "online again")
    await r.deal(1)
    await until_lines(r, 5)
    assert [e.card for e in r.of(CardSeen)] == r.dealt_cards()
    assert_intact_lines_delivered_once(r)


async def test_ascii_commands_are_no_ops(rig: RigFactory) -> None:
    r = await rig("ascii")
    await r.online()
    assert await r.reader.lock() is False
    assert await r.reader.unlock() is False
    assert await r.reader.request_status() is False
    assert r.reader.locked is None
    await r.deal(1)
    await until_lines(r, 1)
    assert not r.of(HardwareWarning)  # no lock belief in a dialect without a lock


async def test_ascii_shoe_reboot_loses_only_what_it_had_not_sent(rig: RigFactory) -> None:
    r = await rig("ascii", outage=0.1)
    await r.online()
    await r.deal(2)
    await until_lines(r, 2)
    r.shoe.reboot(downtime=0.15)
    with pytest.raises(ShoeNotRunningError):
        r.shoe.deal()
    await r.wait(lambda: not r.shoe._rebooting, "the reboot to finish")
    await r.deal(2)
    await until_lines(r, 4)
    assert [e.card for e in r.of(CardSeen)] == r.dealt_cards()
    assert_intact_lines_delivered_once(r)
