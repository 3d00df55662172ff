"""Write latency while a crowd of anonymous stream clients replays a table's history.

Run: ``python benchmarks/stream_load.py [--subscribers 500] [--writes 400] [--db URL]``.

The server is ``livetable serve`` in its own process, as deployed (the studio manager and
its lease, the audit watchdog, INFO logging to a file), on a scratch database with one
table whose log holds ``--history`` events; only the per-address cap on anonymous streams
is raised (the clients all come from 127.0.0.1, standing for players on many addresses).
A writer process sends an operator credit every ``--interval`` seconds (50 ms: on a clock,
not after the previous answer) and times each from request to answer: first with nobody
watching (the floor, in the same run), then while ``--subscribers`` public WebSocket
clients, in ``--client-procs`` processes of their own, each replay the table from seq 0,
reconnecting from 0 as soon as they have it all, for as long as the writes go on.

It prints p50/p99/max of both runs and their ratio, how many replays completed, how many
subscribers were dropped other than by their own choice, and the CPU time of the server,
the subscribers' processes and the writer; the last line is one JSON object. Goal: none
dropped, and a p99 of at most 50 ms on SQLite and PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from serving import Serve, cpu_seconds, load_average, percentile, run_on_scratch, serve_arguments

TABLE = "bench-1"
ACTOR = "bench:stream"


# -- the writer (a process of its own) ---------------------------------------------------------
def writer(base: str, token: str, writes: int, interval: float, tag: str, out: Any) -> None:
    """Credits on a clock, each timed from its request to its answer."""
    latencies: list[float] = []
    cpu0 = time.process_time()
    with httpx.Client(base_url=base, timeout=60) as http:
        headers = {"Authorization": f"Bearer {token}"}
        http.get("/healthz")  # the connection is open before the first timed write
        start = time.monotonic()
        for i in range(writes):
            due = start + i * interval
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            body = {"amount": 100, "reference": f"{tag}-{i}"}
            started = time.perf_counter()
            response = http.post("/api/v1/accounts/bench-acct/credit", json=body, headers=headers)
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200:
                out.put(("error", response.status_code, response.text[:200]))
                return
    out.put(("ok", latencies, time.process_time() - cpu0))


def time_writes(
    base: str, token: str, args: argparse.Namespace, tag: str
) -> tuple[list[float], float]:
    ctx = mp.get_context("spawn")
    queue: Any = ctx.Queue()
    proc = ctx.Process(target=writer, args=(base, token, args.writes, args.interval, tag, queue))
    proc.start()
    result = queue.get(timeout=args.writes * args.interval + 600)
    proc.join(60)
    if result[0] != "ok":
        raise SystemExit(f"write failed: {result[1:]}")
    return list(result[1]), float(result[2])


# -- the crowd (processes of their own) --------------------------------------------------------
def crowd(ws_url: str, n: int, expected: int, pipe: Any) -> None:
    """``n`` public clients replaying from 0 again and again until told to stop."""

    async def main() -> dict[str, Any]:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        stats: dict[str, Any] = {"replays": 0, "dropped": 0, "refused": 0, "events": 0, "codes": {}}
        stop = asyncio.Event()

        async def one() -> None:
            while not stop.is_set():
                try:
                    async with connect(ws_url, max_size=None, open_timeout=60) as ws:
                        got = 0
                        while got < expected and not stop.is_set():
                            await ws.recv()
                            got += 1
                            stats["events"] += 1
                        if got >= expected:
                            stats["replays"] += 1
                except ConnectionClosed as exc:
                    code = exc.rcvd.code if exc.rcvd else None
                    stats["codes"][str(code)] = stats["codes"].get(str(code), 0) + 1
                    stats["refused" if code == 4429 else "dropped"] += 1
                except (OSError, TimeoutError) as exc:
                    key = type(exc).__name__
                    stats["codes"][key] = stats["codes"].get(key, 0) + 1
                    stats["dropped"] += 1
                    await asyncio.sleep(0.1)

        tasks = [asyncio.create_task(one()) for _ in range(n)]
        await asyncio.to_thread(pipe.recv)  # "stop"
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return stats

    cpu0 = time.process_time()
    pipe.send("ready")
    stats = asyncio.run(main())
    stats["cpu"] = time.process_time() - cpu0
    pipe.send(stats)


def run(args: argparse.Namespace, runtime: Any, tmp: Path) -> dict[str, Any]:
    from sqlalchemy import text

    from table_service.principals import add_principal

    with runtime.sessions.begin() as session:
        op = add_principal(session, runtime.store, "bench-op", "operator", actor=ACTOR)
        sup = add_principal(session, runtime.store, "bench-sup", "supervisor", actor=ACTOR)
    server = Serve.one_table(
        runtime, tmp, TABLE, max(100_000, args.subscribers), args.serve_setting
    )
    server.start()
    procs: list[Any] = []
    try:
        server.wait_table(TABLE, sup)
        base = server.base
        with httpx.Client(base_url=base, timeout=60) as http:
            headers = {"Authorization": f"Bearer {sup}"}
            while True:
                summary = http.get(f"/api/v1/tables/{TABLE}", headers=headers).json()
                if summary["last_seq"] >= args.history:
                    break
                http.post(
                    f"/api/v1/tables/{TABLE}/shoe/change", json={"reason": "x"}, headers=headers
                )
                http.post(f"/api/v1/tables/{TABLE}/shoe", headers=headers)
        with runtime.reads() as session:
            expected = int(
                session.scalar(
                    text(f"SELECT count(*) FROM audit_events WHERE table_id = '{TABLE}'")
                )
            )
        floor, floor_cpu = time_writes(base, op, args, "floor")
        ctx = mp.get_context("spawn")
        ws_url = base.replace("http://", "ws://") + f"/api/v1/public/tables/{TABLE}/stream"
        pipes = []
        for k in range(args.client_procs):
            n = args.subscribers // args.client_procs + (k < args.subscribers % args.client_procs)
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=crowd, args=(ws_url, n, expected, child))
            proc.start()
            procs.append(proc)
            pipes.append(parent)
        for pipe in pipes:
            pipe.recv()
        time.sleep(args.warmup)  # every subscriber connected and replaying
        server_cpu0 = cpu_seconds(server.pid)
        spy = None
        if args.profile:  # py-spy (pip install py-spy) samples the server under load
            command = ["py-spy", "record", "--threads", "--format", "raw", "-r", "200"]
            command += ["--idle"] if args.idle else []
            command += ["-o", args.profile, "-p", str(server.pid)]
            command += ["-d", str(int(args.writes * args.interval) + 2)]
            spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = time.monotonic()
        loaded, writer_cpu = time_writes(base, op, args, "load")
        elapsed = time.monotonic() - started
        server_cpu = cpu_seconds(server.pid) - server_cpu0
        if spy is not None:
            spy.wait(120)
        load = load_average()
        for pipe in pipes:
            pipe.send("stop")
        stats: dict[str, Any] = {"replays": 0, "dropped": 0, "refused": 0, "events": 0, "codes": {}}
        crowd_cpu = 0.0
        for pipe in pipes:
            got = pipe.recv()
            crowd_cpu += got.pop("cpu")
            for key in ("replays", "dropped", "refused", "events"):
                stats[key] += got[key]
            for code, count in got["codes"].items():
                stats["codes"][code] = stats["codes"].get(code, 0) + count
    finally:
        for proc in procs:
            proc.join(30)
        server.stop()
    f50, f99, fmax = (percentile(floor, q) * 1000 for q in (0.5, 0.99, 1.0))
    l50, l99, lmax = (percentile(loaded, q) * 1000 for q in (0.5, 0.99, 1.0))
    return {
        "backend": runtime.engine.dialect.name,
        "subscribers": args.subscribers,
        "history_events": expected,
        "writes": args.writes,
        "interval_ms": args.interval * 1000,
        "floor_p50_ms": round(f50, 2),
        "floor_p99_ms": round(f99, 2),
        "floor_max_ms": round(fmax, 2),
        "write_p50_ms": round(l50, 2),
        "write_p99_ms": round(l99, 2),
        "write_max_ms": round(lmax, 2),
        "p99_over_floor": round(l99 / f99, 2) if f99 else None,
        "replays": stats["replays"],
        "events_received": stats["events"],
        "events_per_s": round(stats["events"] / elapsed),
        "dropped": stats["dropped"],
        "refused": stats["refused"],
        "codes": stats["codes"],
        "server_cpu_s": round(server_cpu, 2),
        "subscriber_cpu_s": round(crowd_cpu, 2),
        "writer_cpu_s": round(writer_cpu + floor_cpu, 2),
        "seconds": round(elapsed, 1),
        "load_average": load,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=500)
    parser.add_argument("--writes", type=int, default=400, help="timed credits per run")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between credits")
    parser.add_argument("--history", type=int, default=300, help="events in the table's log")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before timing")
    parser.add_argument("--client-procs", type=int, default=2, help="subscriber processes")
    parser.add_argument("--profile", default=None, help="py-spy the server into this file")
    parser.add_argument("--idle", action="store_true", help="py-spy: sample waiting threads too")
    serve_arguments(parser)
    args = parser.parse_args()
    r = run_on_scratch(run, args)
    print(
        f"stream load on {r['backend']} (livetable serve): {r['subscribers']} public subscribers"
        f" replaying {r['history_events']} events each from seq 0, {r['writes']} operator"
        f" credits every {r['interval_ms']:.0f} ms per run"
    )
    print(
        f"  floor (no subscribers): p50 {r['floor_p50_ms']:6.1f} ms  p99 {r['floor_p99_ms']:6.1f}"
        f" ms  max {r['floor_max_ms']:6.1f} ms"
    )
    print(
        f"  under load:             p50 {r['write_p50_ms']:6.1f} ms  p99 {r['write_p99_ms']:6.1f}"
        f" ms  max {r['write_max_ms']:6.1f} ms   (p99 {r['p99_over_floor']}x the floor's)"
    )
    print(
        f"  subscribers: {r['replays']} full replays, {r['events_received']} events"
        f" ({r['events_per_s']}/s), {r['dropped']} dropped, {r['refused']} refused (limit),"
        f" codes {r['codes']}"
    )
    print(
        f"  CPU over {r['seconds']} s: server {r['server_cpu_s']} s, subscribers"
        f" {r['subscriber_cpu_s']} s, writer {r['writer_cpu_s']} s; load average"
        f" {r['load_average']}"
    )
    met = r["write_p99_ms"] <= 50 and r["dropped"] == 0
    print(f"  goal p99 <= 50 ms and no subscriber dropped: {'met' if met else 'NOT met'}")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
