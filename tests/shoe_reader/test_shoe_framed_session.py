"""Host side of the framed dialect, driven byte by byte without a port."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from shoe_reader.events import (
    CardSeen,
    CutCardSeen,
    HardwareAlarm,
    HardwareWarning,
    LidChanged,
    MissedCardSuspected,
    ReaderEvent,
    ReaderOffline,
    ReaderOnline,
    ShoeEmpty,
    UnknownMessage,
    UnreadableCard,
)
from shoe_reader.framed_session import CARD_WHILE_LOCKED, FramedSession
from shoe_reader.framing import BadFrame, Frame, FrameParser, crc16, encode_frame
from shoe_reader.session import Stamp


def stamp(t: float = 0.0) -> Stamp:
    return Stamp(t, datetime(2026, 1, 1, tzinfo=UTC))


def feed(session: FramedSession, *frames: bytes, t: float = 0.0) -> tuple[list[ReaderEvent], bytes]:
    return session.receive(b"".join(frames), stamp(t))


def replies(data: bytes) -> list[tuple[str, str]]:
    return [(f.type, f.payload) for f in FrameParser().feed(data) if isinstance(f, Frame)]


def kinds(events: list[ReaderEvent]) -> list[str]:
    return [e.event for e in events]


def test_hello_then_card_is_delivered_acked_and_stamped() -> None:
    s = FramedSession("r1")
    events, reply = feed(s, encode_frame(0, "HLO", "M;1;S"), encode_frame(1, "CRD", "TD"), t=5.0)
    assert kinds(events) == ["online", "card"]
    online, card = events
    assert isinstance(online, ReaderOnline) and online.info == "M;1;S" and not online.restarted
    assert isinstance(card, CardSeen)
    assert (card.card, card.seq, card.reader_id, card.monotonic) == ("TD", 1, "r1", 5.0)
    assert card.raw == encode_frame(1, "CRD", "TD")
    assert replies(reply) == [("ACK", "001")]


def test_every_ackable_type_is_acked_and_mapped() -> None:
    s = FramedSession("r")
    events, reply = feed(
        s,
        encode_frame(0, "HLO", "x"),
        encode_frame(1, "CUT"),
        encode_frame(2, "UNR"),
        encode_frame(3, "EMP"),
        encode_frame(4, "LID", "O"),
        encode_frame(5, "ERR", "E7;Card jam"),
        encode_frame(6, "HBT", "L"),
    )
    assert [type(e) for e in events] == [
        ReaderOnline,
        CutCardSeen,
        UnreadableCard,
        ShoeEmpty,
        LidChanged,
        HardwareAlarm,
    ]
    assert isinstance(events[4], LidChanged) and events[4].open
    assert isinstance(events[5], HardwareAlarm)
    assert (events[5].code, events[5].text) == ("E7", "Card jam")
    assert replies(reply) == [("ACK", "001"), ("ACK", "002"), ("ACK", "003")]
    assert s.shoe_locked is True


def test_retransmission_is_acked_again_but_delivered_once() -> None:
    s = FramedSession("r")
    feed(s, encode_frame(0, "HLO", "x"))
    crd = encode_frame(1, "CRD", "AS")
    events, reply = feed(s, crd, crd, crd)
    assert kinds(events) == ["card"]
    assert replies(reply) == [("ACK", "001")] * 3
    assert s.stats.duplicates == 2


def test_seq_wraps_from_999_to_000_without_a_gap() -> None:
    s = FramedSession("r")
    events, _ = feed(
        s,
        encode_frame(998, "CRD", "2C"),
        encode_frame(999, "CRD", "3C"),
        encode_frame(0, "CRD", "4C"),
    )
    assert kinds(events) == ["online", "card", "card", "card"]


def test_seq_gap_raises_missed_card_before_delivering_the_frame() -> None:
    s = FramedSession("r")
    feed(s, encode_frame(0, "HLO", "x"), encode_frame(1, "HBT", "U"))
    events, _ = feed(s, encode_frame(4, "CRD", "KH"))
    assert kinds(events) == ["missed_card_suspected", "card"]
    gap = events[0]
    assert isinstance(gap, MissedCardSuspected)
    assert (gap.expected_seq, gap.seq, gap.missing) == (2, 4, 2)


def test_gap_across_the_wrap() -> None:
    s = FramedSession("r")
    feed(s, encode_frame(998, "HBT", "U"))
    events, _ = feed(s, encode_frame(1, "CRD", "KH"))
    gap = events[0]
    assert isinstance(gap, MissedCardSuspected) and (gap.expected_seq, gap.missing) == (999, 2)


def test_late_frame_after_a_gap_is_delivered_once() -> None:
    s = FramedSession("r")
    feed(s, encode_frame(0, "HLO", "x"))
    events, _ = feed(s, encode_frame(2, "HBT", "U"))
    assert kinds(events) == ["missed_card_suspected"]
    events, reply = feed(s, encode_frame(1, "CRD", "5S"), encode_frame(1, "CRD", "5S"))
    assert kinds(events) == ["card"]
    assert replies(reply) == [("ACK", "001"), ("ACK", "001")]


def test_hello_resets_the_seq() -> None:
    s = FramedSession("r")
    feed(s, encode_frame(0, "HLO", "x"), encode_frame(1, "CRD", "AS"), encode_frame(2, "HBT", "U"))
    events, _ = feed(s, encode_frame(0, "HLO", "x"), encode_frame(1, "CRD", "AS"))
    assert kinds(events) == ["online", "card"]
    assert isinstance(events[0], ReaderOnline) and events[0].restarted


def test_a_resent_hello_is_not_a_second_restart() -> None:
    s = FramedSession("r")
    hlo = encode_frame(0, "HLO", "x")
    events, _ = feed(s, hlo, hlo)
    assert kinds(events) == ["online"]
    events, _ = feed(s, encode_frame(1, "HBT", "U"), hlo)  # after other frames: a real restart
    assert kinds(events) == ["online"]
    assert isinstance(events[0], ReaderOnline) and events[0].restarted


def test_same_seq_with_other_content_is_a_restart_never_a_duplicate() -> None:
    s = FramedSession("r")
    feed(s, encode_frame(0, "HLO", "x"), encode_frame(1, "CRD", "AS"), encode_frame(2, "CRD", "2S"))
    # The shoe rebooted and its HLO was lost: SEQ 1 again, another card.
    events, _ = feed(s, encode_frame(1, "CRD", "9D"))
    assert kinds(events) == ["missed_card_suspected", "card"]
    assert isinstance(events[1], CardSeen) and events[1].card == "9D"


def test_bad_frames_are_naked_with_their_seq_when_readable() -> None:
    s = FramedSession("r")
    bad = bytearray(encode_frame(17, "CRD", "AS"))
    bad[-4] ^= 0x01  # a CRC digit
    events, reply = feed(s, bytes(bad), b"\x02garbage\x03ABCD\r\n")
    assert events == []
    assert replies(reply) == [("NAK", "017"), ("NAK", "")]
    assert s.stats.frames_bad == 2


def test_host_frames_echoed_back_are_ignored_not_naked() -> None:
    s = FramedSession("r")
    events, reply = feed(s, encode_frame(0, "NAK", ""), encode_frame(1, "ACK", "001"))
    assert events == [] and reply == b""
    assert s.stats.echoes == 2


def test_unknown_payloads_are_reported_not_crashed() -> None:
    s = FramedSession("r")
    events, reply = feed(
        s, encode_frame(0, "HLO", "x"), encode_frame(1, "CRD", "1X"), encode_frame(2, "HBT", "?")
    )
    assert isinstance(events[1], UnreadableCard) and "1X" in events[1].reason
    assert isinstance(events[2], UnknownMessage)
    assert replies(reply) == [("ACK", "001")]


def test_heartbeat_silence_makes_the_reader_offline_once() -> None:
    s = FramedSession("r", offline_timeout=3.0)
    feed(s, encode_frame(0, "HLO", "x"), t=10.0)
    assert s.poll(stamp(12.9)) == []
    events = s.poll(stamp(13.5))
    assert len(events) == 1 and isinstance(events[0], ReaderOffline)
    assert s.poll(stamp(20.0)) == []
    events, _ = feed(s, encode_frame(1, "HBT", "U"), t=21.0)
    assert kinds(events) == ["online"]


def test_card_while_host_believes_locked_is_flagged_and_still_delivered() -> None:
    s = FramedSession("r")
    feed(s, encode_frame(0, "HLO", "x"), encode_frame(1, "HBT", "U"))
    lck = s.host_frame("LCK")
    assert replies(lck) == [("LCK", "")]
    events, _ = feed(s, encode_frame(2, "CRD", "QS"))
    assert kinds(events) == ["warning", "card"]
    assert isinstance(events[0], HardwareWarning) and events[0].code == CARD_WHILE_LOCKED
    s.host_frame("ULK")
    events, _ = feed(s, encode_frame(3, "CRD", "QD"))
    assert kinds(events) == ["card"]


def test_heartbeat_lock_state_is_the_belief_until_the_host_commands() -> None:
    s = FramedSession("r")
    events, _ = feed(s, encode_frame(0, "HBT", "L"), encode_frame(1, "CRD", "QS"))
    assert kinds(events) == ["online", "warning", "card"]


def test_host_seq_increments_for_every_host_frame() -> None:
    s = FramedSession("r")
    seqs = [FrameParser().feed(s.host_frame("STA"))[0] for _ in range(3)]
    assert [f.seq for f in seqs if isinstance(f, Frame)] == [0, 1, 2]


def _valid_crc(raw: bytes) -> bool:
    body = raw[1 : raw.index(3)]
    return int(raw[-6:-2], 16) == crc16(body)


noise = st.binary(max_size=40)
good_frames = st.builds(
    encode_frame,
    st.integers(0, 999),
    st.sampled_from(["CRD", "HBT", "HLO", "CUT", "UNR", "ERR"]),
    st.sampled_from(["AS", "TD", "U", "L", "", "E3;Card not read"]),
)


@st.composite
def corrupted_frames(draw: st.DrawFn) -> bytes:
    frame = bytearray(draw(good_frames))
    i = draw(st.integers(1, len(frame) - 3))
    frame[i] ^= draw(st.integers(1, 255))
    return bytes(frame)


@given(
    st.lists(st.one_of(noise, good_frames, corrupted_frames()), max_size=25),
    st.lists(st.integers(1, 50), max_size=30),
)
def test_fuzz_session_never_raises_and_cards_only_come_from_crc_valid_frames(
    parts: list[bytes], cuts: list[int]
) -> None:
    s = FramedSession("fuzz")
    stream = b"".join(parts)
    events: list[ReaderEvent] = []
    pos = 0
    for n in [*cuts, len(stream)]:
        got, reply = s.receive(stream[pos : pos + n], stamp(time.monotonic()))
        events += got
        pos += n
        for f in FrameParser().feed(reply):
            assert isinstance(f, Frame) and f.type in ("ACK", "NAK")
    for event in events:
        if isinstance(event, CardSeen):
            assert _valid_crc(event.raw)
            assert FrameParser().feed(event.raw) == [
                Frame(event.seq or 0, "CRD", event.card, event.raw)
            ]


@given(st.binary(max_size=400))
def test_fuzz_arbitrary_bytes_never_raise(data: bytes) -> None:
    s = FramedSession("fuzz")
    events, _ = s.receive(data, stamp())
    s.poll(stamp(100.0))
    for event in events:
        if isinstance(event, CardSeen):
            assert _valid_crc(event.raw)


@given(st.lists(st.sampled_from(["AS", "TD", "9H", "KC"]), min_size=1, max_size=40), st.data())
def test_duplicates_and_reordering_within_the_window_deliver_each_card_once(
    cards: list[str], data: st.DataObject
) -> None:
    """A shoe that retransmits at random (same SEQ, same bytes) never causes a duplicate."""
    s = FramedSession("r")
    frames = [encode_frame(i % 1000, "CRD", c) for i, c in enumerate(cards, start=1)]
    stream: list[bytes] = [encode_frame(0, "HLO", "x")]
    for i, f in enumerate(frames):
        stream.append(f)
        for _ in range(data.draw(st.integers(0, 2))):
            stream.append(frames[data.draw(st.integers(max(0, i - 3), i))])
    events, _ = s.receive(b"".join(stream), stamp())
    assert [e.card for e in events if isinstance(e, CardSeen)] == cards
    assert not [e for e in events if isinstance(e, MissedCardSuspected)]


def test_bad_frame_type_reports() -> None:
    (bad,) = FrameParser().feed(b"\x02" + b"001|CRD|AS" + b"\x03" + b"ZZZZ\r\n")
    assert isinstance(bad, BadFrame) and bad.seq == 1
