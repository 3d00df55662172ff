"""A scrape of a running studio shows its metrics moving, and every metric the alert rules
and the dashboard in ``deploy/`` name is one the code really exports.

A real ``livetable serve`` (a studio member, with its framed virtual shoe and NATS) plays
a round with bets, a refused bet, an incident and a public stream subscriber; a real
``livetable operator-feed --webhook`` delivers the operator's messages to an endpoint that
first answers 503 (a retry), then refuses one message with 422 (a dead letter), then 200.
Both processes expose metrics on a listener of their own; the API port does not.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from hardware_sim.virtual_shoe import ShoeLockedError, VirtualShoe
from tests.studio.nats_helpers import NatsServer
from tests.support.crash_harness import Server, free_port, open_runtime, principals, server_env

pytestmark = pytest.mark.timeout(300)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")
# Series that are not this code's: Prometheus' own ``up`` and the client's process metrics.
NOT_OURS = {"up", "time"}


def scrape(url: str) -> dict[str, float]:
    """Every sample of a /metrics answer, ``name{labels}`` → value."""
    answer = httpx.get(url, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    samples = {}
    for line in answer.text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        match = SAMPLE.match(line)
        assert match, line
        samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples


def families(samples: dict[str, float]) -> set[str]:
    """The metric names of a scrape, histograms and counters by their family name too."""
    names = set()
    for key in samples:
        name = key.split("{", 1)[0]
        names.add(name)
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix):
                names.add(name[: -len(suffix)])
    return names


def value(samples: dict[str, float], name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    total, found = 0.0, False
    for key, v in samples.items():
        if key.split("{", 1)[0] != name:
            continue
        if all(f'{k}="{val}"' in key for k, val in labels.items()):
            total += v
            found = True
    assert found, f"no sample of {name} {labels}"
    return total


def named_in_deploy() -> set[str]:
    """Every metric name the alert rules and the dashboard query."""
    texts = [(DEPLOY / "prometheus" / "livetable-rules.yml").read_text()]
    dashboard = json.loads((DEPLOY / "grafana" / "livetable-studio.json").read_text())

    def exprs(node: Any) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                if key in ("expr", "query", "definition") and isinstance(item, str):
                    texts.append(item)
                else:
                    exprs(item)
        elif isinstance(node, list):
            for item in node:
                exprs(item)

    exprs(dashboard)
    names = set()
    for text in texts:
        names |= set(re.findall(r"\b((?:livetable|process)_[a-z0-9_]+)", text))
    return {re.sub(r"_(bucket|sum|count)$", "", n) if n.endswith("_bucket") else n for n in names}


def wait_for(condition: Callable[[], Any], what: str, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


class Endpoint:
    """An operator's webhook: 503 to its first request, 422 to the first message of a
    second event, 200 to everything else; records what it accepted."""

    def __init__(self) -> None:
        self.accepted: list[int] = []
        self.requests = 0
        self.refused: int | None = None
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                seq = int(json.loads(body)["seq"])
                endpoint.requests += 1
                if endpoint.requests == 1:
                    status = 503
                elif (
                    endpoint.refused is None and endpoint.accepted and seq not in endpoint.accepted
                ):
                    endpoint.refused = seq
                    status = 422
                else:
                    endpoint.accepted.append(seq)
                    status = 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_studio_metrics_move_and_deploy_names_exist(tmp_path: Path, nats_binary: str) -> None:
    nats = NatsServer(nats_binary, tmp_path / "nats")
    nats.start()
    nats_url = nats.url
    stream = f"METRICS{uuid.uuid4().hex[:8].upper()}"
    metrics_port = free_port()
    env = server_env(
        tmp_path / "data",
        "sqlite",
        nats_url=nats_url,
        nats_stream=stream,
        metrics_address=f"127.0.0.1:{metrics_port}",
        log_level="INFO",
    )
    runtime = open_runtime(env)
    tokens = principals(runtime, "metrics")
    shoe = VirtualShoe("framed", decks=8, seed=7, cut_depth=52, link_path=str(tmp_path / "shoe"))
    shoe.start()
    tables = tmp_path / "tables.toml"
    tables.write_text(
        '[[tables]]\ntable_id = "m-1"\nbetting_seconds = 600\n'
        f'shoe = {{ port = "{shoe.device_path}", dialect = "framed" }}\n'
    )
    server = Server(env, tables, tmp_path / "serve.log", "node-m")
    endpoint = Endpoint()
    feed: subprocess.Popen[bytes] | None = None
    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    try:
        server.start()
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        # serve says where its metrics are; the API port has none (no token opens it)
        wait_for(lambda: f"metrics at {metrics_url}" in server.tail(), "serve printed no address")
        assert httpx.get(f"{server.base}/metrics").status_code == 404
        assert httpx.get(f"http://127.0.0.1:{metrics_port}/other").status_code == 404

        feed_env = {**env, "LIVETABLE_METRICS_ADDRESS": "127.0.0.1:0"}
        feed = subprocess.Popen(
            [
                sys.executable, "-m", "table_service.cli", "operator-feed",
                "--operator", "metrics-operator", "--nats", nats_url, "--stream", stream,
                "--webhook", endpoint.url, "--secret-file", str(secret),
                "--max-backoff", "0.2", "--dead-letters", str(tmp_path / "dead.jsonl"),
            ],
            env=feed_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        assert feed.stderr is not None
        line = feed.stderr.readline().decode()
        found = re.search(r"metrics at (http://\S+)", line)
        assert found, line
        feed_url = found.group(1)

        http = httpx.Client(base_url=f"{server.base}/api/v1", timeout=30)

        def call(role: str, method: str, path: str, **kw: Any) -> dict[str, Any]:
            answer = http.request(
                method, path, headers={"Authorization": f"Bearer {tokens[role]}"}, **kw
            )
            assert answer.status_code == 200, (path, answer.status_code, answer.text)
            return answer.json()  # type: ignore[no-any-return]

        def table() -> dict[str, Any]:
            return call("supervisor", "GET", "/tables/m-1")

        call(
            "operator",
            "POST",
            "/accounts/acct-1/credit",
            json={"amount": 10_000, "reference": "c1"},
        )
        wait_for(lambda: table()["reader_online"], "the shoe never came online")
        call("supervisor", "POST", "/tables/m-1/shoe")

        def deal() -> None:
            before = table()["shoe"]["cards_seen"]
            deadline = time.monotonic() + 60
            while True:
                try:
                    card = shoe.deal()
                    break
                except ShoeLockedError:
                    assert time.monotonic() < deadline, "the shoe stayed locked"
                    time.sleep(0.01)
            assert card not in (None, "CUT")
            wait_for(lambda: table()["shoe"]["cards_seen"] > before, "card not recorded")

        while not table()["shoe"]["ready"]:
            deal()
        with connect(f"ws://127.0.0.1:{server.port}/api/v1/public/tables/m-1/stream") as ws:
            call("dealer", "POST", "/tables/m-1/betting/open")
            bets = [
                {"key": "b1", "account": "acct-1", "type": "player", "stake": 1000},
                {"key": "b2", "account": "acct-1", "type": "banker", "stake": 2000},
            ]
            answer = call("operator", "POST", "/tables/m-1/bets", json={"bets": bets})
            assert [r["status"] for r in answer["results"]] == ["placed", "placed"]
            refused = call(
                "operator", "POST", "/tables/m-1/bets",
                json={"bets": [{"key": "b3", "account": "acct-1", "type": "tie", "stake": 9000}]},
            )  # fmt: skip
            assert refused["results"][0]["status"] == "refused", refused
            mid = scrape(metrics_url)
            assert value(mid, "livetable_stakes_in_play_minor_units", table="m-1") == 3000
            assert value(mid, "livetable_bets_open", table="m-1") == 2
            assert value(mid, "livetable_round_in_progress", table="m-1") == 1
            assert value(mid, "livetable_stream_subscribers", audience="public") == 1
            call("dealer", "POST", "/tables/m-1/betting/close")
            while table()["round"]["phase"] == "dealing":
                deal()
            assert table()["round"]["phase"] == "settled", table()["round"]
            ws.recv(timeout=10)
        # an incident raised and resolved, then one left open
        for _ in range(2):
            raised = call(
                "dealer", "POST", "/tables/m-1/incidents",
                json={"kind": "other", "details": {"note": "metrics test"}},
            )  # fmt: skip
            assert value(scrape(metrics_url), "livetable_incidents_open", kind="other") == 1
            if _ == 0:
                call(
                    "supervisor", "POST",
                    f"/tables/m-1/incidents/{raised['incident_id']}/resolve",
                    json={"note": "looked at it"},
                )  # fmt: skip

        after = wait_for(
            lambda: (
                (s := scrape(metrics_url))
                and value(s, "livetable_commit_to_subscriber_seconds_count", table="m-1") > 0
                and s
            ),
            "no delivery to the subscriber was timed",
        )
        assert value(after, "livetable_rounds_total", table="m-1", result="settled") == 1
        assert value(after, "livetable_rounds_total", table="m-1", result="voided") == 0
        assert value(after, "livetable_bets_placed_total", table="m-1") == 2
        reasons = {k for k in after if k.startswith("livetable_bets_refused_total")}
        assert value(after, "livetable_bets_refused_total", table="m-1") == 1, reasons
        assert value(after, "livetable_scan_to_commit_seconds_count", table="m-1") >= 4
        assert value(after, "livetable_commit_duration_seconds_count", table="m-1") >= 10
        assert value(after, "livetable_stakes_in_play_minor_units", table="m-1") == 0
        assert value(after, "livetable_incidents_open", table="m-1", kind="other") == 1
        assert value(after, "livetable_incident_open_age_seconds", kind="other") >= 0
        assert value(after, "livetable_reader_online", table="m-1") == 1
        assert value(after, "livetable_reader_silence_seconds", table="m-1") < 30
        assert value(after, "livetable_table_lease_held", table="m-1", node="node-m") == 1
        assert value(after, "livetable_table_lease_fencing_token", table="m-1") >= 1
        assert value(after, "livetable_lease_acquired_total", table="m-1") == 1
        assert value(after, "livetable_lease_lost_total", table="m-1") == 0
        assert value(after, "livetable_nats_connected") == 1
        assert value(after, "livetable_db_pool_size", pool="write") >= 1
        assert value(after, "livetable_http_responses_total", code="200") > 10
        # the incident's age grows between two scrapes: it is read at scrape time
        first = value(after, "livetable_incident_open_age_seconds", table="m-1")
        time.sleep(1.1)
        later = scrape(metrics_url)
        assert value(later, "livetable_incident_open_age_seconds", table="m-1") > first
        wait_for(
            lambda: (
                value(scrape(metrics_url), "livetable_nats_outbox_lag_events", table="m-1") == 0
            ),
            "the outbox never caught up",
        )

        # the operator's feed: delivered, one retry, one dead letter
        feed_samples = wait_for(
            lambda: (
                (s := scrape(feed_url))
                and value(s, "livetable_feed_dead_letters_total") >= 1
                and value(s, "livetable_feed_deliveries_total", outcome="delivered") >= 1
                and s
            ),
            "the feed delivered nothing",
        )
        assert value(feed_samples, "livetable_feed_retries_total") >= 1
        assert value(feed_samples, "livetable_feed_delivery_lag_seconds_count") >= 2
        assert value(feed_samples, "livetable_feed_last_delivery_timestamp_seconds") > 0
        wait_for(
            lambda: "livetable_feed_pending_messages" in families(scrape(feed_url)),
            "no feed backlog gauge",
        )

        exported = families(scrape(metrics_url)) | families(scrape(feed_url))
        missing = sorted(n for n in named_in_deploy() - exported if n not in NOT_OURS)
        assert not missing, f"deploy/ names metrics no process exports: {missing}"
    finally:
        if feed is not None:
            feed.terminate()
            feed.wait(20)
        server.stop()
        endpoint.close()
        shoe.stop()
        runtime.close()
        nats.stop()
