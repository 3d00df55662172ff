"""Real ``livetable serve`` processes of one studio, and a client that follows the 421."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from table_service.principals import add_principal
from table_service.runtime import Runtime

# A round that ends at once on naturals: player 9+K = 9, banker 8+K = 8; the shoe's
# indicator 2 burns two cards.
SHOE_CARDS = ["2S", "3H", "4H"]
ROUND_CARDS = ["9S", "8H", "KD", "KC"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def table_file(path: Path, ids: list[str], betting_seconds: float = 600) -> Path:
    path.write_text(
        "".join(
            f'[[tables]]\ntable_id = "{t}"\nbetting_seconds = {betting_seconds}\n\n' for t in ids
        )
    )
    return path


def principals(runtime: Runtime, prefix: str = "studio") -> dict[str, str]:
    tokens = {}
    with runtime.sessions.begin() as session:
        for role in ("operator", "dealer", "supervisor"):
            tokens[role] = add_principal(
                session, runtime.store, f"{prefix}-{role}", role, actor="test:studio"
            )
    return tokens


class Server:
    """One ``serve`` process of the studio, SIGKILL-able."""

    def __init__(self, env: dict[str, str], tables: Path, log_file: Path, node: str) -> None:
        self.port = free_port()
        self.env = {
            **env,
            "LIVETABLE_PORT": str(self.port),
            "LIVETABLE_NODE_ID": node,
        }
        self.tables = tables
        self.log_file = log_file
        self.node = node
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait: bool = True) -> None:
        with self.log_file.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "table_service.cli", "serve", "--tables", self.tables],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + 90
        while True:
            assert self.proc.poll() is None, f"server exited: {self.tail()}"
            try:
                if httpx.get(f"{self.base}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"server not ready: {self.tail()}"
            time.sleep(0.05)

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()

    def tail(self) -> str:
        return self.log_file.read_text(errors="replace")[-3000:]


def server_env(tmp_path: Path, db_url: str, takeover_seconds: float) -> dict[str, str]:
    env = {
        **os.environ,
        "LIVETABLE_DATA_DIR": str(tmp_path / "data"),
        "LIVETABLE_DATABASE_URL": db_url,
        "LIVETABLE_LOG_LEVEL": "WARNING",
        "LIVETABLE_TAKEOVER_SECONDS": str(takeover_seconds),
    }
    for name in ("LIVETABLE_CONFIG", "LIVETABLE_TABLE_CONFIG", "LIVETABLE_NATS_URL"):
        env.pop(name, None)
    return env


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
        return response.json()
