"""The alert rules and the dashboard in ``deploy/``: the rules load and pass their unit
tests under ``promtool`` (Debian's ``prometheus`` package, installed by ``.ci/run``), the
example Prometheus configuration loads, and the dashboard is a well-formed Grafana model.
That every metric they name is exported is checked against a live scrape in
``test_metrics_live.py``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PROMETHEUS = DEPLOY / "prometheus"


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI") or os.environ.get("LIVETABLE_REQUIRE_NATS"):
            pytest.fail("promtool not installed (apt-get install prometheus)")
        pytest.skip("promtool not installed")
    return found


def _run(*args: str) -> str:
    done = subprocess.run(
        args, cwd=PROMETHEUS, capture_output=True, text=True, timeout=120, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def test_rules_load(promtool: str) -> None:
    output = _run(promtool, "check", "rules", "livetable-rules.yml")
    assert "SUCCESS: 18 rules found" in output


def test_rules_pass_their_unit_tests(promtool: str) -> None:
    assert "SUCCESS" in _run(promtool, "test", "rules", "livetable-rules.test.yml")


def test_every_alert_has_a_unit_test() -> None:
    rules = (PROMETHEUS / "livetable-rules.yml").read_text()
    tests = (PROMETHEUS / "livetable-rules.test.yml").read_text()
    alerts = {line.split(":", 1)[1].strip() for line in rules.splitlines() if "- alert:" in line}
    tested = {line.split(":", 1)[1].strip() for line in tests.splitlines() if "alertname:" in line}
    assert alerts and alerts <= tested, sorted(alerts - tested)


def test_example_configuration_loads(promtool: str) -> None:
    assert "SUCCESS" in _run(promtool, "check", "config", "prometheus.yml")


def test_dashboard_is_a_grafana_model() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "livetable-studio.json").read_text())
    assert dashboard["uid"] == "livetable-studio"
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    titles = {p["title"] for p in panels if p["type"] == "row"}
    assert {"Tables", "Latency", "Money in play", "Incidents and readers"} <= titles
    assert any("NATS" in t for t in titles) and any("Studio" in t for t in titles)
    for panel in panels:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
        box = panel["gridPos"]
        assert box["x"] >= 0 and box["x"] + box["w"] <= 24, panel["title"]
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert variables == {"datasource", "table"}
