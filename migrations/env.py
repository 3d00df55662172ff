"""Alembic runtime: migrates the database at ``sqlalchemy.url`` (or a passed connection)."""

from __future__ import annotations

from alembic import context

import audit.models  # noqa: F401 - registers the audit tables
import table_service.models  # noqa: F401 - registers the read models
from audit.db import Base, create_db_engine
from table_service.studio import models as studio_models  # noqa: F401 - studio leases

config = context.config
target_metadata = Base.metadata


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(
            connection=connection, target_metadata=target_metadata, render_as_batch=True
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    url = config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("alembic: no connection passed and no sqlalchemy.url configured")
    engine = create_db_engine(url)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
