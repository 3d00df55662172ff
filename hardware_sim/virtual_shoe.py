"""A virtual card shoe on a pseudo-terminal, speaking either dialect from the device side.

It exists so that the reader, the table service and the demo are exercised through the
real serial path: the same bytes, the same timing problems and the same faults a real
shoe produces. It runs its own thread, so it works from synchronous and async code.

Behaviour of the `framed` shoe (specs/shoe-serial-protocol.md):

* ``HLO`` with SEQ 000 whenever a host connects (opens the port: as soon as it sends its
  first frame, or after ``HOST_SETTLE`` seconds) and after a reboot;
* ``HBT`` every ``heartbeat`` seconds with ``L`` / ``U``, and at once on ``STA``, ``LCK``
  and ``ULK``;
* one acknowledged frame (CRD / CUT / UNR / EMP) in flight at a time: it is retransmitted
  with the same SEQ every ``retransmit_interval`` seconds (and at once on ``NAK``), at most
  ``max_retransmits`` times, then given up with ``ERR E9;No host``. Frames behind it,
  heartbeats included, wait, so SEQs go out in order;
* while no host has the port open the shoe holds its frames (the cards are not lost: they
  go out after the next HLO, with fresh SEQs);
* ``LCK`` makes :meth:`VirtualShoe.deal` refuse (:class:`ShoeLockedError`).

The `ascii` shoe sends one line per event, CR LF terminated, nothing acknowledged; rank
and suit order and the spelling of ten vary from card to card, as on deployed shoes.

Every transmission is recorded in :attr:`VirtualShoe.transmissions` with what the faults
did to it, so tests can tell exactly which frames the host could have seen.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Literal

import structlog

from hardware_sim.faults import FaultPlan, FaultSpec, parse_fault_spec
from hardware_sim.pty_link import PtyLink
from shoe_reader.framing import (
    ACKABLE_TYPES,
    HOST_TYPES,
    SHOE_TYPES,
    Frame,
    FrameParser,
    encode_frame,
    next_seq,
)
from table_service.rules.cards import CardError, parse_card, standard_deck

log = structlog.get_logger(__name__)

Dialect = Literal["framed", "ascii"]
CUT = "CUT"
TRANSMISSION_HISTORY = 100_000
"""Transmissions remembered: past twice this many, the oldest half is forgotten (a
long-running simulator must not grow forever). A list, not a deque: tests iterate it
while the shoe's thread appends."""
HOST_SETTLE = 0.2
"""Seconds after a host opens the port before the shoe talks, unless the host speaks first."""


class ShoeError(Exception):
    """Base of the virtual shoe's refusals."""


class ShoeLockedError(ShoeError):
    """The host locked the shoe (betting open): it will not release a card."""


class ShoeJammedError(ShoeError):
    """A card is jammed; :meth:`VirtualShoe.clear_jam` first."""


class ShoeNotRunningError(ShoeError):
    """The shoe is stopped (or rebooting / frozen) and cannot deal."""


class ShoeLoadError(ShoeError, ValueError):
    """An explicit shoe order that is not a list of card codes, or loaded too late."""


@dataclass(frozen=True, slots=True)
class Transmission:
    """One frame or line the shoe put on (or meant to put on) the wire."""

    seq: int | None
    type: str
    payload: str
    epoch: int
    """Incremented at every HLO: SEQs are only comparable within one epoch."""
    fate: str
    """intact, corrupted, dropped, duplicated, dribbled, noise (noise burst before it,
    frame itself intact) or offline (no host connected: not sent)."""
    data: bytes
    """The bytes of the frame as encoded (before any corruption)."""
    sent: float
    """time.monotonic() when the last byte was written."""

    @property
    def reached_host(self) -> bool:
        """The frame arrived intact at least once."""
        return self.fate in ("intact", "duplicated", "dribbled", "noise")


@dataclass
class _Outgoing:
    type: str
    payload: str
    line: bytes | None = None  # ascii: the line to send


@dataclass
class _InFlight:
    seq: int
    out: _Outgoing
    frame: bytes
    retries_left: int
    next_retry: float


class VirtualShoe:
    def __init__(
        self,
        dialect: Dialect = "framed",
        decks: int = 8,
        seed: int | None = None,
        cut_depth: int = 52,
        faults: str | FaultSpec | None = None,
        rate: float | None = None,
        heartbeat: float = 1.0,
        *,
        retransmit_interval: float = 0.2,
        max_retransmits: int = 5,
        outage: float = 1.0,
        info: str = "LTSIM;1.0;SIM0001",
        link_path: str | None = None,
    ) -> None:
        if dialect not in ("framed", "ascii"):
            raise ShoeError(f"unknown dialect {dialect!r}; expected framed or ascii")
        if decks < 1:
            raise ShoeLoadError(f"a shoe needs at least one deck, got {decks}")
        self.dialect: Dialect = dialect
        self.decks = decks
        self.seed = seed
        self.cut_depth = cut_depth
        self.rate = rate
        self.heartbeat = heartbeat
        self.retransmit_interval = retransmit_interval
        self.max_retransmits = max_retransmits
        self.outage = outage
        self.info = info
        spec = faults if isinstance(faults, FaultSpec) else parse_fault_spec(faults)
        self.faults = FaultPlan(spec, None if seed is None else seed + 1)
        self._rng = random.Random(seed)
        self._wire_rng = random.Random(None if seed is None else seed + 2)
        self._link = PtyLink(link_path)
        self._lock = threading.RLock()
        self._wake_r = self._wake_w = -1  # a pipe that wakes the shoe's thread, from start()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._running = False
        self._cards: deque[str] = deque(self._build_shoe())
        self.dealt: list[str] = []
        # Told of every card that leaves the shoe, read or not (a camera over the shoe).
        self.observers: list[Callable[[str], None]] = []
        self.transmissions: list[Transmission] = []
        self.locked = False
        self.lock_commands: list[str] = []  # each LCK and ULK received, in order
        self.jammed = False
        self.burn_mode = False
        self.lid_open = False
        self.acks_received = 0
        self.acks_lost = 0
        self._acks_to_lose = 0
        self.naks_received = 0
        self.hosts_connected = 0
        self._epoch = 0
        self._seq = 0
        self._outbox: deque[_Outgoing] = deque()
        self._in_flight: _InFlight | None = None
        self._host_up = False
        self._host_parser = FrameParser(HOST_TYPES)
        self._next_hbt = 0.0
        self._quiet_until = 0.0
        self._rebooting = False
        self._replug_at: float | None = None
        self._unjam_at: float | None = None
        self._next_auto_deal = 0.0
        self._next_line_fault = 0.0
        self._emptied = False
        self._last_sent: tuple[int, _Outgoing, bytes] | None = None
        self._greet_at: float | None = None
        self.honours_lock = True
        """False makes a faulty shoe that deals while locked (the host must notice)."""

    # ------------------------------------------------------------------ shoe contents
    def _build_shoe(self) -> list[str]:
        cards = [card.code for card in standard_deck()] * self.decks
        self._rng.shuffle(cards)
        return self._with_cut(cards)

    def _with_cut(self, cards: list[str]) -> list[str]:
        """The cut card goes ``cut_depth`` cards from the back (no cut card if it cannot)."""
        if CUT not in cards and 0 < self.cut_depth < len(cards):
            cards.insert(len(cards) - self.cut_depth, CUT)
        return cards

    def load(self, cards: list[str]) -> None:
        """Set an explicit shoe order (codes like ``TD``; ``CUT`` places the cut card,
        otherwise it goes ``cut_depth`` from the back). Only before the first card is dealt."""
        codes: list[str] = []
        for card in cards:
            if isinstance(card, str) and card.strip().upper() == CUT:
                codes.append(CUT)
                continue
            try:
                codes.append(parse_card(card).code)
            except CardError as exc:
                raise ShoeLoadError(f"cannot load {card!r}: {exc}") from exc
        with self._lock:
            if self.dealt:
                raise ShoeLoadError("cards were already dealt from this shoe; load before dealing")
            self._cards = deque(self._with_cut(codes))
            self._emptied = False

    def refill(self) -> list[str]:
        """A shoe change: the cards left are lifted out unread (no frame, no observer sees
        them) and a freshly shuffled shoe goes in, so the next card dealt starts it. What a
        dealer does at the table's new shoe; :meth:`load` is only for a shoe not yet dealt
        from. Returns the cards taken out."""
        with self._lock:
            left = list(self._cards)
            self.dealt.clear()
            self._cards = deque(self._build_shoe())
            self._emptied = False
        return left

    @property
    def remaining(self) -> list[str]:
        with self._lock:
            return list(self._cards)

    # ------------------------------------------------------------------ lifecycle
    @property
    def device_path(self) -> str:
        """Stable path of the device (a symlink to the current /dev/pts/N)."""
        return self._link.path

    @property
    def pty_path(self) -> str | None:
        """The current /dev/pts/N, or None while unplugged."""
        return self._link.pty_path

    def idle(self) -> bool:
        """Nothing waiting to go out and nothing waiting for an ACK."""
        with self._lock:
            return not self._outbox and self._in_flight is None

    @property
    def plugged(self) -> bool:
        return self._link.is_open

    @property
    def host_connected(self) -> bool:
        return self._host_up

    def start(self) -> VirtualShoe:
        with self._lock:
            if self._thread is not None:
                return self
            if self._stopped:
                raise ShoeNotRunningError("this shoe was stopped; create a new one")
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            self._link.open()
            self._running = True
            now = time.monotonic()
            self._next_auto_deal = now + (1.0 / self.rate if self.rate else 0.0)
            self._next_line_fault = now + 1.0
            self._thread = threading.Thread(target=self._run, name="virtual-shoe", daemon=True)
            self._thread.start()
        log.info("virtual shoe started", dialect=self.dialect, device=self.device_path)
        return self

    def stop(self) -> None:
        with self._lock:
            self._running = False
            self._stopped = True
            thread, self._thread = self._thread, None
        self._wake()
        if thread is not None:
            thread.join(5.0)
        self._link.dispose()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake_r = self._wake_w = -1

    def __enter__(self) -> VirtualShoe:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"!")

    # ------------------------------------------------------------------ dealer actions
    def deal(self, scan: bool = True, *, slid: bool = True) -> str | None:
        """The next card leaves the shoe; returns its code (``CUT`` for the cut card) or
        None when the shoe is empty. ``scan=False``: it left without passing the reader.
        ``slid=False``: it was lifted out with the rest of the shoe rather than slid out
        of the mouth, so a camera over the mouth (the observers) never sees it either."""
        with self._lock:
            if not self._running or self._rebooting:
                raise ShoeNotRunningError(
                    "the shoe is not running" if not self._running else "the shoe is rebooting"
                )
            if self.locked and self.honours_lock:
                raise ShoeLockedError("the shoe is locked by the host (betting open)")
            if self.jammed:
                raise ShoeJammedError("a card is jammed in the shoe")
            if not self._cards:
                if not self._emptied:
                    self._emptied = True
                    self._queue_event("EMP", "", b"[GameAlarm]<Alarm:E5 Shoe Empty>")
                return None
            if self.faults.strikes("jam"):
                self._jam()
                raise ShoeJammedError("the card jammed")
            card = self._cards.popleft()
            self.dealt.append(card)
            if scan:
                self._queue_card(card)
            if not self._cards and not self._emptied:
                self._emptied = True
                self._queue_event("EMP", "", b"[GameAlarm]<Alarm:E5 Shoe Empty>")
        self._wake()
        if slid:
            for observer in self.observers:
                observer(card)
        return card

    def _queue_card(self, card: str) -> None:
        if card == CUT:
            # The ascii dialect has no line for the cut card: it passes unreported.
            self._queue_event("CUT", "", None)
        elif self.faults.strikes("unread", "CRD"):
            self._queue_event("UNR", "", b"[Game]<Alarm:E3 Card Not Read>")
        else:
            self._queue_event("CRD", card, self._ascii_card_line(card))

    def _ascii_card_line(self, card: str) -> bytes:
        rank, suit = card[0], card[1]
        if rank == "T":
            rank = self._wire_rng.choice(("T", "10", "0"))
        text = rank + suit if self._wire_rng.random() < 0.5 else suit + rank
        mode = "Manual Burn Cards" if self.burn_mode else "Game"
        return f"[{mode}]<Card:{text}>".encode("ascii")

    def _queue_event(self, frame_type: str, payload: str, line: bytes | None) -> None:
        with self._lock:
            if self.dialect == "ascii":
                if line is None:
                    return
                self._outbox.append(_Outgoing(frame_type, payload, line + b"\r\n"))
            elif frame_type in SHOE_TYPES:
                self._outbox.append(_Outgoing(frame_type, payload))
        self._wake()

    def new_game(self) -> None:
        """The dealer pressed the shoe's new-game button (ascii ``[Game]<Game>``)."""
        self._queue_event("GAM", "", b"[Game]<Game>")

    def set_burn_mode(self, on: bool) -> None:
        """Burn mode set on the shoe itself (ascii ``[Manual Burn Cards]``)."""
        with self._lock:
            self.burn_mode = on

    def warn(self, code: int = 1) -> None:
        """A hardware warning (ascii ``<W0x01>``; the framed dialect has none)."""
        self._queue_event("WRN", "", f"<W0x{code:02X}>".encode("ascii"))

    def alarm(self, code: str, text: str) -> None:
        """A hardware alarm (framed ``ERR code;text``, ascii ``<Alarm:code text>``)."""
        self._queue_event("ERR", f"{code};{text}", f"[GameAlarm]<Alarm:{code} {text}>".encode())

    def open_lid(self) -> None:
        with self._lock:
            self.lid_open = True
        self._queue_event("LID", "O", None)

    def close_lid(self) -> None:
        with self._lock:
            self.lid_open = False
        self._queue_event("LID", "C", None)

    # ------------------------------------------------------------------ faults on demand
    def corrupt_next(self, count: int = 1, frame_type: str | None = None) -> None:
        self.faults.force("corrupt", count, frame_type)

    def drop_next(self, count: int = 1, frame_type: str | None = None) -> None:
        self.faults.force("drop", count, frame_type)

    def duplicate_next(self, count: int = 1, frame_type: str | None = None) -> None:
        self.faults.force("dup", count, frame_type)

    def dribble_next(self, count: int = 1, frame_type: str | None = None) -> None:
        self.faults.force("dribble", count, frame_type)

    def noise_next(self, count: int = 1, frame_type: str | None = None) -> None:
        self.faults.force("noise", count, frame_type)

    def lose_acks(self, count: int = 1) -> None:
        """The next ``count`` ACKs from the host are lost on their way to the shoe: the host
        has the frame, the shoe still waits for its ACK (and re-sends it after a HLO)."""
        with self._lock:
            self._acks_to_lose += count

    def unread_next(self, count: int = 1) -> None:
        """The next ``count`` cards pass the reader unread (UNR / ``E3 Card Not Read``)."""
        self.faults.force("unread", count, "CRD")

    def jam(self) -> None:
        """A card jams: ``ERR E7;Card jam``; dealing refused until :meth:`clear_jam`."""
        with self._lock:
            self._jam()

    def _jam(self) -> None:
        self.jammed = True
        if self.rate:
            self._unjam_at = time.monotonic() + self.outage
        self._queue_event("ERR", "E7;Card jam", b"[GameAlarm]<Alarm:E7 Card Jam>")

    def clear_jam(self) -> None:
        with self._lock:
            self.jammed = False
            self._unjam_at = None

    def unplug(self) -> None:
        """Cable pulled: the pseudo-terminal is closed and the device path disappears."""
        with self._lock:
            self._link.close()
            self._host_up = False
            self._requeue_in_flight()
        log.info("virtual shoe unplugged", device=self.device_path)
        self._wake()

    def replug(self) -> str:
        """Cable plugged back: a new pseudo-terminal behind the same device path."""
        with self._lock:
            self._replug_at = None
            pty = self._link.open()
        log.info("virtual shoe plugged", device=self.device_path, pty=pty)
        self._wake()
        return pty

    def reboot(self, downtime: float | None = None) -> None:
        """Power cycle: frames not yet acknowledged are lost, LCK is forgotten, and after
        ``downtime`` (default: the outage time) the shoe says HLO with SEQ 000."""
        with self._lock:
            self._rebooting = True
            self._outbox.clear()
            self._in_flight = None
            self.locked = False
            self.jammed = False
            self._quiet_until = time.monotonic() + (self.outage if downtime is None else downtime)
        self._wake()

    def freeze(self, duration: float | None = None) -> None:
        """The shoe stops talking (firmware hang) for ``duration`` seconds: no heartbeat."""
        with self._lock:
            self._quiet_until = time.monotonic() + (self.outage if duration is None else duration)
        self._wake()

    def _requeue_in_flight(self) -> None:
        """An unacknowledged frame goes back to the front of the queue, to be re-sent
        (with a fresh SEQ) after the next HLO."""
        if self._in_flight is not None:
            self._outbox.appendleft(self._in_flight.out)
            self._in_flight = None

    # ------------------------------------------------------------------ the shoe's thread
    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._running:
                    break
                now = time.monotonic()
                try:
                    self._tick(now)
                except Exception:  # a simulator bug must not silently kill the shoe
                    log.exception("virtual shoe tick failed")
                timeout = self._next_wakeup(now)
                fd = self._link.fileno() if self._host_up else None
            poller = select.poll()
            poller.register(self._wake_r, select.POLLIN)
            if fd is not None:
                poller.register(fd, select.POLLIN)
            try:
                poller.poll(max(0.0, timeout) * 1000)
            except (OSError, ValueError):
                time.sleep(0.01)
            with contextlib.suppress(OSError):
                os.read(self._wake_r, 4096)
        log.info("virtual shoe stopped")

    def _next_wakeup(self, now: float) -> float:
        """Seconds until something is due. Only timers that can fire count: a heartbeat that
        is overdue because no host listens must not turn the loop into a busy spin."""
        poll_link = 0.02  # link changes are polled; POLLHUP cannot be waited for cheaply
        if not self._host_up or self._rebooting or now < self._quiet_until:
            return poll_link
        candidates = [poll_link]
        if self._greet_at is not None:
            candidates.append(self._greet_at - now)
        else:
            if self._in_flight is not None:
                candidates.append(self._in_flight.next_retry - now)
            elif self.dialect == "framed":
                candidates.append(self._next_hbt - now)
            if self.rate:
                candidates.append(self._next_auto_deal - now)
        return max(0.0, min(candidates))

    def _tick(self, now: float) -> None:
        self._line_faults(now)
        if self._replug_at is not None and now >= self._replug_at:
            self._replug_at = None
            self._link.open()
        if self._unjam_at is not None and now >= self._unjam_at:
            self.jammed = False
            self._unjam_at = None
        self._check_host(now)
        awake = now >= self._quiet_until and not self._rebooting
        if self._host_up:
            data = self._link.read()
            if data and self._greet_at is not None and awake:
                self._greet(now)  # the host spoke: it is past its port set-up, say HLO
            if data:
                self._on_host_bytes(data, now)
        if now < self._quiet_until:
            return
        if self._rebooting:
            self._rebooting = False
            self._seq = 0
            if self._host_up and self._greet_at is None:
                self._hello(now)
        if self._greet_at is not None:
            if now < self._greet_at:
                return
            self._greet(now)
        if self.rate and now >= self._next_auto_deal and self._host_up:
            self._auto_deal(now)  # the dealer waits for the reader to be there
        if self._host_up:
            self._send_pending(now)

    def _check_host(self, now: float) -> None:
        up = self._link.host_connected()
        if up == self._host_up:
            return
        self._host_up = up
        if up:
            self.hosts_connected += 1
            self._host_parser.reset()
            log.info("host connected", device=self.device_path)
            # Not at once: a host flushes its input while it sets the port up (pyserial
            # does), which would swallow the HLO. Greet when it first speaks, or soon.
            self._greet_at = now + HOST_SETTLE
        else:
            log.info("host disconnected", device=self.device_path)
            self._greet_at = None
            self._requeue_in_flight()

    def _greet(self, now: float) -> None:
        self._greet_at = None
        self._hello(now)

    def _hello(self, now: float) -> None:
        """HLO: SEQ restarts at 000; whatever was unacknowledged goes again after it."""
        if self.dialect != "framed":
            return
        self._requeue_in_flight()
        self._epoch += 1
        self._seq = 0
        self._transmit(_Outgoing("HLO", self.info), now)
        self._next_hbt = now + self.heartbeat

    def _auto_deal(self, now: float) -> None:
        assert self.rate
        self._next_auto_deal = now + 1.0 / self.rate
        if (self.locked and self.honours_lock) or self.jammed or self._rebooting or not self._cards:
            if not self._cards and not self._emptied:
                self._emptied = True
                self._queue_event("EMP", "", b"[GameAlarm]<Alarm:E5 Shoe Empty>")
            return
        with contextlib.suppress(ShoeError):
            self.deal()

    def _line_faults(self, now: float) -> None:
        if now < self._next_line_fault or not self.faults.spec:
            return
        self._next_line_fault = now + 1.0
        if self._link.is_open and self.faults.strikes("unplug"):
            log.info("fault: cable pulled", outage=self.outage)
            self._link.close()
            self._host_up = False
            self._requeue_in_flight()
            self._replug_at = now + self.outage
        elif self.faults.strikes("reboot"):
            log.info("fault: shoe reboot")
            self.reboot()
        elif self.faults.strikes("freeze"):
            log.info("fault: shoe frozen", outage=self.outage)
            self.freeze()

    def _on_host_bytes(self, data: bytes, now: float) -> None:
        for item in self._host_parser.feed(data):
            if not isinstance(item, Frame):
                log.debug("bad frame from host", reason=item.reason)
                continue
            if self.dialect != "framed":
                continue
            self._on_host_frame(item, now)

    def _on_host_frame(self, frame: Frame, now: float) -> None:
        if frame.type == "ACK":
            if self._acks_to_lose > 0:
                self._acks_to_lose -= 1
                self.acks_lost += 1
                return
            self.acks_received += 1
            if self._in_flight is not None and frame.payload == f"{self._in_flight.seq:03d}":
                self._in_flight = None
        elif frame.type == "NAK":
            self.naks_received += 1
            if self._in_flight is not None:
                self._in_flight.next_retry = now  # resend at once
            elif self._last_sent is not None and frame.payload == f"{self._last_sent[0]:03d}":
                # Resend a rejected unacknowledged frame (HLO, HBT, ...) only while it is
                # still the latest one, so SEQs never go backwards on the wire.
                seq, out, data = self._last_sent
                self._put_on_wire(seq, out, data, now)
        elif frame.type in ("LCK", "ULK"):
            self.locked = frame.type == "LCK"
            self.lock_commands.append(frame.type)
            self._next_hbt = now
        elif frame.type == "STA":
            self._next_hbt = now

    def _send_pending(self, now: float) -> None:
        if self.dialect == "ascii":
            while self._outbox:
                self._transmit(self._outbox.popleft(), now)
            return
        flight = self._in_flight
        if flight is not None and now >= flight.next_retry:
            if flight.retries_left > 0:
                flight.retries_left -= 1
                flight.next_retry = now + self.retransmit_interval
                self._put_on_wire(flight.seq, flight.out, flight.frame, now)
            else:
                log.warning("no ACK from host; giving up", seq=flight.seq, type=flight.out.type)
                self._in_flight = None
                self._outbox.appendleft(_Outgoing("ERR", "E9;No host"))
        while self._in_flight is None and self._outbox:
            self._transmit(self._outbox.popleft(), now)
        if self._in_flight is None and now >= self._next_hbt:
            self._transmit(_Outgoing("HBT", "L" if self.locked else "U"), now)
            self._next_hbt = now + self.heartbeat

    def _transmit(self, out: _Outgoing, now: float) -> None:
        if self.dialect == "ascii":
            assert out.line is not None
            self._put_on_wire(None, out, out.line, now)
            return
        seq = self._seq
        self._seq = next_seq(seq)
        frame = encode_frame(seq, out.type, out.payload)
        self._last_sent = (seq, out, frame)
        if out.type in ACKABLE_TYPES:
            self._in_flight = _InFlight(
                seq, out, frame, self.max_retransmits, now + self.retransmit_interval
            )
        self._put_on_wire(seq, out, frame, now)

    def _put_on_wire(self, seq: int | None, out: _Outgoing, data: bytes, now: float) -> None:
        """Apply the wire faults and write. Everything is recorded in ``transmissions``."""
        kind = out.type
        if not self._host_up:
            fate = "offline"
        elif self.faults.strikes("drop", kind):
            fate = "dropped"
        else:
            fate = "intact"
            payload = data
            if self.faults.strikes("corrupt", kind):
                payload = self._corrupt(data)
                fate = "corrupted"
            if self.faults.strikes("noise", kind):
                self._link.write(self._noise())
                fate = "noise" if fate == "intact" else fate
            if self.faults.strikes("dribble", kind):
                for i in range(len(payload)):
                    self._link.write(payload[i : i + 1])
                    time.sleep(0.001)
                fate = "dribbled" if fate == "intact" else fate
            else:
                self._link.write(payload)
            if self.faults.strikes("dup", kind):
                self._link.write(payload)
                fate = "duplicated" if fate == "intact" else fate
        self.transmissions.append(
            Transmission(seq, kind, out.payload, self._epoch, fate, data, time.monotonic())
        )
        if len(self.transmissions) > 2 * TRANSMISSION_HISTORY:
            del self.transmissions[:TRANSMISSION_HISTORY]

    def _corrupt(self, data: bytes) -> bytes:
        """Alter one byte so that the damage is always detectable by the host: inside the
        CRC-covered part for `framed`; for `ascii` (no checksum) a framing-error byte
        (high bit set) inside the message, which the host reports as unknown."""
        buf = bytearray(data)
        if self.dialect == "framed":
            i = self._wire_rng.randrange(1, len(buf) - 2)
            buf[i] ^= self._wire_rng.randrange(1, 256)
        else:
            i = self._wire_rng.randrange(0, max(1, len(buf) - 2))
            buf[i] = self._wire_rng.randrange(0x80, 0x100)
        return bytes(buf)

    def _noise(self) -> bytes:
        return bytes(self._wire_rng.randrange(256) for _ in range(self._wire_rng.randint(1, 40)))
