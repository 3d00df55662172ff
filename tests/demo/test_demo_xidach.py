"""`livetable demo --game xidach` at the standard of the other games: it runs until
stopped, seats as many punters as asked, makes its dealer's mistakes (each handled by
the procedure the rules give), prints the consoles' addresses and tokens, writes the
same timestamped round log, and seals its log with a signed checkpoint on stop."""

from __future__ import annotations

import asyncio
import io
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import select

from audit.store import EventStore
from table_service.config import Settings
from table_service.demo.run import DemoError
from table_service.demo.xidach import XiDachDemoOptions, XiDachReport, run_xidach_demo
from table_service.models import IncidentRow
from table_service.regulator.readmodels import check_read_models
from table_service.runtime import Runtime
from tests.support.crash_harness import run_cli

CLOCK_LINE = re.compile(r"^\d\d:\d\d:\d\d ")
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d (?:s\d+·g\d+| {5}) {2,}(\S+) +(\S+)")
# The demo's page of the manual (it was the README's before the manual).
README = (Path(__file__).parents[2] / "docs" / "demo.md").read_text(encoding="utf-8")


def readme_first_screen() -> list[str]:
    """The manual's first screen of `livetable demo --game xidach --rounds 0`."""
    after = README.split("A first run of `livetable demo --game xidach --rounds 0` prints", 1)[1]
    block = after.split("```", 2)[1]
    return [line for line in block.splitlines()[1:] if line.strip()]


async def _until_stopped(
    options: XiDachDemoOptions, console: Console, out: io.StringIO, rounds: int
) -> XiDachReport:
    """Run with ``rounds=0`` (until stopped) and stop, as Ctrl-C does, once the log shows
    ``rounds`` rounds opened and the last of them finished."""
    stop = asyncio.Event()
    task = asyncio.create_task(run_xidach_demo(options, console, stop=stop))
    marker = f"round {rounds + 1} · "
    while marker not in out.getvalue() and not task.done():
        await asyncio.sleep(0.1)
    stop.set()
    return await task


def test_the_xidach_demo_runs_until_stopped_with_mistakes_and_seals_its_log(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None, force_terminal=False)
    options = XiDachDemoOptions(
        profile="classic",
        port=0,
        data_dir=tmp_path,
        rounds=0,
        seed=8,
        punters=2,
        mistakes=1.0,
        timer_seconds=1,
        betting_seconds=1.5,
        log_file=tmp_path / "livetable.log",  # said in the banner, as the CLI says it
        metrics_url="http://127.0.0.1:9464/metrics",
    )
    report = asyncio.run(_until_stopped(options, console, out, 4))
    text = out.getvalue()
    assert report.stopped_by == "interrupt"
    assert report.rounds_settled + report.rounds_voided >= 4  # not capped at any count
    assert report.settle_checks_failed == 0 and not report.problems
    # the same banner as the other demos: pages, tokens, what runs where
    for page in ("/console/dealer", "/console/supervisor", "/overlay/xd-classic", "/recall/"):
        assert page in text
    tokens = re.findall(r"(dealer|supervisor|regulator) token +(lt_\S+)", text)
    assert {role for role, _ in tokens} == {"dealer", "supervisor", "regulator"}
    assert "betting 1.5 s · 2 punters · mistakes 100% of rounds" in text
    # every line of the log starts with its clock and none is wider than a line needs
    lines = [line for line in text.splitlines() if line and not line.startswith("─")]
    assert all(CLOCK_LINE.match(line) or "audit log sealed" in line for line in lines), [
        line for line in lines if not CLOCK_LINE.match(line)
    ][:3]
    assert "round 1 · xd-classic-s1-g1" in text and "round 2 · xd-classic-s2-g1" in text
    assert "1 punters" not in text
    # the README's first screen is in this format, line by line, and says what it says
    shown = readme_first_screen()
    assert len(shown) >= 20
    real = {m.groups() for m in map(LOG_LINE.match, text.splitlines()) if m}
    for line in shown:
        if line.startswith("─"):
            continue
        match = LOG_LINE.match(line)
        assert match, f"README line not in the round log's format: {line!r}"
        label, word = match.groups()
        assert label in {lbl for lbl, _ in real}, line
        if label == "demo":  # the banner: the same things, in the same words
            assert (label, word) in real, line

    runtime = Runtime.from_settings(Settings(data_dir=tmp_path))
    try:
        with runtime.sessions() as session:
            assert check_read_models(session) == []
            events = EventStore.read(session)
            incidents = list(session.scalars(select(IncidentRow)))
            checkpoint = runtime.store._latest_checkpoint(session)
    finally:
        runtime.close()
    # two punters a round, never more: seats 1 and 2
    seats = {b["seat"] for e in events if e.type == "bets_placed" for b in e.payload["bets"]}
    assert seats <= {1, 2}
    # the dealer's own mistakes, each raised by the table and handled by its procedure
    made = Counter(kind for _, kind in report.mistakes)
    assert len(made) >= 3, made
    raised = Counter(i.kind for i in incidents)
    assert raised["missed_scan"] == made["missed_scan"]
    assert raised["card_not_owed"] == made["card_not_owed"]
    assert raised["cards_exposed"] == made["double_exposure"]
    assert all(i.status == "resolved" for i in incidents)
    for incident in incidents:
        assert f"⚠ {incident.incident_id} {incident.kind}" in text
    # signed at the head on stop: an export bundle takes the demo's log as it is
    assert checkpoint is not None and checkpoint.size == events[-1].seq
    assert f"signed checkpoint at event {events[-1].seq}" in text
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVETABLE_")}
    bundle = tmp_path / "bundle"
    done = run_cli(
        ["audit", "export", "--bundle", str(bundle), "--data-dir", str(tmp_path)],
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_more_punters_than_the_profile_seats_is_refused(tmp_path: Path) -> None:
    console = Console(file=io.StringIO())
    options = XiDachDemoOptions(profile="classic", port=0, data_dir=tmp_path, punters=6)
    with pytest.raises(DemoError, match="seats 1 to 5 punters"):
        asyncio.run(run_xidach_demo(options, console))
