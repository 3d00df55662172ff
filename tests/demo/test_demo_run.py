"""`livetable demo` end to end: real pty shoe, real reader, real HTTP API, real SQLite.

One seeded run with a mistake every round plays enough rounds for every mistake kind and
a cut card; the assertions are made on the database and the audit log, not on the bots'
own account of what they did.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import func, select

from audit.store import EventStore
from table_service.config import Settings
from table_service.demo.run import DemoOptions, DemoReport, run_demo
from table_service.models import Account, BetRow, IncidentRow, LedgerEntry, RoundRow
from table_service.rules.baccarat import outcome, settle_bet
from table_service.rules.cards import parse_cards
from table_service.runtime import Runtime
from table_service.table.config import TableConfig
from tests.support.crash_harness import run_cli

SEED = 3
ROUNDS = 8


def _options(data_dir: Path, **overrides: object) -> DemoOptions:
    values: dict[str, object] = {
        "port": 0,
        "data_dir": data_dir,
        "rounds": ROUNDS,
        "seed": SEED,
        "betting_seconds": 1.5,
        "mistakes": 1.0,
        "players": 3,
        "cut_after": 20,
        "pause": 0.1,
    }
    values.update(overrides)
    # The overrides are whatever fields a test names: the dataclass takes them as given.
    return DemoOptions(**values)  # type: ignore[arg-type]


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200, color_system=None, force_terminal=False), out


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("LIVETABLE_DATABASE_URL", "LIVETABLE_DATA_DIR", "LIVETABLE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "data"


def _runtime(data_dir: Path) -> Runtime:
    return Runtime.from_settings(Settings(data_dir=data_dir), upgrade=False)


def _audit_verify(data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVETABLE_")}
    env["LIVETABLE_DATA_DIR"] = str(data_dir)
    return run_cli(["audit", "verify"], env=env, timeout=60)


def _check_ledger(runtime: Runtime) -> None:
    """Balances = credits − stakes + returns, and every bet closed exactly once."""
    with runtime.sessions() as s:
        bets = list(s.scalars(select(BetRow)))
        assert bets
        assert {b.status for b in bets} <= {"settled", "refunded"}, "a stake was left open"
        entries = list(s.scalars(select(LedgerEntry)))
        by_bet: dict[str, list[LedgerEntry]] = {}
        for e in entries:
            if e.bet_id:
                by_bet.setdefault(e.bet_id, []).append(e)
        for bet in bets:
            kinds = sorted(e.kind for e in by_bet[bet.bet_id])
            assert kinds == ["return", "stake"], (bet.bet_id, kinds)
            amounts = {e.kind: e.amount for e in by_bet[bet.bet_id]}
            assert amounts["stake"] == -bet.stake
            assert amounts["return"] == bet.returned
        credits = sum(e.amount for e in entries if e.kind == "credit")
        debits = sum(e.amount for e in entries if e.kind == "debit")
        stakes = sum(b.stake for b in bets)
        returns = sum(b.returned or 0 for b in bets)
        balances = s.scalar(select(func.sum(Account.balance)))
        assert balances == credits + debits - stakes + returns
        assert all(a.balance >= 0 for a in s.scalars(select(Account)))


async def test_demo_plays_rounds_with_every_mistake_and_keeps_the_books(clean_env: Path) -> None:
    data_dir = clean_env
    console, out = _console()
    started = time.monotonic()
    report: DemoReport = await run_demo(_options(data_dir), console)
    elapsed = time.monotonic() - started
    text = out.getvalue()

    assert report.rounds_played == ROUNDS
    assert report.stopped_by == "rounds"
    kinds = {kind for _, kind in report.mistakes}
    assert kinds == {"exposed_card", "double_exposure", "missed_scan", "unneeded_card"}

    runtime = _runtime(data_dir)
    try:
        with runtime.sessions() as s:
            rounds = list(s.scalars(select(RoundRow).order_by(RoundRow.opened_seq)))
            incidents = list(s.scalars(select(IncidentRow)))
            events = EventStore.read(s, table_id="bac-1")
        assert len(rounds) == ROUNDS
        assert {r.phase for r in rounds} <= {"settled", "voided"}
        settled = [r for r in rounds if r.phase == "settled"]
        voided = [r for r in rounds if r.phase == "voided"]
        assert voided and settled

        # Every incident the mistakes cause was raised by the table and resolved.
        raised = Counter(i.kind for i in incidents)
        made = Counter(kind for _, kind in report.mistakes)
        assert raised == {
            "card_exposed": made["exposed_card"] + made["double_exposure"],
            "cards_exposed": made["double_exposure"],
            "missed_scan": made["missed_scan"],
            "unneeded_card": made["unneeded_card"],
        }
        assert all(i.status == "resolved" for i in incidents), [
            (i.kind, i.status) for i in incidents
        ]
        # The missed card was entered by the supervisor, at its shoe-order index.
        for incident in (i for i in incidents if i.kind == "missed_scan"):
            assert incident.resolved_by is not None
            assert incident.resolved_by.startswith("supervisor:")
            details = json.loads(incident.details)
            row = next(r for r in rounds if r.round_id == incident.round_id)
            assert json.loads(row.cards)[details["index"]] == details["card"]
        # The unneeded card opened the next round.
        for incident in (i for i in incidents if i.kind == "unneeded_card"):
            card = json.loads(incident.details)["card"]
            later = [r for r in rounds if r.opened_seq > incident.raised_seq]
            assert json.loads(later[0].cards)[0] == card
        # A double exposure voided its round and ended the shoe; so did the cut card.
        types = [(e.type, e.payload) for e in events]
        assert "cut_card_drawn" in {t for t, _ in types}, "no cut card came out"
        ends = [p["reason"] for t, p in types if t == "shoe_ended"]
        assert "cut card" in ends
        assert any("exposed" in reason for reason in ends)
        # After every end of a shoe a new one was inserted (and burnt) before betting.
        in_use = False
        for kind, payload in types:
            if kind == "shoe_inserted":
                in_use = True
            elif kind == "shoe_ended":
                in_use = False
            elif kind == "betting_opened":
                assert in_use, payload["round_id"]
        assert sum(1 for t, _ in types if t == "shoe_inserted") >= len(ends)

        # Results and payouts recomputed from the cards alone agree with the table.
        paytable = TableConfig(table_id="check").rules.paytable  # the default table's
        with runtime.sessions() as s:
            for row in settled:
                result = outcome(parse_cards(json.loads(row.cards)))
                assert row.outcome is not None  # a settled round has its outcome
                assert json.loads(row.outcome)["winner"] == result.winner
                for bet in s.scalars(select(BetRow).where(BetRow.round_id == row.round_id)):
                    again = settle_bet(bet.bet_type, bet.stake, result, paytable)
                    assert (bet.result, bet.returned) == (again.result, again.returned)
            for row in voided:
                for bet in s.scalars(select(BetRow).where(BetRow.round_id == row.round_id)):
                    assert (bet.status, bet.returned) == ("refunded", bet.stake)
        _check_ledger(runtime)
    finally:
        runtime.close()

    verify = _audit_verify(data_dir)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "OK" in verify.stdout
    assert "1 signed checkpoints verified" in verify.stdout  # the demo sealed its log
    assert report.checkpoint_size == events[-1].seq

    # The round log told the story: every outcome, the void, the cut card, the incidents.
    headlines = sum(text.count(w) for w in ("PLAYER wins", "BANKER wins", "TIE "))
    assert headlines == len(settled)
    assert text.count("ROUND VOID") == len(voided)
    assert "CUT CARD" in text
    assert "bets settled: staked" in text
    for incident in incidents:
        assert f"⚠ {incident.incident_id} {incident.kind}" in text
        assert f"✔ {incident.incident_id} by" in text
    assert "rule 6: enters the missed card" in text
    assert elapsed < 120  # generous: the figure that matters is printed by --durations


async def test_demo_restart_reuses_principals_and_voids_an_interrupted_round(
    clean_env: Path,
) -> None:
    """A stop in mid-round refunds the round; a second run on the same data continues."""
    import asyncio

    data_dir = clean_env
    console, out = _console()
    stop = asyncio.Event()

    def stop_when_dealing() -> None:
        if "card       P1" in out.getvalue() or "card       B1" in out.getvalue():
            stop.set()

    async def watcher() -> None:
        while not stop.is_set():
            stop_when_dealing()
            await asyncio.sleep(0.005)

    task = asyncio.create_task(watcher())
    report = await run_demo(_options(data_dir, rounds=0, mistakes=0.0), console, stop=stop)
    await task
    assert report.stopped_by == "interrupt"
    assert report.interrupted_round_voided
    tokens = json.loads((data_dir / "demo-principals.json").read_text())
    assert oct((data_dir / "demo-principals.json").stat().st_mode & 0o777) == "0o600"

    console2, _ = _console()
    report2 = await run_demo(_options(data_dir, rounds=2, mistakes=0.0, seed=11), console2)
    assert report2.rounds_played == 2
    assert json.loads((data_dir / "demo-principals.json").read_text()) == tokens
    runtime = _runtime(data_dir)
    try:
        with runtime.sessions() as s:
            rounds = list(s.scalars(select(RoundRow).order_by(RoundRow.opened_seq)))
            assert [r.phase for r in rounds] == ["voided", "settled", "settled"]
            assert "demo stopped mid-round" in (rounds[0].void_reason or "")
            # The second run changed the shoe the first one left in the table.
            shoes = {r.shoe_no for r in rounds}
            assert len(shoes) == 2
        _check_ledger(runtime)
    finally:
        runtime.close()
    assert _audit_verify(data_dir).returncode == 0


def test_demo_command_stops_cleanly_on_ctrl_c(clean_env: Path) -> None:
    """The typer command in a real process: SIGINT voids the round in play and exits 0."""
    data_dir = clean_env
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVETABLE_")}
    code = (
        "import typer; from table_service.cli.demo import demo; "
        "app = typer.Typer(); app.command()(demo); app()"
    )
    args = ["--port", "0", "--data-dir", str(data_dir), "--seed", "5", "--betting-seconds", "3"]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    try:
        for line in proc.stdout:
            lines.append(line)
            if "betting    open until" in line:
                break
            assert time.monotonic() < deadline, "".join(lines)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    output = "".join(lines) + rest
    assert proc.returncode == 0, output
    assert "stopping" in output
    assert "ROUND VOID (demo stopped mid-round" in output
    assert "demo finished" in output
    assert "Traceback" not in output
    runtime = _runtime(data_dir)
    try:
        with runtime.sessions() as s:
            assert (
                s.scalar(select(func.count()).select_from(BetRow).where(BetRow.status == "open"))
                == 0
            )
    finally:
        runtime.close()
