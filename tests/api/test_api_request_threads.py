"""The API's blocking endpoints (FastAPI runs them on anyio's threads) run at most
``request_threads`` at once: a crowd of such requests (subscribers asking a studio where
their tables run while one is taken over) waits on the event loop, instead of dozens of
threads taking the interpreter in turns from a card's command thread."""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import anyio
import anyio.to_thread
from fastapi.testclient import TestClient

from table_service.app import build_app
from table_service.table.service import TableManager


def test_blocking_requests_run_at_most_request_threads_at_once(make_runtime: Any) -> None:
    runtime = make_runtime(request_threads=3)
    app = build_app(runtime, [], manager=TableManager(runtime, []), with_readers=False)
    running = 0
    most = 0
    guard = threading.Lock()

    def blocking() -> None:  # what a sync endpoint does on its thread
        nonlocal running, most
        with guard:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with guard:
            running -= 1

    async def crowd() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(12):
                group.start_soon(anyio.to_thread.run_sync, blocking)

    with TestClient(app) as client:
        assert client.portal is not None  # inside the client's context: its loop runs
        client.portal.call(crowd)  # on the app's event loop, as requests are served
    assert most == 3


def test_health_checks_answer_while_every_request_thread_is_busy(make_runtime: Any) -> None:
    """A crowd holding every request thread does not starve /healthz and /readyz."""
    runtime = make_runtime(request_threads=1)
    app = build_app(runtime, [], manager=TableManager(runtime, []), with_readers=False)
    release = threading.Event()
    answers: dict[str, int] = {}

    def probe(client: TestClient) -> None:
        for path in ("/healthz", "/readyz"):
            answers[path] = client.get(path).status_code

    with TestClient(app) as client:
        assert client.portal is not None  # inside the client's context: its loop runs
        held = client.portal.start_task_soon(
            functools.partial(anyio.to_thread.run_sync, release.wait)
        )
        try:
            prober = threading.Thread(target=probe, args=(client,), daemon=True)
            prober.start()
            prober.join(timeout=30)  # a generous bound; answered in milliseconds
            assert answers == {"/healthz": 200, "/readyz": 200}
            assert not held.done()  # the one request thread was busy all along
        finally:
            release.set()
            held.result(timeout=30)
