"""accounts: a balance ceiling CHECK (both backends) and the owning operator

Revision ID: 0005_balance_bounds_owner
Revises: 0004_studio_leases
Create Date: 2026-12-01

A balance could grow past 2^63−1 (a float on SQLite, an error on PostgreSQL); now the
database refuses any balance above the ceiling. ``owner`` is the operator that funded an
account first, filled for existing accounts from the first credit's reference
("operator:name|reference").
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_balance_bounds_owner"
down_revision = "0004_studio_leases"
branch_labels = None
depends_on = None

CEILING = 10**17


def _rebuild_sqlite(with_new: bool) -> None:
    """SQLite adds a CHECK only by rebuilding the table. Other tables reference this one
    and the migration runs in one transaction (foreign keys cannot be switched off), so:
    keep the rows aside, drop and re-create the table, put the rows back — with foreign
    keys checked at commit, when every referenced account stands again."""
    op.execute("PRAGMA defer_foreign_keys = ON")
    keep = "account_id, balance, updated_seq"
    op.execute(f"CREATE TABLE _accounts_0003 AS SELECT {keep} FROM accounts")
    op.execute("DROP TABLE accounts")
    extra_column = "\n    owner VARCHAR(160)," if with_new else ""
    extra_check = (
        f",\n    CONSTRAINT ck_accounts_balance_ceiling CHECK (balance <= {CEILING})"
        if with_new
        else ""
    )
    op.execute(
        "CREATE TABLE accounts (\n"
        "    account_id VARCHAR(64) NOT NULL,\n"
        "    balance BIGINT NOT NULL,\n"
        f"    updated_seq BIGINT NOT NULL,{extra_column}\n"
        "    CONSTRAINT pk_accounts PRIMARY KEY (account_id),\n"
        f"    CONSTRAINT ck_accounts_balance_not_negative CHECK (balance >= 0){extra_check}\n"
        ")"
    )
    op.execute(f"INSERT INTO accounts ({keep}) SELECT {keep} FROM _accounts_0003")
    op.execute("DROP TABLE _accounts_0003")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        _rebuild_sqlite(with_new=True)
    else:
        op.add_column("accounts", sa.Column("owner", sa.String(length=160), nullable=True))
        op.create_check_constraint(
            op.f("ck_accounts_balance_ceiling"), "accounts", f"balance <= {CEILING}"
        )
    rows = bind.execute(
        sa.text(
            "SELECT account_id, reference FROM ledger_entries"
            " WHERE kind = 'credit' AND reference IS NOT NULL ORDER BY id"
        )
    ).all()
    owners: dict[str, str] = {}
    for account_id, reference in rows:
        owners.setdefault(account_id, reference.split("|", 1)[0])
    for account_id, owner in owners.items():
        bind.execute(
            sa.text("UPDATE accounts SET owner = :o WHERE account_id = :a"),
            {"o": owner, "a": account_id},
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite(with_new=False)
        return
    op.drop_constraint(op.f("ck_accounts_balance_ceiling"), "accounts", type_="check")
    op.drop_column("accounts", "owner")
