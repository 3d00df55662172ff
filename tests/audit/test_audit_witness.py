"""The independent witness: it cosigns only consistent checkpoints, keeps what it saw on
its own disk, and a log rewritten with the studio's own key no longer verifies against
the witness's key."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from audit.note import VerifierKey, open_note, parse_note
from audit.store import NewEvent
from audit.witness import Witness, WitnessRefused, poll_once
from table_service.app import create_app
from table_service.principals import add_principal
from table_service.regulator.bundle import BundleError, verify_bundle, write_bundle
from table_service.runtime import Runtime


def _fill(runtime: Runtime, n: int, tag: str = "x") -> None:
    with runtime.sessions.begin() as session:
        runtime.store.append(
            session, [NewEvent("t1", "e", "test", {"i": i, "t": tag}) for i in range(n)]
        )
        runtime.store.checkpoint(session)


def _tamper(runtime: Runtime, *statements: str) -> None:
    """An insider with database rights: the append-only triggers are bypassed."""
    with runtime.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL session_replication_role = replica"))
        else:
            for table in ("audit_events", "audit_checkpoints", "audit_cosignatures"):
                for action in ("update", "delete"):
                    conn.execute(text(f"DROP TRIGGER IF EXISTS {table}_no_{action}"))
        for statement in statements:
            conn.execute(text(statement))


WitnessedLog = tuple[Runtime, TestClient, VerifierKey, Witness]
"""The runtime, a regulator's client, the log's verifier key and a witness."""


@pytest.fixture
def log(make_runtime: Callable[..., Runtime], tmp_path: Path) -> WitnessedLog:
    runtime = make_runtime(checkpoint_every=100_000, log_origin="studio.example/livetable")
    with runtime.sessions.begin() as session:
        token = add_principal(session, runtime.store, "witness", "regulator", actor="test")
    client = TestClient(create_app(runtime))
    client.headers["Authorization"] = f"Bearer {token}"
    log_key = VerifierKey.parse(str(runtime.store.note_signer.verifier_key))
    witness = Witness(tmp_path / "witness", "regulator.example/w1")
    return runtime, client, log_key, witness


def test_the_witness_cosigns_consistent_checkpoints_and_the_log_serves_them(
    log: WitnessedLog,
) -> None:
    runtime, client, log_key, witness = log
    _fill(runtime, 20)
    size, line = poll_once(witness, client, log_key)
    assert size == 21 and line.startswith("\u2014 regulator.example/w1 ")
    served = client.get("/tlog/checkpoint").text
    assert served.endswith(line)
    note = open_note(served, [log_key])
    assert [s.name for s in note.unverified] == ["regulator.example/w1"]
    _fill(runtime, 300)
    assert poll_once(witness, client, log_key)[0] == 321  # consistency proof 21 → 321 checked
    assert poll_once(witness, client, log_key)[0] == 321  # same checkpoint again: fine
    latest = witness.latest("studio.example/livetable")
    assert latest is not None and latest.size == 321
    # The witness's state survives a restart; its key too.
    again = Witness(witness.dir)
    assert str(again.verifier_key) == str(witness.verifier_key)


def test_history_rewritten_with_the_studio_key_is_refused_and_fails_the_export(
    log: WitnessedLog, tmp_path: Path
) -> None:
    runtime, client, log_key, witness = log
    _fill(runtime, 30)
    poll_once(witness, client, log_key)  # the witness saw size 31
    # The insider rewrites from event 11 on and re-signs with the studio's own key.
    _tamper(
        runtime,
        "DELETE FROM audit_cosignatures",
        "DELETE FROM audit_checkpoints",
        "DELETE FROM audit_events WHERE seq > 10",
    )
    _fill(runtime, 40, tag="rewritten")
    with pytest.raises(WitnessRefused) as refused:
        poll_once(witness, client, log_key)
    assert refused.value.code == "inconsistent"
    assert "31" in refused.value.reason
    bundle = tmp_path / "bundle"
    with runtime.sessions() as session:
        write_bundle(session, runtime.signer.public_key, runtime.store.origin, bundle)
    assert verify_bundle(bundle).events == 50  # the studio key alone is fooled...
    with pytest.raises(BundleError, match=r"not cosigned by witness regulator\.example/w1"):
        verify_bundle(bundle, witness_keys=[witness.verifier_key])  # ...the witness is not


def test_a_second_root_for_the_same_size_and_a_smaller_tree_are_refused(log: WitnessedLog) -> None:
    runtime, client, log_key, witness = log
    _fill(runtime, 30)
    poll_once(witness, client, log_key)
    _tamper(runtime, "DELETE FROM audit_checkpoints", "DELETE FROM audit_events WHERE seq > 10")
    _fill(runtime, 21, tag="fork")
    with pytest.raises(WitnessRefused) as fork:
        poll_once(witness, client, log_key)
    assert fork.value.code == "fork"
    _tamper(runtime, "DELETE FROM audit_checkpoints", "DELETE FROM audit_events WHERE seq > 20")
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    with pytest.raises(WitnessRefused) as smaller:
        poll_once(witness, client, log_key)
    assert smaller.value.code == "smaller_tree"
    refusals = (witness._log_dir("studio.example/livetable") / "refusals.jsonl").read_text()
    assert refusals.count("\n") == 2


def test_a_checkpoint_not_signed_by_the_log_key_is_refused(
    log: WitnessedLog, tmp_path: Path
) -> None:
    runtime, client, log_key, witness = log
    _fill(runtime, 5)
    note = client.get("/tlog/checkpoint").text
    other = Witness(tmp_path / "other", "studio.example/livetable")  # any other key
    with pytest.raises(WitnessRefused) as refused:
        witness.add_checkpoint(
            VerifierKey(log_key.name, 1, other.cosigner.private_key.public_key()),
            note,
            lambda a, b: [],
        )
    assert refused.value.code == "bad_signature"
    body = parse_note(note).text
    # One bit of the log's signature flipped (a text substitution could miss: the
    # signature may hold no given letter, or the letter may sit in base64 padding bits).
    first, *rest = note.split("\n\n", 1)[1].split("\n")
    dash, name, signature = first.split(" ")
    raw = bytearray(base64.b64decode(signature))
    raw[-1] ^= 0x01
    forged_line = f"{dash} {name} {base64.b64encode(bytes(raw)).decode()}"
    forged = body + "\n" + "\n".join([forged_line, *rest])
    with pytest.raises(WitnessRefused):
        witness.add_checkpoint(log_key, forged, lambda a, b: [])
