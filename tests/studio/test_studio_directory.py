"""Where a studio's tables run, as a process answers it (``GET /studio/tables``, the 421
and the stream's 4421): read from the database at most once a tick however many clients
ask (a dead process's subscribers all ask at once), and at once again when this process
takes or drops a table."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from table_service.studio import coordinator
from table_service.studio.coordinator import Studio
from table_service.studio.errors import TableUnavailable
from table_service.table.config import TableConfig


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_the_leases_are_read_once_a_tick_and_again_when_one_changes_hands_here(
    make_runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = SimpleNamespace(now=1000.0)
    clocked = SimpleNamespace(monotonic=lambda: clock.now)
    monkeypatch.setattr(coordinator, "time", clocked, raising=False)
    configs = [TableConfig(table_id="d-1"), TableConfig(table_id="d-2")]
    studio = Studio(make_runtime(), configs, node_id="a", url="http://a", takeover_seconds=600)
    reads: list[Any] = []
    read = studio.leases.directory

    def counted(ids: Any = None) -> Any:
        reads.append(ids)
        return read(ids)

    monkeypatch.setattr(studio.leases, "directory", counted)
    await studio.start(with_readers=False)  # takes both (the only member)
    try:
        before = len(reads)
        answers = [studio.directory() for _ in range(100)]
        assert len(reads) - before == 1  # one read for a hundred answers
        assert [(t["owner"], t["owner_url"], t["here"]) for t in answers[-1]] == [
            ("a", "http://a", True)
        ] * 2
        clock.now += studio.tick_seconds  # a tick later: read again
        studio.directory()
        assert len(reads) - before == 2
    finally:
        await studio.stop()  # every table handed back: seen at once, within the tick
    assert [(t["owner"], t["here"]) for t in studio.directory()] == [(None, False)] * 2
    with pytest.raises(TableUnavailable):
        studio.get("d-1")


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
async def test_the_tick_takes_no_connection_from_the_commands_pool(make_runtime: Any) -> None:
    """The studio's heartbeat, renewal and lease reads run on connections of their own:
    a command overlapping a tick never gets a connection left idle since the last one
    (pinged before use: a round trip more in front of its commit)."""
    from sqlalchemy import event

    runtime = make_runtime()
    studio = Studio(runtime, [TableConfig(table_id="p-1")], node_id="a", takeover_seconds=600)
    taken: list[object] = []

    def checkout(*_: Any) -> None:
        taken.append(1)

    await studio.start(with_readers=False)
    try:
        event.listen(runtime.engine, "checkout", checkout)
        try:
            for _ in range(3):
                await studio.tick()  # heartbeat, renewal, the share kept
            studio.directory()
        finally:
            event.remove(runtime.engine, "checkout", checkout)
        assert taken == []
        assert studio.leases.held() == {"p-1": 1}
    finally:
        await studio.stop()
