"""An operator feed started while NATS is unreachable says so — a structured warning and
``livetable_feed_nats_connected 0`` in its metrics, no traceback per attempt — stops on
SIGTERM while it waits, and when NATS comes up connects and delivers by itself."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.operations.ops_helpers import scrape, value, wait_for
from tests.studio.nats_helpers import NatsServer
from tests.support.crash_harness import livetable_command

pytestmark = pytest.mark.timeout(300)


def _feed(url: str, tmp_path: Path, stream: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    out, err = tmp_path / "feed.out", tmp_path / "feed.err"
    proc = subprocess.Popen(
        [
            livetable_command(), "operator-feed", "--operator", "acme", "--nats", url,
            "--stream", stream, "--metrics", "127.0.0.1:0",
        ],
        stdout=out.open("wb"),
        stderr=err.open("wb"),
    )  # fmt: skip
    return proc, out, err


def _metrics_url(err: Path) -> str:
    found = wait_for(
        lambda: re.search(r"metrics at (\S+)", err.read_text()), "no metrics address printed"
    )
    address: str = found.group(1)
    return address


async def _publish(url: str, stream: str) -> None:
    import nats

    nc = await nats.connect(url)
    try:
        body = {"seq": 7, "table_id": "t1", "type": "bets_settled", "bets": []}
        await nc.jetstream().publish(
            "livetable.operators.acme.t1.bets_settled",
            json.dumps(body).encode(),
            stream=stream,
            headers={"Livetable-Seq": "7"},
        )
    finally:
        await nc.close()


def test_a_feed_says_nats_is_unreachable_and_recovers_when_it_returns(
    tmp_path: Path, nats_binary: str
) -> None:
    nats = NatsServer(nats_binary, tmp_path / "nats")  # a free port, not started yet
    proc, out, err = _feed(nats.url, tmp_path, "FEEDAWAY")
    try:
        metrics = _metrics_url(err)
        wait_for(
            lambda: "operator_feed.nats_unreachable" in err.read_text(),
            "no warning that NATS is unreachable",
        )
        wait_for(
            lambda: value(scrape(metrics), "livetable_feed_nats_connect_failures_total") >= 3,
            "the failed attempts are not counted",
        )
        assert value(scrape(metrics), "livetable_feed_nats_connected", operator="acme") == 0
        text = err.read_text()
        assert nats.url in text and "ConnectionRefusedError" in text
        assert "Traceback" not in text, "a traceback per attempt, not one clear line"
        assert text.count("nats_unreachable") == 1, "repeated at once, not every 30 s"

        nats.start()
        wait_for(
            lambda: value(scrape(metrics), "livetable_feed_nats_connected", operator="acme") == 1,
            "the feed did not connect when NATS came up",
            60,
        )
        wait_for(lambda: "operator_feed.started" in err.read_text(), "no consumer after NATS")
        assert "operator_feed.nats_connected" in err.read_text()
        asyncio.run(_publish(nats.url, "FEEDAWAY"))
        line = wait_for(lambda: out.read_text().strip(), "nothing delivered after NATS came up")
        assert json.loads(line)["seq"] == 7
    finally:
        _stop(proc, nats)


def _stop(proc: subprocess.Popen[bytes], nats: NatsServer) -> None:
    """The feed asked to stop (killed if it will not), then NATS."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        nats.stop()


def test_sigterm_stops_a_feed_still_waiting_for_nats(tmp_path: Path, nats_binary: str) -> None:
    nats = NatsServer(nats_binary, tmp_path / "nats")  # never started
    proc, _, err = _feed(nats.url, tmp_path, "FEEDNEVER")
    try:
        wait_for(
            lambda: "operator_feed.nats_unreachable" in err.read_text(),
            "no warning that NATS is unreachable",
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0  # before: deaf to SIGTERM inside the connect loop
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_feeds_health_checks_say_it_is_up_and_whether_it_reaches_nats(
    tmp_path: Path, nats_binary: str
) -> None:
    """``livetable serve`` answers ``/healthz`` and ``/readyz`` on its API port; the feed,
    which has none, answered neither: a supervisor (systemd, Kubernetes) could only read
    its metrics. Its metrics listener now answers both, in serve's shapes: up at once;
    ready only while NATS is reached (503 with the reason while it is not)."""
    nats = NatsServer(nats_binary, tmp_path / "nats")  # a free port, not started yet
    proc, _, err = _feed(nats.url, tmp_path, "FEEDHEALTH")
    try:
        base = _metrics_url(err).rsplit("/", 1)[0]
        health = httpx.get(f"{base}/healthz", timeout=10)
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        wait_for(lambda: "operator_feed.nats_unreachable" in err.read_text(), "no warning")
        ready = httpx.get(f"{base}/readyz", timeout=10)
        assert ready.status_code == 503, ready.text
        assert ready.json()["status"] == "not ready"
        assert nats.url in ready.json()["reason"]
        nats.start()
        wait_for(
            lambda: httpx.get(f"{base}/readyz", timeout=10).status_code == 200,
            "not ready once NATS came up",
            60,
        )
        assert httpx.get(f"{base}/readyz", timeout=10).json() == {"status": "ready", "reason": ""}
        assert httpx.get(f"{base}/elsewhere", timeout=10).status_code == 404
    finally:
        _stop(proc, nats)
