"""`livetable shoe sim` and `livetable shoe read` as separate processes, as a technician
runs them."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shoe_reader.events import EVENT_TYPES
from tests.support.crash_harness import livetable_command

# Bounds are generous (an interpreter starts in seconds on a loaded machine); each wait
# ends as soon as what it waits for has come.
pytestmark = pytest.mark.timeout(240)

SHOE = [sys.executable, "-c", "from table_service.cli.shoe import app; app()"]  # faster start-up


def first_line(proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the simulator printed no device path"
    return proc.stdout.readline().strip()


@pytest.fixture
def sim_factory() -> Iterator[Callable[..., tuple[subprocess.Popen[str], str]]]:
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> tuple[subprocess.Popen[str], str]:
        proc = subprocess.Popen(
            [*SHOE, "sim", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        procs.append(proc)
        return proc, first_line(proc)

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)


def read_events(path: str, *args: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        # the real entry point (the installed script's, forked from the tests' zygote)
        [livetable_command(), "shoe", "read", "--port", path, "--duration", "60", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_framed_sim_and_read(sim_factory: Callable[..., tuple[subprocess.Popen[str], str]]) -> None:
    proc, path = sim_factory("--dialect", "framed", "--seed", "4", "--rate", "20")
    assert os.path.realpath(path).startswith("/dev/pts/")
    events = read_events(path, "--dialect", "framed", "--count", "6")
    assert [e["event"] for e in events] == ["online"] + ["card"] * 5
    assert events[0]["info"] == "LTSIM;1.0;SIM0001"
    for e in events[1:]:
        assert len(e["card"]) == 2 and e["reader_id"] == "shoe"
        assert e["raw"] and e["utc"].endswith("+00:00")
    seqs = [e["seq"] for e in events[1:]]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5 and seqs[0] >= 1
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    assert not os.path.lexists(path)


def test_ascii_sim_driven_from_stdin(
    sim_factory: Callable[..., tuple[subprocess.Popen[str], str]],
) -> None:
    proc, path = sim_factory("--dialect", "ascii", "--seed", "1")
    reader = subprocess.Popen(
        [*SHOE, "read", "--port", path, "--dialect", "ascii", "--count", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert json.loads(first_line(reader))["event"] == "online"
        assert proc.stdin is not None
        proc.stdin.write("deal 2\nburn on\ndeal\nwarn 3\n")
        proc.stdin.flush()
        out, _ = reader.communicate(timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["event"] for e in events] == ["card", "card", "burn_card", "warning"]
    assert events[3]["code"] == "W0x03"
    assert all(e["event"] in EVENT_TYPES for e in events)
    proc.stdin.write("quit\n")
    proc.stdin.flush()
    assert proc.wait(60) == 0


def test_bad_fault_spec_is_refused() -> None:
    out = subprocess.run(
        [*SHOE, "sim", "--faults", "flood=0.5"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 2
    assert "unknown fault" in out.stderr
