"""Table leases with fencing tokens: one writer per table across processes.

A lease row per table names its owner (a node id), the owner's address, a fencing token
and when it runs out, in the database's own clock. A process acquires a free or expired
lease (the token grows by one), renews what it holds, and releases what it hands over.

The fence: before any transaction that appended events for a table commits, the lease
is read (``FOR KEY SHARE`` on PostgreSQL: a takeover waits for the commit in flight) and the
commit is refused unless this process holds the lease with the token it acquired and the
lease has not run out. A process that stalled past its lease, or whose table was taken
over, can therefore never write another event for that table, whatever it believes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import structlog
from sqlalchemy import Connection, Engine
from sqlalchemy import event as sa_event
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from audit.store import EventStore
from table_service import metrics
from table_service.errors import Refused

log = structlog.get_logger(__name__)

_PLAIN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")


class LeaseLost(Refused):
    """This process does not (or no longer) hold the table's lease: nothing was written."""

    code = "lease_lost"
    status = 503


@dataclass(frozen=True)
class LeaseInfo:
    table_id: str
    owner: str | None
    owner_url: str | None
    token: int
    expires_ms: int
    now_ms: int

    @property
    def live(self) -> bool:
        return self.owner is not None and self.expires_ms > self.now_ms


class _FenceRow(NamedTuple):
    table_id: str
    owner: str | None
    token: int
    expires_ms: int
    now_ms: int


@dataclass(frozen=True)
class Member:
    node_id: str
    url: str | None
    heartbeat_ms: int


def now_ms_sql(dialect: str) -> str:
    """The database's clock in milliseconds (wall clock, not the transaction's start)."""
    if dialect == "postgresql":
        return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
    return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"


def _in(values: Iterable[str], marker: str) -> tuple[str, tuple[str, ...]]:
    items = tuple(values)
    return ", ".join([marker] * len(items)), items


FENCE_LOCK = "KEY SHARE"
"""How a commit's fence locks its tables' lease rows (PostgreSQL), from its check to its
COMMIT. A takeover (``acquire``: ``SELECT ... FOR UPDATE``) conflicts with it, so it waits
for every commit in flight that checked the old holder's lease. The holder's own renewal
(an ``UPDATE`` of ``expires_ms``, no key: ``FOR NO KEY UPDATE``) does not, where ``FOR
SHARE`` did: once a second per process a renewal waited for the commit in flight on one of
its rows, and every commit of the process's tables that came next (each holding the
log's lock, so every table of the studio behind it) queued behind the renewal's own
commit. Traced in the studio (load 12): 1.7 % of the commits' trips overlapped a renewal
of their process, and those were the slow ones (p50 7-30 ms against 4-5)."""


class Leases:
    """This process's view of the studio's leases. Thread-safe: the coordinator renews
    from one thread while table commands check the fence from others."""

    def __init__(self, engine: Engine, node_id: str, url: str | None, ttl_ms: int) -> None:
        self.engine = engine
        self.node_id = node_id
        self.url = url
        self.ttl_ms = ttl_ms
        self.dialect = engine.dialect.name
        self.marker = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        self._now = now_ms_sql(self.dialect)
        self._held: dict[str, int] = {}
        self._guard = threading.Lock()
        self.fenced: frozenset[str] = frozenset()

    # -- what this process holds -------------------------------------------------------
    def held(self) -> dict[str, int]:
        with self._guard:
            return dict(self._held)

    def token(self, table_id: str) -> int | None:
        with self._guard:
            return self._held.get(table_id)

    def _lock_clause(self, mode: str) -> str:
        return f" FOR {mode}" if self.dialect == "postgresql" else ""

    # -- acquire, renew, release -------------------------------------------------------
    def acquire(self, table_id: str) -> int | None:
        """Take the table's lease if it is free, run out, or already ours (a restart of
        this node): the new fencing token, or None if another live process holds it."""
        m = self.marker
        try:
            with self.engine.begin() as conn:
                now = conn.exec_driver_sql(f"SELECT {self._now}").scalar_one()
                row = conn.exec_driver_sql(
                    "SELECT owner, token, expires_ms FROM studio_leases WHERE table_id = "
                    f"{m}{self._lock_clause('UPDATE')}",
                    (table_id,),
                ).first()
                if row is None:
                    token = 1
                    conn.exec_driver_sql(
                        "INSERT INTO studio_leases (table_id, owner, owner_url, token,"
                        f" expires_ms, acquired_ms) VALUES ({m}, {m}, {m}, {m}, {m}, {m})",
                        (table_id, self.node_id, self.url, token, now + self.ttl_ms, now),
                    )
                elif row.owner in (None, self.node_id) or row.expires_ms <= now:
                    token = row.token + 1
                    conn.exec_driver_sql(
                        f"UPDATE studio_leases SET owner = {m}, owner_url = {m}, token = {m},"
                        f" expires_ms = {m}, acquired_ms = {m} WHERE table_id = {m}",
                        (self.node_id, self.url, token, now + self.ttl_ms, now, table_id),
                    )
                else:
                    return None
        except IntegrityError:  # another process inserted the first lease row just now
            return None
        with self._guard:
            self._held[table_id] = token
        metrics.LEASES_ACQUIRED.labels(table_id, self.node_id).inc()
        log.info("studio.lease_acquired", table_id=table_id, token=token, node=self.node_id)
        return token

    def renew(self) -> set[str]:
        """Extend every lease still ours; forget and return the ones that are not.

        One statement, committed on its own (autocommit on PostgreSQL): the lease rows are
        locked only while the server runs it. Every table commit reads its lease (``FOR
        KEY SHARE``, :data:`FENCE_LOCK`) while it holds the log's lock, so a renewal that
        kept the rows locked over its round trips (lock them, update them, commit: three,
        once a second per process) held every table of the studio for as long, however
        loaded the host. The renewal changes no key, so it neither waits for those
        commits nor makes them wait."""
        held = self.held()
        if not held:
            return set()
        m = self.marker
        which = " OR ".join([f"(table_id = {m} AND token = {m})"] * len(held))
        params: list[Any] = [self.ttl_ms, self.node_id]
        for table_id, token in sorted(held.items()):
            params += [table_id, token]
        sql = (
            f"UPDATE studio_leases SET expires_ms = {self._now} + {m}"
            f" WHERE owner = {m} AND ({which}) RETURNING table_id"
        )
        if self.dialect == "postgresql":
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                ours = {row[0] for row in conn.exec_driver_sql(sql, tuple(params))}
        else:
            with self.engine.begin() as conn:
                ours = {row[0] for row in conn.exec_driver_sql(sql, tuple(params))}
        lost = set(held) - ours
        if lost:
            with self._guard:
                for table_id in lost:
                    if self._held.get(table_id) == held[table_id]:
                        del self._held[table_id]
            for table_id in lost:
                metrics.LEASES_LOST.labels(table_id, self.node_id).inc()
            log.warning("studio.lease_lost", tables=sorted(lost), node=self.node_id)
        return lost

    def release(self, table_id: str) -> None:
        """Hand the table back (a clean stop or a rebalance): free for anyone at once."""
        with self._guard:
            token = self._held.pop(table_id, None)
        if token is None:
            return
        m = self.marker
        with self.engine.begin() as conn:
            conn.exec_driver_sql(
                "UPDATE studio_leases SET owner = NULL, owner_url = NULL, expires_ms = 0"
                f" WHERE table_id = {m} AND owner = {m} AND token = {m}",
                (table_id, self.node_id, token),
            )
        log.info("studio.lease_released", table_id=table_id, token=token, node=self.node_id)

    def forget(self, table_id: str) -> None:
        with self._guard:
            self._held.pop(table_id, None)

    # -- who is alive, who holds what --------------------------------------------------
    def heartbeat(self) -> list[Member]:
        """Record that this node is alive; the members alive now (this one included)."""
        m = self.marker
        with self.engine.begin() as conn:
            now = conn.exec_driver_sql(f"SELECT {self._now}").scalar_one()
            updated = conn.exec_driver_sql(
                f"UPDATE studio_members SET heartbeat_ms = {m}, url = {m} WHERE node_id = {m}",
                (now, self.url, self.node_id),
            ).rowcount
            if not updated:
                conn.exec_driver_sql(
                    "INSERT INTO studio_members (node_id, url, heartbeat_ms, started_ms)"
                    f" VALUES ({m}, {m}, {m}, {m})",
                    (self.node_id, self.url, now, now),
                )
            rows = conn.exec_driver_sql(
                f"SELECT node_id, url, heartbeat_ms FROM studio_members WHERE heartbeat_ms > {m}"
                " ORDER BY node_id",
                (now - self.ttl_ms,),
            ).all()
        return [Member(r.node_id, r.url, r.heartbeat_ms) for r in rows]

    def leave(self) -> None:
        m = self.marker
        with self.engine.begin() as conn:
            conn.exec_driver_sql(f"DELETE FROM studio_members WHERE node_id = {m}", (self.node_id,))

    def directory(self, table_ids: Iterable[str] | None = None) -> dict[str, LeaseInfo]:
        """Every lease (or those of ``table_ids``) as the database sees it now."""
        m = self.marker
        sql = (
            f"SELECT table_id, owner, owner_url, token, expires_ms, {self._now} AS now_ms"
            " FROM studio_leases"
        )
        params: tuple[str, ...] = ()
        if table_ids is not None:
            marks, params = _in(table_ids, m)
            if not params:
                return {}
            sql += f" WHERE table_id IN ({marks})"
        with self.engine.connect() as conn:
            rows = conn.exec_driver_sql(sql, params).all()
        return {
            r.table_id: LeaseInfo(r.table_id, r.owner, r.owner_url, r.token, r.expires_ms, r.now_ms)
            for r in rows
        }

    # -- the fence -----------------------------------------------------------------------
    def _fence_select(self, marks: str) -> str:
        return (
            f"SELECT table_id, owner, token, expires_ms, {self._now} AS now_ms"
            f" FROM studio_leases WHERE table_id IN ({marks}){self._lock_clause(FENCE_LOCK)}"
        )

    def check(self, connection: Connection, table_ids: Iterable[str]) -> None:
        """Refuse (raise :class:`LeaseLost`) unless this process holds every one of these
        tables' leases with its current token, unexpired. Tables neither configured in
        this studio nor leased by anyone (accounts, principals) are not fenced."""
        ids = frozenset(table_ids)
        if not ids:
            return
        marks, params = _in(sorted(ids), self.marker)
        self.verify(list(connection.exec_driver_sql(self._fence_select(marks), params)), ids)

    def fence_sql(self, tables: frozenset[str]) -> str | None:
        """The fence as one statement for the log's lock round trip (PostgreSQL): the
        lease rows locked (:data:`FENCE_LOCK`) right after the log's lock is taken, so a
        takeover (``FOR UPDATE``) waits for this transaction's commit, and a lease checked then
        cannot change hands before it. Table ids go in as literals, so only ids of plain
        characters are folded in; any other id is checked at commit, with parameters."""
        if self.dialect != "postgresql" or not tables:
            return None
        if not all(_PLAIN_ID.fullmatch(t) for t in tables):
            return None
        return self._fence_select(", ".join(f"'{t}'" for t in sorted(tables)))

    def guard_sql(self, tables: frozenset[str]) -> list[tuple[str, tuple[Any, ...]]] | None:
        """The fence as one statement that fails unless this process holds every one of
        these tables' leases with its token, unexpired, reading the rows ``FOR KEY SHARE`` as
        :meth:`fence_sql` does (a takeover waits for the commit): for a commit sent in one
        round trip (PostgreSQL), which cannot look at rows before its COMMIT. None when a
        table is not held here (the usual way refuses it, or lets an unfenced table by)."""
        if self.dialect != "postgresql":
            return None
        held = self.held()
        if any(t not in held for t in tables):
            return None
        if not tables:
            return []
        ids = sorted(tables)
        pairs = ", ".join(["(%s, %s)"] * len(ids))
        sql = (
            f"SELECT (CASE WHEN count(*) = {len(ids)} THEN '0'"
            " ELSE 'livetable lease lost' END)::int"
            f" FROM (SELECT 1 FROM studio_leases WHERE (table_id, token) IN ({pairs})"
            f" AND owner = %s AND expires_ms > {self._now} FOR {FENCE_LOCK}) AS fence"
        )
        return [(sql, (*(v for t in ids for v in (t, held[t])), self.node_id))]

    def verify(self, rows: Sequence[Any], tables: frozenset[str]) -> None:
        """Raise :class:`LeaseLost` unless ``rows`` (the lease rows of ``tables``, read
        under a lock) show this process holding each fenced table with its token."""
        # rows: (table_id, owner, token, expires_ms, now_ms), driver tuples or Rows
        found = {r[0]: _FenceRow(*r) for r in rows}
        held = self.held()
        for table_id in sorted(tables):
            row = found.get(table_id)
            if row is None and table_id not in self.fenced:
                continue
            token = held.get(table_id)
            if (
                row is None
                or token is None
                or row.owner != self.node_id
                or row.token != token
                or row.expires_ms <= row.now_ms
            ):
                owner = row.owner if row is not None else None
                raise LeaseLost(
                    f"table {table_id} is not leased to this process ({self.node_id}); "
                    "nothing was written",
                    table_id=table_id,
                    owner=owner if owner != self.node_id else None,
                )

    def install_fence(self, sessions: sessionmaker[Any], store: EventStore | None = None) -> None:
        """Check the fence before every commit of a session that appended table events.

        With the event store too, a transaction that names its table when it takes the
        log's lock has the fence checked there, in the same round trip (PostgreSQL), and
        not again at commit; the commit-time check stays for everything else."""
        if store is not None:
            store.fence = self

        def before_commit(session: Session) -> None:
            pending = EventStore.pending(session)
            if pending:
                tables = {e.table_id for e in pending} - EventStore.fenced(session)
                if tables:
                    self.check(session.connection(), tables)

        sa_event.listen(sessions, "before_commit", before_commit)
