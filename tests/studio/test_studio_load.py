"""The studio load benchmark, short: three tables on two processes on PostgreSQL with
NATS, one process SIGKILLed halfway; nothing lost, nothing doubled, the money adds up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
    assert result["subscribers"] == 15
    assert result["commit_p50_ms"] > 0
