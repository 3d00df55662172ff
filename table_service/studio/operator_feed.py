"""An operator's durable feed: its bet results and settlements, in order, at least once.

A JetStream durable consumer per operator (``operator-<name>``) on the operator's
subjects keeps the operator's place while it is down: messages wait in the stream and
are delivered when it comes back, in the order they were published. Delivery is at
least once (a message whose acknowledgement was lost comes again), so the event's
sequence number is the idempotency key: per table, a message at or below the last one
handled is acknowledged and skipped. With a state file that high-water mark survives a
restart of the client; it is written before the acknowledgement, so a crash in between
means a redelivery that is skipped, never a loss.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from table_service import metrics
from table_service.table.nats_stream import ensure_stream, subject_token

log = structlog.get_logger(__name__)

Deliver = Callable[[dict[str, Any]], None]


def durable_name(operator: str) -> str:
    return f"operator-{subject_token(operator)}"


class FeedState:
    """Per table, the last event sequence handled (a JSON file, replaced atomically)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.last: dict[str, int] = {}
        if path is not None and path.exists():
            self.last = {k: int(v) for k, v in json.loads(path.read_text()).items()}

    def seen(self, table_id: str, seq: int) -> bool:
        return seq <= self.last.get(table_id, 0)

    def mark(self, table_id: str, seq: int) -> None:
        self.last[table_id] = seq
        if self.path is not None:
            tmp = self.path.with_suffix(self.path.suffix + ".tmp")
            tmp.write_text(json.dumps(self.last, sort_keys=True))
            os.replace(tmp, self.path)


class PendingGauge:
    """The consumer's backlog (pending and unacknowledged messages) as a gauge, asked of
    JetStream every few seconds while the feed runs."""

    def __init__(self, subscription: Any, operator: str, every: float = 5.0) -> None:
        self.subscription = subscription
        self.operator = operator
        self.every = every
        self._next = 0.0

    async def update(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() < self._next:
            return
        self._next = loop.time() + self.every
        try:
            info = await self.subscription.consumer_info()
        except Exception:  # NATS restarting: the gauge keeps its last value
            return
        backlog = (info.num_pending or 0) + (info.num_ack_pending or 0)
        metrics.FEED_PENDING.labels(self.operator).set(backlog)


LINKS: dict[str, NatsLink] = {}
"""The NATS link of each operator this process feeds (its readiness, :func:`readiness`)."""


def readiness(operator: str) -> tuple[bool, str]:
    """The feed's ``/readyz``: ready while its link to NATS is up (messages flow); not
    ready, with why, before it first connects and while NATS is unreachable (nothing is
    lost then: the durable consumer keeps the operator's place)."""
    link = LINKS.get(operator)
    if link is None:
        return False, "not started"
    if link.connected:
        return True, ""
    return False, f"NATS unreachable at {link.url} ({link.failures} failed attempts)"


class NatsLink:
    """The feed's connection to NATS, said out loud: while NATS is unreachable (at start
    or later) a structured ``*.nats_unreachable`` warning names the URL, the attempts and
    the last error (at once, then every :attr:`every` seconds, not a traceback per
    attempt), ``livetable_feed_nats_connected`` reads 0 and the failures are counted; when
    NATS answers again ``*.nats_connected`` says after how long and the gauge reads 1.

    Before, a feed started while NATS was away sat in the client's connect loop: nothing
    in its metrics, a traceback per half second from the client's own logger, and deaf
    to SIGTERM (the stop it was given waited behind the connect)."""

    def __init__(self, url: str, operator: str, kind: str, *, every: float = 30.0) -> None:
        self.url = url
        self.operator = operator
        self.kind = kind  # "operator_feed" or "webhook": the log lines' prefix
        self.every = every
        self.failures = 0
        self._down_since: float | None = None
        self._last_said = 0.0
        self._up = False
        metrics.FEED_NATS_CONNECTED.labels(operator).set(0)
        LINKS[operator] = self

    @property
    def connected(self) -> bool:
        return self._up

    async def _error(self, exc: Exception) -> None:
        loop_time = asyncio.get_running_loop().time()
        self.failures += 1
        metrics.FEED_NATS_FAILURES.labels(self.operator).inc()
        self._mark_down(loop_time)
        if self.failures == 1 or loop_time - self._last_said >= self.every:
            self._last_said = loop_time
            log.warning(
                f"{self.kind}.nats_unreachable",
                operator=self.operator,
                url=self.url,
                attempts=self.failures,
                down_s=round(loop_time - (self._down_since or loop_time), 1),
                error=f"{type(exc).__name__}: {exc}",
                policy="retrying every 0.5 s; the durable consumer keeps the operator's place",
            )

    def _mark_down(self, now: float) -> None:
        if self._down_since is None:
            self._down_since = now
        self._up = False
        metrics.FEED_NATS_CONNECTED.labels(self.operator).set(0)

    async def _disconnected(self) -> None:
        if self._up:
            log.warning(f"{self.kind}.nats_disconnected", operator=self.operator, url=self.url)
        self._mark_down(asyncio.get_running_loop().time())

    async def _connected(self) -> None:
        now = asyncio.get_running_loop().time()
        down = None if self._down_since is None else round(now - self._down_since, 1)
        self._down_since, self._up, self.failures = None, True, 0
        metrics.FEED_NATS_CONNECTED.labels(self.operator).set(1)
        if down is not None:
            log.warning(
                f"{self.kind}.nats_connected", operator=self.operator, url=self.url, after_s=down
            )

    async def connect(self, name: str, stop: asyncio.Event) -> Any | None:
        """The NATS client once connected, or None if ``stop`` was set first."""
        import nats

        connecting = asyncio.ensure_future(
            nats.connect(
                self.url,
                name=name,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.5,
                error_cb=self._error,
                disconnected_cb=self._disconnected,
                reconnected_cb=self._connected,
            )
        )
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({connecting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if not connecting.done():
            connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await connecting
            log.info(f"{self.kind}.stopped_before_nats", operator=self.operator, url=self.url)
            return None
        nc = await connecting
        await self._connected()
        return nc


async def run_feed(
    url: str,
    operator: str,
    deliver: Deliver,
    *,
    stream: str = "LIVETABLE",
    root: str = "livetable",
    state: FeedState | None = None,
    stop: asyncio.Event | None = None,
    batch: int = 100,
) -> None:
    """Deliver the operator's messages to ``deliver`` until ``stop`` is set."""
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
    from nats.js.errors import FetchTimeoutError

    state = state or FeedState(None)
    stop = stop or asyncio.Event()
    metrics.watch_feed(operator)
    link = NatsLink(url, operator, "operator_feed")
    nc = await link.connect(f"operator-feed:{operator}", stop)
    if nc is None:
        return
    try:
        js = nc.jetstream()
        await ensure_stream(js, stream, root)
        subscription = await js.pull_subscribe(
            f"{root}.operators.{subject_token(operator)}.>",
            durable=durable_name(operator),
            stream=stream,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=30,
                max_ack_pending=batch * 10,
            ),
        )
        log.info("operator_feed.started", operator=operator, durable=durable_name(operator))
        pending = PendingGauge(subscription, operator)
        while not stop.is_set():
            if not nc.is_connected:  # said by the link; the client reconnects by itself
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)
                continue
            await pending.update()
            try:
                messages = await subscription.fetch(batch, timeout=0.5)
            except (FetchTimeoutError, TimeoutError):
                continue
            except Exception:  # NATS restarting: the client reconnects; fetch again
                log.warning("operator_feed.fetch_failed", exc_info=True)
                await asyncio.sleep(0.5)
                continue
            for message in messages:
                body = json.loads(message.data)
                table_id, seq = body["table_id"], int(body["seq"])
                if not state.seen(table_id, seq):
                    deliver(body)
                    state.mark(table_id, seq)
                    metrics.feed_delivered(operator, "delivered", body.get("ts"))
                else:
                    metrics.feed_delivered(operator, "duplicate")
                with contextlib.suppress(Exception):  # lost: redelivered, then skipped
                    await message.ack()
    finally:
        with contextlib.suppress(Exception):
            await nc.flush(timeout=2)  # the last acknowledgements reach the server
        await nc.close()
