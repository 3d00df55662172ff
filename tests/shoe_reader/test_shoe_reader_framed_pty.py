"""The framed reader against the virtual shoe through a real pseudo-terminal, one test per
fault kind: the cards delivered are the cards dealt (no duplicate, no loss) and every gap
the protocol can see is flagged."""

from __future__ import annotations

import functools
import time

import pytest

from hardware_sim.virtual_shoe import ShoeJammedError, ShoeLockedError, VirtualShoe
from shoe_reader.events import (
    CardSeen,
    CutCardSeen,
    HardwareAlarm,
    HardwareWarning,
    LidChanged,
    MissedCardSuspected,
    ReaderOffline,
    ReaderOnline,
    ShoeEmpty,
    UnreadableCard,
)
from shoe_reader.framed_session import (
    CARD_WHILE_LOCKED,
    POSSIBLE_DUPLICATE,
    FramedSession,
    repeated_card,
)
from shoe_reader.serial_reader import open_reader
from table_service.rules.cards import standard_deck
from tests.shoe_reader.conftest import Rig, RigFactory

pytestmark = pytest.mark.timeout(180)  # waits are bounded at 60 s each (conftest.WAIT)


def framed(r: Rig) -> FramedSession:
    """The reader's session: the framed dialect's, in these tests."""
    session = r.reader.session
    assert isinstance(session, FramedSession)
    return session


async def test_clean_deal_with_cut_card(rig: RigFactory) -> None:
    r = await rig(cut_depth=5)
    codes = [c.code for c in standard_deck()][:24]
    r.shoe.load(codes)
    await r.online()
    await r.deal(25)
    await r.settled(24)
    assert r.cards() == r.dealt_cards() == codes
    assert r.shoe.dealt.index("CUT") == 19  # five cards behind it
    assert len(r.of(CutCardSeen)) == 1
    assert r.kinds().count("card") == 24
    assert not r.of(MissedCardSuspected)
    online = r.of(ReaderOnline)[0]
    assert online.info == "LTSIM;1.0;SIM0001" and not online.restarted
    assert framed(r).stats.acks_sent >= 25


async def test_corrupted_frames_are_naked_and_resent(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    for i in range(6):
        r.shoe.corrupt_next(1, "CRD")
        r.shoe.deal()
        await r.settled(i + 1)
    assert r.cards() == r.dealt_cards()
    assert framed(r).stats.frames_bad >= 6
    assert r.shoe.naks_received >= 1
    assert not r.of(MissedCardSuspected)


async def test_dropped_card_frames_are_retransmitted_and_delivered_once(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    for i in range(5):
        r.shoe.drop_next(2, "CRD")  # the frame and its first retransmission
        r.shoe.deal()
        await r.settled(i + 1)
    assert r.cards() == r.dealt_cards()
    assert not r.of(MissedCardSuspected)


def _heard_after_a_dropped_heartbeat(shoe: VirtualShoe, since: float) -> bool:
    sent = [t for t in list(shoe.transmissions) if t.sent >= since]
    dropped = next((i for i, t in enumerate(sent) if t.type == "HBT" and t.fate == "dropped"), None)
    return dropped is not None and any(t.reached_host for t in sent[dropped + 1 :])


async def test_dropped_heartbeats_are_flagged_as_possible_missed_cards(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    for i in range(3):
        since = time.monotonic()
        r.shoe.drop_next(1, "HBT")
        # The dropped heartbeat goes out, then a frame that reaches the host and shows the
        # gap; the card comes after both (waited for, not slept: a loaded machine's shoe
        # thread may take longer than a heartbeat period).
        await r.wait(
            functools.partial(_heard_after_a_dropped_heartbeat, r.shoe, since),
            "a dropped heartbeat, then a frame the host got",
        )
        r.shoe.deal()
        await r.settled(i + 1)
    assert r.cards() == r.dealt_cards()
    gaps = r.of(MissedCardSuspected)
    assert len(gaps) == 3 and all(g.missing == 1 for g in gaps)
    r.assert_visible_gaps_flagged()


async def test_duplicated_frames_are_delivered_once(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    r.shoe.duplicate_next(10)
    await r.deal(8)
    await r.settled(8)
    assert r.cards() == r.dealt_cards()
    assert framed(r).stats.duplicates >= 1


async def test_frames_dribbled_byte_by_byte(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    r.shoe.dribble_next(10)
    await r.deal(6)
    await r.settled(6)
    assert r.cards() == r.dealt_cards()
    assert not r.of(MissedCardSuspected)


async def test_noise_bursts_between_frames(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    for i in range(8):
        r.shoe.noise_next(1, "CRD")
        r.shoe.deal()
        await r.settled(i + 1)
    assert r.cards() == r.dealt_cards()
    assert framed(r).stats.noise_bytes + framed(r).stats.frames_bad > 0
    assert not r.of(MissedCardSuspected)


async def test_no_ack_ever_means_e9_and_a_flagged_gap(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    await r.deal(2)
    await r.settled(2)
    r.shoe.drop_next(1 + r.shoe.max_retransmits, "CRD")
    (lost,) = await r.deal(1)
    await r.wait(lambda: r.of(HardwareAlarm), "ERR E9")
    await r.deal(1)
    await r.settled(3)
    assert r.of(HardwareAlarm)[0].code == "E9"
    dealt = r.dealt_cards()
    assert dealt[2] == lost
    assert r.cards() == dealt[:2] + dealt[3:]  # the lost card only, and it is flagged:
    (gap,) = r.of(MissedCardSuspected)
    assert gap.missing == 1
    r.assert_visible_gaps_flagged()


async def test_cable_pulled_and_plugged_back_reconnects_with_backoff(rig: RigFactory) -> None:
    r = await rig(reader={"reconnect_initial": 0.05, "reconnect_max": 0.2})
    await r.online()
    await r.deal(3)
    await r.settled(3)
    unplugged = time.monotonic()
    r.shoe.unplug()
    await r.wait(lambda: r.of(ReaderOffline), "offline after the cable was pulled")
    assert "device lost" in r.of(ReaderOffline)[0].reason
    await r.deal(2)  # dealt while unplugged: the shoe holds the frames
    # Back-off: 0.05, 0.1, 0.2, 0.2, ... — the n-th failed attempt comes 0.2 n - 0.25 s or
    # more after the cable was pulled, not one per read timeout (0.02 s). Waited for as a
    # count; bounded by the time it took, however long a loaded machine makes that.
    await r.wait(lambda: r.reader.open_failures >= 3, "three attempts to reopen the port")
    failures = r.reader.open_failures
    took = time.monotonic() - unplugged
    assert 3 <= failures <= (took + 0.25) / 0.2 + 1, (failures, took)
    r.shoe.replug()
    await r.wait(lambda: r.reader.online, "back online after replug")
    await r.deal(2)
    await r.settled(7)
    assert r.cards() == r.dealt_cards()
    assert r.reader.connections == 2
    restarted = [e for e in r.of(ReaderOnline) if e.restarted]
    assert len(restarted) == 1
    kinds = r.kinds()
    assert kinds.index("offline") < len(kinds) - 1 - kinds[::-1].index("online")


async def test_shoe_reboot_resets_seq_and_the_lock_is_reasserted(rig: RigFactory) -> None:
    # The reboot is seen by its HLO, not by silence: a silence timeout of 2 s (not the
    # rig's 0.4 s) keeps a loaded machine's stalled thread from adding an offline and an
    # online of its own (a CI run saw three onlines).
    r = await rig(reader={"offline_timeout": 2.0})
    await r.online()
    await r.deal(3)
    await r.settled(3)
    await r.reader.lock()
    await r.wait(lambda: r.shoe.locked and r.reader.locked, "shoe locked")
    r.shoe.reboot(downtime=0.1)
    await r.wait(lambda: [e for e in r.of(ReaderOnline) if e.restarted], "HLO after reboot")
    # The rebooted shoe forgot LCK; the reader sends it again on the HLO.
    await r.wait(lambda: r.shoe.locked, "lock re-asserted after the reboot")
    with pytest.raises(ShoeLockedError):
        r.shoe.deal()
    await r.reader.unlock()
    await r.wait(lambda: not r.shoe.locked, "shoe unlocked")
    await r.deal(3)
    await r.settled(6)
    assert r.cards() == r.dealt_cards()
    assert not r.of(MissedCardSuspected)
    assert [e.seq for e in r.of(ReaderOnline)] == [0, 0]


async def test_unread_card(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    await r.deal(2)
    r.shoe.unread_next()
    await r.deal(2)
    await r.wait(lambda: len(r.cards()) == 3 and r.shoe.idle(), "three cards and one unread")
    (unread,) = r.of(UnreadableCard)
    assert unread.reason
    dealt = r.dealt_cards()
    assert r.cards() == dealt[:2] + dealt[3:]


async def test_jam_refuses_dealing_until_cleared(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    r.shoe.jam()
    await r.wait(lambda: r.of(HardwareAlarm), "the jam alarm")
    assert (r.of(HardwareAlarm)[0].code, r.of(HardwareAlarm)[0].text) == ("E7", "Card jam")
    with pytest.raises(ShoeJammedError):
        r.shoe.deal()
    r.shoe.clear_jam()
    await r.deal(2)
    await r.settled(2)
    assert r.cards() == r.dealt_cards()


async def test_silent_shoe_goes_offline_and_comes_back(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    r.shoe.freeze(duration=0.9)
    await r.wait(lambda: r.of(ReaderOffline), "offline on heartbeat silence")
    assert "no heartbeat" in r.of(ReaderOffline)[0].reason
    await r.wait(lambda: r.reader.online, "online again after the freeze")
    await r.deal(2)
    await r.settled(2)
    assert r.cards() == r.dealt_cards()
    assert r.reader.connections >= 2  # the reader reopened the port while it was silent


async def test_lock_unlock_status_and_card_while_locked(rig: RigFactory) -> None:
    r = await rig(heartbeat=5.0)  # only STA / LCK / ULK make heartbeats here
    await r.online()
    assert await r.reader.request_status()
    await r.wait(lambda: r.reader.locked is False, "a heartbeat saying unlocked")
    assert await r.reader.lock()
    await r.wait(lambda: r.reader.locked is True, "a heartbeat saying locked")
    with pytest.raises(ShoeLockedError):
        r.shoe.deal()
    r.shoe.honours_lock = False  # a faulty shoe releases a card anyway
    r.shoe.deal()
    await r.settled(1)
    warning = r.of(HardwareWarning)[0]
    assert warning.code == CARD_WHILE_LOCKED
    assert r.kinds().index("warning") == r.kinds().index("card") - 1
    assert r.cards() == r.dealt_cards()


async def test_missed_scan_is_invisible_to_the_protocol(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    await r.deal(1)
    assert r.shoe.deal(scan=False)
    await r.deal(1)
    await r.settled(2)
    dealt = r.dealt_cards()
    assert r.cards() == [dealt[0], dealt[2]]
    assert not r.of(MissedCardSuspected)  # nothing on the wire: only the game can tell


async def test_empty_shoe(rig: RigFactory) -> None:
    r = await rig()
    r.shoe.load(["AS", "KD", "TD"])
    await r.online()
    await r.deal(3)
    await r.wait(lambda: r.of(ShoeEmpty), "EMP")
    assert r.shoe.deal() is None
    await r.settled(3)
    assert r.cards() == ["AS", "KD", "TD"]
    assert len(r.of(ShoeEmpty)) == 1


async def test_random_faults_seeded(rig: RigFactory) -> None:
    r = await rig(seed=11, faults="corrupt=0.15,drop=0.1,dup=0.15,dribble=0.1,noise=0.15")
    await r.online()
    await r.deal(40, pause=0.01)
    await r.settled(40, timeout=20)
    assert r.cards() == r.dealt_cards()
    assert sum(r.shoe.faults.struck.values()) >= 10
    r.assert_visible_gaps_flagged()


async def test_seq_wraps_999_to_000_through_the_pty(rig: RigFactory) -> None:
    r = await rig(decks=20, cut_depth=0)
    await r.online()
    while len(r.shoe.transmissions) < 1010:
        await r.deal(100)
        await r.settled(len(r.shoe.dealt), timeout=20)
    seqs = [t.seq for t in r.shoe.transmissions]
    assert 999 in seqs and seqs.index(999) < len(seqs) - 1
    assert seqs[seqs.index(999) + 1] == 0
    assert r.cards() == r.dealt_cards()
    assert not r.of(MissedCardSuspected)
    assert len(r.of(ReaderOnline)) == 1


async def test_random_line_faults_unplug_the_cable_and_the_reader_follows(rig: RigFactory) -> None:
    r = await rig(faults="unplug=1.0", outage=0.2)
    await r.online()
    await r.deal(2)
    await r.wait(lambda: r.of(ReaderOffline), "a random cable pull")
    await r.wait(lambda: len(r.of(ReaderOnline)) >= 2, "back after the outage")
    assert r.shoe.faults.struck["unplug"] >= 1
    await r.deal(2)
    await r.wait(lambda: len(r.cards()) == 4, "all four cards")
    assert r.cards() == r.dealt_cards()


async def test_lid_opened_and_closed(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    r.shoe.open_lid()
    r.shoe.close_lid()
    await r.wait(lambda: len(r.of(LidChanged)) == 2, "two lid events")
    assert [e.open for e in r.of(LidChanged)] == [True, False]


async def test_a_second_reader_cannot_steal_the_port(rig: RigFactory) -> None:
    r = await rig()
    await r.online()
    async with open_reader(
        r.shoe.device_path, "framed", "intruder", reconnect_initial=0.05
    ) as other:
        await r.wait(lambda: other.open_failures >= 1, "the second reader to be refused")
        assert not other.connected
    await r.deal(2)
    await r.settled(2)
    assert r.cards() == r.dealt_cards()


async def test_card_resent_after_a_lost_ack_and_a_pulled_cable_is_flagged_once(
    rig: RigFactory,
) -> None:
    # Slow retransmission and a patient reader: the shoe still waits for KD's ACK when the
    # cable goes, and only the test pulls it.
    r = await rig(retransmit_interval=3.0, reader={"offline_timeout": 2.0})
    r.shoe.load(["AS", "KD", "7H", "2C"])
    await r.online()
    await r.deal(1)
    await r.settled(1)
    r.shoe.lose_acks(1)
    await r.deal(1)
    await r.wait(lambda: r.cards() == ["AS", "KD"] and r.shoe.acks_lost == 1, "KD, ACK lost")
    assert not r.shoe.idle()  # the shoe still holds KD
    r.shoe.unplug()
    await r.wait(lambda: r.of(ReaderOffline), "offline after the cable was pulled")
    r.shoe.replug()
    await r.wait(lambda: len(r.cards()) == 3, "KD re-sent after the HLO")
    await r.deal(1)
    await r.settled(4)
    assert r.dealt_cards() == ["AS", "KD", "7H"]
    assert r.cards() == ["AS", "KD", "KD", "7H"]  # delivered, never silently dropped...
    (warning,) = r.of(HardwareWarning)  # ...and flagged exactly once
    assert warning.code == POSSIBLE_DUPLICATE
    assert repeated_card(warning.raw) == "KD"
    kinds = r.kinds()
    at = r.events.index(warning)
    after = r.events[at + 1]
    assert kinds[at + 1] == "card" and isinstance(after, CardSeen) and after.card == "KD"
    assert warning.seq == r.events[at + 1].seq == 1  # the first frame after the new HLO
    offline = kinds.index("offline")
    assert offline < at and "online" in kinds[offline:at]
    assert not r.of(MissedCardSuspected)


async def test_reconnect_without_a_pending_card_raises_no_duplicate_warning(
    rig: RigFactory,
) -> None:
    r = await rig(reader={"resend_window": 0.3})
    r.shoe.load(["AS", "KD", "AS", "KD"])  # the same codes again: legitimate copies
    await r.online()
    await r.deal(2)
    await r.settled(2)  # KD's ACK got through: the shoe holds nothing to re-send
    # The cable goes only once the reader has heard the shoe (heartbeats) past the resend
    # window after KD: the cards it delivered are then no longer suspects at the next HLO.
    kd = r.of(CardSeen)[-1]
    window = framed(r).resend_window
    await r.wait(
        lambda: (framed(r)._last_frame_at or 0.0) - kd.monotonic > window,
        "a frame heard past the resend window after KD",
    )
    r.shoe.unplug()
    await r.wait(lambda: r.of(ReaderOffline), "offline after the cable was pulled")
    r.shoe.replug()
    await r.wait(lambda: [e for e in r.of(ReaderOnline) if e.restarted], "HLO after replug")
    await r.deal(2)
    await r.settled(4)
    assert r.cards() == r.dealt_cards() == ["AS", "KD", "AS", "KD"]
    assert not r.of(HardwareWarning)
