"""A migrated runtime on a throw-away database, for benchmarks and one-off checks.

SQLite in a temporary folder by default; given a PostgreSQL URL, a fresh schema on that
server, dropped afterwards, so a measurement never touches a studio's data.

A run that is killed (SIGKILL, a lost terminal) cannot drop its schema, so each run
holds a session advisory lock named for its schema while it lives (the server lets go
of it when the run's connection dies), and the next run drops every ``scratch_*``
schema whose lock is free and whose log has been quiet for :data:`STALE_SECONDS` (a
schema of another run still going is never touched). JetStream streams of killed
``studio_load`` runs go the same way (:func:`drop_stale_streams`).
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    Table,
    create_engine,
    insert,
    text,
)

from table_service.config import Settings
from table_service.runtime import Runtime

PREFIX = "scratch_"
STALE_SECONDS = 600.0  # a scratch schema's log or a benchmark's stream this long quiet
_LOCK_CLASS = "livetable-scratch"  # the advisory lock's first key (two-int key space)


def commit_table(meta: MetaData, prefix: str) -> Table:
    """A throw-away table of one small row a commit, named ``prefix`` and a random suffix:
    the yardstick of a minimal durable transaction that the benchmarks measure against."""
    return Table(
        f"{prefix}_{uuid.uuid4().hex[:8]}",
        meta,
        Column("id", Integer, primary_key=True),
        Column("value", BigInteger),
    )


def one_row_commits(engine: Engine, samples: int, *, pace: float = 0.0) -> list[float]:
    """Seconds for each of ``samples`` minimal durable transactions (one small row
    inserted, committed) on a throw-away table: the floor the benchmarks compare with.
    ``pace``: seconds between two commits (back-to-back commits queue their flushes behind
    each other and make a slower, kinder yardstick than a table's spaced cards)."""
    meta = MetaData()
    scratch = commit_table(meta, "bench_commit")
    meta.create_all(engine)
    times = []
    for i in range(samples):
        start = time.perf_counter()
        with engine.begin() as conn:
            conn.execute(insert(scratch).values(id=i, value=i))
        times.append(time.perf_counter() - start)
        if pace:
            time.sleep(pace)
    meta.drop_all(engine)
    return times


def backend_pid(engine: Engine) -> int | None:
    """The pid of the PostgreSQL backend serving ``engine``'s pooled connection, when the
    server runs on this host and its run-queue wait can be read (:func:`cpu_wait`); None
    otherwise (SQLite, a server elsewhere, no ``/proc``). A benchmark's yardstick commit
    runs on one connection, taken from the pool and given back in turn: the same backend."""
    if engine.dialect.name != "postgresql" or engine.url.host not in LOCAL_HOSTS:
        return None
    with engine.connect() as conn:
        pid = _pid_of(conn)
    if pid is None or cpu_wait(pid) is None:
        return None
    return pid


LOCAL_HOSTS = (None, "", "localhost", "127.0.0.1", "::1")


def _pid_of(conn: Connection) -> int | None:
    info = getattr(conn.connection.dbapi_connection, "info", None)
    return getattr(info, "backend_pid", None)


def cpu_wait(pid: int) -> float | None:
    """Seconds process ``pid`` has spent runnable but waiting for a CPU since it started
    (Linux ``/proc/<pid>/schedstat``, its second figure), if it is a PostgreSQL server
    process of this host; None otherwise. Taken before and after a commit, it says how much
    of the commit the server spent waiting for a CPU, mostly once its WAL flush has
    completed (a process woken by the disk waits for the CPU it lands on), rather than
    working or flushing."""
    try:
        if Path(f"/proc/{pid}/comm").read_text().strip() != "postgres":
            return None
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def timed_commit(
    engine: Engine, table: Table, key: int, pid: int | None
) -> tuple[float, float | None]:
    """One minimal durable transaction (one small row inserted with ``key``, committed) on
    ``table``, as :func:`one_row_commits` times it: its seconds, and of them the seconds the
    server's backend ``pid`` (:func:`backend_pid`) waited for a CPU (None if unknown, or if
    the pool's connection was replaced meanwhile)."""
    before = cpu_wait(pid) if pid is not None else None
    start = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(insert(table).values(id=key, value=0))
        same = pid is not None and _pid_of(conn) == pid
    took = time.perf_counter() - start
    after = cpu_wait(pid) if same and pid is not None and before is not None else None
    return took, (after - before if after is not None and before is not None else None)


def paced_commits(engine: Engine, samples: int, every: float) -> tuple[list[float], list[float]]:
    """``samples`` minimal durable transactions ``every`` seconds apart (the cadence of a
    studio's commit sampler, where :func:`one_row_commits` runs them back to back: a
    process and a backend woken from a sleep are slower than ones kept busy), and the
    backend's wait for a CPU in each where it can be read (:func:`cpu_wait`). On an engine
    of its own, as the sampler's: one pooled connection, so one backend throughout."""
    own = create_engine(engine.url)

    def more(done: int) -> bool:
        if done >= samples:
            return False
        time.sleep(every)
        return True

    try:
        return sampled_commits(own, "bench_paced_commit", more)
    finally:
        own.dispose()


def sampled_commits(
    engine: Engine, prefix: str, more: Callable[[int], bool]
) -> tuple[list[float], list[float]]:
    """Minimal durable transactions (:func:`timed_commit`) on a throw-away table named
    ``prefix`` for as long as ``more`` (given how many are done, it paces them) says, and
    the backend's wait for a CPU in each where it can be read: the loop of
    :func:`paced_commits` and of the studio's commit sampler, paced by a sleep and by its
    pipe."""
    meta = MetaData()
    scratch = commit_table(meta, prefix)
    meta.create_all(engine)
    pid = backend_pid(engine)
    times: list[float] = []
    waits: list[float] = []
    try:
        while more(len(times)):
            took, waited = timed_commit(engine, scratch, len(times), pid)
            times.append(took)
            if waited is not None:
                waits.append(waited)
    finally:
        meta.drop_all(engine)
    return times, waits


def _lock(conn: Connection, schema: str, *, wait: bool) -> bool:
    function = "pg_advisory_lock" if wait else "pg_try_advisory_lock"
    found = conn.execute(
        text(f"SELECT {function}(hashtext(:cls), hashtext(:schema))"),
        {"cls": _LOCK_CLASS, "schema": schema},
    ).scalar()
    return wait or bool(found)


def _quiet_for(conn: Connection, schema: str) -> float | None:
    """Seconds since the schema's last event (None: no log, or an empty one)."""
    has_log = conn.execute(
        text(
            "SELECT 1 FROM information_schema.tables"
            " WHERE table_schema = :s AND table_name = 'audit_events'"
        ),
        {"s": schema},
    ).scalar()
    if not has_log:
        return None
    last = conn.execute(text(f'SELECT MAX(ts) FROM "{schema}".audit_events')).scalar()
    if not last:
        return None
    when = datetime.strptime(last[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return time.time() - when.timestamp()


def drop_stale_schemas(conn: Connection, stale_seconds: float = STALE_SECONDS) -> list[str]:
    """Drop the ``scratch_*`` schemas of runs that died (``conn`` in autocommit): no run
    holds the schema's lock, and its log (if any) has been quiet ``stale_seconds``."""
    dropped = []
    schemas = conn.execute(
        text("SELECT nspname FROM pg_namespace WHERE nspname LIKE :p ORDER BY nspname"),
        {"p": PREFIX.replace("_", r"\_") + "%"},
    ).scalars()
    for schema in list(schemas):
        if not _lock(conn, schema, wait=False):
            continue  # a live run holds it
        try:
            quiet = _quiet_for(conn, schema)
            if quiet is not None and quiet < stale_seconds:
                continue  # a run without the lock (older code) still writing
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            dropped.append(schema)
        finally:
            conn.execute(
                text("SELECT pg_advisory_unlock(hashtext(:cls), hashtext(:schema))"),
                {"cls": _LOCK_CLASS, "schema": schema},
            )
    return dropped


@contextmanager
def scratch_runtime(db: str | None = None) -> Iterator[Runtime]:
    with tempfile.TemporaryDirectory() as tmp:
        if db is None or db.startswith("sqlite"):
            runtime = Runtime.from_settings(
                Settings(data_dir=Path(tmp), database_url=db), upgrade=True
            )
            try:
                yield runtime
            finally:
                runtime.close()
            return
        schema = f"{PREFIX}{uuid.uuid4().hex[:8]}"
        admin = create_engine(db, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
        holder = admin.connect()  # holds the schema's lock for the life of the run
        try:
            for stale in drop_stale_schemas(holder):
                print(f"dropped {stale}: left behind by a run that died", flush=True)
            _lock(holder, schema, wait=True)
            holder.execute(text(f'CREATE SCHEMA "{schema}"'))
            separator = "&" if "?" in db else "?"
            settings = Settings(
                data_dir=Path(tmp),
                database_url=f"{db}{separator}options=-csearch_path%3D{schema}",
            )
            runtime = Runtime.from_settings(settings, upgrade=True)
            try:
                yield runtime
            finally:
                runtime.close()
                holder.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        finally:
            holder.close()
            admin.dispose()


async def drop_stale_streams(
    url: str, prefix: str, keep: str | None = None, stale_seconds: float = STALE_SECONDS
) -> list[str]:
    """Delete the JetStream streams named ``prefix*`` (not ``keep``) with no message for
    ``stale_seconds`` (none since their creation, if empty): a killed benchmark's."""
    import nats

    nc = await nats.connect(url, connect_timeout=5, max_reconnect_attempts=1)
    dropped = []
    try:
        names = await _api(nc, "$JS.API.STREAM.NAMES", None)
        for name in names.get("streams") or []:
            if not name.startswith(prefix) or name == keep:
                continue
            info = await _api(nc, f"$JS.API.STREAM.INFO.{name}", None)
            if "error" in info:
                continue
            stamps = [(info.get("state") or {}).get("last_ts"), info.get("created")]
            if min(_age(s) for s in stamps if s) < stale_seconds:
                continue  # a message (or its creation) within the window: a live run
            with suppress(Exception):
                await nc.jetstream().delete_stream(name)
                dropped.append(name)
    finally:
        await nc.close()
    return dropped


async def _api(nc: Any, subject: str, body: dict[str, Any] | None) -> dict[str, Any]:
    answer = await nc.request(subject, json.dumps(body or {}).encode(), timeout=5)
    parsed: dict[str, Any] = json.loads(answer.data)
    return parsed


def _age(stamp: str) -> float:
    """Seconds since a JetStream time (RFC 3339, nanoseconds; the zero time is old)."""
    if stamp.startswith("0001-"):
        return float("inf")
    when = datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return time.time() - when.timestamp()
