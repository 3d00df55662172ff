"""The append-only event table and its signed checkpoints."""

from __future__ import annotations

from sqlalchemy import BigInteger, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from audit.db import Base


class AuditEvent(Base):
    __tablename__ = "audit_events"

    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    table_id: Mapped[str] = mapped_column(String(64))
    round_id: Mapped[str | None] = mapped_column(String(64))
    type: Mapped[str] = mapped_column(String(64))
    actor: Mapped[str] = mapped_column(String(128))
    ts: Mapped[str] = mapped_column(String(32))
    payload: Mapped[str] = mapped_column(Text)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64), unique=True)

    __table_args__ = (
        Index("ix_audit_events_table_seq", "table_id", "seq"),
        Index("ix_audit_events_round", "round_id"),
    )


class AuditCheckpoint(Base):
    __tablename__ = "audit_checkpoints"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    size: Mapped[int] = mapped_column(BigInteger, unique=True)
    origin: Mapped[str] = mapped_column(String(128))
    root_hash: Mapped[str] = mapped_column(String(64))
    key_id: Mapped[str] = mapped_column(String(16))
    signature: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[str] = mapped_column(String(32))
    frontier: Mapped[str] = mapped_column(Text)
    # The checkpoint as a C2SP signed note (NULL for checkpoints signed before notes).
    note: Mapped[str | None] = mapped_column(Text, nullable=True)


class AuditCosignature(Base):
    """A witness's cosignature of a checkpoint (c2sp.org/tlog-cosignature), as received."""

    __tablename__ = "audit_cosignatures"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    size: Mapped[int] = mapped_column(BigInteger)
    cosigner: Mapped[str] = mapped_column(String(255))
    key_id: Mapped[str] = mapped_column(String(8))
    timestamp: Mapped[int] = mapped_column(BigInteger)
    line: Mapped[str] = mapped_column(Text)
    received_at: Mapped[str] = mapped_column(String(32))

    __table_args__ = (
        UniqueConstraint("size", "cosigner", "key_id", name="uq_audit_cosignatures_size_cosigner"),
    )
