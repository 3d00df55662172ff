"""A migrated runtime on a throw-away database, for benchmarks and one-off checks.

SQLite in a temporary folder by default; given a PostgreSQL URL, a fresh schema on that
server, dropped afterwards, so a measurement never touches a studio's data.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text

from table_service.config import Settings
from table_service.runtime import Runtime


@contextmanager
def scratch_runtime(db: str | None = None) -> Iterator[Runtime]:
    with tempfile.TemporaryDirectory() as tmp:
        if db is None or db.startswith("sqlite"):
            runtime = Runtime.from_settings(
                Settings(data_dir=Path(tmp), database_url=db), upgrade=True
            )
            try:
                yield runtime
            finally:
                runtime.close()
            return
        schema = f"scratch_{uuid.uuid4().hex[:8]}"
        admin = create_engine(db, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        separator = "&" if "?" in db else "?"
        settings = Settings(
            data_dir=Path(tmp), database_url=f"{db}{separator}options=-csearch_path%3D{schema}"
        )
        runtime = Runtime.from_settings(settings, upgrade=True)
        try:
            yield runtime
        finally:
            runtime.close()
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
