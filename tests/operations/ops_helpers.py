"""What the operations tests share: a studio table served by a real process with its framed
virtual shoe, a scrape of a metrics listener, a private PostgreSQL server the test may
restart, and a small file system the test may fill."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from hardware_sim.virtual_shoe import ShoeLockedError, VirtualShoe
from table_service import scratch_servers
from table_service.scratch_servers import PrivatePostgres, postgres_bin
from tests.support.crash_harness import (
    Money,
    Server,
    check_money,
    free_port,
    open_runtime,
    principals,
    run_cli,
    server_env,
)

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")
WAIT = 90.0


def wait_for(condition: Callable[[], Any], what: str, seconds: float = WAIT) -> Any:
    """Poll ``condition`` until it is truthy (its value), failing with ``what`` after a
    generous bound: a loaded machine makes a test slower, never red."""
    deadline = time.monotonic() + seconds
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def freeze(pid: int, seconds: float = WAIT) -> None:
    """SIGSTOP ``pid`` and wait until every one of its threads has stopped.

    ``kill`` returns once the signal is queued: the group stops only after one of the
    process's threads has been scheduled to take the signal, and until then its other
    threads run on. On a loaded machine that took milliseconds, long enough for a stopped
    NATS to still answer the acknowledgement a test sent it right after the kill."""
    os.kill(pid, signal.SIGSTOP)

    def stopped() -> bool:
        states = []
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):  # a thread that has just ended
                # "pid (comm) S ...": the state follows the command's closing bracket
                states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        return bool(states) and all(state in ("T", "t") for state in states)

    wait_for(stopped, f"process {pid} did not stop on SIGSTOP", seconds)


def scrape(url: str) -> dict[str, float]:
    """Every sample of a /metrics answer, ``name{labels}`` → value."""
    answer = httpx.get(url, timeout=10)
    assert answer.status_code == 200, answer.text
    samples = {}
    for line in answer.text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        match = SAMPLE.match(line)
        assert match, line
        samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples


def value(samples: dict[str, float], name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    total, found = 0.0, False
    for key, v in samples.items():
        if key.split("{", 1)[0] != name:
            continue
        if all(f'{k}="{val}"' in key for k, val in labels.items()):
            total += v
            found = True
    assert found, f"no sample of {name} {labels}"
    return total


@dataclass
class ShoeStudio:
    """Tables served by one real ``serve`` process, each with its framed virtual shoe."""

    tmp: Path
    db_url: str
    table_ids: list[str]
    game: str = "baccarat"
    settings: dict[str, str] = field(default_factory=dict)
    data_dir: Path | None = None
    before_open: Callable[[dict[str, str]], None] | None = None
    """Run on the environment before the database is opened (a restore, say)."""
    tokens: dict[str, str] = field(default_factory=dict)
    """Tokens of principals the database already holds; else new ones are added."""

    def __post_init__(self) -> None:
        self.metrics_port = free_port()
        self.env = server_env(
            self.data_dir or self.tmp / "data",
            self.db_url,
            metrics_address=f"127.0.0.1:{self.metrics_port}",
            **self.settings,
        )
        if self.before_open is not None:
            self.before_open(self.env)
        self.runtime = open_runtime(self.env)
        self.tokens = self.tokens or principals(self.runtime, "ops")
        self.shoes: dict[str, VirtualShoe] = {}
        lines = []
        for n, table_id in enumerate(self.table_ids):
            shoe = VirtualShoe(
                "framed", decks=8, seed=11 + n, cut_depth=52, link_path=str(self.tmp / table_id)
            )
            shoe.start()
            self.shoes[table_id] = shoe
            lines.append(
                f'[[tables]]\ntable_id = "{table_id}"\ngame = "{self.game}"\n'
                "betting_seconds = 600\n"
                f'shoe = {{ port = "{shoe.device_path}", dialect = "framed" }}\n'
            )
        self.table_file = self.tmp / "tables.toml"
        self.table_file.write_text("\n".join(lines))
        self.server = Server(self.env, self.table_file, self.tmp / "serve.log", "node-ops")
        self.http = httpx.Client(timeout=60)

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def request(self, role: str, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[role]}"}
        return self.http.request(method, f"{self.server.base}/api/v1{path}", headers=headers, **kw)

    def ok(self, role: str, method: str, path: str, **kw: Any) -> dict[str, Any]:
        answer = self.request(role, method, path, **kw)
        assert answer.status_code == 200, (path, answer.status_code, answer.text)
        body: dict[str, Any] = answer.json()
        return body

    def retry(self, role: str, method: str, path: str, **kw: Any) -> dict[str, Any]:
        """As a client does: 503 means wait ``Retry-After`` and send the same again."""
        deadline = time.monotonic() + WAIT
        while True:
            try:
                answer = self.request(role, method, path, **kw)
            except httpx.TransportError:
                answer = None
            if answer is not None and answer.status_code != 503:
                assert answer.status_code == 200, (path, answer.status_code, answer.text)
                body: dict[str, Any] = answer.json()
                return body
            assert time.monotonic() < deadline, f"{path}: unavailable for {WAIT:g} s"
            wait = answer.headers.get("retry-after") if answer is not None else None
            time.sleep(min(float(wait or 0.2), 0.5))

    def table(self, table_id: str) -> dict[str, Any]:
        return self.retry("supervisor", "GET", f"/tables/{table_id}")

    def deal(self, table_id: str, *, wait: bool = True) -> str:
        """The dealer draws the next card from the shoe; the table records it (``wait``)."""
        before = self.table(table_id)["shoe"]["cards_seen"] if wait else 0
        shoe = self.shoes[table_id]
        deadline = time.monotonic() + WAIT
        while True:
            try:
                card = shoe.deal()
                break
            except ShoeLockedError:
                assert time.monotonic() < deadline, "the shoe stayed locked"
                time.sleep(0.01)
        assert card not in (None, "CUT"), "the test shoe ran out"
        if wait:
            wait_for(
                lambda: self.table(table_id)["shoe"]["cards_seen"] > before,
                f"{table_id}: card {card} not recorded",
            )
        return str(card)

    def ready_shoe(self, table_id: str) -> None:
        wait_for(lambda: self.table(table_id)["reader_online"], "the shoe never came online")
        if self.table(table_id)["shoe"] is None:
            self.retry("supervisor", "POST", f"/tables/{table_id}/shoe")
        while not self.table(table_id)["shoe"]["ready"]:
            self.deal(table_id)

    def finish_round(self, table_id: str) -> dict[str, Any]:
        """Deal until the round in play ends; its last state."""
        rnd: dict[str, Any]
        while (rnd := self.table(table_id)["round"])["phase"] == "dealing":
            self.deal(table_id)
        return rnd

    def close(self) -> None:
        self.server.stop()
        self.http.close()
        for shoe in self.shoes.values():
            shoe.stop()
        self.runtime.close()


def money_after(env: dict[str, str], table_id: str | None = None) -> Money:
    """The money invariants on the database a stopped studio leaves (see check_money)."""
    runtime = open_runtime(env)
    try:
        return check_money(runtime, table_id)
    finally:
        runtime.close()


class Endpoint:
    """An operator's webhook endpoint on a free port: ``status`` decides each answer from
    the body's ``seq`` and the number of requests so far; the deliveries answered 2xx are
    kept in order as (event type, Idempotency-Key)."""

    def __init__(self, status: Callable[[int, int], int] = lambda seq, n: 200) -> None:
        self.accepted: list[tuple[str, int]] = []
        self.requests = 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = int(self.headers["Idempotency-Key"])
                assert key == body["seq"]
                endpoint.requests += 1
                answer = status(key, endpoint.requests)
                if 200 <= answer < 300:
                    endpoint.accepted.append((body["type"], key))
                self.send_response(answer)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def livetable(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """A ``livetable`` command as an operator runs it (same environment as the server)."""
    return run_cli(list(args), env=env, timeout=300)


def seal_and_verify(env: dict[str, str]) -> str:
    """After an incident: sign a checkpoint at the head, then ``audit verify
    --read-models`` (the chain, every checkpoint, the read models against the log)."""
    sealed = livetable(env, "audit", "checkpoint")
    assert sealed.returncode == 0, sealed.stdout + sealed.stderr
    verify = livetable(env, "audit", "verify", "--read-models")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stdout.startswith("OK"), verify.stdout
    return verify.stdout


# -- a private PostgreSQL server --------------------------------------------------------------


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A PostgreSQL server of the test's own (the test may restart it); the test fails
    (LIVETABLE_REQUIRE_POSTGRES=1) or is skipped where Debian's programs are missing."""
    try:
        postgres_bin()
    except FileNotFoundError as exc:
        if os.environ.get("LIVETABLE_REQUIRE_POSTGRES", "") not in ("", "0", "false"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    with scratch_servers.private_postgres() as server:
        yield server


# -- a small file system ----------------------------------------------------------------------


@contextlib.contextmanager
def small_volume(folder: Path, megabytes: int) -> Iterator[Path]:
    """A tmpfs of ``megabytes`` mounted at ``folder`` (a real file system that fills up:
    writes past its size fail with ENOSPC). Needs the right to mount (root here and in
    CI); loop devices would do the same with an image file, tmpfs needs no image."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m,mode=0755", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        message = f"cannot mount a tmpfs here: {done.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def fill(volume: Path, leave_bytes: int = 0) -> Path:
    """Write a filler file until the volume is full (less ``leave_bytes``)."""
    filler = volume / "filler"
    chunk = b"\0" * (1 << 16)
    with filler.open("wb") as out:
        while shutil.disk_usage(volume).free > leave_bytes + len(chunk):
            out.write(chunk)
            out.flush()
        with contextlib.suppress(OSError):
            while shutil.disk_usage(volume).free > leave_bytes:
                out.write(b"\0" * 4096)
                out.flush()
    return filler
