"""A studio's processes share one log: each one, while it takes part, hears the heads the
others commit (``EventStore.follow``, PostgreSQL), so its cards' one-trip commits find the
head they expect; leaving the studio stops listening."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from audit.store import EventStore, NewEvent
from table_service.studio.coordinator import Studio
from table_service.table.config import TableConfig


@pytest.mark.parametrize("db_url", ["sqlite", "postgresql"], indirect=True)
async def test_a_studio_process_hears_the_heads_the_others_commit(make_runtime: Any) -> None:
    here, other = make_runtime(), make_runtime()
    studio = Studio(here, [TableConfig(table_id="h-1")], node_id="a", takeover_seconds=600)
    await studio.start(with_readers=False)
    try:
        feed = here.store.feed
        if here.engine.dialect.name != "postgresql":
            assert feed is None  # one writer at a time: nothing to hear
            return
        assert feed is not None and feed.wait_listening()
        with other.sessions.begin() as session:  # another process appends
            other.store.append(session, [NewEvent("h-2", "other", "test", {})])
        with other.sessions() as session:
            head = EventStore.head(session)
        heard = threading.Event()
        for _ in range(2000):
            if here.store.known_head == head:
                break
            heard.wait(0.01)
        assert here.store.known_head == head
    finally:
        await studio.stop()
    assert here.store.feed is None
