"""The regulator's path end to end over real HTTP: a witness process polls the served log
and cosigns; ``audit export --bundle`` and ``audit verify --bundle --witness-key --replay``;
``--read-models``, ``--strict`` and ``--witness-state`` catch what the chain cannot."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from sqlalchemy import text
from typer.testing import CliRunner

from audit.store import NewEvent
from audit.witness import Witness
from table_service.app import create_app
from table_service.cli import app
from table_service.config import Settings
from table_service.principals import add_principal
from table_service.runtime import Runtime
from tests.support.crash_harness import run_cli
from tests.support.table_session import Session


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Runtime, str, dict[str, str]]]:
    env = {
        "LIVETABLE_DATA_DIR": str(tmp_path / "data"),
        "LIVETABLE_LOG_ORIGIN": "studio.example/livetable",
        "LIVETABLE_DATABASE_URL": f"sqlite:///{tmp_path / 'data' / 'livetable.db'}",
    }
    runtime = Runtime.from_settings(
        Settings(
            data_dir=tmp_path / "data",
            log_origin="studio.example/livetable",
            checkpoint_every=10_000,
        ),
        upgrade=True,
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(runtime), host="127.0.0.1", port=port, log_config=None)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield runtime, f"http://127.0.0.1:{port}", env
    server.should_exit = True
    thread.join(timeout=10)
    runtime.close()


def test_witness_bundle_and_replay_through_the_cli(
    served: tuple[Runtime, str, dict[str, str]], tmp_path: Path
) -> None:
    runtime, url, env = served
    Session(runtime).play(6, bets=3, void=(2,))
    with runtime.sessions.begin() as session:
        token = add_principal(session, runtime.store, "w1", "regulator", actor="test")
        runtime.store.checkpoint(session)
    runner = CliRunner()
    vkey = runner.invoke(app, ["audit", "verifier-key"], env=env).stdout.strip()
    state = tmp_path / "witness"
    witness_args = ["audit", "witness", "--log", url, "--verifier-key", vkey, "--state", str(state)]
    done = runner.invoke(
        app, [*witness_args, "--name", "regulator.example/w1", "--token", token, "--once"], env=env
    )
    assert done.exit_code == 0, done.output
    assert "cosigned studio.example/livetable at size" in done.stdout
    witness_key = str(Witness(state).verifier_key)

    exported = runner.invoke(app, ["audit", "export", "--bundle", str(tmp_path / "b")], env=env)
    assert exported.exit_code == 0, exported.output
    bundle_args = ["audit", "verify", "--bundle", str(tmp_path / "b"), "--verifier-key", vkey]
    verified = runner.invoke(app, [*bundle_args, "--witness-key", witness_key, "--replay"], env=env)
    assert verified.exit_code == 0, verified.output
    assert verified.stdout.startswith("OK: ") and "6 rounds replayed, 18 bets" in verified.stdout

    # The report, from the bundle and from the database, agrees with the replay.
    for source in (["--bundle", str(tmp_path / "b")], []):
        reported = runner.invoke(app, ["report", "--by", "table", "--json", *source], env=env)
        assert reported.exit_code == 0, reported.output
        (group,) = json.loads(reported.stdout)
        assert (group["key"], group["rounds"], group["voided"]) == ("t1", 6, 1)
    table_view = runner.invoke(app, ["report", "--by", "dealer"], env=env)
    assert table_view.exit_code == 0 and "dealer:d1" in table_view.stdout

    # An export must go to a new folder; a wrong witness key fails the bundle.
    again = runner.invoke(app, ["audit", "export", "--bundle", str(tmp_path / "b")], env=env)
    assert again.exit_code == 2
    other = str(Witness(tmp_path / "other", "regulator.example/w2").verifier_key)
    wrong = runner.invoke(
        app, ["audit", "verify", "--bundle", str(tmp_path / "b"), "--witness-key", other], env=env
    )
    assert wrong.exit_code == 1 and "not cosigned by witness regulator.example/w2" in wrong.output

    # Read models edited behind the log's back are named.
    assert runner.invoke(app, ["audit", "verify", "--read-models"], env=env).exit_code == 0
    with runtime.engine.begin() as conn:
        conn.execute(text("UPDATE accounts SET balance = balance + 1 WHERE account_id = 'a1'"))
    edited = runner.invoke(app, ["audit", "verify", "--read-models"], env=env)
    assert edited.exit_code == 1 and "account a1: balance" in edited.output


def test_strict_and_the_witness_state_catch_a_tail_and_a_truncation(
    served: tuple[Runtime, str, dict[str, str]], tmp_path: Path
) -> None:
    runtime, url, env = served
    with runtime.sessions.begin() as session:
        token = add_principal(session, runtime.store, "w1", "regulator", actor="test")
        runtime.store.append(session, [NewEvent("t1", "e", "test", {"i": i}) for i in range(40)])
        runtime.store.checkpoint(session)
    runner = CliRunner()
    vkey = runner.invoke(app, ["audit", "verifier-key"], env=env).stdout.strip()
    state = tmp_path / "witness"
    args = ["audit", "witness", "--log", url, "--verifier-key", vkey, "--state", str(state)]
    # The witness as its own process, over HTTP, as at a regulator's.
    witness = run_cli(
        [*args, "--token", token, "--once"],
        env={**os.environ, **env, "LIVETABLE_DATA_DIR": str(tmp_path / "elsewhere")},
        timeout=120,
    )
    assert witness.returncode == 0, witness.stderr
    assert "cosigned studio.example/livetable at size 41" in witness.stdout
    assert not (tmp_path / "elsewhere").exists()  # the witness touches no log of its own

    wkey = str(Witness(state).verifier_key)
    witnessed = runner.invoke(app, ["audit", "verify", "--witness-key", wkey], env=env)
    assert witnessed.exit_code == 0, witnessed.output

    # A correctly chained event after the last checkpoint: refused unless accepted
    # explicitly, and then counted; --strict refuses it once older than the max age.
    with runtime.sessions.begin() as session:
        runtime.store.append(session, [NewEvent("t1", "e", "insider", {"late": True})])
    plain = runner.invoke(app, ["audit", "verify"], env=env)
    assert plain.exit_code == 1 and "first bad sequence number 42" in plain.output
    tail = runner.invoke(app, ["audit", "verify", "--allow-unsigned-tail"], env=env)
    assert tail.exit_code == 0 and "1 unsigned events accepted (sequence 42 on)" in tail.stdout
    strict_env = {**env, "LIVETABLE_CHECKPOINT_MAX_AGE": "1"}
    time.sleep(1.2)
    strict = runner.invoke(
        app, ["audit", "verify", "--allow-unsigned-tail", "--strict"], env=strict_env
    )
    assert strict.exit_code == 1 and "not covered by a checkpoint" in strict.output

    # The last events removed together with the checkpoint that covered them: the chain
    # alone still verifies, the witness's state does not agree.
    with runtime.engine.begin() as conn:
        for table in ("audit_events", "audit_checkpoints", "audit_cosignatures"):
            conn.execute(text(f"DROP TRIGGER IF EXISTS {table}_no_delete"))
        conn.execute(text("DELETE FROM audit_cosignatures"))
        conn.execute(text("DELETE FROM audit_checkpoints"))
        conn.execute(text("DELETE FROM audit_events WHERE seq > 30"))
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    assert runner.invoke(app, ["audit", "verify"], env=env).exit_code == 0
    unwitnessed = runner.invoke(app, ["audit", "verify", "--witness-key", wkey], env=env)
    assert unwitnessed.exit_code == 1 and "is not cosigned by witness" in unwitnessed.output
    caught = runner.invoke(app, ["audit", "verify", "--witness-state", str(state)], env=env)
    assert caught.exit_code == 1 and "truncated: the witness cosigned size 41" in caught.output
    refused = runner.invoke(app, [*args, "--token", token, "--once"], env=env)
    assert refused.exit_code == 1 and "smaller_tree" in refused.output
