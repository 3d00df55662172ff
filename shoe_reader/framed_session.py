"""Host side of the `framed` dialect, without I/O.

The serial thread feeds it bytes and the clock; it answers with reader events and the
bytes to write back (ACK / NAK). Keeping it free of I/O lets the fuzz tests drive it
with arbitrary byte streams and lets the reader and the benchmark share one code path.

Rules applied here (from specs/shoe-serial-protocol.md):

* every valid CRD / CUT / UNR / EMP is ACKed, also when it is a duplicate (the first ACK
  may have been lost, and the shoe keeps retransmitting until it gets one);
* a duplicate is a frame whose SEQ was seen recently *with the same TYPE and PAYLOAD*;
  it is acknowledged but delivered only once. Same SEQ with different content means the
  shoe restarted without us seeing its HLO: treated as a SEQ jump, never as a duplicate,
  so a card can never be swallowed as a "retransmission";
* a SEQ that jumps forward by more than one raises :class:`MissedCardSuspected`;
* a frame that arrives late (its SEQ was skipped earlier, e.g. it was corrupted and has
  now been retransmitted) is delivered; the gap already raised stays raised;
* HLO restarts the SEQ tracking;
* frames of host types (ACK, NAK, LCK, ULK, STA) are our own bytes echoed back (a
  loop-back plug or a line with echo on): ignored, never NAKed, or we would NAK our own
  NAKs forever;
* any valid frame proves the shoe is alive; none for ``offline_timeout`` seconds (3 s by
  the spec, where the heartbeat is once a second) makes the reader offline.

Possible duplicate after a reconnection. The shoe re-sends a frame still waiting for its
ACK after its next HLO, with a fresh SEQ. If the host had received that frame and only the
ACK was lost (cable pulled at that moment), the card arrives a second time, and SEQs
cannot tell: the epoch changed. Dropping it is no answer either, since a shoe of 8 decks
legitimately holds 8 copies of every card. So the host delivers it and says so:

* every acknowledged frame delivered is remembered with its time; entries older than
  ``resend_window`` (default :data:`RESEND_WINDOW`) before the newest frame are dropped,
  because the shoe stops retransmitting after 5 x 200 ms and gives up (``ERR E9``, which
  also clears the list: a shoe that gave up re-sends nothing);
* at a HLO that restarts the session, the frames delivered within ``resend_window``
  before the last frame of the previous connection are the ones whose ACK may not have
  reached the shoe;
* the first acknowledged frames after that HLO (within ``resend_window`` of it) are
  compared with them, in order: a CRD equal to one of them is delivered preceded by
  ``HardwareWarning(code="possible_duplicate_after_reconnect", card=...)`` naming the
  repeated card (its ``raw`` is the repeated CRD frame). The first
  frame that matches none of them ends the comparison. The table service turns the
  warning into a blocking incident: only a person can tell a repeat from a real copy.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TypeVar

import structlog

from shoe_reader.events import (
    CardSeen,
    CutCardSeen,
    HardwareAlarm,
    HardwareWarning,
    LidChanged,
    MissedCardSuspected,
    ReaderEvent,
    ReaderOffline,
    ReaderOnline,
    ShoeEmpty,
    UnknownMessage,
    UnreadableCard,
)
from shoe_reader.framing import (
    ACKABLE_TYPES,
    HOST_TYPES,
    SEQ_MODULO,
    BadFrame,
    Frame,
    FrameParser,
    encode_frame,
    next_seq,
    seq_distance,
)
from shoe_reader.session import Stamp
from table_service.rules.cards import RANKS, SUITS

log = structlog.get_logger(__name__)

E = TypeVar("E", bound=ReaderEvent)

DUPLICATE_WINDOW = 32
"""How many recent SEQs are remembered for duplicate detection. Retransmissions come
within about a second (5 x 200 ms); at one heartbeat a second that is a handful of SEQs."""

CARD_WHILE_LOCKED = "card_while_locked"
POSSIBLE_DUPLICATE = "possible_duplicate_after_reconnect"

RESEND_WINDOW = 1.5
"""Seconds during which a delivered frame may still be re-sent after a reconnection: the
shoe retransmits for 5 x 200 ms, then gives up; the rest is margin for the host."""

GAVE_UP = "E9"
"""``ERR E9;No host``: the shoe dropped its unacknowledged frame; it will not re-send it."""


def repeated_card(raw: bytes) -> str | None:
    """The card code in a ``possible_duplicate_after_reconnect`` warning (its ``raw`` is the
    repeated CRD frame); None if ``raw`` is not a valid CRD frame."""
    for item in FrameParser().feed(raw):
        if isinstance(item, Frame) and item.type == "CRD":
            return item.payload
    return None


@dataclass
class SessionStats:
    frames_ok: int = 0
    frames_bad: int = 0
    duplicates: int = 0
    late_frames: int = 0
    echoes: int = 0
    acks_sent: int = 0
    naks_sent: int = 0
    gaps: int = 0
    noise_bytes: int = 0
    bad_reasons: dict[str, int] = field(default_factory=dict)


class FramedSession:
    def __init__(
        self,
        reader_id: str,
        *,
        offline_timeout: float = 3.0,
        resend_window: float = RESEND_WINDOW,
    ) -> None:
        self.reader_id = reader_id
        self.offline_timeout = offline_timeout
        self.resend_window = resend_window
        self.parser = FrameParser()
        self.stats = SessionStats()
        self.online = False
        self.shoe_locked: bool | None = None
        """The lock state the shoe reported in its last heartbeat (None before any)."""
        self.host_locked: bool | None = None
        """The lock state the host last commanded (None before any LCK / ULK)."""
        self.shoe_info = ""
        self._host_seq = 0
        self._last_seq: int | None = None
        self._recent: OrderedDict[int, tuple[str, str]] = OrderedDict()
        self._seen_hlo = False
        self._last_alive: float | None = None
        self._last_frame_at: float | None = None
        """When the last valid shoe frame arrived; unlike ``_last_alive`` it survives a
        lost connection, to date the end of the previous one."""
        self._unconfirmed: deque[tuple[str, str, float]] = deque()
        """Acknowledged frames delivered lately (type, payload, when): their ACK may not
        have reached the shoe yet."""
        self._suspects: deque[tuple[str, str]] = deque()
        """After a HLO: the frames the shoe may re-send, oldest first."""
        self._suspects_until = 0.0

    # ------------------------------------------------------------------ host frames
    def host_frame(self, frame_type: str, payload: str = "") -> bytes:
        """Encode a host → shoe frame with the host's own SEQ counter."""
        frame = encode_frame(self._host_seq, frame_type, payload)
        self._host_seq = next_seq(self._host_seq)
        if frame_type == "LCK":
            self.host_locked = True
        elif frame_type == "ULK":
            self.host_locked = False
        return frame

    @property
    def believes_locked(self) -> bool:
        """The host's belief: its own last LCK / ULK if it sent one, else the shoe's report."""
        if self.host_locked is not None:
            return self.host_locked
        return bool(self.shoe_locked)

    # ------------------------------------------------------------------ connection
    def connection_made(self, stamp: Stamp) -> list[ReaderEvent]:
        """The port is open; the shoe proves it is there by its first valid frame."""
        self.parser.reset()
        self._last_alive = stamp.monotonic
        return []

    def connection_lost(self, reason: str, stamp: Stamp) -> list[ReaderEvent]:
        """The port went away. The next frames may come from a restarted shoe."""
        self.parser.reset()
        self._last_alive = None
        return self._go_offline(reason, stamp)

    def poll(self, stamp: Stamp) -> list[ReaderEvent]:
        """Called regularly by the I/O loop: raises offline when the heartbeat stops."""
        if (
            self.online
            and self._last_alive is not None
            and stamp.monotonic - self._last_alive > self.offline_timeout
        ):
            return self._go_offline(f"no heartbeat for {self.offline_timeout:g} s", stamp)
        return []

    def silent_for(self, now: float) -> float:
        return 0.0 if self._last_alive is None else now - self._last_alive

    def _go_offline(self, reason: str, stamp: Stamp) -> list[ReaderEvent]:
        if not self.online:
            return []
        self.online = False
        # Closing the reader on purpose takes the shoe offline too: not a warning.
        emit = log.info if reason == "reader closed" else log.warning
        emit("shoe offline", reader_id=self.reader_id, reason=reason)
        return [self._event(ReaderOffline, stamp, reason=reason)]

    # ------------------------------------------------------------------ bytes in
    def receive(self, data: bytes, stamp: Stamp) -> tuple[list[ReaderEvent], bytes]:
        """Feed bytes read from the port; returns the events and the bytes to write back."""
        events: list[ReaderEvent] = []
        reply = bytearray()
        noise_before = self.parser.noise_bytes
        for item in self.parser.feed(data):
            if isinstance(item, BadFrame):
                self._on_bad(item, reply)
            else:
                self._on_frame(item, stamp, events, reply)
        self.stats.noise_bytes += self.parser.noise_bytes - noise_before
        return events, bytes(reply)

    def _on_bad(self, bad: BadFrame, reply: bytearray) -> None:
        self.stats.frames_bad += 1
        self.stats.bad_reasons[bad.reason] = self.stats.bad_reasons.get(bad.reason, 0) + 1
        log.debug("bad frame", reader_id=self.reader_id, reason=bad.reason, raw=bad.raw)
        reply += self.host_frame("NAK", "" if bad.seq is None else f"{bad.seq:03d}")
        self.stats.naks_sent += 1

    def _on_frame(
        self, frame: Frame, stamp: Stamp, events: list[ReaderEvent], reply: bytearray
    ) -> None:
        if frame.type in HOST_TYPES:
            self.stats.echoes += 1
            return
        self.stats.frames_ok += 1
        self._last_alive = stamp.monotonic
        previous_frame_at, self._last_frame_at = self._last_frame_at, stamp.monotonic
        if frame.type in ACKABLE_TYPES:
            reply += self.host_frame("ACK", f"{frame.seq:03d}")
            self.stats.acks_sent += 1

        if frame.type == "HLO":
            if self._last_seq == frame.seq and self._recent.get(frame.seq) == (
                "HLO",
                frame.payload,
            ):
                self.stats.duplicates += 1  # the same hello resent (we NAKed a damaged copy)
                return
            self._arm_suspects(previous_frame_at, stamp)
            self._restart(frame, stamp, events)
            return
        if not self._track_seq(frame, stamp, events):
            return
        if not self.online:
            self.online = True
            events.append(self._event(ReaderOnline, stamp, frame=frame, info=self.shoe_info))
        repeated = frame.type in ACKABLE_TYPES and self._is_repeat(frame, stamp)
        if frame.type == "ERR" and frame.payload.partition(";")[0] == GAVE_UP:
            self._unconfirmed.clear()
        interpreted = self._interpret(frame, stamp)
        if repeated and interpreted and isinstance(interpreted[-1], CardSeen):
            log.warning(
                "card repeated after reconnection: possible duplicate",
                reader_id=self.reader_id,
                card=frame.payload,
                seq=frame.seq,
            )
            # Right before the card, so the table knows which card it is about.
            interpreted.insert(
                -1,
                self._event(
                    HardwareWarning, stamp, frame=frame, code=POSSIBLE_DUPLICATE, card=frame.payload
                ),
            )
        events.extend(interpreted)

    # ------------------------------------------------------------------ repeats after HLO
    def _arm_suspects(self, previous_frame_at: float | None, stamp: Stamp) -> None:
        """At a HLO: what was delivered shortly before the last connection ended may come
        again, because its ACK may have been lost with the cable."""
        self._suspects.clear()
        if previous_frame_at is not None:
            self._suspects.extend(
                (t, p)
                for t, p, at in self._unconfirmed
                if previous_frame_at - at <= self.resend_window
            )
        self._unconfirmed.clear()
        self._suspects_until = stamp.monotonic + self.resend_window

    def _is_repeat(self, frame: Frame, stamp: Stamp) -> bool:
        """Compare a new acknowledged frame with the suspects, and remember it in turn."""
        now = stamp.monotonic
        while self._unconfirmed and now - self._unconfirmed[0][2] > self.resend_window:
            self._unconfirmed.popleft()
        self._unconfirmed.append((frame.type, frame.payload, now))
        if not self._suspects:
            return False
        key = (frame.type, frame.payload)
        if now > self._suspects_until or key not in self._suspects:
            self._suspects.clear()
            return False
        while self._suspects.popleft() != key:
            pass  # the older ones were acknowledged: the shoe re-sends only the tail
        return True

    def _restart(self, frame: Frame, stamp: Stamp, events: list[ReaderEvent]) -> None:
        restarted = self._seen_hlo or self._last_seq is not None
        self._seen_hlo = True
        self._last_seq = frame.seq
        self._recent.clear()
        self._remember(frame)
        self.shoe_info = frame.payload
        self.shoe_locked = None
        self.online = True
        log.info("shoe hello", reader_id=self.reader_id, info=frame.payload, restarted=restarted)
        events.append(
            self._event(ReaderOnline, stamp, frame=frame, info=frame.payload, restarted=restarted)
        )

    def _track_seq(self, frame: Frame, stamp: Stamp, events: list[ReaderEvent]) -> bool:
        """Classify the frame by SEQ; returns False for a duplicate (already delivered)."""
        content = (frame.type, frame.payload)
        seen = self._recent.get(frame.seq)
        if seen == content:
            self.stats.duplicates += 1
            return False
        last = self._last_seq
        if last is None:
            # First frame we ever see from this shoe (no HLO): nothing to compare with.
            self._last_seq = frame.seq
            self._remember(frame)
            return True
        ahead = seq_distance(last, frame.seq)
        if seen is None and 0 < seq_distance(frame.seq, last) < DUPLICATE_WINDOW:
            # An older SEQ we never received: a late retransmission. Deliver it.
            self.stats.late_frames += 1
            self._remember(frame)
            return True
        if seen is not None:
            # Same SEQ, different content: the shoe restarted behind our back.
            self._recent.clear()
            ahead = seq_distance(last, frame.seq) or SEQ_MODULO
        if ahead != 1:
            expected = next_seq(last)
            missing = (ahead - 1) if ahead > 1 else SEQ_MODULO - 1
            self.stats.gaps += 1
            log.warning(
                "SEQ gap",
                reader_id=self.reader_id,
                expected=expected,
                got=frame.seq,
                missing=missing,
            )
            events.append(
                self._event(
                    MissedCardSuspected, stamp, frame=frame, expected_seq=expected, missing=missing
                )
            )
        self._last_seq = frame.seq
        self._remember(frame)
        return True

    def _remember(self, frame: Frame) -> None:
        self._recent[frame.seq] = (frame.type, frame.payload)
        self._recent.move_to_end(frame.seq)
        while len(self._recent) > DUPLICATE_WINDOW:
            self._recent.popitem(last=False)

    def _interpret(self, frame: Frame, stamp: Stamp) -> list[ReaderEvent]:
        t, p = frame.type, frame.payload
        if t == "HBT":
            if p in ("L", "U"):
                self.shoe_locked = p == "L"
                return []
            return [self._event(UnknownMessage, stamp, frame=frame, text=f"HBT payload {p!r}")]
        if t == "CRD":
            if len(p) == 2 and p[0] in RANKS and p[1] in SUITS:
                out: list[ReaderEvent] = []
                if self.believes_locked:
                    log.warning("card while locked", reader_id=self.reader_id, card=p)
                    out.append(
                        self._event(HardwareWarning, stamp, frame=frame, code=CARD_WHILE_LOCKED)
                    )
                out.append(self._event(CardSeen, stamp, frame=frame, card=p))
                return out
            return [
                self._event(UnreadableCard, stamp, frame=frame, reason=f"bad card payload {p!r}")
            ]
        if t == "CUT":
            return [self._event(CutCardSeen, stamp, frame=frame)]
        if t == "UNR":
            return [self._event(UnreadableCard, stamp, frame=frame, reason="shoe could not read")]
        if t == "EMP":
            return [self._event(ShoeEmpty, stamp, frame=frame)]
        if t == "LID" and p in ("O", "C"):
            return [self._event(LidChanged, stamp, frame=frame, open=p == "O")]
        if t == "ERR":
            code, _, text = p.partition(";")
            return [self._event(HardwareAlarm, stamp, frame=frame, code=code, text=text)]
        return [self._event(UnknownMessage, stamp, frame=frame, text=f"{t} {p!r}")]

    def _event(
        self, cls: type[E], stamp: Stamp, *, frame: Frame | None = None, **fields: object
    ) -> E:
        return cls(
            reader_id=self.reader_id,
            seq=None if frame is None else frame.seq,
            monotonic=stamp.monotonic,
            utc=stamp.utc,
            raw=b"" if frame is None else frame.raw,
            **fields,
        )
