"""The private NATS server the outage tests freeze and kill is the one they talk to.

A port found free is free only until someone binds it: a second server started on a port
another server holds exits, and the other one greets in its place. Waiting for any greeting
then handed the test the wrong server (a test freezing "its" server would have frozen a
dead process, and its clients would never notice)."""

from __future__ import annotations

from pathlib import Path

from table_service.scratch_servers import NatsServer, _greeting_name


def test_a_server_whose_port_was_taken_starts_on_another_and_greets_as_itself(
    tmp_path: Path, nats_binary: str
) -> None:
    first = NatsServer(nats_binary, tmp_path / "first")
    first.start()
    second = NatsServer(nats_binary, tmp_path / "second")
    second.port = first.port  # taken since it was found free
    try:
        second.start()
        assert second.port != first.port
        assert _greeting_name(second.port) == second.name
        assert _greeting_name(first.port) == first.name != second.name
        assert second.proc is not None and second.proc.poll() is None
    finally:
        second.stop()
        first.stop()


def test_a_restart_keeps_its_port_and_name(tmp_path: Path, nats_binary: str) -> None:
    server = NatsServer(nats_binary, tmp_path / "nats")
    server.start()
    port = server.port
    try:
        server.stop()
        server.start()
        assert server.port == port
        assert _greeting_name(port) == server.name
    finally:
        server.stop()
