"""The JetStream adapter against the local NATS server: order, de-duplication, catch-up."""

from __future__ import annotations

import json
import uuid

import nats
import pytest

from audit.store import NewEvent
from table_service.table.nats_stream import JetStreamPublisher


async def _connect(url: str):  # type: ignore[no-untyped-def]
    return await nats.connect(url, connect_timeout=2, max_reconnect_attempts=0)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_published_in_order_once_with_catch_up(
    make_runtime, db_url: str, nats_url: str
) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    probe = await _connect(nats_url)
    tag = uuid.uuid4().hex[:8]
    stream, prefix = f"LTTEST{tag}", f"lt{tag}.tables"

    def append(n: int, table: str = "bac-1") -> None:
        with runtime.sessions.begin() as session:
            runtime.store.append(
                session, [NewEvent(table, "card_dealt", "t", {"i": i}) for i in range(n)]
            )

    append(3)  # committed before the publisher ever ran: caught up on start
    publisher = JetStreamPublisher(runtime, stream=stream, prefix=prefix)
    await publisher.start()
    append(2)
    append(1, table="bac.2")
    js = probe.jetstream()
    try:
        for _ in range(100):
            if (await js.stream_info(stream)).state.messages >= 6:
                break
            import asyncio

            await asyncio.sleep(0.05)
        await publisher.stop()
        append(2)  # committed while the publisher is down
        again = JetStreamPublisher(runtime, stream=stream, prefix=prefix)
        await again.start()
        await again.stop()
        info = await js.stream_info(stream)
        assert info.state.messages == 8
        seqs, subjects = [], []
        for n in range(1, 9):
            message = await js.get_msg(stream, seq=n)
            seqs.append(json.loads(message.data)["seq"])
            subjects.append(message.subject)
        assert seqs == list(range(1, 9))
        assert subjects[5] == f"{prefix}.bac_2.card_dealt"
    finally:
        await js.delete_stream(stream)
        await probe.close()
