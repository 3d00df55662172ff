"""The last seconds of betting at a popular table, through the real HTTP API.

Run: ``python benchmarks/peak_betting.py [--db URL] [--players 5000] [--seconds 2]
[--operators 10] [--clients 2]``.

A fresh database (a scratch schema on PostgreSQL, or SQLite in a temporary folder), one
baccarat table run by a real ``livetable serve`` in its own process, with the settings it
has when deployed (the studio manager and its lease, the audit watchdog, INFO logging to a
file). ``--players`` accounts are funded across ``--operators`` operators (each owns its
own players; 1 % of them hold less than their stake, so some refusals are expected). The
dealer opens betting and every player's one bet arrives at its operator's platform at a
random instant in the last ``--seconds`` of the window. Each platform, with its own token,
on keep-alive connections, sends the bets that have arrived every 50-100 ms (one request
each, idempotency keys per bet; a request that fails in transit is sent again as it was),
as the operators' platforms do. The platforms run in ``--clients`` processes of their own,
apart from the server, and print their CPU use.

Each bet is timed from its arrival at the platform to the answer that acknowledges it. It
prints: accepted, refused by reason (the service's code: ``insufficient_funds`` for the
underfunded players, ``betting_closed`` for a bet its platform sent after the close), lost
(acknowledged as placed, but not in the log), late (sent before the close, answered after
it), unanswered, the acknowledgement p50/p99/max, the server's and the load generator's CPU
time, and the floor measured in the same run on the same database: the same bet rows,
batch by batch as the service committed them, written by one ``COPY`` (PostgreSQL) or one
``executemany`` (SQLite) and one durable commit per batch into a table of the same shape.
Its last line is one JSON object.

Goal at 5,000 players and 2 seconds, on both backends: 0 lost, p99 <= 250 ms, every bet
sent before the close placed or refused with a reason (none unanswered).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import random
import subprocess
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from rowfloor import placed_rows, write_floor
from serving import Serve, cpu_seconds, load_average, percentile

TABLE = "peak-1"
BET_TYPES = ("player", "banker", "tie", "player_pair", "banker_pair")
MIN_STAKE = 100
UNDERFUNDED = 100  # one player in this many holds less than the stake


def say(text: str) -> None:
    print(text, flush=True)


# -- set-up --------------------------------------------------------------------------------
def players(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every player: operator, account, the bet it will place, when it arrives (0..1 of
    the peak), and whether it is funded for it."""
    rng = random.Random(args.seed)
    out = []
    for i in range(args.players):
        op = f"op{i % args.operators:02d}"
        out.append(
            {
                "operator": op,
                "account": f"{op}-p{i:06d}",
                "key": f"peak-{i:06d}",
                "type": BET_TYPES[i % len(BET_TYPES)],
                "stake": MIN_STAKE * (1 + i % 50),
                "at": rng.random(),
                "funded": i % UNDERFUNDED != UNDERFUNDED - 1,
            }
        )
    return out


def fund(runtime: Any, crowd: list[dict[str, Any]]) -> None:
    """Each operator credits its players, as its platform would: an ``account_credited``
    event each in the log, and the ledger line and balance it projects to (the account
    owned by the operator), written a thousand at a time rather than one HTTP call each."""
    from audit.store import NewEvent
    from table_service.table.projector import _executemany
    from table_service.table.wallet import WALLET_TABLE

    by_op: dict[str, list[dict[str, Any]]] = {}
    for p in crowd:
        by_op.setdefault(p["operator"], []).append(p)
    for op, mine in by_op.items():
        actor = f"operator:{op}"
        for start in range(0, len(mine), 1000):
            chunk = mine[start : start + 1000]
            amounts = [10**9 if p["funded"] else MIN_STAKE // 2 for p in chunk]
            with runtime.sessions.begin() as session:
                runtime.store.lock(session)
                stored = runtime.store.append(
                    session,
                    [
                        NewEvent(
                            WALLET_TABLE,
                            "account_credited",
                            actor,
                            {
                                "account": p["account"],
                                "amount": amount,
                                "reference": f"{actor}|seed-{p['account']}",
                            },
                        )
                        for p, amount in zip(chunk, amounts, strict=True)
                    ],
                )
                _executemany(
                    session,
                    "INSERT INTO accounts (account_id, balance, updated_seq, owner)"
                    " VALUES (?, ?, ?, ?)",
                    [
                        (p["account"], amount, e.seq, actor)
                        for p, amount, e in zip(chunk, amounts, stored, strict=True)
                    ],
                )
                _executemany(
                    session,
                    "INSERT INTO ledger_entries (account_id, amount, kind, reference, seq)"
                    " VALUES (?, ?, ?, ?, ?)",
                    [
                        (p["account"], amount, "credit", e.payload["reference"], e.seq)
                        for p, amount, e in zip(chunk, amounts, stored, strict=True)
                    ],
                )


def principals(runtime: Any, operators: list[str]) -> dict[str, str]:
    from table_service.principals import add_principal

    tokens: dict[str, str] = {}
    with runtime.sessions.begin() as session:
        for role in ("dealer", "supervisor"):
            tokens[role] = add_principal(
                session, runtime.store, f"peak-{role}", role, actor="bench"
            )
        for op in operators:
            tokens[op] = add_principal(session, runtime.store, op, "operator", actor="bench")
    return tokens


# -- the operators' platforms (in their own processes) ---------------------------------------
async def platform(
    base: str,
    token: str,
    mine: list[dict[str, Any]],
    start: float,
    seconds: float,
    close: float,
    seed: int,
) -> list[dict[str, Any]]:
    """One operator's platform: collect arrivals, send them every 50-100 ms."""
    rng = random.Random(seed)
    arrivals = sorted((start + p["at"] * seconds, p) for p in mine)
    records: list[dict[str, Any]] = []
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=16, max_keepalive_connections=16)
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30, limits=limits) as http:
        await http.get(f"/api/v1/tables/{TABLE}")  # the connection is open before the peak

        async def send(batch: list[tuple[float, dict[str, Any]]]) -> None:
            body = json.dumps(
                {
                    "bets": [
                        {
                            "key": p["key"],
                            "account": p["account"],
                            "type": p["type"],
                            "stake": p["stake"],
                        }
                        for _, p in batch
                    ]
                }
            )
            sent = time.monotonic()
            tries = 0
            answer: httpx.Response | None = None
            while True:
                tries += 1
                try:
                    answer = await http.post(
                        f"/api/v1/tables/{TABLE}/bets",
                        content=body,
                        headers={"Content-Type": "application/json"},
                    )
                    if answer.status_code < 500 and answer.status_code != 429:
                        break
                except httpx.HTTPError:
                    answer = None
                if time.monotonic() - sent > 60:
                    break
                await asyncio.sleep(0.05 * tries)
            answered = time.monotonic()
            common = {
                "sent": sent,
                "answered": answered,
                "tries": tries,
                "size": len(batch),
                "request": f"{seed}-{batch[0][1]['key']}",
            }
            if answer is None or answer.status_code >= 500:
                for at, p in batch:
                    records.append({**common, "at": at, "key": p["key"], "status": "unanswered"})
                return
            data = answer.json()
            if answer.status_code != 200:
                code = data.get("code") or f"http_{answer.status_code}"
                for at, p in batch:
                    records.append(
                        {**common, "at": at, "key": p["key"], "status": "refused", "reason": code}
                    )
                return
            for (at, p), result in zip(batch, data["results"], strict=True):
                status = result["status"]
                records.append(
                    {
                        **common,
                        "at": at,
                        "key": p["key"],
                        "status": "placed" if status in ("placed", "duplicate") else status,
                        "reason": result.get("error"),
                        "bet_id": result.get("bet_id"),
                        "round_id": data.get("round_id"),
                    }
                )

        tasks: list[asyncio.Task[None]] = []
        flush = start + rng.uniform(0.05, 0.1)
        i = 0
        while i < len(arrivals):
            delay = flush - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            now = time.monotonic()
            batch = []
            while i < len(arrivals) and arrivals[i][0] <= now:
                batch.append(arrivals[i])
                i += 1
            if batch:
                tasks.append(asyncio.create_task(send(batch)))
            flush += rng.uniform(0.05, 0.1)
        await asyncio.gather(*tasks)
    return records


def client_process(
    base: str, jobs: list[tuple[str, list[dict[str, Any]]]], seconds: float, pipe: Any
) -> None:
    """A load-generator process running several operators' platforms on one event loop."""
    import gc

    gc.freeze()
    pipe.send("ready")
    start, close = pipe.recv()
    cpu0, wall0 = time.process_time(), time.monotonic()

    async def everything() -> list[dict[str, Any]]:
        results = await asyncio.gather(
            *(
                platform(base, token, mine, start, seconds, close, seed=n)
                for n, (token, mine) in enumerate(jobs)
            )
        )
        return [r for rs in results for r in rs]

    records = asyncio.run(everything())
    pipe.send((records, time.process_time() - cpu0, time.monotonic() - wall0))


# -- the log -------------------------------------------------------------------------------
def in_log(runtime: Any) -> tuple[dict[str, str], dict[int, int]]:
    """(bet_id → key, bets per bets_placed event) as the table's log holds them."""
    from audit.store import EventStore

    placed: dict[str, str] = {}
    per_event: dict[int, int] = {}
    with runtime.sessions() as session:
        for event in EventStore.read(session, table_id=TABLE):
            if event.type == "bets_placed":
                per_event[event.seq] = len(event.payload["bets"])
                for bet in event.payload["bets"]:
                    placed[bet["bet_id"]] = bet["key"].split("|", 1)[-1]
    return placed, per_event


# -- the run -------------------------------------------------------------------------------
def run(args: argparse.Namespace, runtime: Any, tmp: Path) -> dict[str, Any]:
    operators = [f"op{i:02d}" for i in range(args.operators)]
    tokens = principals(runtime, operators)
    crowd = players(args)
    started = time.monotonic()
    fund(runtime, crowd)
    say(
        f"funded {len(crowd)} players of {len(operators)} operators"
        f" in {time.monotonic() - started:.1f} s"
    )
    window = args.seconds + args.lead
    tables = tmp / "tables.toml"
    tables.write_text(
        f'[[tables]]\ntable_id = "{TABLE}"\ngame = "baccarat"\nbetting_seconds = {window}\n'
        f"limits = {{ min_stake = {MIN_STAKE}, max_stake = 10_000_000 }}\n"
    )
    db_url = runtime.engine.url.render_as_string(hide_password=False)
    server = Serve(db_url, runtime.settings.data_dir, tables, tmp / "serve.log")
    server.start()
    procs: list[Any] = []
    try:
        server.wait_table(TABLE, tokens["supervisor"])
        assert server.proc is not None
        ctx = mp.get_context("spawn")
        jobs: list[list[tuple[str, list[dict[str, Any]]]]] = [[] for _ in range(args.clients)]
        for n, op in enumerate(operators):
            mine = [p for p in crowd if p["operator"] == op]
            jobs[n % args.clients].append((tokens[op], mine))
        pipes = []
        for job in jobs:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=client_process, args=(server.base, job, args.seconds, child))
            proc.start()
            procs.append(proc)
            pipes.append(parent)
        for pipe in pipes:
            if not pipe.poll(120):
                raise SystemExit("a load-generator process did not start")
            pipe.recv()
        with httpx.Client(base_url=f"{server.base}/api/v1", timeout=30) as http:

            def post(role: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
                answer = http.post(
                    path, json=body, headers={"Authorization": f"Bearer {tokens[role]}"}
                )
                if answer.status_code != 200:
                    raise SystemExit(f"{path}: {answer.status_code} {answer.text[:300]}")
                result: dict[str, Any] = answer.json()
                return result

            post("supervisor", f"/tables/{TABLE}/shoe")
            for card in ("AS", "2S"):  # the burn: an ace burns one more card
                post("supervisor", f"/tables/{TABLE}/cards", {"card": card})
            opened = post("dealer", f"/tables/{TABLE}/betting/open")
        rnd = opened["table"]["round"]
        closes = datetime.fromisoformat(rnd["closes_at"].replace("Z", "+00:00")).timestamp()
        close = time.monotonic() + (closes - time.time())
        start = close - args.seconds
        cpu_before = cpu_seconds(server.proc.pid)
        spy = None
        if args.profile:
            # py-spy (pip install py-spy) samples the server through the peak
            spy = subprocess.Popen(
                [
                    "py-spy",
                    "record",
                    *(["--idle"] if args.idle else []),
                    "--threads",
                    "--format",
                    args.profile_format,
                    "-r",
                    "250",
                    "-o",
                    args.profile,
                    "-p",
                    str(server.proc.pid),
                    "-d",
                    str(int(close - time.monotonic() + 2)),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        for pipe in pipes:
            pipe.send((start, close))
        records: list[dict[str, Any]] = []
        client_cpu = []
        for pipe in pipes:
            if not pipe.poll(args.seconds + args.lead + 300):
                raise SystemExit("a load-generator process did not answer")
            got, cpu, wall = pipe.recv()
            records += got
            client_cpu.append((cpu, wall))
        server_cpu = cpu_seconds(server.proc.pid) - cpu_before
        if spy is not None:
            spy.wait(60)
        load = load_average()
        # the countdown closes the round; wait for it so the log is final
        with httpx.Client(base_url=f"{server.base}/api/v1", timeout=30) as http:
            headers = {"Authorization": f"Bearer {tokens['supervisor']}"}
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                state = http.get(f"/tables/{TABLE}", headers=headers).json()
                if state["round"] and state["round"]["phase"] != "betting":
                    break
                time.sleep(0.1)
    finally:
        for proc in procs:
            proc.join(30)
        server.stop()
    placed_in_log, per_event = in_log(runtime)
    # the floor: the same rows, one COPY/executemany and one commit per request as sent
    rows = placed_rows(runtime.engine, TABLE)
    sent: dict[str, list[tuple[Any, ...]]] = {}
    for r in records:
        if r["key"] in rows:
            sent.setdefault(r["request"], []).append(rows[r["key"]])
    floor = write_floor(runtime.engine, list(sent.values()))

    accepted = [r for r in records if r["status"] == "placed"]
    refused = Counter(r["reason"] for r in records if r["status"] == "refused")
    unanswered = [r for r in records if r["status"] == "unanswered"]
    acked_ids = {r["bet_id"] for r in accepted}
    lost = [r for r in accepted if r["bet_id"] not in placed_in_log]
    unacked = [b for b in placed_in_log if b not in acked_ids]
    late = [r for r in records if r["sent"] < close <= r["answered"]]
    after_close = [r for r in records if r["sent"] >= close]
    before_close = [r for r in records if r["sent"] < close]
    before_unsettled = [
        r
        for r in before_close
        if r["status"] not in ("placed", "refused")
        or (r["status"] == "refused" and not r["reason"])
    ]
    acks = [r["answered"] - r["at"] for r in records if r["status"] != "unanswered"]
    requests = {r["request"] for r in records}
    retried = sum(1 for r in records if r["tries"] > 1)
    batch_p50 = floor.batch_p(0.5) * 1000
    result = {
        "backend": runtime.engine.dialect.name,
        "players": args.players,
        "seconds": args.seconds,
        "operators": args.operators,
        "bets": len(records),
        "accepted": len(accepted),
        "refused": sum(refused.values()),
        "refused_by_reason": dict(refused),
        "lost": len(lost),
        "in_log_not_acked": len(unacked),
        "late": len(late),
        "sent_after_close": len(after_close),
        "unanswered": len(unanswered),
        "sent_before_close_without_answer": len(before_unsettled),
        "requests": len(requests),
        "retried_bets": retried,
        "commands_in_log": len(per_event),
        "ack_p50_ms": round(percentile(acks, 0.5) * 1000, 1),
        "ack_p99_ms": round(percentile(acks, 0.99) * 1000, 1),
        "ack_max_ms": round(max(acks) * 1000, 1) if acks else None,
        "floor_rows_per_s": round(floor.rows_per_s),
        "floor_batches": len(floor.batch_seconds),
        "floor_batch_p50_ms": round(batch_p50, 2),
        "floor_batch_p99_ms": round(floor.batch_p(0.99) * 1000, 2),
        "server_cpu_s": round(server_cpu, 2),
        "load_generator_cpu_s": round(sum(c for c, _ in client_cpu), 2),
        "load_generator_wall_s": round(max(w for _, w in client_cpu), 2),
        "load_average": load,
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=None, help="database URL (default: SQLite in a temp dir)")
    parser.add_argument("--players", type=int, default=5000)
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="the peak: the window's last S s"
    )
    parser.add_argument("--operators", type=int, default=10)
    parser.add_argument("--clients", type=int, default=2, help="load-generator processes")
    parser.add_argument("--lead", type=float, default=3.0, help="window seconds before the peak")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--profile", default=None, help="py-spy the server into this file")
    parser.add_argument("--idle", action="store_true", help="py-spy: sample waiting threads too")
    parser.add_argument("--profile-format", default="raw", help="py-spy format (raw, speedscope)")
    args = parser.parse_args()
    from scratch import scratch_runtime

    from table_service.logs import configure_logging

    configure_logging(level="WARNING")
    say(f"load average before: {load_average()}")
    with scratch_runtime(args.db) as runtime, tempfile.TemporaryDirectory() as tmp:
        result = run(args, runtime, Path(tmp))
    r = result
    say(
        f"backend {r['backend']}: {r['players']} players of {r['operators']} operators, "
        f"all in the last {r['seconds']} s of the window ({r['requests']} requests)"
    )
    say(
        f"  accepted {r['accepted']}, refused {r['refused']} {r['refused_by_reason']}, "
        f"lost {r['lost']}, late {r['late']}, unanswered {r['unanswered']}"
    )
    say(
        f"  sent after the close {r['sent_after_close']}; in the log but not acknowledged "
        f"{r['in_log_not_acked']}; retried {r['retried_bets']}"
    )
    say(
        f"  arrival -> acknowledgement p50 {r['ack_p50_ms']} ms, p99 {r['ack_p99_ms']} ms, "
        f"max {r['ack_max_ms']} ms"
    )
    say(
        f"  floor: {r['floor_rows_per_s']:,} bets/s ({r['floor_batches']} requests' bet rows and"
        f" stake lines, one COPY/executemany and commit each, p50 {r['floor_batch_p50_ms']} ms); "
        f"ack p50 / floor batch p50 = {r['ack_p50_ms'] / max(r['floor_batch_p50_ms'], 1e-3):.1f}x"
    )
    say(
        f"  CPU: server {r['server_cpu_s']} s, load generator {r['load_generator_cpu_s']} s over "
        f"{r['load_generator_wall_s']} s; load average {r['load_average']}"
    )
    ok = r["lost"] == 0 and r["ack_p99_ms"] <= 250 and r["sent_before_close_without_answer"] == 0
    say(
        f"  goal (0 lost, p99 <= 250 ms, every bet sent before the close answered): "
        f"{'met' if ok else 'NOT met'}"
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
