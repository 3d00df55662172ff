"""A table's commands, one at a time: on the table's own thread, or on the thread that
has the command in hand when that thread is idle.

Every command of a table runs on one thread of its own, first in first out (a card must
not queue for the loop's shared threads behind stream authentications or another table's
command). A reader's card used to be handed to that thread by the reader's thread, which
then went back to reading: the command thread had to be woken and scheduled on a core,
and then to take the interpreter, before the card's commit could start (0.12 ms at the
median, 1 ms at p90 and 5-25 ms at p99 in a loaded studio, traced per card). When the
command thread has nothing to do, the reader's thread, already running and holding the
interpreter, can run the card itself: :meth:`CommandThread.run_here`. It does so only when
no command is running or waiting for the thread (the slot is free and nothing is
queued), so a command never overtakes one handed over before it; whatever the command
thread is given meanwhile waits for the slot and runs after it.

The trade: while a card commits on the reader's thread the shoe's port is not read, and a
shoe whose frame goes unacknowledged gives it up after a second of retransmissions (`E9`,
a hardware alarm), where the table's own thread would have let the reader go on
acknowledging and queued the cards. So a run here that took longer than
:data:`SLOW_SECONDS` (a database stalling) sends every command to the table's thread for
the next :data:`COOL_SECONDS`: a sick database costs the shoe at most the one card that
found it stalling, never a card after it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

SLOW_SECONDS = 0.25
"""A run on a caller's thread this long means the database is in trouble (a card's commit
takes milliseconds); the shoe retransmits every 200 ms and gives up after five."""
COOL_SECONDS = 30.0
"""How long after such a run every command goes to the table's own thread."""


class CommandThread:
    """One table's commands, one at a time, in the order handed over."""

    def __init__(self, name: str) -> None:
        # Not shut down: a request still holding the table may run a command after the
        # table stopped (the lease refuses it if the table moved); the idle thread ends
        # with the process.
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._slot = threading.Lock()  # held by whichever thread runs a command
        self._guard = threading.Lock()
        self._queued = 0  # handed to the thread and not started yet
        self._here_off_until = 0.0  # monotonic: no runs on a caller's thread before it

    def submit(self, run: Callable[..., T], *args: Any) -> Future[T]:
        """``run(*args)`` on the table's thread, after everything handed over before."""
        with self._guard:
            self._queued += 1
        try:
            return self._executor.submit(self._in_slot, run, args)
        except BaseException:
            with self._guard:
                self._queued -= 1
            raise

    def _in_slot(self, run: Callable[..., T], args: tuple[Any, ...]) -> T:
        with self._slot:  # (another thread may be running one here: it goes first)
            # Counted as waiting until it holds the slot: a thread asking to run one in
            # its place meanwhile is refused, so nothing overtakes what was handed over.
            with self._guard:
                self._queued -= 1
            return run(*args)

    def run_here(self, run: Callable[..., Any], *args: Any) -> bool:
        """Run ``run(*args)`` on the calling thread now if the table's thread has nothing
        running or waiting and no run here was slow lately; False (nothing run)
        otherwise. Exceptions propagate."""
        if time.monotonic() < self._here_off_until:
            return False
        with self._guard:
            if self._queued:
                return False
        if not self._slot.acquire(blocking=False):
            return False
        started = time.monotonic()
        try:
            run(*args)
        finally:
            ended = time.monotonic()
            if ended - started > SLOW_SECONDS:
                self._here_off_until = ended + COOL_SECONDS
            self._slot.release()
        return True
