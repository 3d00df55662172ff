"""Settling one round of 100k bets through the table service, against a raw bulk insert.

Run: ``python benchmarks/settlement.py [--bets N] [--db URL]``. The bets are placed, then
the round's fourth card is scanned: that one command decides the outcome, settles every
bet with the rules core, appends the events to the hash-chained log and projects bets,
ledger and balances, in one durable transaction. The yardstick is a raw ``executemany``
insert of as many rows on the same database (one transaction). Goal: settlement <= 2x.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from sqlalchemy import BigInteger, Column, MetaData, String, Table, insert

from table_service.logs import configure_logging
from table_service.runtime import Runtime
from table_service.scratch import scratch_runtime
from table_service.table import commands as c
from table_service.table.config import StakeLimits, TableConfig
from table_service.table.service import TableService, new_bet_id
from table_service.table.wallet import Transfer, transfer

ACTOR = "bench:settlement"
ACCOUNTS = 1000
BET_TYPES = ("player", "banker", "tie", "player_pair", "banker_pair", "big", "small")


def raw_insert(runtime: Runtime, rows: int) -> float:
    """Seconds for one transaction inserting ``rows`` ledger-like rows with executemany."""
    meta = MetaData()
    scratch = Table(
        f"bench_raw_{uuid.uuid4().hex[:8]}",
        meta,
        Column("bet_id", String(64), primary_key=True),
        Column("account_id", String(64)),
        Column("kind", String(16)),
        Column("amount", BigInteger),
        Column("seq", BigInteger),
    )
    meta.create_all(runtime.engine)
    data = [
        {
            "bet_id": uuid.uuid4().hex,
            "account_id": f"acct-{i % ACCOUNTS}",
            "kind": "return",
            "amount": 1000 + i % 7,
            "seq": i,
        }
        for i in range(rows)
    ]
    start = time.perf_counter()
    with runtime.engine.begin() as conn:
        conn.execute(insert(scratch), data)
    elapsed = time.perf_counter() - start
    meta.drop_all(runtime.engine)
    return elapsed


def raw_same_rows(runtime: Runtime, rows: int) -> float:
    """Seconds for one transaction writing the rows a settlement writes, by raw executemany:
    ``rows`` bet rows updated by primary key (status, result, returned) and ``rows`` ledger
    rows inserted, on scratch tables shaped like ``bets`` and ``ledger_entries``."""
    tag = uuid.uuid4().hex[:8]
    marker = "?" if runtime.engine.dialect.paramstyle == "qmark" else "%s"
    bets, ledger = f"bench_bets_{tag}", f"bench_ledger_{tag}"
    ids = [uuid.uuid4().hex for _ in range(rows)]
    with runtime.engine.begin() as conn:
        conn.exec_driver_sql(
            f"CREATE TABLE {bets} (bet_id VARCHAR(64) PRIMARY KEY, account_id VARCHAR(64),"
            " stake BIGINT, status VARCHAR(16), result VARCHAR(16), returned BIGINT,"
            " closed_seq BIGINT)"
        )
        conn.exec_driver_sql(
            f"CREATE TABLE {ledger} (id INTEGER PRIMARY KEY, account_id VARCHAR(64),"
            " amount BIGINT, kind VARCHAR(16), bet_id VARCHAR(64), seq BIGINT)"
            if runtime.engine.dialect.name == "sqlite"
            else f"CREATE TABLE {ledger} (id SERIAL PRIMARY KEY, account_id VARCHAR(64),"
            " amount BIGINT, kind VARCHAR(16), bet_id VARCHAR(64), seq BIGINT)"
        )
        conn.exec_driver_sql(
            f"INSERT INTO {bets} (bet_id, account_id, stake, status) VALUES "
            f"({marker}, {marker}, 100, 'open')",
            [(bet_id, f"acct-{i % ACCOUNTS}") for i, bet_id in enumerate(ids)],
        )
    updates = [("settled", "win", 200, 7, bet_id) for bet_id in ids]
    inserts = [(f"acct-{i % ACCOUNTS}", 200, "return", bet_id, 7) for i, bet_id in enumerate(ids)]
    start = time.perf_counter()
    with runtime.engine.begin() as conn:
        conn.exec_driver_sql(
            f"UPDATE {bets} SET status = {marker}, result = {marker}, returned = {marker},"
            f" closed_seq = {marker} WHERE bet_id = {marker}",
            updates,
        )
        conn.exec_driver_sql(
            f"INSERT INTO {ledger} (account_id, amount, kind, bet_id, seq) VALUES "
            f"({marker}, {marker}, {marker}, {marker}, {marker})",
            inserts,
        )
    elapsed = time.perf_counter() - start
    with runtime.engine.begin() as conn:
        conn.exec_driver_sql(f"DROP TABLE {bets}")
        conn.exec_driver_sql(f"DROP TABLE {ledger}")
    return elapsed


async def settle_round(runtime: Runtime, bets: int) -> tuple[float, float, int]:
    """(seconds placing, seconds settling, events appended by the settling command)."""
    config = TableConfig(
        table_id="bench-settle",
        betting_seconds=600,
        limits=StakeLimits(min_stake=1, max_stake=10**9),
        max_bets_per_request=bets,
    )
    service = TableService(runtime, config)
    await service.start(with_reader=False)
    for account in range(ACCOUNTS):
        item = Transfer(f"acct-{account}", 10**12, f"seed-{account}", "credit")
        await asyncio.to_thread(transfer, runtime, item, actor=ACTOR)
    await service.execute(c.InsertShoe(), actor=ACTOR)
    await service.execute(c.CardScanned("AS"), actor=ACTOR)  # indicator: burn one more
    await service.execute(c.CardScanned("2S"), actor=ACTOR)
    await service.execute(c.OpenBetting(), actor=ACTOR)
    requests = [
        c.BetRequest(
            new_bet_id(), f"k{i}", f"acct-{i % ACCOUNTS}", BET_TYPES[i % len(BET_TYPES)], 100
        )
        for i in range(bets)
    ]
    start = time.perf_counter()
    for first in range(0, bets, 5000):
        await service.execute(c.PlaceBets(tuple(requests[first : first + 5000])), actor=ACTOR)
    placing = time.perf_counter() - start
    await service.execute(c.CloseBetting(), actor=ACTOR)
    for card in ("9H", "2C", "KD"):
        await service.execute(c.CardScanned(card), actor=ACTOR)
    start = time.perf_counter()
    outcome = await service.execute(c.CardScanned("3S"), actor=ACTOR)  # player natural 9
    settling = time.perf_counter() - start
    await service.stop()
    assert service.state.round is not None and service.state.round.phase == "settled"
    return placing, settling, len(outcome.events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bets", type=int, default=100_000)
    parser.add_argument("--db", default=None, help="database URL (default: SQLite in a temp dir)")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    with scratch_runtime(args.db) as runtime:
        backend = runtime.engine.dialect.name
        placing, settling, events = asyncio.run(settle_round(runtime, args.bets))
        raw = raw_insert(runtime, args.bets)
        same = raw_same_rows(runtime, args.bets)
    print(f"backend            {backend}")
    print(f"bets in the round  {args.bets}")
    print(f"placing            {placing:8.3f} s  ({args.bets / placing:,.0f} bets/s)")
    print(f"settlement         {settling:8.3f} s  ({events} events, one transaction)")
    print(f"raw executemany    {raw:8.3f} s  ({args.bets} rows, one transaction)")
    print(f"ratio              {settling / raw:8.2f} x  (goal <= 2x)")
    print(
        f"raw same rows      {same:8.3f} s  ({args.bets} bet updates + {args.bets} ledger"
        " inserts, one transaction)"
    )
    print(f"ratio to same rows {settling / same:8.2f} x")


if __name__ == "__main__":
    main()
