"""The cross-check of a serial shoe against a camera, driven by hand.

Both readers are fake async streams the test feeds; the shoe's cards carry the time
their bytes arrived and the camera's the time their frames were grabbed, so whether
two reports pair never depends on how fast this machine runs them. Where a verdict
goes by the clock (a stalled camera, a card only the camera saw) the tests check it
does not come before its time, and give it seconds to come after.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from structlog.testing import capture_logs

from shoe_reader.camera.feed import NO_CAMERA_CARD, ReaderDisagreement, camera_events, cross_check
from shoe_reader.camera.reader import CameraReader
from shoe_reader.camera.recognize import CardRead, FrameRead
from shoe_reader.camera.source import FrameSource
from shoe_reader.events import (
    CameraProgress,
    CardSeen,
    CutCardSeen,
    ReaderEvent,
    ReaderOffline,
    UnreadableCard,
)

PATIENT = 30.0  # a max_lag no test reaches: only the camera's progress gives a verdict
SLACK = 5.0  # ample time for a verdict that is due to come


class Feed:
    """One reader's events, as the test hands them over."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[ReaderEvent | None] = asyncio.Queue()

    def put(self, *events: ReaderEvent) -> None:
        for event in events:
            self._queue.put_nowait(event)

    def close(self) -> None:
        self._queue.put_nowait(None)

    def __aiter__(self) -> Feed:
        return self

    async def __anext__(self) -> ReaderEvent:
        event = await self._queue.get()
        if event is None:
            raise StopAsyncIteration
        return event


class Check:
    """``cross_check`` running on two feeds, its output collected as it comes."""

    def __init__(self, window: float, max_lag: float = PATIENT) -> None:
        self.serial, self.camera = Feed(), Feed()
        self.out: asyncio.Queue[ReaderEvent] = asyncio.Queue()
        self.task = asyncio.create_task(self._run(window, max_lag))

    async def _run(self, window: float, max_lag: float) -> None:
        checked = cross_check(self.serial, self.camera, window, "shoe-1", max_lag=max_lag)
        async for event in checked:
            self.out.put_nowait(event)

    async def next(self) -> ReaderEvent:
        get = asyncio.ensure_future(self.out.get())
        await asyncio.wait([get, self.task], timeout=SLACK, return_when=asyncio.FIRST_COMPLETED)
        if not get.done():
            get.cancel()
            if self.task.done():
                self.task.result()  # the check failed: its error, not a timeout
            raise AssertionError(f"nothing from the check in {SLACK} s")
        return get.result()

    async def nothing_for(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        assert self.out.empty(), self.out.get_nowait()

    async def finish(self) -> list[ReaderEvent]:
        """Both readers stop; whatever else the check still had to say."""
        self.serial.close()
        self.camera.close()
        await asyncio.wait_for(self.task, SLACK)
        return [self.out.get_nowait() for _ in range(self.out.qsize())]


def shoe_card(card: str, at: float, seq: int = 1) -> CardSeen:
    return CardSeen(reader_id="shoe-1", card=card, seq=seq, monotonic=at)


def camera_card(card: str, captured: float) -> CardSeen:
    return CardSeen(reader_id="cam", card=card, confidence=0.9, captured=captured)


def progress(captured: float) -> CameraProgress:
    return CameraProgress(reader_id="cam", captured=captured)


def disagreement(event: ReaderEvent) -> ReaderDisagreement:
    assert isinstance(event, ReaderDisagreement), event
    return event


async def test_a_camera_behind_real_time_agrees_on_when_it_grabbed_the_card() -> None:
    window = 0.2
    check = Check(window)
    t = time.monotonic()
    dealt = shoe_card("5H", t)
    check.serial.put(dealt)
    check.camera.put(progress(t - 0.05))  # still on frames from before the card
    await check.nothing_for(1.5 * window)  # the camera's report comes after the window
    check.camera.put(progress(t + 0.02))  # it has got to the card, still in view
    await check.nothing_for(window / 2)
    assert time.monotonic() > t + window
    check.camera.put(camera_card("5H", t + 0.03), progress(t + window + 0.1))
    assert await check.next() is dealt
    assert await check.finish() == []


async def test_a_card_the_camera_missed_waits_for_it_to_look_past_the_window() -> None:
    window = 0.2
    check = Check(window)
    t = time.monotonic()
    check.serial.put(shoe_card("5H", t))
    check.camera.put(progress(t + 0.1))
    await check.nothing_for(1.5 * window)  # the window has gone by, the camera is behind
    check.camera.put(progress(t + 0.15))  # and still on frames from within the window
    await check.nothing_for(window / 4)
    check.camera.put(progress(t + window + 0.02))  # it has now looked past it: nothing
    missed = disagreement(await check.next())
    assert (missed.serial, missed.camera, missed.detail) == ("5H", None, NO_CAMERA_CARD)
    # The next card both see pairs as usual; nothing more about the missed one.
    t2 = time.monotonic()
    nxt = shoe_card("KD", t2, seq=2)
    check.serial.put(nxt)
    check.camera.put(camera_card("KD", t2 + 0.01), progress(t2 + window + 0.1))
    assert await check.next() is nxt
    assert await check.finish() == []


async def test_a_stalled_camera_still_gets_a_verdict_within_window_and_max_lag() -> None:
    window, max_lag = 0.1, 0.2
    check = Check(window, max_lag=max_lag)
    t = time.monotonic()
    check.camera.put(progress(t - 0.5))  # then nothing: the camera has hung
    check.serial.put(shoe_card("5H", t))
    stalled = disagreement(await check.next())
    assert time.monotonic() - t >= window + max_lag
    assert (stalled.serial, stalled.camera) == ("5H", None)
    assert stalled.detail.startswith(NO_CAMERA_CARD) and "stalled" in stalled.detail
    # The camera comes back and reports the card from that window: only logged, the
    # supervisor is already at it; no "the shoe reported no card" on top.
    with capture_logs() as logs:
        check.camera.put(camera_card("5H", t + 0.02), progress(t + window + 1.0))
        assert await check.finish() == []
    assert [e["event"] for e in logs] == ["camera card after the verdict on the shoe's"]
    assert logs[0]["serial"] == logs[0]["camera"] == "5H"


async def test_a_camera_offline_sees_nothing_so_the_verdict_comes_with_the_window() -> None:
    window = 0.1
    check = Check(window)  # the stall limit is far; being offline is what decides
    t = time.monotonic()
    gone = ReaderOffline(reader_id="cam", reason="camera stopped delivering frames")
    check.camera.put(gone)
    assert await check.next() is gone
    check.serial.put(shoe_card("5H", t))
    missed = disagreement(await check.next())
    assert time.monotonic() - t >= window
    assert (missed.serial, missed.camera) == ("5H", None)
    assert missed.detail == f"{NO_CAMERA_CARD}: it was offline"
    assert await check.finish() == []


async def test_a_different_card_is_one_disagreement_with_both_readings() -> None:
    window = 0.3
    check = Check(window)
    t = time.monotonic()
    check.serial.put(shoe_card("5H", t))
    check.camera.put(camera_card("KD", t + 0.02))
    other = disagreement(await check.next())
    assert (other.serial, other.camera, other.detail) == ("5H", "KD", "a different card")
    check.serial.put(shoe_card("9S", t + 0.05, seq=2))
    check.camera.put(UnreadableCard(reader_id="cam", reason="conflicting reads", captured=t + 0.06))
    unread = disagreement(await check.next())
    assert (unread.serial, unread.camera, unread.detail) == ("9S", None, "conflicting reads")
    assert await check.finish() == []


async def test_a_card_the_camera_could_not_read_waits_for_it_to_be_shown_again() -> None:
    """The camera saw the shoe's card covered: its unreadable card goes to the table (which
    asks the dealer to show the card again) and the shoe's card waits for the camera's next
    read of it, then passes if the two agree; twice, then it is a disagreement, and at once
    if the shoe deals another card first."""
    window = 0.3
    check = Check(window)
    t = time.monotonic()
    dealt = shoe_card("7D", t)
    check.serial.put(dealt)
    covered = UnreadableCard(reader_id="cam", reason="hand", captured=t + 0.02, cause="covered")
    check.camera.put(covered)
    assert await check.next() is covered
    await check.nothing_for(window / 3)
    shown = time.monotonic()
    check.camera.put(camera_card("7D", shown), progress(shown + 0.05))
    assert await check.next() is dealt
    again = shoe_card("QS", shown + 0.1, seq=2)
    check.serial.put(again)
    for _shown in range(2):
        blurred = UnreadableCard(
            reader_id="cam", reason="fast", captured=time.monotonic(), cause="blurred"
        )
        check.camera.put(blurred)
        assert await check.next() is blurred
    third = UnreadableCard(
        reader_id="cam", reason="fast", captured=time.monotonic(), cause="blurred"
    )
    check.camera.put(third, progress(time.monotonic() + 1.0))
    given = disagreement(await check.next())
    assert (given.serial, given.camera, given.detail) == ("QS", None, "fast")
    assert await check.finish() == []
    # The shoe deals on instead: the card not shown again gets its verdict at once.
    check = Check(window)
    later = time.monotonic()
    first, second = shoe_card("2H", later, seq=3), shoe_card("3H", later + 0.05, seq=4)
    check.serial.put(first)
    check.camera.put(
        UnreadableCard(reader_id="cam", reason="hand", captured=later, cause="covered")
    )
    assert isinstance(await check.next(), UnreadableCard)
    check.serial.put(second)
    dealt_on = disagreement(await check.next())
    assert (dealt_on.serial, dealt_on.camera, dealt_on.detail) == ("2H", None, "hand")
    check.camera.put(camera_card("3H", time.monotonic()))
    assert await check.next() is second
    assert await check.finish() == []


async def test_a_card_the_shoe_did_not_report_is_a_disagreement_after_the_window() -> None:
    window = 0.2
    check = Check(window)
    t = time.monotonic()
    check.camera.put(camera_card("QS", t), progress(t + 0.05))
    lone = disagreement(await check.next())
    assert time.monotonic() - t >= window
    assert (lone.serial, lone.camera, lone.detail) == (None, "QS", "the shoe reported no card")
    # A camera far behind reports a card grabbed long ago: the shoe would have said
    # so by now, so the verdict does not wait another window.
    late = time.monotonic() - 10 * window
    check.camera.put(camera_card("2C", late))
    lone = disagreement(await check.next())
    assert (lone.serial, lone.camera) == (None, "2C")
    assert await check.finish() == []


async def test_a_shoe_report_after_the_camera_saw_the_card_pairs_within_the_window() -> None:
    window = 0.3
    check = Check(window)
    t = time.monotonic()
    check.camera.put(camera_card("AH", t))
    await check.nothing_for(window / 3)
    dealt = shoe_card("AH", t + window / 3)
    check.serial.put(dealt)
    assert await check.next() is dealt
    assert await check.finish() == []


async def test_the_cut_card_the_camera_saw_as_unreadable_is_no_disagreement() -> None:
    window = 0.3
    check = Check(window)
    t = time.monotonic()
    cut = CutCardSeen(reader_id="shoe-1", monotonic=t)
    check.serial.put(cut)
    assert await check.next() is cut
    await check.nothing_for(window / 3)  # the camera's report of it comes late
    check.camera.put(UnreadableCard(reader_id="cam", reason="no read", captured=t + 0.01))
    dealt = shoe_card("4C", t + 0.1, seq=2)
    check.serial.put(dealt)
    check.camera.put(camera_card("4C", t + 0.12), progress(t + 1.0))
    assert await check.next() is dealt
    assert await check.finish() == []


async def test_cards_still_waiting_when_both_readers_end_get_their_verdict() -> None:
    check = Check(0.3)
    t = time.monotonic()
    check.serial.put(shoe_card("5H", t))
    left = [disagreement(e) for e in await check.finish()]
    assert [(d.serial, d.camera) for d in left] == [("5H", None)]


# -- the camera reader: what it stamps on its cards and how far it says it has got ---------


class _Frames(FrameSource):
    """Frames that are only their labels: ``"-"`` no card, else the card in view."""

    description = "memory"

    def __init__(self, labels: list[str]) -> None:
        self.labels = labels

    def frames(self) -> Iterator[tuple[int, np.ndarray]]:
        for i, label in enumerate(self.labels):
            yield i, np.array([label])


class _Recognizer:
    def read_frame(self, frame: np.ndarray) -> FrameRead:
        label = str(frame[0])
        if label == "-":
            return FrameRead(present=False, read=None)
        return FrameRead(present=True, read=CardRead(label, 0.9))


class _Clock:
    """A frame every 0.1 s, however long the recognizer takes over it."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 0.1
        return self.now


@pytest.mark.parametrize("progress_on", [True, False])
def test_the_camera_stamps_its_cards_with_when_their_pass_came_into_view(
    progress_on: bool,
) -> None:
    clock = _Clock()
    labels = ["-"] * 3 + ["7S"] * 5 + ["-"] * 4 + ["QD"] * 4 + ["-"] * 3
    # A stand-in recognizer (read_frame only), not a Recognizer: arg-type.
    reader = CameraReader(_Frames(labels), _Recognizer(), "cam", clock=clock)  # type: ignore[arg-type]
    events = list(reader.events(progress=progress_on))
    kinds = [e.event for e in events]
    cards = [e for e in events if isinstance(e, CardSeen)]
    assert [c.card for c in cards] == ["7S", "QD"]
    # The clock ticks once for "online", then once per frame as it is handed over.
    first_7s, first_qd = 100.0 + 0.1 * (1 + 4), 100.0 + 0.1 * (1 + 13)
    assert [c.captured for c in cards] == pytest.approx([first_7s, first_qd])
    if not progress_on:
        assert "camera_progress" not in kinds
        return
    marks = [(i, e.captured) for i, e in enumerate(events) if isinstance(e, CameraProgress)]
    assert [m for _, m in marks] == sorted({m for _, m in marks})  # only ever forward
    for card in cards:
        at, first = events.index(card), card.captured
        assert first is not None
        # Before the card is reported, the camera never claims to be past its first frame.
        assert all(m <= first for i, m in marks if i < at)
    assert marks[-1][1] == pytest.approx(100.0 + 0.1 * (1 + len(labels)))


def test_a_shoe_card_json_line_is_unchanged_and_a_camera_card_says_when_it_was_grabbed() -> None:
    assert "captured" not in shoe_card("5H", 1.0).to_json()
    assert camera_card("5H", 2.5).to_json()["captured"] == 2.5


# -- the whole way: a camera whose recognition is slower than its frames -------------------


class _SlowRecognizer(_Recognizer):
    """Recognition that takes longer than a frame, as on a loaded machine."""

    def read_frame(self, frame: np.ndarray) -> FrameRead:
        time.sleep(0.04)
        return super().read_frame(frame)


class _Dealt(_Frames):
    """The shoe reports a card as its first frame is handed to the camera reader."""

    def __init__(self, labels: list[str], dealt: Callable[[str, float], None]) -> None:
        super().__init__(labels)
        self.dealt = dealt

    def frames(self) -> Iterator[tuple[int, np.ndarray]]:
        previous = "-"
        for i, frame in super().frames():
            label = str(frame[0])
            if label not in ("-", previous):
                self.dealt(label, time.monotonic())
            previous = label
            yield i, frame


async def test_a_camera_slower_than_its_frames_agrees_with_the_shoe_through_its_thread() -> None:
    window = 0.15
    loop = asyncio.get_running_loop()
    serial = Feed()
    reported: list[float] = []

    def dealt(card: str, at: float) -> None:
        reported.append(at)
        loop.call_soon_threadsafe(serial.put, shoe_card(card, at, seq=len(reported)))

    labels = ["-"] * 3 + ["7S"] * 6 + ["-"] * 6 + ["QD"] * 6 + ["-"] * 6
    # A stand-in recognizer (read_frame only), not a Recognizer: arg-type.
    reader = CameraReader(_Dealt(labels, dealt), _SlowRecognizer(), "cam")  # type: ignore[arg-type]
    camera = camera_events(reader, progress=True)
    out: list[tuple[ReaderEvent, float]] = []

    async def run() -> None:
        async for event in cross_check(serial, camera, window, "shoe-1", max_lag=PATIENT):
            out.append((event, time.monotonic()))
            if event.event == "offline":
                serial.close()

    await asyncio.wait_for(run(), 4 * SLACK)
    assert [e.event for e, _ in out] == ["online", "card", "card", "offline"]
    cards = [(e, when) for e, when in out if isinstance(e, CardSeen)]
    assert [(e.card, e.seq) for e, _ in cards] == [("7S", 1), ("QD", 2)]
    # Each card's report came well after its window: pairing went by the frames.
    for (_, when), at in zip(cards, reported, strict=True):
        assert when - at > window
