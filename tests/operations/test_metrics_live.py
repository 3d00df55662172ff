"""A scrape of a running studio shows its metrics moving, every metric the alert rules and
the dashboard in ``deploy/`` name is one the code really exports, and a real Prometheus
with those rules evaluates them all on the real series and fires the one whose condition
the test creates (an operator's message dead-lettered).

A real ``livetable serve`` (a studio member, with its framed virtual shoe and NATS) plays
a round with bets, a refused bet, an incident and a public stream subscriber; a real
``livetable operator-feed --webhook`` delivers the operator's messages to an endpoint that
first answers 503 (a retry), then refuses one message with 422 (a dead letter), then 200.
Both processes expose metrics on a listener of their own; the API port does not.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from tests.operations.ops_helpers import Endpoint, ShoeStudio, scrape, value, wait_for
from tests.studio.nats_helpers import NatsServer
from tests.support.crash_harness import free_port, livetable_command

pytestmark = pytest.mark.timeout(300)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# Series that are not this code's: Prometheus' own ``up`` and the client's process metrics.
NOT_OURS = {"up", "time"}


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


class Prometheus:
    """Debian's Prometheus server (it comes with promtool) scraping the serve and the
    feed every second with the rules of deploy/; not running where it is not installed."""

    def __init__(self, folder: Path, serve_url: str, feed_url: str) -> None:
        binary = shutil.which("prometheus")
        self.proc: subprocess.Popen[bytes] | None = None
        self.running = binary is not None
        if binary is None:
            if os.environ.get("CI"):  # .ci/run installs Debian's prometheus
                pytest.fail("prometheus not installed")
            return
        folder.mkdir()
        shutil.copy(DEPLOY / "prometheus" / "livetable-rules.yml", folder)

        def target(url: str) -> str:
            return url.removeprefix("http://").split("/", 1)[0]

        jobs = {"livetable-serve": serve_url, "livetable-feed": feed_url}
        config = {  # JSON is YAML
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": ["livetable-rules.yml"],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": [target(url)]}]}
                for job, url in jobs.items()
            ],
        }
        (folder / "prometheus.yml").write_text(json.dumps(config))
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, f"--config.file={folder / 'prometheus.yml'}",
             f"--storage.tsdb.path={folder / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=(folder / "log").open("wb"),
        )  # fmt: skip
        wait_for(
            lambda: self.query('count(up{job=~"livetable-.*"} == 1)') == ["2"],
            "Prometheus did not scrape the serve and the feed",
        )

    def _get(self, path: str, **params: str) -> Any:
        try:
            answer = httpx.get(f"http://127.0.0.1:{self.port}{path}", params=params, timeout=5)
        except httpx.TransportError:
            return None
        return answer.json()["data"] if answer.status_code == 200 else None

    def query(self, expr: str) -> list[str]:
        data = self._get("/api/v1/query", query=expr)
        return [r["value"][1] for r in data["result"]] if data else []

    def alerts(self) -> list[dict[str, Any]]:
        data = self._get("/api/v1/alerts")
        return list(data["alerts"]) if data else []

    def firing(self, name: str) -> dict[str, Any] | None:
        found = [a for a in self.alerts() if a["labels"]["alertname"] == name]
        return next((a for a in found if a["state"] == "firing"), None)

    def rules(self) -> list[dict[str, Any]]:
        data = self._get("/api/v1/rules")
        return [r for g in data["groups"] for r in g["rules"]] if data else []

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)


def test_studio_metrics_move_and_deploy_names_exist(tmp_path: Path, nats_binary: str) -> None:
    nats = NatsServer(nats_binary, tmp_path / "nats")
    nats.start()
    stream = f"METRICS{uuid.uuid4().hex[:8].upper()}"
    studio = ShoeStudio(
        tmp_path, "sqlite", ["m-1"],
        settings={"nats_url": nats.url, "nats_stream": stream, "log_level": "INFO"},
    )  # fmt: skip
    server, metrics_url = studio.server, studio.metrics_url
    metrics_port = studio.metrics_port
    # The operator's endpoint: a 503 first (a retry), then it takes the first message and
    # refuses the next one with a 422 (a dead letter), then it takes everything.
    taken: list[int] = []
    dead: list[int] = []

    def status(seq: int, n: int) -> int:
        if n == 1:
            return 503
        if taken and not dead and seq not in taken:
            dead.append(seq)
            return 422
        taken.append(seq)
        return 200

    endpoint = Endpoint(status)
    feed: subprocess.Popen[bytes] | None = None
    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    try:
        server.start()
        # serve says where its metrics are; the API port has none (no token opens it)
        wait_for(lambda: f"metrics at {metrics_url}" in server.tail(), "serve printed no address")
        assert httpx.get(f"{server.base}/metrics").status_code == 404
        for role in ("operator", "dealer", "supervisor"):  # with any token either
            token = {"Authorization": f"Bearer {studio.tokens[role]}"}
            assert httpx.get(f"{server.base}/metrics", headers=token).status_code == 404
        assert httpx.get(f"http://127.0.0.1:{metrics_port}/other").status_code == 404
        exposition = httpx.get(metrics_url)
        assert exposition.headers["content-type"].startswith("text/plain; version=0.0.4")

        feed_env = {**studio.env, "LIVETABLE_METRICS_ADDRESS": f"127.0.0.1:{free_port()}"}
        feed_log = tmp_path / "feed.log"
        feed = subprocess.Popen(
            [
                livetable_command(), "operator-feed",
                "--operator", "ops-operator", "--nats", nats.url, "--stream", stream,
                "--webhook", endpoint.url, "--secret-file", str(secret),
                "--max-backoff", "0.2", "--dead-letters", str(tmp_path / "dead.jsonl"),
            ],
            env=feed_env,
            stdout=subprocess.DEVNULL,
            stderr=feed_log.open("wb"),
        )  # fmt: skip
        found = wait_for(
            lambda: re.search(r"metrics at (http://\S+)", feed_log.read_text()),
            "operator-feed printed no metrics address",
        )
        feed_url = found.group(1)

        call = studio.ok

        def table() -> dict[str, Any]:
            return studio.table("m-1")

        credit = {"amount": 10_000, "reference": "c1"}
        call("operator", "POST", "/accounts/acct-1/credit", json=credit)
        prometheus = Prometheus(tmp_path / "prometheus", metrics_url, feed_url)
        studio.ready_shoe("m-1")
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
            assert studio.finish_round("m-1")["phase"] == "settled"
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
        assert value(after, "livetable_table_lease_held", table="m-1", node="node-ops") == 1
        assert value(after, "livetable_table_lease_fencing_token", table="m-1") >= 1
        assert value(after, "livetable_lease_acquired_total", table="m-1") == 1
        assert value(after, "livetable_lease_lost_total", table="m-1") == 0
        assert value(after, "livetable_nats_connected") == 1
        assert value(after, "livetable_db_pool_size", pool="write") >= 1
        assert value(after, "livetable_http_responses_total", code="200") > 10
        # the incident's age grows between two scrapes: it is read at scrape time
        first = value(after, "livetable_incident_open_age_seconds", table="m-1")
        wait_for(
            lambda: (
                value(scrape(metrics_url), "livetable_incident_open_age_seconds", table="m-1")
                > first
            ),
            "the open incident's age never grew between scrapes",
        )
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

        # Prometheus' own linter on both expositions: names, units, _total, help texts.
        promtool = shutil.which("promtool")
        if promtool is not None:
            for url in (metrics_url, feed_url):
                lint = subprocess.run(
                    [promtool, "check", "metrics"], input=httpx.get(url, timeout=10).text,
                    capture_output=True, text=True, timeout=60, check=False,
                )  # fmt: skip
                assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
        # A real Prometheus scraping both with the rules of deploy/: every rule evaluates
        # on the real series, and the operator's dead letter fires its alert.
        if prometheus.running:
            alert = wait_for(
                lambda: prometheus.firing("LivetableFeedDeadLetters"),
                "Prometheus did not fire LivetableFeedDeadLetters",
            )
            assert alert["labels"]["operator"] == "ops-operator"
            rules = prometheus.rules()
            assert len(rules) == 18
            assert all(r["health"] == "ok" and not r.get("lastError") for r in rules), rules
            quiet = {"LivetableTableUnowned", "LivetableLeaseLost", "LivetableErrorRate"}
            assert not quiet & {a["labels"]["alertname"] for a in prometheus.alerts()}
        exported = families(scrape(metrics_url)) | families(scrape(feed_url))
        missing = sorted(n for n in named_in_deploy() - exported if n not in NOT_OURS)
        assert not missing, f"deploy/ names metrics no process exports: {missing}"
    finally:
        if "prometheus" in locals():
            prometheus.stop()
        if feed is not None:
            feed.terminate()
            feed.wait(20)
        studio.close()
        endpoint.close()
        nats.stop()
