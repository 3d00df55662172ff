"""Models and migrations agree; configuration sources; the signing key file."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from audit.db import Base
from audit.signing import Signer, SigningKeyError, load_or_create_signer
from table_service.config import Settings
from table_service.runtime import Runtime


def test_autogenerate_finds_no_difference(runtime: Runtime) -> None:
    import audit.models  # noqa: F401
    import table_service.models  # noqa: F401

    with runtime.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_upgrade_is_idempotent_and_current(runtime: Runtime) -> None:
    from table_service.runtime import current_revision, head_revision, upgrade_database

    upgrade_database(runtime.engine)
    assert current_revision(runtime.engine) == head_revision() is not None
    assert runtime.database_ready()[0]


def test_env_overrides_toml_and_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = tmp_path / "lt.toml"
    toml.write_text('checkpoint_every = 77\nlog_format = "json"\nport = 9001\n')
    monkeypatch.setenv("LIVETABLE_CONFIG", str(toml))
    monkeypatch.setenv("LIVETABLE_PORT", "9002")
    settings = Settings()
    assert (settings.checkpoint_every, settings.log_format, settings.port) == (77, "json", 9002)
    assert settings.resolved_database_url.endswith("livetable-data/livetable.db")
    monkeypatch.setenv("LIVETABLE_DATABASE_URL", "postgresql+psycopg://u@h/db")
    assert Settings().resolved_database_url == "postgresql+psycopg://u@h/db"


def test_bad_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIVETABLE_CHECKPOINT_EVERY", "0")
    with pytest.raises(ValueError, match="checkpoint_every"):
        Settings()


def test_key_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "data" / "signing-key"
    first = load_or_create_signer(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_signer(path).key_id == first.key_id
    assert (tmp_path / "data" / "signing-key.pub").read_text().strip() == first.public_key_b64
    os.chmod(path, 0o644)
    with pytest.raises(SigningKeyError, match="chmod 600"):
        load_or_create_signer(path)


def test_configured_key_wins_and_bad_key_is_refused(tmp_path: Path) -> None:
    other = Signer.generate()
    assert load_or_create_signer(tmp_path / "k", other.seed_b64()).key_id == other.key_id
    with pytest.raises(SigningKeyError):
        load_or_create_signer(tmp_path / "k2", "not base64!")


def _storage_setting_goes_back(
    db_url: str, query: str, before: str, at_head: object, downgraded: Callable[[object], bool]
) -> None:
    """A PostgreSQL storage setting a migration makes: ``query`` reads ``at_head`` after the
    upgrade, a value ``downgraded`` accepts after going back to ``before``, and ``at_head``
    again after the upgrade. SQLite has nothing to set: down and up must still run."""
    from alembic import command
    from sqlalchemy import create_engine, text

    from migrations import alembic_config

    config = alembic_config(db_url)
    command.upgrade(config, "head")
    engine = create_engine(db_url)
    try:
        if engine.dialect.name != "postgresql":
            command.downgrade(config, before)
            command.upgrade(config, "head")
            return
        with engine.connect() as conn:
            assert conn.execute(text(query)).scalar() == at_head
        command.downgrade(config, before)
        with engine.connect() as conn:
            assert downgraded(conn.execute(text(query)).scalar())
        command.upgrade(config, "head")
        with engine.connect() as conn:
            assert conn.execute(text(query)).scalar() == at_head
    finally:
        engine.dispose()


def test_event_payloads_are_compressed_with_lz4_on_postgresql_and_it_goes_back(
    db_url: str,
) -> None:
    _storage_setting_goes_back(
        db_url,
        "SELECT attcompression FROM pg_attribute"
        " WHERE attrelid = 'audit_events'::regclass AND attname = 'payload'",
        "0006_bets_settled_by_ledger",
        "l",
        lambda value: value in ("", "\x00", None),
    )


def test_accounts_keep_room_for_their_next_balance_on_postgresql_and_it_goes_back(
    db_url: str,
) -> None:
    _storage_setting_goes_back(
        db_url,
        "SELECT reloptions FROM pg_class WHERE oid = 'accounts'::regclass",
        "0008_reference_checks_distinct",
        ["fillfactor=50"],
        lambda value: not value,
    )
