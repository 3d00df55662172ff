"""``livetable audit verifier-key`` prints a key that verifies the stored signed notes."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from audit.note import VerifierKey, open_note, parse_checkpoint
from table_service.cli import app


def test_verifier_key_verifies_the_notes_the_cli_signed(tmp_path: Path) -> None:
    env = {"LIVETABLE_DATA_DIR": str(tmp_path), "LIVETABLE_LOG_ORIGIN": "studio.example/t"}
    runner = CliRunner()
    missing = runner.invoke(app, ["audit", "verifier-key"], env=env)
    assert missing.exit_code == 2 and not (tmp_path / "signing-key").exists()
    added = runner.invoke(app, ["principal", "add", "r1", "--role", "regulator"], env=env)
    assert added.exit_code == 0, added.output
    assert runner.invoke(app, ["audit", "checkpoint"], env=env).exit_code == 0
    printed = runner.invoke(app, ["audit", "verifier-key"], env=env)
    assert printed.exit_code == 0
    key = VerifierKey.parse(printed.stdout.strip())
    assert key.name == "studio.example/t"
    engine = create_engine(f"sqlite:///{tmp_path / 'livetable.db'}")
    with engine.connect() as conn:
        note = conn.execute(text("SELECT note FROM audit_checkpoints")).scalar_one()
    engine.dispose()
    assert parse_checkpoint(open_note(note, [key]).text).size == 1


def test_an_origin_with_a_newline_is_refused_before_anything_is_signed(tmp_path: Path) -> None:
    env = {"LIVETABLE_DATA_DIR": str(tmp_path), "LIVETABLE_LOG_ORIGIN": "evil\n999"}
    result = CliRunner().invoke(app, ["principal", "add", "r1", "--role", "regulator"], env=env)
    assert result.exit_code == 2
    assert "log_origin" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "livetable.db").exists()
