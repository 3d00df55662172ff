"""`livetable serve` as a real process over real HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx

from tests.support.crash_harness import livetable_command


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_serve_migrates_and_answers_health(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "LIVETABLE_DATA_DIR": str(tmp_path / "data"), "LIVETABLE_PORT": str(port)}
    env.pop("LIVETABLE_DATABASE_URL", None)
    proc = subprocess.Popen(
        [livetable_command(), "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert proc.stdout is not None  # stdout=PIPE
                assert proc.poll() is None, proc.stdout.read().decode()
                assert time.monotonic() < deadline, "server did not come up"
                time.sleep(0.2)
        assert health.json() == {"status": "ok"}
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
        assert ready.status_code == 200, ready.text
        assert httpx.get(f"http://127.0.0.1:{port}/api/v1/whoami").status_code == 401
        assert (tmp_path / "data" / "livetable.db").exists()
    finally:
        proc.terminate()
        proc.wait(30)
