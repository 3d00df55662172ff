"""studio leases and members: one writer per table across processes

Revision ID: 0004_studio_leases
Revises: 0003_audit_notes
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_studio_leases"
down_revision = "0003_audit_notes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "studio_leases",
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=True),
        sa.Column("owner_url", sa.String(length=256), nullable=True),
        sa.Column("token", sa.BigInteger(), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.Column("acquired_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("table_id", name=op.f("pk_studio_leases")),
    )
    op.create_table(
        "studio_members",
        sa.Column("node_id", sa.String(length=128), nullable=False),
        sa.Column("url", sa.String(length=256), nullable=True),
        sa.Column("heartbeat_ms", sa.BigInteger(), nullable=False),
        sa.Column("started_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("node_id", name=op.f("pk_studio_members")),
    )


def downgrade() -> None:
    op.drop_table("studio_members")
    op.drop_table("studio_leases")
