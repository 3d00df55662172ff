"""What the tables' routes share: the table a path names, the path and query types, and
the error answers each kind of route documents."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query, Request

from table_service.api.problems import AUTH, BODY, errors
from table_service.api.types import IDENT_PATTERN, SEQ_MAX
from table_service.studio.api import studio_responses
from table_service.table.service import Tables, TableService

TableId = Annotated[
    str, Path(min_length=1, max_length=64, pattern=IDENT_PATTERN, examples=["bac-1"])
]
PathId = Annotated[
    str, Path(min_length=1, max_length=64, pattern=IDENT_PATTERN, examples=["alice"])
]
Seq = Annotated[int, Query(ge=0, le=SEQ_MAX)]
SeatNo = Annotated[int, Path(ge=1, le=64)]


def tables_of(request: Request) -> Tables:
    """The tables this process serves (a studio's: those whose lease it holds)."""
    tables: Tables = request.app.state.tables
    return tables


def table_of(table_id: str, request: Request) -> TableService:
    """The table a path names (404, or the studio's 421/503 when another process runs it)."""
    return tables_of(request).get(table_id)


def command_errors() -> dict[int | str, dict[str, Any]]:
    """What a table command may answer besides its own answer."""
    return {**errors(*AUTH, 404, 409, *BODY), **studio_responses()}


def one_table_read() -> dict[int | str, dict[str, Any]]:
    """What a read of one table may answer besides the read."""
    return {**errors(*AUTH, 404, 422), **studio_responses()}
