"""A card the table refuses is never only logged: it becomes an incident for a person."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

from shoe_reader.events import HardwareWarning
from table_service.runtime import Runtime
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.reader_pump import reader_command
from table_service.table.service import TableService


async def test_a_card_code_the_table_cannot_take_raises_an_incident(
    make_runtime: Callable[..., Runtime],
) -> None:
    service = TableService(make_runtime(), TableConfig(table_id="t"))
    await service.start(with_reader=False)
    try:
        event = SimpleNamespace(event="card", card="ZZ", seq=7)
        outcome = await service.on_reader_event(event, actor="reader:test")
        assert outcome is not None and [e.type for e in outcome.events] == ["incident_raised"]
        (incident,) = service.state.incidents.values()
        assert incident.kind == "unreadable_card" and incident.blocking
        assert incident.details["card"] == "ZZ" and "refused" in incident.details["reason"]
    finally:
        await service.stop()


def test_a_duplicate_warning_names_its_card_without_wire_bytes() -> None:
    warning = HardwareWarning(
        reader_id="r", code="possible_duplicate_after_reconnect", card="KD", raw=b"garbage"
    )
    command = reader_command(warning)
    assert isinstance(command, c.ReaderFault) and command.details["card"] == "KD"
