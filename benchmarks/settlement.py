"""Settling one round of 100k bets through the table service, against a raw bulk insert.

Run: ``python benchmarks/settlement.py [--bets N] [--db URL]``. The bets are placed, then
the round's fourth card is scanned: that one command decides the outcome, settles every
bet with the rules core, appends the events to the hash-chained log and projects bets,
ledger and balances, in one durable transaction. The yardstick is a raw ``executemany``
insert of as many rows on the same database (one transaction). Goal: settlement <= 2x.
A settlement writes one row per bet (its return entry in the ledger; bets are a view),
so "raw same rows" is as many raw inserts into a table with the ledger's indexes.

``--round-bets N`` (say 100, a studio's round) measures instead the card that settles a
round of N bets on N accounts of two operators, round after round (``--rounds``, up to 28:
one shoe), against a plain card of the same rounds and a durable one-row commit measured
in the same run: the settling card's wall time and its process CPU, p50 and p90, and each
as x that commit.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

from scratch import one_row_commits, scratch_runtime
from sqlalchemy import BigInteger, Column, MetaData, String, Table, insert

from table_service.logs import configure_logging
from table_service.runtime import Runtime
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
    ``rows`` return entries inserted into a scratch table shaped like ``ledger_entries``
    (the same columns and indexes: one return per bet, by account), after as many stake
    entries (the settlement's own rows go into a ledger that already holds the stakes)."""
    tag = uuid.uuid4().hex[:8]
    marker = "?" if runtime.engine.dialect.paramstyle == "qmark" else "%s"
    ledger = f"bench_ledger_{tag}"
    key = "INTEGER PRIMARY KEY" if runtime.engine.dialect.name == "sqlite" else "SERIAL PRIMARY KEY"
    ids = [new_bet_id() for _ in range(rows)]
    insert_sql = (
        f"INSERT INTO {ledger} (account_id, amount, kind, bet_id, seq, result) VALUES "
        f"({marker}, {marker}, {marker}, {marker}, {marker}, {marker})"
    )
    with runtime.engine.begin() as conn:
        conn.exec_driver_sql(
            f"CREATE TABLE {ledger} (id {key}, account_id VARCHAR(64), amount BIGINT,"
            " kind VARCHAR(16), bet_id VARCHAR(64), seq BIGINT, result VARCHAR(16),"
            " UNIQUE (bet_id, kind))"
        )
        conn.exec_driver_sql(f"CREATE INDEX ix_{ledger} ON {ledger} (account_id, id)")
        stakes = [(f"acct-{i % ACCOUNTS}", -100, "stake", b, 5, None) for i, b in enumerate(ids)]
        conn.exec_driver_sql(insert_sql, stakes)
    returns = [(f"acct-{i % ACCOUNTS}", 200, "return", b, 7, "win") for i, b in enumerate(ids)]
    start = time.perf_counter()
    with runtime.engine.begin() as conn:
        conn.exec_driver_sql(insert_sql, returns)
    elapsed = time.perf_counter() - start
    with runtime.engine.begin() as conn:
        conn.exec_driver_sql(f"DROP TABLE {ledger}")
    return elapsed


async def dealing_table(
    runtime: Runtime, table_id: str, bets: int, accounts: int, owners: tuple[str, ...]
) -> TableService:
    """A baccarat table taking up to ``bets`` bets a request, its shoe in and burnt, with
    ``accounts`` funded accounts (``acct-N``, owned in turn by ``owners``)."""
    config = TableConfig(
        table_id=table_id,
        betting_seconds=600,
        limits=StakeLimits(min_stake=1, max_stake=10**9),
        max_bets_per_request=bets,
    )
    service = TableService(runtime, config)
    await service.start(with_reader=False)
    for n in range(accounts):
        item = Transfer(f"acct-{n}", 10**12, f"seed-{n}", "credit")
        await asyncio.to_thread(transfer, runtime, item, actor=owners[n % len(owners)])
    await service.execute(c.InsertShoe(), actor=ACTOR)
    await service.execute(c.CardScanned("AS"), actor=ACTOR)  # indicator: burn one more
    await service.execute(c.CardScanned("2S"), actor=ACTOR)
    return service


async def settle_round(runtime: Runtime, bets: int) -> tuple[float, float, int]:
    """(seconds placing, seconds settling, events appended by the settling command)."""
    service = await dealing_table(runtime, "bench-settle", bets, ACCOUNTS, (ACTOR,))
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


SUITS = "HDCS"
MAX_ROUNDS = 28  # a shoe's 8 decks, the burnt 2S taken out: 7 rounds a suit


async def timed(service: TableService, command: c.Command) -> tuple[float, float, Any]:
    """(wall seconds, process CPU seconds, outcome) of one command."""
    wall, cpu = time.perf_counter(), time.process_time()
    outcome = await service.execute(command, actor=ACTOR)
    return time.perf_counter() - wall, time.process_time() - cpu, outcome


async def settling_cards(runtime: Runtime, bets: int, rounds: int) -> dict[str, list[float]]:
    """Rounds of ``bets`` bets on as many accounts (two operators), each settled by its
    fourth card (player natural 9): that card's and the round's third card's times."""
    operators = ("operator:a", "operator:b")
    service = await dealing_table(runtime, "bench-settling-card", bets, bets, operators)
    times: dict[str, list[float]] = {"settling": [], "settling_cpu": [], "plain": []}
    for r in range(rounds):
        await service.execute(c.OpenBetting(), actor=ACTOR)
        for o, operator in enumerate(operators):
            requests = tuple(
                c.BetRequest(
                    new_bet_id(), f"r{r}-{n}", f"acct-{n}", BET_TYPES[n % len(BET_TYPES)], 100
                )
                for n in range(o, bets, 2)
            )
            await service.execute(c.PlaceBets(requests), actor=operator)
        await service.execute(c.CloseBetting(), actor=ACTOR)
        suit = SUITS[r % 4]
        for card in ("9", "2"):
            await service.execute(c.CardScanned(card + suit), actor=ACTOR)
        wall, _, _ = await timed(service, c.CardScanned("K" + suit))
        times["plain"].append(wall)
        wall, cpu, outcome = await timed(service, c.CardScanned("3" + suit))
        assert any(e.type == "bets_settled" for e in outcome.events), outcome.events
        times["settling"].append(wall)
        times["settling_cpu"].append(cpu)
    await service.stop()
    return times


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def settling_card_report(db: str | None, bets: int, rounds: int) -> None:
    with scratch_runtime(db) as runtime:
        backend = runtime.engine.dialect.name
        times = asyncio.run(settling_cards(runtime, bets, rounds))
        floor = quantile(one_row_commits(runtime.engine, 200), 0.5)
    print(f"backend            {backend}")
    print(f"rounds             {rounds} of {bets} bets on {bets} accounts")
    print(f"one durable commit p50 {floor * 1000:.2f} ms; each figure p50 / p90 and x that commit:")
    for label, key in (
        ("settling card wall", "settling"),
        ("settling card CPU ", "settling_cpu"),
        ("plain card wall   ", "plain"),
    ):
        p50, p90 = quantile(times[key], 0.5), quantile(times[key], 0.9)
        print(
            f"  {label}  {p50 * 1000:7.2f} / {p90 * 1000:7.2f} ms"
            f"  {p50 / floor:6.2f}x / {p90 / floor:6.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bets", type=int, default=100_000)
    parser.add_argument("--db", default=None, help="database URL (default: SQLite in a temp dir)")
    parser.add_argument("--round-bets", type=int, default=0, help="time a settling card instead")
    parser.add_argument("--rounds", type=int, default=MAX_ROUNDS)
    args = parser.parse_args()
    configure_logging(level="WARNING")
    if args.round_bets:
        settling_card_report(args.db, args.round_bets, min(args.rounds, MAX_ROUNDS))
        return
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
    print(f"raw same rows      {same:8.3f} s  ({args.bets} ledger-shaped inserts, one transaction)")
    print(f"ratio to same rows {settling / same:8.2f} x")


if __name__ == "__main__":
    main()
