"""The ascii dialect: every observed line form, and resilience to damaged input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from shoe_reader.ascii_protocol import NEW_GAME, TOKEN, AsciiSession, normalise_card
from shoe_reader.events import (
    BurnCard,
    CardSeen,
    HardwareAlarm,
    HardwareWarning,
    ReaderEvent,
    ShoeEmpty,
    UnknownMessage,
    UnreadableCard,
)
from shoe_reader.session import Stamp
from table_service.rules.cards import standard_deck

STAMP = Stamp(1.0, datetime(2026, 1, 1, tzinfo=UTC))


def parse(data: bytes) -> list[ReaderEvent]:
    events, reply = AsciiSession("a1").receive(data, STAMP)
    assert reply == b""
    return events


@pytest.mark.parametrize(
    ("line", "card"),
    [
        (b"[Game]<Card:4S>", "4S"),
        (b"[Game]<Card:H3>", "3H"),
        (b"[Game]<Card:TD>", "TD"),
        (b"[Game]<Card:10D>", "TD"),
        (b"[Game]<Card:0D>", "TD"),
        (b"[Game]<Card:DT>", "TD"),
        (b"[Game]<Card:D10>", "TD"),
        (b"[Game]<Card:C0>", "TC"),
        (b"[Game]<Card:AS>", "AS"),
        (b"[Game]<Card:SA>", "AS"),
        (b"[Game]<Card:kh>", "KH"),
        (b"[GameAlarm]<Card:QC>", "QC"),
    ],
)
def test_card_lines_in_every_observed_form(line: bytes, card: str) -> None:
    (event,) = parse(line + b"\r\n")
    assert isinstance(event, CardSeen)
    assert (event.card, event.raw, event.reader_id, event.seq) == (card, line, "a1", None)


def test_every_card_of_the_deck_in_both_orders() -> None:
    for c in standard_deck():
        rank = c.rank_char
        for text in (rank + c.suit, c.suit + rank):
            assert normalise_card(text) == c.code


def test_burn_mode_card() -> None:
    (event,) = parse(b"[Manual Burn Cards]<Card:KD>\r\n")
    assert isinstance(event, BurnCard) and event.card == "KD"


def test_new_game_marker() -> None:
    (event,) = parse(b"[Game]<Game>\r\n")
    assert isinstance(event, HardwareWarning) and event.code == NEW_GAME


def test_alarms() -> None:
    unread, empty, other = parse(
        b"[Game]<Alarm:E3 Card Not Read>\r\n"
        b"[GameAlarm]<Alarm:E5 Shoe Empty>\r\n"
        b"[GameAlarm]<Alarm:E7 Card Jam>\r\n"
    )
    assert isinstance(unread, UnreadableCard) and unread.reason == "E3 Card Not Read"
    assert isinstance(empty, ShoeEmpty)
    assert isinstance(other, HardwareAlarm) and (other.code, other.text) == ("E7", "Card Jam")


def test_warning() -> None:
    (event,) = parse(b"<W0x01>\r\n")
    assert isinstance(event, HardwareWarning) and event.code == "W0x01"


@pytest.mark.parametrize(
    "line",
    [
        b"hello world",
        b"[Game]<Card:ZZ>",
        b"[Game]<Card:1S>",
        b"[Game]<Card:4S5>",
        b"[Bogus]<Card:4S>",
        b"<Card:4S>",  # no mode: burn or game cannot be told
        b"[Game]<Alarm:>",
        b"[Game]<Frobnicate>",
        b"[Game]<Card:4\xffS>",
        b"\x00\x01\x02",
    ],
)
def test_unknown_lines_are_reported_as_such(line: bytes) -> None:
    events = parse(line + b"\r\n")
    assert events and all(isinstance(e, UnknownMessage) for e in events)


def test_line_split_across_reads_and_several_in_one_read() -> None:
    s = AsciiSession("a")
    got: list[ReaderEvent] = []
    data = b"[Game]<Card:4S>\r\n[Game]<Card:H3>\r\n<W0x02>\r\n"
    for i in range(len(data)):
        got += s.receive(data[i : i + 1], STAMP)[0]
    assert [type(e) for e in got] == [CardSeen, CardSeen, HardwareWarning]
    assert [e.event for e in parse(data)] == ["card", "card", "warning"]


def test_missing_line_end_and_noise_glued_to_a_line_cost_only_the_damage() -> None:
    events = parse(b"[Game]<Card:4S>[Game]<Card:5S>\r\nxx\x07[Game]<Card:6S>\r\n")
    assert [getattr(e, "card", None) for e in events] == ["4S", "5S", None, "6S"]
    assert isinstance(events[2], UnknownMessage) and events[2].text == "xx\\x07"


def test_endless_garbage_is_flushed_as_unknown_not_buffered_forever() -> None:
    s = AsciiSession("a")
    events, _ = s.receive(b"[" + b"A" * 400, STAMP)
    assert len(events) == 1 and isinstance(events[0], UnknownMessage)
    assert s.receive(b"[Game]<Card:2C>\n", STAMP)[0][0].event == "card"


@given(st.binary(max_size=500), st.lists(st.integers(1, 60), max_size=20))
def test_fuzz_arbitrary_bytes_never_raise(data: bytes, cuts: list[int]) -> None:
    s = AsciiSession("fuzz")
    pos = 0
    for n in [*cuts, len(data)]:
        events, _ = s.receive(data[pos : pos + n], STAMP)
        pos += n
        for event in events:
            if isinstance(event, CardSeen | BurnCard):
                assert normalise_card(event.card) == event.card


lines = st.sampled_from(
    [
        b"[Game]<Card:4S>",
        b"[Game]<Card:H3>",
        b"[Manual Burn Cards]<Card:KD>",
        b"[Game]<Game>",
        b"[Game]<Alarm:E3 Card Not Read>",
        b"[GameAlarm]<Alarm:E5 Shoe Empty>",
        b"<W0x01>",
        b"[Game]<Card:10H>",
    ]
)


@given(
    st.lists(st.tuples(st.binary(max_size=15), lines), max_size=20),
    st.lists(st.integers(1, 30), max_size=30),
)
def test_fuzz_every_intact_line_is_delivered_once_despite_noise_between(
    parts: list[tuple[bytes, bytes]], cuts: list[int]
) -> None:
    """Noise between lines (ended by a line break, as a noise burst on an idle line is)
    never swallows or duplicates the intact line after it."""
    assume(not any(TOKEN.search(junk) for junk, _ in parts))  # noise, not a message
    stream = b"".join(junk + b"\r\n" + line + b"\r\n" for junk, line in parts)
    s = AsciiSession("a")
    events: list[ReaderEvent] = []
    pos = 0
    for n in [*cuts, len(stream)]:
        events += s.receive(stream[pos : pos + n], STAMP)[0]
        pos += n
    delivered = [e.raw for e in events if not isinstance(e, UnknownMessage)]
    known = {line for _, line in parts}
    assert [r for r in delivered if r in known] == [line for _, line in parts]
