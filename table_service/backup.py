"""Backing up a studio's database while its tables run, and restoring it, verified.

SQLite: SQLite's online backup API copies the database page by page in one step under a
read transaction, so the copy is the database as of one commit, while the tables keep
writing (WAL: a reader never blocks a writer). PostgreSQL: ``pg_dump`` in its custom
format, which reads in one snapshot too; restored with ``pg_restore`` into an empty
database.

Before copying, a checkpoint is signed at the log's head, so the backup ends with a
signed checkpoint covering everything in it. A backup is checked before it is trusted,
and a restore after it is installed: the chain, every signed checkpoint (with the key
the operator trusts, never one read from the backup) and the read models against the log.
A manifest beside the backup file records what it holds (events, head hash, the last
checkpoint's size and root, a SHA-256 of the file for SQLite).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import make_url


class BackupError(Exception):
    """A backup or restore that could not be made or does not check out (one clear line)."""


@dataclass(frozen=True)
class LogSummary:
    """What a copy of the log holds, and whether it verifies."""

    events: int
    head_hash: str | None
    checkpoint_size: int
    checkpoint_root: str | None
    checkpoints_verified: int
    schema: str | None
    problems: tuple[str, ...]


def sqlite_path(database_url: str) -> Path | None:
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def read_only_engine(path: Path) -> Any:
    """An engine on a SQLite file that never writes to it (not even its journal mode)."""
    from sqlalchemy import create_engine

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)

    return create_engine("sqlite://", creator=connect)


def summarise(
    engine: Any, trusted_keys: Any, *, read_models: bool = True, allow_unsigned: bool = False
) -> LogSummary:
    """Verify the log in ``engine``'s database (chain, signed checkpoints, read models)."""
    from sqlalchemy import select

    from audit.db import make_sessionmaker
    from audit.models import AuditCheckpoint
    from audit.store import EventStore
    from audit.verify import verify_database
    from table_service.regulator.readmodels import check_read_models
    from table_service.runtime import current_revision

    try:
        sessions = make_sessionmaker(engine)
        with sessions() as session:
            report = verify_database(session, trusted_keys, allow_unsigned_tail=allow_unsigned)
            seq, head = EventStore.head(session)
            last = session.scalars(
                select(AuditCheckpoint).order_by(AuditCheckpoint.size.desc()).limit(1)
            ).first()
            problems = [] if report.ok else [str(report.problem)]
            if report.ok and read_models:
                problems += check_read_models(session)
        schema = current_revision(engine)
    finally:
        engine.dispose()
    return LogSummary(
        events=seq,
        head_hash=head if seq else None,
        checkpoint_size=last.size if last is not None else 0,
        checkpoint_root=last.root_hash if last is not None else None,
        checkpoints_verified=report.checkpoints_checked,
        schema=schema,
        problems=tuple(problems),
    )


def sign_head(runtime: Any) -> int | None:
    """A signed checkpoint at the log's head now (through the log's own lock)."""
    with runtime.sessions.begin() as session:
        checkpoint = runtime.store.checkpoint(session)
    return None if checkpoint is None else int(checkpoint.size)


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def manifest_path(backup: Path) -> Path:
    return backup.with_name(backup.name + ".manifest.json")


def write_manifest(backup: Path, backend: str, summary: LogSummary, public_key: str) -> None:
    body = {
        "backend": backend,
        "file": backup.name,
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sha256": _sha256(backup),
        "public_key": public_key,
        **{k: v for k, v in asdict(summary).items() if k != "problems"},
    }
    tmp = manifest_path(backup).with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    os.replace(tmp, manifest_path(backup))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- SQLite ----------------------------------------------------------------------------------
def backup_sqlite(source: Path, out: Path) -> None:
    """Copy the live database ``source`` to ``out`` with the online backup API."""
    if not source.is_file():
        raise BackupError(f"no database at {source}")
    tmp = out.with_name(f".{out.name}.partial")
    tmp.unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    try:
        dst = sqlite3.connect(tmp)
        try:
            src.backup(dst)  # one step: one read transaction, one commit's state
            dst.execute("PRAGMA journal_mode=DELETE")  # a single self-contained file
            ok = dst.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            dst.close()
    except sqlite3.Error as exc:
        tmp.unlink(missing_ok=True)
        raise BackupError(f"backup of {source} failed: {exc}") from exc
    finally:
        src.close()
    if ok != "ok":
        tmp.unlink(missing_ok=True)
        raise BackupError(f"the copy of {source} fails its integrity check: {ok}")
    _fsync(tmp)
    os.replace(tmp, out)


def restore_sqlite(backup: Path, target: Path, *, replace: bool) -> Path | None:
    """Install ``backup`` as the database ``target``; the database it replaces is kept
    beside it (returned). The target's process must be stopped."""
    with contextlib.closing(sqlite3.connect(f"file:{backup}?mode=ro", uri=True)) as check:
        try:
            ok = check.execute("PRAGMA integrity_check").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"{backup} is not a SQLite database: {exc}") from exc
    if ok != "ok":
        raise BackupError(f"{backup} fails its integrity check: {ok}")
    kept = None
    if target.exists():
        if not replace:
            raise BackupError(
                f"{target} exists: stop the service and give --replace to put the backup in "
                "its place (the current database is kept beside it)"
            )
        kept = target.with_name(f"{target.name}.replaced-{time.strftime('%Y%m%dT%H%M%SZ')}")
        _move_database(target, kept)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.restoring")
    tmp.unlink(missing_ok=True)
    shutil.copyfile(backup, tmp)
    _fsync(tmp)
    os.replace(tmp, target)
    return kept


def _move_database(path: Path, to: Path) -> None:
    """Fold the WAL into ``path`` (so it is whole alone) and move it to ``to``."""
    with contextlib.closing(sqlite3.connect(path, timeout=30)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode=DELETE")
    os.replace(path, to)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


# -- PostgreSQL -------------------------------------------------------------------------------
def postgres_tool(name: str) -> str:
    """``pg_dump`` / ``pg_restore``: on PATH, else Debian's newest."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    tool = found[-1] if found else shutil.which(name)
    if tool is None:
        raise BackupError(f"{name} not found (Debian: apt-get install postgresql-client)")
    return tool


def libpq(database_url: str) -> tuple[str, dict[str, str]]:
    """The libpq URL of a SQLAlchemy PostgreSQL URL, its password in the environment."""
    url = make_url(database_url)
    env = dict(os.environ)
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    plain = url.set(drivername="postgresql", password=None)
    return plain.render_as_string(hide_password=False), env


def backup_postgres(runtime: Any, out: Path) -> tuple[int, str | None, int]:
    """``pg_dump`` of a sealed snapshot: (events, head hash, checkpoint size) it holds.

    Appends wait on the log's advisory lock. Held for a moment at session level, it lets
    this connection sign a checkpoint at the head and open a REPEATABLE READ snapshot
    whose head is that checkpoint, then appends go on while ``pg_dump --snapshot`` copies
    that snapshot: the dump ends exactly at a signed checkpoint, the tables wait a few
    milliseconds, never for the dump."""
    from sqlalchemy.orm import Session

    from audit.store import ADVISORY_LOCK_SQL

    target, env = libpq(runtime.settings.resolved_database_url)
    tmp = out.with_name(f".{out.name}.partial")
    with runtime.engine.connect() as conn:
        conn.exec_driver_sql(f"SELECT pg_advisory_lock({ADVISORY_LOCK_SQL})")
        conn.commit()
        locked = True
        try:
            with Session(bind=conn) as session:
                checkpoint = runtime.store.checkpoint(session)
                size = int(checkpoint.size) if checkpoint is not None else 0
                session.commit()
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
            snapshot = conn.exec_driver_sql("SELECT pg_export_snapshot()").scalar_one()
            row = conn.exec_driver_sql(
                "SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1"
            ).first()
            seq, head = (int(row[0]), str(row[1])) if row else (0, None)
            conn.exec_driver_sql(f"SELECT pg_advisory_unlock({ADVISORY_LOCK_SQL})")
            locked = False
            done = subprocess.run(
                [postgres_tool("pg_dump"), "--format=custom", "--no-owner", "--no-privileges",
                 f"--snapshot={snapshot}", f"--file={tmp}", target],
                env=env, capture_output=True, text=True, check=False,
            )  # fmt: skip
            conn.rollback()
        finally:
            if locked:
                conn.rollback()
                conn.exec_driver_sql(f"SELECT pg_advisory_unlock({ADVISORY_LOCK_SQL})")
                conn.commit()
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise BackupError(f"pg_dump failed: {done.stderr.strip()}")
    _fsync(tmp)
    os.replace(tmp, out)
    return seq, head, size


def seal_sqlite_copy(path: Path, store: Any) -> int | None:
    """Sign a checkpoint at the copy's own head (events appended between the live log's
    checkpoint and the copy are then signed too): the copy ends sealed."""
    from sqlalchemy import create_engine

    from audit.db import make_sessionmaker

    engine = create_engine(
        "sqlite://", creator=lambda: sqlite3.connect(path, check_same_thread=False)
    )
    try:
        with make_sessionmaker(engine).begin() as session:
            checkpoint = store.checkpoint(session)
    finally:
        engine.dispose()
    return None if checkpoint is None else int(checkpoint.size)


def restore_postgres(backup: Path, database_url: str) -> None:
    """``pg_restore`` into the (empty) database of ``database_url``."""
    from sqlalchemy import create_engine, inspect

    engine = create_engine(database_url)
    try:
        if "audit_events" in inspect(engine).get_table_names():
            raise BackupError(
                "the database to restore into already holds a livetable log: create an empty "
                "one (createdb) and point LIVETABLE_DATABASE_URL at it"
            )
    finally:
        engine.dispose()
    target, env = libpq(database_url)
    done = subprocess.run(
        [postgres_tool("pg_restore"), "--exit-on-error", "--no-owner", "--no-privileges",
         "--single-transaction", f"--dbname={target}", str(backup)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise BackupError(f"pg_restore failed: {done.stderr.strip()}")
