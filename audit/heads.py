"""The log's head as the other processes writing it leave it (PostgreSQL).

A card commits in one round trip when its process knows the log's head
(``EventStore.lock(one_trip=True)``); a process learns the head from its own commits,
and in a studio of several processes sharing one log the other processes' commits move
it meanwhile (the trip then finds another head and links its events again: two trips).
So every commit that appends sends ``pg_notify`` with the new head in its own round trip
(:func:`notify_sql`), and one :class:`HeadFeed` per process listens and hands each head
it hears to the event store, which keeps the highest. What is heard is only a hint: the
commit's trip checks the head under the log's lock, so a notification late, lost or wrong
costs a second round trip, never a wrong link.

The channel is named after the log's table (its oid), as the log's advisory lock is, so
the log of another schema on the same server (a test's or a benchmark's scratch schema)
is never heard.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import threading
import weakref
from collections.abc import Callable
from typing import Any

import structlog
from sqlalchemy import Engine

log = structlog.get_logger(__name__)

CHANNEL_PREFIX = "livetable_head_"
# The channel of the log this connection's search path finds, as SQL.
CHANNEL_SQL = f"'{CHANNEL_PREFIX}' || 'audit_events'::regclass::oid"
_PAYLOAD = re.compile(r"(\d+) ([0-9a-f]{64})")
_HEAD_SQL = "SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1"


def notify_sql(seq: int, hash_: str) -> str:
    """The statement announcing the head ``(seq, hash_)`` to the log's listeners: part of
    the transaction that appends it, delivered (by the server) only once it commits."""
    if _PAYLOAD.fullmatch(f"{int(seq)} {hash_}") is None:
        raise ValueError(f"not a head: {seq} {hash_!r}")
    return f"SELECT pg_notify({CHANNEL_SQL}, '{int(seq)} {hash_}')"


def parse(payload: str) -> tuple[int, str] | None:
    """The head a notification gives, or None for anything else."""
    found = _PAYLOAD.fullmatch(payload)
    return (int(found[1]), found[2]) if found else None


class HeadFeed:
    """One connection (autocommit, ``LISTEN``) on a daemon thread, handing each head it
    hears to ``learn``. It connects again after a failure (waits doubling from
    ``retry_seconds`` to ``max_retry_seconds``), and on each connection reads the head once
    after its ``LISTEN``, so a head committed while it was away is not missed. It ends
    with :meth:`close`, or by itself once the owner of ``learn`` is gone.

    ``learn`` is held weakly when it is a bound method: a feed never keeps its event
    store alive."""

    def __init__(
        self,
        engine: Engine,
        learn: Callable[[int, str], None],
        *,
        retry_seconds: float = 0.2,
        max_retry_seconds: float = 5.0,
    ) -> None:
        if engine.dialect.name != "postgresql":
            raise ValueError("only PostgreSQL sends heads")
        args, kwargs = engine.dialect.create_connect_args(engine.url)
        self._connect_args: tuple[list[Any], dict[str, Any]] = (list(args), dict(kwargs))
        self._learn: Callable[[], Callable[[int, str], None] | None]
        if hasattr(learn, "__self__"):
            self._learn = weakref.WeakMethod(learn)
        else:
            self._learn = lambda: learn
        self.retry_seconds = retry_seconds
        self.max_retry_seconds = max_retry_seconds
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.backend_pid: int | None = None  # of the listening connection, while connected
        self.connections = 0  # connections made that listen (the first and each after a failure)
        self.heard = 0  # heads heard
        self._thread = threading.Thread(target=self._run, name="livetable-head-feed", daemon=True)

    def start(self) -> HeadFeed:
        self._thread.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        """Stop listening and close the connection (wakes the thread at once)."""
        if self._stop.is_set():
            return
        self._stop.set()
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if self._thread.is_alive():
            return  # still connecting: it ends once it looks, its pipe with it
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def wait_listening(self, connections: int = 1, timeout: float = 10.0) -> bool:
        """Wait until the feed listens on its ``connections``-th connection (tests)."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self.connections >= connections and self.backend_pid is not None,
                timeout,
            )

    def _hand(self, seq: int, hash_: str) -> bool:
        learn = self._learn()
        if learn is None:
            return False
        learn(seq, hash_)
        return True

    def _run(self) -> None:
        wait = self.retry_seconds
        while not self._stop.is_set():
            try:
                if not self._listen():
                    return  # closed, or nobody left to tell
                wait = self.retry_seconds
            except Exception as exc:  # a lost connection, a server restarting: again
                log.warning("audit.head_feed_lost", error=f"{type(exc).__name__}: {exc}"[:300])
            with self._changed:
                self.backend_pid = None
                self._changed.notify_all()
            if self._stop.wait(wait):
                return
            wait = min(wait * 2, self.max_retry_seconds)

    def _listen(self) -> bool:
        """One connection's life: False when the feed is to end, returns normally or
        raises when the connection failed."""
        import psycopg

        args, kwargs = self._connect_args
        kwargs = {**kwargs, "autocommit": True}
        kwargs.setdefault("application_name", "livetable head feed")
        with psycopg.connect(*args, **kwargs) as conn:
            channel = conn.execute(f"SELECT {CHANNEL_SQL}").fetchone()
            assert channel is not None
            conn.execute(f'LISTEN "{channel[0]}"')
            head = conn.execute(_HEAD_SQL).fetchone()  # after LISTEN: nothing missed between
            if head is not None and not self._hand(head[0], head[1]):
                return False
            with self._changed:
                self.backend_pid = conn.info.backend_pid
                self.connections += 1
                self._changed.notify_all()
            fd = conn.fileno()
            while not self._stop.is_set():
                ready, _, _ = select.select([fd, self._wake_r], [], [])
                if self._wake_r in ready:
                    return False
                if conn.broken or conn.closed:
                    raise ConnectionError("the listening connection broke")
                for note in conn.notifies(timeout=0):
                    found = parse(note.payload)
                    if found is None:
                        continue
                    self.heard += 1
                    if not self._hand(*found):
                        return False
        return False
