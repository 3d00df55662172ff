"""Read models and reference data of the table service.

Every row here is derived from audit events and written in the same transaction as the
events that justify it; the log stays the source of truth.
"""

from __future__ import annotations

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from audit.db import Base


class Principal(Base):
    """A person or machine that may call the API. Only a hash of its token is kept."""

    __tablename__ = "principals"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    table_id: Mapped[str | None] = mapped_column(String(64))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[str] = mapped_column(String(32))
    revoked_at: Mapped[str | None] = mapped_column(String(32))
