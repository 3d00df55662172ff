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
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import structlog

from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.reader import CameraReader
from shoe_reader.camera.recognize import Recognizer, parse_roi
from shoe_reader.camera.source import FrameSource, open_source
from shoe_reader.events import (
    BurnCard,
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
        from hardware_sim.camera.live import REGISTRY

        camera = REGISTRY.get(spec[4:])
        if camera is None:
            raise LookupError(f"no synthetic camera named {spec[4:]!r} is running")
        return camera  # type: ignore[return-value]
    return open_source(spec)


def camera_reader(
    source: str, calibration: Path, roi: str | None, reader_id: str, reconnect: int = 10
) -> CameraReader:
    cal = Calibration.load(calibration)
    region = parse_roi(roi) if roi else None
    return CameraReader(
        open_camera_source(source), Recognizer(cal, roi=region), reader_id, reconnect=reconnect
    )


async def camera_events(reader: CameraReader) -> AsyncIterator[ReaderEvent]:
    """The camera reader's events, produced in a thread, delivered on this event loop."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[ReaderEvent | BaseException | None] = asyncio.Queue()
    stop = threading.Event()
    reader.should_stop = stop.is_set

    def run() -> None:
        try:
            for event in reader.events():
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


@dataclass
class _Pending:
    event: ReaderEvent
    deadline: float


async def cross_check(
    serial: AsyncIterator[ReaderEvent],
    camera: AsyncIterator[ReaderEvent],
    window: float,
    reader_id: str,
) -> AsyncIterator[ReaderEvent]:
    """Pair each card of the shoe with the camera's, in order, within ``window`` seconds.

    Agreeing pairs yield the shoe's event. The cut card has no face: the shoe's report
    passes, and a camera's unreadable card right after it is the cut card seen. Every
    event of the shoe that is not a card (online, offline, alarms…) passes straight
    through; the camera's going offline passes too (its reader id tells which).
    """
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
    shoe: list[_Pending] = []
    seen: list[_Pending] = []
    cut_until = 0.0
    ended = 0
    try:
        while ended < 2:
            deadlines = [p.deadline for p in shoe + seen]
            timeout = max(min(deadlines) - time.monotonic(), 0.0) if deadlines else None
            try:
                name, event = await asyncio.wait_for(queue.get(), timeout)
            except TimeoutError:
                name, event = "", None
            now = time.monotonic()
            if name and event is None:
                ended += 1
            elif name == "serial" and event is not None:
                if isinstance(event, _SERIAL_CARDS):
                    shoe.append(_Pending(event, now + window))
                else:
                    if isinstance(event, CutCardSeen):
                        cut_until = now + window
                    yield event
            elif name == "camera" and event is not None:
                if isinstance(event, CardSeen | UnreadableCard):
                    if isinstance(event, UnreadableCard) and now < cut_until and not shoe:
                        cut_until = 0.0
                        continue  # the cut card slid past the camera
                    seen.append(_Pending(event, now + window))
                elif event.event in ("offline", "online"):
                    yield event
            while shoe and seen:
                s, k = shoe.pop(0).event, seen.pop(0).event
                card = s.card  # type: ignore[attr-defined]
                if isinstance(k, CardSeen) and k.card == card:
                    yield s
                else:
                    got = k.card if isinstance(k, CardSeen) else None
                    why = getattr(k, "reason", "") if got is None else ""
                    yield _disagreement(reader_id, card, got, why or "a different card")
            now = time.monotonic()
            while shoe and shoe[0].deadline <= now and not seen:
                card = shoe.pop(0).event.card  # type: ignore[attr-defined]
                yield _disagreement(reader_id, card, None, "the camera saw no card")
            while seen and seen[0].deadline <= now and not shoe:
                k = seen.pop(0).event
                got = k.card if isinstance(k, CardSeen) else None
                yield _disagreement(reader_id, None, got, "the shoe reported no card")
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _disagreement(
    reader_id: str, serial: str | None, camera: str | None, detail: str
) -> ReaderDisagreement:
    log.warning("readers disagree", serial=serial, camera=camera, detail=detail)
    return ReaderDisagreement(reader_id=reader_id, serial=serial, camera=camera, detail=detail)
