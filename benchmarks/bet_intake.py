"""Bet intake of one table: batch bets per second through the service and through HTTP.

Run: ``python benchmarks/bet_intake.py [--bets N] [--batch B] [--db URL]``. Every batch
is one command: idempotency keys checked, balances read, each bet validated by the rules
core, events appended to the hash-chained log, bets, ledger and balances projected, one
durable commit. The HTTP figure adds the real server (uvicorn, JSON, bearer auth) on
localhost. The floor, measured in the same run on the same database: the same bet rows and
their stake lines, batch by batch, written by one ``COPY`` (PostgreSQL) or ``executemany``
(SQLite) per table and one commit per batch, into tables of the same keys and indexes
(``rowfloor.py``). Each floor batch is written right after the service's batch of the same
rows (untimed reads in between), so that both see the same load: on a shared machine whose
load average moves by several points in a minute, a floor measured after the whole service
run was measured under another load. Goal: >= 20,000 bets/s for one table through the
service, and at least half the floor's rate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import threading
import time
from typing import Any

import httpx
import uvicorn
from rowfloor import FloorTables, rows_of_keys
from scratch import scratch_runtime

from table_service.app import build_app
from table_service.logs import configure_logging
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table import commands as c
from table_service.table.config import StakeLimits, TableConfig
from table_service.table.service import TableService, new_bet_id
from table_service.table.wallet import Transfer, transfer

# The operator whose accounts take the bets (accounts belong to the operator that funds them).
ACTOR = "operator:bench-operator"
ACCOUNTS = 1000
BET_TYPES = ("player", "banker", "tie", "player_pair", "banker_pair", "big", "small")


def table_config(table_id: str, batch: int) -> TableConfig:
    return TableConfig(
        table_id=table_id,
        betting_seconds=600,
        limits=StakeLimits(min_stake=1, max_stake=10**9),
        max_bets_per_request=batch,
    )


def fund(runtime: Runtime) -> None:
    for account in range(ACCOUNTS):
        item = Transfer(f"acct-{account}", 10**12, f"seed-{account}", "credit")
        transfer(runtime, item, actor=ACTOR)


async def through_service(
    runtime: Runtime, bets: int, batch: int, floor: FloorTables | None = None
) -> tuple[float, float]:
    """Bets per second through the service and, with ``floor``, of the floor: each batch of
    the floor written right after the service's batch of the same rows."""
    service = TableService(runtime, table_config("bench-intake", batch))
    await service.start(with_reader=False)
    for command in (c.InsertShoe(), c.CardScanned("AS"), c.CardScanned("2S"), c.OpenBetting()):
        await service.execute(command, actor=ACTOR)
    requests = [
        c.BetRequest(
            new_bet_id(), f"s{i}", f"acct-{i % ACCOUNTS}", BET_TYPES[i % len(BET_TYPES)], 100
        )
        for i in range(bets)
    ]
    spent = floor_spent = 0.0
    for first in range(0, bets, batch):
        group = requests[first : first + batch]
        started = time.perf_counter()
        outcome = await service.execute(c.PlaceBets(tuple(group)), actor=ACTOR)
        spent += time.perf_counter() - started
        assert all(r["status"] == "placed" for r in outcome.answer["results"])
        if floor is not None:
            rows = rows_of_keys(runtime.engine, [f"{ACTOR}|{r.key}" for r in group])
            floor_spent += floor.write(rows)
    await service.stop()
    return bets / spent, (bets / floor_spent if floor_spent else 0.0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def through_http(runtime: Runtime, bets: int, batch: int) -> float:
    table = "bench-http"
    with runtime.sessions.begin() as session:
        tokens = {
            role: add_principal(session, runtime.store, f"bench-{role}", role, actor="bench")
            for role in ("operator", "dealer", "supervisor")
        }
    app = build_app(runtime, [table_config(table, batch)], with_readers=False)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=120) as http:

            def post(role: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
                headers = {"Authorization": f"Bearer {tokens[role]}"}
                response = http.post(path, json=body, headers=headers)
                assert response.status_code == 200, response.text
                answer: dict[str, Any] = response.json()
                return answer

            post("supervisor", f"/tables/{table}/shoe")
            for card in ("AS", "2S"):
                post("supervisor", f"/tables/{table}/cards", {"card": card})
            post("dealer", f"/tables/{table}/betting/open")
            bodies = [
                {
                    "bets": [
                        {
                            "key": f"h{i}",
                            "account": f"acct-{i % ACCOUNTS}",
                            "type": BET_TYPES[i % len(BET_TYPES)],
                            "stake": 100,
                        }
                        for i in range(first, min(first + batch, bets))
                    ]
                }
                for first in range(0, bets, batch)
            ]
            start = time.perf_counter()
            for body in bodies:
                answer = post("operator", f"/tables/{table}/bets", body)
                assert all(r["status"] == "placed" for r in answer["results"])
            return bets / (time.perf_counter() - start)
    finally:
        server.should_exit = True
        thread.join(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bets", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=5000, help="bets per command / request")
    parser.add_argument("--db", default=None, help="database URL (default: SQLite in a temp dir)")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    with scratch_runtime(args.db) as runtime:
        fund(runtime)
        with FloorTables(runtime.engine) as floor:
            service_rate, floor_rate = asyncio.run(
                through_service(runtime, args.bets, args.batch, floor)
            )
        http_rate = through_http(runtime, args.bets, args.batch)
        backend = runtime.engine.dialect.name
    ratio = service_rate / floor_rate
    print(f"backend              {backend}")
    print(f"bets, batch          {args.bets}, {args.batch} per command")
    print(f"through the service  {service_rate:10,.0f} bets/s  (goal >= 20,000)")
    print(f"raw floor            {floor_rate:10,.0f} bets/s  (same rows, COPY/executemany)")
    print(f"service / floor      {ratio:10.2f}       (goal >= 0.50)")
    print(f"through HTTP         {http_rate:10,.0f} bets/s")
    print(f"load average         {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        json.dumps(
            {
                "backend": backend,
                "bets": args.bets,
                "batch": args.batch,
                "service_bets_per_s": round(service_rate),
                "floor_rows_per_s": round(floor_rate),
                "service_over_floor": round(ratio, 3),
                "http_bets_per_s": round(http_rate),
            }
        )
    )


if __name__ == "__main__":
    main()
