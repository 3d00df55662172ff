"""`livetable demo --game xidach`: live rounds over HTTP with bots, every card out of the
virtual serial shoe through the real reader (a fresh deck each round), checked round by
round against `livetable settle xidach` on each round's settle_input; in `room` the bank
passes to the next player to have joined after the banker, as the rules say."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from rich.console import Console

from audit.store import EventStore, StoredEvent
from table_service.config import Settings
from table_service.demo.xidach import BANK_TERM, XiDachDemoOptions, run_xidach_demo
from table_service.regulator.readmodels import check_read_models
from table_service.runtime import Runtime


def _logged(data_dir: Path) -> list[StoredEvent]:
    """The demo's log, once its read models are checked against it."""
    runtime = Runtime.from_settings(Settings(data_dir=data_dir))
    try:
        with runtime.sessions() as session:
            assert check_read_models(session) == []
            return EventStore.read(session)
    finally:
        runtime.close()


@pytest.mark.parametrize(
    ("profile", "rounds"), [("room", BANK_TERM + 1), ("classic", 1), ("forced-draw", 1)]
)
def test_the_demo_plays_live_rounds_that_settle_as_the_settle_command(
    tmp_path: Path, profile: str, rounds: int
) -> None:
    console = Console(record=True, width=120)
    options = XiDachDemoOptions(
        profile=profile, port=0, data_dir=tmp_path, rounds=rounds, seed=5, timer_seconds=1
    )
    report = asyncio.run(run_xidach_demo(options, console))
    assert report.rounds_settled + report.rounds_voided == rounds
    assert report.settle_checks_failed == 0 and not report.problems
    assert report.settle_checks_passed == report.rounds_settled >= 1
    text = console.export_text()
    assert "settlement = livetable settle xidach" in text
    assert f"Xì Dách '{profile}'" in text and "exact house edge" in text
    assert "read by the serial reader" in text
    events = _logged(tmp_path)
    dealt = [e for e in events if e.type == "card_dealt"]
    # every card left the virtual shoe and reached the table through the serial reader
    assert len(dealt) == report.cards_pulled >= 4 * rounds
    assert all(e.actor.startswith("reader:") for e in dealt)
    # one deck a round: the table ends each deck, the supervisor inserts a fresh one
    assert len([e for e in events if e.type == "shoe_inserted"]) == report.decks == rounds
    ended = [e.payload["reason"] for e in events if e.type == "shoe_ended"]
    assert ended.count("one deck: a fresh deck each round") == rounds
    if profile == "room":
        assert "the bank (banker9, seat 5)" in text  # the seated bank, in and out
        # a seated bank, no commission in this profile: what the punters lose the bank wins
        assert report.staked - report.returned == report.bank_net
        # the first banker leaves after its term; the bank passes on and is taken
        assert report.banker_leaves == 1 and report.bank_passes == 1
        assert report.bank_refusals == 0
        assert "the bank passes from seat 5 to seat 1, the next to have joined" in text


def test_a_shoe_terminal_another_process_locked_is_kept_and_a_fresh_one_put_behind_the_path() -> (
    None
):
    """A reader elsewhere that reopens an old /dev/pts/N locks whatever terminal gets
    that number next: the demo keeps that terminal (so the number stays taken) and puts a
    fresh one behind the same device path, which its own reader is retrying."""
    import fcntl
    import os

    from table_service.demo.xidach import _Shoes

    shoes = _Shoes(seed=1, heartbeat=0.5)
    try:
        first = shoes.start()
        assert not shoes.locked_elsewhere()
        taken = os.open(first.pty_path or "", os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            fcntl.flock(taken, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the foreign reader
            assert shoes.locked_elsewhere()
            second = shoes.start()
            assert second.pty_path != first.pty_path and first.plugged  # the old one held
            assert os.path.realpath(shoes.path) == second.pty_path
            assert not shoes.locked_elsewhere()
        finally:
            os.close(taken)
    finally:
        shoes.stop()
    assert not os.path.lexists(shoes.path)


@pytest.fixture(scope="module")
def kept_calibrations() -> dict[str, bytes]:
    """The calibration a camera demo of this module made, kept for the next one's data
    folder, as a studio keeps it for later runs (the same deck, seed and photographs)."""
    return {}


@pytest.mark.parametrize(("reader", "rounds"), [("camera", 1), ("both", 2)])
def test_the_demo_plays_xidach_through_the_camera_and_through_both_readers(
    tmp_path: Path, reader: str, rounds: int, kept_calibrations: dict[str, bytes]
) -> None:
    """The camera reads every card off a synthetic camera over the shoe with the real
    recognizer (calibrated from the deck's studio photographs); with both readers the
    serial reader's card is confirmed by the camera's before the table takes it. Their
    second round starts with the rest of the first deck lifted out: the camera must not
    report those, or the table would raise a disagreement for each.

    The first of them to run calibrates the deck in its data folder; the other starts
    with that calibration there, as a studio's later run does (5 s of CPU less)."""
    calibration = tmp_path / "camera" / "plastic.npz"
    if "plastic" in kept_calibrations:
        calibration.parent.mkdir(parents=True)
        calibration.write_bytes(kept_calibrations["plastic"])
    console = Console(record=True, width=120)
    options = XiDachDemoOptions(
        profile="classic",
        port=0,
        data_dir=tmp_path,
        rounds=rounds,
        seed=7,
        timer_seconds=1,
        reader=reader,
        camera_deck="plastic",
        # The synthetic camera renders each frame on this machine's CPU: on a saturated
        # machine a card reaches its frames seconds after it left the shoe (a CI run saw
        # 3.1 s against the default 3 s window), which a real camera never does. The
        # readers still must agree on every card: a wider window only waits longer.
        camera_window_seconds=30.0,
    )
    report = asyncio.run(run_xidach_demo(options, console))
    kept_calibrations.setdefault("plastic", calibration.read_bytes())
    assert report.rounds_settled + report.rounds_voided == rounds
    assert report.settle_checks_failed == 0 and not report.problems
    text = console.export_text()
    assert "camera over the shoe" in text if reader == "camera" else "cross-checked" in text
    events = _logged(tmp_path)
    dealt = [e for e in events if e.type == "card_dealt"]
    assert len(dealt) == report.cards_pulled >= 4 * rounds
    suffix = "+camera" if reader == "both" else ""
    assert all(e.actor.startswith("reader:") and e.actor.endswith(suffix) for e in dealt)
    if reader == "camera":
        assert not any(e.actor.endswith("+camera") for e in dealt)
    raised = [e.payload.get("kind") for e in events if e.type == "incident_raised"]
    assert raised == [], raised
    assert len([e for e in events if e.type == "shoe_inserted"]) == rounds
