"""Durable append throughput of the audit event store on SQLite and PostgreSQL.

Run: ``python benchmarks/audit_append.py [--events N] [--pg URL]``. Each commit is durable
(SQLite WAL with synchronous=FULL; PostgreSQL with its default synchronous_commit=on).
Prints events/s for one event per transaction and for batches of 100 per transaction.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text

from audit.store import NewEvent
from table_service.config import Settings
from table_service.logs import configure_logging
from table_service.runtime import Runtime


def run(runtime: Runtime, events: int, batch: int) -> float:
    payload = {"card": "TD", "position": "P1", "stake": 1000, "account": "player-42"}
    start = time.perf_counter()
    done = 0
    while done < events:
        with runtime.sessions.begin() as session:
            runtime.store.append(
                session, [NewEvent("bench", "card_scanned", "bench", payload)] * batch
            )
        done += batch
    return done / (time.perf_counter() - start)


def bench(label: str, settings: Settings, events: int) -> None:
    runtime = Runtime.from_settings(settings, upgrade=True)
    single = run(runtime, events, 1)
    batched = run(runtime, events * 10, 100)
    print(
        f"{label:10s} 1 event/txn: {single:9.0f} events/s   100 events/txn: {batched:9.0f} events/s"
    )
    runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    with tempfile.TemporaryDirectory() as tmp:
        bench("sqlite", Settings(data_dir=Path(tmp)), args.events)
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(args.pg, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:
        print(f"postgresql unreachable, skipped: {exc}")
        return
    try:
        with tempfile.TemporaryDirectory() as tmp:
            url = f"{args.pg}?options=-csearch_path%3D{schema}"
            bench("postgresql", Settings(data_dir=Path(tmp), database_url=url), args.events)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


if __name__ == "__main__":
    main()
