"""A private ``nats-server`` with JetStream on its own port and store, restartable (kept
here for the studio tests' imports; it lives in ``table_service.scratch_servers``)."""

from __future__ import annotations

from table_service.scratch_servers import NatsServer, _free_port

__all__ = ["NatsServer", "_free_port"]
