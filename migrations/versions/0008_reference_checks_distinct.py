"""references checked once per distinct parent key (PostgreSQL)

Revision ID: 0008_reference_checks_distinct
Revises: 0007_payload_lz4
Create Date: 2026-12-05

The statement-level checks of 0006 (no bet or ledger entry naming an account or a round
that does not exist) probed the parent's index once per new row: a batch of 5,000 bets,
all of one round, made 5,000 probes of ``rounds`` for one key and 5,000 of ``accounts``
for each of its two statements. Now each distinct key of the statement's new rows is
looked up once; any row whose parent is missing still fails the statement, with the same
error. Nothing changes on SQLite (a per-row trigger there, as cheap as the key it replaced).
"""

from __future__ import annotations

from alembic import op

from migrations.references import create_reference_checks

revision = "0008_reference_checks_distinct"
down_revision = "0007_payload_lz4"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        create_reference_checks(distinct=True)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        create_reference_checks(distinct=False)
