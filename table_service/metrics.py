"""Prometheus metrics of a ``serve`` or ``operator-feed`` process (prometheus-client).

What the people running a studio watch: per table, how long a card takes from the reader
to a durable commit and from the commit to a subscriber's socket, how long a command's
transaction takes, rounds and bets, the money in play, open incidents and their age, the
reader, the lease; per process, stream subscribers, replays waiting, the NATS outbox's
lag and the database pools; per operator feed, delivery lag, retries and dead letters.

Two kinds of series, so nothing the code forgets can linger as a stale value:

- counters and histograms are updated where things happen, through the few functions
  below that the table service, the stream and the feeds call (``command_done``,
  ``card_committed``, ``delivered``...);
- gauges are read from the live objects at scrape time by one collector
  (:class:`_LiveCollector`): tables, stream hubs, NATS publishers, studios and database
  engines register themselves while they run and are forgotten when they stop.

Labels are bounded: ``table`` (the configured tables), ``node`` (this process), a
refusal's ``reason`` (error codes, at most :data:`MAX_REASONS` of them, else ``other``),
an incident's ``kind`` (the games' catalogues, bounded the same way), ``audience``
(public, staff, operator), ``operator`` (one per feed process).

Exposition is on a listener of its own (``LIVETABLE_METRICS_ADDRESS``, ``serve
--metrics HOST:PORT``), never on the public API port: see :func:`serve_metrics`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any
from wsgiref.simple_server import make_server

from prometheus_client import (
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    make_wsgi_app,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer, _SilentHandler
from prometheus_client.registry import Collector

# No *_created series: they would double every counter's and histogram's cardinality.
disable_created_metrics()  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated

# Seconds: a commit is a few ms, a delivery under load tens of ms, a stall seconds.
LATENCY_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
FEED_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 1800.0)
MAX_REASONS = 64
_CODE = re.compile(r"[a-z][a-z0-9_]{0,47}")

SCAN_TO_COMMIT = Histogram(
    "livetable_scan_to_commit_seconds",
    "A card from its reader's report (a camera: its first frame) to the table's durable commit",
    ["table"],
    buckets=LATENCY_BUCKETS,
)
COMMIT_TO_SUBSCRIBER = Histogram(
    "livetable_commit_to_subscriber_seconds",
    "An event from its durable commit to a stream subscriber's socket (every live delivery)",
    ["table"],
    buckets=LATENCY_BUCKETS,
)
COMMIT_DURATION = Histogram(
    "livetable_commit_duration_seconds",
    "One table command's transaction: log lock, decision, events, read models, commit",
    ["table"],
    buckets=LATENCY_BUCKETS,
)
COMMANDS = Counter(
    "livetable_commands_total",
    "Table commands by outcome: committed, refused (a typed refusal) or failed (an error)",
    ["table", "outcome"],
)
ROUNDS = Counter(
    "livetable_rounds_total", "Rounds ended, by how: settled or voided", ["table", "result"]
)
BETS_PLACED = Counter("livetable_bets_placed_total", "Bets accepted", ["table"])
BETS_REFUSED = Counter(
    "livetable_bets_refused_total", "Bets refused, by the refusal's code", ["table", "reason"]
)
LEASES_ACQUIRED = Counter(
    "livetable_lease_acquired_total", "Table leases this process took (start or takeover)",
    ["table", "node"],
)  # fmt: skip
LEASES_LOST = Counter(
    "livetable_lease_lost_total",
    "Table leases this process found taken or run out at renewal (it stops writing them)",
    ["table", "node"],
)
DB_UNAVAILABLE = Counter(
    "livetable_database_unavailable_total",
    "Table commands that found the database unreachable or full (the table pauses)",
    ["table", "reason"],
)
HTTP_RESPONSES = Counter("livetable_http_responses_total", "API answers by status code", ["code"])
STREAM_SUBSCRIBERS = Gauge(
    "livetable_stream_subscribers", "Stream subscribers connected, by audience", ["audience"]
)
REPLAY_QUEUE = Gauge(
    "livetable_stream_replay_queue_clients",
    "Stream clients waiting for a replay slot (replays take turns on the event loop)",
)
FEED_DELIVERIES = Counter(
    "livetable_feed_deliveries_total",
    "Operator feed messages handled: delivered, dead_lettered, or duplicate (skipped by key)",
    ["operator", "outcome"],
)
FEED_RETRIES = Counter(
    "livetable_feed_retries_total", "Operator webhook attempts that will be retried", ["operator"]
)
FEED_DEAD_LETTERS = Counter(
    "livetable_feed_dead_letters_total",
    "Operator messages refused by the endpoint (4xx), written to the dead-letter file",
    ["operator"],
)
FEED_LAG = Histogram(
    "livetable_feed_delivery_lag_seconds",
    "An operator message from its event's commit time to its delivery",
    ["operator"],
    buckets=FEED_BUCKETS,
)
FEED_LAST_DELIVERY = Gauge(
    "livetable_feed_last_delivery_timestamp_seconds",
    "Unix time of the operator feed's last delivery",
    ["operator"],
)
FEED_NATS_CONNECTED = Gauge(
    "livetable_feed_nats_connected",
    "1 while the operator feed is connected to NATS, 0 while NATS is unreachable",
    ["operator"],
)
FEED_NATS_FAILURES = Counter(
    "livetable_feed_nats_connect_failures_total",
    "The operator feed's attempts to reach NATS that failed",
    ["operator"],
)
FEED_PENDING = Gauge(
    "livetable_feed_pending_messages",
    "Operator messages in the stream not yet acknowledged by this feed (JetStream consumer)",
    ["operator"],
)

_reasons: set[str] = set()
_reasons_lock = threading.Lock()


def bounded(code: object) -> str:
    """A label value from an error code or a kind: known shape, at most MAX_REASONS."""
    text = str(code)
    if not _CODE.fullmatch(text):
        return "other"
    with _reasons_lock:
        if text in _reasons:
            return text
        if len(_reasons) >= MAX_REASONS:
            return "other"
        _reasons.add(text)
    return text


# -- the commit path -------------------------------------------------------------------------
def command_done(table_id: str, command: Any, outcome: Any, seconds: float) -> None:
    """A command committed (or decided nothing): its duration, rounds and bets."""
    COMMIT_DURATION.labels(table_id).observe(seconds)
    COMMANDS.labels(table_id, "committed").inc()
    placed = 0
    for event in outcome.events:
        if event.type == "round_settled":
            ROUNDS.labels(table_id, "settled").inc()
        elif event.type == "round_voided":
            ROUNDS.labels(table_id, "voided").inc()
        elif event.type == "bets_placed":
            placed += len(event.payload.get("bets", ()))
    if placed:
        BETS_PLACED.labels(table_id).inc(placed)
    if any(e.type.startswith("incident_") for e in outcome.events):
        incidents_changed(outcome.events)
    results = outcome.answer.get("results") if isinstance(outcome.answer, dict) else None
    for item in results or ():
        if isinstance(item, dict) and item.get("status") == "refused":
            BETS_REFUSED.labels(table_id, bounded(item.get("error", "refused"))).inc()


def command_failed(table_id: str, command: Any, exc: BaseException, seconds: float) -> None:
    """A command refused (typed) or failed: nothing was written."""
    code = getattr(exc, "code", None)
    COMMANDS.labels(table_id, "refused" if code else "failed").inc()
    if code is None:
        COMMIT_DURATION.labels(table_id).observe(seconds)
    bets = getattr(command, "bets", None)
    if bets and type(command).__name__ == "PlaceBets":
        BETS_REFUSED.labels(table_id, bounded(code or "error")).inc(len(bets))


def card_committed(table_id: str, reader_event: Any) -> None:
    """A reader's card is in the log: reader report (or camera frame) to commit."""
    seen = getattr(reader_event, "captured", None) or getattr(reader_event, "monotonic", None)
    if seen is not None:
        SCAN_TO_COMMIT.labels(table_id).observe(max(0.0, time.monotonic() - seen))


class _CommitTimes:
    """When each recent event committed (monotonic), for the commit→subscriber latency,
    and for a reader's card when the reader's thread read its bytes (the scan as the
    service sees it: a ``timing=1`` frame tells the link and the reader's parse from
    the table's own work)."""

    LIMIT = 8192

    def __init__(self) -> None:
        self._times: OrderedDict[tuple[str, int], float] = OrderedDict()
        self._reads: OrderedDict[tuple[str, int], float] = OrderedDict()
        self._lock = threading.Lock()

    def record_read(self, events: Iterable[Any], seen: float) -> None:
        """These events came of a reader's report read at ``seen`` (monotonic)."""
        with self._lock:
            for event in events:
                self._reads[(event.table_id, event.seq)] = seen
            while len(self._reads) > self.LIMIT:
                self._reads.popitem(last=False)

    def read_at(self, table_id: str, seq: int) -> float | None:
        return self._reads.get((table_id, seq))

    def record(self, events: Iterable[Any]) -> None:
        now = time.monotonic()
        with self._lock:
            for event in events:
                self._times[(event.table_id, event.seq)] = now
            while len(self._times) > self.LIMIT:
                self._times.popitem(last=False)

    def get(self, table_id: str, seq: int) -> float | None:
        return self._times.get((table_id, seq))


COMMITS = _CommitTimes()


def committed(events: list[Any]) -> None:
    """Event store subscriber (the committing thread, right after the commit)."""
    COMMITS.record(events)


@contextlib.asynccontextmanager
async def replay_turn(slots: asyncio.Semaphore) -> AsyncIterator[None]:
    """Hold one of the stream's replay slots, counted as waiting until it is had."""
    REPLAY_QUEUE.inc()
    try:
        await slots.acquire()
    finally:
        REPLAY_QUEUE.dec()
    try:
        yield
    finally:
        slots.release()


_DELIVERIES: dict[str, Any] = {}  # COMMIT_TO_SUBSCRIBER's child per table (never removed)


def delivered(table_id: str, seq: int) -> None:
    """A live event went out on a subscriber's socket: once per subscriber per event, on
    the loop, so the table's histogram is looked up once (``labels`` took 14 of this
    call's 18 samples, of 185 for the streams' frames, in a studio's py-spy profile)."""
    _delivered(table_id, seq, time.monotonic())


def delivered_at(sent: list[tuple[str, int, float]]) -> None:
    """Live events that went out on subscribers' sockets, each ``(table, seq, when)``: the
    stream hub's writes of one dispatch, observed after the last of them (each frame
    still counted, at its own send time, but none of them waits for the others' metric)."""
    for table_id, seq, when in sent:
        _delivered(table_id, seq, when)


def _delivered(table_id: str, seq: int, when: float) -> None:
    at = COMMITS.get(table_id, seq)
    if at is not None:
        child = _DELIVERIES.get(table_id)
        if child is None:
            child = _DELIVERIES[table_id] = COMMIT_TO_SUBSCRIBER.labels(table_id)
        child.observe(when - at)


class ResponseCounter:
    """ASGI middleware: every HTTP answer counted by status code (the error-rate alert)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def counted(message: Any) -> None:
            if message["type"] == "http.response.start":
                HTTP_RESPONSES.labels(str(message["status"])).inc()
            await send(message)

        await self.app(scope, receive, counted)


# -- operator feeds ----------------------------------------------------------------------------
def feed_delivered(operator: str, outcome: str, event_ts: str | None = None) -> None:
    FEED_DELIVERIES.labels(operator, outcome).inc()
    if outcome == "duplicate":
        return
    now = time.time()
    FEED_LAST_DELIVERY.labels(operator).set(now)
    if outcome == "dead_lettered":
        FEED_DEAD_LETTERS.labels(operator).inc()
    when = _epoch(event_ts)
    if when is not None:
        FEED_LAG.labels(operator).observe(max(0.0, now - when))


def _epoch(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


# -- gauges read at scrape time ------------------------------------------------------------------
class _LiveCollector(Collector):
    """Gauges read from the objects running in this process, at each scrape."""

    def __init__(self) -> None:
        self.tables: dict[str, Any] = {}
        self.hubs: list[Any] = []
        self.publishers: list[Any] = []
        self.studios: list[Any] = []
        self.engines: dict[str, Any] = {}
        self.one_trips: dict[str, int] = {}  # the event store's, by outcome
        self.incident_times: dict[str, float] = {}
        self.incident_lookup: Callable[[Any, list[str]], dict[str, float]] | None = None
        self._behind_since: dict[str, float] = {}
        self.lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        try:
            yield from self._collect()
        except RuntimeError:  # a dict changed size under a scrape: the next one sees it
            return

    def _collect(self) -> Iterator[Metric]:
        with self.lock:
            tables = list(self.tables.values())
            hubs, publishers = list(self.hubs), list(self.publishers)
            studios, engines = list(self.studios), dict(self.engines)
        yield from self._tables(tables)
        yield from self._studios(studios)
        yield from self._streams(hubs)
        yield from self._nats(publishers)
        yield from self._pools(engines)
        one_trips = CounterMetricFamily(
            "livetable_one_trip_commits",
            "Commands begun to commit in one round trip (a card, the head known): committed"
            " so, relinked (the head moved by this process's own commit since: linked again"
            " before the trip, still one), head_moved (moved by another writer: linked again"
            " under the lock, two trips) or refused (run again the usual way)",
            labels=["outcome"],
        )
        for outcome, count in list(self.one_trips.items()):
            one_trips.add_metric([outcome], float(count))
        yield one_trips

    def _tables(self, tables: list[Any]) -> Iterator[Metric]:
        now_mono, now_wall = time.monotonic(), time.time()
        in_play = GaugeMetricFamily(
            "livetable_stakes_in_play_minor_units",
            "Stakes of the bets open in the table's current round (minor units)",
            labels=["table"],
        )
        bets_open = GaugeMetricFamily(
            "livetable_bets_open", "Bets open in the table's current round", labels=["table"]
        )
        in_progress = GaugeMetricFamily(
            "livetable_round_in_progress",
            "1 while a round is in play (betting, dealing or awaiting its result)",
            labels=["table"],
        )
        awaiting = GaugeMetricFamily(
            "livetable_round_awaiting_card",
            "1 while the round in play waits for a card from the shoe",
            labels=["table"],
        )
        incidents = GaugeMetricFamily(
            "livetable_incidents_open", "Incidents open, by kind", labels=["table", "kind"]
        )
        ages = GaugeMetricFamily(
            "livetable_incident_open_age_seconds",
            "Age of the oldest open incident of each kind",
            labels=["table", "kind"],
        )
        online = GaugeMetricFamily(
            "livetable_reader_online",
            "1 if the table's reader (shoe or camera) is online, as the log records it",
            labels=["table"],
        )
        silence = GaugeMetricFamily(
            "livetable_reader_silence_seconds",
            "Seconds since the reader's last frame or heartbeat (a camera: its last report)",
            labels=["table"],
        )
        paused = GaugeMetricFamily(
            "livetable_table_paused",
            "1 while the table refuses commands until its database is back, by reason",
            labels=["table", "reason"],
        )
        for table in tables:
            t = table.table_id
            state = table.state
            rnd = state.round
            active = rnd is not None and rnd.active
            in_progress.add_metric([t], 1.0 if active else 0.0)
            bets = list(rnd.bets.values()) if active and rnd is not None else []
            in_play.add_metric([t], float(sum(b.stake for b in bets)))
            bets_open.add_metric([t], float(len(bets)))
            waiting = False
            if active and rnd is not None and rnd.phase == "dealing":
                try:
                    waiting = rnd.next_position() is not None
                except Exception:
                    waiting = False
            awaiting.add_metric([t], 1.0 if waiting else 0.0)
            counts: dict[str, int] = {}
            oldest: dict[str, float] = {}
            for incident_id, incident in list(state.incidents.items()):
                kind = bounded(incident.kind)
                counts[kind] = counts.get(kind, 0) + 1
                raised = self.incident_times.get(incident_id)
                if raised is not None:
                    oldest[kind] = max(oldest.get(kind, 0.0), now_wall - raised)
            for kind, count in counts.items():
                incidents.add_metric([t, kind], float(count))
                ages.add_metric([t, kind], oldest.get(kind, 0.0))
            config = table.config
            if config.shoe is not None or config.camera is not None:
                online.add_metric([t], 1.0 if state.reader_online else 0.0)
                silence.add_metric([t], _silence(table, now_mono))
            reason = getattr(table, "outage", None)
            paused.add_metric([t, bounded(reason or "none")], 1.0 if reason else 0.0)
        yield from (in_play, bets_open, in_progress, awaiting, incidents, ages, online, silence)
        yield paused

    def _studios(self, studios: list[Any]) -> Iterator[Metric]:
        held_family = GaugeMetricFamily(
            "livetable_table_lease_held",
            "1 if this process holds the table's lease and runs it, else 0 (every configured "
            "table, from every process)",
            labels=["table", "node"],
        )
        token_family = GaugeMetricFamily(
            "livetable_table_lease_fencing_token",
            "The fencing token of the lease this process holds for the table",
            labels=["table", "node"],
        )
        for studio in studios:
            held = studio.leases.held()
            for table_id in sorted(studio.configs):
                here = table_id in held and table_id in studio.tables
                held_family.add_metric([table_id, studio.node_id], 1.0 if here else 0.0)
                if table_id in held:
                    token_family.add_metric([table_id, studio.node_id], float(held[table_id]))
        yield held_family
        yield token_family

    def _streams(self, hubs: list[Any]) -> Iterator[Metric]:
        queued = GaugeMetricFamily(
            "livetable_stream_queued_events",
            "Live events waiting in subscribers' queues (a slow subscriber is cut at 10,000)",
        )
        total = 0
        for hub in hubs:
            for queues in list(getattr(hub, "_subscribers", {}).values()):
                total += sum(q.qsize() for q in list(queues))
        queued.add_metric([], float(total))
        yield queued

    def _nats(self, publishers: list[Any]) -> Iterator[Metric]:
        lag = GaugeMetricFamily(
            "livetable_nats_outbox_lag_events",
            "Events committed but not yet published to JetStream, per table",
            labels=["table"],
        )
        age = GaugeMetricFamily(
            "livetable_nats_outbox_lag_seconds",
            "How long the table's outbox has been behind the log (0: caught up)",
            labels=["table"],
        )
        connected = GaugeMetricFamily(
            "livetable_nats_connected", "1 if the NATS connection is up", labels=[]
        )
        now = time.monotonic()
        for publisher in publishers:
            nc = getattr(publisher, "_nc", None)
            connected.add_metric([], 1.0 if nc is not None and nc.is_connected else 0.0)
            committed = dict(getattr(publisher, "_committed", {}))
            for table_id, outbox in list(getattr(publisher, "_outboxes", {}).items()):
                behind = max(0, committed.get(table_id, 0) - outbox.last_table)
                lag.add_metric([table_id], float(behind))
                if behind:
                    since = self._behind_since.setdefault(table_id, now)
                    age.add_metric([table_id], now - since)
                else:
                    self._behind_since.pop(table_id, None)
                    age.add_metric([table_id], 0.0)
        yield lag
        yield age
        if publishers:
            yield connected

    def _pools(self, engines: dict[str, Any]) -> Iterator[Metric]:
        used = GaugeMetricFamily(
            "livetable_db_pool_connections",
            "Database connections of this process's pools, by pool and state",
            labels=["pool", "state"],
        )
        size = GaugeMetricFamily(
            "livetable_db_pool_size", "Configured size of each database pool", labels=["pool"]
        )
        for name, engine in engines.items():
            pool = engine.pool
            try:
                out = float(pool.checkedout())
                idle = float(pool.checkedin())
                cap = float(pool.size())
            except (AttributeError, NotImplementedError):
                continue
            used.add_metric([name, "in_use"], out)
            used.add_metric([name, "idle"], idle)
            size.add_metric([name], cap)
        yield used
        yield size


def _silence(table: Any, now: float) -> float:
    reader = getattr(table, "reader", None)
    session = getattr(reader, "session", None)
    if session is not None and hasattr(session, "silent_for") and getattr(reader, "online", False):
        try:
            return float(session.silent_for(now))
        except Exception:
            pass
    last = getattr(table, "reader_seen_at", None)
    return now - last if last is not None else 0.0


LIVE = _LiveCollector()
REGISTRY.register(LIVE)


# -- registration of live objects ------------------------------------------------------------------
def watch_table(table: Any) -> None:
    """A table runs here now: its gauges are read at each scrape, its counters exist at 0
    (a first increment is then an increase, as ``rate`` and ``increase`` need)."""
    table_id = table.table_id
    for histogram in (SCAN_TO_COMMIT, COMMIT_TO_SUBSCRIBER, COMMIT_DURATION):
        histogram.labels(table_id)
    for outcome in ("committed", "refused", "failed"):
        COMMANDS.labels(table_id, outcome)
    for result in ("settled", "voided"):
        ROUNDS.labels(table_id, result)
    BETS_PLACED.labels(table_id)
    with LIVE.lock:
        LIVE.tables[table_id] = table
    _note_open_incidents(table)


def watch_studio(studio: Any) -> None:
    """A studio member: its leases at each scrape, its lease counters at 0."""
    for table_id in studio.configs:
        LEASES_ACQUIRED.labels(table_id, studio.node_id)
        LEASES_LOST.labels(table_id, studio.node_id)
    watch("studios", studio)


def watch_feed(operator: str) -> None:
    """An operator feed starts: its counters at 0."""
    for outcome in ("delivered", "dead_lettered", "duplicate"):
        FEED_DELIVERIES.labels(operator, outcome)
    FEED_RETRIES.labels(operator)
    FEED_DEAD_LETTERS.labels(operator)
    FEED_LAG.labels(operator)
    FEED_NATS_FAILURES.labels(operator)


def unwatch_table(table: Any) -> None:
    table_id = table.table_id
    with LIVE.lock:
        if LIVE.tables.get(table_id) is table:
            del LIVE.tables[table_id]


def watch(kind: str, item: Any) -> None:
    with LIVE.lock:
        getattr(LIVE, kind).append(item)


def unwatch(kind: str, item: Any) -> None:
    with LIVE.lock:
        items = getattr(LIVE, kind)
        if item in items:
            items.remove(item)


def watch_runtime(runtime: Any) -> None:
    """The runtime's pools, and the commit times of its events."""
    with LIVE.lock:
        LIVE.engines["write"] = runtime.engine
        LIVE.one_trips = runtime.store.one_trips
        if runtime.read_engine is not None and runtime.read_engine is not runtime.engine:
            LIVE.engines["read"] = runtime.read_engine
    # first: the commit is timed before the stream hub hands the events out
    runtime.store.subscribe(committed, first=True)


def unwatch_runtime(runtime: Any) -> None:
    with LIVE.lock:
        for name, engine in list(LIVE.engines.items()):
            if engine is runtime.engine or engine is runtime.read_engine:
                del LIVE.engines[name]


def incidents_changed(events: Iterable[Any]) -> None:
    """Raise times of new incidents (from the log's own timestamps)."""
    for event in events:
        if event.type == "incident_raised":
            when = _epoch(event.ts)
            incident_id = event.payload.get("incident_id")
            if when is not None and incident_id:
                LIVE.incident_times[str(incident_id)] = when
        elif event.type == "incident_resolved":
            LIVE.incident_times.pop(str(event.payload.get("incident_id")), None)


def _note_open_incidents(table: Any) -> None:
    """Incidents already open when a table starts here: their raise time from the log."""
    missing = [i for i in table.state.incidents if i not in LIVE.incident_times]
    if not missing:
        return
    try:
        from sqlalchemy import select

        from audit.models import AuditEvent
        from table_service.models import IncidentRow

        with table.runtime.reads() as session:
            rows = session.execute(
                select(IncidentRow.incident_id, AuditEvent.ts)
                .join(AuditEvent, AuditEvent.seq == IncidentRow.raised_seq)
                .where(IncidentRow.incident_id.in_(missing))
            ).all()
    except Exception:  # metrics never stop a table from starting
        return
    for incident_id, ts in rows:
        when = _epoch(ts)
        if when is not None:
            LIVE.incident_times[incident_id] = when


# -- exposition ------------------------------------------------------------------------------------
class MetricsAddressError(ValueError):
    """The metrics address is not HOST:PORT, or the port cannot be bound."""


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise MetricsAddressError(f"metrics address {text!r}: HOST:PORT (port 0: any free one)")
    return host.strip("[]") or "127.0.0.1", int(port)


Readiness = Callable[[], tuple[bool, str]]
"""Whether the process does its work now, and if not why (``/readyz``)."""


def _health(environ: dict[str, Any], start_response: Any, ready: Readiness) -> list[bytes]:
    """``/healthz`` (the process answers) and ``/readyz`` (it does its work: 503 and the
    reason when not), in the shapes ``livetable serve`` answers them on its API port."""
    status, reason = 200, ""
    if environ.get("PATH_INFO") == "/healthz":
        body: dict[str, str] = {"status": "ok"}
    else:
        ok, reason = ready()
        status = 200 if ok else 503
        body = {"status": "ready" if ok else "not ready", "reason": reason}
    line = "200 OK" if status == 200 else "503 Service Unavailable"
    start_response(line, [("Content-Type", "application/json"), ("Cache-Control", "no-store")])
    return [json.dumps(body).encode()]


class MetricsServer:
    """The exposition listener: ``GET <path>`` answers the text format, anything else 404;
    with ``ready`` (a process without an API port of its own: the operator feed) also
    ``GET /healthz`` and ``GET /readyz``."""

    def __init__(
        self, host: str, port: int, path: str = "/metrics", ready: Readiness | None = None
    ) -> None:
        if not path.startswith("/"):
            raise MetricsAddressError(f"metrics path {path!r} must start with /")
        if ready is not None and path in ("/healthz", "/readyz"):
            raise MetricsAddressError(f"metrics path {path!r} is the health check's")
        inner = make_wsgi_app(REGISTRY)

        def app(environ: dict[str, Any], start_response: Any) -> Any:
            if ready is not None and environ.get("PATH_INFO") in ("/healthz", "/readyz"):
                return _health(environ, start_response, ready)
            if environ.get("PATH_INFO", "") != path:
                start_response("404 Not Found", [("Content-Type", "text/plain")])
                return [f"metrics are at {path}\n".encode()]
            return inner(environ, start_response)

        class _Server(ThreadingWSGIServer):
            address_family = ThreadingWSGIServer.address_family

        if ":" in host:
            import socket

            _Server.address_family = socket.AF_INET6
        try:
            self.httpd = make_server(host, port, app, _Server, handler_class=_SilentHandler)
        except OSError as exc:
            raise MetricsAddressError(f"cannot listen for metrics on {host}:{port}: {exc}") from exc
        self.host = host
        self.port = int(self.httpd.server_port)
        self.path = path
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name="metrics", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        if self.host in ("0.0.0.0", "::", ""):
            shown = "127.0.0.1"
        return f"http://{shown}:{self.port}{self.path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def serve_metrics(
    address: str, path: str = "/metrics", ready: Readiness | None = None
) -> MetricsServer:
    """Listen for Prometheus on ``address`` (``HOST:PORT``; port 0 picks a free one); with
    ``ready``, the health checks too (``/healthz``, ``/readyz``)."""
    host, port = parse_address(address)
    return MetricsServer(host, port, path, ready)
