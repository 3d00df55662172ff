"""`audit verify` as a forger meets it: a key asks "did this key sign this log?".

The forgeries of issue 32, done as a forger would with the public formula (edit a stake,
re-hash the chain, drop the checkpoints, cut the file), and the two a stolen key allows
(truncate, or rewrite, and re-sign): each fails with exit 1 naming the first bad sequence
number, and the honest export passes, with ``--since`` the checkpoint the regulator kept.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from audit.chain import GENESIS_HASH, EventBody, event_hash
from audit.export import verify_export, write_export
from audit.merkle import merkle_root
from audit.note import NoteSigner, checkpoint_text, sign_note
from audit.signing import Signer
from audit.verify import verify_database
from table_service.cli import app
from tests.support.table_session import Session

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

ORIGIN = "livetable"


def _export(runtime: Any, path: Path) -> list[dict[str, Any]]:
    with runtime.reads() as session, path.open("w", encoding="utf-8") as handle:
        write_export(session, runtime.signer, ORIGIN, handle)
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _rehash(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recompute every event's link and hash with the public formula, as a forger can."""
    out, prev = [], GENESIS_HASH
    for line in lines:
        if line.get("kind") != "event":
            out.append(line)
            continue
        body = EventBody(
            line["table_id"], line["round_id"], line["type"], line["actor"], line["ts"],
            line["payload"],
        ).canonical()  # fmt: skip
        line = {**line, "prev_hash": prev, "hash": event_hash(line["seq"], prev, body)}
        prev = line["hash"]
        out.append(line)
    return out


def _resign(lines: list[dict[str, Any]], signer: Signer) -> list[dict[str, Any]]:
    """Drop the checkpoints and sign one over every event with the (stolen) log key."""
    events = [x for x in lines if x.get("kind") == "event"]
    root = merkle_root(bytes.fromhex(e["hash"]) for e in events)
    body = checkpoint_text(ORIGIN, len(events), root)
    note_signer = NoteSigner(ORIGIN, signer.private_key)
    checkpoint = {
        "kind": "checkpoint",
        "size": len(events),
        "origin": ORIGIN,
        "root_hash": root.hex(),
        "key_id": note_signer.key_id.hex(),
        "signature": signer.sign(body.encode()),
        "note": sign_note(body, note_signer),
    }
    return [*[x for x in lines if x.get("kind") != "checkpoint"], checkpoint]


def _edit_stake(lines: list[dict[str, Any]], before: int) -> tuple[list[dict[str, Any]], int]:
    """Lower the first stake of a bet placed before ``before`` to 1; returns its seq."""
    out = [dict(x) for x in lines]
    for line in out:
        if line.get("kind") != "event" or line["seq"] >= before:
            continue
        text = json.dumps(line["payload"])
        edited = re.sub(r'"stake": [0-9]{3,}', '"stake": 1', text, count=1)
        if edited != text:
            line["payload"] = json.loads(edited)
            return out, int(line["seq"])
    raise AssertionError("no stake to edit")


def _verify(*args: str) -> Result:
    return CliRunner().invoke(app, ["audit", "verify", *args])


@pytest.fixture
def log(runtime: Any, tmp_path: Path) -> dict[str, Any]:
    """A real baccarat log: a checkpoint signed half way (the regulator keeps its note),
    more rounds, and a checkpoint over everything."""
    play = Session(runtime)
    play.play(8, bets=4)
    with runtime.sessions.begin() as session:
        held = runtime.store.checkpoint(session)
        held_size, held_note = held.size, held.note
    play.play(8, bets=4)
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    export = tmp_path / "log.jsonl"
    lines = _export(runtime, export)
    key = tmp_path / "signing-key.pub"
    key.write_text(runtime.signer.public_key_b64 + "\n")
    (tmp_path / "held.note").write_text(held_note)
    events = sum(1 for x in lines if x.get("kind") == "event")
    return {
        "export": export,
        "lines": lines,
        "key": str(key),
        "held": str(tmp_path / "held.note"),
        "held_size": held_size,
        "events": events,
        "signer": runtime.signer,
        "tmp": tmp_path,
    }


def test_the_honest_export_verifies_and_extends_the_checkpoint_held(log: dict[str, Any]) -> None:
    done = _verify("--export", str(log["export"]), "--public-key", log["key"])
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith(f"OK {log['events']} events, 2 signed checkpoints verified")
    since = _verify(
        "--export", str(log["export"]), "--public-key", log["key"], "--since", log["held"]
    )
    assert since.exit_code == 0, since.output
    assert f"extends the checkpoint held: size {log['held_size']} → {log['events']}" in (
        since.stdout
    )


def test_an_edited_stake_is_altered(log: dict[str, Any]) -> None:
    lines, seq = _edit_stake(log["lines"], log["events"])
    forged = _write(log["tmp"] / "forged.jsonl", lines)
    done = _verify("--export", str(forged), "--public-key", log["key"])
    assert done.exit_code == 1
    assert f"first bad sequence number {seq}" in done.stderr
    assert "altered" in done.stderr


def test_a_rehashed_chain_is_caught_by_the_signed_checkpoint(log: dict[str, Any]) -> None:
    lines, seq = _edit_stake(log["lines"], log["held_size"])
    forged = _write(log["tmp"] / "forged.jsonl", _rehash(lines))
    done = _verify("--export", str(forged), "--public-key", log["key"])
    assert done.exit_code == 1
    assert "checkpoint root" in done.stderr and "first bad sequence number 1" in done.stderr
    assert f"the change lies in 1..{log['held_size']}" in done.stderr
    assert 1 <= seq <= log["held_size"]


def test_a_rehashed_chain_without_checkpoints_is_unsigned(log: dict[str, Any]) -> None:
    """The issue's forgery: stake edited, chain re-hashed, every checkpoint line dropped.
    It used to print `OK … 0 signed checkpoints verified` and exit 0."""
    lines, _ = _edit_stake(log["lines"], log["events"])
    lines = [x for x in _rehash(lines) if x.get("kind") != "checkpoint"]
    forged = _write(log["tmp"] / "forged.jsonl", lines)
    done = _verify("--export", str(forged), "--public-key", log["key"])
    assert done.exit_code == 1, done.output
    assert done.stdout == ""
    assert "FAILED first bad sequence number 1" in done.stderr
    assert f"{log['events']} event(s) from sequence 1 on are not covered" in done.stderr
    assert "--allow-unsigned-tail" in done.stderr
    # Accepted only when asked, and then counted.
    allowed = _verify("--export", str(forged), "--public-key", log["key"], "--allow-unsigned-tail")
    assert allowed.exit_code == 0, allowed.output
    assert (
        f"OK {log['events']} events, 0 signed checkpoints verified, "
        f"{log['events']} unsigned events accepted (sequence 1 on)"
    ) in allowed.stdout


def test_an_export_cut_to_its_first_150_lines_is_unsigned(log: dict[str, Any]) -> None:
    assert log["events"] > 150
    cut = log["tmp"] / "cut.jsonl"
    cut.write_text("".join(log["export"].read_text().splitlines(keepends=True)[:150]))
    done = _verify("--export", str(cut), "--public-key", log["key"])
    assert done.exit_code == 1, done.output
    assert "FAILED first bad sequence number 1" in done.stderr
    assert "149 event(s) from sequence 1 on are not covered" in done.stderr


def test_a_tail_past_the_last_checkpoint_names_its_first_event(log: dict[str, Any]) -> None:
    events = [x for x in log["lines"] if x.get("kind") == "event"]
    cps = [x for x in log["lines"] if x.get("kind") == "checkpoint"]
    first = [x for x in cps if x["size"] == log["held_size"]]
    forged = _write(log["tmp"] / "tail.jsonl", [log["lines"][0], *events, *first])
    done = _verify("--export", str(forged), "--public-key", log["key"])
    assert done.exit_code == 1
    assert f"first bad sequence number {log['held_size'] + 1}" in done.stderr
    allowed = _verify("--export", str(forged), "--public-key", log["key"], "--allow-unsigned-tail")
    assert allowed.exit_code == 0
    unsigned = log["events"] - log["held_size"]
    assert f"{unsigned} unsigned events accepted (sequence {log['held_size'] + 1} on)" in (
        allowed.stdout
    )


def test_a_truncated_export_resigned_with_the_log_key_fails_against_the_held_checkpoint(
    log: dict[str, Any],
) -> None:
    keep = log["held_size"] - 5
    events = [x for x in log["lines"] if x.get("kind") == "event"][:keep]
    forged = _write(
        log["tmp"] / "truncated.jsonl", _resign([log["lines"][0], *events], log["signer"])
    )
    fooled = _verify("--export", str(forged), "--public-key", log["key"])
    assert fooled.exit_code == 0, fooled.output  # a stolen key signs whatever it likes...
    done = _verify("--export", str(forged), "--public-key", log["key"], "--since", log["held"])
    assert done.exit_code == 1, done.output  # ...but cannot unsign what the regulator holds
    assert f"FAILED first bad sequence number {keep + 1}" in done.stderr
    assert f"truncated: the checkpoint held covers {log['held_size']} events" in done.stderr


def test_a_rewritten_export_resigned_with_the_log_key_fails_the_consistency_proof(
    log: dict[str, Any],
) -> None:
    lines, _ = _edit_stake(log["lines"], log["held_size"])
    forged = _write(log["tmp"] / "rewritten.jsonl", _resign(_rehash(lines), log["signer"]))
    fooled = _verify("--export", str(forged), "--public-key", log["key"])
    assert fooled.exit_code == 0, fooled.output
    done = _verify("--export", str(forged), "--public-key", log["key"], "--since", log["held"])
    assert done.exit_code == 1, done.output
    assert "rewritten: no consistency proof from the checkpoint held" in done.stderr
    assert f"the change lies in 1..{log['held_size']}" in done.stderr


def test_a_held_checkpoint_of_another_key_is_refused(log: dict[str, Any]) -> None:
    other = Signer.generate()
    body = checkpoint_text(ORIGIN, 3, b"\x01" * 32)
    foreign = log["tmp"] / "foreign.note"
    foreign.write_text(sign_note(body, NoteSigner(ORIGIN, other.private_key)))
    done = _verify(
        "--export", str(log["export"]), "--public-key", log["key"], "--since", str(foreign)
    )
    assert done.exit_code == 2
    assert "is not a checkpoint note signed by the trusted key" in done.stderr
    garbage = log["tmp"] / "garbage.note"
    garbage.write_bytes(b"\xff\xfe not a note")
    done = _verify(
        "--export", str(log["export"]), "--public-key", log["key"], "--since", str(garbage)
    )
    assert done.exit_code == 2 and "not UTF-8 text" in done.stderr


def test_the_regulators_routine_keeps_the_last_checkpoint(runtime: Any, tmp_path: Path) -> None:
    """Verify each export against the checkpoint kept from the previous one, keep the new."""
    key = tmp_path / "signing-key.pub"
    key.write_text(runtime.signer.public_key_b64 + "\n")
    held = tmp_path / "last-checkpoint.note"
    play = Session(runtime)
    sizes = []
    for month in range(3):
        play.play(2, bets=2)
        with runtime.sessions.begin() as session:
            sizes.append(runtime.store.checkpoint(session).size)
        export = tmp_path / f"month-{month}.jsonl"
        _export(runtime, export)
        since = ["--since", str(held)] if held.exists() else []
        done = _verify(
            "--export", str(export), "--public-key", str(key), *since,
            "--save-checkpoint", str(held),
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        if month:
            assert f"extends the checkpoint held: size {sizes[-2]} → {sizes[-1]}" in done.stdout
        assert f"checkpoint of size {sizes[-1]} kept in" in done.stdout
        assert held.read_text().startswith(f"{ORIGIN}\n{sizes[-1]}\n")
    # An older export is not accepted against the newer checkpoint the regulator holds.
    done = _verify("--export", str(tmp_path / "month-0.jsonl"), "--public-key", str(key),
                   "--since", str(held))  # fmt: skip
    assert done.exit_code == 1 and "truncated" in done.stderr


def test_the_database_and_the_library_refuse_an_unsigned_tail(runtime: Any) -> None:
    Session(runtime).play(2, bets=2)
    keys = {runtime.signer.key_id: runtime.signer.public_key}
    with runtime.sessions() as session:
        report = verify_database(session, keys)
        assert not report.ok and report.problem is not None
        assert (report.problem.kind, report.problem.seq) == ("unsigned", 1)
        accepted = verify_database(session, keys, allow_unsigned_tail=True)
        assert accepted.ok and accepted.unsealed == accepted.events
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    with runtime.sessions() as session:
        assert verify_database(session, keys).ok


def test_the_library_export_check_is_strict_by_default(log: dict[str, Any]) -> None:
    lines = [x for x in log["lines"] if x.get("kind") != "checkpoint"]
    bare = _write(log["tmp"] / "bare.jsonl", lines)
    key = log["signer"].public_key_b64
    assert verify_export(log["export"], key).ok
    report = verify_export(bare, key)
    assert not report.ok and report.first_bad_seq == 1
    assert verify_export(bare, key, allow_unsigned_tail=True).ok


def _env(runtime: Any) -> dict[str, str]:
    return {
        "LIVETABLE_DATA_DIR": str(runtime.settings.data_dir),
        "LIVETABLE_DATABASE_URL": runtime.settings.resolved_database_url,
    }


def test_the_database_and_a_bundle_take_the_checkpoint_held(
    log: dict[str, Any], runtime: Any
) -> None:
    from sqlalchemy import text

    env, runner = _env(runtime), CliRunner()
    since = ["--since", log["held"]]
    done = runner.invoke(app, ["audit", "verify", *since], env=env)
    assert done.exit_code == 0, done.output
    assert f"extends the checkpoint held: size {log['held_size']} → {log['events']}" in done.stdout
    bundle = log["tmp"] / "bundle"
    exported = runner.invoke(app, ["audit", "export", "--bundle", str(bundle)], env=env)
    assert exported.exit_code == 0, exported.output
    kept = log["tmp"] / "kept.note"
    done = runner.invoke(
        app,
        ["audit", "verify", "--bundle", str(bundle), "--public-key", log["key"], *since,
         "--save-checkpoint", str(kept)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert f"size {log['held_size']} → {log['events']}" in done.stdout
    assert kept.read_text().startswith(f"{ORIGIN}\n{log['events']}\n")
    # The log cut below the checkpoint held and re-signed by its own key: the database
    # alone verifies, the checkpoint held does not agree.
    with runtime.engine.begin() as conn:
        for table in ("audit_events", "audit_checkpoints", "audit_cosignatures"):
            conn.execute(text(f"DROP TRIGGER IF EXISTS {table}_no_delete"))
        conn.execute(text("DELETE FROM audit_cosignatures"))
        conn.execute(text("DELETE FROM audit_checkpoints"))
        conn.execute(text(f"DELETE FROM audit_events WHERE seq > {log['held_size'] - 3}"))
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    assert runner.invoke(app, ["audit", "verify"], env=env).exit_code == 0
    done = runner.invoke(app, ["audit", "verify", *since], env=env)
    assert done.exit_code == 1
    assert f"first bad sequence number {log['held_size'] - 2}" in done.stderr
    assert "truncated" in done.stderr
    newer = runner.invoke(
        app, ["audit", "verify", "--bundle", str(bundle), "--since", str(kept)], env=env
    )
    assert newer.exit_code == 0  # the bundle itself still holds the whole log


def test_broken_files_are_one_line_and_exit_2(log: dict[str, Any]) -> None:
    tmp = log["tmp"]
    (tmp / "garbage.jsonl").write_bytes(bytes(range(256)) * 4)
    header = log["export"].read_text().splitlines()[0]
    (tmp / "types.jsonl").write_text(header + '\n{"kind": "event", "seq": "1", "hash": 7}\n')
    (tmp / "bundle").mkdir()
    (tmp / "bundle" / "MANIFEST.sha256").write_bytes(b"\xff\xfe" * 40)
    cases = [
        (["--export", str(tmp / "garbage.jsonl"), "--public-key", log["key"]], "not UTF-8 text"),
        (["--export", str(tmp / "types.jsonl"), "--public-key", log["key"]], ":2: seq must be int"),
        (["--export", str(log["export"]), "--public-key", str(tmp / "garbage.jsonl")], "UTF-8"),
        (["--export", str(log["export"]), "--public-key", "bm90IGEga2V5"], "public key"),
        (["--export", str(log["export"])], "--public-key (or --verifier-key) is required"),
    ]
    for args, expected in cases:
        done = _verify(*args)
        assert done.exit_code == 2, (args, done.output)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], (args, done.stderr)
    bundle = _verify("--bundle", str(tmp / "bundle"))
    assert bundle.exit_code == 1 and "MANIFEST.sha256: not UTF-8 text" in bundle.stderr
