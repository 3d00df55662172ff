"""The virtual shoe seen from a plain pyserial host: the bytes it puts on the wire."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
import serial

from hardware_sim.faults import FaultPlan, FaultSpecError, parse_fault_spec
from hardware_sim.pty_link import PtyLink
from hardware_sim.virtual_shoe import (
    CUT,
    ShoeError,
    ShoeJammedError,
    ShoeLoadError,
    ShoeLockedError,
    ShoeNotRunningError,
    VirtualShoe,
)
from shoe_reader.framing import Frame, FrameParser, encode_frame
from table_service.rules.cards import standard_deck

pytestmark = pytest.mark.timeout(120)


class Host:
    """A bare host on the pseudo-terminal: collects frames, answers only when told."""

    def __init__(self, path: str) -> None:
        self.port = serial.serial_for_url(path, 9600, timeout=0.02)
        self.parser = FrameParser()
        self.frames: list[Frame] = []
        self.seq = 0

    def pump(self, seconds: float) -> list[Frame]:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            data = self.port.read(self.port.in_waiting or 1)
            self.frames += [f for f in self.parser.feed(data) if isinstance(f, Frame)]
        return self.frames

    def until(
        self, predicate: Callable[[list[Frame]], object], seconds: float = 30.0
    ) -> list[Frame]:
        end = time.monotonic() + seconds
        while not predicate(self.frames):
            assert time.monotonic() < end, [(f.seq, f.type, f.payload) for f in self.frames]
            self.pump(0.02)
        return self.frames

    def send(self, frame_type: str, payload: str = "") -> None:
        self.port.write(encode_frame(self.seq, frame_type, payload))
        self.seq += 1

    def close(self) -> None:
        self.port.close()


@pytest.fixture
def shoe() -> Iterator[VirtualShoe]:
    vs = VirtualShoe(seed=1, heartbeat=0.05, retransmit_interval=0.03, max_retransmits=3)
    vs.start()
    yield vs
    vs.stop()


def types(frames: list[Frame]) -> list[str]:
    return [f.type for f in frames]


def test_eight_deck_shoe_is_complete_seeded_and_cut_52_from_the_back() -> None:
    a = VirtualShoe(decks=8, seed=42)
    cards = a.remaining
    assert len(cards) == 8 * 52 + 1
    assert cards.index(CUT) == len(cards) - 1 - 52
    counts = Counter(c for c in cards if c != CUT)
    assert set(counts) == {c.code for c in standard_deck()}
    assert set(counts.values()) == {8}
    assert VirtualShoe(seed=42).remaining == cards
    assert VirtualShoe(seed=43).remaining != cards


def test_load_validates_and_normalises() -> None:
    vs = VirtualShoe(cut_depth=2)
    vs.load(["10D", "as", "KH", "2C"])
    assert vs.remaining == ["TD", "AS", CUT, "KH", "2C"]
    vs.load(["AS", CUT, "KD"])
    assert vs.remaining == ["AS", CUT, "KD"]
    before = vs.remaining
    with pytest.raises(ShoeLoadError, match="ZZ"):
        vs.load(["AS", "ZZ"])
    assert vs.remaining == before


def test_a_shoe_change_lifts_the_rest_out_and_deals_a_fresh_shoe() -> None:
    """load() is refused once a card left the shoe; refill() is the shoe change."""
    with VirtualShoe(decks=1, seed=5, cut_depth=10) as vs:
        order = vs.remaining
        assert [vs.deal() for _ in range(3)] == order[:3]
        with pytest.raises(ShoeLoadError):
            vs.load(["AS"])
        assert vs.refill() == order[3:]
        fresh = vs.remaining
        assert vs.dealt == [] and len(fresh) == 52 + 1 and fresh.index(CUT) == 52 - 10
        assert Counter(c for c in fresh if c != CUT) == Counter(c.code for c in standard_deck())
        assert vs.deal() == fresh[0] and vs.dealt == [fresh[0]]


def test_dealing_needs_a_running_shoe() -> None:
    with pytest.raises(ShoeNotRunningError):
        VirtualShoe().deal()
    with pytest.raises(ShoeError):
        VirtualShoe("morse")  # type: ignore[arg-type]  # no such dialect: the test


def test_pty_passes_every_byte_unchanged_both_ways() -> None:
    link = PtyLink()
    link.open()
    try:
        port = serial.serial_for_url(link.path, 115200, timeout=0.5)
        every = bytes(range(256)) * 4  # CR, LF, XON/XOFF, ^C, DEL, high bytes
        assert link.write(every)
        got = b""
        while len(got) < len(every):
            chunk = port.read(len(every) - len(got))
            assert chunk, "pty stalled"
            got += chunk
        assert got == every
        port.write(every)
        back = b""
        deadline = time.monotonic() + 30  # generous: a loaded machine is slower, never red
        while len(back) < len(every) and time.monotonic() < deadline:
            back += link.read()
        assert back == every
        port.close()
    finally:
        link.dispose()
    assert not os.path.lexists(link.path)


def test_hello_then_heartbeats_with_rising_seq(shoe: VirtualShoe) -> None:
    host = Host(shoe.device_path)
    try:
        frames = host.until(lambda fs: len(fs) >= 4)
        assert frames[0].type == "HLO" and frames[0].seq == 0
        assert frames[0].payload == "LTSIM;1.0;SIM0001"
        assert types(frames[1:4]) == ["HBT"] * 3
        assert [f.seq for f in frames[:4]] == [0, 1, 2, 3]
        assert frames[1].payload == "U"
    finally:
        host.close()


def test_unacknowledged_card_is_retransmitted_then_e9(shoe: VirtualShoe) -> None:
    host = Host(shoe.device_path)
    try:
        host.send("STA")
        host.until(lambda fs: "HLO" in types(fs))
        card = shoe.deal()
        frames = host.until(lambda fs: "ERR" in types(fs))
        crd = [f for f in frames if f.type == "CRD"]
        assert len(crd) == 1 + shoe.max_retransmits
        assert {(f.seq, f.payload) for f in crd} == {(crd[0].seq, card)}
        err = next(f for f in frames if f.type == "ERR")
        assert err.payload == "E9;No host" and err.seq == crd[0].seq + 1
        # No heartbeat went out while the card was waiting for its ACK.
        between = frames[frames.index(crd[0]) : frames.index(err)]
        assert set(types(between)) == {"CRD"}
    finally:
        host.close()


def test_ack_stops_retransmission_and_nak_forces_it() -> None:
    # The timer's retransmissions 1 s apart, not the fixture's 0.03 s: on a loaded machine
    # the host's ACK may take longer than three of those to be read, and the shoe then
    # gives up (E9) before it (a race of this test, not of the shoe).
    with VirtualShoe(seed=1, heartbeat=0.05, retransmit_interval=1.0, max_retransmits=3) as shoe:
        host = Host(shoe.device_path)
        try:
            host.until(lambda fs: "HLO" in types(fs))
            shoe.deal()
            frames = host.until(lambda fs: "CRD" in types(fs))
            crd = next(f for f in frames if f.type == "CRD")
            host.send("NAK", f"{crd.seq:03d}")
            host.until(lambda fs: types(fs).count("CRD") >= 2)
            host.send("ACK", f"{crd.seq:03d}")
            host.until(lambda fs: shoe.idle())  # the ACK read: nothing waits for one
            host.pump(0.1)  # a retransmission the ACK raced would show now
            assert types(host.frames).count("CRD") <= 3  # at most one timer retransmission raced
            assert "ERR" not in types(host.frames)
            assert shoe.idle()
        finally:
            host.close()


def test_lock_is_honoured_and_reported_in_heartbeats(shoe: VirtualShoe) -> None:
    host = Host(shoe.device_path)
    try:
        host.until(lambda fs: "HLO" in types(fs))
        host.send("LCK")
        host.until(lambda fs: any(f.type == "HBT" and f.payload == "L" for f in fs))
        assert shoe.locked
        with pytest.raises(ShoeLockedError):
            shoe.deal()
        assert shoe.dealt == []
        host.send("ULK")
        host.until(lambda fs: fs[-1].type == "HBT" and fs[-1].payload == "U")
        assert shoe.deal()
    finally:
        host.close()


def test_status_request_gets_an_immediate_heartbeat() -> None:
    with VirtualShoe(seed=1, heartbeat=10.0) as vs:
        host = Host(vs.device_path)
        try:
            host.until(lambda fs: "HLO" in types(fs))
            host.send("STA")
            # Well before the periodic one, due 10 s after the HLO (5 s: room for a loaded
            # machine, none for a heartbeat that waited for its period).
            host.until(lambda fs: "HBT" in types(fs), seconds=5.0)
        finally:
            host.close()


def test_unplug_removes_the_device_and_replug_brings_a_new_pty(shoe: VirtualShoe) -> None:
    assert os.path.realpath(shoe.device_path) == shoe.pty_path
    shoe.unplug()
    assert not os.path.lexists(shoe.device_path) and shoe.pty_path is None
    with pytest.raises(serial.SerialException):
        serial.serial_for_url(shoe.device_path)
    pty = shoe.replug()
    assert os.path.realpath(shoe.device_path) == pty
    host = Host(shoe.device_path)
    try:
        host.until(lambda fs: "HLO" in types(fs))
    finally:
        host.close()


def test_reboot_says_hello_again_and_forgets_the_lock(shoe: VirtualShoe) -> None:
    host = Host(shoe.device_path)
    try:
        host.until(lambda fs: "HLO" in types(fs))
        host.send("LCK")
        host.until(lambda fs: any(f.payload == "L" for f in fs))
        shoe.reboot(downtime=0.1)
        host.until(lambda fs: types(fs).count("HLO") == 2)
        hello = [f for f in host.frames if f.type == "HLO"][1]
        assert hello.seq == 0
        host.until(lambda fs: fs[-1].type == "HBT")
        assert host.frames[-1].payload == "U"
    finally:
        host.close()


def test_jam_and_empty(shoe: VirtualShoe) -> None:
    shoe.load(["AS"])
    shoe.jam()
    with pytest.raises(ShoeJammedError):
        shoe.deal()
    shoe.clear_jam()
    assert shoe.deal() == "AS"
    assert shoe.deal() is None
    host = Host(shoe.device_path)
    try:
        frames = host.until(lambda fs: "EMP" in types(fs))
        errors = [f.payload for f in frames if f.type == "ERR"]
        assert errors[0] == "E7;Card jam"  # then E9: this host never ACKs the card
        assert next(f.payload for f in frames if f.type == "CRD") == "AS"
    finally:
        host.close()


def test_rate_deals_by_itself_only_while_a_host_listens() -> None:
    with VirtualShoe(seed=2, rate=50, heartbeat=0.05) as vs:
        time.sleep(0.2)
        assert vs.dealt == []  # nobody connected yet
        host = Host(vs.device_path)
        try:
            # ACK every card so the shoe keeps going.
            end = time.monotonic() + 30  # generous: the loop ends at the fifth ACK
            acked: set[int] = set()
            while len(acked) < 5 and time.monotonic() < end:
                for f in host.pump(0.02):
                    if f.type == "CRD" and f.seq not in acked:
                        host.send("ACK", f"{f.seq:03d}")
                        acked.add(f.seq)
            assert len(acked) >= 5
            by_seq = {f.seq: f.payload for f in host.frames if f.type == "CRD"}
            assert list(by_seq.values())[:5] == vs.dealt[:5]
        finally:
            host.close()


def test_fault_spec_parsing() -> None:
    spec = parse_fault_spec("corrupt=0.05, drop=0.1,duplicate=0.2,unplug=0.01")
    assert spec.probabilities == {"corrupt": 0.05, "drop": 0.1, "dup": 0.2, "unplug": 0.01}
    assert not parse_fault_spec(None) and not parse_fault_spec("")
    for bad, message in [
        ("flood=0.1", "unknown fault"),
        ("drop", "needs a probability"),
        ("drop=x", "not a number"),
        ("drop=1.5", "within 0..1"),
    ]:
        with pytest.raises(FaultSpecError, match=message):
            parse_fault_spec(bad)


def test_forced_faults_target_a_frame_type_and_random_ones_are_seeded() -> None:
    plan = FaultPlan()
    plan.force("drop", 2, "CRD")
    assert not plan.strikes("drop", "HBT")
    assert plan.strikes("drop", "CRD") and plan.strikes("drop", "CRD")
    assert not plan.strikes("drop", "CRD")
    with pytest.raises(FaultSpecError):
        plan.force("unplug")
    a = FaultPlan(parse_fault_spec("noise=0.5"), seed=3)
    b = FaultPlan(parse_fault_spec("noise=0.5"), seed=3)
    draws = [a.strikes("noise") for _ in range(50)]
    assert draws == [b.strikes("noise") for _ in range(50)]
    assert 10 < sum(draws) < 40


def test_a_stopped_shoe_cannot_be_restarted_and_leaves_no_device() -> None:
    vs = VirtualShoe(seed=1).start()
    path = vs.device_path
    assert os.path.lexists(path)
    vs.stop()
    vs.stop()  # idempotent
    assert not os.path.lexists(path)
    with pytest.raises(ShoeNotRunningError):
        vs.start()
    with pytest.raises(ShoeNotRunningError):
        vs.deal()


def test_a_shoe_nobody_listens_to_does_not_spin() -> None:
    """Overdue heartbeats and deals wait for a host; they must not make a busy loop."""
    with VirtualShoe(seed=1, rate=5.0, heartbeat=0.01):
        t0 = time.process_time()
        time.sleep(0.5)
        used = time.process_time() - t0
    assert used < 0.25, f"{used:.3f} s of CPU in 0.5 s with no host"
