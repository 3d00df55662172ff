"""The shoe reader: a serial port (anything ``serial_for_url`` opens) → reader events.

One background thread owns the port: it reads, feeds the dialect's sans-I/O session,
writes the ACK / NAK the session asks for, and hands events to the asyncio side through
a queue (or, with :meth:`ShoeReader.hand_off`, to a consumer's own thread without the
event loop). Blocking serial I/O stays off the event loop, and the thread stops promptly on
:meth:`ShoeReader.close` (reads time out every ``read_timeout`` seconds).

When the device disappears (USB unplugged, pseudo-terminal closed, socket dropped) or a
`framed` shoe goes silent for ``offline_timeout`` seconds, the reader reports
:class:`ReaderOffline`, closes the port and reopens it with exponential back-off
(``reconnect_initial`` doubling up to ``reconnect_max``; back to the start once a
connection carried valid traffic again).

Closing the reader emits a last :class:`ReaderOffline` (reason ``reader closed``) if the
shoe was online, then ends :meth:`ShoeReader.events`.

Commands return whether the frame went on the wire now; none of them raises because
the shoe is away. :meth:`ShoeReader.lock` / :meth:`ShoeReader.unlock` record what the
host wants and send it when connected; after every (re)connection that brings a shoe
online (e.g. a HLO after a reboot, which makes the shoe forget LCK) the reader sends it
again. A card read while the host believes the shoe locked is still delivered, preceded
by a ``HardwareWarning(code="card_while_locked")``; the table service decides what to do.
A card the shoe re-sends after a reconnection, that may already have been delivered, is
preceded by ``HardwareWarning(code="possible_duplicate_after_reconnect")`` (rule in
:mod:`shoe_reader.framed_session`; ``resend_window`` tunes it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import serial
import structlog

from shoe_reader.ascii_protocol import AsciiSession
from shoe_reader.events import ReaderEvent, ReaderOnline
from shoe_reader.framed_session import RESEND_WINDOW, FramedSession
from shoe_reader.session import DialectSession, Stamp

log = structlog.get_logger(__name__)

Dialect = Literal["framed", "ascii"]
DIALECTS: tuple[Dialect, ...] = ("framed", "ascii")


class ReaderError(Exception):
    """Base of the reader's refusals."""


class UnknownDialectError(ReaderError, ValueError):
    def __init__(self, dialect: str) -> None:
        super().__init__(f"unknown dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")
        self.dialect = dialect


class ReaderClosedError(ReaderError):
    """The reader was closed; it cannot be started or commanded again."""


class ReaderStateError(ReaderError):
    """The reader was used in the wrong order (events before start, started twice)."""


_CLOSED = object()

POSIX_PORT: type[serial.SerialBase] | None
"""The port class ``serial_for_url`` opens for a device path on a POSIX system."""
try:
    from serial.serialposix import Serial as _PosixSerial

    POSIX_PORT = _PosixSerial
except ImportError:  # (not on Windows: every port is read through pyserial there)
    POSIX_PORT = None

READ_SIZE = 4096
"""The most one read of a POSIX port takes: many frames (a frame is at most 64 bytes)."""


class ShoeReader:
    """Async context manager and async iterator of :class:`ReaderEvent`."""

    def __init__(
        self,
        url: str,
        dialect: Dialect,
        reader_id: str,
        baudrate: int = 9600,
        *,
        offline_timeout: float = 3.0,
        read_timeout: float = 0.05,
        reconnect_initial: float = 0.1,
        reconnect_max: float = 5.0,
        write_timeout: float = 1.0,
        exclusive: bool = True,
        resend_window: float = RESEND_WINDOW,
    ) -> None:
        if dialect not in DIALECTS:
            raise UnknownDialectError(dialect)
        self.url = url
        self.dialect: Dialect = dialect
        self.reader_id = reader_id
        self.baudrate = baudrate
        self.offline_timeout = offline_timeout
        self.read_timeout = read_timeout
        self.reconnect_initial = reconnect_initial
        self.reconnect_max = reconnect_max
        self.write_timeout = write_timeout
        self.exclusive = exclusive
        """Lock the port (flock) so a second reader cannot open it and steal bytes."""
        self.session: DialectSession = (
            FramedSession(reader_id, offline_timeout=offline_timeout, resend_window=resend_window)
            if dialect == "framed"
            else AsciiSession(reader_id)
        )
        self.connections = 0
        """How many times the port was opened (1 + reconnections)."""
        self.open_failures = 0
        """How many attempts to open the port failed (each followed by a back-off wait)."""
        self._lock = threading.RLock()
        self._port: serial.SerialBase | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._take: Callable[[list[ReaderEvent]], None] | None = None
        self._closed = False

    def hand_off(self, take: Callable[[list[ReaderEvent]], None]) -> None:
        """Give every event to ``take``, called on the reader's own thread in the order
        read, instead of queueing it for :meth:`events` (which then yields nothing).

        For a consumer that runs events on a thread of its own (a table's command
        thread), or runs one itself here: an event queued for the event loop waits there
        behind whatever else the loop is doing before the consumer even sees it. ``take``
        is called once the shoe's reply to what was read (its ACK) is on the wire and
        with the reader's lock released, so it may run a short piece of work (a card's
        commit) on this thread; the port is not read meanwhile, so nothing long (the shoe
        sends its next frame only once its last one is acknowledged, and goes on without
        a host after a second of retransmissions). It must not raise. Set before
        :meth:`start`, so that no event went the other way first."""
        if self._thread is not None or self._closed:
            raise ReaderStateError("hand the events off before the reader starts")
        self._take = take

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> ShoeReader:
        if self._closed:
            raise ReaderClosedError("the reader was closed")
        if self._thread is not None:
            raise ReaderStateError("the reader is already started")
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(
            target=self._run, name=f"shoe-reader-{self.reader_id}", daemon=True
        )
        self._thread.start()
        return self

    async def close(self) -> None:
        """Stop the I/O thread, close the port, end :meth:`events`. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        with self._lock:
            port = self._port
        if port is not None:
            with contextlib.suppress(Exception):
                # Only the POSIX and Windows ports can cancel a blocking read; another
                # raises AttributeError, suppressed here like any error on closing.
                port.cancel_read()  # type: ignore[attr-defined]
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 5.0)
        self._queue.put_nowait(_CLOSED)

    async def __aenter__(self) -> ShoeReader:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __aiter__(self) -> AsyncIterator[ReaderEvent]:
        return self.events()

    async def events(self) -> AsyncIterator[ReaderEvent]:
        """Every reader event in arrival order, until :meth:`close`. Meant for one consumer
        (two would share the events between them); events wait in an unbounded queue, so a
        slow consumer delays them but never loses one."""
        if self._thread is None and not self._closed:
            raise ReaderStateError("start the reader (or use `async with`) before reading events")
        while True:
            item = await self._queue.get()
            if item is _CLOSED:
                self._queue.put_nowait(_CLOSED)  # later iterators end too
                return
            yield item

    # ------------------------------------------------------------------ state
    @property
    def locked(self) -> bool | None:
        """Lock state from the shoe's last heartbeat (None: no heartbeat yet, or ascii)."""
        return self.session.shoe_locked

    @property
    def host_locked(self) -> bool | None:
        """What the host last asked for with :meth:`lock` / :meth:`unlock`."""
        return self.session.host_locked

    @property
    def online(self) -> bool:
        return self.session.online

    @property
    def connected(self) -> bool:
        return self._port is not None

    # ------------------------------------------------------------------ commands
    async def lock(self) -> bool:
        """LCK: the shoe refuses to release cards. Returns whether it went on the wire now."""
        return await self._command("LCK")

    async def unlock(self) -> bool:
        """ULK: the shoe shows its deal light. Returns whether it went on the wire now."""
        return await self._command("ULK")

    async def request_status(self) -> bool:
        """STA: ask for an immediate heartbeat (and so a fresh :attr:`locked`). Returns
        False when the port is not open (the reader sends STA itself on every connection)."""
        if self._port is None:
            log.info("shoe not connected; STA not sent", url=self.url)
            return False
        return await self._command("STA")

    async def _command(self, frame_type: str) -> bool:
        if self.dialect == "ascii":
            log.info("ascii shoe takes no commands; ignored", command=frame_type, url=self.url)
            return False
        return await asyncio.to_thread(self._send_command, frame_type)

    def _send_command(self, frame_type: str) -> bool:
        with self._lock:
            frame = self.session.host_frame(frame_type)
            port = self._port
            if port is None:
                log.info("shoe not connected; command kept for reconnection", command=frame_type)
                return False
            try:
                port.write(frame)
            except (serial.SerialException, OSError) as exc:
                log.warning("command not sent", command=frame_type, error=str(exc))
                return False
            log.info("command sent", command=frame_type, reader_id=self.reader_id)
            return True

    # ------------------------------------------------------------------ I/O thread
    def _emit(self, events: list[ReaderEvent]) -> None:
        if not events or self._loop is None:
            return
        if self._take is not None:
            try:
                self._take(events)
            except Exception:  # the consumer's bug must not stop the port being read
                log.exception("shoe reader: events not taken", reader_id=self.reader_id)
            return
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is listening
            self._loop.call_soon_threadsafe(self._deliver, events)

    def _deliver(self, events: list[ReaderEvent]) -> None:
        for event in events:
            self._queue.put_nowait(event)

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            try:
                port = serial.serial_for_url(
                    self.url,
                    baudrate=self.baudrate,
                    timeout=self.read_timeout,
                    write_timeout=self.write_timeout,
                    exclusive=self.exclusive,
                )
            except (serial.SerialException, OSError, ValueError) as exc:
                delay = self._backoff(attempt)
                attempt += 1
                self.open_failures += 1
                report = log.warning if attempt == 1 else log.info  # once per outage is enough
                report("shoe port not available", url=self.url, error=str(exc), retry_in=delay)
                self._stop.wait(delay)
                continue
            self.connections += 1
            log.info("shoe port open", url=self.url, connection=self.connections)
            with self._lock:
                self._port = port
                self._emit(self.session.connection_made(Stamp.now()))
                # Ask for a heartbeat at once: a live shoe proves itself without waiting.
                hello = self.session.host_frame("STA") if self.dialect == "framed" else b""
            if hello and not self._write(port, hello):
                had_traffic, reason = False, "device lost: write failed"
            else:
                try:
                    had_traffic, reason = self._pump(port)
                except Exception as exc:  # a driver bug must not leave a dead reader behind
                    log.exception("shoe reader failed; reconnecting", url=self.url)
                    had_traffic, reason = False, f"reader error: {exc!r}"
            with self._lock:
                self._port = None
                with contextlib.suppress(Exception):
                    port.close()
                self._emit(self.session.connection_lost(reason, Stamp.now()))
            if self._stop.is_set():
                break
            attempt = 0 if had_traffic else attempt
            delay = self._backoff(attempt)
            attempt += 1
            log.warning("shoe connection lost", url=self.url, reason=reason, retry_in=delay)
            self._stop.wait(delay)
        log.info("shoe reader stopped", url=self.url)

    def _backoff(self, attempt: int) -> float:
        factor: int = 2 ** min(attempt, 30)  # int ** int is typed Any (a negative power is a float)
        return min(self.reconnect_max, self.reconnect_initial * factor)

    def _pump(self, port: serial.SerialBase) -> tuple[bool, str]:
        """Read until the device goes away or falls silent; returns (had traffic, reason)."""
        had_traffic = False
        read = _reads_of(port, self.read_timeout)
        while not self._stop.is_set():
            try:
                data = read()
            except (serial.SerialException, OSError) as exc:
                return had_traffic, f"device lost: {exc}"
            stamp = Stamp.now()
            events: list[ReaderEvent] = []
            lost = False
            with self._lock:
                if data:
                    events, reply = self.session.receive(data, stamp)
                    if any(isinstance(e, ReaderOnline) for e in events):
                        had_traffic = True
                        reply += self._reassert_lock()
                    lost = bool(reply) and not self._write(port, reply)
                if not lost:
                    events = [*events, *self.session.poll(stamp)]
            # The shoe has its ACK and the reader's lock is free (a command to the shoe
            # need not wait) before the events are handed on: a consumer may run one
            # here (see hand_off), where a thread of its own would first have to be woken.
            self._emit(events)
            if lost:
                return had_traffic, "device lost: write failed"
            if self.session.silent_for(stamp.monotonic) > self.offline_timeout:
                return had_traffic, f"no heartbeat for {self.offline_timeout:g} s"
        return had_traffic, "reader closed"

    def _reassert_lock(self) -> bytes:
        wanted = self.session.host_locked
        if wanted is None:
            return b""
        return self.session.host_frame("LCK" if wanted else "ULK")

    def _write(self, port: serial.SerialBase, data: bytes) -> bool:
        try:
            _write_all(port, data)
        except (serial.SerialException, OSError) as exc:
            log.warning("write to shoe failed", url=self.url, error=str(exc))
            return False
        return True


def _reads_of(port: serial.SerialBase, timeout: float) -> Callable[[], bytes]:
    """How the reader's thread reads ``port``: whatever has arrived (b"" after
    ``timeout`` seconds of silence, or once :meth:`ShoeReader.close` cancels the read).

    A POSIX port (a device, a pseudo-terminal) is waited on and read directly: one
    ``select`` and one ``read`` of everything waiting. pyserial's own ``read`` needs the
    size first (``in_waiting``), so a frame took a one-byte read, then the count, then a
    second wait and read of the rest: five system calls, and on each the thread let go of
    the interpreter and waited to have it back behind the process's other threads (the
    event loop, the tables' command threads) before the card was even handed on. Other
    ports (``loop://``, ``socket://``, ``rfc2217://``) are read through pyserial as
    before."""
    fd = getattr(port, "fd", None)
    abort = getattr(port, "pipe_abort_read_r", None)
    posix = POSIX_PORT is not None and type(port) is POSIX_PORT
    if not (posix and isinstance(fd, int) and isinstance(abort, int)):
        # Every port class has in_waiting; serial_for_url is typed as returning their
        # base class, which does not declare it.
        return lambda: port.read(port.in_waiting or 1)  # type: ignore[attr-defined]
    waited = [fd, abort]

    def read() -> bytes:
        try:
            ready, _, _ = select.select(waited, [], [], timeout)
            if abort in ready:  # close(): cancel_read
                os.read(abort, 1000)
                return b""
            if not ready:
                return b""
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:  # (EAGAIN: nothing after all; pyserial ignores it too)
            return b""
        except InterruptedError:
            return b""
        if not data:
            # As pyserial says it: on Linux a device that went away reads as ready and empty.
            raise serial.SerialException(
                "device reports readiness to read but returned no data "
                "(device disconnected or multiple access on port?)"
            )
        return data

    return read


def _write_all(port: serial.SerialBase, data: bytes) -> None:
    """``data`` on the wire: straight to a POSIX port's descriptor (a frame fits its
    buffer, so one ``write`` sends it, where pyserial's also waits on ``select`` for the
    port to be writable again), the rest, if any, through pyserial (its write timeout)."""
    fd = getattr(port, "fd", None)
    if POSIX_PORT is not None and type(port) is POSIX_PORT and isinstance(fd, int):
        try:
            sent = os.write(fd, data)
        except BlockingIOError:
            sent = 0
        if sent == len(data):
            return
        data = data[sent:]
    port.write(data)


def open_reader(
    url: str,
    dialect: Dialect,
    reader_id: str,
    baudrate: int = 9600,
    **options: Any,
) -> ShoeReader:
    """A reader for ``url`` (a device path or any pyserial URL); start it with ``async with``.

    ``options``: ``offline_timeout`` (3 s), ``read_timeout``, ``reconnect_initial``,
    ``reconnect_max``, ``write_timeout``, ``exclusive`` (True: a second reader of the
    same device cannot open it, rather than silently sharing its bytes).
    """
    return ShoeReader(url, dialect, reader_id, baudrate, **options)
