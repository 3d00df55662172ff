"""Database engine and the declarative base every model shares.

SQLite is tuned for a single durable writer per transaction: WAL, ``synchronous=FULL``
(an acknowledged event survives power loss), foreign keys on, a busy timeout, and
``BEGIN IMMEDIATE`` so a writer takes the lock before reading the chain head — which is
what makes concurrent appends gap-free across threads and processes.

A ``readonly`` engine is for reads only: a deferred ``BEGIN`` (a WAL snapshot that takes
no write lock, so readers never queue writers) and ``query_only`` so a write through it
fails instead of silently taking the lock.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, MetaData, create_engine, event
from sqlalchemy.orm import DeclarativeBase, sessionmaker

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


SQLITE_CACHE_KIB = 64 * 1024


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def is_sqlite(url_or_engine: str | Engine) -> bool:
    url = url_or_engine if isinstance(url_or_engine, str) else str(url_or_engine.url)
    return url.startswith("sqlite")


def create_db_engine(
    url: str, *, busy_timeout_ms: int = 10_000, readonly: bool = False, **kwargs: Any
) -> Engine:
    if is_sqlite(url):
        engine = create_engine(
            url,
            connect_args={"timeout": busy_timeout_ms / 1000, "check_same_thread": False},
            **kwargs,
        )

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            # 64 MiB of page cache (the default is 2 MiB): the indexes a settlement of
            # 100k bets writes into are larger than 2 MiB, and every page that falls out
            # of the cache is read again from the OS. Memory is taken only as pages load.
            cursor.execute(f"PRAGMA cache_size={-SQLITE_CACHE_KIB}")
            if readonly:
                cursor.execute("PRAGMA query_only=ON")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Any) -> None:
            conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")

        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def make_sessionmaker(engine: Engine) -> sessionmaker:
    return sessionmaker(engine, expire_on_commit=False)
