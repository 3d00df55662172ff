"""Write latency while a crowd of anonymous stream clients replays a table's history.

Run: ``python benchmarks/stream_load.py [--subscribers 500] [--writes 400] [--db URL]``.

The server runs in its own process (uvicorn, the whole app) on a scratch database with a
table whose log holds ``--history`` events. A writer process times operator credits over
HTTP, one after another: first with nobody watching (the floor), then while
``--subscribers`` public WebSocket clients each replay the table from the first event,
reconnecting from zero as soon as they have it all, for as long as the writes go on. It
prints p50/p99/max of both runs, their ratio, how many replays completed and how many
subscribers were dropped other than by their own choice (the goal: none, and a p99 under
50 ms on SQLite and PostgreSQL).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ACTOR = "bench:stream"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(database_url: str, data_dir: str, port: int) -> None:
    import uvicorn

    from table_service.config import Settings
    from table_service.logs import configure_logging
    from table_service.runtime import Runtime
    from table_service.table.api import build_app
    from table_service.table.config import TableConfig

    configure_logging(level="WARNING")
    if os.environ.get("BENCH_SWITCH"):
        sys.setswitchinterval(float(os.environ["BENCH_SWITCH"]))
    settings = Settings(
        data_dir=Path(data_dir),
        database_url=database_url,
        stream_max_public_per_address=100_000,
        stream_max_public_per_table=100_000,
    )
    runtime = Runtime.from_settings(settings)
    app = build_app(runtime, [TableConfig(table_id="bench-1")], with_readers=False)
    uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, log_level="warning")


def _writer(base: str, token: str, writes: int, tag: str, out: Any) -> None:
    """Sequential credits, each timed from request to answer."""
    latencies = []
    with httpx.Client(base_url=base, timeout=60) as http:
        headers = {"Authorization": f"Bearer {token}"}
        for i in range(writes):
            body = {"amount": 100, "reference": f"{tag}-{i}"}
            started = time.perf_counter()
            response = http.post("/api/v1/accounts/bench-acct/credit", json=body, headers=headers)
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200:
                out.put(("error", response.status_code, response.text[:200]))
                return
    out.put(("ok", latencies))


def _time_writes(base: str, token: str, writes: int, tag: str) -> list[float]:
    queue: Any = mp.get_context("spawn").Queue()
    proc = mp.get_context("spawn").Process(target=_writer, args=(base, token, writes, tag, queue))
    proc.start()
    result = queue.get(timeout=600)
    proc.join(60)
    if result[0] != "ok":
        raise SystemExit(f"write failed: {result[1:]}")
    return list(result[1])


async def _subscribers(ws_url: str, n: int, expected: int, stop: asyncio.Event) -> dict:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    stats = {"replays": 0, "dropped": 0, "refused": 0, "events": 0, "codes": {}}

    async def one() -> None:
        while not stop.is_set():
            try:
                async with connect(ws_url, max_size=None, open_timeout=60) as ws:
                    got = 0
                    while got < expected:
                        await ws.recv()
                        got += 1
                        stats["events"] += 1
                    stats["replays"] += 1
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd else None
                stats["codes"][code] = stats["codes"].get(code, 0) + 1
                stats["refused" if code == 4429 else "dropped"] += 1
            except (OSError, TimeoutError) as exc:
                key = type(exc).__name__
                stats["codes"][key] = stats["codes"].get(key, 0) + 1
                stats["dropped"] += 1
                await asyncio.sleep(0.1)

    tasks = [asyncio.create_task(one()) for _ in range(n)]
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return stats


def _percentiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return p50 * 1000, p99 * 1000, ordered[-1] * 1000


async def _loaded(base: str, token: str, args: argparse.Namespace, expected: int) -> tuple:
    stop = asyncio.Event()
    ws_url = base.replace("http://", "ws://") + "/api/v1/public/tables/bench-1/stream"
    crowd = asyncio.create_task(_subscribers(ws_url, args.subscribers, expected, stop))
    await asyncio.sleep(args.warmup)  # every subscriber connected and replaying
    started = time.perf_counter()
    events_before = 0
    latencies = await asyncio.to_thread(_time_writes, base, token, args.writes, "load")
    elapsed = time.perf_counter() - started
    stop.set()
    stats = await crowd
    stats["rate"] = (stats["events"] - events_before) / (elapsed + args.warmup)
    return latencies, stats


def run(args: argparse.Namespace) -> None:
    from table_service.principals import add_principal
    from table_service.scratch import scratch_runtime

    with scratch_runtime(args.db) as runtime:
        with runtime.sessions.begin() as session:
            op = add_principal(session, runtime.store, "bench-op", "operator", actor=ACTOR)
            sup = add_principal(session, runtime.store, "bench-sup", "supervisor", actor=ACTOR)
        port = _free_port()
        server = mp.get_context("spawn").Process(
            target=_serve,
            args=(runtime.settings.resolved_database_url, str(runtime.settings.data_dir), port),
            daemon=True,
        )
        server.start()
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or not server.is_alive():
                    raise SystemExit("server did not start")
                time.sleep(0.1)
            with httpx.Client(base_url=base, timeout=60) as http:
                headers = {"Authorization": f"Bearer {sup}"}
                while True:
                    summary = http.get("/api/v1/tables/bench-1", headers=headers).json()
                    if summary["last_seq"] >= args.history:
                        break
                    http.post(
                        "/api/v1/tables/bench-1/shoe/change", json={"reason": "x"}, headers=headers
                    )
                    http.post("/api/v1/tables/bench-1/shoe", headers=headers)
            with runtime.reads() as session:
                from sqlalchemy import text

                expected = session.scalar(
                    text("SELECT count(*) FROM audit_events WHERE table_id = 'bench-1'")
                )
            backend = runtime.engine.dialect.name
            floor = _time_writes(base, op, args.writes, "floor")
            loaded, crowd = asyncio.run(_loaded(base, op, args, int(expected)))
        finally:
            server.terminate()
            server.join(30)
    f50, f99, fmax = _percentiles(floor)
    l50, l99, lmax = _percentiles(loaded)
    print(
        f"stream load on {backend}: {args.subscribers} public subscribers replaying "
        f"{expected} events each, {args.writes} operator credits per run"
    )
    print(f"  floor (no subscribers): p50 {f50:6.1f} ms  p99 {f99:6.1f} ms  max {fmax:6.1f} ms")
    print(f"  under load:             p50 {l50:6.1f} ms  p99 {l99:6.1f} ms  max {lmax:6.1f} ms")
    print(f"  ratio to floor:         p50 {l50 / f50:5.2f}x   p99 {l99 / f99:5.2f}x")
    print(
        f"  subscribers: {crowd['replays']} full replays, {crowd['events']} events received"
        f" ({crowd['rate']:.0f}/s), "
        f"{crowd['dropped']} dropped, {crowd['refused']} refused (limit), codes {crowd['codes']}"
    )
    verdict = "met" if l99 < 50 and crowd["dropped"] == 0 else "NOT met"
    print(f"  goal p99 < 50 ms and no subscriber dropped: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=500)
    parser.add_argument("--writes", type=int, default=400, help="timed credits per run")
    parser.add_argument("--history", type=int, default=1000, help="events in the table's log")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before timing")
    parser.add_argument("--db", default=None, help="database URL (default: SQLite in a temp dir)")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    run(args)


if __name__ == "__main__":
    main()
