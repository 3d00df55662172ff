"""audit_events.payload compressed with LZ4 on PostgreSQL

Revision ID: 0007_payload_lz4
Revises: 0006_bets_settled_by_ledger
Create Date: 2026-12-05

An event's payload is stored out of line and compressed when it is large (a batch of
1,000 bets is about 120 KB of JSON; a settlement of 1,000 bets more). PostgreSQL's default
compression (pglz) cost 44 ms to store the five chunks of a 5,000-bet batch on this
machine, LZ4 15 ms (about a tenth of the batch's whole time through the service), for
about the same size. Only values written from now on are compressed with LZ4; reading
either kind is transparent. Nothing changes on SQLite, nor on a server built without LZ4
(``default_toast_compression`` does not offer it).
"""

from __future__ import annotations

from alembic import op

revision = "0007_payload_lz4"
down_revision = "0006_bets_settled_by_ledger"
branch_labels = None
depends_on = None


def _lz4_available() -> bool:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return False
    offered: list[str] | None = bind.exec_driver_sql(
        "SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'"
    ).scalar()
    return offered is not None and "lz4" in offered


def upgrade() -> None:
    if _lz4_available():
        op.execute("ALTER TABLE audit_events ALTER COLUMN payload SET COMPRESSION lz4")


def downgrade() -> None:
    if _lz4_available():
        op.execute("ALTER TABLE audit_events ALTER COLUMN payload SET COMPRESSION DEFAULT")
