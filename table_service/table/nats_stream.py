"""Fan the stream out through NATS JetStream, for studios with many consumers or hosts.

It sits behind the same hook as the in-process hub (the event store's after-commit
subscriber) and publishes each committed event to ``<prefix>.<table_id>.<type>`` with the
event's sequence number as ``Nats-Msg-Id``, so JetStream's de-duplication turns a
re-publish after a restart into a no-op. On start it catches up from the stream's last
sequence, so a process that died between commit and publish loses nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import structlog

from audit.store import EventStore, StoredEvent
from table_service.runtime import Runtime

log = structlog.get_logger(__name__)


class JetStreamPublisher:
    def __init__(
        self,
        runtime: Runtime,
        url: str = "nats://127.0.0.1:4222",
        *,
        stream: str = "LIVETABLE",
        prefix: str = "livetable.tables",
    ) -> None:
        self.runtime = runtime
        self.url = url
        self.stream = stream
        self.prefix = prefix
        self._nc: Any = None
        self._js: Any = None
        self._queue: asyncio.Queue[list[StoredEvent]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.published_seq = 0

    def subject(self, event: StoredEvent) -> str:
        table = event.table_id.replace(".", "_")
        return f"{self.prefix}.{table}.{event.type}"

    async def start(self) -> None:
        import nats
        from nats.js.api import StreamConfig

        self._loop = asyncio.get_running_loop()
        self._nc = await nats.connect(self.url, name="livetable")
        self._js = self._nc.jetstream()
        try:
            info = await self._js.stream_info(self.stream)
        except Exception:
            await self._js.add_stream(StreamConfig(name=self.stream, subjects=[f"{self.prefix}.>"]))
            info = await self._js.stream_info(self.stream)
        last = 0
        if info.state.messages:
            message = await self._js.get_msg(self.stream, seq=info.state.last_seq)
            last = int((message.headers or {}).get("Nats-Msg-Id", "0"))
        self.published_seq = last
        self.runtime.store.subscribe(self._from_commit)
        await self._catch_up()
        self._task = asyncio.create_task(self._run())
        log.info("nats.started", url=self.url, stream=self.stream, resume_after=last)

    def _from_commit(self, events: list[StoredEvent]) -> None:
        """After-commit hook (any thread): hand the events to the publisher's loop."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._queue.put_nowait, events)

    async def _catch_up(self) -> None:
        while True:

            def read(after: int) -> list[StoredEvent]:
                with self.runtime.sessions() as session:
                    return EventStore.read(session, after_seq=after, limit=1000)

            batch = await asyncio.to_thread(read, self.published_seq)
            if not batch:
                return
            await self._publish(batch)

    async def _publish(self, events: list[StoredEvent]) -> None:
        for event in events:
            if event.seq <= self.published_seq:
                continue
            await self._js.publish(
                self.subject(event),
                json.dumps(event.to_json(), separators=(",", ":")).encode(),
                headers={"Nats-Msg-Id": str(event.seq)},
            )
            self.published_seq = event.seq

    async def _run(self) -> None:
        while True:
            events = await self._queue.get()
            if events and events[0].seq > self.published_seq + 1:
                await self._catch_up()  # events committed by another process in between
            await self._publish(events)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._nc is not None:
            await self._nc.drain()
