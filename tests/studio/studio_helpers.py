"""A studio's tables and a client that follows the 421 (the ``serve`` processes themselves:
``tests/support/crash_harness.py``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

# A round that ends at once on naturals: player 9+K = 9, banker 8+K = 8; the shoe's
# indicator 2 burns two cards.
SHOE_CARDS = ["2S", "3H", "4H"]
ROUND_CARDS = ["9S", "8H", "KD", "KC"]


def table_file(path: Path, ids: list[str], betting_seconds: float = 600) -> Path:
    path.write_text(
        "".join(
            f'[[tables]]\ntable_id = "{t}"\nbetting_seconds = {betting_seconds}\n\n' for t in ids
        )
    )
    return path


class StudioClient:
    """Calls any process; on 421 it re-sends to the ``Location`` the answer names, on 503
    (a takeover in progress) it waits and retries."""

    def __init__(self, base: str, tokens: dict[str, str]) -> None:
        self.base = base
        self.headers = {role: {"Authorization": f"Bearer {t}"} for role, t in tokens.items()}
        self.http = httpx.Client(timeout=10)
        self.misdirected = 0

    def call(self, role: str, method: str, path: str, **kw: Any) -> httpx.Response:
        url = f"{self.base}/api/v1{path}"
        deadline = time.monotonic() + 60
        while True:
            try:
                response = self.http.request(method, url, headers=self.headers[role], **kw)
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code == 421:
                self.misdirected += 1
                url = response.headers["location"]
                continue
            if response is not None and response.status_code != 503:
                return response
            assert time.monotonic() < deadline, f"{path}: unavailable for a minute"
            time.sleep(0.1)

    def ok(self, role: str, method: str, path: str, **kw: Any) -> dict[str, Any]:
        response = self.call(role, method, path, **kw)
        assert response.status_code == 200, (path, response.status_code, response.text)
        answer: dict[str, Any] = response.json()
        return answer
