"""Read models and reference data of the table service.

Every row here is derived from audit events and written in the same transaction as the
events that justify it; the log stays the source of truth.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

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
    (settlement or refund), so paying a bet twice is impossible at the database level;
    and at most one ``commission`` line, credited to the table's house account
    (:func:`house_account`) with the settlement that kept it.
    The return entry *is* the bet's settlement: ``result`` is the rules' result of the
    line (``refunded`` for a refund), and the ``bets`` view derives a bet's status, result
    and return from it, so settling a bet writes one row and updates none.

    ``reference`` (an operator's transfer reference) is unique where present; bet entries
    carry none and so stay out of that index.
    """

    __tablename__ = "ledger_entries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    account_id: Mapped[str] = mapped_column(String(64))  # → accounts (a trigger checks it)
    amount: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))  # credit | debit | stake | return | commission
    bet_id: Mapped[str | None] = mapped_column(String(64))
    reference: Mapped[str | None] = mapped_column(String(128))
    seq: Mapped[int] = mapped_column(BigInteger)
    result: Mapped[str | None] = mapped_column(String(16))  # a return's result

    __table_args__ = (
        UniqueConstraint("bet_id", "kind", name="uq_ledger_entries_bet_kind"),
        Index(
            "uq_ledger_entries_reference",
            "reference",
            unique=True,
            sqlite_where=text("reference IS NOT NULL"),
            postgresql_where=text("reference IS NOT NULL"),
        ),
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


class PlacedBet(Base):
    """A bet as placed: written once when the stake is taken, never updated (append-only).

    Its settlement or refund is the bet's ``return`` entry in the ledger; read a bet with
    its status through :class:`BetRow` (the ``bets`` view). Its account and round must
    exist: triggers check that per statement (``migrations/references.py``), where
    declared foreign keys cost a query per row."""

    __tablename__ = "placed_bets"

    bet_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    idempotency_key: Mapped[str] = mapped_column(String(200), unique=True)
    table_id: Mapped[str] = mapped_column(String(64))
    round_id: Mapped[str] = mapped_column(String(64))  # → rounds (a trigger checks it)
    account_id: Mapped[str] = mapped_column(String(64))  # → accounts (a trigger checks it)
    bet_type: Mapped[str] = mapped_column(String(32))
    stake: Mapped[int] = mapped_column(BigInteger)
    placed_seq: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        CheckConstraint("stake > 0", name="stake_positive"),
        Index("ix_placed_bets_round", "round_id"),
    )


# The one place a bet's status is derived: no return entry yet → open; a return entry
# with result 'refunded' → refunded; any other return entry → settled.
BETS_VIEW_SQL = """
CREATE VIEW bets AS
SELECT p.bet_id, p.idempotency_key, p.table_id, p.round_id, p.account_id, p.bet_type,
       p.stake,
       CASE WHEN r.id IS NULL THEN 'open'
            WHEN r.result = 'refunded' THEN 'refunded'
            ELSE 'settled' END AS status,
       r.result AS result, r.amount AS returned, p.placed_seq, r.seq AS closed_seq
FROM placed_bets AS p
LEFT JOIN ledger_entries AS r ON r.bet_id = p.bet_id AND r.kind = 'return'
"""


class ViewBase(DeclarativeBase):
    """Read-only mappings of views: their own metadata, so that neither ``create_all``
    nor Alembic's comparison takes a view for a table."""

    metadata = MetaData()


class BetRow(ViewBase):
    """A bet with its status, result and return (the ``bets`` view; read-only)."""

    __tablename__ = "bets"

    bet_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    idempotency_key: Mapped[str] = mapped_column(String(200))
    table_id: Mapped[str] = mapped_column(String(64))
    round_id: Mapped[str] = mapped_column(String(64))
    account_id: Mapped[str] = mapped_column(String(64))
    bet_type: Mapped[str] = mapped_column(String(32))
    stake: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))  # open | settled | refunded
    result: Mapped[str | None] = mapped_column(String(16))
    returned: Mapped[int | None] = mapped_column(BigInteger)
    placed_seq: Mapped[int] = mapped_column(BigInteger)
    closed_seq: Mapped[int | None] = mapped_column(BigInteger)


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
