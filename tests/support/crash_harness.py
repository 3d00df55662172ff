"""Real ``livetable serve`` processes that a test SIGKILLs and restarts, and the money checks
that must hold after every restart.

One harness for the crash tests (baccarat, blackjack, Xì Dách: one process killed at
seeded points) and the studio tests (several processes on one PostgreSQL, one killed and
its tables taken over). The server is ``python -m table_service.cli serve`` as a process
of its own on its own loopback port, never an in-process app: a SIGKILL must lose exactly
what a real crash loses. It is forked from a zygote that has made that command's imports
once (``tests/support/serve_zygote.py``: a start then costs about a tenth of its CPU);
``LIVETABLE_TEST_SERVE_FORK=0`` starts every server as a fresh interpreter instead.
"""

from __future__ import annotations

import atexit
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from audit.store import EventStore
from audit.verify import verify_database
from hardware_sim.virtual_shoe import ShoeLockedError, VirtualShoe
from table_service.config import Settings
from table_service.models import Account, BetRow, LedgerEntry, RoundRow
from table_service.principals import add_principal
from table_service.runtime import Runtime

READY_SECONDS = 90  # an interpreter start and migrations on a saturated 2-core machine
# Bounds of the waits for a card, a released shoe, a quiet table: generous, so a loaded
# machine makes a crash test slower, never red. A server that never records a card still
# fails, naming the table it has.
WAIT_SECONDS = 60


# A server outlives a test process that is itself killed (a CI timeout, an interrupted run)
# unless the kernel kills it with its parent: an orphan ``serve`` keeps reconnecting to its
# shoe's pseudo-terminal and, once that number is reused, locks another test's shoe.
_WITH_PARENT = ["setpriv", "--pdeathsig", "KILL"] if shutil.which("setpriv") else []
SERVE = [sys.executable, "-m", "table_service.cli", "serve"]
ZYGOTE = Path(__file__).with_name("serve_zygote.py")

# The readiness probe: one client for every server, made once (a client's TLS context
# loads the CA bundle, about 25 ms of CPU: made afresh for each probe every 30 ms, it cost
# a crash test more CPU than its servers' requests), no connection kept across a kill.
_PROBE = httpx.Client(timeout=1, limits=httpx.Limits(max_keepalive_connections=0))


INSTALLED = str(Path(sys.executable).with_name("livetable"))
"""The console script ``pip install`` wrote: what a user's ``livetable`` runs."""
SHIM = """#!{python} -SE
# `livetable` for the tests: the installed script's ``main()`` with this process's
# arguments, environment, folder and standard streams, run in a process the tests' serve
# zygote forks (its imports made once); signals are passed on, its exit status returned.
import json, os, signal, socket, sys

conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect({socket!r})
streams = []
for fd in (0, 1, 2):
    try:
        os.fstat(fd)
        streams.append(fd)
    except OSError:
        streams.append(os.open(os.devnull, os.O_RDWR))
request = {{"script": {script!r}, "argv": sys.argv[1:], "env": dict(os.environ)}}
request["cwd"] = os.getcwd()
socket.send_fds(conn, [json.dumps(request).encode() + b"\\n"], streams)
answers = conn.makefile("rb")
pid = json.loads(answers.readline())["pid"]


def forward(signum, frame):
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1):
    signal.signal(sig, forward)
line = answers.readline()
status = json.loads(line)["status"] if line else 1
if status < 0:
    signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
sys.exit(status)
"""


def livetable_command() -> str:
    """The ``livetable`` command for a test to run (by path, or first on ``PATH``): the
    installed script's code in a process forked from this process's zygote, or with
    ``LIVETABLE_TEST_SERVE_FORK=0`` the installed script itself."""
    zygote = serve_zygote()
    return INSTALLED if zygote is None else str(zygote.shim)


class ForkedServe:
    """A ``serve`` forked by the zygote, with the part of ``Popen``'s interface the tests
    use: ``pid``, ``poll``, ``wait``, ``send_signal``, ``kill``, ``returncode``."""

    def __init__(self, zygote: ServeZygote, pid: int) -> None:
        self.zygote = zygote
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.exit_status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.zygote.wait_exit(self.pid, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # never a signal to a pid the zygote has reaped
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class ServeZygote:
    """The test process's end of ``serve_zygote.py``: spawn requests and exit reports."""

    def __init__(self) -> None:
        requests_r, self._requests = os.pipe()
        answers, answers_w = os.pipe()
        self.home = Path(tempfile.mkdtemp(prefix="livetable-zygote-"))
        self.log = self.home / "zygote.log"
        self.shim = self.home / "bin" / "livetable"
        self.shim.parent.mkdir()
        socket_path = self.home / "zygote.sock"
        self.shim.write_text(
            SHIM.format(python=sys.executable, socket=str(socket_path), script=INSTALLED)
        )
        self.shim.chmod(0o755)
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                [
                    *_WITH_PARENT,
                    sys.executable,
                    str(ZYGOTE),
                    str(requests_r),
                    str(answers_w),
                    str(socket_path),
                ],
                pass_fds=(requests_r, answers_w),
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=subprocess.STDOUT,
            )
        os.close(requests_r)
        os.close(answers_w)
        self._changed = threading.Condition()
        self._pids: dict[int, int] = {}  # request id -> pid
        self._exits: dict[int, int] = {}  # pid -> exit status
        self._ready = False
        self._closed = False
        self.cpu = 0.0  # the CPU seconds of the servers that ended
        self._next = 0
        self._spawning = threading.Lock()
        threading.Thread(target=self._read, args=(answers,), daemon=True).start()
        self._wait(lambda: self._ready, READY_SECONDS, "the serve zygote to import")

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as answers:
            for line in answers:
                message = json.loads(line)
                with self._changed:
                    if "ready" in message:
                        self._ready = True
                    elif "exit" in message:
                        self._exits[message["exit"]] = message["status"]
                        self.cpu += message["cpu"]
                    else:
                        self._pids[message["id"]] = message["pid"]
                    self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _wait(self, condition: Callable[[], bool], seconds: float | None, what: str) -> None:
        with self._changed:
            done = self._changed.wait_for(lambda: condition() or self._closed, seconds)
            if self._closed and not condition():
                raise RuntimeError(f"the serve zygote ended: {self.log.read_text()[-3000:]}")
            if not done:
                raise subprocess.TimeoutExpired(str(ZYGOTE), seconds or 0.0, what)

    @property
    def alive(self) -> bool:
        return not self._closed and self.proc.poll() is None

    def spawn(
        self,
        argv: list[str],
        env: dict[str, str],
        log: Path,
        *,
        cwd: Path | None = None,
        streams: dict[str, Path] | None = None,
    ) -> ForkedServe:
        """Fork ``python -m table_service.cli ARGV``; ``streams`` ("stdin", "stdout",
        "stderr": paths) stand in for ``/dev/null`` and the log."""
        with self._spawning:
            self._next += 1
            ident = self._next
            request = {
                "id": ident,
                "argv": argv,
                "env": env,
                "cwd": str(cwd or os.getcwd()),
                "log": str(log),
                **{name: str(path) for name, path in (streams or {}).items()},
            }
            os.write(self._requests, json.dumps(request).encode() + b"\n")
            self._wait(lambda: ident in self._pids, READY_SECONDS, "a fork")
            return ForkedServe(self, self._pids.pop(ident))

    def exit_status(self, pid: int) -> int | None:
        with self._changed:
            if pid not in self._exits and self._closed:
                return -signal.SIGKILL  # the zygote died: its children died with it
            return self._exits.get(pid)

    def wait_exit(self, pid: int, timeout: float | None) -> int:
        self._wait(lambda: pid in self._exits, timeout, f"serve {pid} to end")
        return self._exits[pid]

    def close(self) -> None:
        if self._requests < 0:
            return
        with suppress(OSError):
            os.close(self._requests)
        self._requests = -1
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.home, ignore_errors=True)


_zygote: ServeZygote | None = None
_zygote_lock = threading.Lock()
_forked_cpu = 0.0  # of zygotes closed


def forked_servers_cpu() -> float:
    """The CPU seconds of every server forked (and ended) in this process so far."""
    return _forked_cpu + (_zygote.cpu if _zygote is not None else 0.0)


def close_serve_zygote() -> None:
    """Stop this process's zygote (and with it any server it forked) and wait for it."""
    global _zygote, _forked_cpu
    with _zygote_lock:
        if _zygote is not None:
            _zygote.close()
            _forked_cpu += _zygote.cpu
            _zygote = None


def serve_zygote() -> ServeZygote | None:
    """This process's zygote (started on first use; None when turned off)."""
    global _zygote, _forked_cpu
    if os.environ.get("LIVETABLE_TEST_SERVE_FORK", "1") in ("0", "false", "no"):
        return None
    with _zygote_lock:
        if _zygote is None or not _zygote.alive:
            if _zygote is not None:
                _zygote.close()
                _forked_cpu += _zygote.cpu
            else:
                atexit.unregister(close_serve_zygote)
                atexit.register(close_serve_zygote)
            _zygote = _started_zygote()
        return _zygote


def _started_zygote() -> ServeZygote:
    """A new zygote, started by a thread that lives as long as it does: ``--pdeathsig``
    follows the thread that started a process, so a zygote a worker thread of a pool
    started would die with that thread, under the next test's requests."""
    started: list[ServeZygote | BaseException] = []
    ready = threading.Event()

    def keep() -> None:
        try:
            zygote = ServeZygote()
        except BaseException as exc:
            started.append(exc)
            ready.set()
            return
        started.append(zygote)
        ready.set()
        zygote.proc.wait()

    threading.Thread(target=keep, name="serve-zygote", daemon=True).start()
    ready.wait()
    if isinstance(started[0], BaseException):
        raise started[0]
    return started[0]


def run_cli(
    argv: list[str],
    *,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    input: str | bytes | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, -m, table_service.cli, *argv], capture_output=True,
    text=True)``, the command forked from this process's zygote (its imports made once: a
    one-shot command then costs its own work, not an interpreter's start). On a timeout the
    command is killed and ``subprocess.TimeoutExpired`` raised, as ``subprocess.run`` does.
    ``LIVETABLE_TEST_SERVE_FORK=0``: a fresh interpreter, as written above."""
    command = [sys.executable, "-m", "table_service.cli", *argv]
    environment = dict(os.environ if env is None else env)
    zygote = serve_zygote()
    if zygote is None:
        return subprocess.run(
            command,
            cwd=cwd,
            env=environment,
            input=input.decode() if isinstance(input, bytes) else input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    with tempfile.TemporaryDirectory(prefix="livetable-cli-") as tmp:
        streams = {name: Path(tmp, name) for name in ("stdout", "stderr")}
        if input is not None:
            streams["stdin"] = Path(tmp, "stdin")
            data = input.encode() if isinstance(input, str) else input
            streams["stdin"].write_bytes(data)
        proc = zygote.spawn(
            argv, environment, streams["stderr"], cwd=Path(cwd or os.getcwd()), streams=streams
        )
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise subprocess.TimeoutExpired(
                command,
                timeout or 0.0,
                output=streams["stdout"].read_text(errors="replace"),
                stderr=streams["stderr"].read_text(errors="replace"),
            ) from None
        out, err = (streams[n].read_text(errors="replace") for n in ("stdout", "stderr"))
    return subprocess.CompletedProcess(command, code, out, err)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(data_dir: Path, db_url: str, **settings: str) -> dict[str, str]:
    """The environment of a ``serve`` process on ``db_url`` with its log in ``data_dir``.

    SQLite runs on the embedded default (``<data_dir>/livetable.db``), as a first install
    does; ``settings`` are further ``LIVETABLE_*`` values (``LOG_LEVEL="INFO"``). The
    caller's own configuration files and NATS server are not inherited."""
    env = {**os.environ, "LIVETABLE_DATA_DIR": str(data_dir), "LIVETABLE_LOG_LEVEL": "WARNING"}
    for name in ("LIVETABLE_CONFIG", "LIVETABLE_TABLE_CONFIG", "LIVETABLE_NATS_URL"):
        env.pop(name, None)
    if db_url.startswith("sqlite"):
        env.pop("LIVETABLE_DATABASE_URL", None)
    else:
        env["LIVETABLE_DATABASE_URL"] = db_url
    env.update({f"LIVETABLE_{k.upper()}": v for k, v in settings.items()})
    return env


def open_runtime(env: dict[str, str]) -> Runtime:
    """The test's own view of the database a server with ``env`` writes (migrated)."""
    settings = Settings(
        data_dir=Path(env["LIVETABLE_DATA_DIR"]), database_url=env.get("LIVETABLE_DATABASE_URL")
    )
    return Runtime.from_settings(settings, upgrade=True)


def principals(runtime: Runtime, prefix: str) -> dict[str, str]:
    """A token per role the table routes need: operator, dealer, supervisor."""
    tokens = {}
    with runtime.sessions.begin() as session:
        for role in ("operator", "dealer", "supervisor"):
            tokens[role] = add_principal(
                session, runtime.store, f"{prefix}-{role}", role, actor=f"test:{prefix}"
            )
    return tokens


class Server:
    """One ``serve`` process on its own port (kept across restarts), SIGKILL-able."""

    def __init__(
        self, env: dict[str, str], tables: Path, log_file: Path, node: str | None = None
    ) -> None:
        self.port = free_port()
        self.env = {**env, "LIVETABLE_PORT": str(self.port)}
        if node is not None:
            self.env["LIVETABLE_NODE_ID"] = node
        self.tables = tables
        self.log_file = log_file
        self.node = node
        self.proc: subprocess.Popen[bytes] | ForkedServe | None = None
        self.starts = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait: bool = True) -> None:
        self.starts += 1
        zygote = serve_zygote()
        if zygote is not None:
            argv = ["serve", "--tables", str(self.tables)]
            self.proc = zygote.spawn(argv, self.env, self.log_file)
        else:
            with self.log_file.open("ab") as out:
                self.proc = subprocess.Popen(
                    [*_WITH_PARENT, *SERVE, "--tables", self.tables],
                    env=self.env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + READY_SECONDS
        while True:
            assert self.proc.poll() is None, f"server exited: {self.tail()}"
            try:
                if _PROBE.get(f"{self.base}/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"server not ready: {self.tail()}"
            time.sleep(0.03)

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self) -> None:
        """A clean stop (SIGINT), SIGKILL if it does not come within 20 s."""
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


# -- a table with a framed shoe on a pseudo-terminal ---------------------------------------


@dataclass
class ShoeTable:
    """One table served by a real process, its framed virtual shoe and the test's tokens."""

    server: Server
    shoe: VirtualShoe
    runtime: Runtime
    tokens: dict[str, str]


@contextmanager
def shoe_table(
    tmp_path: Path, db_url: str, table_id: str, table_toml: str, *, seed: int, prefix: str
) -> Iterator[ShoeTable]:
    """Serve ``table_id`` (``table_toml``: its settings, one per line) with a framed
    8-deck virtual shoe dealt by the test; the server is not started yet."""
    env = server_env(tmp_path / "data", db_url)
    runtime = open_runtime(env)
    shoe = VirtualShoe("framed", decks=8, seed=seed, cut_depth=52, link_path=str(tmp_path / "shoe"))
    shoe.start()
    tables = tmp_path / "tables.toml"
    tables.write_text(
        f'[[tables]]\ntable_id = "{table_id}"\n{table_toml.strip()}\n'
        f'shoe = {{ port = "{shoe.device_path}", dialect = "framed" }}\n'
    )
    server = Server(env, tables, tmp_path / "server.log")
    try:
        yield ShoeTable(server, shoe, runtime, principals(runtime, prefix))
    finally:
        server.stop()
        shoe.stop()
        runtime.close()


# -- the money after a crash ----------------------------------------------------------------


@dataclass
class Money:
    """What the database holds, read once, after :func:`check_money` found it consistent."""

    accounts: dict[str, int]
    bets: dict[str, BetRow]
    entries: list[LedgerEntry]
    credits: int = field(init=False)  # the operator's credits, in
    debits: int = field(init=False)  # and debits, out (negative)

    def __post_init__(self) -> None:
        self.credits = sum(e.amount for e in self.entries if e.kind == "credit")
        self.debits = sum(e.amount for e in self.entries if e.kind == "debit")


def check_money(runtime: Runtime, table_id: str | None = None) -> Money:
    """The invariants no crash may break, on the whole database.

    The audit chain verifies (hashes, Merkle roots, signatures); no balance is negative and
    each is the sum of its ledger entries; every bet has one stake entry of its stake, and a
    return entry of what it returned exactly when it is closed; an open bet's round is still
    in play and a closed bet's round ended; no bet and no round was closed twice in the log
    (of ``table_id``, or of every table)."""
    with runtime.sessions() as s:
        accounts = {a: n for a, n in s.execute(select(Account.account_id, Account.balance))}
        bets = {b.bet_id: b for b in s.scalars(select(BetRow))}
        entries = list(s.scalars(select(LedgerEntry)))
        rounds = {r.round_id: r for r in s.scalars(select(RoundRow))}
        events = EventStore.read(s, table_id=table_id)
        signer = runtime.signer
        # A killed process's newest events wait for the next checkpoint: the chain is checked.
        report = verify_database(s, {signer.key_id: signer.public_key}, allow_unsigned_tail=True)
    assert report.ok, report.problem
    assert all(balance >= 0 for balance in accounts.values()), accounts
    per_account: Counter[str] = Counter()
    kinds: Counter[tuple[str, str]] = Counter()
    for entry in entries:
        per_account[entry.account_id] += entry.amount
        if entry.bet_id is not None:
            kinds[(entry.bet_id, entry.kind)] += 1
            bet = bets[entry.bet_id]
            expected = -bet.stake if entry.kind == "stake" else bet.returned
            assert entry.amount == expected, (entry.kind, entry.amount, bet.bet_id)
    assert {a: n for a, n in accounts.items() if n} == {a: n for a, n in per_account.items() if n}
    for bet in bets.values():
        assert kinds[(bet.bet_id, "stake")] == 1, bet.bet_id
        closed = bet.status in ("settled", "refunded")
        assert kinds[(bet.bet_id, "return")] == (1 if closed else 0), bet.bet_id
        in_play = bet.status == "open"
        ended = ("betting", "dealing", "result") if in_play else ("settled", "voided")
        assert rounds[bet.round_id].phase in ended, (bet.bet_id, bet.status)
    stakes = sum(b.stake for b in bets.values())
    returns = sum(b.returned or 0 for b in bets.values() if b.status != "open")
    money = Money(accounts, bets, entries)
    assert sum(accounts.values()) == money.credits + money.debits - stakes + returns
    closings: Counter[str] = Counter()
    ends: Counter[str] = Counter()
    for event in events:
        if event.type in ("bets_settled", "bets_refunded"):
            for item in event.payload["results" if event.type == "bets_settled" else "refunds"]:
                closings[item["bet_id"]] += 1
        if event.type in ("round_settled", "round_voided"):
            ends[event.payload["round_id"]] += 1
    assert not [b for b, n in closings.items() if n > 1], "a bet closed twice"
    assert not [r for r, n in ends.items() if n > 1], "a round ended twice"
    return money


# -- a driver that kills the server at seeded points ---------------------------------------


@dataclass
class Acknowledged:
    """What the test knows for certain: what the server acknowledged."""

    bets: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> bet
    credits: dict[str, tuple[str, int]] = field(default_factory=dict)  # reference -> (acct, n)
    acked_credits: set[str] = field(default_factory=set)


class CrashDriver:
    """Drives one table through its API and its shoe, and SIGKILLs the server where the
    seeded ``plan`` says. A game's driver adds ``make_plan``, ``step`` and ``recover``."""

    def __init__(self, table: ShoeTable, table_id: str, seed: int) -> None:
        self.server = table.server
        self.shoe = table.shoe
        self.runtime = table.runtime
        self.table_id = table_id
        self.http = httpx.Client(base_url=f"{self.server.base}/api/v1", timeout=10)
        self.headers = {role: {"Authorization": f"Bearer {t}"} for role, t in table.tokens.items()}
        self.ledger = Acknowledged()
        self.rng = random.Random(seed)  # the plan first, then every choice: one seed, one run
        self.plan = self.make_plan()
        self.kills: list[str] = []
        self.pending_bets: list[dict[str, Any]] = []
        self.pending_credits: list[str] = []
        self.bets_done: set[str] = set()  # rounds whose bets were sent
        self.rounds_settled = 0

    @property
    def path(self) -> str:
        return f"/tables/{self.table_id}"

    # -- http ---------------------------------------------------------------------------
    def call(self, role: str, method: str, path: str, **kw: Any) -> httpx.Response:
        return self.http.request(method, path, headers=self.headers[role], **kw)

    def ok(self, role: str, method: str, path: str, **kw: Any) -> dict[str, Any]:
        response = self.call(role, method, path, **kw)
        assert response.status_code == 200, (path, response.status_code, response.text)
        answer: dict[str, Any] = response.json()
        return answer

    def table(self) -> dict[str, Any]:
        return self.ok("supervisor", "GET", self.path)

    def due(self, kind: str) -> bool:
        return bool(self.plan) and self.plan[0] == kind

    # -- killing ------------------------------------------------------------------------
    def make_plan(self) -> list[str]:
        """The seeded kinds of kill, in order (drawn from ``rng``)."""
        raise NotImplementedError

    def recover(self) -> None:
        """Restart the server and check what must hold after a kill."""
        raise NotImplementedError

    def step(self) -> None:
        """One move of the round: a card, a decision, a request, or a kill."""
        raise NotImplementedError

    def run(self, accounts: list[str], amount: int, max_steps: int) -> None:
        """Credit the accounts, then step until every kill of the plan happened and two
        rounds settled; the money is checked once more at the end."""
        for account in accounts:
            reference = f"initial-{account}"
            self.ledger.credits[reference] = (account, amount)
            self.credit(reference)
        steps = 0
        while self.plan or self.rounds_settled < 2:
            steps += 1
            assert steps < max_steps, f"stuck; plan left {self.plan}"
            self.step()
        self.check_ledger()

    def kill_now(self, kind: str) -> None:
        self.plan.pop(0)
        self.kills.append(kind)
        self.server.kill()
        self.recover()

    def kill_during(
        self, kind: str, request: Callable[[], httpx.Response]
    ) -> httpx.Response | None:
        """Send a request and SIGKILL the server while it may still be answering it; the
        answer if it was a 200 before the kill, else None."""
        box: dict[str, httpx.Response] = {}

        def send() -> None:
            with suppress(httpx.HTTPError):  # killed mid-answer: no answer
                box["response"] = request()

        thread = threading.Thread(target=send)
        thread.start()
        time.sleep(self.rng.uniform(0.0, 0.012))
        self.plan.pop(0)
        self.kills.append(kind)
        self.server.kill()
        thread.join(15)
        response = box.get("response")
        return response if response is not None and response.status_code == 200 else None

    # -- after a restart ------------------------------------------------------------------
    def settle_down(self) -> None:
        """Wait until the shoe has delivered what it held and the table is quiet."""
        deadline = time.monotonic() + WAIT_SECONDS
        last, stable_since = -1, time.monotonic()
        while time.monotonic() < deadline:
            seq = self.table()["last_seq"]
            busy = not (self.shoe.host_connected and self.shoe.idle())
            if seq != last or busy:
                last, stable_since = seq, time.monotonic()
            elif time.monotonic() - stable_since > 0.25:
                return
            time.sleep(0.02)
        raise AssertionError("table did not settle after restart")

    def check_ledger(self) -> Money:
        """:func:`check_money`, and every acknowledged bet and credit is there as sent."""
        money = check_money(self.runtime, self.table_id)
        by_key = {b.idempotency_key.split("|", 1)[1]: b for b in money.bets.values()}
        for key, bet in self.ledger.bets.items():
            row = by_key.get(key)
            assert row is not None, f"acknowledged bet {key} lost"
            assert (row.bet_id, row.account_id, row.bet_type, row.stake) == (
                bet["bet_id"],
                bet["account"],
                bet["type"],
                bet["stake"],
            )
        acked = sum(self.ledger.credits[r][1] for r in self.ledger.acked_credits)
        if not self.pending_credits:
            assert money.credits == acked
        return money

    # -- the operator and the shoe --------------------------------------------------------
    def credit(self, reference: str) -> None:
        account, amount = self.ledger.credits[reference]
        self.ok(
            "operator",
            "POST",
            f"/accounts/{account}/credit",
            json={"amount": amount, "reference": reference},
        )
        self.ledger.acked_credits.add(reference)

    def bets_killed_mid_request(self, bets: list[dict[str, Any]]) -> None:
        """Send a round's bets and SIGKILL the server while it answers; ``recover`` then
        retries them with the same keys (unless the answer came before the kill)."""
        self.pending_bets = bets
        response = self.kill_during(
            "bets_mid",
            lambda: self.call("operator", "POST", f"{self.path}/bets", json={"bets": bets}),
        )
        if response is not None:
            self.record(bets, response.json())
            self.pending_bets = []
        self.recover()

    def record(self, bets: list[dict[str, Any]], answer: dict[str, Any]) -> None:
        by_key = {b["key"]: b for b in bets}
        for item in answer["results"]:
            if item["status"] in ("placed", "duplicate"):
                bet = {**by_key[item["key"]], "bet_id": item["bet_id"]}
                known = self.ledger.bets.get(item["key"])
                assert known is None or known["bet_id"] == item["bet_id"], (known, item)
                self.ledger.bets[item["key"]] = bet

    def deal(self) -> str:
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                card = self.shoe.deal()
            except ShoeLockedError:
                assert time.monotonic() < deadline, "shoe stayed locked"
                time.sleep(0.01)
                continue
            assert card not in (None, "CUT"), "the test shoe ran out"
            return str(card)

    def wait_seen(self, before: int) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            table = self.table()
            if table["shoe"] is not None and table["shoe"]["cards_seen"] > before:
                return table
            assert time.monotonic() < deadline, f"card not recorded: {table}"
            time.sleep(0.005)
