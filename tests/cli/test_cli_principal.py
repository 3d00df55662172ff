"""``livetable principal add --table T``: a binding names a table that exists.

A table exists for the command when the table file names it (``--tables`` or
LIVETABLE_TABLE_CONFIG) or the log has seen it opened. Anything else is refused with the
typed ``unknown_table`` refusal, exit 1, and nothing is written: no principal, no event.
Through the installed command, as an administrator runs it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from audit.models import AuditEvent
from table_service.app import build_app
from table_service.config import Settings
from table_service.models import Principal
from table_service.runtime import Runtime
from table_service.table.config import TableConfig
from tests.support.crash_harness import livetable_command


def _run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LIVETABLE_")}
    return subprocess.run(
        [livetable_command(), "principal", *args],
        cwd=cwd,
        env={**clean, "LIVETABLE_DATA_DIR": str(cwd / "data"), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _stored(data: Path) -> tuple[dict[str, str | None], int]:
    """Principals (name → bound table) and the number of principal events in the log."""
    runtime = Runtime.from_settings(Settings(data_dir=data), upgrade=True)
    try:
        with runtime.sessions() as s:
            principals = {p.name: p.table_id for p in s.scalars(select(Principal))}
            events = s.scalar(
                select(func.count())
                .select_from(AuditEvent)
                .where(AuditEvent.type.like("principal%"))
            )
    finally:
        runtime.close()
    return principals, int(events or 0)


def _tables(path: Path, *ids: str) -> Path:
    path.write_text("".join(f'[[tables]]\ntable_id = "{t}"\n\n' for t in ids))
    return path


def test_a_binding_to_an_unknown_table_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    tables = _tables(tmp_path / "tables.toml", "bac-1", "bac-2")
    typo = _run(tmp_path, "add", "dealer-7", "--role", "dealer", "--table", "bac-l",
                "--tables", str(tables))  # fmt: skip
    assert typo.returncode == 1, typo.stderr
    assert "no table 'bac-l' to bind to" in typo.stderr, typo.stderr
    assert "known tables: bac-1, bac-2" in typo.stderr, typo.stderr
    assert typo.stdout == ""  # no token printed
    # No table file, nothing opened: every binding is refused; an unbound principal is not.
    bare = _run(tmp_path, "add", "dealer-8", "--role", "dealer", "--table", "bac-1")
    assert bare.returncode == 1 and "known tables: none" in bare.stderr, bare.stderr
    assert _stored(tmp_path / "data") == ({}, 0)
    unbound = _run(tmp_path, "add", "alice", "--role", "supervisor")
    assert unbound.returncode == 0, unbound.stderr
    assert _stored(tmp_path / "data") == ({"alice": None}, 1)


def test_a_table_of_the_table_file_or_the_log_may_be_bound(tmp_path: Path) -> None:
    tables = _tables(tmp_path / "tables.toml", "bac-1")
    by_option = _run(tmp_path, "add", "d1", "--role", "dealer", "--table", "bac-1",
                     "--tables", str(tables))  # fmt: skip
    assert by_option.returncode == 0, by_option.stderr
    assert by_option.stdout.startswith("lt_")
    by_env = _run(tmp_path, "add", "d2", "--role", "dealer", "--table", "bac-1",
                  LIVETABLE_TABLE_CONFIG=str(tables))  # fmt: skip
    assert by_env.returncode == 0, by_env.stderr
    # A table that ran once (its table_opened event is in the log) needs no table file.
    runtime = Runtime.from_settings(Settings(data_dir=tmp_path / "data"), upgrade=True)
    try:
        with TestClient(build_app(runtime, [TableConfig(table_id="xd-9", game="xidach")])):
            pass
    finally:
        runtime.close()
    by_log = _run(tmp_path, "add", "d3", "--role", "dealer", "--table", "xd-9")
    assert by_log.returncode == 0, by_log.stderr
    principals, events = _stored(tmp_path / "data")
    assert principals == {"d1": "bac-1", "d2": "bac-1", "d3": "xd-9"}
    assert events == 3


def test_an_invalid_table_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    broken = tmp_path / "tables.toml"
    broken.write_text('[[tables]]\ntable_id = "bac-1"\ndecks = "eight"\n')
    result = _run(tmp_path, "add", "d1", "--role", "dealer", "--table", "bac-1",
                  "--tables", str(broken))  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "table configuration:" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert _stored(tmp_path / "data") == ({}, 0)


def test_principal_takes_the_data_folder_as_demo_and_audit_do(tmp_path: Path) -> None:
    """``--data-dir`` on add, list and revoke: the principal lands in that folder's log,
    not in LIVETABLE_DATA_DIR's."""
    elsewhere = tmp_path / "demo-data"
    added = _run(tmp_path, "add", "reg-1", "--role", "regulator", "--data-dir", str(elsewhere))
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip().startswith("lt_")
    assert _stored(elsewhere)[0] == {"reg-1": None}
    assert not (tmp_path / "data").exists()  # LIVETABLE_DATA_DIR untouched
    listed = _run(tmp_path, "list", "--data-dir", str(elsewhere))
    assert listed.returncode == 0 and "reg-1" in listed.stdout
    revoked = _run(tmp_path, "revoke", "reg-1", "--data-dir", str(elsewhere))
    assert revoked.returncode == 0, revoked.stderr
    assert _stored(elsewhere)[1] == 2  # added, revoked
