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

import sqlite3
import time
from typing import Any

from sqlalchemy import Engine, MetaData, create_engine, event
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

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

        begin = "BEGIN" if readonly else "BEGIN IMMEDIATE"

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Any) -> None:
            # Straight to the driver: every command begins here, and SQLAlchemy's
            # statement machinery costs more than the BEGIN itself.
            try:
                conn.connection.dbapi_connection.execute(begin).close()
            except sqlite3.Error as exc:
                raise DBAPIError.instance(begin, (), exc, sqlite3.Error) from exc

        return engine
    ping = kwargs.pop("pool_pre_ping", None)
    # The connection checked in last is checked out first (LIFO): under a steady trickle
    # of commands the same few stay warm, and the rest sit idle rather than each being
    # used once a round (FIFO) just past IDLE_PING_SECONDS and pinged, a round trip more.
    kwargs.setdefault("pool_use_lifo", True)
    engine = create_engine(url, **kwargs)
    _pool_hooks(engine, IDLE_PING_SECONDS if ping is not False else None)
    return engine


IDLE_PING_SECONDS = 1.0
"""A pooled PostgreSQL connection unused for longer than this is pinged before use."""


OWN_BEGIN = "livetable_own_begin"
"""Set in a pooled connection's info while the event store's own BEGIN runs it in
autocommit mode (see ``EventStore.lock``)."""


def _pool_hooks(engine: Engine, idle_seconds: float | None) -> None:
    """Pessimistic disconnect handling without a round trip per transaction.

    ``pool_pre_ping`` pings on every checkout: one extra round trip in front of every
    command, the hot path included. A connection back in the pool a moment ago (a busy
    table's) is as alive as a ping would prove; one that sat idle (a server restart may
    have cut it) is pinged, and a failed ping makes the pool discard it and connect anew.
    A connection cut between two close uses fails its statement, and SQLAlchemy
    invalidates the pool's connections on that disconnect error.
    """

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            record.info["checked_in_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if record.info.pop(OWN_BEGIN, False) and dbapi_connection.autocommit:
            # The event store's own BEGIN ran this connection in autocommit mode, put back
            # as its transaction ended; one that missed that is reset here, or dropped.
            try:
                dbapi_connection.autocommit = False
            except Exception as exc:
                raise DisconnectionError(f"connection left in autocommit: {exc}") from exc
        since = record.info.get("checked_in_at")
        if idle_seconds is None or since is None or time.monotonic() - since <= idle_seconds:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)  # outside any transaction
        except Exception as exc:
            raise DisconnectionError(f"idle connection failed its ping: {exc}") from exc


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
