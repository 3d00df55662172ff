"""The camera at a live table: its reader events as an async stream, and the cross-check
of a serial shoe against a camera.

The camera reader is synchronous (frames in, events out); it runs in a thread
of its own and hands its events to the table's event loop. With a serial shoe
and a camera together, every card must be reported by both within a window and
be the same card; the shoe's report (it carries the shoe's sequence number) is
what reaches the table. A different card, or a card only one of them saw,
becomes one :class:`ReaderDisagreement` carrying both readings, and neither
reading goes to the table as a card: a supervisor looks at the card and enters
it, so a round never settles on a card only one reader saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import structlog

from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.reader import CameraReader
from shoe_reader.camera.recognize import Recognizer
from shoe_reader.camera.roi import parse_roi
from shoe_reader.camera.source import FrameSource, open_source
from shoe_reader.events import (
    BurnCard,
    CameraProgress,
    CardSeen,
    CutCardSeen,
    ReaderEvent,
    UnreadableCard,
)

log = structlog.get_logger(__name__)


@dataclass(frozen=True, kw_only=True)
class ReaderDisagreement(ReaderEvent):
    """The shoe and the camera did not report the same card (``None``: did not see one)."""

    event: ClassVar[str] = "disagreement"
    serial: str | None
    camera: str | None
    detail: str = ""


def open_camera_source(spec: str) -> FrameSource:
    """``sim:NAME`` is the simulator's synthetic camera of that name; anything else as
    ``livetable camera read --source`` takes it (device index, file, folder or URL)."""
    if spec.startswith("sim:"):
        from shoe_reader.camera.named import SOURCES

        camera = SOURCES.get(spec[4:])
        if camera is None:
            raise LookupError(f"no synthetic camera named {spec[4:]!r} is running")
        # named.SOURCES holds Any: the simulator's camera has FrameSource's shape without
        # subclassing it (FrameSource is a base class, not a Protocol).
        return camera  # type: ignore[no-any-return]
    return open_source(spec)


def camera_reader(
    source: str, calibration: Path, roi: str | None, reader_id: str, reconnect: int = 10
) -> CameraReader:
    cal = Calibration.load(calibration)
    region = parse_roi(roi) if roi else None
    return CameraReader(
        open_camera_source(source), Recognizer(cal, roi=region), reader_id, reconnect=reconnect
    )


async def camera_events(reader: CameraReader, progress: bool = False) -> AsyncIterator[ReaderEvent]:
    """The camera reader's events, produced in a thread, delivered on this event loop.
    ``progress``: with the reader's :class:`CameraProgress` reports, for :func:`cross_check`."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[ReaderEvent | BaseException | None] = asyncio.Queue()
    stop = threading.Event()
    reader.should_stop = stop.is_set

    def run() -> None:
        try:
            for event in reader.events(progress=progress):
                loop.call_soon_threadsafe(queue.put_nowait, event)
                if stop.is_set():
                    break
        except BaseException as exc:
            loop.call_soon_threadsafe(queue.put_nowait, exc)
            return
        loop.call_soon_threadsafe(queue.put_nowait, None)

    thread = threading.Thread(target=run, name=f"camera-{reader.reader_id}", daemon=True)
    thread.start()
    try:
        while True:
            item = await queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        reader.source.close()
        await asyncio.to_thread(thread.join, 5.0)


_SERIAL_CARDS = (CardSeen, BurnCard)
NO_CAMERA_CARD = "the camera saw no card"
_CAMERA_CARDS = (CardSeen, UnreadableCard)


@dataclass
class _Seen:
    """A card one reader reported and the time it goes by: for the shoe, when its bytes
    arrived; for the camera, when the first frame of the card's pass was grabbed."""

    event: ReaderEvent
    at: float
    shown_again: int = 0  # times the camera saw this shoe card but could not read it
    why: str = ""  # and the camera's reason, the last time


SHOW_AGAIN_TRIES = 2
"""Times a shoe card waits for the camera to see it shown again, after a pass the camera
saw but could not read (blurred, covered, outside the region), before it is a disagreement
(as the table asks the dealer, ``table.decide.SHOW_AGAIN``)."""


@dataclass
class _Given:
    """A shoe card given its verdict before the camera had got past its window."""

    card: str
    start: float
    end: float


async def cross_check(
    serial: AsyncIterator[ReaderEvent],
    camera: AsyncIterator[ReaderEvent],
    window: float,
    reader_id: str,
    *,
    max_lag: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[ReaderEvent]:
    """Pair each card of the shoe with the camera's, in order, when the camera's card
    was in view within ``window`` seconds of the shoe's report.

    Agreeing pairs yield the shoe's event. The cut card has no face: the shoe's report
    passes, and a camera's unreadable card within the window of it is the cut card
    seen. A shoe card the camera saw but could not read for a cause showing it again
    may cure (:attr:`UnreadableCard.show_again`) yields the camera's unreadable card
    (the table asks the dealer to show the card again) and waits, from then, a window
    either way for the camera's next card, up to ``SHOW_AGAIN_TRIES`` times and while
    the shoe deals no other card; then it is a disagreement as any other. Every event
    of the shoe that is not a card (online, offline, alarms…) passes straight through;
    the camera's going offline or online passes too (its reader id tells which).

    The camera is paired on when its frames were grabbed (``captured`` on its cards),
    not on when its reports arrive: recognition runs behind real time under load, and
    a card is reported only once its pass has left the view. So "the camera saw no
    card" waits until the camera says (:class:`CameraProgress`) it has looked at every
    frame grabbed up to the end of the shoe card's window, or, while it is offline, for
    the window itself. A camera that is stalled or hung says nothing; ``max_lag``
    (default: three windows) bounds the wait past the window, so every shoe card gets
    its verdict at most ``window + max_lag`` seconds after the shoe reported it. A card
    the camera reports after such a verdict, from within that card's window, is only
    logged: the supervisor is already looking at that card.

    The shoe's cards go by their arrival (``monotonic``, stamped by its driver when the
    bytes came in): a card the camera saw that the shoe has not reported by the end of
    the window after it was grabbed is "the shoe reported no card" — at once, if the
    camera's report itself comes later than that. When both streams have ended, every
    card still waiting gets its verdict.
    """
    lag = 3 * window if max_lag is None else max_lag
    queue: asyncio.Queue[tuple[str, ReaderEvent | None]] = asyncio.Queue()

    async def pump(name: str, events: AsyncIterator[ReaderEvent]) -> None:
        try:
            async for event in events:
                await queue.put((name, event))
        finally:
            await queue.put((name, None))

    tasks = [
        asyncio.create_task(pump("serial", serial)),
        asyncio.create_task(pump("camera", camera)),
    ]
    shoe: deque[_Seen] = deque()  # its cards, and its cut card (to match the camera's)
    seen: deque[_Seen] = deque()  # the camera's cards and unreadable cards
    given: list[_Given] = []
    done = -math.inf  # the camera has reported every card grabbed before this
    offline = False  # the camera is not grabbing frames: nothing it missed is to come
    ended: set[str] = set()

    def settle(now: float) -> Iterator[ReaderEvent]:
        final = len(ended) == 2
        upto = math.inf if final or "camera" in ended else now if offline else done
        while shoe or seen:
            if len(shoe) > 1 and shoe[0].shown_again:
                # The shoe dealt on before the card the camera could not read was shown
                # to it again: that card's verdict is given, as without a second look.
                s = shoe.popleft()
                if isinstance(s.event, _SERIAL_CARDS):
                    yield _disagreement(reader_id, s.event.card, None, s.why)
                continue
            if shoe and seen:
                s, k = shoe[0], seen[0]
                if k.at < s.at - window:
                    seen.popleft()
                    yield _lone_camera(reader_id, k)
                elif k.at > s.at + window:
                    shoe.popleft()
                    if isinstance(s.event, _SERIAL_CARDS):
                        yield _disagreement(reader_id, s.event.card, None, NO_CAMERA_CARD)
                else:
                    shoe.popleft()
                    if isinstance(s.event, CutCardSeen):
                        if isinstance(k.event, UnreadableCard):
                            seen.popleft()  # the cut card slid past the camera
                        continue
                    seen.popleft()
                    if (
                        isinstance(k.event, UnreadableCard)
                        and k.event.show_again
                        and s.shown_again < SHOW_AGAIN_TRIES
                    ):
                        # The camera saw the card and could not read it: the table asks
                        # the dealer to show it again, and the shoe's card waits a window
                        # from now for the camera's read of it.
                        s.shown_again += 1
                        s.why = k.event.reason or "unreadable"
                        s.at = max(now, k.at) + window
                        shoe.appendleft(s)
                        yield k.event
                        continue
                    if isinstance(s.event, _SERIAL_CARDS):  # the cut card went on above
                        yield _pair(reader_id, s.event, k.event)
            elif shoe:
                s = shoe[0]
                if upto > s.at + window:
                    shoe.popleft()
                    if isinstance(s.event, _SERIAL_CARDS):
                        why = NO_CAMERA_CARD + (": it was offline" if offline else "")
                        yield _disagreement(reader_id, s.event.card, None, why)
                elif now >= s.at + window + lag:
                    shoe.popleft()
                    card = s.event.card if isinstance(s.event, _SERIAL_CARDS) else "cut card"
                    given.append(_Given(card, s.at - window, s.at + window))
                    if isinstance(s.event, _SERIAL_CARDS):
                        why = (
                            f"{NO_CAMERA_CARD}: it had not got past the card's window"
                            f" {window + lag:g} s after the shoe's report (stalled or behind)"
                        )
                        yield _disagreement(reader_id, s.event.card, None, why)
                else:
                    break
            else:
                k = seen[0]
                if final or now >= k.at + window:
                    seen.popleft()
                    yield _lone_camera(reader_id, k)
                else:
                    break

    def wake_at() -> float | None:
        deadlines: list[float] = []
        if shoe:
            at = shoe[0].at + window
            deadlines.append(at if offline else at + lag)
        if seen:
            deadlines.append(seen[0].at + window)
        return min(deadlines) if deadlines else None

    def take(name: str, event: ReaderEvent | None, now: float) -> Iterator[ReaderEvent]:
        nonlocal done, offline
        if event is None:
            ended.add(name)
        elif name == "serial":
            if isinstance(event, (*_SERIAL_CARDS, CutCardSeen)):
                shoe.append(_Seen(event, min(event.monotonic, now)))
            if not isinstance(event, _SERIAL_CARDS):
                yield event
        elif isinstance(event, CameraProgress):
            done = max(done, event.captured)
        elif isinstance(event, _CAMERA_CARDS):
            at = event.captured if event.captured is not None else min(event.monotonic, now)
            done = max(done, at)
            late = next((g for g in given if g.start <= at <= g.end), None)
            if late is not None:
                log.warning(
                    "camera card after the verdict on the shoe's",
                    serial=late.card,
                    camera=getattr(event, "card", None),
                    late_by=round(now - late.end, 3),
                )
                return
            if now - at > window:
                log.info("camera behind", card=getattr(event, "card", None), lag=now - at)
            seen.append(_Seen(event, at))
        elif event.event in ("offline", "online"):
            offline = event.event == "offline"
            done = max(done, min(event.monotonic, now))
            yield event
        given[:] = [g for g in given if g.end >= done]

    try:
        while len(ended) < 2:
            deadline = wake_at()
            timeout = None if deadline is None else max(deadline - clock(), 0.0)
            try:
                item: tuple[str, ReaderEvent | None] | None = await asyncio.wait_for(
                    queue.get(), timeout
                )
            except TimeoutError:
                item = None
            while item is not None:  # all that has come, before any verdict goes by time
                for event in take(*item, clock()):
                    yield event
                item = queue.get_nowait() if not queue.empty() else None
            for event in settle(clock()):
                yield event
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _pair(reader_id: str, s: CardSeen | BurnCard, k: ReaderEvent) -> ReaderEvent:
    card = s.card
    if isinstance(k, CardSeen) and k.card == card:
        return s
    got = k.card if isinstance(k, CardSeen) else None
    why = getattr(k, "reason", "") if got is None else ""
    return _disagreement(reader_id, card, got, why or "a different card")


def _lone_camera(reader_id: str, k: _Seen) -> ReaderDisagreement:
    got = k.event.card if isinstance(k.event, CardSeen) else None
    return _disagreement(reader_id, None, got, "the shoe reported no card")


def _disagreement(
    reader_id: str, serial: str | None, camera: str | None, detail: str
) -> ReaderDisagreement:
    log.warning("readers disagree", serial=serial, camera=camera, detail=detail)
    return ReaderDisagreement(reader_id=reader_id, serial=serial, camera=camera, detail=detail)
