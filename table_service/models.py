"""Read models and reference data of the table service.

Every row here is derived from audit events and written in the same transaction as the
events that justify it; the log stays the source of truth.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
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


# The highest balance the database accepts: far below 2^63 (no backend ever turns a balance
# into a float or overflows), and 100× the largest configurable balance, so that winnings
# on a full account settle instead of failing the settlement.
BALANCE_CEILING = 10**17


HOUSE_PREFIX = "_house:"


def house_account(table_id: str) -> str:
    """The house's own account at a table: the commission a game keeps on each win is
    credited here, as its own ledger line per bet (kind ``commission``, at most one a bet
    by the ``(bet_id, kind)`` constraint), in the settlement's transaction. Its id starts
    with ``_``, which no API account id may (``IDENT_PATTERN``): no operator can fund,
    stake or read it as a player account."""
    return f"{HOUSE_PREFIX}{table_id}"


class Account(Base):
    """A player's account as the table sees it. The CHECKs are the last line of defence:
    no code path may take a balance below zero or past the ceiling. ``owner`` is the
    operator (its actor string) that funded the account first; it never changes."""

    __tablename__ = "accounts"

    account_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    balance: Mapped[int] = mapped_column(BigInteger)
    updated_seq: Mapped[int] = mapped_column(BigInteger)
    owner: Mapped[str | None] = mapped_column(String(160))

    __table_args__ = (
        CheckConstraint("balance >= 0", name="balance_not_negative"),
        CheckConstraint(f"balance <= {BALANCE_CEILING}", name="balance_ceiling"),
    )


class LedgerEntry(Base):
    """Every movement of money, tied to the event that caused it.

    ``(bet_id, kind)`` is unique: a bet has at most one stake debit and one return credit
    (settlement or refund), so paying a bet twice is impossible at the database level.
    """

    __tablename__ = "ledger_entries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.account_id"))
    amount: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))  # credit | debit | stake | return
    bet_id: Mapped[str | None] = mapped_column(String(64))
    reference: Mapped[str | None] = mapped_column(String(128))
    seq: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        UniqueConstraint("bet_id", "kind", name="uq_ledger_entries_bet_kind"),
        UniqueConstraint("reference", name="uq_ledger_entries_reference"),
        Index("ix_ledger_entries_account", "account_id", "id"),
    )


class RoundRow(Base):
    __tablename__ = "rounds"

    round_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    table_id: Mapped[str] = mapped_column(String(64))
    shoe_no: Mapped[int] = mapped_column(Integer)
    game_number: Mapped[int] = mapped_column(Integer)
    phase: Mapped[str] = mapped_column(String(16))
    closes_at: Mapped[str] = mapped_column(String(32))
    cards: Mapped[str] = mapped_column(Text, default="[]")
    outcome: Mapped[str | None] = mapped_column(Text)
    void_reason: Mapped[str | None] = mapped_column(Text)
    opened_seq: Mapped[int] = mapped_column(BigInteger)
    closed_seq: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (Index("ix_rounds_table", "table_id", "opened_seq"),)


class BetRow(Base):
    __tablename__ = "bets"

    bet_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    idempotency_key: Mapped[str] = mapped_column(String(200), unique=True)
    table_id: Mapped[str] = mapped_column(String(64))
    round_id: Mapped[str] = mapped_column(ForeignKey("rounds.round_id"))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.account_id"))
    bet_type: Mapped[str] = mapped_column(String(32))
    stake: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))  # open | settled | refunded
    result: Mapped[str | None] = mapped_column(String(16))
    returned: Mapped[int | None] = mapped_column(BigInteger)
    placed_seq: Mapped[int] = mapped_column(BigInteger)
    closed_seq: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (
        CheckConstraint("stake > 0", name="stake_positive"),
        Index("ix_bets_round", "round_id"),
        Index("ix_bets_account", "account_id"),
    )


class IncidentRow(Base):
    __tablename__ = "incidents"

    incident_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    table_id: Mapped[str] = mapped_column(String(64))
    round_id: Mapped[str | None] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(32))
    blocking: Mapped[bool] = mapped_column(Boolean)
    status: Mapped[str] = mapped_column(String(16))  # open | resolved
    details: Mapped[str] = mapped_column(Text)
    raised_by: Mapped[str] = mapped_column(String(128))
    raised_seq: Mapped[int] = mapped_column(BigInteger)
    resolution: Mapped[str | None] = mapped_column(Text)
    resolved_by: Mapped[str | None] = mapped_column(String(128))
    resolved_seq: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (Index("ix_incidents_table", "table_id", "status"),)
