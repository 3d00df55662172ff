"""A live frame's fan-out to one table's subscribers, under ``livetable serve``.

Run: ``python benchmarks/fanout.py [--subscribers 34] [--events 200] [--db URL]
[--serve-setting LIVETABLE_X=VALUE ...]``.

The server is ``livetable serve`` in its own process (see ``serving.py``), on a scratch
database with one table. ``--subscribers`` public WebSocket clients with ``timing=1``, in
``--client-procs`` processes of their own, follow the table live (from its head: no
replay); a supervisor's client then changes and inserts the shoe ``--events`` times, one
event every ``--interval`` seconds. Each frame carries the service's commit time and its
send time for that subscriber (``t.commit``, ``t.send``: the host's monotonic clock), so
for each event the run knows, inside the service, the commit → the first subscriber's
send, the commit → the last one's, and the spread between them (the fan-out itself, one
subscriber after another on the event loop). The server's CPU is read over the same
events with nobody watching (first) and with the crowd: the difference per frame sent is
the fan-out's CPU per subscriber frame.

The floor, in the same run: one minimal durable commit (a row inserted, committed) on
the same database, p50. Printed: p50/p99 of each figure, the spread per subscriber, the
commit → last send over the floor, and the CPU per frame; the last line is one JSON
object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
from serving import Serve, cpu_seconds, load_average, percentile, run_on_scratch, serve_arguments

TABLE = "fan-1"
ACTOR = "bench:fanout"


def crowd(ws_url: str, n: int, pipe: Any) -> None:
    """``n`` live subscribers: each frame's seq and its service timing, until told to stop."""

    async def main() -> dict[str, Any]:
        from websockets.asyncio.client import connect

        frames: list[tuple[int, float, float]] = []
        ready = 0
        opened = asyncio.Event()
        stop = asyncio.Event()
        closes: dict[str, int] = {}

        async def one() -> None:
            nonlocal ready
            try:
                async with connect(ws_url, max_size=None, open_timeout=60) as ws:
                    ready += 1
                    if ready == n:
                        opened.set()
                    while True:
                        item = json.loads(await ws.recv())
                        t = item.get("t") or {}
                        if "commit" in t:
                            frames.append((item["seq"], t["commit"], t["send"]))
            except Exception as exc:  # counted, printed by the parent
                code = getattr(getattr(exc, "rcvd", None), "code", type(exc).__name__)
                if not stop.is_set():
                    closes[str(code)] = closes.get(str(code), 0) + 1

        tasks = [asyncio.create_task(one()) for _ in range(n)]
        await opened.wait()
        pipe.send("ready")
        await asyncio.to_thread(pipe.recv)  # "stop"
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return {"frames": frames, "closes": closes}

    pipe.send(asyncio.run(main()))


def drive(base: str, token: str, events: int, interval: float) -> None:
    """``events`` events on the table, one every ``interval`` seconds (on a clock)."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=60, headers=headers) as http:
        start = time.monotonic()
        for i in range(events):
            delay = start + i * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            answer = http.post(f"/api/v1/tables/{TABLE}/shoe")
            if answer.status_code == 409:  # a shoe in use: change it
                answer = http.post(f"/api/v1/tables/{TABLE}/shoe/change", json={"reason": "x"})
            if answer.status_code != 200:
                raise SystemExit(f"command refused: {answer.status_code} {answer.text[:200]}")


def run(args: argparse.Namespace, runtime: Any, tmp: Path) -> dict[str, Any]:
    from scratch import one_row_commits

    from table_service.principals import add_principal

    with runtime.sessions.begin() as session:
        sup = add_principal(session, runtime.store, "fan-sup", "supervisor", actor=ACTOR)
    server = Serve.one_table(runtime, tmp, TABLE, max(1000, args.subscribers), args.serve_setting)
    server.start()
    procs: list[Any] = []
    pipes: list[Any] = []
    try:
        server.wait_table(TABLE, sup)
        drive(server.base, sup, 20, args.interval)  # warm: the handlers, the lanes
        commits = one_row_commits(runtime.engine, args.floor_samples)
        cpu0 = cpu_seconds(server.pid)
        drive(server.base, sup, args.events, args.interval)  # nobody watching
        quiet_cpu = cpu_seconds(server.pid) - cpu0
        ctx = mp.get_context("spawn")
        with httpx.Client(base_url=server.base, timeout=60) as http:
            head = http.get(
                f"/api/v1/tables/{TABLE}", headers={"Authorization": f"Bearer {sup}"}
            ).json()["last_seq"]
        ws_url = server.base.replace("http://", "ws://")
        ws_url += f"/api/v1/public/tables/{TABLE}/stream?timing=1&after_seq={head}"
        for k in range(args.client_procs):
            n = args.subscribers // args.client_procs + (k < args.subscribers % args.client_procs)
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=crowd, args=(ws_url, n, child))
            proc.start()
            procs.append(proc)
            pipes.append(parent)
        for pipe in pipes:
            pipe.recv()
        time.sleep(0.5)
        cpu0 = cpu_seconds(server.pid)
        drive(server.base, sup, args.events, args.interval)
        time.sleep(0.5)  # the last frames out
        watched_cpu = cpu_seconds(server.pid) - cpu0
        load = load_average()
        frames: list[tuple[int, float, float]] = []
        closes: dict[str, int] = {}
        for pipe in pipes:
            pipe.send("stop")
        for pipe in pipes:
            got = pipe.recv()
            frames += got["frames"]
            for code, count in got["closes"].items():
                closes[code] = closes.get(code, 0) + count
    finally:
        for proc in procs:
            proc.join(30)
        server.stop()
    by_seq: dict[int, list[tuple[float, float]]] = {}
    for seq, commit, send in frames:
        by_seq.setdefault(seq, []).append((commit, send))
    first, last, spread = [], [], []
    for sends in by_seq.values():
        commit = sends[0][0]
        times = [s for _, s in sends]
        first.append(min(times) - commit)
        last.append(max(times) - commit)
        spread.append(max(times) - min(times))
    floor = statistics.median(commits)
    sent = len(frames)
    expected = len(by_seq) * args.subscribers

    def ms(values: list[float], q: float) -> float:
        return round(percentile(values, q) * 1000, 3)

    per_sub = [s / max(1, args.subscribers - 1) for s in spread]
    return {
        "backend": runtime.engine.dialect.name,
        "subscribers": args.subscribers,
        "events": len(by_seq),
        "frames": sent,
        "missing_frames": expected - sent,
        "closes": closes,
        "floor_commit_p50_ms": round(floor * 1000, 3),
        "first_send_p50_ms": ms(first, 0.5),
        "first_send_p99_ms": ms(first, 0.99),
        "last_send_p50_ms": ms(last, 0.5),
        "last_send_p99_ms": ms(last, 0.99),
        "spread_p50_ms": ms(spread, 0.5),
        "spread_p99_ms": ms(spread, 0.99),
        "per_subscriber_p50_us": round(percentile(per_sub, 0.5) * 1e6, 1),
        "last_send_p50_over_floor": round(percentile(last, 0.5) / floor, 2),
        "cpu_per_frame_us": round((watched_cpu - quiet_cpu) / max(1, sent) * 1e6, 1),
        "server_cpu_quiet_s": round(quiet_cpu, 2),
        "server_cpu_watched_s": round(watched_cpu, 2),
        "load_average": load,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=34)
    parser.add_argument("--events", type=int, default=200, help="events timed per run")
    parser.add_argument("--interval", type=float, default=0.04, help="seconds between events")
    parser.add_argument("--client-procs", type=int, default=1, help="subscriber processes")
    parser.add_argument("--floor-samples", type=int, default=100, help="durable commits timed")
    serve_arguments(parser)
    args = parser.parse_args()
    r = run_on_scratch(run, args)
    print(
        f"fan-out on {r['backend']} (livetable serve): {r['subscribers']} public subscribers"
        f" (timing=1) on one table, {r['events']} events, {r['frames']} frames"
        f" ({r['missing_frames']} missing, closes {r['closes']})"
    )
    print(f"  floor: one durable commit p50 {r['floor_commit_p50_ms']:.3f} ms")
    print(
        f"  commit -> first send p50 {r['first_send_p50_ms']:.3f} ms p99"
        f" {r['first_send_p99_ms']:.3f};  commit -> last send p50 {r['last_send_p50_ms']:.3f}"
        f" ms p99 {r['last_send_p99_ms']:.3f} ({r['last_send_p50_over_floor']}x the floor)"
    )
    print(
        f"  first -> last send p50 {r['spread_p50_ms']:.3f} ms p99 {r['spread_p99_ms']:.3f};"
        f" {r['per_subscriber_p50_us']} us a subscriber; server CPU"
        f" {r['cpu_per_frame_us']} us a frame sent; load {r['load_average']}"
    )
    print(json.dumps(r))


if __name__ == "__main__":
    main()
