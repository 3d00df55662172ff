"""What the browser tests share: a running studio (server, shoe, tokens) and small waits."""

from __future__ import annotations

import os
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from hardware_sim.virtual_shoe import VirtualShoe
from table_service.runtime import Runtime
from tests.support.shoe_dealing import deal_unlocked

SHOTS = Path(
    os.environ.get("LIVETABLE_SCREENSHOTS", Path(tempfile.gettempdir()) / "livetable-screenshots")
)


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "") -> Any:
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
        self.http = httpx.Client(base_url=self.base_url, timeout=30)

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
        summary: dict[str, Any] = self.call("GET", f"/tables/{self.table_id}", "supervisor")
        return summary

    def ready_shoe(self) -> None:
        """Insert the shoe and burn (indicator 2S then two cards), as a supervisor would."""
        # the reader's first hello can take a while on a loaded machine: a wait, not a measure
        wait_for(lambda: self.summary()["reader_online"], timeout=60, what="reader online")
        self.call("POST", f"/tables/{self.table_id}/shoe", "supervisor")
        for _ in range(20):  # the burn, where the game has one (baccarat: 2S, then two)
            if (self.summary()["shoe"] or {}).get("ready"):
                return
            before = self.summary()["last_seq"]
            self.shoe.deal()

            def recorded(b: int = before) -> bool:
                return bool(self.summary()["last_seq"] > b)

            wait_for(recorded, what="burn card")
        wait_for(lambda: (self.summary()["shoe"] or {}).get("ready"), what="shoe burnt")

    def deal(self, scan: bool = True) -> str | None:
        before = self.summary()["last_seq"]
        card = deal_unlocked(self.shoe, wait_for, scan=scan)
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
        settled: dict[str, Any] = wait_for(
            lambda: (s := self.summary())["round"]["phase"] in ("settled", "voided") and s,
            what="round settled",
        )
        return settled

    def page(self, browser: Any, path: str, *, width: int = 1280, height: int = 800) -> Any:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.set_default_timeout(30_000)
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


def sign_in(page: Any, token: str) -> None:
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
