"""This process's share of a studio's tables: lease, run, renew, hand over, take over.

Every ``serve`` process is started with the same table file. Each one heartbeats its
membership and, every tick, renews the leases it holds, takes free or expired leases up to
its fair share (tables / live members, rounded up) and, when it holds more than its share
because a peer joined, hands one idle table (no round in progress) back. A table taken
over is rebuilt from the log and its game's restart rule applied before it answers.

Timing, for a takeover bound ``T`` (default 10 s): a lease lasts 0.6·T and is renewed
every tick of 0.1·T, so a dead process's leases run out at most 0.6·T after its last
renewal and a peer notices within one tick: the table runs again within about 0.7·T plus
the time to fold its log, inside ``T``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog
from sqlalchemy import Engine

from audit.db import create_db_engine, is_sqlite
from table_service import metrics
from table_service.runtime import Runtime
from table_service.studio.errors import TableElsewhere, TableUnavailable
from table_service.studio.lease import LeaseInfo, Leases
from table_service.table.config import TableConfig
from table_service.table.errors import UnknownTable
from table_service.table.outage import outage
from table_service.table.service import Clock, TableService, utc_now

log = structlog.get_logger(__name__)

DEFAULT_TAKEOVER_SECONDS = 10.0

TableHook = Callable[[str], Any]


def default_node_id(port: int | None = None) -> str:
    host = socket.gethostname()
    return f"{host}:{port}" if port is not None else host


class Studio:
    """A :class:`~table_service.table.service.TableManager` for a studio: ``tables`` holds
    only the tables this process runs now; ``get`` says where any other one is."""

    def __init__(
        self,
        runtime: Runtime,
        configs: list[TableConfig],
        *,
        node_id: str,
        url: str | None = None,
        takeover_seconds: float = DEFAULT_TAKEOVER_SECONDS,
        clock: Clock = utc_now,
        reader_options: dict[str, Any] | None = None,
        fair_share: bool = True,
    ) -> None:
        self.runtime = runtime
        self.configs = {cfg.table_id: cfg for cfg in configs}
        self.node_id = node_id
        self.url = url
        self.takeover_seconds = takeover_seconds
        self.tick_seconds = max(0.05, takeover_seconds / 10)
        self.clock = clock
        self.reader_options = reader_options
        self.fair_share = fair_share
        self._lease_engine = _lease_engine(runtime)
        self.leases = Leases(
            self._lease_engine or runtime.engine, node_id, url, ttl_ms=round(takeover_seconds * 600)
        )
        self.leases.fenced = frozenset(self.configs)
        self.leases.install_fence(runtime.sessions, runtime.store)
        self.tables: dict[str, TableService] = {}
        # Every lease as last read, and when (monotonic): see :meth:`leases_now`.
        self._leases_read: tuple[float, dict[str, LeaseInfo]] | None = None
        self._leases_reading = threading.Lock()
        self.on_acquired: list[TableHook] = []
        self.on_dropped: list[TableHook] = []
        self._with_readers = True
        self._task: asyncio.Task[None] | None = None
        self._busy = asyncio.Lock()

    # -- the API's view ------------------------------------------------------------------
    def leases_now(self) -> dict[str, LeaseInfo]:
        """Every table's lease, read at most once a tick (and again as soon as this process
        takes or drops a table), its expiry judged against the time now.

        Where a table runs is asked by every client that lost its stream or was sent
        elsewhere: when a process dies, its ~100 subscribers ask the survivors over and
        over until its leases run out, and each answer was a database read on the threads
        that the survivors' own requests wait for. A lease changes hands only at a tick
        (or when it runs out, which the expiry kept here says to the millisecond), so an
        answer at most a tick old is as good; one read serves them all."""
        read = self._leases_read
        now = time.monotonic()
        if read is None or now - read[0] >= self.tick_seconds:
            with self._leases_reading:
                read = self._leases_read
                if read is None or time.monotonic() - read[0] >= self.tick_seconds:
                    read = (time.monotonic(), self.leases.directory(self.configs))
                    self._leases_read = read
            now = time.monotonic()
        age_ms = round((now - read[0]) * 1000)
        return {t: dataclasses.replace(i, now_ms=i.now_ms + age_ms) for t, i in read[1].items()}

    def _leases_changed(self) -> None:
        self._leases_read = None

    def get(self, table_id: str) -> TableService:
        service = self.tables.get(table_id)
        if service is not None:
            return service
        if table_id not in self.configs:
            raise UnknownTable(f"no table {table_id!r}", known=sorted(self.configs))
        info = self.leases_now().get(table_id)
        if info is not None and info.live and info.owner != self.node_id:
            raise TableElsewhere(
                f"table {table_id} runs on {info.owner}",
                table_id=table_id,
                owner=info.owner,
                owner_url=info.owner_url,
            )
        raise TableUnavailable(
            f"table {table_id} is being taken over; retry shortly",
            table_id=table_id,
            retry_after=math.ceil(self.takeover_seconds),
        )

    def directory(self) -> list[dict[str, Any]]:
        leases = self.leases_now()
        return [
            {
                "table_id": table_id,
                "owner": info.owner if info and info.live else None,
                "owner_url": info.owner_url if info and info.live else None,
                "token": info.token if info else 0,
                "here": table_id in self.tables,
            }
            for table_id in sorted(self.configs)
            for info in [leases.get(table_id)]
        ]

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self, *, with_readers: bool = True) -> None:
        """Join, take this process's share now (so the API answers with tables up), then
        keep the share in the background."""
        self._with_readers = with_readers
        metrics.watch_studio(self)
        # The processes of a studio share one log: each hears the others' commits, so its
        # cards find the head they expect and commit in one round trip (PostgreSQL).
        self.runtime.store.follow(self.runtime.engine)
        await self.tick()
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Leave cleanly: every table is handed back at once for a peer to take."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        async with self._busy:
            for table_id in list(self.tables):
                await self._drop(table_id, release=True)
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self.leases.leave)
        await asyncio.to_thread(self.runtime.store.unfollow)
        if self._lease_engine is not None:
            await asyncio.to_thread(self._lease_engine.dispose)
        metrics.unwatch("studios", self)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.tick_seconds)
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                cause = outage(exc)
                if cause is None:
                    log.exception("studio.tick_failed", node=self.node_id)
                else:  # leases wait for the database like the tables do
                    log.warning("studio.tick_failed", node=self.node_id, cause=cause)

    # -- one tick ------------------------------------------------------------------------
    async def tick(self) -> None:
        async with self._busy:
            members = await asyncio.to_thread(self.leases.heartbeat)
            await self._renew()
            share = len(self.configs)
            if self.fair_share:
                share = math.ceil(len(self.configs) / max(1, len(members)))
            if len(self.tables) < share:
                await self._take(share - len(self.tables))
            elif len(self.tables) > share:
                await self._hand_back_one()

    async def _renew(self) -> None:
        for table_id in await asyncio.to_thread(self.leases.renew):
            await self._drop(table_id, release=False)

    async def _take(self, wanted: int) -> None:
        directory = await asyncio.to_thread(self.leases.directory, self.configs)
        free = [
            t
            for t in sorted(self.configs)
            if t not in self.tables
            and (t not in directory or not directory[t].live or directory[t].owner == self.node_id)
        ]
        for table_id in free[:wanted]:
            token = await asyncio.to_thread(self.leases.acquire, table_id)
            if token is None:
                continue
            service = TableService(
                self.runtime,
                self.configs[table_id],
                clock=self.clock,
                reader_options=self.reader_options,
            )
            try:
                await service.start(with_reader=self._with_readers)
                await self.restart_rule(service)
            except Exception:
                log.exception("studio.table_start_failed", table_id=table_id)
                with contextlib.suppress(Exception):
                    await service.stop()
                await asyncio.to_thread(self.leases.release, table_id)
                continue
            self.tables[table_id] = service
            self._leases_changed()
            log.info("studio.table_running", table_id=table_id, token=token, node=self.node_id)
            for hook in self.on_acquired:
                hook(table_id)
            # Folding a long log takes a while: keep the leases already held fresh
            # between tables, so taking many over never lets the others run out.
            await self._renew()

    async def restart_rule(self, service: TableService) -> None:
        """Each game's rule for a round found in play when its table starts here (a
        restart, or a takeover after its process died) is applied by the table itself as
        it starts (``TableService.start``: ``resume`` for baccarat, void, refund and a new
        shoe for blackjack and Xì Dách); the studio records which one happened."""
        rnd = service.state.round
        if rnd is None:
            return
        if rnd.active:
            log.info("studio.round_resumed", table_id=service.table_id, round=rnd.round_id)
        elif rnd.phase == "voided":
            log.warning("studio.round_voided_on_start", table_id=service.table_id)

    async def _hand_back_one(self) -> None:
        for table_id, service in sorted(self.tables.items()):
            if _round_in_progress(service):
                continue
            del self.tables[table_id]  # new requests are told to retry from now on
            lock: asyncio.Lock | None = getattr(service, "_lock", None)
            if lock is not None:
                async with lock:
                    pass
            if _round_in_progress(service):  # a round opened meanwhile: keep the table
                self.tables[table_id] = service
                continue
            self.tables[table_id] = service
            await self._drop(table_id, release=True)
            log.info("studio.table_handed_back", table_id=table_id, node=self.node_id)
            return

    async def _drop(self, table_id: str, *, release: bool) -> None:
        service = self.tables.pop(table_id, None)
        if service is None:
            return
        lock: asyncio.Lock | None = getattr(service, "_lock", None)
        if lock is not None:
            async with lock:  # let a command in flight finish (or fail at the fence)
                pass
        with contextlib.suppress(Exception):
            await service.stop()
        if release:
            await asyncio.to_thread(self.leases.release, table_id)
        else:
            self.leases.forget(table_id)
        self._leases_changed()
        for hook in self.on_dropped:
            hook(table_id)


def _round_in_progress(service: TableService) -> bool:
    rnd = service.state.round
    return rnd is not None and bool(rnd.active)


def _lease_engine(runtime: Runtime) -> Engine | None:
    """On PostgreSQL, the studio's own connections for its leases and members (the tick's
    heartbeat and renewal every second, the directory's reads), apart from the pool the
    table commands take theirs from; None on SQLite (one writer: the runtime's engine).

    Sharing the pool, the tick held a second connection once a second while the tables'
    commands held theirs, so the next command to overlap a tick took a connection that
    had sat idle about a second and pinged it first (``audit.db.IDLE_PING_SECONDS``): a
    round trip more in front of its commit. Traced in the studio (PostgreSQL, load 7-15):
    some 28 pings a process in 40 s, a third of them by the tick's own work and a quarter
    by a command while the tick ran; 5 % of the cards waited for one (0.3-25 ms)."""
    url = runtime.engine.url.render_as_string(hide_password=False)
    if is_sqlite(url):
        return None
    return create_db_engine(url, pool_size=1, max_overflow=2)


def studio_for(runtime: Runtime, configs: list[TableConfig], host: str, port: int) -> Studio:
    """The studio member a ``serve`` process on ``host:port`` is, from its settings."""
    settings = runtime.settings
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return Studio(
        runtime,
        configs,
        node_id=settings.node_id or default_node_id(port),
        url=settings.advertise_url or f"http://{shown}:{port}",
        takeover_seconds=settings.takeover_seconds,
    )
