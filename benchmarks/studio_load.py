"""Load of a whole studio: T tables on P ``serve`` processes, one SIGKILLed halfway.

Run: ``python benchmarks/studio_load.py [--db URL] [--nats URL] [--tables T]
[--processes P] [--seconds S] [--pace human|max]``. A fresh database (a scratch schema on
PostgreSQL, or SQLite in a temporary folder), T framed virtual shoes on pseudo-terminals
read by the real serial reader, P real ``livetable serve`` processes sharing the tables
out through their leases. Per table a dealer bot runs rounds (betting, bets, close, cards
from the shoe), operator bots place a batch of bets every round, and
public WebSocket subscribers (hundreds in all) follow the tables' streams, reconnecting
where the directory says a table runs now; with ``--nats``, JetStream consumers follow
the tables' subjects. A subscriber reconnects as real clients do: after a wait that doubles
from 0.25 s up to 5 s, drawn at random in its upper half (jitter), and back to the start
once a connection delivered an event (``--reconnect fixed``: every 0.2 s, as the bots did,
for comparison: when a process dies its ~100 subscribers then retried in step and each
retry asked a survivor where its table runs, 100-230 requests a second, while the
survivor's own tables dealt). Each subscriber keeps a record of its connections (opened
when, on which process, resumed after which seq, the seqs it got, how it ended): a lost
event (a gap below the last seq it holds) is printed with the connections around it.
Halfway, the process running the most tables is SIGKILLed and its tables are taken over
by the others.

A dealer bot plays from its table's console, as a dealer does: it follows the table's
staff stream with the dealer's token (the dealer console's stream) and folds each event
into the table's state with the service's own fold, so phase changes, cards, settlement,
incidents and the shoe's events drive it. It reads the table (``GET /tables/{t}``) only
when it must: at the start, once its console has reconnected (a takeover), after an
incident, when a card it dealt has not come back within 2 s (read again after a second;
if the card is still missing, the reader's report was lost with a killed process and the
supervisor keys the card in), and when the stream has been quiet for 5 s while it waited;
each command's answer carries the table as the command left it, and the bot goes on from
whichever of that and its fold is newer. The bots used to read the table before every
move: py-spy found ~45 % of the serve processes' event loop answering those polls. The
dealer console itself (``dealer.js``) reads its view again 60 ms after each burst of its
stream's frames (the supervisor's console and the overlay do likewise):
``--console-views`` adds those reads, about one a card, a betting change or a settlement.

How fast the dealers deal (``--pace``):

- ``human`` (the default): a brisk live dealer. A card every 0.5-1.0 s (uniform: a live
  baccarat or blackjack dealer deals about one card a second at best), the burn's cards
  every 0.3-0.6 s (slid out unshown), the betting window held open 1.8-2.4 s with each
  operator's batch of bets arriving at a random moment in it (the dealer closes once the
  window has passed and every batch is answered; 10-15 s in production, shortened so that
  a minute holds enough rounds), and 1-2 s from a round's settlement to the next round's
  betting (the layout cleared). Each table starts 0-4 s after the run does, so the tables
  are out of phase from the start and drift further apart with every draw. A round takes
  7-8 s: the default minute deals some 270 cards into ~55 rounds at 8 tables (the issue's
  studio: 8 tables on 2 processes), each card received by ~25 subscribers.
- ``max``: each dealer's next move as soon as the service has answered its last, a
  closed loop at saturation (the old bots): the view for throughput and for what the
  service does when it is the bottleneck. A faster service is then only a busier one: the
  latency it shows is queueing, which is not what a studio looks like.

The public subscribers run in ``--subscriber-procs`` processes of their own (the dealer
bots, shoes and one console stream per table stay in the benchmark's process), and ask
for the service's timing on each frame (``timing=1``: the host's monotonic clock as the
service hands the frame to the socket, and as it saw the event's commit), so a card's
latency is split where it is spent: scan → commit and commit → send inside the service,
send → receive at the subscriber. The load generator's CPU time (the benchmark process and
the subscribers' processes) and the servers' are printed beside it.

It prints figures as it goes and, last, one JSON line: ``tables``, ``processes``, ``pace``,
``rounds``, ``cards`` (dealt into rounds by the bots; ``cards_timed``: of them, received
live by a subscriber), ``dealer_reads`` (the bots' reads of their tables, by why), ``cards_keyed``
(cards the supervisor keyed in: the reader's report lost with the killed process),
``bets``, ``events``, ``subscribers``, ``lost_events``, ``duplicate_events``
(each subscriber's events against the log: lost is a gap below the last event it holds),
``refused_by_code`` (the close codes that ended subscribers' connections, 4429 the
per-address cap), ``refused_at_end`` (subscribers whose last connection was refused),
``directory_requests`` and ``directory_requests_peak_per_s`` (the subscribers' questions
of where a table runs, and the most in one second around the takeover),
``behind_at_end`` (the tail a subscriber had not reached when the drain ended: it waits
while messages keep arriving, up to five minutes), ``ledger_mismatches`` (balances against the
ledger and against the log), ``scan_to_subscriber_p50_ms`` / ``_p99_ms`` (shoe deal to a
subscriber holding the card), ``scan_to_send_p50_ms`` / ``_p99_ms`` (shoe deal to the
service sending it: the service's share), ``commit_to_send_p50_ms`` / ``_p99_ms``,
``send_to_receive_p50_ms`` / ``_p99_ms`` (the subscriber's side) — these of live frames
only: a card a subscriber got by replay, catching up after the kill, counts end to end
only (``cards_replayed``); ``scan_to_wire``, ``wire_to_read``, ``read_to_commit``,
``read_to_send`` and ``wire_to_send`` (p50/p99) split the service's share further: the
scan is the dealer bot's ``deal()`` on the simulated shoe, the wire the shoe's thread (in
this process) writing the frame's last byte on the pseudo-terminal, the read the
service's reader thread reading it (``t.read`` of the frame). A card dealt at a table of
the killed process before its takeover ended waited for the takeover: it counts apart
(``cards_in_takeover``, ``takeover_scan_to_subscriber_p50_ms`` / ``_p99_ms``), not in
the figures above; a card dealt meanwhile at a table the kill did not touch counts in them
and apart too (``survivor_in_takeover_scan_to_send_p50_ms`` / ``_p99_ms``: the survivors'
own tables while the others' subscribers look for where their tables run now),
``commit_p50_ms`` (a one-row durable commit on the same database, measured in the same
run, before and after the load, back to back), ``run_commit_p50_ms`` / ``_p99_ms`` (the
same commit every 200 ms from a process of its own while the studio runs: the machine's
own tail, for the p99s above), ``paced_commit_p50_ms`` (that commit every 200 ms on the
idle machine, before the run: a process and a server backend woken from a sleep are
slower than ones kept busy), ``run_commit_cpu_wait_p50_ms`` / ``_p99_ms`` and
``paced_commit_cpu_wait_p50_ms`` (of each such commit, the time its server backend was
runnable but waited for a CPU, from ``/proc/<pid>/schedstat`` when PostgreSQL runs on this
host, else null: on a two-core host a backend woken by its WAL flush's completion waits
for whatever runs on the CPU it lands on, which is how the studio's load slows the
commit), ``takeover_seconds`` (kill to every table running again) and the CPU
seconds of the load generator and the servers. The default run is sized for a 2-core
machine (about a minute, 8 tables at the human pace); a larger one: ``--tables 24
--processes 4 --subscribers 1000 --seconds 300`` on PostgreSQL. Goal of the default run:
the service's scan → send p50 at most 3x a durable commit's p50, and its p99 at most 15x.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import multiprocessing as mp
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
from scratch import (
    drop_stale_streams,
    one_row_commits,
    paced_commits,
    sampled_commits,
    scratch_runtime,
)
from serving import cpu_seconds
from sqlalchemy import func, select

from audit.store import EventStore
from hardware_sim.virtual_shoe import ShoeLockedError, VirtualShoe
from table_service.logs import configure_logging
from table_service.models import Account, BetRow, LedgerEntry
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table.state import TableState
from table_service.table.state import apply as apply_table_event
from table_service.table.stream import public_view

BET_TYPES = ["player", "banker", "tie", "player_pair", "banker_pair"]


def say(text: str) -> None:
    print(text, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _ms(values: list[float], q: float) -> float | None:
    """The ``q`` quantile of ``values`` (seconds) in ms, rounded; None for none."""
    return round(percentile(values, q) * 1000, 2) if values else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def commit_sampler(db_url: str, pipe: Any, every: float = 0.2) -> None:
    """In a process of its own, a one-row durable commit every ``every`` seconds until told
    to stop: the machine's own commit, p50 and tail, while the studio runs. On a shared
    host a plain commit's p99 is itself many times its p50; this says how many. Five
    commits a second, fewer than the studio's own (about eight): its fsyncs are load too.
    With the server on this host, each commit's share of its backend's wait for a CPU too
    (:func:`scratch.cpu_wait`): what the studio's load adds to the commit by keeping the
    CPUs busy when the backend's WAL flush completes."""
    from sqlalchemy import create_engine

    engine = create_engine(db_url)

    def more(done: int) -> bool:
        if done == 0:
            pipe.send("ready")  # (the table made: sampling from now until told to stop)
        return not pipe.poll(every)

    try:
        pipe.send(sampled_commits(engine, "bench_run_commit", more))
    finally:
        engine.dispose()


PACED_COMMITS = 40  # the sampler's commit on the idle machine, before the run (8 s)
"""``--paced-commits``'s default: 40 commits 200 ms apart give the p50 a run is compared
with. A run that only checks its correctness (tests/studio) takes a few: each costs 200 ms
of the run's wall time and almost no CPU."""
MEMORY_EVERY = 10.0  # seconds between two samples of each serve process's memory
SERVES: list[Serve] = []  # every serve process of the run, for the memory report


def rss_mb(pid: int) -> float | None:
    """A process's resident memory (VmRSS), in MiB; None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _slope(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MiB) samples, MiB a second (0 for fewer than 3)."""
    if len(samples) < 3:
        return 0.0
    mean_t = statistics.fmean(t for t, _ in samples)
    mean_m = statistics.fmean(m for _, m in samples)
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    if var == 0:
        return 0.0
    return sum((t - mean_t) * (m - mean_m) for t, m in samples) / var


def _die_with_parent() -> None:
    """In a serve child: SIGTERM when the benchmark dies, even by SIGKILL (Linux), so no
    orphan keeps a killed run's tables, schema and stream busy."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PDEATHSIG


ONE_TRIP_LINE = re.compile(r'livetable_one_trip_commits_total\{outcome="(\w+)"\} (\S+)')


class Serve:
    """One ``livetable serve`` of the studio, its metrics on a port of its own and its
    resident memory sampled every :data:`MEMORY_EVERY` seconds while it runs."""

    def __init__(self, env: dict[str, str], tables: Path, log: Path, node: str) -> None:
        self.port = free_port()
        self.metrics_port = free_port()
        self.node = node
        self.env = {
            **env,
            "LIVETABLE_PORT": str(self.port),
            "LIVETABLE_NODE_ID": node,
            "LIVETABLE_METRICS_ADDRESS": f"127.0.0.1:{self.metrics_port}",
        }
        self.tables = tables
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.memory: list[tuple[float, float]] = []  # (seconds since start, MiB)
        SERVES.append(self)

    def _sample(self, proc: subprocess.Popen[bytes]) -> None:
        started = time.monotonic()
        while proc.poll() is None:
            found = rss_mb(proc.pid)
            if found is not None:
                self.memory.append((time.monotonic() - started, found))
            time.sleep(MEMORY_EVERY)

    def memory_report(self, warmup: float) -> dict[str, float | list[float]] | None:
        """Memory at the start (the first sample after ``warmup`` s: tables loaded,
        subscribers connected), at the end, its peak, and the growth over the second half
        of the run in MiB an hour (a leak shows as a steady slope)."""
        if not self.memory:
            return None
        # a process that did not live past the warm-up (the one killed): its second half
        lived = self.memory[-1][0]
        after = [(t, m) for t, m in self.memory if t >= min(warmup, lived / 2)]
        half = [(t, m) for t, m in after if t >= (after[0][0] + after[-1][0]) / 2]
        last10 = [(t, m) for t, m in after if t >= after[-1][0] - 600]
        per_minute: list[float] = []
        for t, m in after:
            if not per_minute or t >= after[0][0] + 60 * len(per_minute):
                per_minute.append(round(m, 1))
        return {
            "start_mb": round(after[0][1], 1),
            "end_mb": round(after[-1][1], 1),
            "peak_mb": round(max(m for _, m in after), 1),
            "second_half_mb_per_hour": round(_slope(half) * 3600, 1),
            "last_10_min_mb_per_hour": round(_slope(last10) * 3600, 1),
            "minutes": round((after[-1][0] - after[0][0]) / 60, 1),
            "per_minute_mb": per_minute,
        }

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def one_trips(self, http: httpx.AsyncClient) -> Counter[str]:
        """Its event store's one-trip commits by outcome so far (committed, head_moved,
        refused), from its metrics: how often a command found the log's head moved by the
        other process and linked its events again (a second round trip)."""
        found: Counter[str] = Counter()
        with contextlib.suppress(httpx.HTTPError):
            answer = await http.get(f"http://127.0.0.1:{self.metrics_port}/metrics")
            for line in answer.text.splitlines():
                match = ONE_TRIP_LINE.match(line)
                if match:
                    found[match[1]] += int(float(match[2]))
        return found

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "table_service.cli", "serve", "--tables", str(self.tables)],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        threading.Thread(target=self._sample, args=(self.proc,), daemon=True).start()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


class Studio:
    """The bench's view of the studio: processes, directory, HTTP with 421 and retries."""

    def __init__(self, servers: list[Serve], tokens: dict[str, str]) -> None:
        self.servers = servers
        self.headers = {r: {"Authorization": f"Bearer {t}"} for r, t in tokens.items()}
        self.http = httpx.AsyncClient(timeout=15, limits=httpx.Limits(max_connections=200))
        self.owner: dict[str, str] = {}

    def live_bases(self) -> list[str]:
        return [s.base for s in self.servers if s.alive()]

    async def directory(self) -> list[dict[str, Any]]:
        for base in self.live_bases():
            with contextlib.suppress(httpx.HTTPError):
                answer = await self.http.get(
                    f"{base}/api/v1/studio/tables", headers=self.headers["supervisor"]
                )
                if answer.status_code == 200:
                    tables: list[dict[str, Any]] = answer.json()["tables"]
                    for t in tables:
                        if t["owner_url"]:
                            self.owner[t["table_id"]] = t["owner_url"]
                    return tables
        return []

    async def base_for(self, table_id: str) -> str:
        if table_id not in self.owner:
            await self.directory()
        return self.owner.get(table_id) or self.live_bases()[0]

    async def call(
        self, role: str, method: str, table_id: str | None, path: str, **kw: Any
    ) -> httpx.Response:
        deadline = time.monotonic() + 60
        url = None
        while True:
            if url is None:
                base = await self.base_for(table_id) if table_id else self.live_bases()[0]
                url = f"{base}/api/v1{path}"
            try:
                answer = await self.http.request(method, url, headers=self.headers[role], **kw)
            except httpx.HTTPError:
                answer = None
            if answer is not None and answer.status_code == 421:
                url = answer.headers["location"]
                if table_id:
                    self.owner[table_id] = answer.json()["owner_url"]
                continue
            if answer is not None and answer.status_code not in (502, 503):
                return answer
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path}: no answer for a minute")
            self.owner.pop(table_id or "", None)
            url = None
            await asyncio.sleep(0.2)


RECONNECT_FIRST = 0.25  # seconds: a client's first wait before it reconnects
RECONNECT_MAX = 5.0  # its longest (the consoles' own cap, common.js)
FIXED_RETRY = 0.2  # --reconnect fixed: the old bots, every 0.2 s without end


class Backoff:
    """How a real client waits before it reconnects: exponential (``first``, doubling up
    to ``cap``) with jitter (a uniform draw in the upper half of each wait), back to the
    start once a connection delivered something. Without it, a process's ~100 subscribers
    whose process died retried every 0.2 s in step, and each retry asked a survivor where
    its table runs. ``fixed`` is the old bots' behaviour, for comparison."""

    def __init__(self, fixed: bool = False, seed: int | None = None) -> None:
        self.fixed = fixed
        self.attempt = 0
        self.rng = random.Random(seed)

    def reset(self) -> None:
        self.attempt = 0

    def next(self) -> float:
        if self.fixed:
            return FIXED_RETRY
        ceiling = min(RECONNECT_MAX, RECONNECT_FIRST * 2**self.attempt)
        self.attempt = min(self.attempt + 1, 16)
        return self.rng.uniform(ceiling / 2, ceiling)


class Subscriber:
    """A public WebSocket client of one table: every event it holds, by seq, and for each
    card the service's send and commit times beside its own receive time. Each connection
    is recorded (when, to which process, resumed after which seq, the seqs it got, how it
    ended) so that a gap can be told apart: inside one connection, or between two."""

    def __init__(
        self,
        studio: Any,
        table_id: str,
        *,
        timing: bool = False,
        name: str = "",
        fixed_retry: bool = False,
        token: str | None = None,
    ) -> None:
        self.studio = studio  # anything with base_for(table_id) and an owner cache
        self.table_id = table_id
        self.timing = timing
        # A staff token: the staff stream (a dealer console's: every event, as logged),
        # not the public one.
        self.token = token
        self.name = name or table_id
        self.seqs: list[int] = []
        # (round_id, index, received, sent, committed, read) per card, monotonic seconds
        self.samples: list[tuple[str, int, float, float, float | None, float | None]] = []
        self.reconnects = 0
        self.refused: Counter[int] = Counter()  # close codes that ended a connection
        # per connection: [opened, base, after_seq, first seq, last seq, frames, ended, why]
        self.connections: list[list[Any]] = []
        self.backoff = Backoff(fixed_retry, seed=hash(self.name) & 0xFFFF)
        self.listeners: list[asyncio.Queue[dict[str, Any]]] = []

    async def run(self, stop: asyncio.Event) -> None:
        from websockets.asyncio.client import connect

        query = "&timing=1" if self.timing else ""
        while not stop.is_set():
            base = await self.studio.base_for(self.table_id)
            after = self.seqs[-1] if self.seqs else 0
            scope = "" if self.token else "/public"
            url = f"{base.replace('http', 'ws', 1)}/api/v1{scope}/tables/{self.table_id}/stream"
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
            record: list[Any] = [time.monotonic(), base, after, None, None, 0, None, ""]
            self.connections.append(record)
            try:
                async with connect(
                    f"{url}?after_seq={after}{query}", open_timeout=10, additional_headers=headers
                ) as ws:
                    while not stop.is_set():
                        try:
                            text = await asyncio.wait_for(ws.recv(), 0.5)
                        except TimeoutError:
                            continue
                        now = time.monotonic()
                        item = json.loads(text)
                        self.seqs.append(item["seq"])
                        if record[3] is None:
                            record[3] = item["seq"]
                            self.backoff.reset()
                        record[4] = item["seq"]
                        record[5] += 1
                        timing = item.get("t")
                        if item["type"] == "card_dealt" and timing is not None:
                            data = item["data"]
                            sample = (data["round_id"], data["index"], now, timing["send"])
                            self.samples.append((*sample, timing.get("commit"), timing.get("read")))
                        for queue in self.listeners:
                            queue.put_nowait(item)
                record[6], record[7] = time.monotonic(), "stopped"
            except Exception as exc:
                record[6] = time.monotonic()
                if os.environ.get("STUDIO_LOAD_DEBUG"):
                    say(f"subscriber {self.table_id}: {exc!r}")
                code = getattr(getattr(exc, "rcvd", None), "code", None)
                record[7] = f"close {code}" if code is not None else type(exc).__name__
                if code is not None:
                    self.refused[code] += 1
                if code in (4421, 4503, 4404) or isinstance(exc, OSError):
                    self.studio.owner.pop(self.table_id, None)  # ask where it runs now
                self.reconnects += 1
                await asyncio.sleep(self.backoff.next())


class Directory:
    """Where each table runs, from any live process's studio directory (in a subscriber
    process, which knows the processes' addresses only)."""

    def __init__(self, bases: list[str], token: str) -> None:
        self.bases = bases
        self.headers = {"Authorization": f"Bearer {token}"}
        self.owner: dict[str, str] = {}
        self.http = httpx.AsyncClient(timeout=5)
        self.asks: list[float] = []  # when each directory request a process answered was sent

    async def base_for(self, table_id: str) -> str:
        if table_id not in self.owner:
            for base in self.bases:
                with contextlib.suppress(httpx.HTTPError):
                    sent = time.monotonic()
                    answer = await self.http.get(
                        f"{base}/api/v1/studio/tables", headers=self.headers
                    )
                    self.asks.append(sent)
                    if answer.status_code == 200:
                        for t in answer.json()["tables"]:
                            if t["owner_url"]:
                                self.owner[t["table_id"]] = t["owner_url"]
                        break
        return self.owner.get(table_id) or self.bases[0]


DRAIN_STALL = 30.0  # seconds without a new message before the drain gives up
DRAIN_MAX = 300.0


async def drain(received: Callable[[], int], still_behind: Callable[[], bool]) -> None:
    """Wait for the subscribers to reach the log's head: as long as messages keep
    arriving (an overloaded machine can leave a crowd a minute behind, which is late, not
    lost), up to :data:`DRAIN_MAX`; :data:`DRAIN_STALL` seconds with none ends it."""
    start = last_move = time.monotonic()
    seen = received()
    while still_behind():
        now = time.monotonic()
        if now - last_move > DRAIN_STALL or now - start > DRAIN_MAX:
            return
        await asyncio.sleep(0.2)
        if received() != seen:
            seen, last_move = received(), time.monotonic()


def missing(wanted: Iterable[int], seqs: list[int]) -> tuple[int, int]:
    """Events a subscriber did not get: (lost, behind). Lost: a gap below the last event
    it holds (a stream promises none); behind: the tail it had not reached when the drain
    ended (the crowd still catching up on an overloaded machine)."""
    held = set(seqs)
    last = max(held, default=0)
    absent = [seq for seq in wanted if seq not in held]
    lost = sum(1 for seq in absent if seq < last)
    return lost, len(absent) - lost


def gaps_below_last(wanted: Iterable[int], seqs: list[int]) -> list[int]:
    """The seqs :func:`missing` counts as lost: absent, below the last one held."""
    held = set(seqs)
    last = max(held, default=0)
    return [seq for seq in wanted if seq not in held and seq < last]


def describe_gap(
    who: str,
    table_id: str,
    gone: list[int],
    wanted: list[int],
    connections: list[list[Any]],
    node_of: dict[str, str],
    killed_at: float,
    taken_at: float | None,
) -> list[str]:
    """Lines saying, for a subscriber's lost seqs, what it was doing: the connection that
    was open across the gap (the service skipped them while it streamed), or the one before
    and the one after it (the resume: after which seq, on which process), each with its
    time against the kill and the end of the takeover."""

    def when(t: float | None) -> str:
        if t is None:
            return "?"
        if not killed_at:
            return f"t={t:.3f}"
        rel = t - killed_at
        phase = "before the kill" if rel < 0 else "in the takeover"
        if taken_at is not None and t >= taken_at:
            phase = "after the takeover"
        return f"kill{rel:+.3f}s ({phase})"

    def show(c: list[Any]) -> str:
        opened, base, after, first, last, frames, ended, why = c
        return (
            f"opened {when(opened)} on {node_of.get(base, base)} after_seq={after}, got "
            f"{frames} frames {first}..{last}, ended {when(ended)} ({why or 'open'})"
        )

    lines = [f"LOST {who} table {table_id}: seqs {gone}"]
    order = {seq: i for i, seq in enumerate(wanted)}
    for seq in gone:
        inside = [c for c in connections if c[3] is not None and c[3] <= seq <= c[4]]
        if inside:
            lines.append(f"  {seq}: inside one connection: {show(inside[0])}")
            continue
        before = [c for c in connections if c[4] is not None and c[4] < seq]
        after = [c for c in connections if c[3] is not None and c[3] > seq]
        nearby = wanted[max(0, order[seq] - 2) : order[seq] + 3]
        lines.append(f"  {seq}: between connections (public seqs around it {nearby})")
        if before:
            lines.append(f"    before: {show(before[-1])}")
        if after:
            i = connections.index(after[0])
            for c in connections[connections.index(before[-1]) + 1 if before else 0 : i + 1]:
                lines.append(f"    then:   {show(c)}")
    return lines


def subscriber_process(
    bases: list[str],
    token: str,
    tables: list[str],
    pipe: Any,
    prefix: str = "s",
    fixed_retry: bool = False,
    nice: int = 0,
) -> None:
    """Public subscribers (one per entry of ``tables``) in a process of their own; told
    when to drain and stop, they send back what each held and its CPU time. ``nice``:
    the process's niceness (``--subscriber-nice``)."""
    if nice:
        os.nice(nice)

    async def main() -> tuple[list[dict[str, Any]], list[float]]:
        directory = Directory(bases, token)
        stop = asyncio.Event()
        subscribers = [
            Subscriber(directory, t, timing=True, name=f"{prefix}{n}", fixed_retry=fixed_retry)
            for n, t in enumerate(tables)
        ]
        tasks = [asyncio.create_task(s.run(stop)) for s in subscribers]
        targets: dict[str, int] = await asyncio.to_thread(pipe.recv)  # the log's last seqs
        await drain(
            lambda: sum(len(s.seqs) for s in subscribers),
            lambda: any((s.seqs[-1] if s.seqs else 0) < targets[s.table_id] for s in subscribers),
        )
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await directory.http.aclose()
        return [
            {
                "name": s.name,
                "table": s.table_id,
                "seqs": s.seqs,
                "samples": s.samples,
                "reconnects": s.reconnects,
                "refused": dict(s.refused),
                "connections": s.connections,
            }
            for s in subscribers
        ], directory.asks

    gc.freeze()  # what the imports made: not walked by the collector's full passes
    cpu0 = time.process_time()
    pipe.send("ready")
    held, asks = asyncio.run(main())
    pipe.send((held, time.process_time() - cpu0, asks))


@dataclass(frozen=True)
class Pace:
    """How fast a table's dealer works: each figure a uniform draw, in seconds, between
    its two bounds (``--pace``)."""

    name: str
    start: tuple[float, float] = (0.0, 0.0)  # the table's first move after the run starts
    burn: tuple[float, float] = (0.0, 0.0)  # between two cards of the burn
    window: tuple[float, float] = (0.0, 0.0)  # betting open -> the dealer closes it
    card: tuple[float, float] = (0.0, 0.0)  # betting closed or a card -> the next card
    between: tuple[float, float] = (0.0, 0.0)  # a round settled -> the next one's betting

    def draw(self, rng: random.Random, span: tuple[float, float]) -> float:
        return rng.uniform(*span) if span[1] > 0 else 0.0


PACES: dict[str, Pace] = {
    # A brisk live dealer (see the module's docstring): a card every 0.5-1.0 s, the burn's
    # cards slid out faster, a 2 s betting window, 1-2 s to clear the layout, and tables
    # out of phase from the start (and further apart with every draw).
    "human": Pace(
        "human",
        start=(0.0, 4.0),
        burn=(0.3, 0.6),
        window=(1.8, 2.4),
        card=(0.5, 1.0),
        between=(1.0, 2.0),
    ),
    # As fast as the service allows: a closed loop at saturation (the bots' old pace).
    "max": Pace("max"),
}
QUIET = 5.0  # seconds without a frame on a console while waiting: the bot reads the table
CARD_EVENTS = frozenset(
    {
        "card_dealt",
        "card_burnt",
        "card_set_aside",
        "cut_card_drawn",
        "incident_raised",
        "round_settled",
    }
)


class Dealer:
    """Runs a table's rounds as a dealer at the console: shoe, burn, betting, bets, close,
    cards. It follows the table on its console's staff stream, folding each event into the
    table's state with the service's own fold (:func:`table_service.table.state.apply`),
    and reads the table (``GET /tables/{t}``) only when it must: at the start, once its
    console has reconnected (a takeover), after an incident, when a card it dealt did not
    come back (the supervisor may have to key it in), and when the stream has been quiet
    for :data:`QUIET` seconds while it waited. Each command's answer carries the table as
    the command left it: the bot goes on from whichever of that and the fold is newer."""

    def __init__(
        self,
        studio: Studio,
        table_id: str,
        shoe: VirtualShoe,
        operators: list[str],
        bets: int,
        pace: Pace | None = None,
        seed: int = 0,
    ) -> None:
        self.studio = studio
        self.table_id = table_id
        self.shoe = shoe
        self.operators = operators
        self.bets_per_round = bets
        self.pace = pace or PACES["max"]
        self.rng = random.Random(seed)
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.console: Subscriber | None = None  # the stream feeding ``events``
        self.table = TableState(table_id=table_id)  # folded from the console's stream
        self.answered: dict[str, Any] | None = None  # the table as last read or answered
        self.reads: Counter[str] = Counter()  # GET /tables/{t}, by why
        self.connections_seen = 0
        self.incidents_seen = 0
        self.stale: str | None = "start"  # why the table must be read before the next move
        self.last_move = 0.0  # when the last card went out (or betting closed)
        self.settled_at = 0.0  # when the fold saw the last round end
        self.dealt: dict[tuple[str, int], float] = {}
        # when the shoe's thread wrote the card's frame on the link (its last byte)
        self.wired: dict[tuple[str, int], float] = {}
        self.rounds = 0
        self.keyed = 0  # cards the supervisor keyed in (the reader's report lost)
        self.views = 0  # --console-views: the console's reads of its view
        self.bet_rounds: set[str] = set()
        self.round_cards: dict[str, list[str]] = defaultdict(list)
        self.errors: Counter[str] = Counter()

    # -- what the console knows ------------------------------------------------------------
    def fold(self, item: dict[str, Any]) -> None:
        seq = item["seq"]
        if seq <= self.table.last_seq:
            return
        try:
            self.table = apply_table_event(self.table, item["type"], item["payload"], seq)
        except Exception as exc:  # the fold is the service's: a bug to see, not to hide
            self.errors[f"fold:{item['type']}:{type(exc).__name__}"] += 1
            self.table = replace(self.table, last_seq=seq)
            self.stale = "fold"
            return
        if item["type"] in ("round_settled", "round_voided"):
            self.settled_at = time.monotonic()

    def catch_up(self) -> list[dict[str, Any]]:
        """Fold what the stream has brought so far, without waiting."""
        items = []
        while not self.events.empty():
            item = self.events.get_nowait()
            self.fold(item)
            items.append(item)
        return items

    async def follow(self, seconds: float) -> list[dict[str, Any]]:
        """Wait up to ``seconds`` for the stream's next frames and fold them."""
        try:
            first = await asyncio.wait_for(self.events.get(), seconds)
        except TimeoutError:
            return []
        self.fold(first)
        return [first, *self.catch_up()]

    def head(self) -> int:
        answered = self.answered["last_seq"] if self.answered is not None else 0
        return max(self.table.last_seq, answered)

    def view(self) -> dict[str, Any]:
        """The table as the console knows it: the fold, or a newer read or answer."""
        if self.answered is not None and self.answered["last_seq"] > self.table.last_seq:
            return self.answered
        return self.table.public_summary()

    async def state(self, why: str) -> dict[str, Any]:
        self.reads[why] += 1
        answer = await self.studio.call(
            "supervisor", "GET", self.table_id, f"/tables/{self.table_id}"
        )
        answer.raise_for_status()
        table: dict[str, Any] = answer.json()
        self.answered = table
        return table

    def must_read(self) -> str | None:
        if self.stale is not None:
            return self.stale
        if self.console is not None and len(self.console.connections) > self.connections_seen:
            self.connections_seen = len(self.console.connections)
            if self.connections_seen > 1:
                return "reconnect"
        if self.table.incidents_raised > self.incidents_seen:
            self.incidents_seen = self.table.incidents_raised
            return "incident"
        return None

    # -- the dealer's moves ----------------------------------------------------------------
    async def post(
        self, role: str, path: str, body: dict[str, Any] | None = None
    ) -> httpx.Response:
        answer = await self.studio.call(
            role, "POST", self.table_id, f"/tables/{self.table_id}{path}", json=body
        )
        if answer.status_code != 200:
            self.errors[f"{path}:{answer.status_code}:{answer.json().get('error')}"] += 1
        else:
            table = answer.json().get("table")
            newer = isinstance(table, dict) and table.get("last_seq") is not None
            if newer and (self.answered is None or table["last_seq"] >= self.head()):
                self.answered = table
        return answer

    async def until(self, when: float) -> None:
        """Wait until ``when`` (monotonic), folding the stream meanwhile."""
        while (left := when - time.monotonic()) > 0:
            await self.follow(left)

    async def deal_one(self, round_id: str | None, index: int | None) -> None:
        head = self.head()
        deadline = time.monotonic() + 5
        while True:
            before = time.monotonic()  # the shoe's thread may write it before deal() returns
            try:
                card = self.shoe.deal()
                break
            except ShoeLockedError:
                if time.monotonic() > deadline:
                    return
                await asyncio.sleep(0.005)
        if card is None:
            return
        now = self.last_move = time.monotonic()
        if round_id is not None and index is not None and card != "CUT":
            self.dealt[(round_id, index)] = now
            self.round_cards[round_id].append(card)
        await self.wait_for_card(head, 2.0)
        if round_id is not None and index is not None and card != "CUT":
            # The frame's write by the simulated shoe's thread (in this process, so its
            # delay is the load generator's, not the service's).
            for sent in list(self.shoe.transmissions):
                if sent.type == "CRD" and sent.payload == card and sent.sent >= before:
                    self.wired[(round_id, index)] = sent.sent
                    break

    async def wait_for_card(self, head: int, seconds: float) -> None:
        """Wait for what the card made of the table (an event newer than ``head``)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            items = await self.follow(left)
            if any(i["seq"] > head and i["type"] in CARD_EVENTS for i in items):
                return

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.sleep(self.pace.draw(self.rng, self.pace.start))
        while not stop.is_set():
            try:
                await self.step()
            except Exception as exc:  # the process under us died: re-read and go on
                self.errors[type(exc).__name__] += 1
                self.stale = "error"
                if os.environ.get("STUDIO_LOAD_DEBUG"):
                    import traceback

                    traceback.print_exc()
                await asyncio.sleep(0.2)

    async def step(self) -> None:
        self.catch_up()
        why = self.must_read()
        if why is not None:
            await self.state(why)
            self.stale = None
        table = self.view()
        shoe, rnd = table["shoe"], table["round"]
        blocking = [i for i in table["incidents"] if i["blocking"]]
        if blocking and rnd is not None and rnd["phase"] not in ("settled", "voided"):
            await self.post(
                "supervisor", "/round/void", {"reason": "bench: incident", "change_shoe": False}
            )
            return
        for incident in blocking:
            await self.post(
                "supervisor", f"/incidents/{incident['incident_id']}/resolve", {"note": "bench"}
            )
        if blocking:
            return
        round_over = rnd is None or rnd["phase"] in ("settled", "voided")
        if shoe is None or (round_over and shoe.get("cut_card_drawn")):
            self.new_shoe()
            await self.post("supervisor", "/shoe")
            return
        if not shoe["ready"]:
            await self.until(self.last_move + self.pace.draw(self.rng, self.pace.burn))
            await self.deal_one(None, None)
            return
        if round_over:
            await self.until(self.settled_at + self.pace.draw(self.rng, self.pace.between))
            answer = await self.post("dealer", "/betting/open")
            if answer.status_code == 200:
                self.rounds += 1
            elif answer.json().get("error") in ("shoe_finished", "no_shoe"):
                self.new_shoe()
                await self.post("supervisor", "/shoe")
            return
        round_id = rnd["round_id"]
        if rnd["phase"] == "betting":
            if round_id not in self.bet_rounds:
                self.bet_rounds.add(round_id)
                await self.betting(round_id)
            answer = await self.post("dealer", "/betting/close")
            if answer.status_code == 200:
                self.last_move = time.monotonic()
            return
        if rnd["phase"] == "dealing" and rnd["next_position"] is not None:
            recorded = len(rnd["cards"])
            mine = self.round_cards.get(round_id, [])
            if len(mine) > recorded:
                # Dealt from the shoe, its event not seen: late, or the reader's report was
                # lost with the table's process. Read the table after a second; if the card
                # is still missing, the supervisor keys it in, as the rules say.
                await self.until(time.monotonic() + 1.0)
                again = (await self.state("card missing"))["round"]
                if again and again["round_id"] == round_id and len(again["cards"]) == recorded:
                    answer = await self.post("supervisor", "/cards", {"card": mine[recorded]})
                    self.keyed += answer.status_code == 200
                return
            await self.until(self.last_move + self.pace.draw(self.rng, self.pace.card))
            await self.deal_one(round_id, recorded)
            return
        # Nothing for the dealer to do: the table is settling, or a frame is on its way.
        if not await self.follow(QUIET):
            self.stale = "quiet"

    async def console_views(self, frames: asyncio.Queue[dict[str, Any]]) -> None:
        """``--console-views``: the dealer console's own reads, as ``dealer.js`` makes them:
        its view (``GET /console/tables/{t}/view``) read again 60 ms after the last frame
        of each burst its stream brings (``refreshSoon``, debounced)."""
        while True:
            await frames.get()
            with contextlib.suppress(TimeoutError):
                while True:
                    await asyncio.wait_for(frames.get(), 0.06)
            try:
                answer = await self.studio.call(
                    "dealer", "GET", self.table_id, f"/console/tables/{self.table_id}/view"
                )
                self.views += 1
                if answer.status_code != 200:
                    self.errors[f"view:{answer.status_code}"] += 1
            except Exception as exc:  # the process under us died: the next burst reads
                self.errors[f"view:{type(exc).__name__}"] += 1

    def new_shoe(self) -> None:
        """The table's new shoe is a new physical shoe too: what was left of the old one is
        lifted out unread (before, a load refused once cards were dealt was swallowed, and
        a run longer than a shoe per table dealt its second shoe from the first's remains
        until the physical shoe ran empty and every table stalled)."""
        self.shoe.refill()

    async def betting(self, round_id: str) -> None:
        """The betting window: each operator's platform sends its players' bets (one batch
        per operator). At ``--pace max`` one after the other, then the dealer closes; at a
        human pace the window is held open and each batch arrives at a random moment in it
        (closing once the window has passed and every batch was answered)."""
        window = self.pace.draw(self.rng, self.pace.window)
        if not window:
            for op_no, operator in enumerate(self.operators):
                await self.place_bets(round_id, op_no, operator)
            return
        opened = time.monotonic()

        async def later(op_no: int, operator: str) -> None:
            await asyncio.sleep(self.rng.uniform(0.1, max(0.1, window - 0.4)))
            await self.place_bets(round_id, op_no, operator)

        batches = [asyncio.create_task(later(n, op)) for n, op in enumerate(self.operators)]
        await self.until(opened + window)
        await asyncio.gather(*batches)

    async def place_bets(self, round_id: str, op_no: int, operator: str) -> None:
        bets = [
            {
                "key": f"{round_id}-{i}",
                "account": f"{operator}-acct-{(i + op_no) % 20}",
                "type": BET_TYPES[i % len(BET_TYPES)],
                "stake": 100 + 100 * (i % 7),
            }
            for i in range(self.bets_per_round)
        ]
        answer = await self.studio.call(
            operator,
            "POST",
            self.table_id,
            f"/tables/{self.table_id}/bets",
            json={"bets": bets},
        )
        if answer.status_code != 200:
            self.errors[f"bets:{answer.status_code}"] += 1


class NatsFollower:
    """A JetStream consumer of one table's subjects: every event seq it got."""

    def __init__(self, url: str, stream: str, root: str, table_id: str) -> None:
        self.url = url
        self.stream = stream
        self.root = root
        self.table_id = table_id
        self.seqs: list[int] = []

    async def run(self, stop: asyncio.Event) -> None:
        import nats

        from table_service.table.nats_stream import subject_token

        nc = await nats.connect(self.url, max_reconnect_attempts=-1)
        js = nc.jetstream()
        subject = f"{self.root}.tables.{subject_token(self.table_id)}.>"

        async def on_message(message: Any) -> None:
            self.seqs.append(int(message.headers["Livetable-Seq"]))

        while True:
            try:
                sub = await js.subscribe(
                    subject, stream=self.stream, cb=on_message, ordered_consumer=True
                )
                break
            except Exception:
                await asyncio.sleep(0.5)
        await stop.wait()
        await asyncio.sleep(1.0)
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        await nc.drain()


def ledger_mismatches(runtime: Runtime) -> tuple[int, int, int]:
    """(mismatches, bets, rounds settled): balances against the ledger, against the log."""
    mismatches = 0
    expected: Counter[str] = Counter()
    bets = rounds = 0
    with runtime.sessions() as session:
        for event in EventStore.read(session):
            p = event.payload
            if event.type == "account_credited":
                expected[p["account"]] += p["amount"]
            elif event.type == "account_debited":
                expected[p["account"]] -= p["amount"]
            elif event.type == "bets_placed":
                for b in p["bets"]:
                    expected[b["account"]] -= b["stake"]
                    bets += 1
            elif event.type in ("bets_settled", "bets_refunded"):
                for b in p["results" if event.type == "bets_settled" else "refunds"]:
                    expected[b["account"]] += b["returned"]
            elif event.type == "round_settled":
                rounds += 1
        ledger = dict(
            session.execute(
                select(LedgerEntry.account_id, func.sum(LedgerEntry.amount)).group_by(
                    LedgerEntry.account_id
                )
            ).all()
        )
        for account in session.scalars(select(Account)):
            if account.balance != ledger.get(account.account_id, 0):
                mismatches += 1
            if account.balance != expected.get(account.account_id, 0):
                mismatches += 1
        per_bet = session.execute(
            select(LedgerEntry.bet_id, LedgerEntry.kind, func.count())
            .where(LedgerEntry.bet_id.is_not(None))
            .group_by(LedgerEntry.bet_id, LedgerEntry.kind)
        ).all()
        mismatches += sum(1 for *_, n in per_bet if n != 1)
        closed = session.scalar(select(func.count()).where(BetRow.status != "open")) or 0
        returns = sum(1 for _, kind, _ in per_bet if kind == "return")
        mismatches += abs(closed - returns)
    return mismatches, bets, rounds


async def run_load(
    args: argparse.Namespace, runtime: Runtime, db_url: str, tmp: Path
) -> dict[str, Any]:
    tokens: dict[str, str] = {}
    operators = [f"op{i}" for i in range(args.operators)]
    with runtime.sessions.begin() as session:
        for role in ("dealer", "supervisor"):
            tokens[role] = add_principal(
                session, runtime.store, f"bench-{role}", role, actor="bench"
            )
        for op in operators:
            tokens[op] = add_principal(session, runtime.store, op, "operator", actor="bench")
    table_ids = [f"load-{i}" for i in range(args.tables)]
    shoes = {
        t: VirtualShoe(
            "framed", decks=8, seed=i, cut_depth=52, link_path=str(tmp / f"shoe-{t}")
        ).start()
        for i, t in enumerate(table_ids)
    }
    table_file = tmp / "tables.toml"
    table_file.write_text(
        "".join(
            f'[[tables]]\ntable_id = "{t}"\nbetting_seconds = 60\n'
            f'shoe = {{ port = "{shoes[t].device_path}", dialect = "framed" }}\n\n'
            for t in table_ids
        )
    )
    env = {
        **os.environ,
        "LIVETABLE_DATA_DIR": str(tmp / "data"),
        "LIVETABLE_DATABASE_URL": db_url,
        "LIVETABLE_LOG_LEVEL": "WARNING",
        "LIVETABLE_TAKEOVER_SECONDS": str(args.takeover_seconds),
        # Every bot connects from 127.0.0.1, standing for players on many addresses: the
        # per-address cap on anonymous streams (50 by default) would refuse most of them.
        # Once a process is killed, the one left standing holds every stream the run opens.
        # (The tables' consoles were public streams too, and counted: with the cap at the
        # subscribers alone, after a takeover as many streams as there are tables were
        # refused (4429) to the end and never caught up. They follow the staff stream now,
        # which the cap does not count; the margin stays.)
        "LIVETABLE_STREAM_MAX_PUBLIC_PER_ADDRESS": str(max(50, args.subscribers + args.tables)),
        "LIVETABLE_STREAM_MAX_PUBLIC_PER_TABLE": str(max(2000, args.subscribers)),
    }
    for name in ("LIVETABLE_CONFIG", "LIVETABLE_TABLE_CONFIG", "LIVETABLE_NATS_URL"):
        env.pop(name, None)
    if args.nats:
        env["LIVETABLE_NATS_URL"] = args.nats
        env["LIVETABLE_NATS_STREAM"] = args.nats_stream
        # Subjects of this run's own: another run's stream on the same server (another
        # benchmark going, or one killed) would overlap the default root's.
        env["LIVETABLE_NATS_SUBJECT_ROOT"] = args.nats_stream.lower()
    servers = [
        Serve(env, table_file, tmp / f"serve-{i}.log", f"node-{i}") for i in range(args.processes)
    ]
    if args.memory_trace:  # tracemalloc in each serve process, its samples in a file each
        Path(args.memory_trace_dir).mkdir(parents=True, exist_ok=True)
        for server in servers:
            server.env["LIVETABLE_MEMORY_TRACE_SECONDS"] = str(args.memory_trace)
            server.env["LIVETABLE_MEMORY_TRACE_FILE"] = str(
                Path(args.memory_trace_dir) / f"{server.node}.jsonl"
            )
    for server in servers:
        server.start()
    studio = Studio(servers, tokens)
    stop = asyncio.Event()
    tasks: list[asyncio.Task[Any]] = []
    procs: list[Any] = []
    try:
        started = time.monotonic()
        while True:  # every table running somewhere, and shared out
            directory = await studio.directory()
            owners = Counter(t["owner"] for t in directory if t["owner"])
            share = -(-len(table_ids) // args.processes)
            if sum(owners.values()) == len(table_ids) and max(owners.values()) <= share:
                break
            for server in servers:
                if not server.alive():
                    raise RuntimeError(f"{server.node} exited: {server.log.read_text()[-2000:]}")
            if time.monotonic() - started > 120:
                raise RuntimeError(f"tables not shared out: {owners}")
            await asyncio.sleep(0.2)
        say(f"studio up: {dict(owners)} in {time.monotonic() - started:.1f} s; pace {args.pace}")
        for op in operators:
            for n in range(20):
                await studio.call(
                    op,
                    "POST",
                    None,
                    f"/accounts/{op}-acct-{n}/credit",
                    json={"amount": 10**12, "reference": f"seed-{op}-{n}"},
                )
        pace = PACES[args.pace]
        dealers = {
            t: Dealer(studio, t, shoes[t], operators, args.bets, pace, seed=n)
            for n, t in enumerate(table_ids)
        }
        # One dealer console per table in this process (the staff stream, with the dealer's
        # token: the bot plays from it); the public crowd in processes of its own.
        consoles: list[Subscriber] = []
        viewing: list[asyncio.Task[None]] = []  # --console-views
        for t in table_ids:
            console = Subscriber(
                studio,
                t,
                name=f"console-{t}",
                fixed_retry=args.reconnect == "fixed",
                token=tokens["dealer"],
            )
            console.listeners.append(dealers[t].events)
            dealers[t].console = console
            if args.console_views:
                frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
                console.listeners.append(frames)
                viewing.append(asyncio.create_task(dealers[t].console_views(frames)))
            consoles.append(console)
        crowd_tables = [table_ids[n % len(table_ids)] for n in range(args.subscribers)]
        ctx = mp.get_context("spawn")
        pipes = []
        bases = [server.base for server in servers]
        for k in range(args.subscriber_procs):
            mine = crowd_tables[k :: args.subscriber_procs]
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=subscriber_process,
                args=(
                    bases,
                    tokens["supervisor"],
                    mine,
                    child,
                    f"p{k}.",
                    args.reconnect == "fixed",
                    args.subscriber_nice,
                ),
            )
            proc.start()
            procs.append(proc)
            pipes.append(parent)
        for pipe in pipes:
            pipe.recv()
        followers = [
            NatsFollower(
                args.nats, args.nats_stream, args.nats_stream.lower(), table_ids[n % len(table_ids)]
            )
            for n in range(args.nats_consumers if args.nats else 0)
        ]
        tasks += [asyncio.create_task(s.run(stop)) for s in consoles]
        tasks += [asyncio.create_task(f.run(stop)) for f in followers]
        sampler, sampler_end = ctx.Pipe()
        sampling = ctx.Process(target=commit_sampler, args=(db_url, sampler_end))
        sampling.start()
        procs.append(sampling)
        await asyncio.to_thread(sampler.recv)
        await asyncio.sleep(1.0)
        # The bots' and shoes' process holds what the setup made for the whole run: frozen,
        # the collector's full passes (100 ms on a loaded host) no longer stall a deal
        # between the bot's scan and the shoe's frame, which is part of the service's share.
        gc.collect()
        gc.freeze()
        cpu_start = time.process_time()
        servers_cpu = {s.node: cpu_seconds(s.proc.pid) for s in servers if s.proc is not None}
        tasks += [asyncio.create_task(d.run(stop)) for d in dealers.values()]
        spies = []
        if args.profile:  # py-spy (pip install py-spy) samples each serve process
            Path(args.profile).mkdir(parents=True, exist_ok=True)
            for server in servers:
                assert server.proc is not None
                command = ["py-spy", "record", "--threads", "--format", "raw", "-r", "200"]
                command += ["--gil"] if not args.profile_idle else ["--idle"]
                command += ["-o", str(Path(args.profile) / f"{server.node}.raw")]
                command += ["-p", str(server.proc.pid), "-d", str(int(args.seconds))]
                spies.append(subprocess.Popen(command, stdout=subprocess.DEVNULL))
        run_started = time.monotonic()
        say(f"run started: {len(dealers)} dealers for {args.seconds:g} s")
        one_trips: Counter[str] = Counter()  # the serve processes' one-trip commits
        takeover = None
        killed_node = None
        killed_at = 0.0
        victim_tables: list[str] = []
        next_report = run_started + 5
        while time.monotonic() - run_started < args.seconds and not STOP_EARLY.is_set():
            await asyncio.sleep(0.2)
            now = time.monotonic()
            if killed_node is None and args.kill and now - run_started > args.seconds / 2:
                directory = await studio.directory()
                owners = Counter(t["owner"] for t in directory if t["owner"])
                killed_node = owners.most_common(1)[0][0]
                victim = next(s for s in servers if s.node == killed_node)
                victim_tables = [t["table_id"] for t in directory if t["owner"] == killed_node]
                assert victim.proc is not None  # a serve process the run started
                servers_cpu[victim.node] = cpu_seconds(victim.proc.pid) - servers_cpu[victim.node]
                one_trips += await victim.one_trips(studio.http)
                victim.kill()
                killed_at = time.monotonic()
                say(f"SIGKILL {killed_node} running {victim_tables}")
            if killed_node is not None and takeover is None:
                directory = await studio.directory()
                if all(t["owner"] not in (None, killed_node) for t in directory):
                    takeover = time.monotonic() - killed_at
                    say(f"taken over in {takeover:.2f} s")
            if now >= next_report:
                next_report = now + 5
                rounds = sum(d.rounds for d in dealers.values())
                cards = sum(len(d.dealt) for d in dealers.values())
                say(f"t={now - run_started:5.1f}s rounds={rounds} cards={cards}")
        ran = time.monotonic() - run_started
        for task in tasks[len(consoles) + len(followers) :] + viewing:
            task.cancel()
        for spy in spies:
            spy.wait(60)
        generator_cpu = time.process_time() - cpu_start
        sampler.send("stop")
        run_commits, run_waits = await asyncio.to_thread(sampler.recv)
        for server in servers:
            if server.alive() and server.proc is not None:
                servers_cpu[server.node] = cpu_seconds(server.proc.pid) - servers_cpu[server.node]
                one_trips += await server.one_trips(studio.http)
        await asyncio.sleep(0.1)
        # Let every subscriber drain up to the log's end.
        with runtime.sessions() as session:
            public = {
                t: [
                    e.seq
                    for e in EventStore.read(session, table_id=t)
                    if public_view(e) is not None
                ]
                for t in table_ids
            }
            every = {t: [e.seq for e in EventStore.read(session, table_id=t)] for t in table_ids}
        for pipe in pipes:
            pipe.send({t: (seqs or [0])[-1] for t, seqs in public.items()})
        await drain(
            lambda: sum(len(f.seqs) for f in followers),
            lambda: any(len(set(f.seqs)) < len(every[f.table_id]) for f in followers),
        )
        crowd: list[dict[str, Any]] = []
        crowd_cpu = 0.0
        asks_at: list[float] = []
        for pipe in pipes:
            held, cpu, asked = await asyncio.to_thread(pipe.recv)
            crowd += held
            crowd_cpu += cpu
            asks_at += asked
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await studio.http.aclose()
        for server in servers:
            server.stop()
        for shoe in shoes.values():
            shoe.stop()
        for proc in procs:
            proc.join(30)
    lost = behind = duplicates = 0
    node_of = {s.base: s.node for s in servers}
    taken_at = killed_at + takeover if takeover is not None else None
    for who, table_id, wanted, seqs, connections in [
        (h["name"], h["table"], public[h["table"]], h["seqs"], h["connections"]) for h in crowd
    ] + [(f"nats-{n}", f.table_id, every[f.table_id], f.seqs, []) for n, f in enumerate(followers)]:
        gaps, tail = missing(wanted, seqs)
        lost += gaps
        behind += tail
        duplicates += len(seqs) - len(set(seqs))
        if gaps:
            gone = gaps_below_last(wanted, seqs)
            for line in describe_gap(
                who, table_id, gone, wanted, connections, node_of, killed_at, taken_at
            ):
                say(line)
        if any(b <= a for a, b in itertools.pairwise(seqs)):
            say(f"OUT OF ORDER {who} table {table_id}: {seqs}")
    refused: Counter[int] = Counter()
    for h in crowd:
        refused.update(h["refused"])
    after_kill = Counter(
        c[7] for h in crowd for c in h["connections"] if killed_at and c[0] >= killed_at
    )
    asks = sorted(asks_at)
    per_second = Counter(int(t - killed_at) for t in asks if killed_at and t >= killed_at - 5)
    window = [per_second.get(k, 0) for k in range(-5, 1 + int(takeover or 0) + 5)]
    if killed_at:
        say(
            f"directory requests a second by the subscribers, from 5 s before the kill to 5 s "
            f"after the takeover: {window}; connections ended after the kill: {dict(after_kill)}"
        )
    stuck_refused = sum(
        1
        for h in crowd
        if h["connections"]
        and h["connections"][-1][7] == "close 4429"
        and h["connections"][-1][3] is None
    )
    mismatches, bets, rounds = ledger_mismatches(runtime)
    dealt = {key: at for d in dealers.values() for key, at in d.dealt.items()}
    wired = {key: at for d in dealers.values() for key, at in d.wired.items()}
    table_of = {round_id: d.table_id for d in dealers.values() for round_id in d.round_cards}
    taken_over_by = killed_at + (takeover if takeover is not None else ran)
    split: dict[str, list[float]] = defaultdict(list)
    for held in crowd:
        for round_id, index, received, sent, committed, read in held["samples"]:
            scanned = dealt.get((round_id, index))
            if scanned is None:
                continue  # no deal recorded for it (dealt before the run's bots started)
            if (
                table_of.get(round_id) in victim_tables
                and scanned <= taken_over_by
                and (committed if committed is not None else received) >= killed_at
            ):
                # Dealt at a table whose process was killed, before its takeover ended:
                # the card waited for the takeover (or was keyed in by the supervisor).
                # Reported apart, as the takeover's, not in the steady-state latency.
                split["takeover_scan_to_subscriber"].append(received - scanned)
                continue
            split["scan_to_subscriber"].append(received - scanned)
            if committed is None:
                # sent from the log, not live: a subscriber catching up (after the kill,
                # the cards dealt while its table moved): end to end only
                split["replayed"].append(received - scanned)
                continue
            split["scan_to_send"].append(sent - scanned)
            if killed_at and killed_at <= scanned <= taken_over_by:
                # a card of a table the kill did not touch, dealt while the others were
                # taken over (their subscribers asking where they run now): apart too
                split["survivor_in_takeover_scan_to_send"].append(sent - scanned)
            split["send_to_receive"].append(received - sent)
            split["scan_to_commit"].append(committed - scanned)
            split["commit_to_send"].append(sent - committed)
            on_wire = wired.get((round_id, index))
            if on_wire is not None:
                split["scan_to_wire"].append(on_wire - scanned)
                split["wire_to_send"].append(sent - on_wire)
                if read is not None:
                    split["wire_to_read"].append(read - on_wire)
            if read is not None:
                split["read_to_commit"].append(committed - read)
                split["read_to_send"].append(sent - read)
    errors: Counter[str] = Counter()
    for d in dealers.values():
        errors.update(d.errors)
    if errors:
        say(f"refusals and errors seen by the bots: {dict(errors.most_common(8))}")
    reads: Counter[str] = Counter()
    for d in dealers.values():
        reads.update(d.reads)
    views = sum(d.views for d in dealers.values())
    say(
        f"the dealer bots read their tables (GET) {sum(reads.values())} times: {dict(reads)}"
        + (f"; their consoles read their views {views} times" if args.console_views else "")
    )
    timed = {(r, i) for held in crowd for r, i, _, _, c, _ in held["samples"] if c is not None}
    result: dict[str, Any] = {
        "tables": len(table_ids),
        "processes": args.processes,
        "pace": args.pace,
        "rounds": rounds,
        "cards": len(dealt),  # dealt into rounds by the bots, from their shoes
        "cards_timed": len(timed & set(dealt)),  # of them, received live by a subscriber
        "dealer_reads": dict(reads),
        "cards_keyed": sum(d.keyed for d in dealers.values()),
        "console_views": views if args.console_views else None,
        "bets": bets,
        "events": sum(len(v) for v in every.values()),
        "subscribers": len(crowd) + len(followers),  # the audience (not the dealers' consoles)
        "lost_events": lost,
        "behind_at_end": behind,
        "duplicate_events": duplicates,
        "ledger_mismatches": mismatches,
        "cards_replayed": len(split.get("replayed", [])),
        "cards_in_takeover": len(split.get("takeover_scan_to_subscriber", [])),
    }
    for name in (
        "scan_to_subscriber",
        "scan_to_send",
        "scan_to_commit",
        "commit_to_send",
        "send_to_receive",
        "scan_to_wire",
        "wire_to_read",
        "read_to_commit",
        "read_to_send",
        "wire_to_send",
        "takeover_scan_to_subscriber",
        "survivor_in_takeover_scan_to_send",
    ):
        values = split.get(name, [])
        result[f"{name}_p50_ms"] = round(percentile(values, 0.5) * 1000, 2) if values else None
        result[f"{name}_p99_ms"] = round(percentile(values, 0.99) * 1000, 2) if values else None
    result.update(
        {
            "takeover_seconds": round(takeover, 2) if takeover is not None else None,
            "reconnects": sum(h["reconnects"] for h in crowd),
            "reconnect": args.reconnect,
            "refused_by_code": {str(k): v for k, v in sorted(refused.items())},
            "refused_at_end": stuck_refused,
            "directory_requests": len(asks),
            "directory_requests_peak_per_s": max(window, default=0),
            "load_generator_cpu_s": round(generator_cpu + crowd_cpu, 2),
            "load_generator_main_cpu_s": round(generator_cpu, 2),
            "subscriber_procs_cpu_s": round(crowd_cpu, 2),
            "servers_cpu_s": round(sum(servers_cpu.values()), 2),
            "run_seconds": round(ran, 1),
            "one_trip_commits": dict(one_trips),
            "run_commit_p50_ms": round(percentile(run_commits, 0.5) * 1000, 2),
            "run_commit_p99_ms": round(percentile(run_commits, 0.99) * 1000, 2),
            "run_commit_cpu_wait_p50_ms": _ms(run_waits, 0.5),
            "run_commit_cpu_wait_p99_ms": _ms(run_waits, 0.99),
        }
    )
    return result


PRESETS: dict[str, dict[str, Any]] = {
    "day": {
        "tables": 24, "processes": 4, "subscribers": 1000, "nats_consumers": 48,
        "seconds": 300, "kill": True,
    },
    "soak": {"seconds": 1800, "kill": False},
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=None, help="database URL (default: SQLite in a temp dir)")
    parser.add_argument("--nats", default=None, help="NATS URL: publish and follow JetStream")
    parser.add_argument("--nats-stream", default=f"LOAD{uuid.uuid4().hex[:8].upper()}")
    parser.add_argument("--tables", type=int, default=8)
    parser.add_argument(
        "--pace",
        choices=sorted(PACES),
        default="human",
        help="human: each dealer deals at a brisk live pace (a card every 0.5-1.0 s, a 2 s "
        "betting window; the module's docstring); max: as fast as the service allows, a "
        "closed loop at saturation",
    )
    parser.add_argument(
        "--console-views",
        action="store_true",
        help="each table's dealer console also reads its view 60 ms after each burst of "
        "its stream's frames, as dealer.js does",
    )
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--subscribers", type=int, default=200, help="public WebSocket clients")
    parser.add_argument("--subscriber-procs", type=int, default=2, help="their processes")
    parser.add_argument("--profile", default=None, help="py-spy each serve into this folder")
    parser.add_argument(
        "--profile-idle", action="store_true", help="py-spy: every thread's wait, not the GIL's"
    )
    parser.add_argument(
        "--reconnect",
        choices=["backoff", "fixed"],
        default="backoff",
        help="subscribers reconnect with exponential backoff and jitter, as real clients "
        "do (default), or every 0.2 s (the old bots)",
    )
    parser.add_argument(
        "--subscriber-nice",
        type=int,
        default=0,
        help="niceness of the subscribers' processes (clients elsewhere: not competing)",
    )
    parser.add_argument("--nats-consumers", type=int, default=12)
    parser.add_argument("--operators", type=int, default=2)
    parser.add_argument("--bets", type=int, default=50, help="bets per operator per round")
    parser.add_argument("--takeover-seconds", type=float, default=10.0)
    parser.add_argument(
        "--paced-commits",
        type=int,
        default=PACED_COMMITS,
        help="commits 200 ms apart on the idle machine before the run, for "
        "paced_commit_p50_ms (each holds the start up 200 ms)",
    )
    parser.add_argument("--no-kill", dest="kill", action="store_false")
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="day: 24 tables, 4 processes, 1,000 subscribers, 48 NATS consumers, 300 s, one "
        "process SIGKILLed; soak: the default studio for 30 minutes, no kill (memory)",
    )
    parser.add_argument(
        "--warmup", type=float, default=60.0, help="memory: the start sample is taken after"
    )
    parser.add_argument(
        "--memory-trace",
        type=float,
        default=0.0,
        help="every N s, each serve process samples tracemalloc's top growth (0: off)",
    )
    parser.add_argument(
        "--memory-trace-dir", default="memory-trace", help="the samples: one JSONL per process"
    )
    known, _ = parser.parse_known_args()
    if known.preset:
        parser.set_defaults(**PRESETS[known.preset])
    args = parser.parse_args()
    configure_logging(level="WARNING")
    # SIGTERM or a lost terminal ends the run early: the serve processes stopped, the
    # scratch schema dropped, the stream deleted (SIGKILL cannot: the next run drops what
    # a killed one left, once it is stale, by name and by its lock or its silence).
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    if args.nats:
        for stale in asyncio.run(drop_stale_streams(args.nats, "LOAD", keep=args.nats_stream)):
            say(f"deleted stream {stale}: left behind by a run that died")
    try:
        with scratch_runtime(args.db) as runtime, tempfile.TemporaryDirectory() as tmp:
            db_url = runtime.engine.url.render_as_string(hide_password=False)
            commits = one_row_commits(runtime.engine, 200)
            paced, paced_waits = paced_commits(runtime.engine, max(1, args.paced_commits), 0.2)
            say(
                f"backend {runtime.engine.dialect.name}; "
                f"durable commit p50 {statistics.median(commits) * 1000:.2f} ms"
                f" (every 200 ms: {_ms(paced, 0.5)} ms)"
            )
            result = asyncio.run(run_load(args, runtime, db_url, Path(tmp)))
            result["paced_commit_p50_ms"] = _ms(paced, 0.5)
            result["paced_commit_cpu_wait_p50_ms"] = _ms(paced_waits, 0.5)
            memory = {s.node: s.memory_report(args.warmup) for s in SERVES}
            result["memory"] = memory
            for node, figures in memory.items():
                if figures:
                    say(
                        f"memory {node}: {figures['start_mb']} MiB after warm-up -> "
                        f"{figures['end_mb']} MiB at the end (peak {figures['peak_mb']}, second "
                        f"half {figures['second_half_mb_per_hour']:+} MiB/h, last 10 minutes "
                        f"{figures['last_10_min_mb_per_hour']:+} MiB/h, over {figures['minutes']} "
                        f"min; each minute: {figures['per_minute_mb']})"
                    )
            if args.memory_trace:
                result["memory_trace"] = traced_growth(Path(args.memory_trace_dir), SERVES)
            commits += one_row_commits(runtime.engine, 200)
    finally:
        if args.nats:
            asyncio.run(_drop_stream(args.nats, args.nats_stream))
    commit = statistics.median(commits) * 1000
    result["commit_p50_ms"] = round(commit, 3)
    result["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    say(f"one durable commit p50 {commit:.2f} ms; each figure as p50 / p99 and x that commit:")
    for name, label in (
        ("scan_to_commit", "scan -> commit (service)"),
        ("commit_to_send", "commit -> send (service)"),
        ("scan_to_send", "scan -> send (the service's share, live)"),
        ("send_to_receive", "send -> receive (subscriber side)"),
        ("scan_to_subscriber", "scan -> subscriber (end to end, all)"),
        ("scan_to_wire", "  deal -> frame on the link (the shoe)"),
        ("wire_to_read", "  link -> reader thread read it"),
        ("read_to_commit", "  read -> commit (the table)"),
        ("read_to_send", "  read -> send (the table and stream)"),
        ("wire_to_send", "  link -> send"),
        ("takeover_scan_to_subscriber", "in a takeover: scan -> subscriber"),
        ("survivor_in_takeover_scan_to_send", "meanwhile the others: scan -> send"),
    ):
        p50, p99 = result[f"{name}_p50_ms"], result[f"{name}_p99_ms"]
        if p50 is not None:
            say(
                f"  {label:36} {p50:8.2f} / {p99:8.2f} ms"
                f"   {p50 / commit:6.2f}x / {p99 / commit:6.2f}x"
            )
    run_p50, run_p99 = result["run_commit_p50_ms"], result["run_commit_p99_ms"]
    say(
        f"  {'a commit through the run (every 200 ms)':36} {run_p50:8.2f} / {run_p99:8.2f} ms"
        f"   {run_p50 / commit:6.2f}x / {run_p99 / commit:6.2f}x  (the machine's own tail)"
    )
    if result["paced_commit_p50_ms"] is not None:
        say(
            f"  {'the same, before the run (idle)':36} {result['paced_commit_p50_ms']:8.2f} ms"
            f"{'':12}{result['paced_commit_p50_ms'] / commit:6.2f}x"
        )
    if result["run_commit_cpu_wait_p50_ms"] is not None:
        say(
            f"  {'  of which its backend waited for a CPU':36}"
            f" {result['run_commit_cpu_wait_p50_ms']:8.2f} /"
            f" {result['run_commit_cpu_wait_p99_ms']:8.2f} ms"
            f" (idle, every 200 ms: {result['paced_commit_cpu_wait_p50_ms']} ms)"
        )
    say(
        f"pace {result['pace']}: {result['rounds']} rounds settled, {result['cards']} cards "
        f"dealt into rounds ({result['cards_timed']} of them timed live) at "
        f"{result['tables']} tables"
    )
    say(
        f"CPU over the {result['run_seconds']} s run: load generator"
        f" {result['load_generator_cpu_s']} s (bots and consoles"
        f" {result['load_generator_main_cpu_s']} s, subscriber processes"
        f" {result['subscriber_procs_cpu_s']} s), serve processes {result['servers_cpu_s']} s;"
        f" load average {result['load_average']}"
    )
    trips = result["one_trip_commits"]
    say(
        f"one-trip commits (serve processes, the killed one's up to its kill): "
        f"{trips.get('committed', 0)} in one trip, of which {trips.get('relinked', 0)} "
        f"linked again before it (the process's own commit landed meanwhile), "
        f"{trips.get('head_moved', 0)} found the head moved by the other process (two trips), "
        f"{trips.get('refused', 0)} refused (the usual way)"
    )
    if result["scan_to_send_p50_ms"] is not None:
        met = (
            result["scan_to_send_p50_ms"] <= 3 * commit
            and result["scan_to_send_p99_ms"] <= 15 * commit
        )
        say(
            f"goal: the service's scan -> send p50 <= 3x and p99 <= 15x a commit: "
            f"{'met' if met else 'NOT met'}"
        )
    print(json.dumps(result), flush=True)


def traced_growth(folder: Path, servers: list[Serve], top: int = 5) -> dict[str, Any]:
    """Each serve's last tracemalloc sample: Python's memory (traced now and at its peak)
    and the source lines whose allocations grew most since the first sample."""
    out: dict[str, Any] = {}
    for server in servers:
        path = folder / f"{server.node}.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        if not lines:
            continue
        first, last = json.loads(lines[0]), json.loads(lines[-1])
        growth = [
            {"kib": g["kib"], "count": g["count"], "at": g["where"][-1]}
            for g in last["growth"][:top]
        ]
        out[server.node] = {
            "traced_mib_first": first["traced_mib"],
            "traced_mib_last": last["traced_mib"],
            "traced_peak_mib": last["traced_peak_mib"],
            "top_growth": growth,
        }
        say(
            f"tracemalloc {server.node}: Python heap {first['traced_mib']} -> "
            f"{last['traced_mib']} MiB (peak {last['traced_peak_mib']}); grew most: "
            + "; ".join(f"{g['at']} {g['kib']:+} KiB" for g in growth)
        )
    return out


STOP_EARLY = threading.Event()  # SIGTERM/SIGHUP: end the run now, report and clean up


def _interrupt(signum: int, frame: Any) -> None:
    """The first SIGTERM or SIGHUP ends the run early the ordinary way (drain, report,
    stop the servers, drop the schema and the stream); a second one unwinds at once."""
    if STOP_EARLY.is_set():
        raise KeyboardInterrupt(f"signal {signum}")
    STOP_EARLY.set()
    say(f"signal {signum}: ending the run now (again to abandon it)")


async def _drop_stream(url: str, stream: str) -> None:
    import nats

    nc = await nats.connect(url)
    with contextlib.suppress(Exception):
        await nc.jetstream().delete_stream(stream)
    await nc.close()


if __name__ == "__main__":
    main()
