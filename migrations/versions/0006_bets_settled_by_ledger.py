"""bets: the ledger's return entry is the settlement; ``bets`` becomes a view

Revision ID: 0006_bets_settled_by_ledger
Revises: 0005_balance_bounds_owner
Create Date: 2026-12-01

Settling a bet used to write two rows: the bet row updated (status, result, returned)
and a return entry in the ledger. Now the return entry alone is the settlement: it gains
the line's ``result``, bets move to ``placed_bets`` (written once when placed, never
updated, append-only like the ledger) and ``bets`` is a view deriving status, result,
return and closing sequence from the return entry, so every reader keeps reading
``bets``. Exactly once stays a database rule: ``(bet_id, kind)`` is unique in the ledger.

Less work per row on the hot path: the transfer-reference index of the ledger becomes
partial (bet entries have no reference), bets lose the unused index on account, and the
references of bets and ledger entries to accounts and rounds are checked by triggers
(once per statement on PostgreSQL) instead of row-by-row foreign keys: see
``migrations/references.py``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from migrations.append_only import create_append_only_triggers, drop_append_only_triggers
from migrations.references import create_reference_triggers, drop_reference_triggers

revision = "0006_bets_settled_by_ledger"
down_revision = "0005_balance_bounds_owner"
branch_labels = None
depends_on = None

# Frozen here (not imported from the models): a migration must keep meaning what it did.
BETS_VIEW = """
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

_LEDGER_COLUMNS = "id, account_id, amount, kind, bet_id, reference, seq"


def _ledger_table_sqlite(with_result: bool) -> str:
    """0006 (``with_result``): the result column, no declared key to accounts, the
    reference index apart (partial); before 0006: as 0002 made it."""
    result = "\n    result VARCHAR(16)," if with_result else ""
    old = not with_result
    reference = ",\n    CONSTRAINT uq_ledger_entries_reference UNIQUE (reference)" if old else ""
    account_key = (
        "    CONSTRAINT fk_ledger_entries_account_id_accounts FOREIGN KEY(account_id)"
        " REFERENCES accounts (account_id),\n"
        if old
        else ""
    )
    return (
        "CREATE TABLE ledger_entries (\n"
        "    id INTEGER NOT NULL,\n"
        "    account_id VARCHAR(64) NOT NULL,\n"
        "    amount BIGINT NOT NULL,\n"
        "    kind VARCHAR(16) NOT NULL,\n"
        "    bet_id VARCHAR(64),\n"
        "    reference VARCHAR(128),\n"
        f"    seq BIGINT NOT NULL,{result}\n"
        "    CONSTRAINT pk_ledger_entries PRIMARY KEY (id),\n"
        f"{account_key}"
        "    CONSTRAINT uq_ledger_entries_bet_kind UNIQUE (bet_id, kind)"
        f"{reference}\n"
        ")"
    )


def _partial_reference_index() -> None:
    op.create_index(
        "uq_ledger_entries_reference",
        "ledger_entries",
        ["reference"],
        unique=True,
        sqlite_where=sa.text("reference IS NOT NULL"),
        postgresql_where=sa.text("reference IS NOT NULL"),
    )


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    drop_append_only_triggers("ledger_entries")
    if sqlite:
        # SQLite drops a table-level UNIQUE only by rebuilding the table; the returns get
        # their result from the bet rows on the way back in.
        op.execute(f"CREATE TABLE _ledger_0006 AS SELECT {_LEDGER_COLUMNS} FROM ledger_entries")
        op.execute("DROP TABLE ledger_entries")
        op.execute(_ledger_table_sqlite(with_result=True))
        op.execute(
            f"INSERT INTO ledger_entries ({_LEDGER_COLUMNS}, result)"
            " SELECT l.id, l.account_id, l.amount, l.kind, l.bet_id, l.reference, l.seq,"
            " b.result FROM _ledger_0006 AS l"
            " LEFT JOIN bets AS b ON l.kind = 'return' AND b.bet_id = l.bet_id"
        )
        op.execute("DROP TABLE _ledger_0006")
        op.create_index("ix_ledger_entries_account", "ledger_entries", ["account_id", "id"])
    else:
        op.add_column("ledger_entries", sa.Column("result", sa.String(length=16), nullable=True))
        op.execute(
            "UPDATE ledger_entries AS l SET result = b.result FROM bets AS b"
            " WHERE l.kind = 'return' AND b.bet_id = l.bet_id"
        )
        op.drop_constraint("uq_ledger_entries_reference", "ledger_entries", type_="unique")
        op.drop_constraint(
            "fk_ledger_entries_account_id_accounts", "ledger_entries", type_="foreignkey"
        )
    _partial_reference_index()
    create_append_only_triggers("ledger_entries")

    op.create_table(
        "placed_bets",
        sa.Column("bet_id", sa.String(length=64), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("round_id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("bet_type", sa.String(length=32), nullable=False),
        sa.Column("stake", sa.BigInteger(), nullable=False),
        sa.Column("placed_seq", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("stake > 0", name=op.f("ck_placed_bets_stake_positive")),
        sa.PrimaryKeyConstraint("bet_id", name=op.f("pk_placed_bets")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_placed_bets_idempotency_key")),
    )
    op.create_index("ix_placed_bets_round", "placed_bets", ["round_id"])
    columns = "bet_id, idempotency_key, table_id, round_id, account_id, bet_type, stake, placed_seq"
    op.execute(f"INSERT INTO placed_bets ({columns}) SELECT {columns} FROM bets")
    op.drop_table("bets")
    op.execute(BETS_VIEW)
    create_append_only_triggers("placed_bets")
    create_reference_triggers()


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    drop_reference_triggers()
    drop_append_only_triggers("placed_bets")
    op.execute("CREATE TABLE _bets_0006 AS SELECT * FROM bets")
    op.execute("DROP VIEW bets")
    op.create_table(
        "bets",
        sa.Column("bet_id", sa.String(length=64), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("round_id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("bet_type", sa.String(length=32), nullable=False),
        sa.Column("stake", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("result", sa.String(length=16), nullable=True),
        sa.Column("returned", sa.BigInteger(), nullable=True),
        sa.Column("placed_seq", sa.BigInteger(), nullable=False),
        sa.Column("closed_seq", sa.BigInteger(), nullable=True),
        sa.CheckConstraint("stake > 0", name=op.f("ck_bets_stake_positive")),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.account_id"], name=op.f("fk_bets_account_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.round_id"], name=op.f("fk_bets_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("bet_id", name=op.f("pk_bets")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_bets_idempotency_key")),
    )
    op.create_index("ix_bets_round", "bets", ["round_id"])
    op.create_index("ix_bets_account", "bets", ["account_id"])
    op.execute("INSERT INTO bets SELECT * FROM _bets_0006")
    op.execute("DROP TABLE _bets_0006")
    op.drop_table("placed_bets")

    drop_append_only_triggers("ledger_entries")
    op.drop_index("uq_ledger_entries_reference", "ledger_entries")
    if sqlite:
        op.execute(f"CREATE TABLE _ledger_0006 AS SELECT {_LEDGER_COLUMNS} FROM ledger_entries")
        op.execute("DROP TABLE ledger_entries")
        op.execute(_ledger_table_sqlite(with_result=False))
        op.execute(
            f"INSERT INTO ledger_entries ({_LEDGER_COLUMNS}) SELECT {_LEDGER_COLUMNS}"
            " FROM _ledger_0006"
        )
        op.execute("DROP TABLE _ledger_0006")
        op.create_index("ix_ledger_entries_account", "ledger_entries", ["account_id", "id"])
    else:
        op.drop_column("ledger_entries", "result")
        op.create_unique_constraint("uq_ledger_entries_reference", "ledger_entries", ["reference"])
        op.create_foreign_key(
            "fk_ledger_entries_account_id_accounts",
            "ledger_entries",
            "accounts",
            ["account_id"],
            ["account_id"],
        )
    create_append_only_triggers("ledger_entries")
