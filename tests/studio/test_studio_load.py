"""The studio load benchmark, short: three tables on two processes on PostgreSQL with
NATS, one process SIGKILLed halfway; nothing lost, nothing doubled, the money adds up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from sqlalchemy import Connection

pytestmark = pytest.mark.timeout(400)

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "studio_load.py"


def test_short_studio_load_loses_and_doubles_nothing(pg_database: str, nats_url: str) -> None:
    run = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--db",
            pg_database,
            "--nats",
            nats_url,
            "--tables",
            "3",
            "--processes",
            "2",
            "--seconds",
            "16",
            "--subscribers",
            "12",
            "--nats-consumers",
            "3",
            "--bets",
            "10",
            "--takeover-seconds",
            "3",
            # The idle machine's paced commit, for paced_commit_p50_ms: a p50 of five is
            # one still (the default 40, 200 ms apart, held the start up 8 s).
            "--paced-commits",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=360,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert (result["tables"], result["processes"]) == (3, 2)
    assert result["lost_events"] == 0, run.stdout
    assert result["behind_at_end"] == 0, run.stdout  # every subscriber reached the head
    assert result["duplicate_events"] == 0, run.stdout
    assert result["ledger_mismatches"] == 0, run.stdout
    assert result["takeover_seconds"] is not None and result["takeover_seconds"] <= 3 + 10
    assert result["rounds"] >= 1 and result["bets"] >= 10 and result["events"] > 0
    assert result["pace"] == "human" and result["cards"] >= 4  # the dealers' default pace
    assert result["subscribers"] == 15
    assert result["commit_p50_ms"] > 0
    assert result["paced_commit_p50_ms"] > 0  # the sampler's commit on the idle machine
    # The backend's wait for a CPU is a part of each commit (null: the server not visible).
    if result["run_commit_cpu_wait_p50_ms"] is not None:
        assert 0 <= result["run_commit_cpu_wait_p50_ms"] <= result["run_commit_p99_ms"]
    if result["paced_commit_cpu_wait_p50_ms"] is not None:
        assert 0 <= result["paced_commit_cpu_wait_p50_ms"] <= result["paced_commit_p50_ms"]


def _scratch(url: str) -> ModuleType:
    sys.path.insert(0, str(BENCH.parent))
    import scratch

    return scratch


def _schemas(conn: Connection) -> set[str]:
    from sqlalchemy import text

    rows = conn.execute(text(r"SELECT nspname FROM pg_namespace WHERE nspname LIKE 'scratch\_%'"))
    return set(rows.scalars())


STREAM_WINDOW = 8.0
"""The staleness window of the stream check: NEW, written just before the drop, must still
be inside it when the drop reads it, on a saturated machine too."""


def _wait_session_gone(conn: Connection, pid: int) -> None:
    """Wait until the server has ended backend ``pid`` (a closed client connection) and let
    go of its locks: the backend notices the closed socket when it next reads, not at once."""
    import time

    from sqlalchemy import text

    deadline = time.monotonic() + 60
    while True:
        left = conn.execute(
            text(
                "SELECT (SELECT count(*) FROM pg_stat_activity WHERE pid = :pid)"
                " + (SELECT count(*) FROM pg_locks WHERE pid = :pid)"
            ),
            {"pid": pid},
        ).scalar()
        if not left:
            return
        assert time.monotonic() < deadline, f"backend {pid} still there after 60 s"
        time.sleep(0.05)


def test_only_stale_scratch_schemas_and_streams_are_dropped(
    pg_database: str, nats_url: str
) -> None:
    """A killed run's schema (its lock free, its log quiet) and stream (no message for the
    window) go; a live run's schema (its lock held, or its log just written) and stream
    stay, and names without the prefix are never looked at."""
    import asyncio
    import time
    import uuid

    from sqlalchemy import create_engine, text

    scratch = _scratch(pg_database)
    engine = create_engine(pg_database, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn, engine.connect() as live:
        for name in ("scratch_dead0001", "scratch_held0001", "scratch_busy0001", "keepme_0001"):
            conn.execute(text(f'CREATE SCHEMA "{name}"'))
        for name, ts in (
            ("scratch_dead0001", "2026-01-01T00:00:00.000000Z"),
            ("scratch_busy0001", time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())),
        ):
            conn.execute(text(f'CREATE TABLE "{name}".audit_events (seq int, ts text)'))
            conn.execute(text(f"INSERT INTO \"{name}\".audit_events VALUES (1, '{ts}')"))
        scratch._lock(live, "scratch_held0001", wait=True)  # a run still going
        pid = live.execute(text("SELECT pg_backend_pid()")).scalar()
        assert pid is not None
        assert scratch.drop_stale_schemas(conn) == ["scratch_dead0001"]
        assert _schemas(conn) == {"scratch_held0001", "scratch_busy0001"}
        live.invalidate()  # the run dies: its lock goes with its connection
        _wait_session_gone(conn, pid)
        assert scratch.drop_stale_schemas(conn, stale_seconds=3600) == ["scratch_held0001"]
        for name in ("scratch_busy0001", "keepme_0001"):
            conn.execute(text(f'DROP SCHEMA "{name}" CASCADE'))

    prefix = f"LOADT{uuid.uuid4().hex[:6].upper()}"

    async def streams() -> tuple[list[str], list[str]]:
        import nats

        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        for name in (f"{prefix}OLD", f"{prefix}NEW"):
            await js.add_stream(name=name, subjects=[f"{name.lower()}.>"])
        # OLD is stale once the window has passed since its creation, as the drop measures
        # it (waited for, not slept); NEW's message then leaves it STREAM_WINDOW seconds
        # (less the drop's whole-second rounding) before the drop must have looked at it.
        info = await js.stream_info(f"{prefix}OLD")
        assert info.created is not None
        created = info.created.isoformat()
        deadline = time.monotonic() + 60
        while scratch._age(created) < STREAM_WINDOW:
            assert time.monotonic() < deadline, created
            await asyncio.sleep(0.1)
        await js.publish(f"{prefix.lower()}new.x", b"1")
        dropped = await scratch.drop_stale_streams(nats_url, prefix, stale_seconds=STREAM_WINDOW)
        left = [
            s.config.name
            for s in await js.streams_info()
            if s.config.name is not None and s.config.name.startswith(prefix)
        ]
        for name in left:
            await js.delete_stream(name)
        await nc.close()
        return dropped, left

    assert asyncio.run(streams()) == ([f"{prefix}OLD"], [f"{prefix}NEW"])


def test_a_terminated_run_drops_its_schema_and_stream(
    pg_database: str, nats_url: str, tmp_path: Path
) -> None:
    import asyncio
    import signal
    import time
    import uuid

    from sqlalchemy import create_engine

    stream = f"LOADSIG{uuid.uuid4().hex[:6].upper()}"
    out = tmp_path / "bench.out"
    command = [sys.executable, str(BENCH), "--db", pg_database, "--nats", nats_url,
               "--nats-stream", stream, "--tables", "2", "--processes", "1",
               "--seconds", "300", "--subscribers", "4", "--nats-consumers", "1",
               "--subscriber-procs", "1", "--paced-commits", "1"]  # fmt: skip

    async def names() -> list[str]:
        import nats

        nc = await nats.connect(nats_url)
        found = [s.config.name for s in await nc.jetstream().streams_info() if s.config.name]
        await nc.close()
        return found

    proc = subprocess.Popen(command, stdout=out.open("wb"), stderr=subprocess.STDOUT)
    engine = create_engine(pg_database, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        before = _schemas(conn)
    try:
        # Terminated once its dealers deal (its first "rounds=" report comes 5 s later).
        deadline = time.monotonic() + 240
        while "run started" not in out.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, out.read_text()[-3000:]
            time.sleep(0.05)
        with engine.connect() as conn:
            assert len(_schemas(conn) - before) == 1
        assert stream in asyncio.run(names())  # the serve processes made it as they started
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
    with engine.connect() as conn:
        assert _schemas(conn) == before, out.read_text()[-3000:]
    assert stream not in asyncio.run(names())
