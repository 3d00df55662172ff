"""Every tampering of the issue is detected, naming the right sequence number (both backends)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from audit.chain import EventBody, event_hash
from audit.export import verify_export, write_export
from audit.merkle import merkle_root
from audit.signing import Signer, checkpoint_body
from audit.store import NewEvent
from audit.verify import VerifyReport, verify_database
from table_service.runtime import Runtime
from tests.support.crash_harness import run_cli


def _fill(runtime: Runtime, n: int = 12) -> None:
    for i in range(n):
        with runtime.sessions.begin() as session:
            runtime.store.append(session, [NewEvent("t1", "e", "test", {"i": i, "s": "x"})])


def _verify(runtime: Runtime) -> VerifyReport:
    with runtime.sessions() as session:
        return verify_database(session, {runtime.signer.key_id: runtime.signer.public_key})


def _tamper(runtime: Runtime, *statements: str, params: dict[str, Any] | None = None) -> None:
    """Bypass the append-only triggers as a database superuser would."""
    with runtime.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL session_replication_role = replica"))
        else:
            for table in ("audit_events", "audit_checkpoints"):
                for action in ("update", "delete"):
                    conn.execute(text(f"DROP TRIGGER IF EXISTS {table}_no_{action}"))
        for statement in statements:
            conn.execute(text(statement), params or {})


def _row(runtime: Runtime, seq: int) -> dict[str, Any]:
    with runtime.engine.connect() as conn:
        return dict(
            conn.execute(text("SELECT * FROM audit_events WHERE seq = :s"), {"s": seq})
            .mappings()
            .one()
        )


def test_untouched_log_verifies(runtime: Runtime) -> None:
    _fill(runtime)
    unsigned = _verify(runtime)  # intact, but no checkpoint vouches for it yet
    assert unsigned.problem is not None and unsigned.problem.kind == "unsigned"
    assert unsigned.first_bad_seq == 1 and unsigned.events == 12
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    report = _verify(runtime)
    assert report.ok and report.events == 12


def test_one_byte_of_a_payload_changed(runtime: Runtime) -> None:
    _fill(runtime)
    _tamper(
        runtime,
        "UPDATE audit_events SET payload = replace(payload, :old, :new) WHERE seq = 7",
        params={"old": '"i":6', "new": '"i":7'},
    )
    report = _verify(runtime)
    assert report.problem is not None
    assert (report.first_bad_seq, report.problem.kind) == (7, "altered")


def test_a_row_deleted(runtime: Runtime) -> None:
    _fill(runtime)
    _tamper(runtime, "DELETE FROM audit_events WHERE seq = 5")
    report = _verify(runtime)
    assert report.problem is not None
    assert (report.first_bad_seq, report.problem.kind) == (5, "missing")


def test_two_rows_swapped(runtime: Runtime) -> None:
    _fill(runtime)
    _tamper(
        runtime,
        "UPDATE audit_events SET seq = -1 WHERE seq = 8",
        "UPDATE audit_events SET seq = 8 WHERE seq = 9",
        "UPDATE audit_events SET seq = 9 WHERE seq = -1",
    )
    assert _verify(runtime).first_bad_seq == 8


def test_a_forged_row_inserted(runtime: Runtime) -> None:
    _fill(runtime)
    before = _row(runtime, 3)
    body = EventBody("t1", None, "payout", "forger", before["ts"], {"amount": 10**6})
    forged_hash = event_hash(4, before["hash"], body.canonical())
    _tamper(
        runtime,
        "UPDATE audit_events SET seq = seq + 1000 WHERE seq >= 4",
        "UPDATE audit_events SET seq = seq - 999 WHERE seq >= 1000",
        "INSERT INTO audit_events (seq, table_id, round_id, type, actor, ts, payload, prev_hash,"
        " hash) VALUES (4, 't1', NULL, 'payout', 'forger', :ts, :payload, :prev,"
        " :hash)",
        params={
            "ts": before["ts"],
            "payload": '{"amount":1000000}',
            "prev": before["hash"],
            "hash": forged_hash,
        },
    )
    report = _verify(runtime)
    assert report.problem is not None
    assert (report.first_bad_seq, report.problem.kind) == (4, "inserted")


def test_a_rewritten_chain_is_caught_by_the_signed_checkpoint(
    make_runtime: Callable[..., Runtime],
) -> None:
    runtime = make_runtime(checkpoint_every=5)
    _fill(runtime)  # checkpoints at 5 and 10
    # The forger recomputes every hash from seq 7 on, so the chain itself is consistent.
    rows = [_row(runtime, s) for s in range(1, 13)]
    rows[6]["payload"] = json.dumps({"i": 999, "s": "x"}, sort_keys=True, separators=(",", ":"))
    statements, params = [], {}
    prev = rows[5]["hash"]
    for r in rows[6:]:
        body = EventBody(
            r["table_id"], r["round_id"], r["type"], r["actor"], r["ts"], json.loads(r["payload"])
        )
        new_hash = event_hash(r["seq"], prev, body.canonical())
        s = r["seq"]
        statements.append(
            f"UPDATE audit_events SET payload = :p{s}, prev_hash = :v{s}, "
            f"hash = :h{s} WHERE seq = {s}"
        )
        params.update({f"p{s}": r["payload"], f"v{s}": prev, f"h{s}": new_hash})
        prev = new_hash
    _tamper(runtime, *statements, params=params)
    report = _verify(runtime)
    assert report.problem is not None and report.problem.kind == "checkpoint root"
    assert report.first_bad_seq == 6 and "6..10" in report.problem.detail


def test_the_tail_truncated_after_a_checkpoint(runtime: Runtime) -> None:
    _fill(runtime, 10)
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    _tamper(runtime, "DELETE FROM audit_events WHERE seq >= 9")
    report = _verify(runtime)
    assert report.problem is not None
    assert (report.first_bad_seq, report.problem.kind) == (9, "truncated")


def test_a_checkpoint_signed_by_another_key(runtime: Runtime) -> None:
    _fill(runtime, 10)
    with runtime.engine.connect() as conn:
        hashes = [
            bytes.fromhex(h)
            for h in conn.execute(text("SELECT hash FROM audit_events ORDER BY seq")).scalars()
        ]
    intruder = Signer.generate()
    root = merkle_root(hashes)
    _tamper(
        runtime,
        "INSERT INTO audit_checkpoints (size, origin, root_hash, key_id, signature, created_at,"
        " frontier) VALUES (10, 'livetable', :root, :kid, :sig, 'x', '[]')",
        params={
            "root": root.hex(),
            "kid": intruder.key_id,
            "sig": intruder.sign(checkpoint_body("livetable", 10, root)),
        },
    )
    report = _verify(runtime)
    assert report.problem is not None
    assert (report.first_bad_seq, report.problem.kind) == (10, "checkpoint signature")
    # Relabelling the forged checkpoint with the real key id does not help either.
    _tamper(
        runtime, "UPDATE audit_checkpoints SET key_id = :k", params={"k": runtime.signer.key_id}
    )
    assert _verify(runtime).first_bad_seq == 10


def test_an_export_verifies_offline_and_detects_edits(runtime: Runtime, tmp_path: Path) -> None:
    _fill(runtime)
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    export = tmp_path / "export.jsonl"
    with runtime.sessions() as session, export.open("w") as out:
        assert write_export(session, runtime.signer, "livetable", out) == 12
    assert verify_export(export, runtime.signer.public_key_b64).ok
    assert not verify_export(export, Signer.generate().public_key_b64).ok
    lines = export.read_text().splitlines()
    lines[3] = lines[3].replace('"i": 2', '"i": 3')
    export.write_text("\n".join(lines) + "\n")
    assert verify_export(export, runtime.signer.public_key_b64).first_bad_seq == 3


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LIVETABLE_DATA_DIR": str(data)}
    env.pop("LIVETABLE_DATABASE_URL", None)
    return run_cli(list(args), env=env, timeout=120)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_cli_principals_then_verify_then_tamper(tmp_path: Path, db_url: str) -> None:
    data = tmp_path / "cli"
    for role in ("dealer", "supervisor", "regulator", "operator", "admin"):
        done = _cli(data, "principal", "add", f"{role}-1", "--role", role)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().startswith("lt_")
    unsigned = _cli(data, "audit", "verify")
    assert unsigned.returncode == 1 and "first bad sequence number 1" in unsigned.stderr
    tail = _cli(data, "audit", "verify", "--allow-unsigned-tail")
    assert tail.returncode == 0 and "5 unsigned events accepted (sequence 1 on)" in tail.stdout
    assert _cli(data, "audit", "checkpoint").returncode == 0
    ok = _cli(data, "audit", "verify")
    assert ok.returncode == 0 and "OK 5 events, 1 signed checkpoints verified" in ok.stdout
    import sqlite3

    conn = sqlite3.connect(data / "livetable.db")
    conn.execute("DROP TRIGGER audit_events_no_update")
    conn.execute(
        "UPDATE audit_events SET payload = replace(payload, 'operator', 'operatoR') WHERE seq = 4"
    )
    conn.commit()
    conn.close()
    bad = _cli(data, "audit", "verify")
    assert bad.returncode == 1
    assert "first bad sequence number 4" in bad.stderr
