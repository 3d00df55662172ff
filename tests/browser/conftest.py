"""Browser tests: Playwright for Python driving Debian's Chromium against a real server.

One Chromium per test session; each test gets its own studio: a SQLite database, a virtual
framed shoe on a pseudo-terminal read by the real serial reader, and the whole app served
by uvicorn on a free port. Pages are driven as a person would: sign in, click, read.
Every test saves a screenshot in ``LIVETABLE_SCREENSHOTS`` (default: a
``livetable-screenshots`` folder in the system's temporary directory); the manual's
pictures are made with ``LIVETABLE_SCREENSHOTS=docs/screenshots``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from hardware_sim.virtual_shoe import VirtualShoe
from table_service.app import build_app
from table_service.config import Settings
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table.config import ShoeConfig, TableConfig
from tests.browser.browser_helpers import DEFAULT_DECK, Studio, _Server, free_socket, wait_for

CHROMIUM = os.environ.get("LIVETABLE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _require_browser() -> bool:
    return os.environ.get("LIVETABLE_REQUIRE_BROWSER", "") not in ("", "0", "false")


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One Chromium for all the browser tests, closed after the last of them: Playwright's
    synchronous API keeps an event loop in this thread while it runs, which the asyncio
    tests elsewhere in the suite must not find there."""
    if not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None:
        message = f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
        if _require_browser():
            pytest.fail(message)
        pytest.skip(message)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # pragma: no cover - the test extra installs it
        if _require_browser():
            pytest.fail(f"playwright is not installed: {exc}")
        pytest.skip(f"playwright is not installed: {exc}")
    from playwright.sync_api import expect

    # Waits, not measures: a page on a loaded CI machine (2 cores, many test runs) may take
    # longer than Playwright's 5 s default to show what the test waits for.
    expect.set_options(timeout=20_000)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def make_studio(tmp_path: Path) -> Iterator[Callable[..., Studio]]:
    made: list[tuple[Studio, _Server, threading.Thread]] = []

    def factory(
        deck: list[str] | None = None,
        *,
        table: TableConfig | None = None,
        betting_seconds: float = 30,
        void_approval_above: int | None = None,
        table_id: str = "bac-1",
        **table_options: Any,
    ) -> Studio:
        settings = Settings(
            data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'lt.db'}"
        )
        runtime = Runtime.from_settings(settings, upgrade=True)
        tokens: dict[str, str] = {}
        with runtime.sessions.begin() as session:
            for name, role, bound in (
                ("dealer-ann", "dealer", table_id),
                ("sup-bao", "supervisor", None),
                ("sup-chi", "supervisor", None),
                ("reg-dung", "regulator", None),
                ("operator", "operator", None),
            ):
                tokens[name] = add_principal(
                    session, runtime.store, name, role, table_id=bound, actor="test"
                )
        tokens["dealer"] = tokens["dealer-ann"]
        tokens["supervisor"] = tokens["sup-bao"]
        tokens["regulator"] = tokens["reg-dung"]
        shoe = VirtualShoe("framed", seed=3, heartbeat=0.2, retransmit_interval=0.1)
        shoe.load(deck or DEFAULT_DECK)
        shoe.start()
        config = table or TableConfig(
            table_id=table_id,
            betting_seconds=betting_seconds,
            void_approval_above=void_approval_above,
            shoe=ShoeConfig(port=shoe.device_path),
            **table_options,
        )
        app = build_app(runtime, [config], reader_options={"offline_timeout": 30.0})
        sock = free_socket()
        server = _Server(
            uvicorn.Config(
                app, log_level="warning", access_log=False, log_config=None, lifespan="on"
            )
        )
        thread = threading.Thread(
            target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True
        )
        thread.start()
        wait_for(lambda: server.started, what="server started")
        studio = Studio(
            f"http://127.0.0.1:{sock.getsockname()[1]}", shoe, tokens, config.table_id, runtime
        )
        made.append((studio, server, thread))
        return studio

    yield factory
    for studio, server, thread in made:
        studio.http.close()
        server.should_exit = True
        thread.join(15)
        studio.shoe.stop()
        studio.runtime.close()
