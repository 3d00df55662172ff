"""Browser tests: Playwright for Python driving Debian's Chromium against a real server.

One Chromium per test session; each test gets its own studio: a SQLite database, a virtual
framed shoe on a pseudo-terminal read by the real serial reader, and the whole app served
by uvicorn on a free port. Pages are driven as a person would: sign in, click, read.
Every test saves a screenshot in ``LIVETABLE_SCREENSHOTS`` (default: a
``livetable-screenshots`` folder in the system's temporary directory); the README's
pictures are made with ``LIVETABLE_SCREENSHOTS=table_service/consoles/screenshots``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from hardware_sim.virtual_shoe import VirtualShoe
from table_service.config import Settings
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table.api import build_app
from table_service.table.config import ShoeConfig, TableConfig

sys.path.insert(0, str(Path(__file__).parent))

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
SHOTS = Path(
    os.environ.get("LIVETABLE_SCREENSHOTS", Path(tempfile.gettempdir()) / "livetable-screenshots")
)


def _require_browser() -> bool:
    return os.environ.get("LIVETABLE_REQUIRE_BROWSER", "") not in ("", "0", "false")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
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
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.03)
    raise AssertionError(f"not reached in {timeout} s: {what}")


class _Server(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # a thread has no signals
        pass


@dataclass
class Studio:
    """A running service with its shoe and one token per role."""

    base_url: str
    shoe: VirtualShoe
    tokens: dict[str, str]
    table_id: str
    runtime: Runtime
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.base_url, timeout=15)

    def call(self, method: str, path: str, role: str, body: Any = None) -> Any:
        response = self.http.request(
            method,
            f"/api/v1{path}",
            json=body,
            headers={"Authorization": f"Bearer {self.tokens[role]}"},
        )
        assert response.status_code < 300, response.text
        return response.json()

    def summary(self) -> dict[str, Any]:
        return self.call("GET", f"/tables/{self.table_id}", "supervisor")

    def ready_shoe(self) -> None:
        """Insert the shoe and burn (indicator 2S then two cards), as a supervisor would."""
        wait_for(lambda: self.summary()["reader_online"], what="reader online")
        self.call("POST", f"/tables/{self.table_id}/shoe", "supervisor")
        for _ in range(3):
            self.shoe.deal()
        wait_for(lambda: (self.summary()["shoe"] or {}).get("ready"), what="shoe burnt")

    def deal(self, scan: bool = True) -> str | None:
        wait_for(lambda: not self.shoe.locked, what="shoe unlocked")
        before = self.summary()["last_seq"]
        card = self.shoe.deal(scan=scan)
        if scan:
            wait_for(lambda: self.summary()["last_seq"] > before, what=f"card {card} recorded")
        return card

    def play_round(self, bets: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Open and close betting through the API, deal from the shoe until settled."""
        t = self.table_id
        self.call("POST", f"/tables/{t}/betting/open", "dealer")
        if bets:
            self.call("POST", f"/tables/{t}/bets", "operator", {"bets": bets})
        self.call("POST", f"/tables/{t}/betting/close", "dealer")
        while (self.summary()["round"] or {}).get("next_position"):
            self.deal()
        return wait_for(
            lambda: (s := self.summary())["round"]["phase"] in ("settled", "voided") and s,
            what="round settled",
        )

    def page(self, browser: Any, path: str, *, width: int = 1280, height: int = 800) -> Any:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(self.base_url + path)
        return page

    def shot(self, page: Any, name: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{name}.png"
        page.screenshot(path=str(path))
        return path


def free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


# Round 1: P 2S, B 5H, P KD, B TC, P3 3S -> player 5, banker 5: a tie (the spec example).
# Round 2: 9S 2H KD 5C -> player 9 natural. Then plenty of cards.
DEFAULT_DECK = [
    "2S",
    "3H",
    "4H",
    "2S",
    "5H",
    "KD",
    "TC",
    "3S",
    "9S",
    "2H",
    "KD",
    "5C",
] + ["4C", "8D", "6S", "AH", "QC", "7D", "2C", "9H", "3D", "KS", "8C", "5S", "JH", "6D"] * 8


@pytest.fixture
def make_studio(tmp_path: Path) -> Iterator[Callable[..., Studio]]:
    made: list[tuple[Studio, _Server, threading.Thread]] = []

    def factory(
        deck: list[str] | None = None,
        *,
        table: TableConfig | None = None,
        betting_seconds: float = 30,
    ) -> Studio:
        settings = Settings(
            data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'lt.db'}"
        )
        runtime = Runtime.from_settings(settings, upgrade=True)
        tokens: dict[str, str] = {}
        with runtime.sessions.begin() as session:
            for name, role, bound in (
                ("dealer-ann", "dealer", "bac-1"),
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
            table_id="bac-1",
            betting_seconds=betting_seconds,
            shoe=ShoeConfig(port=shoe.device_path),
        )
        app = build_app(runtime, [config], reader_options={"offline_timeout": 5.0})
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


def sign_in(page: Any, token: str) -> None:
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
