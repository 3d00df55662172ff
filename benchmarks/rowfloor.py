"""The raw floor of bet intake: the same rows written with nothing around them.

Shared by ``bet_intake.py`` and ``peak_betting.py``. Each batch of bets is written as its
bet rows and their stake lines into two scratch tables of the same columns, keys and
indexes as ``placed_bets`` and ``ledger_entries`` (no reference triggers), by one ``COPY``
per table on PostgreSQL or one ``executemany`` on SQLite, and one durable commit per
batch: what a service that did nothing else (no log, no balances, no rules, no checks)
would pay to store the same bets on the same database in the same run.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

BET_COLUMNS = "bet_id, idempotency_key, table_id, round_id, account_id, bet_type, stake, placed_seq"
LEDGER_COLUMNS = "account_id, amount, kind, bet_id, seq"


@dataclass(frozen=True)
class Floor:
    bets: int
    seconds: float
    batch_seconds: list[float]

    @property
    def rows_per_s(self) -> float:
        return self.bets / self.seconds if self.seconds else 0.0

    def batch_p(self, q: float) -> float:
        ordered = sorted(self.batch_seconds)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _ddl(suffix: str, postgres: bool) -> list[str]:
    ident = "BIGSERIAL" if postgres else "INTEGER"
    return [
        f"CREATE TABLE floor_bets_{suffix} (bet_id VARCHAR(64) PRIMARY KEY,"
        " idempotency_key VARCHAR(200) NOT NULL UNIQUE, table_id VARCHAR(64) NOT NULL,"
        " round_id VARCHAR(64) NOT NULL, account_id VARCHAR(64) NOT NULL,"
        " bet_type VARCHAR(32) NOT NULL, stake BIGINT NOT NULL CHECK (stake > 0),"
        " placed_seq BIGINT NOT NULL)",
        f"CREATE INDEX floor_bets_{suffix}_round ON floor_bets_{suffix} (round_id)",
        f"CREATE TABLE floor_ledger_{suffix} (id {ident} PRIMARY KEY,"
        " account_id VARCHAR(64) NOT NULL, amount BIGINT NOT NULL, kind VARCHAR(16) NOT NULL,"
        " bet_id VARCHAR(64), reference VARCHAR(128), seq BIGINT NOT NULL,"
        " result VARCHAR(16), UNIQUE (bet_id, kind))",
        f"CREATE UNIQUE INDEX floor_ledger_{suffix}_ref ON floor_ledger_{suffix} (reference)"
        " WHERE reference IS NOT NULL",
        f"CREATE INDEX floor_ledger_{suffix}_account ON floor_ledger_{suffix} (account_id, id)",
    ]


class FloorTables:
    """The floor's two scratch tables, made once; :meth:`write` stores one batch the way
    the floor does and says how long it took. Dropped by :meth:`drop` (a context manager
    drops them on the way out, even on an error)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.postgres = engine.dialect.name == "postgresql"
        self.suffix = uuid.uuid4().hex[:8]
        with engine.begin() as conn:
            for statement in _ddl(self.suffix, self.postgres):
                conn.exec_driver_sql(statement)

    def __enter__(self) -> FloorTables:
        return self

    def __exit__(self, *_: object) -> None:
        self.drop()

    def drop(self) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS floor_bets_{self.suffix}")
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS floor_ledger_{self.suffix}")

    def write(self, batch: list[tuple[Any, ...]]) -> float:
        """Write one batch of placed-bet rows (the columns of :data:`BET_COLUMNS`) and a
        stake line for each in one transaction; its seconds."""
        suffix = self.suffix
        ledger = [(r[4], -r[6], "stake", r[0], r[7]) for r in batch]
        t0 = time.perf_counter()
        with self.engine.begin() as conn:
            if self.postgres:
                raw = conn.connection.driver_connection
                with raw.cursor() as cursor:
                    for table, columns, rows in (
                        (f"floor_bets_{suffix}", BET_COLUMNS, batch),
                        (f"floor_ledger_{suffix}", LEDGER_COLUMNS, ledger),
                    ):
                        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                            for row in rows:
                                copy.write_row(row)
            else:
                conn.exec_driver_sql(
                    f"INSERT INTO floor_bets_{suffix} ({BET_COLUMNS}) VALUES"
                    " (?, ?, ?, ?, ?, ?, ?, ?)",
                    batch,
                )
                conn.exec_driver_sql(
                    f"INSERT INTO floor_ledger_{suffix} ({LEDGER_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                    ledger,
                )
        return time.perf_counter() - t0


def write_floor(engine: Any, batches: list[list[tuple[Any, ...]]]) -> Floor:
    """Write ``batches`` of placed-bet rows (the columns of :data:`BET_COLUMNS`) and a
    stake line for each, one transaction per batch; the time of it."""
    with FloorTables(engine) as floor:
        started = time.perf_counter()
        times = [floor.write(batch) for batch in batches]
        elapsed = time.perf_counter() - started
    return Floor(sum(len(b) for b in batches), elapsed, times)


def rows_of_keys(engine: Any, keys: list[str]) -> list[tuple[Any, ...]]:
    """The placed-bet rows of these scoped idempotency keys, in the order of ``keys``."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            found = conn.exec_driver_sql(
                f"SELECT {BET_COLUMNS} FROM placed_bets WHERE idempotency_key = ANY(%s)", (keys,)
            ).all()
        else:
            found = []
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                found += conn.exec_driver_sql(
                    f"SELECT {BET_COLUMNS} FROM placed_bets WHERE idempotency_key IN"
                    f" ({', '.join('?' * len(chunk))})",
                    tuple(chunk),
                ).all()
    by_key = {row[1]: tuple(row) for row in found}
    return [by_key[k] for k in keys]


def placed_rows(engine: Any, table_id: str) -> dict[str, tuple[Any, ...]]:
    """The placed-bet rows of a table by the caller's own idempotency key (the part after
    the operator's namespace), to be regrouped as the caller sent them."""
    if not table_id.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"not a table id: {table_id!r}")
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            f"SELECT {BET_COLUMNS} FROM placed_bets WHERE table_id = '{table_id}'"
        ).all()
    return {row[1].split("|", 1)[-1]: tuple(row) for row in rows}
