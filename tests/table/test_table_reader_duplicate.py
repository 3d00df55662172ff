"""A card the shoe re-sent after a reconnection reaches the table as a blocking incident.

The events come from the real framed session (bytes in, reader events out) and go through
the service's own mapping, so the test follows the path a live table takes."""

from __future__ import annotations

from datetime import UTC, datetime

from shoe_reader.events import ReaderEvent
from shoe_reader.framed_session import FramedSession
from shoe_reader.framing import encode_frame
from shoe_reader.session import Stamp
from table_service.table import commands as c
from table_service.table.reader_pump import reader_command
from tests.table.table_helpers import Harness

HLO = encode_frame(0, "HLO", "M;1;S")


def reader_events() -> list[ReaderEvent]:
    """2S and KD read; the cable goes before KD's ACK reaches the shoe; KD comes again."""
    s = FramedSession("t1-shoe")
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    events, _ = s.receive(
        HLO + encode_frame(1, "CRD", "2S") + encode_frame(2, "CRD", "KD"), Stamp(1.0, t0)
    )
    events += s.connection_lost("device lost", Stamp(1.1, t0))
    again, _ = s.receive(HLO + encode_frame(1, "CRD", "KD"), Stamp(4.0, t0))
    return events + again


def test_possible_duplicate_pauses_the_round_until_a_supervisor_resolves_it() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    commands = [cmd for cmd in map(reader_command, reader_events()) if cmd is not None]
    fault = c.ReaderFault(
        "possible_duplicate",
        {
            "card": "KD",
            "text": "KD came again right after the shoe reconnected: a re-send or a real copy",
        },
    )
    assert fault in commands
    assert commands.index(fault) == len(commands) - 2  # right before the repeated card
    assert commands[-1] == c.CardScanned("KD", 1)
    for cmd in commands:
        h.run(cmd)
    (raised,) = [e for e in h.events("incident_raised") if e["kind"] == "possible_duplicate"]
    assert raised["blocking"] and raised["details"]["card"] == "KD"
    assert raised["details"]["index"] == 2  # the place the repeated KD took
    assert h.current_round().cards == ("2S", "KD", "KD")
    h.deal("3S", "4C", "5D")  # a complete hand, but the open incident holds the result
    assert h.current_round().phase == "dealing"
    assert not h.events("round_result")
    (offline,) = [i for i in h.state.incidents.values() if i.kind == "reader_offline"]
    h.run(c.ResolveIncident(offline.incident_id, "cable plugged back"))
    assert h.current_round().phase == "dealing"
    h.run(c.ResolveIncident(raised["incident_id"], "two KD seen on the table: a real copy"))
    assert h.current_round().phase == "settled"


def test_supervisor_voids_the_round_when_the_card_was_counted_twice() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    for cmd in [cmd for cmd in map(reader_command, reader_events()) if cmd is not None]:
        h.run(cmd)
    assert h.state.paused
    h.run(c.VoidRound("KD read twice after a reconnection; one card on the table"))
    assert h.current_round().phase == "voided"


def test_a_card_read_twice_is_taken_out_and_the_round_goes_on() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.bet("player", 1000)
    h.run(c.CloseBetting())
    for cmd in [cmd for cmd in map(reader_command, reader_events()) if cmd is not None]:
        h.run(cmd)
    incidents = {i.kind: i.incident_id for i in h.state.incidents.values()}
    h.run(c.ResolveIncident(incidents["reader_offline"], "cable plugged back"))
    h.run(c.ResolveIncident(incidents["possible_duplicate"], "one KD: re-sent", read_twice=True))
    assert h.current_round().cards == ("2S", "KD")
    assert h.state.shoe is not None and h.state.shoe.seen["KD"] == 1
    h.deal("7S", "4C")  # player 2 7 = 9, banker K 4 = 4: a natural
    (line,) = h.events("bets_settled")[0]["results"]
    assert (line["result"], line["returned"]) == ("win", 2000)
    assert h.replayed() == h.state
