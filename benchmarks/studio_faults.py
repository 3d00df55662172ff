"""Faults under load: the studio load benchmark runs while its PostgreSQL restarts and its
NATS goes away for a minute.

Run: ``python benchmarks/studio_faults.py [--seconds 240] [--pg-restart-at 40]
[--nats-down-at 100] [--nats-down-for 60] [-- STUDIO_LOAD_OPTIONS...]``.

A private PostgreSQL server (initdb in a temporary folder, a free port) and a private NATS
server (its own store) are started; ``benchmarks/studio_load.py`` runs against them, its
bots retrying 503s as any client does; meanwhile this script restarts PostgreSQL
(``pg_ctl restart -m fast``) at ``--pg-restart-at`` seconds and stops NATS at
``--nats-down-at`` for ``--nats-down-for`` seconds. No process is killed (``--no-kill``;
give ``-- --kill`` to add one). The studio load's own JSON line is printed last, with each
fault's timing added: every public subscriber's and NATS consumer's events against the log
(``lost_events``, ``duplicate_events``) and the money (``ledger_mismatches``) after both
faults. The machine's shared servers are never touched.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from table_service.scratch_servers import NatsServer, private_postgres  # noqa: E402


def say(text: str) -> None:
    print(text, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=240)
    parser.add_argument("--pg-restart-at", type=float, default=40)
    parser.add_argument("--nats-down-at", type=float, default=100)
    parser.add_argument("--nats-down-for", type=float, default=60)
    parser.add_argument("load", nargs=argparse.REMAINDER, help="options for studio_load.py")
    args = parser.parse_args()
    extra = [a for a in args.load if a != "--"]
    binary = shutil.which("nats-server") or "/usr/sbin/nats-server"
    faults: dict[str, float] = {}
    with private_postgres() as pg, tempfile.TemporaryDirectory() as tmp:
        nats = NatsServer(binary, Path(tmp) / "nats")
        nats.start()
        url = pg.createdb("studio")
        command = [
            sys.executable, str(_HERE / "studio_load.py"), "--db", url, "--nats", nats.url,
            "--seconds", str(args.seconds), "--no-kill", *extra,
        ]  # fmt: skip
        say(f"studio load: {' '.join(command[1:])}")
        load = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1)
        lines: list[str] = []
        started: list[float] = []

        def relay() -> None:
            assert load.stdout is not None
            for line in load.stdout:
                lines.append(line)
                sys.stdout.write(line)
                if line.startswith("studio up") and not started:
                    started.append(time.monotonic())

        reader = threading.Thread(target=relay, daemon=True)
        reader.start()
        while not started and load.poll() is None:
            time.sleep(0.2)
        if not started:
            raise SystemExit("the studio load did not start")
        t0 = started[0] + 1.0  # the bots start dealing a second after the studio is up

        def at(seconds: float) -> None:
            time.sleep(max(0.0, t0 + seconds - time.monotonic()))

        at(args.pg_restart_at)
        before = time.monotonic()
        pg.stop("fast")
        pg.start()
        faults["postgres_restart_seconds"] = round(time.monotonic() - before, 2)
        say(f"FAULT PostgreSQL restarted ({faults['postgres_restart_seconds']} s down)")
        at(args.nats_down_at)
        nats.stop()
        say(f"FAULT NATS stopped for {args.nats_down_for:g} s")
        time.sleep(args.nats_down_for)
        nats.start()
        faults["nats_down_seconds"] = args.nats_down_for
        say("FAULT NATS back")
        load.wait()
        reader.join(10)
        nats.stop()
    result = next((json.loads(x) for x in reversed(lines) if x.startswith("{")), None)
    if result is None:
        raise SystemExit(f"studio load failed (exit {load.returncode})")
    result.update(faults)
    result["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
