"""The studio stream: each table's events in log order, live, with resume.

Events reach the hub only after their commit (the event store's subscriber hook). A
client names the last sequence number it has; it gets everything after it from the log,
then the live feed, with no gap and no duplicate because it subscribes before replaying
and drops anything at or below what it already sent.

Replays are the heavy part (a crowd of anonymous clients may each ask for a table's whole
history), so they are bounded three ways: pages of :data:`REPLAY_PAGE` events read in
read-only transactions on the replay pool (threads of their own, never the pool that
commands use), one database read per page however many clients want it at once (full
pages never change and are kept, as the text each view sends, in a small cache; a read on
its way is shared only by clients that joined the table's live feed before anything was
published after it was asked for), and a limit of anonymous subscribers per table and per
client address.

The event loop is shared with every command and request, so replays give way to writes:
at most ``replay_concurrency`` clients hold a page at a time, and they send it in bursts
of :data:`SEND_BURST` frames, one burst at a time in the whole process. A burst waits while
write requests are in flight (up to :data:`WRITES_FIRST_MAX` seconds), and is followed by
a rest in proportion to the loop time it took, so that replays take at most
``replay_share`` of the loop, and at most ``replay_rate`` frames a second. A write's
request then waits behind one burst at most, never behind a crowd of them: every step of
its path (the request, the worker thread's answer, the response) needs the loop once, and
with hundreds of replaying clients each taking a turn before it, a write took hundreds of
milliseconds. A burst a client does not take within :data:`BURST_SEND_TIMEOUT` seconds ends
its stream (it resumes from its last seq). A crowd of replaying clients then slows itself
down, not the writes.

The last page of a table's history (shorter than a page) is kept too, for as long as the
table's head has not moved: a crowd replaying the same few hundred events would otherwise
read and render it again for each client, on threads that take the interpreter's lock
from the writes.

Live frames of the public and staff audiences go out from the hub's dispatch itself, to
each subscriber that waits idle on its queue with a socket ready to take them
(:class:`Live`): one write per subscriber, the frame's bytes built once per event and
audience (with ``timing=1`` all but the send time), where each subscriber's task took a
turn of the loop for it. A subscriber that is not idle (its task still sending), or whose
socket is not ready (the transport's buffer full: backpressure, or closing), gets the
event on its queue as before, and from then on every event, until its task has sent them
all and waits again: so its frames still go out in order, and a slow one is still cut off
at :data:`QUEUE_LIMIT`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
import time
from collections import OrderedDict, defaultdict
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import structlog

from audit.store import StoredEvent
from table_service import metrics
from table_service.table.audience import Audience
from table_service.table.view import PUBLIC_VIEWER, STAFF_VIEWER, Viewer, no_hand, view

log = structlog.get_logger(__name__)

QUEUE_LIMIT = 10_000
REPLAY_PAGE = 200
SEND_BURST = 16  # frames sent in one turn of the event loop
BURST_SEND_TIMEOUT = 10.0  # a client that does not take a burst in this long is cut off
PAGE_SEND_TIMEOUT = BURST_SEND_TIMEOUT  # (the name older callers know)
WRITES_FIRST_MAX = 0.25  # the longest a replay burst waits for writes in flight
LIVE_RENDERED = 4096  # live events kept rendered per view, so N subscribers render once
PAGE_CACHE = 512  # full pages kept (each at most REPLAY_PAGE rendered events)
TAIL_CACHE = 256  # last (partial) pages kept while their table's head stays
TAIL_SECONDS = 5.0  # and at most this long
REVOKED = "principal_revoked"  # the log's record of a token revoked
MISSING: Any = object()  # nothing rendered yet (None: rendered, and nothing to send)
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# Close codes of the stream (4000–4999 are the application's own).
CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_FAR_BEHIND = 4408
CLOSE_TOO_MANY = 4429
CLOSE_UNAVAILABLE = 4503


def public_view(event: StoredEvent) -> dict[str, Any] | None:
    """The public form of an event, or None if the public sees nothing of it (the
    audiences :mod:`table_service.table.view` declares for each event field)."""
    return view(event, PUBLIC_VIEWER)


def internal_view(event: StoredEvent) -> dict[str, Any] | None:
    """The staff's form of an event: the stored record, every declared field."""
    return view(event, STAFF_VIEWER)


def operator_view(
    owned: Callable[[str], bool],
    operator: str = "operator",
    holds: Callable[[str | None, int | None], bool] | None = None,
) -> Callable[[StoredEvent], dict[str, Any] | None]:
    """An operator sees the public stream plus the bets of its own accounts — never
    another operator's accounts or stakes (``owned`` says which accounts are its own) —
    and the face-down cards of the hands its accounts play (``holds(round, seat)``)."""
    viewer = Viewer(Audience.OWNER, operator, owned, holds or no_hand)

    def operator_event(event: StoredEvent) -> dict[str, Any] | None:
        return view(event, viewer)

    return operator_event


def dealer_view(
    seated_bank: Callable[[str | None, int | None], bool],
) -> Callable[[StoredEvent], dict[str, Any] | None]:
    """A dealer's stream: the staff's, but a seated banker's face-down cards as the public
    sees them until they are turned (``seated_bank(round, None)``: a seated player banks
    that round); the house's hole card the dealer sees (it plays the house's hand)."""
    viewer = Viewer(Audience.DEALER, holds=seated_bank)

    def dealer_event(event: StoredEvent) -> dict[str, Any] | None:
        return view(event, viewer)

    return dealer_event


def render(view: Callable[[StoredEvent], dict[str, Any] | None], event: StoredEvent) -> str | None:
    item = view(event)
    return None if item is None else json.dumps(item, separators=(",", ":"))


class Writes:
    """Write requests in flight in this process (counted by :class:`WritesFirst`): stream
    replays give way to them.

    A write counts for at most ``fresh`` seconds: one still running after that (a long
    settlement, or a client sending its body slowly on purpose) no longer holds replays
    back, so nobody can stall every replay by keeping requests open."""

    def __init__(self, fresh: float = 2.0) -> None:
        self.fresh = fresh
        self.count = 0
        self.idle = asyncio.Event()
        self.idle.set()

    def begin(self) -> Callable[[], None]:
        """Count a write; call what this returns when it ends (at most once counted)."""
        self.count += 1
        self.idle.clear()
        counted = True

        def uncount() -> None:
            nonlocal counted
            if counted:
                counted = False
                self.count -= 1
                if self.count <= 0:
                    self.count = 0
                    self.idle.set()

        expiry = asyncio.get_running_loop().call_later(self.fresh, uncount)

        def end() -> None:
            expiry.cancel()
            uncount()

        return end


class WritesFirst:
    """ASGI middleware: every HTTP request that may write is counted in ``writes`` while
    it runs (a plain ASGI layer: no task or stream per request)."""

    def __init__(self, app: Any, writes: Writes) -> None:
        self.app = app
        self.writes = writes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") not in WRITE_METHODS:
            await self.app(scope, receive, send)
            return
        end = self.writes.begin()
        try:
            await self.app(scope, receive, send)
        finally:
            end()


def with_timing(text: str, committed: float | None, read: float | None = None) -> str:
    """A rendered frame with the service's timing (``timing=1`` streams): ``t.send``, the
    host's monotonic clock as the frame is handed to the socket, ``t.commit``, when
    this process saw the event's commit (live events only; the commit times the metrics
    keep), and for a reader's card ``t.read``, when the reader's thread read the frame's
    bytes. Seconds; a subscriber on the same host tells the service's share of a latency
    from its own."""
    return stamped(timing_prefix(text, committed, read), time.monotonic())


def timing_prefix(text: str, committed: float | None, read: float | None = None) -> str:
    """All of a timed frame but its send time (the same for every subscriber of an
    event's audience: built once per event and audience, see :meth:`StreamHub.timed`)."""
    commit = "" if committed is None else f'"commit":{committed:.6f},'
    if read is not None:
        commit = f'"read":{read:.6f},{commit}'
    return f'{text[:-1]},"t":{{{commit}"send":'


def stamped(prefix: str, sent: float) -> str:
    """A timed frame: its :func:`timing_prefix` and the send time, per subscriber."""
    return prefix + stamp(sent)


def stamp(sent: float) -> str:
    """What follows a timed frame's :func:`timing_prefix`: its send time, and the end."""
    return f"{sent:.6f}}}}}"


def frame_header(length: int) -> bytes:
    """The header of a WebSocket text frame from the server (RFC 6455 section 5.2: final,
    unmasked, no extension bits) with ``length`` bytes of payload."""
    if length < 126:
        return bytes((0x81, length))
    if length < 65536:
        return struct.pack("!BBH", 0x81, 126, length)
    return struct.pack("!BBQ", 0x81, 127, length)


class Socket(Protocol):
    """A subscriber's WebSocket as the hub writes to it (see :class:`Live`)."""

    def ready(self) -> bool:
        """Whether a whole frame written now goes out after everything sent before it,
        with the connection open and its transport taking data (not paused)."""

    def write(self, data: bytes) -> None:
        """Hand a whole frame (header and payload) to the connection's transport."""


@dataclass(eq=False)
class Live:
    """A subscriber following its table live through a :class:`Socket` the hub writes to
    itself while ``idle`` (its task waiting on an empty queue). ``last``: the last seq it
    was sent, by the hub or by its task."""

    table_id: str
    view_key: str
    view: Callable[[StoredEvent], dict[str, Any] | None]
    timing: bool
    socket: Socket
    last: int
    idle: bool = False


_K = TypeVar("_K")
_V = TypeVar("_V")


def _kept(cache: OrderedDict[_K, _V], key: _K, value: _V, most: int = LIVE_RENDERED) -> None:
    """``value`` kept under ``key`` in one of the hub's caches (live events' rendered
    texts, timing prefixes and frames' bytes; replay pages and tails), the oldest let go
    beyond ``most``."""
    cache[key] = value
    while len(cache) > most:
        cache.popitem(last=False)


def _runs(events: list[StoredEvent]) -> list[list[StoredEvent]]:
    """``events`` in runs of one table's consecutive events, a token's revocation alone in
    its run (it ends its streams before the events after it reach them)."""
    runs: list[list[StoredEvent]] = []
    for event in events:
        if (
            runs
            and runs[-1][-1].table_id == event.table_id
            and event.type != REVOKED
            and runs[-1][0].type != REVOKED
        ):
            runs[-1].append(event)
        else:
            runs.append([event])
    return runs


@dataclass
class Ticket:
    """An admitted subscriber; give it back with :meth:`StreamHub.leave`."""

    table_id: str
    address: str | None  # None for authenticated subscribers (not counted)


class StreamHub:
    """Fans committed events out to subscriber queues on the event loop."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        max_public_per_table: int = 2000,
        max_public_per_address: int = 50,
        replay_workers: int = 2,
        replay_concurrency: int = 8,
        replay_rate: int = 10_000,
        replay_share: float = 0.5,
        writes: Writes | None = None,
        revoked_among: Callable[[frozenset[str]], set[str]] | None = None,
    ) -> None:
        self.loop = loop
        # Which of these principals' tokens the database says are revoked (a blocking
        # read, run off the loop): a token revoked by another process (the CLI, another
        # serve of a studio) ends its streams too, before they receive a later event.
        self._revoked_among = revoked_among
        self._check_pool = ThreadPoolExecutor(1, thread_name_prefix="revocation")
        self._checking = False
        self._covered: list[StoredEvent] = []  # held back until the check in flight ends
        self._waiting: list[StoredEvent] = []  # held back until the next check ends
        # The log's last seq this hub has seen with every seq before it: a batch that
        # follows it directly was preceded by nothing the hub has not seen, so no other
        # process can have revoked a token before it (a revocation is an event of the
        # same log, one gap-free sequence), and it needs no check.
        self._seen_through: int | None = None
        self._principal_of: dict[asyncio.Queue[StoredEvent | None], str] = {}
        self._subscribers: dict[str, set[asyncio.Queue[StoredEvent | None]]] = defaultdict(set)
        # the streams each principal holds open, to end them when its token is revoked
        self._holders: dict[str, set[asyncio.Queue[StoredEvent | None]]] = defaultdict(set)
        self._revoked: set[asyncio.Queue[StoredEvent | None]] = set()
        self.max_public_per_table = max_public_per_table
        self.max_public_per_address = max_public_per_address
        self._public_per_table: dict[str, int] = defaultdict(int)
        self._public_per_address: dict[str, int] = defaultdict(int)
        self.replay_pool = ThreadPoolExecutor(replay_workers, thread_name_prefix="replay")
        self._pages: OrderedDict[tuple[str, str, int], list[tuple[int, str | None]]] = OrderedDict()
        self._tails: OrderedDict[
            tuple[str, str, int], tuple[int | None, float, list[tuple[int, str | None]]]
        ] = OrderedDict()
        # The last seq published per table; a table that stopped running here has a mark
        # of its own instead (negative, one per stop), until it publishes here again.
        self._heads: dict[str, int] = {}
        self._stops = 0
        # reads on their way, each with its table's head when it was asked for
        self._loading: dict[tuple[str, str, int], tuple[asyncio.Future[Any], int | None]] = {}
        self.replay_slots = asyncio.Semaphore(replay_concurrency)
        self.replay_rate = replay_rate
        self.replay_share = min(1.0, max(0.01, replay_share))
        self.writes = writes or Writes()
        self._turn = asyncio.Lock()
        self._tokens = float(replay_rate) / 10
        self._stamp = loop.time()
        self._live: OrderedDict[tuple[str, int], str | None] = OrderedDict()
        self._timed: OrderedDict[tuple[str, int], str] = OrderedDict()
        # live subscribers the dispatch writes to itself, and each event's bytes for them
        self._direct: dict[asyncio.Queue[StoredEvent | None], Live] = {}
        self._wire: OrderedDict[tuple[str, int, bool], bytes | None] = OrderedDict()
        self.direct_frames = 0  # live frames the dispatch wrote (the rest: their tasks)
        self._sent: list[tuple[str, int, float]] = []  # their metric, after the last write

    @contextlib.asynccontextmanager
    async def turn(self, frames: int) -> AsyncIterator[None]:
        """One burst of replay frames: alone in the process, after the writes in flight
        (up to :data:`WRITES_FIRST_MAX`), within the frame budget, and followed by a rest
        that keeps replays to ``replay_share`` of the loop."""
        async with self._turn:
            if not self.writes.idle.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.writes.idle.wait(), WRITES_FIRST_MAX)
            now = self.loop.time()
            cap = self.replay_rate / 10  # at most a tenth of a second's worth in one go
            self._tokens = min(cap, self._tokens + (now - self._stamp) * self.replay_rate)
            self._stamp = now
            self._tokens -= frames
            if self._tokens < 0:
                await asyncio.sleep(-self._tokens / self.replay_rate)
            started = time.perf_counter()
            try:
                yield
            finally:
                spent = time.perf_counter() - started
                await asyncio.sleep(spent * (1 - self.replay_share) / self.replay_share)

    async def pace(self, frames: int) -> None:
        """Spend ``frames`` of the replay budget (a turn with nothing in it)."""
        async with self.turn(frames):
            pass

    def rendered(
        self,
        view_key: str,
        view: Callable[[StoredEvent], dict[str, Any] | None],
        event: StoredEvent,
    ) -> str | None:
        """A live event as ``view`` shows it, rendered once for all its subscribers."""
        key = (view_key, event.seq)
        if key in self._live:
            return self._live[key]
        text = render(view, event)
        _kept(self._live, key, text)
        return text

    def timed(self, view_key: str, table_id: str, event: StoredEvent, text: str) -> str:
        """A live frame's :func:`timing_prefix` (its commit and read times), built once
        per event and audience however many ``timing=1`` subscribers it has."""
        key = (view_key, event.seq)
        prefix = self._timed.get(key)
        if prefix is None:
            prefix = timing_prefix(
                text,
                metrics.COMMITS.get(table_id, event.seq),
                metrics.COMMITS.read_at(table_id, event.seq),
            )
            _kept(self._timed, key, prefix)
        return prefix

    def wire(self, live: Live, event: StoredEvent) -> bytes | None:
        """A live event's bytes for ``live``'s audience, built once per event, audience and
        timing: the whole frame, or with ``timing=1`` its payload up to the send time (the
        frame's header and :func:`stamp` are the subscriber's own). None: nothing to send."""
        key = (live.view_key, event.seq, live.timing)
        data = self._wire.get(key, MISSING)
        if data is MISSING:
            text = self.rendered(live.view_key, live.view, event)
            if text is None:
                data = None
            elif live.timing:
                data = self.timed(live.view_key, live.table_id, event, text).encode()
            else:
                payload = text.encode()
                data = frame_header(len(payload)) + payload
            _kept(self._wire, key, data)
        return data  # type: ignore[no-any-return]

    def go_live(self, queue: asyncio.Queue[StoredEvent | None], live: Live) -> None:
        """From now on the dispatch writes ``queue``'s events to ``live.socket`` itself
        whenever the subscriber is idle (see :meth:`_write`)."""
        self._direct[queue] = live

    def _write(self, live: Live, events: list[StoredEvent]) -> bool:
        """``events`` (of one commit, in order) written to an idle subscriber's socket on
        the dispatch, in one write, their send time stamped as it is: False if its socket
        cannot take them now (its task sends them)."""
        fresh = [event for event in events if event.seq > live.last]  # not replayed
        if not fresh:
            return True
        try:
            if not live.socket.ready():
                return False
            sent: list[int] = []
            frames: list[bytes] = []
            for event in fresh:
                data = self.wire(live, event)
                if data is not None:
                    frames.append(data)
                    sent.append(event.seq)
            now = time.monotonic()
            if live.timing:
                tail = stamp(now).encode()
                frames = [frame_header(len(d) + len(tail)) + d + tail for d in frames]
            if frames:
                live.socket.write(frames[0] if len(frames) == 1 else b"".join(frames))
        except Exception:  # its task renders and sends them, and fails as it would have
            log.exception("stream.direct_write_failed", table_id=live.table_id)
            return False
        live.last = fresh[-1].seq
        self.direct_frames += len(sent)
        self._sent.extend((live.table_id, seq, now) for seq in sent)
        return True

    def kept(self, view_key: str, seq: int) -> str | None:
        """A live event already rendered for ``view_key`` (:data:`MISSING` if not)."""
        return self._live.get((view_key, seq), MISSING)

    def keep(self, view_key: str, seq: int, text: str | None) -> None:
        """Keep a live event rendered for ``view_key`` for that view's other subscribers."""
        _kept(self._live, (view_key, seq), text)

    # -- admission -------------------------------------------------------------------------
    def admit(self, table_id: str, address: str | None) -> Ticket | str:
        """A ticket, or why not: anonymous subscribers are limited per table and address."""
        if address is not None:
            if self._public_per_table[table_id] >= self.max_public_per_table:
                return f"table {table_id} has {self.max_public_per_table} public subscribers"
            if self._public_per_address[address] >= self.max_public_per_address:
                return f"at most {self.max_public_per_address} public streams per address"
            self._public_per_table[table_id] += 1
            self._public_per_address[address] += 1
        return Ticket(table_id, address)

    def leave(self, ticket: Ticket) -> None:
        if ticket.address is None:
            return
        self._public_per_table[ticket.table_id] -= 1
        self._public_per_address[ticket.address] -= 1
        if self._public_per_address[ticket.address] <= 0:
            del self._public_per_address[ticket.address]

    # -- replay ------------------------------------------------------------------------------
    async def page(
        self,
        table_id: str,
        view_key: str,
        after_seq: int,
        load: Callable[[int], list[StoredEvent]],
        view: Callable[[StoredEvent], dict[str, Any] | None],
    ) -> list[tuple[int, str | None]]:
        """The rendered events of ``table_id`` after ``after_seq``, one page of them.

        Read on the replay pool; concurrent requests for the same page share one read,
        and full pages (which can never change) are kept for the next client.
        """
        key = (table_id, view_key, after_seq)
        cached = self._pages.get(key)
        if cached is not None:
            self._pages.move_to_end(key)
            return cached
        head = self._heads.get(table_id)
        tail = self._tails.get(key)
        if tail is not None:
            if tail[0] == head and time.monotonic() - tail[1] < TAIL_SECONDS:
                return tail[2]
            del self._tails[key]
        # A table that stopped running here (its lease lost) may be written by another
        # process meanwhile, and what a read found then is older than the log by the time
        # the table runs here again: kept and shared only from the table's next event here.
        here = head is None or head >= 0
        pending = self._loading.get(key)
        if pending is not None and pending[1] == head and here:
            # Shared only while nothing was published for the table since that read was
            # asked for: its query may have run before an event this caller's queue joined
            # too late for (published before it subscribed), and the page would lack it.
            return list(await asyncio.shield(pending[0]))

        def read() -> list[tuple[int, str | None]]:
            return [(e.seq, render(view, e)) for e in load(after_seq)]

        future = self.loop.run_in_executor(self.replay_pool, read)
        mine = (future, head)
        self._loading[key] = mine
        try:
            rendered = await asyncio.shield(future)
        finally:
            if self._loading.get(key) is mine:
                del self._loading[key]
        if len(rendered) >= REPLAY_PAGE:
            _kept(self._pages, key, rendered, PAGE_CACHE)
        elif self._heads.get(table_id) == head and here:
            # Nothing published for the table since before the read: the tail is current
            # until its head moves (an event committed but not yet published then reaches
            # a subscriber through its queue, which it joined before replaying).
            _kept(self._tails, key, (head, time.monotonic(), rendered), TAIL_CACHE)
        return rendered

    def close(self) -> None:
        self.replay_pool.shutdown(wait=False, cancel_futures=True)
        self._check_pool.shutdown(wait=False, cancel_futures=True)

    def publish(self, events: list[StoredEvent]) -> None:
        """Called from the committing thread; hands over to the loop in commit order."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self._dispatch, events)

    def _follows_seen(self, events: list[StoredEvent]) -> bool:
        """Whether ``events`` follow, with no gap, what the hub has seen, and nothing is
        held back for a check (a later batch must not overtake it)."""
        seen = self._seen_through
        if seen is None or self._checking or self._waiting or not events:
            return False
        return all(e.seq == seen + 1 + i for i, e in enumerate(events))

    def _dispatch(self, events: list[StoredEvent]) -> None:
        follows = self._follows_seen(events)
        if events:
            self._seen_through = max(self._seen_through or 0, events[-1].seq)
        gated = self._revoked_among is not None and bool(self._principal_of) and not follows
        held_back = False
        for run in _runs(events):  # each subscriber gets a run of a table's events at once
            event = run[0]
            if event.type == REVOKED:  # before any later event reaches its streams
                self._end_streams_of(str(event.payload.get("name")))
            table_id = event.table_id
            self._heads[table_id] = run[-1].seq
            for queue in list(self._subscribers.get(table_id, ())):
                if gated and queue in self._principal_of:
                    held_back = True  # a principal's stream: after the revocation check
                    continue
                self._deliver(table_id, queue, run)
        self._observe_sent()
        if held_back:
            self._waiting.extend(events)
            if not self._checking:
                self._start_check()

    def _observe_sent(self) -> None:
        """The commit → subscriber metric of the frames the hub wrote, after the last."""
        if self._sent:
            sent, self._sent = self._sent, []
            metrics.delivered_at(sent)

    def _deliver(
        self,
        table_id: str,
        queue: asyncio.Queue[StoredEvent | None],
        events: list[StoredEvent],
    ) -> None:
        live = self._direct.get(queue)
        if live is not None:
            if live.idle and not queue.qsize() and self._write(live, events):
                return
            live.idle = False  # its task sends these and the rest, until it waits again
        for event in events:
            if queue.qsize() >= QUEUE_LIMIT:
                # A consumer this far behind is cut off; it resumes from its last seq.
                self._subscribers[table_id].discard(queue)
                queue.put_nowait(None)
                log.warning("stream.subscriber_dropped", table_id=table_id)
                return
            queue.put_nowait(event)

    def _end_streams_of(self, principal: str) -> None:
        for queue in self._holders.pop(principal, set()):
            self._principal_of.pop(queue, None)
            self._revoked.add(queue)
            self._subscribers_discard(queue)  # nothing is queued after its end
            queue.put_nowait(None)

    def _start_check(self) -> None:
        """One read of the open streams' principals for every batch of events committed
        before it starts: the events it covers reach those streams only after it, and
        the streams of a principal it finds revoked end first (4401)."""
        assert self._revoked_among is not None
        self._covered, self._waiting = self._waiting, []
        self._checking = True
        names = frozenset(self._holders)
        future = self.loop.run_in_executor(self._check_pool, self._revoked_among, names)
        future.add_done_callback(self._checked)

    def _checked(self, future: asyncio.Future[set[str]]) -> None:
        self._checking = False
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            # The database did not answer: nobody is known to be allowed still, so the
            # principals' streams end (they reconnect, and authenticate again).
            log.warning("stream.revocation_check_failed", error=str(error))
            for queue in list(self._principal_of):
                self._subscribers_discard(queue)
                queue.put_nowait(None)
            self._covered = []
        else:
            for name in future.result():
                self._end_streams_of(name)
        covered, self._covered = self._covered, []
        for event in covered:
            for queue in list(self._subscribers.get(event.table_id, ())):
                if queue in self._principal_of:
                    self._deliver(event.table_id, queue, [event])
        self._observe_sent()
        if self._waiting:
            if self._principal_of:
                self._start_check()
            else:
                self._waiting = []

    def _subscribers_discard(self, queue: asyncio.Queue[StoredEvent | None]) -> None:
        for queues in self._subscribers.values():
            queues.discard(queue)

    def subscribe(self, table_id: str) -> asyncio.Queue[StoredEvent | None]:
        queue: asyncio.Queue[StoredEvent | None] = asyncio.Queue()
        self._subscribers[table_id].add(queue)
        return queue

    def end(self, table_id: str) -> None:
        """The table stopped running in this process (handed over): its subscribers are
        closed so they resume from their last seq wherever the table runs now."""
        self._stops -= 1
        self._heads[table_id] = self._stops  # no read begun before it is kept or shared
        for key in [k for k in self._tails if k[0] == table_id]:
            del self._tails[key]  # another process may add to its log from now on
        for queue in self._subscribers.pop(table_id, set()):
            queue.put_nowait(None)

    def hold(self, principal: str, queue: asyncio.Queue[StoredEvent | None]) -> None:
        """``queue`` is a stream ``principal``'s token opened: its revocation (logged in
        this process, or found by the check before each batch of events) ends it before
        the next event."""
        self._holders[principal].add(queue)
        self._principal_of[queue] = principal

    def revoked(self, queue: asyncio.Queue[StoredEvent | None]) -> bool:
        """Whether the token that opened this stream has been revoked since."""
        return queue in self._revoked

    async def still_held(self, queue: asyncio.Queue[StoredEvent | None]) -> bool:
        """Whether the token that opened the stream ``queue`` still holds, asked of the
        database (one read by primary key, on the replay's threads): a replay's pages come
        from the log, not from the batches the hub checks, so between its pages a token
        revoked by another process (the CLI, another serve) would go unseen. A stream found
        revoked ends (4401); if the database does not answer, the stream ends too (it
        reconnects and authenticates again). The live path never waits on this."""
        if queue in self._revoked:
            return False
        principal = self._principal_of.get(queue)
        if principal is None or self._revoked_among is None:
            return True
        names = frozenset({principal})
        try:
            found = await self.loop.run_in_executor(self.replay_pool, self._revoked_among, names)
        except Exception as exc:  # no answer: nobody is known to be allowed still
            log.warning("stream.revocation_check_failed", error=str(exc))
            return False
        if principal in found:
            self._end_streams_of(principal)
        return queue not in self._revoked

    def release(self, principal: str | None, queue: asyncio.Queue[StoredEvent | None]) -> None:
        if principal is not None:
            holders = self._holders.get(principal)
            if holders is not None:
                holders.discard(queue)
                if not holders:
                    del self._holders[principal]
        self._principal_of.pop(queue, None)
        self._revoked.discard(queue)

    def unsubscribe(self, table_id: str, queue: asyncio.Queue[StoredEvent | None]) -> None:
        self._subscribers[table_id].discard(queue)
        self._direct.pop(queue, None)
