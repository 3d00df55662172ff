"""The whole app over real HTTP and WebSocket (uvicorn in a thread, as ``serve`` runs it:
``websockets-sansio``, no permessage-deflate unless asked), for the streams' tests that
need a real connection rather than Starlette's TestClient."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from table_service.app import build_app
from table_service.table.config import TableConfig
from table_service.table.service import TableManager


@contextlib.contextmanager
def served(runtime: Any, *, compression: bool = False) -> Iterator[tuple[str, Any]]:
    """Table ``bac-1`` served: (ws base URL, the app). ``compression``: permessage-deflate
    offered (``LIVETABLE_STREAM_COMPRESSION``)."""
    configs = [TableConfig(table_id="bac-1")]
    app = build_app(runtime, configs, manager=TableManager(runtime, configs), with_readers=False)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_config=None,
        log_level="warning",
        ws="websockets-sansio",
        ws_per_message_deflate=compression,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"ws://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(30)
