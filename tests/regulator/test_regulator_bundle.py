"""Regulator export bundles: every payout of a real baccarat session recomputed from the
events through the rules code; an insider's rewritten payout (chain recomputed and
re-signed with the studio's key) is named; so is any edit of the bundle's files."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.orm import Session as OrmSession

from audit.chain import EventBody, event_hash
from audit.verify import verify_database
from table_service.regulator.bundle import (
    MANIFEST,
    BundleError,
    BundleSummary,
    Scope,
    _write_manifest,
    verify_bundle,
    write_bundle,
)
from table_service.regulator.readmodels import check_read_models
from table_service.runtime import Runtime
from tests.support.table_session import Session


def _bundle(runtime: Runtime, path: Path, scope: Scope | None = None) -> BundleSummary:
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    with runtime.sessions() as session:
        return write_bundle(session, runtime.signer.public_key, runtime.store.origin, path, scope)


Played = tuple[Runtime, list[str]]
"""A runtime and the round ids of the session played on it."""


@pytest.fixture
def played(make_runtime: Callable[..., Runtime]) -> Played:
    runtime = make_runtime(checkpoint_every=200, log_origin="studio.example/livetable")
    table = Session(runtime)
    rounds = table.play(12, bets=5, void=(4,))
    return runtime, rounds


def test_a_session_replays_and_every_payout_is_recomputed(played: Played, tmp_path: Path) -> None:
    runtime, rounds = played
    summary = _bundle(runtime, tmp_path / "b")
    assert summary.rounds == 12
    names = {p.name for p in (tmp_path / "b").iterdir()}
    assert {
        "events.jsonl",
        "checkpoints",
        "verifier.key",
        "rules",
        "rounds.jsonl",
        MANIFEST,
    } <= names
    report = verify_bundle(tmp_path / "b", replay=True)
    with runtime.engine.connect() as conn:
        staked = conn.execute(text("SELECT SUM(stake) FROM bets")).scalar_one()
        returned = conn.execute(text("SELECT SUM(returned) FROM bets")).scalar_one()
        events = conn.execute(text("SELECT COUNT(*) FROM audit_events")).scalar_one()
    assert report.summary() == (
        f"OK: {events} events, 12 rounds replayed, 60 bets, staked {staked}, returned {returned}"
    )
    lines = [json.loads(x) for x in (tmp_path / "b" / "rounds.jsonl").read_text().splitlines()]
    assert [x["round_id"] for x in lines] == rounds
    assert [x["status"] for x in lines].count("voided") == 1
    first = lines[0]
    assert first["game"] == "baccarat" and set(first["settle_input"]) == {
        "round",
        "game_number",
        "cards",
        "bets",
    }
    assert (tmp_path / "b" / first["rules"]).exists()


def _rewrite_payout(runtime: Runtime, bet_id: str, delta: int) -> int:
    """An insider raises one bet's recorded return, recomputes every later hash, replaces
    the checkpoints with new ones signed by the studio key, and fixes the ledger to match."""
    with runtime.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL session_replication_role = replica"))
        else:
            for t in ("audit_events", "audit_checkpoints", "ledger_entries"):
                for action in ("update", "delete"):
                    conn.execute(text(f"DROP TRIGGER IF EXISTS {t}_no_{action}"))
        rows = conn.execute(text("SELECT * FROM audit_events ORDER BY seq")).mappings().all()
        target: int = next(
            r["seq"] for r in rows if r["type"] == "bets_settled" and f'"{bet_id}"' in r["payload"]
        )
        prev = None
        for row in rows:
            payload = json.loads(row["payload"])
            if row["seq"] < target:
                prev = row["hash"]
                continue
            if row["seq"] == target:
                for item in payload["results"]:
                    if item["bet_id"] == bet_id:
                        item["returned"] += delta
                        account = item["account"]
            body = EventBody(
                row["table_id"], row["round_id"], row["type"], row["actor"], row["ts"], payload
            )
            assert prev is not None  # the rows before the target set it
            digest = event_hash(row["seq"], prev, body.canonical())
            conn.execute(
                text(
                    "UPDATE audit_events SET payload = :p, prev_hash = :prev, hash = :h"
                    " WHERE seq = :s"
                ),
                {
                    "p": json.dumps(payload, sort_keys=True, separators=(",", ":")),
                    "prev": prev,
                    "h": digest,
                    "s": row["seq"],
                },
            )
            prev = digest
        conn.execute(text("DELETE FROM audit_checkpoints"))
        conn.execute(  # the return entry is the settlement: the bets view follows it
            text(
                "UPDATE ledger_entries SET amount = amount + :d"
                " WHERE bet_id = :b AND kind = 'return'"
            ),
            {"d": delta, "b": bet_id},
        )
        conn.execute(
            text("UPDATE accounts SET balance = balance + :d WHERE account_id = :a"),
            {"d": delta, "a": account},
        )
    return target


def test_an_insider_rewrite_re_signed_with_the_studio_key_fails_the_replay(
    played: Played, tmp_path: Path
) -> None:
    runtime, _ = played
    with runtime.engine.connect() as conn:
        bet_id, round_id = conn.execute(
            text(
                "SELECT bet_id, round_id FROM bets WHERE status = 'settled' AND returned = 0"
                " ORDER BY placed_seq LIMIT 1"
            )
        ).one()
    _rewrite_payout(runtime, bet_id, 5000)
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)  # re-signed with the studio's key
    with runtime.sessions() as session:
        assert verify_database(session, [runtime.store.note_signer.verifier_key]).ok
        assert check_read_models(session) == []  # the insider fixed the read models too
    _bundle(runtime, tmp_path / "b")
    verify_bundle(tmp_path / "b")  # chain, notes and proofs all verify...
    with pytest.raises(BundleError) as failed:
        verify_bundle(tmp_path / "b", replay=True)  # ...the cards do not
    message = str(failed.value)
    assert f"round {round_id}, bet {bet_id}" in message
    assert "returning 5000" in message and "returning 0" in message


def test_every_bundle_file_is_covered_by_the_manifest(played: Played, tmp_path: Path) -> None:
    runtime, _ = played
    _bundle(runtime, tmp_path / "b")
    rounds = tmp_path / "b" / "rounds.jsonl"
    original = rounds.read_text()
    rounds.write_text(original + "\n")
    with pytest.raises(BundleError, match=r"rounds\.jsonl: SHA-256 differs"):
        verify_bundle(tmp_path / "b", replay=True)
    # Editing the derived file and the manifest together: the events still decide.
    lines = original.splitlines()
    line = json.loads(lines[0])
    line["settle_input"]["cards"] = list(reversed(line["settle_input"]["cards"]))
    lines[0] = json.dumps(line)
    rounds.write_text("\n".join(lines) + "\n")
    _write_manifest(tmp_path / "b")
    with pytest.raises(BundleError, match="settle_input differs from the events"):
        verify_bundle(tmp_path / "b", replay=True)
    (tmp_path / "b" / "extra.txt").write_text("x")
    with pytest.raises(BundleError, match=r"extra\.txt: not in"):
        verify_bundle(tmp_path / "b")


def test_an_event_edited_in_the_bundle_is_named(played: Played, tmp_path: Path) -> None:
    runtime, _ = played
    _bundle(runtime, tmp_path / "b")
    events = tmp_path / "b" / "events.jsonl"
    lines = events.read_text().splitlines()
    index = next(i for i, x in enumerate(lines) if '"bets_settled"' in x)
    event = json.loads(lines[index])
    event["payload"]["results"][0]["returned"] += 1
    lines[index] = json.dumps(event)
    events.write_text("\n".join(lines) + "\n")
    _write_manifest(tmp_path / "b")
    with pytest.raises(BundleError, match=f"sequence {index + 1}: altered"):
        verify_bundle(tmp_path / "b", replay=True)


def test_a_table_and_period_scope_redacts_the_rest_and_still_verifies(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    runtime = make_runtime(checkpoint_every=10_000)
    Session(runtime, table_id="t1").play(3)
    Session(runtime, table_id="t2", seed=9).play(2)
    summary = _bundle(runtime, tmp_path / "b", Scope(table_id="t2"))
    assert summary.rounds == 2 and summary.redacted > 0
    report = verify_bundle(tmp_path / "b", replay=True)
    assert report.totals.rounds == 2 and report.redacted == summary.redacted


def _unguarded_ledger(conn: Connection) -> None:
    """An insider with schema rights: the ledger's append-only triggers out of the way."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SET LOCAL session_replication_role = replica"))
    else:
        for action in ("update", "delete"):
            conn.execute(text(f"DROP TRIGGER IF EXISTS ledger_entries_no_{action}"))


def test_read_model_edits_are_named(played: Played) -> None:
    runtime, _ = played
    with runtime.sessions() as session:
        assert check_read_models(session) == []
    with runtime.engine.begin() as conn:
        conn.execute(text("UPDATE accounts SET balance = balance + 700 WHERE account_id = 'a2'"))
        bet = conn.execute(
            text("SELECT bet_id FROM bets WHERE status = 'settled' LIMIT 1")
        ).scalar_one()
        _unguarded_ledger(conn)  # a bet's return is its return entry in the ledger
        conn.execute(
            text(
                "UPDATE ledger_entries SET amount = amount + 1"
                " WHERE bet_id = :b AND kind = 'return'"
            ),
            {"b": bet},
        )
        conn.execute(
            text(
                "INSERT INTO principals (name, role, token_hash, created_at)"
                " VALUES ('ghost', 'admin', 'h', 'x')"
            )
        )
    with runtime.sessions() as session:
        problems = check_read_models(session)
    assert any(p.startswith("account a2: balance") and "from the log" in p for p in problems)
    assert any(p.startswith(f"bet {bet}: returned") for p in problems)
    assert any(p.startswith("principal ghost: in the table but never added") for p in problems)


def test_a_credit_committed_while_the_check_reads_is_no_mismatch(
    played: Played, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watchdog compares the log and the read models at one moment: a transfer
    committed by another connection after it has read the log, before it reads the
    balances, is in neither (on PostgreSQL it was in the balances only: a false ledger
    mismatch under load; on SQLite the check held the write lock, so the credit waited)."""
    import table_service.regulator.readmodels as readmodels
    from table_service.table.wallet import Transfer, transfer

    runtime, _ = played
    real_stream = readmodels._stream
    credited: list[int] = []

    def stream_then_credit(session: OrmSession) -> Iterator[Any]:
        yield from real_stream(session)  # the whole log read, then a credit commits
        answer = transfer(
            runtime,
            Transfer("a2", 700, f"mid-check-{len(credited)}", "credit"),
            actor="operator:op",
        )
        credited.append(answer["balance"])

    from table_service.regulator.watchdog import AuditWatchdog

    dog = AuditWatchdog(runtime, seal_seconds=1, read_model_seconds=1)
    monkeypatch.setattr(readmodels, "_stream", stream_then_credit)
    assert dog.check_read_models() == []  # nor does it hold the writers back (SQLite)
    monkeypatch.setattr(readmodels, "_stream", real_stream)
    with runtime.sessions() as session:
        assert credited and check_read_models(session) == []  # and the credit is in both


def test_the_serve_watchdog_seals_and_raises_a_ledger_mismatch_alarm(played: Played) -> None:
    from table_service.regulator.watchdog import AuditWatchdog

    runtime, _ = played
    dog = AuditWatchdog(runtime, seal_seconds=1, read_model_seconds=1)
    size = dog.seal()
    with runtime.sessions() as session:
        assert (
            size is not None
            and verify_database(session, [runtime.store.note_signer.verifier_key]).unsealed == 0
        )
    assert dog.seal() is None  # nothing new to seal
    assert dog.check_read_models() == []
    with runtime.engine.begin() as conn:
        _unguarded_ledger(conn)
        conn.execute(
            text(
                "UPDATE ledger_entries SET result = 'win'"
                " WHERE kind = 'return' AND result = 'refunded'"
            )
        )
    problems = dog.check_read_models()
    dog.check_read_models()  # the same differences: one alarm, not two
    with runtime.engine.connect() as conn:
        alarms = (
            conn.execute(text("SELECT payload FROM audit_events WHERE type = 'alarm_raised'"))
            .scalars()
            .all()
        )
    assert len(alarms) == 1 and problems and "ledger_mismatch" in alarms[0]
    assert "result 'win' (log: 'refunded')" in problems[0]


def test_a_blackjack_session_replays_every_stake_through_its_rules(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    from tests.support.table_session import BlackjackSession

    runtime = make_runtime(checkpoint_every=10_000)
    BlackjackSession(runtime).play(8)
    summary = _bundle(runtime, tmp_path / "b")
    assert summary.rounds == 8
    report = verify_bundle(tmp_path / "b", replay=True)
    with runtime.engine.connect() as conn:
        bets, staked, returned = conn.execute(
            text("SELECT COUNT(*), SUM(stake), SUM(returned) FROM bets")
        ).one()
    assert (report.totals.rounds, report.totals.bets) == (8, bets)
    assert (report.totals.staked, report.totals.returned) == (int(staked), int(returned))
    line = json.loads((tmp_path / "b" / "rounds.jsonl").read_text().splitlines()[0])
    assert line["game"] == "blackjack" and line["settle_input"]["cards"]
    # One stake's return rewritten in the bundle (chain and manifest recomputed): named.
    events = tmp_path / "b" / "events.jsonl"
    rows = [json.loads(x) for x in events.read_text().splitlines()]
    target = next(r for r in rows if r.get("type") == "bets_settled")
    target["payload"]["results"][0]["returned"] += 100
    bet_id = target["payload"]["results"][0]["bet_id"]
    prev = None
    for row in rows:
        if row["seq"] >= target["seq"]:
            body = EventBody(
                row["table_id"],
                row["round_id"],
                row["type"],
                row["actor"],
                row["ts"],
                row["payload"],
            )
            row["prev_hash"] = prev or row["prev_hash"]
            row["hash"] = event_hash(row["seq"], row["prev_hash"], body.canonical())
        prev = row["hash"]
    events.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for note in (tmp_path / "b" / "checkpoints").glob("*.note"):
        note.unlink()
    from audit.merkle import merkle_root
    from audit.note import checkpoint_text, sign_note

    root = merkle_root(bytes.fromhex(r["hash"]) for r in rows)
    checkpoint = checkpoint_text(runtime.store.origin, len(rows), root)
    (tmp_path / "b" / "checkpoints" / f"{len(rows)}.note").write_text(
        sign_note(checkpoint, runtime.store.note_signer)
    )
    _write_manifest(tmp_path / "b")
    with pytest.raises(BundleError, match=f"bet {bet_id}"):
        verify_bundle(tmp_path / "b", replay=True)
