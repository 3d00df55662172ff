"""The JetStream outbox against the local NATS server: order, de-duplication, catch-up,
and a second writer for one table refused by the subject's expected last sequence."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable

import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from audit.store import NewEvent
from table_service import metrics
from table_service.runtime import Runtime
from table_service.table.nats_stream import JetStreamPublisher, ensure_stream, subject_token


async def _connect(url: str) -> NatsClient:
    return await nats.connect(url, connect_timeout=2, max_reconnect_attempts=0)


async def _table_messages(js: JetStreamContext, stream: str) -> list[tuple[str, int]]:
    info = await js.stream_info(stream)
    found: list[tuple[str, int]] = []
    for n in range(info.state.first_seq, info.state.last_seq + 1):
        message = await js.get_msg(stream, seq=n)
        assert message.subject is not None and message.data is not None  # a stored message
        if ".tables." in message.subject:
            found.append((message.subject, json.loads(message.data)["seq"]))
    return found


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_published_in_order_once_with_catch_up(
    make_runtime: Callable[..., Runtime], db_url: str, nats_url: str
) -> None:
    runtime = make_runtime()
    probe = await _connect(nats_url)
    tag = uuid.uuid4().hex[:8]
    stream, root = f"LTTEST{tag}", f"lt{tag}"

    def append(n: int, table: str = "bac-1") -> None:
        with runtime.sessions.begin() as session:
            runtime.store.append(
                session, [NewEvent(table, "card_dealt", "t", {"index": i}) for i in range(n)]
            )

    append(3)  # committed before the publisher ever ran: caught up on start
    metrics.watch_runtime(runtime)  # commits timed from here (as serve does at start)
    publisher = JetStreamPublisher(runtime, nats_url, stream=stream, root=root)
    await publisher.start()
    append(2)
    append(1, table="bac.2")  # a table first seen live gets its own outbox
    js = probe.jetstream()
    try:
        await publisher.wait_idle()
        await publisher.stop()
        append(2)  # committed while the publisher is down
        again = JetStreamPublisher(runtime, nats_url, stream=stream, root=root)
        await again.start()
        await again.wait_idle()
        await again.stop()
        found = await _table_messages(js, stream)
        assert sorted(seq for _, seq in found) == list(range(1, 9))
        assert len(found) == 8
        bac1 = [seq for subject, seq in found if subject == f"{root}.tables.bac-1.card_dealt"]
        assert bac1 == [1, 2, 3, 4, 5, 7, 8]  # one table's subject: log order
        assert (f"{root}.tables.bac~2e2.card_dealt", 6) in found
        assert subject_token("bac.2") == "bac~2e2"
        # the service's timing: every message its send time; those whose commit this
        # process timed (the metrics' commit clock), that too, before the send
        info = await js.stream_info(stream)
        for n in range(info.state.first_seq, info.state.last_seq + 1):
            headers = (await js.get_msg(stream, seq=n)).headers or {}
            sent = float(headers["Livetable-Sent"])
            assert 0 < sent <= time.monotonic()
            if int(headers["Livetable-Seq"]) in (4, 5, 6):  # committed after the clock ran
                assert float(headers["Livetable-Commit"]) <= sent
    finally:
        metrics.unwatch_runtime(runtime)
        await js.delete_stream(stream)
        await probe.close()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_second_writer_for_a_table_adds_nothing(
    make_runtime: Callable[..., Runtime], db_url: str, nats_url: str
) -> None:
    """Two publishers for one table (one lost its lease but still runs): each event is on
    the subject once, even past JetStream's duplicate window, because every publish
    names the subject's last sequence it expects."""
    from nats.js.api import StreamConfig

    runtime = make_runtime()
    probe = await _connect(nats_url)
    tag = uuid.uuid4().hex[:8]
    stream, root = f"LTDUP{tag}", f"ltd{tag}"
    js = probe.jetstream()
    # The shortest duplicate window JetStream allows: past it, only the expected-sequence
    # check stands between a stale writer and a duplicate.
    await js.add_stream(
        StreamConfig(
            name=stream, subjects=[f"{root}.tables.>", f"{root}.operators.>"], duplicate_window=0.1
        )
    )
    await ensure_stream(js, stream, root)
    first = JetStreamPublisher(runtime, nats_url, stream=stream, root=root, tables=["t1"])
    second = JetStreamPublisher(runtime, nats_url, stream=stream, root=root, tables=["t1"])
    try:
        await first.start()
        await second.start()
        for n in range(30):
            with runtime.sessions.begin() as session:
                runtime.store.append(session, [NewEvent("t1", "card_dealt", "t", {"index": n})])
            if n % 7 == 0:
                await asyncio.sleep(0.02)
        await first.wait_idle()
        await second.wait_idle()
        found = await _table_messages(js, stream)
        assert [seq for _, seq in found] == list(range(1, 31))
        # A writer that fell behind (it believes the subject is where it was at seq 1) and
        # publishes the whole log again, long after the duplicate window: nothing is added.
        await asyncio.sleep(0.3)
        stale = second._outboxes["t1"]
        subject = f"{root}.tables.t1.card_dealt"
        stale.last_table = stale.last_operator = 0
        stale._subject_seq[subject] = (1, 1)
        from audit.store import EventStore

        with runtime.sessions() as session:
            await stale._publish_all(EventStore.read(session, table_id="t1"))
        assert [seq for _, seq in await _table_messages(js, stream)] == list(range(1, 31))
    finally:
        await first.stop()
        await second.stop()
        await js.delete_stream(stream)
        await probe.close()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_field_nobody_declared_never_reaches_a_subject(
    make_runtime: Callable[..., Runtime],
    db_url: str,
    nats_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 30: strict mode refuses an undeclared field on the NATS table subjects as on
    every other outward path (the outbox stops at it, and says so); in production the
    field is left out and the event published."""
    from table_service.table.view import UndeclaredField

    probe = await _connect(nats_url)
    js = probe.jetstream()
    runtime = make_runtime()
    with runtime.sessions.begin() as session:
        runtime.store.append(
            session,
            [
                NewEvent("t1", "card_dealt", "t", {"index": 0, "card": "AS"}),
                NewEvent("t1", "card_dealt", "t", {"index": 1, "secret": "hole card"}),
            ],
        )
    for strict in ("1", "0"):
        monkeypatch.setenv("LIVETABLE_STRICT_VIEW", strict)
        tag = uuid.uuid4().hex[:8]
        stream, root = f"LTUND{tag}", f"ltu{tag}"
        publisher = JetStreamPublisher(runtime, nats_url, stream=stream, root=root)
        await publisher.start()
        try:
            if strict == "1":
                with pytest.raises(UndeclaredField, match="secret"):
                    await publisher.wait_idle(timeout=60)
                assert [seq for _, seq in await _table_messages(js, stream)] == [1]
            else:
                await publisher.wait_idle(timeout=60)
                bodies = []
                info = await js.stream_info(stream)
                for n in range(info.state.first_seq, info.state.last_seq + 1):
                    message = await js.get_msg(stream, seq=n)
                    assert message.data is not None  # a stored message
                    bodies.append(json.loads(message.data))
                assert [b["seq"] for b in bodies] == [1, 2]
                assert bodies[1]["payload"] == {"index": 1}  # the undeclared field left out
                assert "hole card" not in json.dumps(bodies)
        finally:
            await publisher.stop()
            await js.delete_stream(stream)
    await probe.close()
