"""The event store the whole product writes through.

``append`` runs inside the caller's transaction, so the events and the read-model rows
derived from them commit together or not at all. Sequence numbers are global, gap-free
and strictly increasing: the writer holds the database's write lock (``BEGIN IMMEDIATE``
on SQLite, a transaction-scoped advisory lock on PostgreSQL) from reading the chain head
until commit. Subscribers hear about events only after the commit is durable.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import structlog
from sqlalchemy import Engine, select
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from audit.canonical import canonical_json
from audit.chain import GENESIS_HASH, EventBody, event_hash, utc_timestamp
from audit.db import OWN_BEGIN
from audit.heads import HeadFeed, notify_sql
from audit.merkle import MerkleFrontier
from audit.models import AuditCheckpoint, AuditEvent
from audit.note import NoteSigner, check_key_name, checkpoint_text, sign_note
from audit.signing import Signer

log = structlog.get_logger(__name__)

ADVISORY_LOCK_KEY = 0x6C697665  # "live"
# The log's write lock: one per chain, and a chain is one audit_events table. The key is
# "live" and the table's oid, so the log of another schema on the same server (another
# studio, a test's or a benchmark's scratch schema) never waits on this one's appends,
# while every process writing this log takes the same lock.
ADVISORY_LOCK_SQL = f"({ADVISORY_LOCK_KEY}::bigint << 32) | 'audit_events'::regclass::oid::bigint"
SYSTEM_TABLE = "_system"
_PENDING = "audit_pending_events"
_LOCKED = "audit_locked_transaction"
_HEAD = "audit_head"  # (transaction, seq, hash): the head as this locked transaction left it
_OWN_BEGIN = "audit_own_begin"  # the driver connection whose BEGIN the lock sent
_FENCED = "audit_fenced"  # (transaction, tables whose fence was checked under the lock)
_TAIL = "audit_tail"  # (transaction, [(sql, params)]): writes sent with the COMMIT
_ONE_TRIP = "audit_one_trip"  # (transaction, tables): the lock waits for the commit's trip
_NOTIFIED = "audit_notified"  # (transaction, seq): the head it announces (audit.heads)
_READS_FIRST = "audit_reads_first"  # the one-trip transaction that may read before its lock
_TURN = "audit_trip_turn"  # (transaction, relinks): it holds this process's one-trip turn
_RELINKS = 3  # at most so many relinks here per transaction: then the trip checks as usual
TURN_WAIT_SECONDS = 2.0  # a turn not given back by then is not waited for (see _take_turn)
_SAVEPOINT = "livetable_one_trip"
# Fails (an error, so nothing after it in the trip runs) unless the log's head is the one
# given; the error's text carries the head as read under the lock.
_HEAD_GUARD = (
    "SELECT (CASE WHEN h.seq IS NOT DISTINCT FROM %s AND h.hash IS NOT DISTINCT FROM %s"
    " THEN '0' ELSE 'livetable head ' || coalesce(h.seq, 0) || ' ' || coalesce(h.hash, %s)"
    " END)::int FROM (SELECT 1) AS one"
    " LEFT JOIN LATERAL (SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1) AS h"
    " ON true"
)
# Fails unless this transaction has written nothing (a plain read is given no transaction
# id) and reads each statement afresh (READ COMMITTED: the head check after the lock sees
# the head as the lock left it): the first statement of a one-trip commit whose
# transaction read before it (lock(reads_first=True)).
_NOTHING_WRITTEN = (
    "SELECT (CASE WHEN pg_current_xact_id_if_assigned() IS NULL"
    " AND current_setting('transaction_isolation') = 'read committed'"
    " THEN '0' ELSE 'livetable wrote before the lock' END)::int"
)
_MOVED = re.compile(r"livetable head (\d+) ([0-9a-f]{64})")
_HEAD_SQL = "SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1"
_INSERT_EVENTS = (
    "INSERT INTO audit_events (seq, table_id, round_id, type, actor, ts, payload, prev_hash,"
    " hash) VALUES"
)


@dataclass(frozen=True, slots=True)
class NewEvent:
    table_id: str
    type: str
    actor: str
    payload: dict[str, Any] = field(default_factory=dict)
    round_id: str | None = None


@dataclass(frozen=True, slots=True)
class StoredEvent:
    seq: int
    table_id: str
    round_id: str | None
    type: str
    actor: str
    ts: str
    payload: dict[str, Any]
    prev_hash: str
    hash: str

    @classmethod
    def from_row(cls, row: AuditEvent) -> StoredEvent:
        return cls(
            seq=row.seq,
            table_id=row.table_id,
            round_id=row.round_id,
            type=row.type,
            actor=row.actor,
            ts=row.ts,
            payload=json.loads(row.payload),
            prev_hash=row.prev_hash,
            hash=row.hash,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "table_id": self.table_id,
            "round_id": self.round_id,
            "type": self.type,
            "actor": self.actor,
            "ts": self.ts,
            "payload": self.payload,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


Subscriber = Callable[[list[StoredEvent]], None]


class OneTripRefused(Exception):
    """A transaction begun with ``lock(one_trip=True)`` could not commit in one round
    trip (the fence refused or cannot be said in one statement, something had to be
    read or written before the commit, or the server refused the trip): nothing of it
    was written. Run the command again the usual way, which says why if it refuses."""


class HeadMoved(Exception):
    """The events were linked to a head that is not the log's any more: nothing of the
    transaction's writes stands, and the transaction knows the head to link to now.
    Append (and project) the same events again in it, then commit again; the commit may
    say so again, so loop until it returns.

    ``sent`` False: found before the one-trip commit was sent (this process's own commit
    of another table, or a head heard, landed since the events were linked): nothing was
    sent, and the commit after the relink is still one round trip. ``sent`` True: found by
    the trip under the log's lock (another process appended since): the transaction is
    open, holding the log's lock and its fence, and the commit after the relink is the
    second and last round trip, as on the usual path."""

    def __init__(self, seq: int, hash_: str, *, sent: bool = True) -> None:
        super().__init__(f"the log's head is {seq}, not the one known")
        self.seq = seq
        self.hash = hash_
        self.sent = sent


class Fence(Protocol):
    """A check that must pass before a transaction writing these tables commits (a
    studio's table leases). Given as a statement, it runs under the log's lock in the
    lock's round trip; the statement's row locks then hold until the commit."""

    def fence_sql(self, tables: frozenset[str]) -> str | None:
        """One parameterless statement reading what :meth:`verify` needs, or None."""

    def verify(self, rows: Sequence[Any], tables: frozenset[str]) -> None:
        """Raise unless the rows show these tables may be written by this process."""

    def guard_sql(self, tables: frozenset[str]) -> Sequence[tuple[str, tuple[Any, ...]]] | None:
        """The fence as statements (``%s`` markers, their parameters) that fail, with an
        error, unless it passes, taking the locks ``fence_sql`` takes: for a commit sent
        in one round trip, where nothing can be verified before the COMMIT. None: it
        cannot be said so (the usual way checks it and says why it refuses)."""


def _begin_here(raw: Any) -> str | None:
    """The BEGIN a psycopg connection with nothing sent in this transaction would send
    (with its isolation level, read-only and deferrable settings, as the driver words
    them), for us to send instead in our first round trip; None if something was sent,
    in autocommit, or another driver.

    A pooled connection once used in autocommit (a lease renewal) comes back with READ
    COMMITTED set explicitly: its BEGIN says so, and is still ours to send (the driver's
    own is a round trip of its own)."""
    try:
        if raw.autocommit is not False or raw.info.transaction_status != 0:  # 0: IDLE
            return None
        parts = ["BEGIN"]
        if raw.isolation_level is not None:
            parts.append(f"ISOLATION LEVEL {raw.isolation_level.name.replace('_', ' ')}")
        if raw.read_only is not None:
            parts.append("READ ONLY" if raw.read_only else "READ WRITE")
        if raw.deferrable is not None:
            parts.append("DEFERRABLE" if raw.deferrable else "NOT DEFERRABLE")
        return " ".join(parts)
    except AttributeError:  # another driver: let it begin as it does
        return None


def _literal(raw: Any, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[str]:
    """Statements with their parameters bound as literals, for a simple-query script sent
    in one round trip: as the driver's own quoting (psycopg's ``mogrify``) binds them,
    character for character (:func:`_bound`); a statement it cannot bind so, by psycopg.

    psycopg's binding took a tenth of a card's command thread (a client cursor made per
    trip, each parameter through its adapters), for the few types a trip carries."""
    utf8 = raw.info.encoding == "utf-8"
    bound = [_bound(sql, params) if utf8 else None for sql, params in statements]
    if all(statement is not None for statement in bound):
        return cast(list[str], bound)
    import psycopg  # only PostgreSQL sends scripts

    quote: psycopg.ClientCursor[Any] = psycopg.ClientCursor(cast(psycopg.Connection[Any], raw))
    try:
        return [
            statement if statement is not None else quote.mogrify(sql, params)
            for statement, (sql, params) in zip(bound, statements, strict=True)
        ]
    finally:
        quote.close()


def _bound(sql: str, params: Sequence[Any]) -> str | None:
    """``sql`` with its ``%s`` markers replaced by ``params`` as literals, exactly as
    psycopg binds them on a UTF-8 connection (``PQescapeLiteral`` for a text: quotes
    doubled, and backslashes doubled under `` E'...'`` if it has any; an integer, a
    negative one after a space; ``true``, ``false``, ``NULL``); None if it holds any other
    ``%`` (psycopg's other markers), the count differs, or a parameter of another type or
    a text with a NUL (psycopg says why it refuses)."""
    pieces = sql.split("%s")
    if len(pieces) != len(params) + 1 or any("%" in piece for piece in pieces):
        return None
    out = [pieces[0]]
    for value, piece in zip(params, pieces[1:], strict=True):
        kind = type(value)
        if kind is str:
            if "\x00" in value:
                return None
            if "\\" in value:
                out.append(" E'" + value.replace("\\", "\\\\").replace("'", "''") + "'")
            else:
                out.append("'" + value.replace("'", "''") + "'")
        elif kind is int:
            out.append(f" {value}" if value < 0 else str(value))
        elif value is None:
            out.append("NULL")
        elif kind is bool:
            out.append("true" if value else "false")
        else:
            return None
        out.append(piece)
    return "".join(out)


def _announced_by_trip(session: Session, pending: Sequence[StoredEvent]) -> list[str]:
    """The statement that announces this transaction's new head (:mod:`audit.heads`), for
    the trip carrying its COMMIT, marked as sent so that the session's own commit checks
    do not send it again; none if it appended nothing."""
    if not pending:
        return []
    session.info[_NOTIFIED] = (session.get_transaction(), pending[-1].seq)
    return [notify_sql(pending[-1].seq, pending[-1].hash)]


def _lead_with_own_begin(session: Session, connection: Any, raw: Any) -> None:
    """Nothing sent in this transaction yet: our own BEGIN (:func:`_begin_here`) leads the
    round trip about to be sent. The driver, told it is in autocommit, sends none of its
    own; the server is in a transaction block from there to COMMIT or ROLLBACK, which the
    driver sends as usual. Put back as the transaction ends."""
    raw.autocommit = True
    connection.connection.info[OWN_BEGIN] = True
    session.info[_OWN_BEGIN] = raw


def _send(connection: Connection, tail: Sequence[tuple[str, tuple[Any, ...]]]) -> None:
    """Deferred writes, one statement each, in the order they were deferred."""
    for sql, params in tail:
        connection.exec_driver_sql(sql, params)


def _run_script(connection: Any, raw: Any, script: str, *, rows: bool = True) -> list[list[Any]]:
    """Several statements in one round trip (the simple query protocol): the rows of
    each (``rows`` False: none are read, for a commit's trip, whose answer is only
    whether it failed). Straight on the driver's cursor, as SQLAlchemy's result sees only
    the first statement; a driver error is raised as SQLAlchemy's, and a lost connection
    invalidated, as SQLAlchemy would do.

    Never prepared (each script is a text of its own, and a multi-statement one cannot
    be): the driver neither counts nor keeps them. Without ``rows`` the results are not
    walked either: the driver describes each as it is selected (a column object per
    field, a loader per column), Python run between a card's COMMIT coming back and its
    events handed to the streams, for results nobody reads."""
    cursor = raw.cursor()
    try:
        cursor.execute(script, prepare=False)
        if not rows:
            return []
        results = []
        while True:
            results.append(cursor.fetchall() if cursor.description is not None else [])
            if not cursor.nextset():
                return results
    except connection.dialect.loaded_dbapi.Error as exc:
        invalidated = connection.dialect.is_disconnect(exc, raw, cursor)
        if invalidated:
            connection.invalidate(exc)
        raise DBAPIError.instance(
            script, (), exc, connection.dialect.loaded_dbapi.Error,
            connection_invalidated=invalidated, dialect=connection.dialect,
        ) from exc  # fmt: skip
    finally:
        cursor.close()


def _end_own_begin(session: Session) -> None:
    raw = session.info.get(_OWN_BEGIN)
    if raw is None:
        return
    try:
        if raw.info.transaction_status == 0:  # committed or rolled back: IDLE again
            raw.autocommit = False
            session.info.pop(_OWN_BEGIN, None)
    except Exception:  # a broken connection: the pool's checkout puts it back or drops it
        session.info.pop(_OWN_BEGIN, None)


class EventStore:
    def __init__(
        self,
        signer: Signer,
        *,
        origin: str = "livetable",
        checkpoint_every: int = 1000,
        clock: Callable[[], str] = utc_timestamp,
    ) -> None:
        self.signer = signer
        self.origin = check_key_name(origin, what="log origin")
        self.note_signer = NoteSigner(self.origin, signer.private_key)
        self.checkpoint_every = checkpoint_every
        self.clock = clock
        self._subscribers: list[Subscriber] = []
        self.fence: Fence | None = None
        # The head as this process last left it (or saw it under the log's lock): where a
        # one-trip commit links its events. Only a hint: the trip checks it under the lock.
        self._known: tuple[int, str] | None = None
        self._known_guard = threading.Lock()
        # This process's one-trip commits take turns, from the check of the head they
        # link to until their trip is back (see _take_turn).
        self._turn = threading.Lock()
        # how they went: committed in one trip, relinked here before the trip (then still
        # one), head_moved (found under the lock: two trips), refused (the usual way)
        self.one_trips = {"committed": 0, "relinked": 0, "head_moved": 0, "refused": 0}
        self.feed: HeadFeed | None = None

    def _count(self, outcome: str) -> None:
        with self._known_guard:
            self.one_trips[outcome] += 1

    def _learn(self, seq: int, hash_: str, *, read_under_lock: bool = False) -> None:
        """Keep the highest head heard of (a late notification never takes the known
        head back). A head read under the log's lock is the head, for as long as the lock
        is held: it replaces whatever was heard, a wrong higher one included."""
        with self._known_guard:
            if read_under_lock or self._known is None or seq > self._known[0]:
                self._known = (seq, hash_)

    @property
    def known_head(self) -> tuple[int, str] | None:
        """The head a one-trip commit would link to now (only a hint: see :meth:`lock`)."""
        with self._known_guard:
            return self._known

    def follow(self, engine: Engine) -> None:
        """Learn the log's head as other processes commit (PostgreSQL; nothing to learn
        on SQLite, whose writers are one at a time anyway): a :class:`~audit.heads.HeadFeed`
        on a connection of its own, until :meth:`unfollow`. For a process sharing the log
        with others (a studio), whose cards then find the head they expect."""
        if self.feed is not None or engine.dialect.name != "postgresql":
            return
        self.feed = HeadFeed(engine, self._learn).start()

    def unfollow(self) -> None:
        feed, self.feed = self.feed, None
        if feed is not None:
            feed.close()

    # -- publishing after commit -------------------------------------------------------
    def attach(self, factory: sessionmaker[Session]) -> None:
        """Deliver appended events to subscribers once (and only if) their commit lands."""
        sa_event.listen(factory, "before_commit", self._before_commit)
        sa_event.listen(factory, "after_commit", self._after_commit)
        sa_event.listen(factory, "after_soft_rollback", self._after_rollback)

    def subscribe(self, subscriber: Subscriber, *, first: bool = False) -> None:
        """Call ``subscriber`` with each commit's events (``first``: before the others)."""
        if subscriber in self._subscribers:
            return
        if first:
            self._subscribers.insert(0, subscriber)
        else:
            self._subscribers.append(subscriber)

    def announce(self, events: list[StoredEvent]) -> None:
        """Hand committed events to the subscribers: after every commit, and again for a
        commit whose answer was lost with its connection but that landed after all."""
        for subscriber in self._subscribers:
            try:
                subscriber(events)
            except Exception:  # a slow or broken subscriber must never undo a commit
                log.exception("audit.subscriber_failed")

    def _before_commit(self, session: Session) -> None:
        """Deferred writes not sent by :meth:`commit` go now, before the commit: a
        transaction that defers and then commits the ordinary way loses nothing (one
        waiting for a one-trip commit is refused: its lock was never taken). On
        PostgreSQL the new head is announced (:mod:`audit.heads`) unless the commit's own
        round trip carries it."""
        self.send_deferred(session)
        pending: list[StoredEvent] = session.info.get(_PENDING, [])
        if not pending:
            return
        # (before the outer commit, and as a savepoint is released: the highest counts)
        announced = (session.get_transaction(), pending[-1].seq)
        found = session.info.get(_NOTIFIED)
        if found is None or found[0] is not announced[0] or found[1] != announced[1]:
            connection = session.connection()
            if connection.dialect.name == "postgresql":
                connection.exec_driver_sql(notify_sql(pending[-1].seq, pending[-1].hash))
            session.info[_NOTIFIED] = announced

    def _after_commit(self, session: Session) -> None:
        self._give_turn(session)
        _end_own_begin(session)
        session.info.pop(_NOTIFIED, None)
        session.info.pop(_TAIL, None)
        session.info.pop(_HEAD, None)
        session.info.pop(_FENCED, None)
        session.info.pop(_ONE_TRIP, None)
        session.info.pop(_READS_FIRST, None)
        self._committed(session)

    def _committed(self, session: Session) -> None:
        """The transaction's events are durable: learn the head, tell the subscribers.
        Called as soon as a trip carrying the COMMIT has come back (the session's own
        commit that follows sends nothing more; its after-commit bookkeeping was 0.2 ms
        at p50 between a card's commit and its stream in a loaded studio), and after any
        other commit, for what is left."""
        pending: list[StoredEvent] = session.info.pop(_PENDING, [])
        if pending:
            # Appended under the log's lock, held to this commit: the head, just now.
            self._learn(pending[-1].seq, pending[-1].hash)
        self._give_turn(session)  # the head it left is known: the next one may link to it
        if pending:
            self.announce(pending)

    @staticmethod
    def pending(session: Session) -> list[StoredEvent]:
        """The events appended in this session's open transaction, not yet committed (for
        checks that must pass before the commit, such as a table lease's fencing token)."""
        return list(session.info.get(_PENDING, ()))

    def _after_rollback(self, session: Session, _previous: Any) -> None:
        self._give_turn(session)
        _end_own_begin(session)
        session.info.pop(_NOTIFIED, None)
        session.info.pop(_PENDING, None)
        session.info.pop(_FENCED, None)
        session.info.pop(_TAIL, None)
        session.info.pop(_HEAD, None)  # a savepoint rolled back may take appends with it
        session.info.pop(_ONE_TRIP, None)
        session.info.pop(_READS_FIRST, None)

    # -- writing -------------------------------------------------------------------------
    def lock(
        self,
        session: Session,
        *,
        tables: Iterable[str] = (),
        settings: Sequence[str] = (),
        one_trip: bool = False,
        reads_first: bool = False,
    ) -> None:
        """Take the log's write lock now, before reading state that decides what to append.

        ``tables``: the tables this transaction is about to write, so that a fence (a
        studio's table leases) can be checked under the lock in the same round trip.
        ``settings``: parameterless statements that set up the transaction (a ``SET
        LOCAL``), sent in the lock's round trip too (each on its own if the lock is held
        already).

        ``one_trip``: for a transaction that reads nothing before its commit and only
        appends deferred (``append(defer=True)``, :meth:`defer`): on PostgreSQL, when this
        process knows the head (it appended last, or learned the head since), nothing is
        sent now; :meth:`commit` sends the lock, the fence, a check that the head is the
        known one, the writes and the COMMIT in one round trip. If the head moved since,
        :meth:`commit` raises :class:`HeadMoved`, and the caller appends again and commits
        again: found before the trip (the process's own commit of another table landed
        meanwhile: the process's one-trip commits take turns), nothing was sent and the
        next commit is still one trip; found by the trip (another writer appended), the
        lock and fence are held and the next commit is the second round trip, as usual.
        If the trip cannot be (the fence refuses, a statement must run before the commit),
        :class:`OneTripRefused` with nothing written. A later ``lock`` call, a checkpoint
        or an append that cannot wait takes the lock at once, the usual way.

        ``reads_first`` (with ``one_trip``): the transaction reads before its commit,
        without the log's lock (:meth:`fetch`), and its deferred writes themselves refuse
        what would make those reads wrong (a bet's debit refuses a balance gone short):
        the lock is taken in the commit's round trip only, which fails (nothing written)
        if anything but reads ran before it. :meth:`waits_for_commit` says whether the
        lock waits; if not (no head known, SQLite), it was taken here, the usual way.
        """
        tables = frozenset(tables)
        if one_trip and not settings and self._begin_one_trip(session, tables, reads_first):
            return
        self._lock(session, tables, settings)

    def _begin_one_trip(self, session: Session, tables: frozenset[str], reads_first: bool) -> bool:
        with self._known_guard:
            known = self._known
        transaction = session.get_transaction()
        if known is None or session.info.get(_LOCKED) is transaction:
            return False
        connection = session.connection()  # checked out; nothing is sent
        raw = connection.connection.dbapi_connection
        if connection.dialect.name != "postgresql" or raw is None or _begin_here(raw) is None:
            return False
        if self.fence is not None and self.fence.guard_sql(tables) is None:
            return False
        session.info[_ONE_TRIP] = (transaction, tables)
        session.info[_HEAD] = (transaction, *known)
        if reads_first:
            session.info[_READS_FIRST] = transaction
        return True

    @classmethod
    def waits_for_commit(cls, session: Session) -> bool:
        """Whether this transaction's lock waits for its one-trip commit."""
        return cls._one_trip(session) is not None

    @staticmethod
    def fetch(session: Session, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows of one statement (``%s`` markers), sent with our own BEGIN when it is
        the transaction's first (PostgreSQL: one round trip where the driver's BEGIN
        would take one of its own; the parameters bound as literals, so keep them few:
        a list goes best as one JSON text). A one-trip transaction that reads first
        (``lock(reads_first=True)``) reads so before its lock."""
        connection = session.connection()
        raw = connection.connection.dbapi_connection
        begin = _begin_here(raw) if raw is not None else None
        if begin is None:
            marked = sql if connection.dialect.name == "postgresql" else sql.replace("%s", "?")
            return list(connection.exec_driver_sql(marked, tuple(params)).all())
        (statement,) = _literal(raw, [(sql, params)])
        _lead_with_own_begin(session, connection, raw)
        return _run_script(connection, raw, f"{begin}; {statement}")[1]

    @staticmethod
    def _one_trip(session: Session) -> frozenset[str] | None:
        """The tables of the one-trip commit this transaction waits for, if it does."""
        found = session.info.get(_ONE_TRIP)
        if found is None or found[0] is not session.get_transaction():
            return None
        tables: frozenset[str] = found[1]
        return tables

    def _lock(
        self,
        session: Session,
        tables: Iterable[str] = (),
        settings: Sequence[str] = (),
        *,
        one_trip_waits: bool = False,
    ) -> None:
        """Once per transaction: PostgreSQL's advisory lock; on SQLite, beginning the
        transaction (``BEGIN IMMEDIATE``) is the lock, so only make sure it has begun.
        A transaction waiting for a one-trip commit takes it now, the usual way, unless
        ``one_trip_waits`` (an append that can wait for the commit's trip)."""
        waiting = self._one_trip(session)
        if waiting is not None:
            if one_trip_waits:
                return
            if session.info.get(_PENDING):
                # linked to the known head, read without the lock: they cannot stand
                raise OneTripRefused("events were appended before the log's lock was taken")
            # Its reads (lock(reads_first=True)) stand before the lock, as any read may.
            read = session.info.pop(_READS_FIRST, None) is session.get_transaction()
            session.info.pop(_ONE_TRIP, None)
            session.info.pop(_HEAD, None)
            raw = session.connection().connection.dbapi_connection
            if raw is None or (_begin_here(raw) is None and not read):
                raise OneTripRefused("statements ran before the log's lock was taken")
            tables = waiting | frozenset(tables)
        connection = session.connection()  # begins the transaction if it has not begun
        transaction = session.get_transaction()
        if session.info.get(_LOCKED) is transaction or connection.dialect.name != "postgresql":
            for statement in settings:
                connection.exec_driver_sql(statement)
        if session.info.get(_LOCKED) is transaction:
            return
        if connection.dialect.name == "postgresql":
            # The lock, then the chain head (and the fence), in one round trip: each
            # statement has its own snapshot, so what follows the lock is read under it.
            wanted = frozenset(tables)
            fence_sql = self.fence.fence_sql(wanted) if self.fence is not None else None
            statements = [f"SELECT pg_advisory_xact_lock({ADVISORY_LOCK_SQL})", _HEAD_SQL]
            if fence_sql is not None:
                statements.append(fence_sql)
            statements += settings  # after the reads: their results keep their places
            raw = connection.connection.dbapi_connection
            begin = _begin_here(raw) if raw is not None else None
            if raw is not None and begin is not None:
                _lead_with_own_begin(session, connection, raw)
                statements.insert(0, begin)
            results = _run_script(connection, raw, "; ".join(statements))
            if begin is not None:
                results.pop(0)
            row = results[1][0] if results[1] else None
            leases = results[2] if fence_sql is not None else None
            session.info[_HEAD] = (transaction, *(row or (0, GENESIS_HASH)))
            if self.fence is not None and leases is not None:
                self.fence.verify(leases, wanted)  # raises: nothing was written
                session.info[_FENCED] = (transaction, wanted)
        session.info[_LOCKED] = transaction

    @staticmethod
    def fenced(session: Session) -> frozenset[str]:
        """Tables whose fence this transaction already passed under the log's lock."""
        found = session.info.get(_FENCED)
        if found is not None and found[0] is session.get_transaction():
            tables: frozenset[str] = found[1]  # session.info holds Any
            return tables
        return frozenset()

    @staticmethod
    def head(session: Session) -> tuple[int, str]:
        """The last event's (seq, hash). Under the write lock the head can move only by
        this transaction's own appends, so once read it is kept for the transaction."""
        cached = session.info.get(_HEAD)
        if cached is not None and cached[0] is session.get_transaction():
            return cached[1], cached[2]
        row = session.connection().exec_driver_sql(_HEAD_SQL).first()
        return (row[0], row[1]) if row else (0, GENESIS_HASH)

    def append(
        self, session: Session, events: Sequence[NewEvent], *, defer: bool = False
    ) -> list[StoredEvent]:
        """Append in the caller's transaction; the caller commits (or rolls back).

        ``defer``: on PostgreSQL the rows' INSERT waits for :meth:`commit`, which sends it
        with the COMMIT in one round trip (the log's lock is held one round trip less);
        the seqs and hashes are known at once all the same. For a caller that reads
        nothing of the log before its commit (a checkpoint due flushes it first)."""
        if not events:
            return []
        self._lock(session, one_trip_waits=True)
        seq, prev = self.head(session)
        if self._one_trip(session) is not None and (
            not defer or self._checkpoint_due(seq + 1, seq + len(events))
        ):
            self._lock(session)  # this append cannot wait for the commit's trip
            seq, prev = self.head(session)
        stored: list[StoredEvent] = []
        ts = self.clock()
        payload_texts: list[str] = []
        for new in events:
            body = EventBody(new.table_id, new.round_id, new.type, new.actor, ts, new.payload)
            seq += 1
            payload_bytes = canonical_json(new.payload)
            payload_texts.append(payload_bytes.decode("utf-8"))
            digest = event_hash(seq, prev, body.canonical(payload_bytes))
            stored.append(
                StoredEvent(
                    seq,
                    new.table_id,
                    new.round_id,
                    new.type,
                    new.actor,
                    ts,
                    new.payload,
                    prev,
                    digest,
                )
            )
            prev = digest
        # Fixed SQL straight to the driver: appends are the hot path of every command.
        rows = [
            (e.seq, e.table_id, e.round_id, e.type, e.actor, e.ts, text, e.prev_hash, e.hash)
            for e, text in zip(stored, payload_texts, strict=True)
        ]
        checkpoint = self._checkpoint_due(stored[0].seq, seq)
        if defer and not checkpoint:
            values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(rows))
            self.defer(session, f"{_INSERT_EVENTS} {values}", [v for row in rows for v in row])
        else:
            connection = session.connection()
            marker = "?" if connection.dialect.paramstyle == "qmark" else "%s"
            self.send_deferred(session)
            connection.exec_driver_sql(f"{_INSERT_EVENTS} ({', '.join([marker] * 9)})", rows)
        transaction = session.get_transaction()
        if session.info.get(_LOCKED) is transaction or self._one_trip(session) is not None:
            session.info[_HEAD] = (transaction, seq, prev)
        if checkpoint:
            self._write_checkpoint(session, seq, self._latest_checkpoint(session))
        session.info.setdefault(_PENDING, []).extend(stored)
        return stored

    def _checkpoint_due(self, first: int, last: int) -> bool:
        return (first - 1) // self.checkpoint_every != last // self.checkpoint_every

    # -- writes sent with the commit (PostgreSQL) ---------------------------------------------
    @staticmethod
    def defer(session: Session, sql: str, params: Sequence[Any]) -> None:
        """A write of this transaction that nothing in it reads before the commit (an
        event's row, a read model's row): on PostgreSQL kept for :meth:`commit`, which
        sends it with the COMMIT in one round trip; elsewhere executed now. ``sql`` has
        ``%s`` markers. Deferred writes go in order, before any the log itself writes
        later in the transaction; an error in one surfaces at the commit, which then
        fails as a whole (nothing of the transaction is written)."""
        connection = session.connection()
        if connection.dialect.name != "postgresql":
            connection.exec_driver_sql(sql.replace("%s", "?"), tuple(params))
            return
        transaction = session.get_transaction()
        found = session.info.get(_TAIL)
        if found is None or found[0] is not transaction:
            found = (transaction, [])
            session.info[_TAIL] = found
        tail: list[tuple[str, tuple[Any, ...]]] = found[1]
        tail.append((sql, tuple(params)))

    @staticmethod
    def _take_tail(session: Session) -> list[tuple[str, tuple[Any, ...]]]:
        found = session.info.pop(_TAIL, None)
        if found is None or found[0] is not session.get_transaction():
            return []
        tail: list[tuple[str, tuple[Any, ...]]] = found[1]
        return tail

    @classmethod
    def send_deferred(cls, session: Session) -> None:
        """The deferred writes, now, one statement each (a checkpoint, an ordinary
        commit, an append not deferred: what follows may read them). A transaction
        waiting for a one-trip commit is refused: nothing may run before its lock."""
        if cls._one_trip(session) is not None:
            raise OneTripRefused("a write could not wait for the one-trip commit")
        tail = cls._take_tail(session)
        if tail:
            _send(session.connection(), tail)

    def commit(self, session: Session) -> None:
        """Send the transaction's deferred writes and its COMMIT in one round trip: the
        last thing the transaction does (the session's own commit then finds it done and
        sends nothing more). What must pass before a commit (the session's before-commit
        checks: a studio lease's fence, where it was not passed under the log's lock)
        runs first, in the transaction, and is marked done. Where one round trip cannot
        be (nothing deferred, another backend, ORM objects to flush, a savepoint open),
        the writes go now and the session's commit runs as usual.

        A transaction begun with ``lock(one_trip=True)`` sends its lock, fence and head
        check with them (see :meth:`lock`)."""
        waiting = self._one_trip(session)
        if waiting is not None:
            self._commit_one_trip(session, waiting)
            return
        tail = self._take_tail(session)
        if not tail:
            return
        connection = session.connection()
        raw = connection.connection.dbapi_connection
        # A savepoint open (COMMIT is not ours to send), no driver connection or ORM
        # objects to flush: the writes go now and the session's commit runs as usual.
        nested = session.in_nested_transaction()
        if nested or raw is None or session.new or session.dirty or session.deleted:
            _send(connection, tail)
            return
        # The checks a commit runs, now, while the transaction is open: a check that
        # refuses raises here and nothing is written. Their tables are then fenced for
        # this transaction, so the session's commit does not check them again.
        pending: list[StoredEvent] = session.info.get(_PENDING, [])
        announce = _announced_by_trip(session, pending)
        session.dispatch.before_commit(session)
        checked = {e.table_id for e in pending}
        session.info[_FENCED] = (session.get_transaction(), self.fenced(session) | checked)
        _run_script(
            connection, raw, "; ".join([*_literal(raw, tail), *announce, "COMMIT"]), rows=False
        )
        self._committed(session)

    def _take_turn(self, session: Session) -> int:
        """Wait for this process's one-trip commit in flight, if any, and hold the turn
        until this transaction's trip is back (or it ends); the relinks done so far.

        Why: the tables of one process commit on threads of their own, each linking its
        events to the head the process knows. Two of them whose commits overlap link to
        the same head, and the second one's trip, queued on the log's lock behind the
        first, found the head moved: a failed trip, the events linked again, a second
        trip with the lock held throughout. In a studio run (two processes, eight tables)
        most of the heads found moved were the process's own (25 of 48 after the
        takeover, when one process writes alone, and 9 of the 23 before it). Taking turns,
        the second waits for the first's answer instead of for its lock on the server,
        then sees the head it left and links to it here (HeadMoved, ``sent=False``): one
        trip. The turn is only a hint, as the known head is: the trip still checks the
        head under the log's lock, so a turn not given back in
        :data:`TURN_WAIT_SECONDS` (a transaction left open) is not waited for."""
        transaction = session.get_transaction()
        found = session.info.get(_TURN)
        if found is not None and found[0] is transaction:
            relinks: int = found[1]
            return relinks
        if not self._turn.acquire(timeout=TURN_WAIT_SECONDS):
            log.warning("audit.one_trip_turn_not_given_back")
            return _RELINKS  # no turn taken: the trip checks the head, as it always does
        session.info[_TURN] = (transaction, 0)
        return 0

    def _give_turn(self, session: Session) -> None:
        if session.info.pop(_TURN, None) is not None:
            self._turn.release()

    def _relink_here(self, session: Session, base: tuple[int, str], relinks: int) -> None:
        """Raise :class:`HeadMoved` (``sent=False``) if this process knows a newer head
        than ``base``, the one the transaction's events are linked to: their trip would
        find it moved. Nothing was sent; the transaction keeps its turn and waits for its
        one-trip commit still, now at the known head."""
        known = self.known_head
        if known is None or known[0] <= base[0] or relinks >= _RELINKS:
            return
        transaction = session.get_transaction()
        session.info[_TURN] = (transaction, relinks + 1)
        session.info[_HEAD] = (transaction, *known)
        session.info[_PENDING] = []
        session.info.pop(_NOTIFIED, None)
        self._count("relinked")
        raise HeadMoved(*known, sent=False)

    def _commit_one_trip(self, session: Session, tables: frozenset[str]) -> None:
        """BEGIN, the log's lock, the fence, a savepoint, the head check, the writes and
        the COMMIT: one round trip. The fence and the check fail with an error, so the
        server runs nothing after them: nothing is written, and a head that moved leaves
        the transaction at the savepoint with the lock and the fence held."""
        transaction = session.get_transaction()
        pending: list[StoredEvent] = session.info.get(_PENDING, [])
        tail = self._take_tail(session)
        if not pending and not tail:
            session.info.pop(_ONE_TRIP, None)  # nothing to write: nothing to lock
            return
        tables = tables | {e.table_id for e in pending}
        guard = [] if self.fence is None else self.fence.guard_sql(tables)
        if guard is None:
            self._count("refused")
            raise OneTripRefused("the fence cannot be checked in the commit's round trip")
        base = (pending[0].seq - 1, pending[0].prev_hash) if pending else self.head(session)
        if pending:  # (the deferred writes of the events linked again are deferred again)
            self._relink_here(session, base, self._take_turn(session))
        # The commit's own checks, with the fence marked as checked (the trip checks it),
        # and the new head announced by the trip.
        session.info.pop(_ONE_TRIP, None)
        session.info[_FENCED] = (transaction, tables)
        announce = _announced_by_trip(session, pending)
        session.dispatch.before_commit(session)
        connection = session.connection()
        raw = connection.connection.dbapi_connection
        begin = _begin_here(raw) if raw is not None else None
        # Or begun by its reads (lock(reads_first=True)): the trip checks they wrote nothing.
        read = begin is None and session.info.get(_READS_FIRST) is transaction
        if (
            raw is None
            or (begin is None and not (read and raw.info.transaction_status == 2))  # INTRANS
            or session.in_nested_transaction()
            or session.new
            or session.dirty
            or session.deleted
        ):
            self._count("refused")
            raise OneTripRefused("statements ran before the log's lock was taken")
        bound = _literal(raw, [*guard, (_HEAD_GUARD, (*base, GENESIS_HASH)), *tail])
        statements = [
            begin if begin is not None else _NOTHING_WRITTEN,
            f"SELECT pg_advisory_xact_lock({ADVISORY_LOCK_SQL})",
            *bound[: len(guard)],
            f"SAVEPOINT {_SAVEPOINT}",
            *bound[len(guard) :],
            *announce,
            "COMMIT",
        ]
        if begin is not None:
            _lead_with_own_begin(session, connection, raw)
        try:
            _run_script(connection, raw, "; ".join(statements), rows=False)
        except DBAPIError as exc:
            status = raw.info.transaction_status
            if exc.connection_invalidated or status not in (0, 3):
                # No answer from the server: the COMMIT may have landed (the caller's
                # outage path reads the log). IDLE (0): the COMMIT itself failed, so the
                # server rolled back; INERROR (3): a statement before it failed and the
                # server ran nothing after it.
                raise
            moved = _MOVED.search(str(exc.orig)) if status == 3 else None
            if moved is None:  # the fence, or the server refused: the whole trip is undone
                self._count("refused")
                raise OneTripRefused(f"the one-trip commit was refused: {exc.orig}") from exc
            head = (int(moved[1]), moved[2])
            self._learn(*head, read_under_lock=True)
            # Back to the savepoint with the next statement: the lock and fence stand.
            session.info[_LOCKED] = transaction
            session.info[_HEAD] = (transaction, *head)
            session.info[_PENDING] = []
            session.info.pop(_NOTIFIED, None)  # the events linked again announce their head
            session.info[_TAIL] = (transaction, [(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}", ())])
            self._count("head_moved")
            raise HeadMoved(*head) from None  # (the turn is held until it commits)
        self._count("committed")
        self._committed(session)

    def checkpoint(self, session: Session) -> AuditCheckpoint | None:
        """Sign a checkpoint at the current head now (no-op if the head is already sealed)."""
        self._lock(session)
        size, _ = self.head(session)
        if size == 0:
            return None
        latest = self._latest_checkpoint(session)
        if latest is not None and latest.size >= size:
            return latest
        return self._write_checkpoint(session, size, latest)

    @staticmethod
    def _latest_checkpoint(session: Session) -> AuditCheckpoint | None:
        return session.scalars(
            select(AuditCheckpoint).order_by(AuditCheckpoint.size.desc()).limit(1)
        ).first()

    def _write_checkpoint(
        self, session: Session, size: int, latest: AuditCheckpoint | None
    ) -> AuditCheckpoint:
        """The checkpoint at ``size``, extending ``latest`` (the last one, as the caller
        read it under the log's lock: read once, where the seal read it twice, a round
        trip more under the lock every few seconds)."""
        if latest is None:
            frontier = MerkleFrontier()
        else:
            frontier = MerkleFrontier.from_json(latest.size, json.loads(latest.frontier))
        hashes = session.scalars(
            select(AuditEvent.hash)
            .where(AuditEvent.seq > frontier.size, AuditEvent.seq <= size)
            .order_by(AuditEvent.seq)
        )
        frontier.extend(bytes.fromhex(h) for h in hashes)
        root = frontier.root()
        body = checkpoint_text(self.origin, size, root)
        note = sign_note(body, self.note_signer)
        row = AuditCheckpoint(
            size=size,
            origin=self.origin,
            root_hash=root.hex(),
            key_id=self.note_signer.key_id.hex(),
            signature=self.signer.sign(body.encode()),
            created_at=self.clock(),
            frontier=json.dumps(frontier.to_json()),
            note=note,
        )
        session.add(row)
        session.flush()
        log.info("audit.checkpoint", size=size, root=root.hex()[:16])
        return row

    # -- reading -------------------------------------------------------------------------
    @staticmethod
    def read(
        session: Session,
        *,
        after_seq: int = 0,
        table_id: str | None = None,
        round_id: str | None = None,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        query = select(AuditEvent).where(AuditEvent.seq > after_seq).order_by(AuditEvent.seq)
        if table_id is not None:
            query = query.where(AuditEvent.table_id == table_id)
        if round_id is not None:
            query = query.where(AuditEvent.round_id == round_id)
        if limit is not None:
            query = query.limit(limit)
        return [StoredEvent.from_row(row) for row in session.scalars(query)]
