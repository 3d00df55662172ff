"""How a client that called the wrong process is told where its table is."""

from __future__ import annotations

from table_service.errors import Refused


class TableElsewhere(Refused):
    """421 Misdirected Request: another process runs this table; ``owner_url`` (and the
    ``Location`` header, the same path on that process) says where to send it instead."""

    code = "table_elsewhere"
    status = 421


class TableUnavailable(Refused):
    """503: no process runs this table at this moment (a takeover in progress)."""

    code = "table_unavailable"
    status = 503
