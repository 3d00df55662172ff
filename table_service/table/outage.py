"""When the database is away: which errors mean it, and the typed refusal a table answers.

A table whose command meets an unreachable database (PostgreSQL restarting, a network
cut) or a full one (SQLite's volume, PostgreSQL's disk) pauses: it refuses commands with
503 and ``Retry-After`` until it has reloaded its state from the log, which it tries by
itself (:meth:`TableService._recover`). Reloading matters: a commit whose answer was lost
with the connection may or may not have landed, and only the log knows.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from table_service.errors import Refused

UNAVAILABLE = "database_unavailable"
FULL = "database_full"
RETRY_AFTER_SECONDS = 2
MIN_FREE_BYTES = 1 << 20
"""SQLite: a full volume counts as back once this much is free again (a few WAL frames
and the checkpoint's room), so the table does not resume only to fill it at once."""

_SQLITE_OUTAGE = ("disk", "full", "locked", "unable to open", "i/o", "readonly", "busy")


class DatabaseUnavailable(Refused):
    """The table's database is unreachable or full: nothing was written; retry later."""

    code = UNAVAILABLE
    status = 503

    def __init__(self, reason: str, *, cause: str, table_id: str) -> None:
        super().__init__(reason, cause=cause, table_id=table_id, retry_after=RETRY_AFTER_SECONDS)
        self.code = cause


def outage(exc: BaseException) -> str | None:
    """``database_full``, ``database_unavailable`` or None (not an outage: a defect or a
    refusal, which must not pause a table)."""
    from sqlalchemy.exc import DBAPIError, DisconnectionError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DisconnectionError | PoolTimeout):
            return UNAVAILABLE
        if isinstance(current, DBAPIError):
            found = _driver_outage(current.orig)
            if found is not None:
                return found
            if current.connection_invalidated:
                return UNAVAILABLE
        found = _driver_outage(current)
        if found is not None:
            return found
        current = current.__cause__ or current.__context__
    return None


def _driver_outage(error: Any) -> str | None:
    text = str(error).lower()
    if isinstance(error, sqlite3.OperationalError):
        if "full" in text:
            return FULL
        return UNAVAILABLE if any(word in text for word in _SQLITE_OUTAGE) else None
    try:
        import psycopg
    except ImportError:  # pragma: no cover - the postgres extra is not installed
        return None
    if isinstance(error, psycopg.errors.DiskFull) or "no space left" in text:
        return FULL
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return UNAVAILABLE
    return None


def room_again(database_url: str) -> bool:
    """A full SQLite volume has room again (other databases: assume so and retry)."""
    if not database_url.startswith("sqlite:///"):
        return True
    folder = Path(database_url.removeprefix("sqlite:///")).parent
    try:
        return shutil.disk_usage(folder).free >= MIN_FREE_BYTES
    except OSError:
        return False
