"""The metrics listener and the label bounds, without a studio."""

from __future__ import annotations

import httpx
import pytest

from table_service import metrics


def test_address_is_host_and_port() -> None:
    assert metrics.parse_address("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert metrics.parse_address(":0") == ("127.0.0.1", 0)
    assert metrics.parse_address("[::1]:9000") == ("::1", 9000)
    for bad in ("9464", "host:", "host:http", "host:70000"):
        with pytest.raises(metrics.MetricsAddressError, match="HOST:PORT"):
            metrics.parse_address(bad)


def test_listener_serves_its_path_only() -> None:
    server = metrics.serve_metrics("127.0.0.1:0", "/ops/metrics")
    try:
        assert server.url == f"http://127.0.0.1:{server.port}/ops/metrics"
        answer = httpx.get(server.url, timeout=5)
        assert answer.status_code == 200
        assert "# TYPE livetable_commit_duration_seconds histogram" in answer.text
        assert "_created" not in answer.text  # no doubled series
        assert httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=5).status_code == 404
    finally:
        server.close()


def test_a_taken_port_is_a_clear_error() -> None:
    server = metrics.serve_metrics("127.0.0.1:0")
    try:
        with pytest.raises(metrics.MetricsAddressError, match="cannot listen for metrics"):
            metrics.serve_metrics(f"127.0.0.1:{server.port}")
    finally:
        server.close()


def test_label_values_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_reasons", set())  # this process's other tests keep theirs
    assert metrics.bounded("insufficient_funds") == "insufficient_funds"
    assert metrics.bounded("Robert'); DROP TABLE") == "other"
    assert metrics.bounded("x" * 80) == "other"
    for n in range(metrics.MAX_REASONS + 5):
        metrics.bounded(f"made_up_code_{n}")
    assert metrics.bounded("yet_another_code") == "other"
    assert metrics.bounded("insufficient_funds") == "insufficient_funds"  # known ones stay


def test_what_counts_as_the_database_away() -> None:
    import sqlite3

    import psycopg
    from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError

    from table_service.table.outage import outage

    def wrapped(error: Exception, kind: type[DBAPIError] = OperationalError) -> Exception:
        return kind("INSERT ...", {}, error)

    assert outage(wrapped(sqlite3.OperationalError("database or disk is full"))) == (
        "database_full"
    )
    assert outage(wrapped(sqlite3.OperationalError("disk I/O error"))) == "database_unavailable"
    assert outage(wrapped(sqlite3.OperationalError("database is locked"))) == (
        "database_unavailable"
    )
    assert outage(wrapped(psycopg.OperationalError("connection refused"))) == (
        "database_unavailable"
    )
    assert outage(wrapped(psycopg.errors.DiskFull("could not extend file"))) == "database_full"
    # defects are not outages: a table must not pause on them
    assert outage(wrapped(sqlite3.OperationalError("no such table: bets"))) is None
    assert outage(wrapped(psycopg.errors.UndefinedTable("bets"), ProgrammingError)) is None
    assert outage(ValueError("bad")) is None
