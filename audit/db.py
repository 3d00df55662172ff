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

import select
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import structlog
from sqlalchemy import Connection, Engine, MetaData, create_engine, event
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

log = structlog.get_logger(__name__)

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
        if not _out_of_own_begin(record.info, dbapi_connection):
            raise DisconnectionError("connection left in autocommit")
        since = record.info.get("checked_in_at")
        if idle_seconds is None or since is None or time.monotonic() - since <= idle_seconds:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)  # outside any transaction
        except Exception as exc:
            raise DisconnectionError(f"idle connection failed its ping: {exc}") from exc


def _out_of_own_begin(info: dict[Any, Any], dbapi_connection: Any) -> bool:
    """The event store's own BEGIN ran this connection in autocommit mode, put back as its
    transaction ended: one that missed that is reset here. False if it cannot be (drop it)."""
    if info.pop(OWN_BEGIN, False) and dbapi_connection.autocommit:
        try:
            dbapi_connection.autocommit = False
        except Exception:
            return False
    return True


class KeptConnection:
    """A connection kept for one writer's transactions (a table's commands, on PostgreSQL
    through psycopg): no pool checkout and check-in, no pool events, and no ping of a
    connection that sat idle, in front of each transaction.

    Through the pool a card's transaction checked a connection out and back in (about
    130 µs of the interpreter at best, half of it before the commit's round trip), and one
    idle for over :data:`IDLE_PING_SECONDS` was pinged first, a round trip more: at a
    table dealt at human pace, every card after a pause. The connection kept here is
    detached from the pool (it takes none of the pool's places, which the process's other
    writers keep) and used as it is, unless it shows it cannot be:

    - SQLAlchemy invalidated it (a statement met a lost connection), or the driver says
      it is closed or broken;
    - something is waiting to be read on its socket while no statement runs: the server
      said something unasked, which on a connection that listens to nothing is its last
      word (a backend terminated, the server shutting down or restarting, an idle
      timeout) and the end of the stream. One ``poll`` with no wait, no round trip;
    - it is inside a transaction, or left in autocommit by the event store's own BEGIN,
      and cannot be put back.

    Such a connection is closed and a new one taken before the transaction begins: nothing
    was sent on it, so nothing is lost or sent twice. A connection cut in the moment
    between that check and the transaction's first round trip fails that round trip, as a
    pooled one used a moment ago did (the caller's outage path reads the log to learn
    whether a commit landed), and is replaced before the next transaction.

    One transaction at a time on it, from whichever thread (a table's commands run one
    at a time, on its command thread or on a reader's thread in its place); a transaction
    begun while another is open on it (a nested one), another backend or driver, or a
    closed keeper: the pool (``sessions.begin()``), as before.

    The session is kept too, bound to the kept connection: each transaction begins on it
    as it would on a new one (its ``info`` empty, nothing in its identity map), and once
    the transaction has ended it is emptied again (what ``close`` does to a session bound
    to a connection), where a session was made and closed around each transaction
    (Session's constructor and close: about a fifth of what the session cost a card). A
    transaction that ends with an error, or leaves the session anything but idle, closes
    it, and the next transaction makes a new one; so does a replaced connection.
    """

    def __init__(self, engine: Engine, sessions: sessionmaker[Session]) -> None:
        self.engine = engine
        self.sessions = sessions
        self.kept = engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"
        self._busy = threading.Lock()  # held by the transaction open on it
        self._connection: Connection | None = None
        self._session: Session | None = None  # bound to the connection kept now
        self._closed = False
        self.replaced = 0  # connections found unusable and replaced (for tests, logs)

    @contextmanager
    def begin(self) -> Iterator[Session]:
        """A session in a transaction on the kept connection (committed at the end, or
        rolled back on an error), as ``sessions.begin()`` gives one on a pooled one."""
        if not self.kept or self._closed or not self._busy.acquire(blocking=False):
            with self.sessions.begin() as session:
                yield session
            return
        try:
            session = self._session_ready()
            try:
                with session.begin():
                    yield session
            except BaseException:
                self._end_session()
                raise
            if session.in_transaction():  # (the caller began another in it and left it)
                self._end_session()
            else:
                session.expunge_all()
                session.info.clear()
        finally:
            self._busy.release()

    def _session_ready(self) -> Session:
        connection = self._ready()
        session = self._session
        if session is None or session.bind is not connection:
            self._end_session()
            session = self._session = self.sessions(bind=connection)
        return session

    def _end_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            with suppress(Exception):
                session.close()

    @property
    def dbapi_connection(self) -> Any:
        """The driver's connection kept now, if any (for tests and diagnostics)."""
        connection = self._connection
        if connection is None or connection.invalidated or connection.closed:
            return None
        return connection.connection.dbapi_connection

    def _ready(self) -> Connection:
        connection = self._connection
        if connection is not None:
            reason = _unusable(connection)
            if reason is None:
                return connection
            log.warning("db.kept_connection_replaced", reason=reason)
            self.replaced += 1
            self._drop()
        connection = self.engine.connect()
        try:
            connection.detach()
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    def _drop(self) -> None:
        self._end_session()
        connection, self._connection = self._connection, None
        if connection is None:
            return
        raw = None if connection.invalidated else connection.connection.dbapi_connection
        with suppress(Exception):
            connection.close()  # detached: the driver's connection is closed for real
        if raw is not None:
            with suppress(Exception):
                raw.close()

    def close(self) -> None:
        """Close the kept connection (once its transaction, if one is open, has ended);
        later transactions go through the pool."""
        self._closed = True
        with self._busy:
            self._drop()


def _unusable(connection: Connection) -> str | None:
    """Why the kept connection cannot run the next transaction as it is, or None."""
    if connection.closed or connection.invalidated:
        return "invalidated"
    if connection.in_transaction():
        return "a transaction left open"
    fairy = connection.connection
    raw = fairy.dbapi_connection
    if raw is None or raw.closed or raw.broken:
        return "closed"
    if raw.info.transaction_status != 0:  # not IDLE
        return "inside a transaction"
    fairy.info.pop(OWN_BEGIN, None)
    if raw.autocommit:  # the event store's own BEGIN, not ended as its transaction ended
        try:
            raw.autocommit = False
        except Exception:
            return "left in autocommit"
    try:
        ready = select.poll()  # (not select.select: a serving process's fds pass 1024)
        ready.register(raw.fileno(), select.POLLIN)
        said = ready.poll(0)
    except (OSError, ValueError) as exc:
        return f"no socket: {exc}"
    if said:
        return "the server spoke while it was idle"
    return None


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
