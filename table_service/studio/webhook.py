"""An operator's feed delivered to its HTTP endpoint: POSTed in order, at least once, signed.

The studio runs one ``livetable operator-feed --operator NAME --webhook URL`` per operator
that wants its bet acceptances, results and refunds pushed. It reads the operator's
subjects of the studio's JetStream stream through a durable consumer of its own,
``webhook-<operator>``, so the operator's place survives a restart of this process, of
NATS, and any outage of the operator's endpoint.

Order: the consumer lets one message out at a time (``max_ack_pending=1``) and the next
is fetched only once this one is acknowledged, so the endpoint sees the messages in the
order the stream holds them (per table, in log order), even after a redelivery.

At least once: a message is acknowledged only after the endpoint answered it (2xx, or a
refusal dead-lettered, below). A crash before the acknowledgement redelivers the message,
with the same ``Idempotency-Key``; that key (the event's sequence number in the log,
also the body's ``seq``) is how the operator recognises a re-delivery. With a state file
the last sequence delivered per table is kept, written before the acknowledgement, so a
message already answered is not POSTed again after a lost acknowledgement.

Retries: a connection error, a timeout, a 5xx, 408, 425 or 429, and also 401, 403 and
404 (the endpoint or its credentials are wrong, not the message: every later message
would fail the same way) are retried with exponential backoff (``backoff`` doubling up
to ``max_backoff``, with jitter; a ``Retry-After`` in seconds is honoured up to
``max_backoff``), forever, holding the order: nothing after the message is sent meanwhile.

Poison messages: any other 4xx (400, 409, 413, 422, ...) is the operator refusing this
message. It is logged at error level (``webhook.refused``, with the sequence, the status
and the start of the answer), appended to the dead-letter file (one JSON line, flushed to
disk before the acknowledgement), acknowledged, and delivery goes on with the next one.
A dead letter can be re-sent by hand; it is never dropped silently.

Signature: HMAC-SHA256 with the operator's own secret (a shared secret per operator, as
payment webhooks do: an operator verifies with one line of any standard library, and a
leaked secret exposes that operator alone, never the studio's audit signing key). Header
``Livetable-Signature: t=<unix seconds>,v1=<hex>`` where the MAC is over
``<t>.`` followed by the exact body bytes; the operator recomputes it, compares in
constant time and refuses a ``t`` far from its clock (a replayed request).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import hmac
import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from table_service import metrics
from table_service.studio.operator_feed import FeedState, NatsLink, PendingGauge
from table_service.table.nats_stream import ensure_stream, subject_token

log = structlog.get_logger(__name__)

RETRIED_4XX = frozenset({401, 403, 404, 408, 425, 429})
SIGNATURE_HEADER = "Livetable-Signature"


def webhook_durable(operator: str) -> str:
    return f"webhook-{subject_token(operator)}"


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    """The ``Livetable-Signature`` header value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_signature(secret: bytes, header: str, body: bytes, *, tolerance: float = 300) -> bool:
    """What an operator's endpoint does: the MAC matches and ``t`` is recent."""
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        timestamp = int(parts["t"])
        given = parts["v1"]
    except (KeyError, ValueError):
        return False
    if abs(time.time() - timestamp) > tolerance:
        return False
    expected = signature(secret, timestamp, body).rsplit("v1=", 1)[1]
    return hmac.compare_digest(expected, given)


@dataclass(frozen=True)
class Verdict:
    """How one POST ended: delivered, refused for good (dead letter), or to retry."""

    kind: str  # "delivered" | "refused" | "retry"
    status: int | None
    detail: str
    retry_after: float | None = None


def judge(status: int, text: str, retry_after: str | None) -> Verdict:
    if 200 <= status < 300:
        return Verdict("delivered", status, "")
    if 400 <= status < 500 and status not in RETRIED_4XX:
        return Verdict("refused", status, text[:500])
    wait = None
    if retry_after is not None and retry_after.strip().isdigit():
        wait = float(retry_after.strip())
    return Verdict("retry", status, text[:200], wait)


class DeadLetters:
    """Messages the operator refused (a 4xx), one JSON line each, on disk before the ack."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def add(self, operator: str, body: bytes, verdict: Verdict, message: dict[str, Any]) -> None:
        if self.path is None:
            return
        entry = {
            "operator": operator,
            "seq": message.get("seq"),
            "table_id": message.get("table_id"),
            "type": message.get("type"),
            "status": verdict.status,
            "answer": verdict.detail,
            "refused_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "body": body.decode("utf-8"),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry, separators=(",", ":")) + "\n")
            out.flush()
            os.fsync(out.fileno())


async def run_webhook(
    nats_url: str,
    operator: str,
    endpoint: str,
    secret: bytes,
    *,
    stream: str = "LIVETABLE",
    root: str = "livetable",
    state: FeedState | None = None,
    dead_letters: DeadLetters | None = None,
    stop: asyncio.Event | None = None,
    timeout: float = 10.0,
    backoff: float = 0.5,
    max_backoff: float = 30.0,
    ack_wait: float = 60.0,
) -> None:
    """POST the operator's messages to ``endpoint`` until ``stop`` is set."""
    import httpx
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
    from nats.js.errors import FetchTimeoutError

    if not secret:
        raise ValueError("a webhook needs the operator's signing secret")
    state = state or FeedState(None)
    dead_letters = dead_letters or DeadLetters(None)
    stop = stop or asyncio.Event()
    metrics.watch_feed(operator)
    nc = await NatsLink(nats_url, operator, "webhook").connect(f"webhook:{operator}", stop)
    if nc is None:
        return
    client = httpx.AsyncClient(timeout=timeout, follow_redirects=False)
    durable = webhook_durable(operator)
    try:
        js = nc.jetstream()
        await ensure_stream(js, stream, root)
        subscription = await js.pull_subscribe(
            f"{root}.operators.{subject_token(operator)}.>",
            durable=durable,
            stream=stream,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=ack_wait,
                max_ack_pending=1,  # one in flight: the endpoint sees the stream's order
            ),
        )
        log.info("webhook.started", operator=operator, endpoint=endpoint, durable=durable)
        pending = PendingGauge(subscription, operator)
        confirmed = RecentAcks(nc, operator)
        while not stop.is_set():
            if not nc.is_connected:  # said by the link; the client reconnects by itself
                await _pause(stop, 0.5)
                continue
            await confirmed.after_reconnect()
            await pending.update()
            try:
                messages = await subscription.fetch(1, timeout=0.5)
            except (FetchTimeoutError, TimeoutError):
                continue
            except Exception:  # NATS restarting: the client reconnects; fetch again
                log.warning("webhook.fetch_failed", operator=operator, exc_info=True)
                await _pause(stop, 0.5)
                continue
            for message in messages:
                done = await _deliver_one(
                    client, message, operator, endpoint, secret, state, dead_letters, stop,
                    backoff=backoff, max_backoff=max_backoff,
                )  # fmt: skip
                if not done:  # stopping mid-retry: give it back, redelivered at once
                    with contextlib.suppress(Exception):
                        await message.nak()
                    break
                if await _acknowledge(message, operator, stop, ack_wait):
                    confirmed.add(message.reply)
    finally:
        await client.aclose()
        with contextlib.suppress(Exception):
            await nc.flush(timeout=2)
        await nc.close()


async def _deliver_one(
    client: Any,
    message: Any,
    operator: str,
    endpoint: str,
    secret: bytes,
    state: FeedState,
    dead_letters: DeadLetters,
    stop: asyncio.Event,
    *,
    backoff: float,
    max_backoff: float,
) -> bool:
    """POST one message until the endpoint answers it for good; False if stopped first."""
    import httpx

    body: bytes = message.data
    parsed = json.loads(body)
    table_id, seq = str(parsed["table_id"]), int(parsed["seq"])
    if state.seen(table_id, seq):
        log.info("webhook.already_delivered", operator=operator, seq=seq, table_id=table_id)
        metrics.feed_delivered(operator, "duplicate")
        return True
    delay, attempt = backoff, 0
    while not stop.is_set():
        attempt += 1
        now = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": str(seq),
            "Livetable-Seq": str(seq),
            "Livetable-Table": table_id,
            "Livetable-Event": str(parsed.get("type")),
            "Livetable-Operator": operator,
            "Livetable-Attempt": str(attempt),
            SIGNATURE_HEADER: signature(secret, now, body),
        }
        try:
            answer = await client.post(endpoint, content=body, headers=headers)
            verdict = judge(answer.status_code, answer.text, answer.headers.get("Retry-After"))
        except httpx.HTTPError as exc:
            verdict = Verdict("retry", None, f"{type(exc).__name__}: {exc}")
        if verdict.kind == "delivered":
            state.mark(table_id, seq)
            metrics.feed_delivered(operator, "delivered", parsed.get("ts"))
            log.info(
                "webhook.delivered", operator=operator, seq=seq, status=verdict.status,
                attempt=attempt,
            )  # fmt: skip
            return True
        if verdict.kind == "refused":
            log.error(
                "webhook.refused",
                operator=operator,
                seq=seq,
                table_id=table_id,
                status=verdict.status,
                answer=verdict.detail,
                policy="dead-lettered and acknowledged; delivery goes on",
            )
            dead_letters.add(operator, body, verdict, parsed)
            state.mark(table_id, seq)
            metrics.feed_delivered(operator, "dead_lettered", parsed.get("ts"))
            return True
        metrics.FEED_RETRIES.labels(operator).inc()
        wait = min(max_backoff, verdict.retry_after or delay * random.uniform(0.75, 1.25))
        level = log.error if verdict.status in (401, 403, 404) else log.warning
        level(
            "webhook.retry", operator=operator, seq=seq, status=verdict.status,
            detail=verdict.detail, attempt=attempt, wait_s=round(wait, 2),
        )  # fmt: skip
        with contextlib.suppress(Exception):  # keep the message ours while we wait
            await message.in_progress()
        await _pause(stop, wait)
        delay = min(max_backoff, delay * 2)
    return False


RECENT_ACKS = 32
"""Acknowledgements NATS confirmed that the feed sends again after a reconnect (see
:class:`RecentAcks`)."""


class RecentAcks:
    """The reply subjects of the last acknowledgements NATS confirmed, sent again once the
    client has reconnected.

    NATS confirms an acknowledgement once it holds it in memory and writes the consumer's
    state to its store a moment later: a server killed in between comes back with the
    message still waiting for its acknowledgement, and with one message in flight
    (``max_ack_pending=1``) it hands out nothing more until the ack wait has run out (a
    minute by default; ten in the outage test, whose CI run on 7 December found the
    restored store one acknowledgement behind what NATS had confirmed: the two of the
    first round delivered, the consumer's state holding the first unacknowledged). An
    acknowledgement NATS already has is answered and changes nothing, so the last few
    are sent again, over the new connection, after every reconnect."""

    def __init__(self, nc: Any, operator: str, keep: int = RECENT_ACKS) -> None:
        self._nc = nc
        self._operator = operator
        self._replies: collections.deque[str] = collections.deque(maxlen=keep)
        self._reconnects = int(nc.stats.get("reconnects", 0))

    def add(self, reply: str) -> None:
        """An acknowledgement NATS has confirmed."""
        if reply:
            self._replies.append(reply)

    async def after_reconnect(self) -> None:
        """If the client has reconnected since the last call, send every remembered
        acknowledgement again, together (each confirmed or given up after two seconds)."""
        reconnects = int(self._nc.stats.get("reconnects", 0))
        if reconnects == self._reconnects:
            return
        self._reconnects = reconnects
        # All at once, each given two seconds (one NATS leaves unanswered costs no more); a
        # connection gone again fails them, and the next reconnect sends them again.
        answers = await asyncio.gather(
            *(self._nc.request(reply, b"", timeout=2.0) for reply in self._replies),
            return_exceptions=True,
        )
        confirmed = sum(not isinstance(answer, BaseException) for answer in answers)
        log.warning(
            "webhook.acks_resent", operator=self._operator, sent=len(self._replies),
            confirmed=confirmed, reason="NATS may have lost acknowledgements it had confirmed",
        )  # fmt: skip


async def _acknowledge(message: Any, operator: str, stop: asyncio.Event, ack_wait: float) -> bool:
    """Acknowledge a message the endpoint has answered for good, until NATS confirms it.

    With one message in flight, the consumer hands out nothing more until this one is
    acknowledged: an acknowledgement lost with NATS (written into the connection as the
    server died) held every later message of the operator until the consumer's ack wait
    ran out (a minute by default; a CI outage test waited 57 s for it). It is sent again,
    every half second, and goes over the new connection once the client has reconnected
    (NATS answers an acknowledgement it already had, too). Past the ack wait the consumer
    has handed the message out again: then it comes back, and the state file skips it.
    True once NATS has confirmed it."""
    deadline = time.monotonic() + ack_wait
    attempt = 0
    while not stop.is_set():
        attempt += 1
        try:
            await message.ack_sync(timeout=5)
            return True
        except Exception as exc:
            if time.monotonic() >= deadline:
                return False
            log.warning(
                "webhook.ack_lost", operator=operator, attempt=attempt, error=repr(exc),
                policy="sent again every 0.5 s until NATS confirms it",
            )  # fmt: skip
        await _pause(stop, 0.5)
    return False


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
