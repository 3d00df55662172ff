"""A serial shoe's events from its reader's thread straight to its table's command thread.

A card read by the shoe's reader thread used to reach the table through the event loop:
the reader's thread handed it to the loop, the loop (once it had served everything ahead
of it: HTTP requests, stream frames, the NATS client) handed it to the table's command
thread, which committed it. In a loaded studio that loop turn was 0.25 ms at the median
and up to 16 ms at the p99, for nothing: the card needs the loop only after its commit.

Here the reader's thread puts each batch of events on the table's command thread (one
thread, first in first out, the same that runs every other command of the table), which
runs a card there and then, as the loop would have had it run; or, when that thread has
nothing running or waiting, the reader's thread runs the card itself in its place, once
the shoe has its ACK (:mod:`command_thread`: no thread to wake). Everything else goes back
to the loop, in order: what is not a card (a fault, the shoe online again), and every
event, card or not, while the table cannot take one directly (its database away, reader
events kept for later, events already handed back and not yet done, or a card that
failed): the loop then runs them one after another as before, so no event ever overtakes
an earlier one. The loop also does what follows a card's commit (its timers, the shoe's
lock, metrics) when the command thread tells it, after the streams have had the events
(the log hands them over at the commit).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from table_service.table import commands as c
from table_service.table.reader_pump import reader_command


class LaneTable(Protocol):
    """What the lane needs of its table (``TableService``)."""

    table_id: str
    reader_seen_at: float | None

    def on_command_thread(self, run: Callable[..., Any], *args: Any) -> None: ...

    def run_here(self, run: Callable[..., Any], *args: Any) -> bool: ...

    def takes_reader_events(self) -> bool: ...

    def run_reader_command(self, command: c.Command, actor: str, event: Any) -> Any: ...

    def reader_command_done(
        self, event: Any, command: c.Command, outcome: Any, seconds: float
    ) -> None: ...

    def command_failed(self, command: c.Command, exc: Exception, seconds: float) -> Exception: ...

    async def on_reader_event(
        self, event: Any, *, actor: str, failed: Exception | None = None
    ) -> Any: ...


@dataclass(frozen=True)
class Failed:
    """A card the command thread ran and that failed: the loop decides what that means
    (the table paused, the card kept, an incident), as if it had run it itself."""

    event: Any
    command: c.Command
    error: Exception
    seconds: float


class ReaderLane:
    """The path of one reader's events into one table (see the module's doc)."""

    def __init__(self, table: LaneTable, actor: str) -> None:
        self.table = table
        self.actor = actor
        self.loop = asyncio.get_running_loop()
        self._back: asyncio.Queue[Any] = asyncio.Queue()  # handed back to the loop, in order
        self._guard = threading.Lock()
        self._pending = 0  # handed back and not yet done on the loop
        self.direct = 0  # cards run on the command thread straight from the reader
        self.handed_back = 0  # events the loop ran

    # -- the reader's thread ------------------------------------------------------------
    def take(self, events: list[Any]) -> None:
        """The reader read these (its thread, the shoe's ACK sent): run here in the
        command thread's place if that thread is idle, else to it, in order."""
        self.table.reader_seen_at = time.monotonic()
        if self.table.run_here(self._run, events):
            return
        with contextlib.suppress(RuntimeError):  # the process is shutting down
            self.table.on_command_thread(self._run, events)

    # -- the table's command thread (or the reader's, in its place) ---------------------
    def _run(self, events: list[Any]) -> None:
        for event in events:
            command = reader_command(event)
            if not isinstance(command, c.CardScanned) or not self._may_run_here():
                self._hand_back(event)
                continue
            started = time.perf_counter()
            try:
                outcome = self.table.run_reader_command(command, self.actor, event)
            except Exception as exc:
                self._hand_back(Failed(event, command, exc, time.perf_counter() - started))
                continue
            self.direct += 1
            seconds = time.perf_counter() - started
            self._to_loop(self._after_the_frames, event, command, outcome, seconds)

    def _may_run_here(self) -> bool:
        """Nothing before this card is still waiting for the loop, and the table takes
        commands (it may be paused by the loop meanwhile: the card then fails and goes
        back to the loop, which keeps it, as it keeps any card refused "not now")."""
        with self._guard:
            if self._pending:
                return False
        return self.table.takes_reader_events()

    def _hand_back(self, item: Any) -> None:
        with self._guard:
            self._pending += 1
        if not self._to_loop(self._back.put_nowait, item):
            with self._guard:
                self._pending -= 1

    def _to_loop(self, callback: Any, *args: Any) -> bool:
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            return False
        return True

    # -- the event loop -----------------------------------------------------------------
    def _after_the_frames(self, *done: Any) -> None:
        """The card's after-commit work (timers, the shoe's lock, metrics), queued behind
        what the loop has to do now: the hub's dispatch of the card's events, handed over
        at the commit, may have just woken its subscribers, whose frames go first."""
        self.loop.call_soon(self.table.reader_command_done, *done)

    async def run(self) -> None:
        """Run what was handed back, one after another in order, until cancelled."""
        while True:
            item = await self._back.get()
            try:
                if isinstance(item, Failed):
                    error = self.table.command_failed(item.command, item.error, item.seconds)
                    await self.table.on_reader_event(item.event, actor=self.actor, failed=error)
                else:
                    await self.table.on_reader_event(item, actor=self.actor)
            finally:
                self.handed_back += 1
                with self._guard:
                    self._pending -= 1
