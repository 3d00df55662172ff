"""The benchmarks' yardstick commit and its server backend's wait for a CPU
(``benchmarks/scratch.py``): a one-row durable commit timed as the studio benchmark's
sampler times it, and the part of it the PostgreSQL backend spent runnable, waiting for a
CPU (``/proc/<pid>/schedstat``), which is how a loaded two-core host slows a commit."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _scratch() -> ModuleType:
    """benchmarks/scratch.py, imported as the benchmarks import it (from their folder)."""
    sys.path.insert(0, str(BENCH))
    import scratch

    return scratch


def test_only_a_postgresql_server_process_has_its_wait_read() -> None:
    scratch = _scratch()
    assert scratch.cpu_wait(os.getpid()) is None  # this test's own process is not one
    assert scratch.cpu_wait(2**22 + 12345) is None  # no such process


def test_a_timed_commit_says_how_long_its_backend_waited_for_a_cpu(pg_database: str) -> None:
    from sqlalchemy import MetaData, create_engine, func, select

    scratch = _scratch()
    engine = create_engine(pg_database)
    meta = MetaData()
    table = scratch.commit_table(meta, "test_yardstick")
    meta.create_all(engine)
    try:
        pid = scratch.backend_pid(engine)
        if pid is None:
            pytest.skip("the server's processes are not visible from this host")
        timed = [scratch.timed_commit(engine, table, key, pid) for key in range(20)]
        for took, waited in timed:
            assert waited is not None
            assert 0 <= waited <= took  # a part of the commit, never more than all of it
        with engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(table)).scalar() == 20
        # A backend other than the pool's (the connection replaced): the wait is unknown.
        assert scratch.timed_commit(engine, table, 20, pid + 1)[1] is None
        times, waits = scratch.paced_commits(engine, 3, 0.01)
        assert len(times) == 3 and len(waits) == 3
        assert all(0 <= w <= t for t, w in zip(times, waits, strict=True))
    finally:
        meta.drop_all(engine)
        engine.dispose()


def test_on_sqlite_there_is_no_backend_to_read(tmp_path: Path) -> None:
    from sqlalchemy import create_engine

    scratch = _scratch()
    engine = create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    assert scratch.backend_pid(engine) is None
    times, waits = scratch.paced_commits(engine, 2, 0.0)
    assert len(times) == 2 and waits == []
    engine.dispose()
