"""A bet group's event rows go with its COMMIT (PostgreSQL), as a lone request's do: the
log's lock, which a scanned card waits for, is held a round trip less per group. The log
and the bets read the same on both backends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event

from audit.store import EventStore
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.service import Outcome, TableService, new_bet_id
from table_service.table.wallet import Transfer, transfer


async def test_a_groups_event_rows_go_with_its_commit(
    runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = TableService(runtime, TableConfig(table_id="grp-commit", betting_seconds=600))
    await service.start(with_reader=False)
    for command in (c.InsertShoe(), c.CardScanned("AS"), c.CardScanned("2S"), c.OpenBetting()):
        await service.execute(command, actor="supervisor:s")
    for account in ("a0", "a1"):
        transfer(runtime, Transfer(account, 1_000, f"seed-{account}", "credit"), actor="operator:a")
    sizes: list[int] = []
    group = service._bet_group_in_transaction

    def counted(items: list[Any], **kwargs: Any) -> Any:
        sizes.append(len(items))
        return group(items, **kwargs)

    monkeypatch.setattr(service, "_bet_group_in_transaction", counted)
    sent: list[str] = []  # statements sent on their own (not with a COMMIT)
    listener = lambda _c, _cur, statement, *_: sent.append(statement)  # noqa: E731
    event.listen(runtime.engine, "before_cursor_execute", listener)
    try:
        answers = await asyncio.gather(
            *(
                service.execute(
                    c.PlaceBets((c.BetRequest(new_bet_id(), f"k-{a}", a, "player", 100),)),
                    actor="operator:a",
                )
                for a in ("a0", "a1")
            )
        )
    finally:
        event.remove(runtime.engine, "before_cursor_execute", listener)
    await service.stop()
    assert sizes == [2]  # one group transaction took both
    assert all(isinstance(a, Outcome) for a in answers)
    inserted = [s for s in sent if s.lstrip().upper().startswith("INSERT INTO AUDIT_EVENTS")]
    if runtime.engine.dialect.name == "postgresql":
        assert inserted == []
    else:
        assert inserted  # SQLite writes as it goes
    with runtime.sessions() as session:
        placed = [e for e in EventStore.read(session, table_id="grp-commit") if "bets" in e.payload]
    assert sorted(b["account"] for e in placed for b in e.payload["bets"]) == ["a0", "a1"]
