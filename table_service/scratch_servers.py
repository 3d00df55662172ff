"""Private PostgreSQL and NATS servers in temporary folders, on free ports, for the tests
and benchmarks that restart them or take them away: never the machine's shared servers,
which other tests use.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(condition: Callable[[], bool], what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


def postgres_bin() -> Path:
    """Debian's PostgreSQL programs (initdb, pg_ctl, pg_dump...), newest version."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        raise FileNotFoundError("PostgreSQL programs not installed (/usr/lib/postgresql/*/bin)")
    return Path(found[-1]).parent


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


class PrivatePostgres:
    """A PostgreSQL server of its own (initdb in a temporary folder, a free port, trust
    authentication on 127.0.0.1), which its owner may stop, start and restart."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        # Under the system's temporary folder: the server runs as an unprivileged user (it
        # refuses root), who cannot enter a test's private folders.
        self.folder = Path(tempfile.mkdtemp(prefix="livetable-pg-"))
        self.data = self.folder / "pgdata"
        self.port = _free_port()
        self.log = self.folder / "postgres.log"
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            user = "postgres" if _user_exists("postgres") else "nobody"
            group = "postgres" if user == "postgres" else "nogroup"
            shutil.chown(self.folder, user)
            self._as_user = ["setpriv", f"--reuid={user}", f"--regid={group}", "--clear-groups"]

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self._as_user, *args], capture_output=True, text=True, timeout=120, check=check
        )

    def init(self) -> PrivatePostgres:
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C",
        )  # fmt: skip
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.folder}'\nmax_connections = 100\n"
                "shared_buffers = 32MB\nfsync = on\n"
            )
        self.start()
        return self

    def start(self) -> None:
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
            "-w", "-t", "60", "start",
        )  # fmt: skip
        _wait(self.accepting, "the private PostgreSQL never accepted connections", 60)

    def accepting(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 1):
            return True
        return False

    def stop(self, mode: str = "fast") -> None:
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop",
            check=False,
        )  # fmt: skip

    def createdb(self, name: str) -> str:
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", "postgres", name)  # fmt: skip
        return self.url(name)


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres()
    try:
        server.init()
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(server.folder, ignore_errors=True)


def _greeting_name(port: int) -> str | None:
    """The ``server_name`` of the NATS server greeting on ``port`` (its INFO line), or None."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.settimeout(1)
            line = b""
            while not line.endswith(b"\r\n") and len(line) < 65536:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                line += chunk
    except OSError:
        return None
    if not line.startswith(b"INFO "):
        return None
    try:
        info = json.loads(line[5:].strip())
    except ValueError:
        return None
    name = info.get("server_name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else None


class NatsServer:
    """A ``nats-server`` with JetStream on its own port and store, restartable.

    Started, it is waited for until the server answering on its port greets with this
    server's own name (a random one, ``--server_name``), not merely until something answers
    there: a free port found is free only until someone binds it, and a server that lost it
    to another test's server exits while the other one greets in its place. Tests that
    then froze or killed "their" server would have been talking to another one all along.
    The first start picks another free port then; a restart, on the same port, fails."""

    def __init__(self, binary: str, store: Path) -> None:
        self.binary = binary
        self.store = store
        self.port = _free_port()
        self.name = f"livetable-scratch-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._started = False

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.store.mkdir(parents=True, exist_ok=True)
        for attempt in range(5):
            if self._start_once():
                self._started = True
                return
            if self._started or attempt == 4:
                raise RuntimeError(f"nats-server could not listen on 127.0.0.1:{self.port}")
            self.port = _free_port()  # the port was taken since it was found free

    def _start_once(self) -> bool:
        """Whether this server came up as itself on ``self.port``; False if it exited."""
        self.proc = subprocess.Popen(
            [
                self.binary, "-a", "127.0.0.1", "-p", str(self.port), "-js",
                "-sd", str(self.store), "--server_name", self.name,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        proc = self.proc
        _wait(
            lambda: proc.poll() is not None or _greeting_name(self.port) == self.name,
            "nats-server did not start",
            20,
        )
        return proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
