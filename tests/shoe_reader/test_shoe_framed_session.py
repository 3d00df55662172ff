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
from shoe_reader.framed_session import (
    CARD_WHILE_LOCKED,
    POSSIBLE_DUPLICATE,
    FramedSession,
    repeated_card,
)
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
    # Another card: the same one this soon would be flagged as a possible re-send (below).
    events, _ = feed(s, encode_frame(0, "HLO", "x"), encode_frame(1, "CRD", "KD"))
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


# -- a card re-sent after a HLO (its ACK lost with the cable) --------------------------------
HLO = encode_frame(0, "HLO", "M;1;S")


def duplicate_warnings(events: list[ReaderEvent]) -> list[str | None]:
    return [
        repeated_card(e.raw)
        for e in events
        if isinstance(e, HardwareWarning) and e.code == POSSIBLE_DUPLICATE
    ]


def test_card_repeated_first_after_a_hello_is_delivered_behind_a_warning() -> None:
    s = FramedSession("r", resend_window=1.5)
    feed(s, HLO, encode_frame(1, "CRD", "9C"), t=0.0)
    feed(s, encode_frame(2, "CRD", "AS"), encode_frame(3, "CRD", "KD"), t=10.0)
    s.connection_lost("device lost", stamp(10.5))
    events, reply = feed(s, HLO, encode_frame(1, "CRD", "KD"), encode_frame(2, "CRD", "KD"), t=60)
    assert kinds(events) == ["online", "warning", "card", "card"]
    assert duplicate_warnings(events) == ["KD"]  # AS was acknowledged: the shoe moved on
    assert events[1].seq == events[2].seq == 1 and events[1].raw == events[2].raw
    assert replies(reply) == [("ACK", "001"), ("ACK", "002")]
    # 9C was delivered 10 s before the link went: its ACK had long reached the shoe.
    s.connection_lost("device lost", stamp(70.0))
    events, _ = feed(s, HLO, encode_frame(1, "CRD", "9C"), t=80.0)
    assert kinds(events) == ["online", "card"]


def test_every_card_of_the_window_may_come_again_in_order() -> None:
    s = FramedSession("r")
    feed(s, HLO, encode_frame(1, "CRD", "AS"), encode_frame(2, "CRD", "KD"), t=1.0)
    s.connection_lost("device lost", stamp(1.1))
    events, _ = feed(s, HLO, encode_frame(1, "CRD", "AS"), encode_frame(2, "CRD", "KD"), t=3.0)
    assert kinds(events) == ["online", "warning", "card", "warning", "card"]
    assert duplicate_warnings(events) == ["AS", "KD"]


def test_another_frame_first_after_the_hello_ends_the_comparison() -> None:
    s = FramedSession("r")
    feed(s, HLO, encode_frame(1, "CRD", "AS"), t=1.0)
    events, _ = feed(
        s,
        HLO,
        encode_frame(1, "HBT", "U"),
        encode_frame(2, "CRD", "QH"),
        encode_frame(3, "CRD", "AS"),  # a real copy of AS: no longer a re-sent frame
        t=1.5,
    )
    assert kinds(events) == ["online", "card", "card"]


def test_no_warning_when_the_shoe_gave_up_or_the_resend_comes_too_late() -> None:
    gave_up = FramedSession("r")
    feed(gave_up, HLO, encode_frame(1, "CRD", "AS"), encode_frame(2, "ERR", "E9;No host"), t=1.0)
    events, _ = feed(gave_up, HLO, encode_frame(1, "CRD", "AS"), t=2.0)
    assert kinds(events) == ["online", "card"]
    late = FramedSession("r", resend_window=1.5)
    feed(late, HLO, encode_frame(1, "CRD", "AS"), t=1.0)
    feed(late, HLO, t=2.0)
    events, _ = feed(late, encode_frame(1, "CRD", "AS"), t=5.0)  # not the shoe's re-send
    assert kinds(events) == ["card"]
    first = FramedSession("r")
    events, _ = feed(first, HLO, encode_frame(1, "CRD", "AS"), HLO, t=0.0)
    events, _ = feed(first, encode_frame(1, "CUT"), t=0.1)
    assert kinds(events) == ["cut_card"]


def test_duplicate_warning_sits_right_before_the_card_also_when_locked() -> None:
    s = FramedSession("r")
    feed(s, HLO, encode_frame(1, "CRD", "AS"), t=1.0)
    s.host_frame("LCK")
    events, _ = feed(s, HLO, encode_frame(1, "CRD", "AS"), t=1.2)
    assert [getattr(e, "code", e.event) for e in events] == [
        "online",
        CARD_WHILE_LOCKED,
        POSSIBLE_DUPLICATE,
        "card",
    ]


def test_repeated_card_reads_only_crd_frames() -> None:
    assert repeated_card(encode_frame(7, "CRD", "TD")) == "TD"
    assert repeated_card(encode_frame(7, "CUT")) is None
    assert repeated_card(b"") is None
    assert repeated_card(b"\x02007|CRD|TD\x030000\r\n") is None  # bad CRC
