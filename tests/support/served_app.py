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
    with running(config) as server:
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}", app


@contextlib.contextmanager
def running(config: uvicorn.Config) -> Iterator[uvicorn.Server]:
    """A uvicorn server of ``config`` run on a thread of its own, once it has started;
    asked to exit, and waited for, at the end."""
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("server did not start")
        time.sleep(0.02)
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(30)
