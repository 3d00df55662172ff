"""Test-wide fixtures: Hypothesis profiles and the two database backends.

Every database test runs on SQLite and, when reachable, on PostgreSQL (a fresh database
per test session, a fresh schema per test). With ``LIVETABLE_REQUIRE_POSTGRES=1`` (set by
``.ci/run``) an unreachable PostgreSQL fails the run instead of skipping; likewise
``LIVETABLE_REQUIRE_NATS=1`` for the NATS JetStream server (``nats_url``).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from table_service.runtime import Runtime

# Every field that leaves the service declares who may see it: in the suite (and in the
# servers it starts) an undeclared one is an error, not a field silently left out.
os.environ.setdefault("LIVETABLE_STRICT_VIEW", "1")


def _plain_tracebacks() -> None:
    """structlog's own default renders an exception's traceback with rich, every frame's
    locals drawn in panels: 3-4 s of CPU for one logged exception from deep in a request
    (the undeclared-field reads of tests/hardening spent most of their time there). Until
    a command configures logging (``table_service.logs``, whose console prints plain
    tracebacks), the suite's processes keep that default but for a plain traceback: the
    same frames and lines, as Python prints them."""
    import structlog

    if structlog.is_configured():
        return
    structlog.configure(
        processors=[
            structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)
            if isinstance(processor, structlog.dev.ConsoleRenderer)
            else processor
            for processor in structlog.get_config()["processors"]
        ]
    )


_plain_tracebacks()

pytest_plugins = [
    "tests.support.cpu_durations",  # --cpu-durations=N
    "tests.support.longest_first",  # under xdist, each worker starts with its long tests
]

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

# The suite runs on pytest-xdist workers (``-n auto`` in pyproject.toml): most of its
# time is spent waiting on subprocesses, servers and browsers, so two workers on two
# cores take it from about 30 to about 13 minutes. Each worker has its own PostgreSQL
# database and free ports; the count is capped so that a many-core machine does not
# open more PostgreSQL connections or Chromiums than one server holds. ``-n 0`` runs
# the suite in one process (for a debugger), ``-n N`` on N workers.
MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own override
    # One worker more than the cores: on two quiet cores the suite on two workers kept a
    # load average of 2-3 for 566 s (most tests wait on servers, timers and betting
    # windows), so a third worker fills the waits.
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0)) + 1))


PG_ADMIN_URL = os.environ.get(
    "LIVETABLE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def _require_postgres() -> bool:
    return os.environ.get("LIVETABLE_REQUIRE_POSTGRES", "") not in ("", "0", "false")


NATS_URL = os.environ.get("LIVETABLE_TEST_NATS_URL", "nats://127.0.0.1:4222")


def _require_nats() -> bool:
    return os.environ.get("LIVETABLE_REQUIRE_NATS", "") not in ("", "0", "false")


@pytest.fixture(scope="session")
def nats_binary() -> str:
    """The ``nats-server`` program, for tests that restart a private server (fail under
    LIVETABLE_REQUIRE_NATS=1 if it is missing, skip otherwise)."""
    found = shutil.which("nats-server") or (
        "/usr/sbin/nats-server" if Path("/usr/sbin/nats-server").exists() else None
    )
    if found is None:
        message = "nats-server not installed"
        if _require_nats():
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def nats_url() -> str:
    """The NATS JetStream server's URL, after checking it answers (fail or skip if not)."""
    import socket

    try:
        import nats  # noqa: F401

        host, port = NATS_URL.rsplit("//", 1)[-1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=2) as sock:
            sock.settimeout(2)
            if not sock.recv(4096).startswith(b"INFO"):
                raise ConnectionError("not a NATS server")
    except Exception as exc:
        message = f"NATS unreachable at {NATS_URL}: {exc}"
        if _require_nats():
            pytest.fail(message)
        pytest.skip(message)
    return NATS_URL


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session; its URL."""
    try:
        from sqlalchemy import create_engine, text

        admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        message = f"PostgreSQL unreachable at {PG_ADMIN_URL}: {exc}"
        if _require_postgres():
            pytest.fail(message)
        pytest.skip(message)
    name = f"livetable_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    yield url
    with admin.connect() as conn:
        conn.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = :n AND pid <> pg_backend_pid()"
            ),
            {"n": name},
        )
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
    admin.dispose()


def _fresh_schema(database_url: str) -> str:
    from sqlalchemy import create_engine, text

    schema = f"t_{uuid.uuid4().hex[:12]}"
    engine = create_engine(database_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine.dispose()
    return f"{database_url}?options=-csearch_path%3D{schema}"


@pytest.fixture(scope="session")
def pg_schema(pg_database: str) -> Callable[[], str]:
    """Makes a new, empty schema on the session's PostgreSQL database and returns its URL:
    for a fixture wider than one test (``db_url`` is one test's)."""
    return lambda: _fresh_schema(pg_database)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'livetable.db'}"
    return _fresh_schema(request.getfixturevalue("pg_database"))


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database migrated to the head revision once per test process.

    A test's new SQLite database starts as a copy of it: running the migrations costs
    35-50 ms of CPU a database, a copy under 1 ms, and the suite makes several hundred (the
    upgrade that follows finds the head revision and changes nothing). The migrations still
    run from an empty database: here, in every test process, on PostgreSQL for every test,
    and wherever a test starts a server or a command on a fresh folder.
    """
    from audit.db import create_db_engine
    from table_service.runtime import upgrade_database

    path = tmp_path_factory.mktemp("migrated") / "livetable.db"
    engine = create_db_engine(f"sqlite:///{path}")
    upgrade_database(engine)
    engine.dispose()  # the last connection closed folds the write-ahead log into the file
    assert not path.with_name(path.name + "-wal").exists()
    return path


@pytest.fixture
def make_runtime(
    tmp_path: Path, db_url: str, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Runtime]]:
    """Build migrated Runtimes on the test's database (all closed at teardown)."""
    from table_service.config import Settings
    from table_service.runtime import Runtime

    made: list[Runtime] = []

    def factory(**overrides: object) -> Runtime:
        values: dict[str, object] = {"data_dir": tmp_path / "data", "database_url": db_url}
        values.update(overrides)
        url = str(values["database_url"])
        if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
            target = Path(url.removeprefix("sqlite:///"))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(request.getfixturevalue("migrated_sqlite"), target)
        # The overrides are whatever fields a test names: pydantic checks them at run time.
        runtime = Runtime.from_settings(Settings(**values), upgrade=True)  # type: ignore[arg-type]
        made.append(runtime)
        return runtime

    yield factory
    for runtime in made:
        runtime.close()


@pytest.fixture
def runtime(make_runtime: Callable[..., Runtime]) -> Runtime:
    return make_runtime()
