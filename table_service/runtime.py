"""Wiring of one process: settings → engine, sessions, signing key, event store.

Everything that needs the database gets it from a :class:`Runtime`, so tests build one
against a temporary SQLite file or a fresh PostgreSQL database exactly as ``serve`` does.

Two session factories: ``sessions`` for work that writes (on SQLite every transaction
there begins with ``BEGIN IMMEDIATE``, the log's write lock) and ``reads`` for work that
only reads — GET routes, authentication, stream replays, exports — on its own engine and
connection pool, whose transactions take no write lock (a WAL snapshot on SQLite, a
``READ ONLY`` transaction on PostgreSQL). A crowd of readers then never queues a writer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from alembic import command
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from audit.db import create_db_engine, is_sqlite, make_sessionmaker
from audit.signing import Signer, load_or_create_signer
from audit.store import EventStore
from migrations import alembic_config
from table_service.config import Settings


def upgrade_database(engine: Engine) -> None:
    config = alembic_config(str(engine.url.render_as_string(hide_password=False)))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def create_read_engine(settings: Settings, engine: Engine) -> Engine:
    """The engine of read-only transactions, on the same database as ``engine``."""
    url = engine.url.render_as_string(hide_password=False)
    if is_sqlite(url) and engine.url.database in (None, "", ":memory:"):
        return engine  # one private in-memory database: there is no second connection to it
    if is_sqlite(url):
        return create_db_engine(url, busy_timeout_ms=settings.sqlite_busy_timeout_ms, readonly=True)
    return create_db_engine(
        url,
        pool_size=settings.read_pool_size,
        max_overflow=settings.read_pool_size,
        execution_options={"postgresql_readonly": True},
    )


@dataclass
class Runtime:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    signer: Signer
    store: EventStore
    read_engine: Engine | None = None
    reads: sessionmaker[Session] = field(init=False)  # on read_engine, made here

    def __post_init__(self) -> None:
        self.read_engine = create_read_engine(self.settings, self.engine)
        self.reads = make_sessionmaker(self.read_engine)

    @classmethod
    def from_settings(cls, settings: Settings, *, upgrade: bool = False) -> Runtime:
        settings.ensure_data_dir()
        engine = create_db_engine(
            settings.resolved_database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms
        )
        if upgrade:
            upgrade_database(engine)
        signer = load_or_create_signer(settings.resolved_signing_key_file, settings.signing_key)
        store = EventStore(
            signer, origin=settings.log_origin, checkpoint_every=settings.checkpoint_every
        )
        sessions = make_sessionmaker(engine)
        store.attach(sessions)
        return cls(settings, engine, sessions, signer, store)

    def database_ready(self) -> tuple[bool, str]:
        """(ready, reason): reachable and migrated to the head revision."""
        try:
            with self.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
            current = current_revision(self.engine)
        except Exception as exc:  # any driver error means "not ready", with its reason
            return False, f"database unreachable: {type(exc).__name__}: {exc}"
        head = head_revision()
        if current != head:
            return False, f"migrations not current: database at {current}, code at {head}"
        return True, f"database at {current}"

    def close(self) -> None:
        self.store.unfollow()
        if self.read_engine is not None and self.read_engine is not self.engine:
            self.read_engine.dispose()
        self.engine.dispose()
