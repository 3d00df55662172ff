"""``livetable serve`` in a process of its own, for the benchmarks that measure the service
as it is deployed (the studio manager and its lease, the audit watchdog, INFO logging).

Shared by ``peak_betting.py``, ``stream_load.py`` and ``studio_load.py``-like runs: only
``LIVETABLE_*`` settings a deployment would set are given; the rest are the defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0.0 for no values), as every benchmark here reports it."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


class Serve:
    """One ``livetable serve --tables FILE``; its output goes to ``log``."""

    def __init__(
        self,
        db_url: str,
        data_dir: Path,
        tables: Path,
        log: Path,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.log = log
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("LIVETABLE_")},
            "LIVETABLE_DATA_DIR": str(data_dir),
            "LIVETABLE_DATABASE_URL": db_url,
            "LIVETABLE_PORT": str(self.port),
            **(settings or {}),
        }
        self.tables = tables
        self.proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def one_table(
        cls, runtime: Any, tmp: Path, table_id: str, public_cap: int, settings: list[str]
    ) -> Serve:
        """A ``serve`` of one table on the runtime's database, its public streams capped at
        ``public_cap`` per address and per table (a crowd of subscribers comes from one
        address here), with ``settings`` (``LIVETABLE_X=VALUE``) beyond the defaults."""
        tables = tmp / "tables.toml"
        tables.write_text(f'[[tables]]\ntable_id = "{table_id}"\n')
        return cls(
            runtime.engine.url.render_as_string(hide_password=False),
            runtime.settings.data_dir,
            tables,
            tmp / "serve.log",
            {
                "LIVETABLE_STREAM_MAX_PUBLIC_PER_ADDRESS": str(public_cap),
                "LIVETABLE_STREAM_MAX_PUBLIC_PER_TABLE": str(public_cap),
                **dict(item.split("=", 1) for item in settings),
            },
        )

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "table_service.cli", "serve", "--tables", str(self.tables)],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait_table(self, table_id: str, token: str, seconds: float = 120) -> None:
        """Until the table runs here (its lease taken, its log folded) and answers."""
        deadline = time.monotonic() + seconds
        headers = {"Authorization": f"Bearer {token}"}
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise SystemExit(f"serve exited: {self.log.read_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                url = f"{self.base}/api/v1/tables/{table_id}"
                answer = httpx.get(url, headers=headers, timeout=2)
                if answer.status_code == 200 and answer.json().get("opened"):
                    return
            time.sleep(0.2)
        raise SystemExit(f"serve did not start table {table_id} within {seconds} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a benchmark that runs one ``serve`` on a scratch database."""
    parser.add_argument("--db", default=None, help="database URL (default: SQLite in a temp dir)")
    parser.add_argument(
        "--serve-setting",
        action="append",
        default=[],
        metavar="LIVETABLE_X=VALUE",
        help="a setting of the server beyond its defaults (repeatable)",
    )


def run_on_scratch(
    run: Callable[[argparse.Namespace, Any, Path], dict[str, Any]], args: argparse.Namespace
) -> dict[str, Any]:
    """``run(args, runtime, tmp)`` on a scratch database (``--db``) and a temporary folder,
    the service's logging at WARNING."""
    from scratch import scratch_runtime

    from table_service.logs import configure_logging

    configure_logging(level="WARNING")
    with scratch_runtime(args.db) as runtime, tempfile.TemporaryDirectory() as tmp:
        return run(args, runtime, Path(tmp))
