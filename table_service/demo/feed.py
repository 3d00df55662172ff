"""The table's internal event stream, followed over the real WebSocket.

The round log prints from it and the bots wait on it ("has the reader delivered the card
I just pulled?"), so they see exactly what any stream subscriber sees, in log order. A
dropped connection is resumed from the last sequence number, without gap or duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import Callable
from typing import Any

import structlog
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

log = structlog.get_logger(__name__)

Event = dict[str, Any]
Listener = Callable[[Event], None]
KEEP = 5000


class FeedTimeout(TimeoutError):
    """An awaited event did not come in time (the table did not do what the bot expected)."""


class TableFeed:
    def __init__(self, ws_base: str, table_id: str, token: str, *, after_seq: int = 0) -> None:
        self.url = f"{ws_base}/api/v1/tables/{table_id}/stream"
        self.token = token
        self.last_seq = after_seq
        self.events: deque[Event] = deque(maxlen=KEEP)
        self.listeners: list[Listener] = []
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="table-feed")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _run(self) -> None:
        while True:
            url = f"{self.url}?after_seq={self.last_seq}&token={self.token}"
            try:
                async with connect(url, max_size=None) as ws:
                    self.connected.set()
                    async for message in ws:
                        await self._deliver(json.loads(message))
            except asyncio.CancelledError:
                raise
            except (ConnectionClosed, OSError) as exc:
                log.warning("demo.feed_reconnect", error=str(exc), after_seq=self.last_seq)
            await asyncio.sleep(0.2)

    async def _deliver(self, event: Event) -> None:
        if event["seq"] <= self.last_seq:
            return
        self.last_seq = event["seq"]
        self.events.append(event)
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:
                log.exception("demo.feed_listener_failed", type=event.get("type"))
        async with self._changed:
            self._changed.notify_all()

    def find(self, predicate: Callable[[Event], bool], after_seq: int) -> Event | None:
        for event in self.events:
            if event["seq"] > after_seq and predicate(event):
                return event
        return None

    async def wait_for(
        self, predicate: Callable[[Event], bool], *, after_seq: int, timeout: float, what: str
    ) -> Event:
        """The first event after ``after_seq`` that matches (already received or to come)."""

        def found() -> Event | None:
            return self.find(predicate, after_seq)

        try:
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: found() is not None)
        except TimeoutError:
            raise FeedTimeout(f"no {what} within {timeout:g} s") from None
        event = found()
        assert event is not None
        return event
