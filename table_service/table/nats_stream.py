"""The studio's stream on NATS JetStream: an outbox per table, published from the log.

One stream per studio (default ``LIVETABLE``) holds two kinds of subject:

- ``<root>.tables.<table>.<type>``: every committed event of a table, in log order;
- ``<root>.operators.<operator>.<table>.<type>``: the operator's own bets of each
  ``bets_placed``, ``bets_settled`` and ``bets_refunded`` event, for that operator's
  durable feed (``livetable operator-feed``); other operators' bets are not in it.

Each message carries the service's timing as ``Livetable-Sent`` (the host's monotonic clock,
in seconds, as it is handed to NATS) and, when this process committed the event,
``Livetable-Commit`` (as it saw the commit), so a consumer on the same host can tell the
service's share of a latency from the broker's and its own. Each carries the event's
sequence number as ``Livetable-Seq`` and in its
``Nats-Msg-Id`` (``<seq>`` on a table subject, ``<seq>.<operator>`` on an operator
subject), so JetStream drops a re-publish; and ``Nats-Expected-Last-Subject-Sequence``,
so a second writer for a subject (one that lost the table's lease but still publishes) is
refused by the server instead of interleaving. Publishing reads the committed log, never
the commands: a process that dies between commit and publish loses nothing, because the
next publisher of the table (this process restarted, or the one that took the table over)
starts after the last message the stream holds for that table, read back from JetStream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterable
from typing import Any

import structlog

from audit.store import EventStore, StoredEvent
from table_service import metrics
from table_service.runtime import Runtime
from table_service.table.view import UndeclaredField, owner_fields, staff_record

log = structlog.get_logger(__name__)

OPERATOR_EVENTS = {"bets_placed": "bets", "bets_settled": "results", "bets_refunded": "refunds"}
WRONG_LAST_SEQUENCE = 10071
BATCH = 500


def subject_token(text: str) -> str:
    """A reversible subject token: letters, digits, ``-`` and ``_`` as they are, anything
    else (``.``, ``*``, ``>``, spaces) as ``~`` and two hex digits per UTF-8 byte."""
    out = []
    for char in text:
        if char.isascii() and (char.isalnum() or char in "-_"):
            out.append(char)
        else:
            out.extend(f"~{byte:02x}" for byte in char.encode("utf-8"))
    return "".join(out)


def operator_of(scoped_key: str) -> str | None:
    """The operator a bet belongs to, from its scoped idempotency key ``operator:NAME|key``."""
    actor, sep, _ = scoped_key.partition("|")
    role, colon, name = actor.partition(":")
    if not sep or not colon or role != "operator":
        return None
    return name


class JetStreamPublisher:
    """Publishes the committed log to JetStream, one outbox task per table.

    ``tables=None`` publishes every table found in the log (one process, the embedded
    default); a studio passes the tables it holds and calls :meth:`add_table` and
    :meth:`remove_table` as leases come and go, so only a table's writer publishes it.
    """

    def __init__(
        self,
        runtime: Runtime,
        url: str = "nats://127.0.0.1:4222",
        *,
        stream: str = "LIVETABLE",
        root: str = "livetable",
        tables: Iterable[str] | None = None,
    ) -> None:
        self.runtime = runtime
        self.url = url
        self.stream = stream
        self.root = root
        self.all_tables = tables is None
        self._initial = set(tables or ())
        self._nc: Any = None
        self._js: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._outboxes: dict[str, _Outbox] = {}
        self._subscribed = False
        self._committed: dict[str, int] = {}  # table -> last seq committed (any thread)

    # -- subjects ----------------------------------------------------------------------
    def subject(self, event: StoredEvent) -> str:
        return f"{self.root}.tables.{subject_token(event.table_id)}.{event.type}"

    def table_filter(self, table_id: str) -> str:
        return f"{self.root}.tables.{subject_token(table_id)}.>"

    def operator_subject(self, operator: str, event: StoredEvent) -> str:
        return (
            f"{self.root}.operators.{subject_token(operator)}."
            f"{subject_token(event.table_id)}.{event.type}"
        )

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        import nats

        self._loop = asyncio.get_running_loop()
        self._nc = await nats.connect(
            self.url, name="livetable", max_reconnect_attempts=-1, reconnect_time_wait=0.5
        )
        self._js = self._nc.jetstream()
        await ensure_stream(self._js, self.stream, self.root)
        if not self._subscribed:
            self.runtime.store.subscribe(self._from_commit)
            self._subscribed = True
        tables = set(self._initial)
        if self.all_tables:
            tables |= await asyncio.to_thread(self._tables_in_log)
        for table_id in sorted(tables):
            self.add_table(table_id)
        log.info("nats.started", url=self.url, stream=self.stream, tables=len(tables))

    def _tables_in_log(self) -> set[str]:
        with self.runtime.sessions() as session:
            rows = session.connection().exec_driver_sql(
                "SELECT DISTINCT table_id FROM audit_events"
            )
            return {r[0] for r in rows if not r[0].startswith("_")}

    async def stop(self) -> None:
        for table_id in list(self._outboxes):
            await self.remove_table(table_id)
        if self._nc is not None:
            with contextlib.suppress(Exception):
                await self._nc.drain()
            self._nc = None

    def add_table(self, table_id: str) -> None:
        """Start publishing a table (this process now writes it)."""
        if table_id in self._outboxes or self._js is None:
            return
        outbox = _Outbox(self, table_id)
        self._outboxes[table_id] = outbox
        outbox.start()

    async def remove_table(self, table_id: str) -> None:
        """Stop publishing a table (handed over): its next writer resumes from JetStream."""
        outbox = self._outboxes.pop(table_id, None)
        if outbox is not None:
            await outbox.stop()

    def drop_table(self, table_id: str) -> None:
        """:meth:`remove_table` for a synchronous hook."""
        if self._loop is not None:
            self._loop.create_task(self.remove_table(table_id))

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Until every outbox has published what was committed (tests, benchmarks)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        def behind(o: _Outbox) -> bool:
            committed = self._committed.get(o.table_id, 0)
            return not o.idle() or max(o.last_table, o.last_operator) < committed

        while True:
            refused = next((o.refused for o in self._outboxes.values() if o.refused), None)
            if refused is not None:
                raise refused  # strict mode: a field nobody declared stopped an outbox
            if not any(behind(o) for o in list(self._outboxes.values())):
                return
            if loop.time() > deadline:
                raise TimeoutError("JetStream outboxes still behind")
            await asyncio.sleep(0.02)

    # -- from the commit -----------------------------------------------------------------
    def _from_commit(self, events: list[StoredEvent]) -> None:
        """After-commit hook (any thread): hand each table's events to its outbox."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        for event in events:
            self._committed[event.table_id] = event.seq
        loop.call_soon_threadsafe(self._dispatch, events)

    def _dispatch(self, events: list[StoredEvent]) -> None:
        by_table: dict[str, list[StoredEvent]] = {}
        for event in events:
            by_table.setdefault(event.table_id, []).append(event)
        for table_id, batch in by_table.items():
            outbox = self._outboxes.get(table_id)
            if outbox is None and self.all_tables and not table_id.startswith("_"):
                self.add_table(table_id)
                outbox = self._outboxes.get(table_id)
            if outbox is not None:
                outbox.queue.put_nowait(batch)


async def ensure_stream(js: Any, stream: str, root: str) -> None:
    """The studio's stream with both subject trees (created, or widened if older)."""
    from nats.js.api import StreamConfig
    from nats.js.errors import NotFoundError

    subjects = [f"{root}.tables.>", f"{root}.operators.>"]
    try:
        info = await js.stream_info(stream)
    except NotFoundError:
        await js.add_stream(StreamConfig(name=stream, subjects=subjects))
        return
    have = list(info.config.subjects or [])
    missing = [s for s in subjects if s not in have]
    if missing:
        info.config.subjects = have + missing
        await js.update_stream(info.config)


class _Outbox:
    """One table's publishing: resume after what JetStream holds, catch up from the log,
    then follow the commits, in sequence order, retrying through NATS outages."""

    def __init__(self, publisher: JetStreamPublisher, table_id: str) -> None:
        self.p = publisher
        self.table_id = table_id
        self.queue: asyncio.Queue[list[StoredEvent]] = asyncio.Queue()
        self.last_table = 0
        self.last_operator = 0
        self._subject_seq: dict[str, tuple[int, int]] = {}  # subject -> (stream, event)
        self._operators: dict[str, str | None] = {}  # bet_id -> operator
        self._task: asyncio.Task[None] | None = None
        self._busy = True  # until it has resumed and caught up
        self.refused: UndeclaredField | None = None
        """A field nobody declared, under ``LIVETABLE_STRICT_VIEW=1``: the outbox stops at
        it (nothing after it is published), as every outward path refuses one."""

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def idle(self) -> bool:
        return self.queue.empty() and not self._busy and self._task is not None

    async def _run(self) -> None:
        delay = 0.2
        while True:
            try:
                await self._resume()
                await self._catch_up()
                delay = 0.2
                while True:
                    batch = await self.queue.get()
                    self._busy = True
                    try:
                        await self._publish_all(batch)
                    finally:
                        self._busy = self.queue.qsize() > 0
            except asyncio.CancelledError:
                raise
            except UndeclaredField as exc:  # strict mode only: never retried, never sent
                self.refused = exc
                log.error("nats.undeclared_field", table_id=self.table_id, error=str(exc))
                return
            except Exception:
                self._busy = True
                log.warning("nats.outbox_retry", table_id=self.table_id, exc_info=True)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _last_on(self, subject: str) -> tuple[int, int]:
        """(stream sequence, event sequence) of the last message on ``subject``, or 0s."""
        from nats.js.errors import NotFoundError

        try:
            message = await self.p._js.get_last_msg(self.p.stream, subject)
        except NotFoundError:
            return 0, 0
        headers = message.headers or {}
        return message.seq, int(headers.get("Livetable-Seq") or headers.get("Nats-Msg-Id", "0"))

    async def _resume(self) -> None:
        self._subject_seq.clear()
        _, self.last_table = await self._last_on(self.p.table_filter(self.table_id))
        operators = f"{self.p.root}.operators.*.{subject_token(self.table_id)}.>"
        _, self.last_operator = await self._last_on(operators)

    async def _catch_up(self) -> None:
        runtime = self.p.runtime

        def read(after: int) -> list[StoredEvent]:
            with runtime.sessions() as session:
                return EventStore.read(
                    session, after_seq=after, table_id=self.table_id, limit=BATCH
                )

        self._busy = True
        try:
            while True:
                batch = await asyncio.to_thread(read, min(self.last_table, self.last_operator))
                if not batch:
                    return
                await self._publish_all(batch)
                if len(batch) < BATCH:
                    return
        finally:
            self._busy = self.queue.qsize() > 0

    async def _publish_all(self, events: list[StoredEvent]) -> None:
        for event in events:
            if event.seq > self.last_operator or (
                event.seq == self.last_operator and event.type in OPERATOR_EVENTS
            ):
                await self._publish_operators(event)
            if event.seq > self.last_table:
                record = staff_record(event)  # the table subjects: the staff's view
                body = json.dumps(record, separators=(",", ":")).encode()
                await self._send(
                    self.p.subject(event), body, event.seq, str(event.seq), event.table_id
                )
                self.last_table = event.seq

    async def _publish_operators(self, event: StoredEvent) -> None:
        field = OPERATOR_EVENTS.get(event.type)
        if field is None:
            return
        items: list[dict[str, Any]] = event.payload.get(field) or []
        if event.type == "bets_placed":
            for bet in items:
                self._operators[bet["bet_id"]] = operator_of(bet.get("key", ""))
        unknown = [b["bet_id"] for b in items if b["bet_id"] not in self._operators]
        if unknown:
            self._operators.update(await asyncio.to_thread(self._lookup, unknown))
        per_operator: dict[str, list[dict[str, Any]]] = {}
        for item in items:
            operator = self._operators.get(item["bet_id"])
            if operator is None:
                continue
            if "key" in item:
                item = {**item, "key": item["key"].split("|", 1)[-1]}
            per_operator.setdefault(operator, []).append(item)
        for operator, bets in sorted(per_operator.items()):
            subject = self.p.operator_subject(operator, event)
            body = {
                "seq": event.seq,
                "table_id": event.table_id,
                "round_id": event.round_id,
                "type": event.type,
                "ts": event.ts,
                "operator": operator,
                "bets": bets,
                **owner_fields(event),  # what the owner of these bets sees besides them
            }
            data = json.dumps(body, separators=(",", ":")).encode()
            msg_id = f"{event.seq}.{subject_token(operator)}"
            await self._send(subject, data, event.seq, msg_id, event.table_id)
        if event.type == "bets_settled" or event.type == "bets_refunded":
            for item in items:
                self._operators.pop(item["bet_id"], None)
        self.last_operator = event.seq

    def _lookup(self, bet_ids: list[str]) -> dict[str, str | None]:
        from sqlalchemy import select

        from table_service.models import BetRow

        with self.p.runtime.sessions() as session:
            rows = session.execute(
                select(BetRow.bet_id, BetRow.idempotency_key).where(BetRow.bet_id.in_(bet_ids))
            )
            found = {bet_id: operator_of(key) for bet_id, key in rows}
        return {bet_id: found.get(bet_id) for bet_id in bet_ids}

    async def _send(self, subject: str, data: bytes, seq: int, msg_id: str, table_id: str) -> None:
        """Add the message unless the subject already holds this event or a later one.

        The subject's last message (stream sequence, event sequence) is what this writer
        believes; the server appends only if that belief is still true
        (``Nats-Expected-Last-Subject-Sequence``), so "the subject's last event is older
        than this one, then append" is one atomic step, whoever else is publishing.
        """
        from nats.js.errors import APIError

        for _ in range(5):
            known = self._subject_seq.get(subject)
            if known is None:
                known = await self._last_on(subject)
            stream_seq, last_event = known
            if last_event >= seq:
                self._subject_seq[subject] = known
                return  # already there (published before a restart, or by another writer)
            headers = {
                "Nats-Msg-Id": msg_id,
                "Livetable-Seq": str(seq),
                "Nats-Expected-Last-Subject-Sequence": str(stream_seq),
                "Livetable-Sent": f"{time.monotonic():.6f}",
            }
            committed = metrics.COMMITS.get(table_id, seq)
            if committed is not None:
                headers["Livetable-Commit"] = f"{committed:.6f}"
            try:
                ack = await self.p._js.publish(subject, data, headers=headers, timeout=5)
            except APIError as exc:
                if getattr(exc, "err_code", None) != WRONG_LAST_SEQUENCE:
                    raise
                # Someone else published on this subject since we looked: the table's new
                # writer (we lost the lease) or our own message acknowledged too late.
                self._subject_seq.pop(subject, None)
                log.warning("nats.subject_moved", subject=subject, seq=seq)
                continue
            if ack.duplicate:
                self._subject_seq.pop(subject, None)
            else:
                self._subject_seq[subject] = (ack.seq, seq)
            return
        raise RuntimeError(f"could not publish event {seq} to {subject}")
