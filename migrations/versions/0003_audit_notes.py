"""audit: signed-note text of each checkpoint, witnesses' cosignatures

Revision ID: 0003_audit_notes
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from migrations.append_only import create_append_only_triggers, drop_append_only_triggers

revision = "0003_audit_notes"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN (not a batch copy) keeps the append-only triggers in place.
    op.add_column("audit_checkpoints", sa.Column("note", sa.Text(), nullable=True))
    op.create_table(
        "audit_cosignatures",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("cosigner", sa.String(length=255), nullable=False),
        sa.Column("key_id", sa.String(length=8), nullable=False),
        sa.Column("timestamp", sa.BigInteger(), nullable=False),
        sa.Column("line", sa.Text(), nullable=False),
        sa.Column("received_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_cosignatures")),
        sa.UniqueConstraint(
            "size", "cosigner", "key_id", name="uq_audit_cosignatures_size_cosigner"
        ),
    )
    create_append_only_triggers("audit_cosignatures")


def downgrade() -> None:
    drop_append_only_triggers("audit_cosignatures")
    op.drop_table("audit_cosignatures")
    drop_append_only_triggers("audit_checkpoints")
    with op.batch_alter_table("audit_checkpoints") as batch_op:
        batch_op.drop_column("note")
    create_append_only_triggers("audit_checkpoints")
