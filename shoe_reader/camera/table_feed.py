"""A table's camera reader: the camera alone, or a serial shoe and a camera together.

The table service calls :func:`pump` instead of its serial-only pump when its
configuration has a camera. Events become table commands exactly as a serial
shoe's do (``reader_command``); a disagreement between the two readers becomes a
blocking ``reader_disagreement`` incident with both readings, for the supervisor.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from shoe_reader.camera.feed import ReaderDisagreement, camera_events, camera_reader, cross_check
from table_service.table import commands as c

if TYPE_CHECKING:
    from table_service.table.service import TableService

log = structlog.get_logger(__name__)


def disagreement_command(event: ReaderDisagreement) -> c.ReaderFault:
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


async def _deliver(table: TableService, event: Any, actor: str) -> None:
    if isinstance(event, ReaderDisagreement):
        try:
            await table.execute(disagreement_command(event), actor=actor)
        except Exception as exc:
            log.warning("table.reader_command_refused", reader_event=event.event, error=str(exc))
        return
    await table.on_reader_event(event, actor=actor)


async def pump(table: TableService) -> None:
    """Run the table's camera (and shoe, if it has one) until cancelled."""
    from shoe_reader.serial_reader import open_reader

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
                    await _deliver(table, event, actor)
            else:
                shoe_id = f"{table.table_id}-shoe"
                actor = f"reader:{shoe_id}+camera"
                async with open_reader(
                    shoe.port, shoe.dialect, shoe_id, shoe.baud, **table.reader_options
                ) as serial:
                    table.reader = serial
                    table._after_commit_effects(resync=True)
                    async for event in cross_check(
                        serial.events(),
                        camera_events(reader, progress=True),
                        camera.window_seconds,
                        shoe_id,
                    ):
                        await _deliver(table, event, actor)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("table.reader_failed", camera=camera.source)
            await asyncio.sleep(1.0)
