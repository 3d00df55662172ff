"""Reader events into the table: the one way a shoe's or a camera's reports reach it.

The drivers (``shoe_reader``) turn bytes and frames into reader events and know nothing
of tables or games; this module opens the table's readers (a serial shoe, a camera, or
both cross-checking each other), turns each report into a table command
(:func:`reader_command`) and hands it to the table through its public methods. A
disagreement between the two readers becomes a blocking ``reader_disagreement``
incident with both readings, for the supervisor.

The camera's modules (OpenCV) are imported only by a table that has a camera.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

import structlog

from table_service.table import commands as c
from table_service.table.config import TableConfig

log = structlog.get_logger(__name__)


class Lane(Protocol):
    """A reader's way into its table (:class:`~table_service.table.reader_lane.ReaderLane`):
    ``take`` on the reader's thread, ``run`` on the loop for what comes back to it."""

    def take(self, events: list[Any]) -> None: ...

    async def run(self) -> None: ...


class ReaderTable(Protocol):
    """What the pump needs of a table (``TableService``): its configuration, a place
    for the open shoe (to lock it while bets are taken) and the entry for reports."""

    table_id: str
    config: TableConfig
    reader_options: dict[str, Any]

    def attach_reader(self, reader: Any) -> None: ...

    async def on_reader_event(self, event: Any, *, actor: str) -> Any: ...

    def reader_lane(self, actor: str) -> Lane: ...

    async def execute(self, command: c.Command, *, actor: str) -> Any: ...


def reader_command(event: Any) -> c.Command | None:
    """Reader event → table command. Readers know nothing of games; this is where the
    table decides what a reader's report means."""
    kind = event.event
    if kind == "card":
        return c.CardScanned(event.card, event.seq)
    if kind == "burn_card":
        return c.CardScanned(event.card, event.seq, burn_mode=True)
    if kind == "cut_card":
        return c.CutCard()
    if kind == "unreadable":
        details: dict[str, Any] = {"reason": getattr(event, "reason", "")}
        if getattr(event, "cause", ""):  # a camera says why (see UnreadableCard.show_again)
            details["cause"] = event.cause
            details["show_again"] = bool(event.show_again)
        return c.ReaderFault("unreadable", details)
    if kind == "missed_card_suspected":
        return c.ReaderFault(
            "missed_card_suspected",
            {"expected_seq": event.expected_seq, "missing": event.missing, "seq": event.seq},
        )
    if kind == "offline":
        return c.ReaderFault("offline", {"reason": event.reason})
    if kind == "online":
        return c.ReaderOnline(event.info)
    if kind == "alarm":
        return c.ReaderFault("alarm", {"code": event.code, "text": event.text})
    if kind == "shoe_empty":
        return c.ReaderFault("shoe_empty", {})
    if kind == "warning" and event.code == "possible_duplicate_after_reconnect":
        card = getattr(event, "card", None)
        text = f"{card} came again right after the shoe reconnected: a re-send or a real copy"
        return c.ReaderFault("possible_duplicate", {"card": card, "text": text})
    return None


def disagreement_command(event: Any) -> c.ReaderFault:
    """The shoe and the camera reported different cards (a ``ReaderDisagreement``)."""
    serial = event.serial or "nothing"
    camera = event.camera or "nothing"
    return c.ReaderFault(
        "reader_disagreement",
        {
            "serial": event.serial,
            "camera": event.camera,
            "text": f"shoe read {serial}, camera saw {camera}: {event.detail}",
        },
    )


async def pump(table: ReaderTable) -> None:
    """Run the table's readers until cancelled: reopened after a failure, a second later."""
    if table.config.camera is not None:  # a camera, alone or cross-checking the shoe
        await _camera_pump(table)
    else:
        await _serial_pump(table)


async def _serial_pump(table: ReaderTable) -> None:
    from shoe_reader.serial_reader import open_reader

    shoe = table.config.shoe
    assert shoe is not None
    reader_id = f"{table.table_id}-shoe"
    while True:
        try:
            # The reader's thread hands its events to the table's command thread, which
            # runs a card at once; the rest comes back to the loop (lane.run), in order.
            lane = table.reader_lane(f"reader:{reader_id}")
            reader = open_reader(
                shoe.port, shoe.dialect, reader_id, shoe.baud, **table.reader_options
            )
            reader.hand_off(lane.take)
            async with reader:
                table.attach_reader(reader)
                await lane.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("table.reader_failed", port=shoe.port)
            await asyncio.sleep(1.0)


async def _camera_pump(table: ReaderTable) -> None:
    """The camera alone, or a serial shoe and a camera together: events become table
    commands exactly as a serial shoe's do."""
    from shoe_reader.camera.feed import (
        ReaderDisagreement,
        camera_events,
        camera_reader,
        cross_check,
    )
    from shoe_reader.serial_reader import open_reader

    async def deliver(event: Any, actor: str) -> None:
        if isinstance(event, ReaderDisagreement):
            try:
                await table.execute(disagreement_command(event), actor=actor)
            except Exception as exc:
                log.warning(
                    "table.reader_command_refused", reader_event=event.event, error=str(exc)
                )
            return
        await table.on_reader_event(event, actor=actor)

    cfg = table.config
    camera = cfg.camera
    assert camera is not None
    shoe = cfg.shoe
    camera_id = f"{table.table_id}-camera"
    while True:
        try:
            reader = camera_reader(camera.source, Path(camera.calibration), camera.roi, camera_id)
            if shoe is None:
                actor = f"reader:{camera_id}"
                async for event in camera_events(reader):
                    await deliver(event, actor)
            else:
                shoe_id = f"{table.table_id}-shoe"
                actor = f"reader:{shoe_id}+camera"
                async with open_reader(
                    shoe.port, shoe.dialect, shoe_id, shoe.baud, **table.reader_options
                ) as serial:
                    table.attach_reader(serial)
                    async for event in cross_check(
                        serial.events(),
                        camera_events(reader, progress=True),
                        camera.window_seconds,
                        shoe_id,
                    ):
                        await deliver(event, actor)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("table.reader_failed", camera=camera.source)
            await asyncio.sleep(1.0)
