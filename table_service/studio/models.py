"""The studio's coordination rows: who runs which table, and who is alive.

These are not read models of the log: they say which process may write a table's events
now. Times are milliseconds of the database's clock, so processes on machines with
different clocks agree on when a lease runs out.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from audit.db import Base


class StudioLease(Base):
    """One table's lease. ``token`` grows by one at every acquisition: a fencing token, so
    a process holding an older token cannot commit for the table any more."""

    __tablename__ = "studio_leases"

    table_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(128))
    owner_url: Mapped[str | None] = mapped_column(String(256))
    token: Mapped[int] = mapped_column(BigInteger)
    expires_ms: Mapped[int] = mapped_column(BigInteger)
    acquired_ms: Mapped[int] = mapped_column(BigInteger)


class StudioMember(Base):
    """A running ``serve`` process, by node id; its heartbeat says it is alive."""

    __tablename__ = "studio_members"

    node_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    url: Mapped[str | None] = mapped_column(String(256))
    heartbeat_ms: Mapped[int] = mapped_column(BigInteger)
    started_ms: Mapped[int] = mapped_column(BigInteger)
